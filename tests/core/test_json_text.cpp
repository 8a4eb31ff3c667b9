#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/json_text.hpp"

using agentq::append_json_scalar;
using agentq::append_json_string;
using json = nlohmann::json;

namespace {

std::string dumped(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string written(std::string_view text) {
  std::string out = "prefix";
  append_json_string(out, text);
  return out.substr(6);
}

}  // namespace

TEST(JsonText, StringsAreEscapedAsDumpEscapesThem) {
  std::string every_byte_below_128;
  for (int c = 0; c < 128; ++c) every_byte_below_128 += static_cast<char>(c);
  for (std::string text : {std::string(), std::string("plain"), std::string("\"\\/\b\f\n\r\t"), every_byte_below_128,
                           std::string("é ✓ 😀 \xef\xbf\xbf \xf4\x8f\xbf\xbf"), std::string(1, '\0')})
    EXPECT_EQ(written(text), dumped(json(text))) << text;
}

// Random bytes, mostly invalid UTF-8, and random valid text: the same
// bytes as the serializer's, replacement included.
TEST(JsonText, RandomTextIsWrittenAsDumpWritesIt) {
  std::mt19937 random(12345);
  const std::string pieces[] = {"a", "\n", "\"", "\\", "\x01", "\x7f", "é", "✓", "😀", "\xff", "\xc0\xaf", "\xe2\x82",
                                "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "\xf0\x9f\x98"};
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    int length = static_cast<int>(random() % 12);
    for (int i = 0; i < length; ++i) {
      if (round % 2)
        text += static_cast<char>(random() % 256);
      else
        text += pieces[random() % std::size(pieces)];
    }
    ASSERT_EQ(written(text), dumped(json(text))) << round;
  }
}

TEST(JsonText, ScalarsAreWrittenAsDumpWritesThem) {
  for (const json& value : {json(0), json(-1), json(42u), json(INT64_MIN), json(UINT64_MAX), json(nullptr), json(true),
                            json(false), json("id \"1\""), json(2.5), json(1e300), json::array({1}), json::object()}) {
    std::string out;
    append_json_scalar(out, value);
    EXPECT_EQ(out, dumped(value));
  }
}
