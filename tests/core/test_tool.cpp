#include <gtest/gtest.h>

#include "core/tool.hpp"
#include "test_helpers.hpp"

using namespace agentq;
using agentq::testing::make_tool;
using agentq::testing::param;

TEST(SafetyLevel, ToStringNamesEachLevel) {
  EXPECT_EQ(to_string(SafetyLevel::Safe), "safe");
  EXPECT_EQ(to_string(SafetyLevel::Cautious), "cautious");
  EXPECT_EQ(to_string(SafetyLevel::Dangerous), "dangerous");
}

TEST(SafetyLevel, ParseAcceptsKeywordsAndAnyCase) {
  EXPECT_EQ(parse_safety_level("safe"), SafetyLevel::Safe);
  EXPECT_EQ(parse_safety_level(":safe"), SafetyLevel::Safe);
  EXPECT_EQ(parse_safety_level("SAFE"), SafetyLevel::Safe);
  EXPECT_EQ(parse_safety_level(":CAUTIOUS"), SafetyLevel::Cautious);
  EXPECT_EQ(parse_safety_level("Dangerous"), SafetyLevel::Dangerous);
}

TEST(SafetyLevel, ParseRejectsEverythingElse) {
  for (const char* text : {"", ":", "unsafe", "saf", "safe ", " safe", "::safe", "dangerous!", "0", "1"}) {
    EXPECT_EQ(parse_safety_level(text), std::nullopt) << text;
  }
}

TEST(SafetyLevel, LevelsAreOrdered) {
  EXPECT_LT(static_cast<int>(SafetyLevel::Safe), static_cast<int>(SafetyLevel::Cautious));
  EXPECT_LT(static_cast<int>(SafetyLevel::Cautious), static_cast<int>(SafetyLevel::Dangerous));
}

TEST(ParamType, ToStringGivesJsonSchemaNames) {
  EXPECT_EQ(to_string(ParamType::String), "string");
  EXPECT_EQ(to_string(ParamType::Boolean), "boolean");
  EXPECT_EQ(to_string(ParamType::Number), "number");
  EXPECT_EQ(to_string(ParamType::Integer), "integer");
  EXPECT_EQ(to_string(ParamType::Object), "object");
  EXPECT_EQ(to_string(ParamType::Array), "array");
}

TEST(ParamType, ParseRoundTripsEveryType) {
  for (ParamType t : {ParamType::String, ParamType::Boolean, ParamType::Number, ParamType::Integer, ParamType::Object,
                      ParamType::Array}) {
    const std::string name(to_string(t));
    EXPECT_EQ(parse_param_type(name), t);
    EXPECT_EQ(parse_param_type(":" + name), t);
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(parse_param_type(upper), t);
  }
}

TEST(ParamType, ParseRejectsUnknownTypes) {
  for (const char* text : {"", "str", "int", "float", "list", "null", "any", ":", "strings", "bool"}) {
    EXPECT_EQ(parse_param_type(text), std::nullopt) << text;
  }
}

TEST(HandlerKind, ToString) {
  EXPECT_EQ(to_string(HandlerKind::Native), "native");
  EXPECT_EQ(to_string(HandlerKind::Lisp), "lisp");
  EXPECT_EQ(to_string(HandlerKind::Elisp), "elisp");
}

TEST(SnakeCase, AcceptsSnakeCaseNames) {
  for (const char* name : {"a", "describe_symbol", "x1", "read_file_2", "a_", "a__b", "abc123"}) {
    EXPECT_TRUE(is_snake_case(name)) << name;
  }
}

TEST(SnakeCase, RejectsOtherNames) {
  for (const char* name : {"", "Foo", "Foo-Bar", "describe-symbol", "describeSymbol", "_private", "1abc", "a b",
                           "a.b", "é", "a\n", "ABC", "a-"}) {
    EXPECT_FALSE(is_snake_case(name)) << name;
  }
}

TEST(Tool, FindParameterByName) {
  Tool tool = make_tool("t", {param("symbol"), param("package")});
  ASSERT_NE(tool.find_parameter("package"), nullptr);
  EXPECT_EQ(tool.find_parameter("package")->name, "package");
  EXPECT_EQ(tool.find_parameter("symbol"), &tool.parameters[0]);
  EXPECT_EQ(tool.find_parameter("missing"), nullptr);
  EXPECT_EQ(tool.find_parameter(""), nullptr);
}

TEST(Tool, HasCategoryIgnoresColonAndCase) {
  Tool tool = make_tool("t", {}, {}, SafetyLevel::Safe, agentq::testing::returns("ok"), {"introspection", "xref"});
  EXPECT_TRUE(tool.has_category("introspection"));
  EXPECT_TRUE(tool.has_category(":xref"));
  EXPECT_TRUE(tool.has_category("XREF"));
  EXPECT_FALSE(tool.has_category("execution"));
  EXPECT_FALSE(tool.has_category(""));
  EXPECT_FALSE(tool.has_category("intro"));
}

TEST(ValidateToolDefinition, AcceptsAWellFormedTool) {
  Tool tool = make_tool("describe_symbol", {param("symbol"), param("package")}, {"symbol"});
  EXPECT_NO_THROW(validate_tool_definition(tool));
}

TEST(ValidateToolDefinition, AcceptsToolWithoutParameters) {
  EXPECT_NO_THROW(validate_tool_definition(make_tool("reset_session")));
}

TEST(ValidateToolDefinition, AcceptsHyphenatedParameterNames) {
  // evaluate-lisp's "capture-time" parameter.
  EXPECT_NO_THROW(validate_tool_definition(make_tool("evaluate_lisp", {param("code"), param("capture-time")})));
}

namespace {
std::string definition_error(const Tool& tool) {
  try {
    validate_tool_definition(tool);
  } catch (const ToolDefinitionError& e) {
    return e.what();
  }
  return "<no error>";
}
}  // namespace

TEST(ValidateToolDefinition, RejectsNonSnakeCaseName) {
  EXPECT_EQ(definition_error(make_tool("Foo-Bar")),
            "Invalid tool name \"Foo-Bar\": tool names must be snake_case (^[a-z][a-z0-9_]*$)");
  EXPECT_EQ(definition_error(make_tool("describe-symbol")),
            "Invalid tool name \"describe-symbol\": tool names must be snake_case (^[a-z][a-z0-9_]*$)");
}

TEST(ValidateToolDefinition, RejectsEmptyName) {
  EXPECT_EQ(definition_error(make_tool("")),
            "Invalid tool name \"\": tool names must be snake_case (^[a-z][a-z0-9_]*$)");
}

TEST(ValidateToolDefinition, RejectsNamesLongerThan64CharactersAndQuotesNamesReadably) {
  EXPECT_EQ(definition_error(make_tool(std::string(64, 'a'))), "<no error>");
  EXPECT_EQ(definition_error(make_tool(std::string(100000, 'a'))),
            "Invalid tool name \"" + std::string(80, 'a') +
                "…\": tool names must be at most 64 characters (as OpenAI and Anthropic require)");
  EXPECT_EQ(definition_error(make_tool(std::string("a\0b\"", 4))),
            "Invalid tool name \"a\\u0000b\\\"\": tool names must be snake_case (^[a-z][a-z0-9_]*$)");
}

TEST(ValidateToolDefinition, RejectsRequiredParameterNotAmongParameters) {
  Tool tool = make_tool("describe_symbol", {param("symbol")}, {"x"});
  EXPECT_EQ(definition_error(tool), "Tool describe_symbol: required parameter \"x\" is not among its parameters");
}

TEST(ValidateToolDefinition, RejectsEmptyOrBlankDescription) {
  Tool tool = make_tool("t");
  tool.description = "";
  EXPECT_EQ(definition_error(tool), "Tool t: description must not be empty");
  tool.description = "  \n\t";
  EXPECT_EQ(definition_error(tool), "Tool t: description must not be empty");
}

TEST(ValidateToolDefinition, RejectsMissingHandler) {
  Tool tool = make_tool("t");
  tool.handler = nullptr;
  EXPECT_EQ(definition_error(tool), "Tool t: missing handler");
}

TEST(ValidateToolDefinition, RejectsDuplicateParameter) {
  EXPECT_EQ(definition_error(make_tool("t", {param("a"), param("b"), param("a")})),
            "Tool t: duplicate parameter \"a\"");
}

TEST(ValidateToolDefinition, RejectsEmptyParameterName) {
  EXPECT_EQ(definition_error(make_tool("t", {param("a"), Parameter{"", ParamType::String, "x"}})),
            "Tool t: parameter 2 has an empty name");
}

TEST(ValidateToolDefinition, RejectsOutOfRangeEnums) {
  Tool tool = make_tool("t", {param("a")});
  tool.safety_level = static_cast<SafetyLevel>(7);
  EXPECT_NE(definition_error(tool).find("unknown safety level"), std::string::npos);
  tool.safety_level = SafetyLevel::Safe;
  tool.parameters[0].type = static_cast<ParamType>(42);
  EXPECT_NE(definition_error(tool).find("parameter \"a\" has an unknown type"), std::string::npos);
}

TEST(ValidateToolDefinition, AnEnumIsOfStringsEachOnceAndHoldsTheDefault) {
  Tool tool = make_tool("t", {param("mode"), param("count", ParamType::Integer)});
  tool.parameters[0].choices = {"time", "calls"};
  tool.parameters[0].default_value = "time";
  EXPECT_EQ(definition_error(tool), "<no error>");
  tool.parameters[0].default_value = "alloc";
  EXPECT_EQ(definition_error(tool), "Tool t: parameter \"mode\"'s default is not in its enum");
  tool.parameters[0].default_value = nullptr;
  tool.parameters[0].choices = {"time", "calls", "time"};
  EXPECT_EQ(definition_error(tool), "Tool t: parameter \"mode\" lists \"time\" twice in its enum");
  tool.parameters[0].choices = {};
  tool.parameters[1].choices = {"1"};
  EXPECT_EQ(definition_error(tool), "Tool t: parameter \"count\" has an enum but is not a string");
}

TEST(ValidateToolDefinition, ErrorIsAnInvalidArgument) {
  EXPECT_THROW(validate_tool_definition(make_tool("Bad")), std::invalid_argument);
  EXPECT_THROW(validate_tool_definition(make_tool("Bad")), ToolDefinitionError);
}
