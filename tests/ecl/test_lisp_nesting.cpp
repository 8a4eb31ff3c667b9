#include <gtest/gtest.h>

#include <string>

#include "ecl/lisp_nesting.hpp"

using agentq::lisp_nesting_exceeds;

namespace {

std::string repeat(const std::string& piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

}  // namespace

TEST(LispNesting, CountsListsVectorsAndPrefixes) {
  EXPECT_FALSE(lisp_nesting_exceeds("(a (b (c)))", 3));
  EXPECT_TRUE(lisp_nesting_exceeds("(a (b (c (d))))", 3));
  EXPECT_TRUE(lisp_nesting_exceeds("#(#(#(#(1))))", 3));
  EXPECT_TRUE(lisp_nesting_exceeds("''''x", 3));
  EXPECT_TRUE(lisp_nesting_exceeds("`(,(,@(x)))", 3));
  EXPECT_TRUE(lisp_nesting_exceeds("#+a #+b #+c #+d 1", 3));
  EXPECT_TRUE(lisp_nesting_exceeds("#.#.#.#.x", 3));
  EXPECT_TRUE(lisp_nesting_exceeds("#1=#2=#3=#4=(x)", 3));
}

TEST(LispNesting, APrefixEndsWithItsObject) {
  // Many quoted forms one after another are not nested.
  EXPECT_FALSE(lisp_nesting_exceeds(repeat("'a '(b) #'c #+ecl d #p\"e\" ", 10000), 3));
  EXPECT_FALSE(lisp_nesting_exceeds(repeat("(f 'x)", 10000), 2));
}

TEST(LispNesting, SkipsStringsEscapesCharactersAndComments) {
  const std::string deep = repeat("(", 100);
  for (const std::string& text : std::initializer_list<std::string>{"\"" + deep + "\"", "|" + deep + "|", "; " + deep + "\n1",
                                  "#| " + deep + " #| nested |# |#", "a\\(\\(\\(\\(", "#\\( #\\( #\\( #\\(",
                                  "\"a\\\"" + deep + "\""}) {
    EXPECT_FALSE(lisp_nesting_exceeds(text, 3)) << text;
  }
}

TEST(LispNesting, TheDefaultBoundIsFarAboveRealCode) {
  EXPECT_FALSE(lisp_nesting_exceeds(repeat("(", 5000) + repeat(")", 5000)));
  EXPECT_TRUE(lisp_nesting_exceeds(repeat("(", 100000) + repeat(")", 100000)));
  EXPECT_TRUE(lisp_nesting_exceeds(repeat("'", 100000) + "x"));
  EXPECT_TRUE(lisp_nesting_exceeds(repeat("#(", 100000)));
}

TEST(LispNesting, UnbalancedOrCutShortTextEnds) {
  for (const char* text : {")))))", "#", "#1", "\"abc", "|abc", "#|abc", "#\\", ",", "'", "#+"})
    EXPECT_FALSE(lisp_nesting_exceeds(text, 3)) << text;
}
