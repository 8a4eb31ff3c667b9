// UTF-8 ⇄ ECL strings, without going through a Lisp stream.
#pragma once

#include <string>
#include <string_view>

#include "ecl/ecl_api.hpp"

namespace agentq::ecl {

// A fresh simple string: a base string when TEXT is ASCII, else a Unicode
// string.  Invalid UTF-8 sequences become U+FFFD.  Allocates on the Lisp
// heap: call only on an ECL thread.
cl_object make_lisp_string(std::string_view text);

// UTF-8 of a Lisp string (base or Unicode, honouring fill pointers).  A
// non-string gives "".  Does not allocate on the Lisp heap.
std::string lisp_string_to_utf8(cl_object string);

}  // namespace agentq::ecl
