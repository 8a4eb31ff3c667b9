#include <gtest/gtest.h>

#include "core/validate.hpp"
#include "test_helpers.hpp"

using namespace agentq;
using agentq::testing::make_tool;
using agentq::testing::param;

namespace {

Tool typed_tool() {
  return make_tool("typed",
                   {param("code", ParamType::String), param("flag", ParamType::Boolean),
                    param("timeout", ParamType::Number), param("count", ParamType::Integer),
                    param("options", ParamType::Object), param("items", ParamType::Array)},
                   {"code"});
}

}  // namespace

TEST(JsonTypeName, NamesEveryType) {
  EXPECT_EQ(json_type_name(json(nullptr)), "null");
  EXPECT_EQ(json_type_name(json::object()), "object");
  EXPECT_EQ(json_type_name(json::array()), "array");
  EXPECT_EQ(json_type_name(json("x")), "string");
  EXPECT_EQ(json_type_name(json(true)), "boolean");
  EXPECT_EQ(json_type_name(json(-3)), "integer");
  EXPECT_EQ(json_type_name(json(3u)), "integer");
  EXPECT_EQ(json_type_name(json(2.5)), "number");
}

TEST(ValidateArguments, AcceptsMatchingArguments) {
  json args = {{"code", "(+ 1 2)"}, {"flag", true},        {"timeout", 1.5},
               {"count", 3},        {"options", {{"a", 1}}}, {"items", {1, 2}}};
  EXPECT_EQ(validate_arguments(typed_tool(), args), std::nullopt);
}

TEST(ValidateArguments, AcceptsOnlyTheRequiredOnes) {
  EXPECT_EQ(validate_arguments(typed_tool(), json{{"code", "x"}}), std::nullopt);
}

TEST(ValidateArguments, RejectsNonObjects) {
  EXPECT_EQ(validate_arguments(typed_tool(), json::array({1})),
            "Invalid arguments: expected a JSON object, got array");
  EXPECT_EQ(validate_arguments(typed_tool(), json("code")), "Invalid arguments: expected a JSON object, got string");
  EXPECT_EQ(validate_arguments(typed_tool(), json(5)), "Invalid arguments: expected a JSON object, got integer");
  EXPECT_EQ(validate_arguments(typed_tool(), json(false)), "Invalid arguments: expected a JSON object, got boolean");
}

TEST(ValidateArguments, NullArgumentObjectMeansNoArguments) {
  EXPECT_EQ(validate_arguments(make_tool("t", {param("x")}), json(nullptr)), std::nullopt);
  EXPECT_EQ(validate_arguments(typed_tool(), json(nullptr)), "Missing required argument: code");
}

TEST(ValidateArguments, MissingRequired) {
  EXPECT_EQ(validate_arguments(typed_tool(), json::object()), "Missing required argument: code");
  EXPECT_EQ(validate_arguments(typed_tool(), json{{"flag", true}}), "Missing required argument: code");
}

TEST(ValidateArguments, NullCountsAsAbsent) {
  EXPECT_EQ(validate_arguments(typed_tool(), json{{"code", nullptr}}), "Missing required argument: code");
  // An optional parameter given as null is fine, whatever its type.
  EXPECT_EQ(validate_arguments(typed_tool(), json{{"code", "x"}, {"count", nullptr}, {"flag", nullptr}}),
            std::nullopt);
}

TEST(ValidateArguments, ReportsTheFirstMissingRequiredInOrder) {
  Tool t = make_tool("write_file", {param("path"), param("content")}, {"path", "content"});
  EXPECT_EQ(validate_arguments(t, json::object()), "Missing required argument: path");
  EXPECT_EQ(validate_arguments(t, json{{"path", "/tmp/x"}}), "Missing required argument: content");
}

TEST(ValidateArguments, WrongTypeMessages) {
  const Tool t = typed_tool();
  EXPECT_EQ(validate_arguments(t, json{{"code", 42}}), "Invalid argument 'code': expected string, got integer");
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"flag", "true"}}),
            "Invalid argument 'flag': expected boolean, got string");
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"timeout", "10"}}),
            "Invalid argument 'timeout': expected number, got string");
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", 1.5}}),
            "Invalid argument 'count': expected integer, got number");
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"options", json::array()}}),
            "Invalid argument 'options': expected object, got array");
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"items", json::object()}}),
            "Invalid argument 'items': expected array, got object");
  EXPECT_EQ(validate_arguments(t, json{{"code", json::array()}}),
            "Invalid argument 'code': expected string, got array");
}

TEST(ValidateArguments, NumberTakesIntegersAndFloats) {
  const Tool t = typed_tool();
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"timeout", 10}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"timeout", 10u}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"timeout", -0.25}}), std::nullopt);
  EXPECT_NE(validate_arguments(t, json{{"code", "x"}, {"timeout", true}}), std::nullopt);
}

TEST(ValidateArguments, IntegerTakesIntegralFloats) {
  const Tool t = typed_tool();
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", 3}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", -3}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", 3.0}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", json::parse("1e3")}}), std::nullopt);
  EXPECT_NE(validate_arguments(t, json{{"code", "x"}, {"count", 3.000001}}), std::nullopt);
  EXPECT_NE(validate_arguments(t, json{{"code", "x"}, {"count", "3"}}), std::nullopt);
  EXPECT_NE(validate_arguments(t, json{{"code", "x"}, {"count", std::numeric_limits<double>::infinity()}}),
            std::nullopt);
}

TEST(ValidateArguments, ExtraArgumentsAreRefusedByName) {
  // The schema says additionalProperties: false; a misspelt name would
  // otherwise be silently ignored.
  EXPECT_EQ(validate_arguments(typed_tool(), json{{"code", "x"}, {"unexpected", {1, 2, 3}}}),
            "Unknown argument 'unexpected' for typed (it takes: code, flag, timeout, count, options, items)");
  EXPECT_EQ(validate_arguments(typed_tool(), json{{"code", "x"}, {"b", 1}, {"a", 2}}),
            "Unknown argument 'a', 'b' for typed (it takes: code, flag, timeout, count, options, items)");
  // A null one counts as absent, as a null parameter does.
  EXPECT_EQ(validate_arguments(typed_tool(), json{{"code", "x"}, {"unexpected", nullptr}}), std::nullopt);
}

TEST(ValidateArguments, AnAliasIsAcceptedAndCheckedAsItsParameter) {
  Tool t = typed_tool();
  t.parameters[1].aliases = {"flag-p"};
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"flag-p", true}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"flag-p", "yes"}}),
            "Invalid argument 'flag-p': expected boolean, got string");
}

TEST(ValidateArguments, BoundsAreChecked) {
  Tool t = typed_tool();
  t.parameters[3].minimum = 1;    // count
  t.parameters[3].maximum = 50;
  t.parameters[2].minimum = 0.5;  // timeout
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", 50}, {"timeout", 0.5}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", 51}}), "Invalid argument 'count': at most 50, got 51");
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", 0}}), "Invalid argument 'count': at least 1, got 0");
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"timeout", 0.25}}),
            "Invalid argument 'timeout': at least 0.5, got 0.25");
  EXPECT_EQ(validate_arguments(t, json{{"code", "x"}, {"count", "many"}}),
            "Invalid argument 'count': expected integer, got string");
}

TEST(ValidateArguments, AnEnumTakesOnlyItsValuesExactly) {
  Tool t = typed_tool();
  t.parameters[0].choices = {"time", "calls"};  // code
  EXPECT_EQ(validate_arguments(t, json{{"code", "calls"}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"code", "TIME"}}),
            R"(Invalid argument 'code': one of "time", "calls", got "TIME")");
  EXPECT_EQ(validate_arguments(t, json{{"code", ""}}), R"(Invalid argument 'code': one of "time", "calls", got "")");
  EXPECT_EQ(validate_arguments(t, json{{"code", 1}}), "Invalid argument 'code': expected string, got integer");
}

TEST(ValidateArguments, MissingRequiredIsReportedBeforeWrongTypes) {
  EXPECT_EQ(validate_arguments(typed_tool(), json{{"count", "bad"}}), "Missing required argument: code");
}

TEST(ValidateArguments, ToolWithoutParametersTakesAnEmptyObject) {
  Tool t = make_tool("reset_session");
  EXPECT_EQ(validate_arguments(t, json::object()), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"x", nullptr}}), std::nullopt);
  EXPECT_EQ(validate_arguments(t, json{{"x", 1}}), "Unknown argument 'x' for reset_session (it takes no arguments)");
}
