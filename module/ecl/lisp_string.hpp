// UTF-8 ⇄ ECL strings, without going through a Lisp stream.
#pragma once

#include <string>
#include <string_view>

#include "ecl/ecl_api.hpp"

namespace agentq::ecl {

// A fresh simple string: a base string when TEXT is ASCII, else a Unicode
// string.  A byte that begins no well-formed UTF-8 sequence becomes
// U+FFFD (see core/utf8.hpp).  Allocates on the Lisp
// heap: call only on an ECL thread.
cl_object make_lisp_string(std::string_view text);

// UTF-8 of a Lisp string (base or Unicode, honouring fill pointers).  A
// non-string gives "".  Does not allocate on the Lisp heap.
std::string lisp_string_to_utf8(cl_object string);

// Appends to OUT the UTF-8 of STRING's characters from START on, whole
// characters only, while OUT stays within MOST bytes (one character at
// least, whatever its length), up to the fill pointer.  Returns the index
// after the last character appended.  Does not allocate on the Lisp heap.
std::size_t append_utf8_of(std::string& out, cl_object string, std::size_t start, std::size_t most);

}  // namespace agentq::ecl
