// Lisp functions written in C++.
#pragma once

#include <type_traits>

#include "ecl/ecl_api.hpp"

namespace agentq::ecl {

// Defines AGENT-Q::NAME as FUNCTION, which takes its arguments as
// cl_objects (the arity follows from its type).  Call on an ECL thread.
template <typename... Arguments>
void define_lisp_function(const char* name, cl_object (*function)(Arguments...)) {
  static_assert((std::is_same_v<Arguments, cl_object> && ...), "Lisp arguments are cl_objects");
  // ECL keeps every fixed-arity function as a cl_objectfn_fixed; the cast
  // through void(*)() says that is meant.
  ecl_def_c_function(ecl_make_symbol(name, "AGENT-Q"),
                     reinterpret_cast<cl_objectfn_fixed>(reinterpret_cast<void (*)()>(function)),
                     sizeof...(Arguments));
}

}  // namespace agentq::ecl
