// UTF-8 as Unicode defines it well formed: no overlong forms, no
// surrogates, nothing above U+10FFFF.  Text that is not becomes U+FFFD, one
// for each byte that begins no well-formed sequence, wherever it goes
// (Emacs strings, Lisp strings, a child's pipe).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace agentq::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed sequence at TEXT[I], or 0 when none
// begins there (also when TEXT ends too soon).
std::size_t sequence_length(std::string_view text, std::size_t i);

// The code point at TEXT[I], advancing I past it; U+FFFD, advancing I by
// one, when no well-formed sequence begins there.
char32_t decode(std::string_view text, std::size_t& i);

// Appends CODE as UTF-8; a surrogate or anything above U+10FFFF as U+FFFD.
void append(std::string& out, char32_t code);

// True when TEXT is well-formed UTF-8 throughout.
bool well_formed(std::string_view text);

// TEXT with each byte that begins no well-formed sequence replaced by
// U+FFFD.
std::string repaired(std::string_view text);

// How much of BYTES to decode now: all but a sequence cut short at the end
// (a lead byte and the continuation bytes that follow it, fewer than it
// announces), whose rest is still to come.
std::size_t complete_prefix(std::string_view bytes);

}  // namespace agentq::utf8
