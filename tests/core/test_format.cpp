#include <gtest/gtest.h>

#include <limits>

#include "core/format.hpp"

using namespace agentq;

TEST(FormatToolResult, StringUnchanged) {
  EXPECT_EQ(format_tool_result(json("DEFUN [function]\nDocumentation: ...")), "DEFUN [function]\nDocumentation: ...");
  EXPECT_EQ(format_tool_result(json("")), "");
  EXPECT_EQ(format_tool_result(json("with \"quotes\" and \\")), "with \"quotes\" and \\");
}

TEST(FormatToolResult, NullAndBooleans) {
  EXPECT_EQ(format_tool_result(json(nullptr)), "nil");
  EXPECT_EQ(format_tool_result(json(false)), "nil");
  EXPECT_EQ(format_tool_result(json(true)), "T");
}

TEST(FormatToolResult, Integers) {
  EXPECT_EQ(format_tool_result(json(0)), "0");
  EXPECT_EQ(format_tool_result(json(42)), "42");
  EXPECT_EQ(format_tool_result(json(-7)), "-7");
  EXPECT_EQ(format_tool_result(json(std::numeric_limits<std::int64_t>::min())), "-9223372036854775808");
  EXPECT_EQ(format_tool_result(json(std::numeric_limits<std::uint64_t>::max())), "18446744073709551615");
}

TEST(FormatToolResult, FloatsShortestRoundTrip) {
  EXPECT_EQ(format_tool_result(json(0.1)), "0.1");
  EXPECT_EQ(format_tool_result(json(2.5)), "2.5");
  EXPECT_EQ(format_tool_result(json(1.0)), "1.0");
  EXPECT_EQ(format_tool_result(json(-0.001)), "-0.001");
  const double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(format_tool_result(json(third))), third);
}

TEST(FormatToolResult, NonFiniteFloats) {
  EXPECT_EQ(format_tool_result(json(std::numeric_limits<double>::infinity())), "inf");
  EXPECT_EQ(format_tool_result(json(-std::numeric_limits<double>::infinity())), "-inf");
  EXPECT_EQ(format_tool_result(json(std::numeric_limits<double>::quiet_NaN())), "nan");
}

TEST(FormatToolResult, ListAsSExpression) {
  EXPECT_EQ(format_tool_result(json::array({1, 2, 3})), "(1 2 3)");
  EXPECT_EQ(format_tool_result(json::array({1, 2, "x"})), "(1 2 \"x\")");
  EXPECT_EQ(format_tool_result(json::array({"a\"b", "c\\d"})), "(\"a\\\"b\" \"c\\\\d\")");
}

TEST(FormatToolResult, NestedLists) {
  EXPECT_EQ(format_tool_result(json::parse(R"([1, [2, [3, "x"]], 4])")), "(1 (2 (3 \"x\")) 4)");
}

TEST(FormatToolResult, EmptyListIsNil) {
  EXPECT_EQ(format_tool_result(json::array()), "nil");
  EXPECT_EQ(format_tool_result(json::parse("[1, []]")), "(1 nil)");
}

TEST(FormatToolResult, ListElementsOfEveryKind) {
  EXPECT_EQ(format_tool_result(json::parse(R"([null, true, false, 1.5, "s"])")), "(nil T nil 1.5 \"s\")");
}

TEST(FormatToolResult, ObjectAsPlist) {
  EXPECT_EQ(format_tool_result(json{{"name", "car"}}), "(:name \"car\")");
  // nlohmann objects iterate in key order.
  EXPECT_EQ(format_tool_result(json::parse(R"({"b": 2, "a": 1})")), "(:a 1 :b 2)");
  EXPECT_EQ(format_tool_result(json::object()), "nil");
}

TEST(FormatToolResult, NestedObjectsAndLists) {
  EXPECT_EQ(format_tool_result(json::parse(R"({"kind": "function", "args": ["x", "y"], "meta": {"line": 3}})")),
            "(:args (\"x\" \"y\") :kind \"function\" :meta (:line 3))");
  EXPECT_EQ(format_tool_result(json::parse(R"([{"a": 1}, {"b": null}])")), "((:a 1) (:b nil))");
}

TEST(FormatToolResult, OddKeysAreEscapedAsSymbols) {
  EXPECT_EQ(format_tool_result(json{{"my key", 1}}), "(:|my key| 1)");
  EXPECT_EQ(format_tool_result(json{{"", 1}}), "(:|| 1)");
  EXPECT_EQ(format_tool_result(json{{"a|b", 1}}), "(:|a\\|b| 1)");
  EXPECT_EQ(format_tool_result(json{{"with-dash", 1}}), "(:with-dash 1)");
}
