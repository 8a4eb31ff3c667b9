// How deep the Lisp reader would recurse to read a text.  ECL's reader is
// recursive C that does not check its stack: a text nested 100,000 deep
// ran it off the end of the stack and killed the process.  So code is
// measured before it is read, and refused past a bound.
#pragma once

#include <cstddef>
#include <string_view>

namespace agentq {

// Far above any program a person writes; the reader recursed 10,000 deep
// on a 12 MB stack without trouble.
inline constexpr std::size_t kMaxLispNesting = 10000;

// True when reading TEXT would nest more than LIMIT levels: lists and
// vectors, and each prefix that reads the object after it (' ` , ,@ #' #.
// #+ #- #n= #p and other dispatch macros).  Strings, |escapes|, #\chars and
// comments are skipped.  An estimate from above: never lower than the
// reader's depth on text it can read.
bool lisp_nesting_exceeds(std::string_view text, std::size_t limit = kMaxLispNesting);

}  // namespace agentq
