#include <gtest/gtest.h>

#include <string>

#include "core/utf8.hpp"

using namespace agentq;

namespace {

std::u32string decoded(std::string_view text) {
  std::u32string codes;
  for (std::size_t i = 0; i < text.size();) codes += utf8::decode(text, i);
  return codes;
}

TEST(Utf8, WellFormedSequencesFollowUnicodesTable) {
  EXPECT_EQ(utf8::sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8::sequence_length("\xCE\xBB", 0), 2u);          // λ
  EXPECT_EQ(utf8::sequence_length("\xE2\x82\xAC", 0), 3u);      // €
  EXPECT_EQ(utf8::sequence_length("\xF0\x9F\x98\x80", 0), 4u);  // 😀
  EXPECT_EQ(utf8::sequence_length("\xC0\x80", 0), 0u);          // overlong NUL
  EXPECT_EQ(utf8::sequence_length("\xE0\x80\xAF", 0), 0u);      // overlong '/'
  EXPECT_EQ(utf8::sequence_length("\xED\xA0\x80", 0), 0u);      // surrogate
  EXPECT_EQ(utf8::sequence_length("\xF4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8::sequence_length("\xE2\x82", 0), 0u);          // cut short
  EXPECT_EQ(utf8::sequence_length("\x82", 0), 0u);              // a continuation byte
  EXPECT_EQ(utf8::sequence_length("a", 1), 0u);                 // past the end
}

TEST(Utf8, EachByteThatBeginsNothingIsOneReplacement) {
  EXPECT_EQ(decoded("a\xCE\xBB\xE2\x82\xAC\xF0\x9F\x98\x80"), U"aλ€😀");
  EXPECT_EQ(decoded("a\xFF" "b"), U"a\uFFFDb");
  EXPECT_EQ(decoded("a\xE9" "bcdef"), U"a\uFFFDbcdef");  // the good bytes after a bad one are kept
  EXPECT_EQ(decoded("\xC0\x80"), U"\uFFFD\uFFFD");
  EXPECT_EQ(decoded("\xED\xA0\x80"), U"\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(decoded("x\xE2\x82"), U"x\uFFFD\uFFFD");
  // The same text, repaired rather than decoded.
  EXPECT_EQ(utf8::repaired("a\xE9" "b\xCE\xBB"), "a\xEF\xBF\xBD" "b\xCE\xBB");
  EXPECT_EQ(utf8::repaired("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8::repaired("plain"), "plain");
  // Well formed exactly when repairing changes nothing.
  for (std::string_view text : {"", "plain", "a\xCE\xBB\xE2\x82\xAC\xF0\x9F\x98\x80", "a\xE9" "b", "\xC0\x80",
                                "\xED\xA0\x80", "x\xE2\x82", "\xF4\x90\x80\x80"})
    EXPECT_EQ(utf8::well_formed(text), utf8::repaired(text) == text) << text;
}

TEST(Utf8, AppendEncodesCodePointsAndReplacesWhatUtf8CannotCarry) {
  std::string out;
  for (char32_t code : {U'a', U'λ', U'€', U'😀', char32_t{0xD800}, char32_t{0x110000}}) utf8::append(out, code);
  EXPECT_EQ(out, "a\xCE\xBB\xE2\x82\xAC\xF0\x9F\x98\x80\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(decoded(out), U"aλ€😀\uFFFD\uFFFD");
}

TEST(Utf8, CompletePrefixHoldsBackOnlyACharacterCutShortAtTheEnd) {
  EXPECT_EQ(utf8::complete_prefix(""), 0u);
  EXPECT_EQ(utf8::complete_prefix("ab"), 2u);
  EXPECT_EQ(utf8::complete_prefix("a\xE2"), 1u);
  EXPECT_EQ(utf8::complete_prefix("a\xE2\x82"), 1u);
  EXPECT_EQ(utf8::complete_prefix("a\xE2\x82\xAC"), 4u);
  EXPECT_EQ(utf8::complete_prefix("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(utf8::complete_prefix("a\x82\x82\x82\x82"), 5u);  // no lead byte: nothing to wait for
  EXPECT_EQ(utf8::complete_prefix("a\xFF"), 2u);              // a byte that leads nothing
}

}  // namespace
