#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/json_fast.hpp"
#include "core/json_limits.hpp"
#include "mutations.hpp"

using agentq::parse_simple_json;
using json = nlohmann::json;

namespace {

// Equal values of equal types all the way down (json's == takes 1 and 1u
// for equal).
bool same(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(), jt = b.begin(); it != a.end(); ++it, ++jt)
      if (it.key() != jt.key() || !same(it.value(), jt.value())) return false;
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

// Whatever the simple parser parses, nlohmann parses to the same value;
// what nlohmann rejects, the simple parser rejects too.
void expect_agrees(const std::string& text) {
  std::optional<json> simple = parse_simple_json(text);
  json full = json::parse(text, nullptr, false);
  if (full.is_discarded()) {
    EXPECT_FALSE(simple.has_value()) << text;
  } else if (simple) {
    EXPECT_TRUE(same(*simple, full)) << text << "\n" << simple->dump() << "\n" << full.dump();
  }
}

const std::vector<std::string> kHandled = {
    R"json({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}})json",
    R"({"jsonrpc":"2.0","id":"a-1","method":"ping"})",
    R"( { "a" : [ 1 , -2 , 0 , -0 , true , false , null , "x\n\t\"\\\/\b\f\r" , { } , [ ] ] } )",
    "{\"é ✓ 😀\":\"\x7f\",\"k\":1,\"k\":2}",
    R"([999999999999999999,-999999999999999999])",
    "\t\r\n\"s\"\n",
    "7",
    "[[[[[]]]]]",
};

const std::vector<std::string> kOthers = {
    "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "-", "-01", "1.5", "1e3", "1E3", "-1.0",
    "1234567890123456789", "18446744073709551615", "18446744073709551616", "-9223372036854775808",
    "\"\\u00e9\"", "\"\\ud83d\\ude00\"", "\"\\x\"", "\"a", "\"\x01\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
    "tru", "truex", "nul", "[true false]", "1 2", "{}{}", "\xef\xbb\xbf{}", "[1]x", "/* c */ 1", std::string("[1\0]", 4),
    std::string("\"a\0b\"", 5), "[\"a\"\"b\"]", "{\"a\":}", "[,1]", "{\"a\":1\"b\":2}",
};

}  // namespace

TEST(JsonFast, ParsesTheUsualMessagesAsNlohmannDoes) {
  for (const std::string& text : kHandled) {
    std::optional<json> simple = parse_simple_json(text);
    ASSERT_TRUE(simple.has_value()) << text;
    EXPECT_TRUE(same(*simple, json::parse(text))) << text;
  }
  // Numbers keep nlohmann's types: unsigned unless negative.
  EXPECT_TRUE(parse_simple_json("1")->is_number_unsigned());
  EXPECT_TRUE(parse_simple_json("-1")->is_number_integer());
  EXPECT_TRUE(parse_simple_json("-0")->is_number_integer());
  EXPECT_EQ((*parse_simple_json(R"({"k":1,"k":2})"))["k"], 2);
}

TEST(JsonFast, LeavesEverythingElseToNlohmann) {
  for (const std::string& text : kOthers) expect_agrees(text);
  for (const char* text : {"1.5", "1e3", "\"\\u00e9\"", "1234567890123456789", "\xef\xbb\xbf{}"})
    EXPECT_FALSE(parse_simple_json(text).has_value()) << text;
}

TEST(JsonFast, NestingBeyondTheLimitIsLeftToTheBoundedParser) {
  std::string deep(agentq::kMaxJsonDepth, '['), deeper(agentq::kMaxJsonDepth + 1, '[');
  deep += std::string(agentq::kMaxJsonDepth, ']');
  deeper += std::string(agentq::kMaxJsonDepth + 1, ']');
  EXPECT_TRUE(parse_simple_json(deep).has_value());
  EXPECT_FALSE(parse_simple_json(deeper).has_value());
  EXPECT_TRUE(agentq::parse_json_bounded(deep).has_value());
  EXPECT_FALSE(agentq::parse_json_bounded(deeper).has_value());
}

// Mutations of the handled texts (bytes replaced, dropped, doubled, cut):
// the simple parser never disagrees with nlohmann.
TEST(JsonFast, MutatedTextsAgreeWithNlohmann) {
  std::mt19937 random(4242);
  const std::string alphabet = "{}[]\":,\\/ \t\n-0123456789.eEtrufalsn\x01\x7f\xc3\xa9\xff";
  for (int round = 0; round < 20000; ++round) {
    expect_agrees(agentq::testing::mutated(kHandled[random() % kHandled.size()], random, alphabet));
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(RequestProgressToken, ReadsParamsMetaProgressTokenAStringOrANumber) {
  using agentq::parse_simple_tools_call;
  using agentq::request_progress_token;
  EXPECT_EQ(request_progress_token(json::parse(R"({"params":{"_meta":{"progressToken":"p1"}}})")), "p1");
  EXPECT_EQ(request_progress_token(json::parse(R"({"params":{"_meta":{"progressToken":7}}})")), 7);
  for (const char* text : {R"({"params":{"_meta":{"progressToken":{}}}})", R"({"params":{"_meta":[1]}})",
                           R"({"params":{}})", R"({"params":3})", R"({})", R"([1])"}) {
    EXPECT_TRUE(request_progress_token(json::parse(text)).is_null()) << text;
  }
  // The simple parser reads the same token.
  auto simple = parse_simple_tools_call(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}})");
  ASSERT_TRUE(simple);
  EXPECT_EQ(simple->progress_token, "t");
}
