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

// How much of BYTES to decode now: all but a character cut short at the
// end (a lead byte and the continuation bytes that follow it, fewer than
// it announces), whose rest is still to come.
std::size_t complete_utf8_prefix(std::string_view bytes);

// UTF-8 of a Lisp string (base or Unicode, honouring fill pointers).  A
// non-string gives "".  Does not allocate on the Lisp heap.
std::string lisp_string_to_utf8(cl_object string);

// Appends to OUT the UTF-8 of STRING's characters from START on, whole
// characters only, while OUT stays within MOST bytes (one character at
// least, whatever its length), up to the fill pointer.  Returns the index
// after the last character appended.  Does not allocate on the Lisp heap.
std::size_t append_utf8_of(std::string& out, cl_object string, std::size_t start, std::size_t most);

}  // namespace agentq::ecl
