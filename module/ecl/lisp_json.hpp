// JSON arguments as Lisp data, for tools handled in Lisp.
#pragma once

#include <nlohmann/json.hpp>

#include "ecl/ecl_api.hpp"

namespace agentq::ecl {

// VALUE as Lisp data, as the contracts' Lisp handlers receive their
// arguments: an object is an EQUAL hash table with string keys, an array a
// list, a string a string, a number an integer or a double-float, true T,
// false and null NIL.  Allocates on the Lisp heap: call only on an ECL
// thread.  (Arguments were bounded in depth when they were parsed.)
cl_object json_to_lisp(const nlohmann::json& value);

}  // namespace agentq::ecl
