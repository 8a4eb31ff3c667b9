#include <gtest/gtest.h>

#include "core/schema.hpp"
#include "test_helpers.hpp"

using namespace agentq;
using agentq::testing::make_tool;
using agentq::testing::param;

namespace {

Tool describe_symbol() {
  Tool t = make_tool("describe_symbol",
                     {param("symbol", ParamType::String, "Symbol name to describe"),
                      param("package", ParamType::String, "Package name (optional)")},
                     {"symbol"});
  t.description = "Get detailed information about a Lisp symbol including type, value, documentation.";
  return t;
}

json describe_symbol_parameters() {
  return json::parse(R"J({
    "type": "object",
    "properties": {
      "symbol": {"type": "string", "description": "Symbol name to describe"},
      "package": {"type": "string", "description": "Package name (optional)"}
    },
    "required": ["symbol"],
    "additionalProperties": false
  })J");
}

}  // namespace

TEST(ParseSchemaFormat, OpenAISpellings) {
  for (const char* s : {"openai", "OpenAI", ":openai", "", "function", ":function", "FUNCTION"}) {
    EXPECT_EQ(parse_schema_format(s), SchemaFormat::OpenAI) << s;
  }
}

TEST(ParseSchemaFormat, AnthropicAndMcp) {
  EXPECT_EQ(parse_schema_format("anthropic"), SchemaFormat::Anthropic);
  EXPECT_EQ(parse_schema_format(":Anthropic"), SchemaFormat::Anthropic);
  EXPECT_EQ(parse_schema_format("mcp"), SchemaFormat::Mcp);
  EXPECT_EQ(parse_schema_format(":MCP"), SchemaFormat::Mcp);
}

TEST(ParseSchemaFormat, RejectsOthers) {
  for (const char* s : {"claude", "gpt", "open ai", "::openai", "mcp2", " mcp", "tool"}) {
    EXPECT_EQ(parse_schema_format(s), std::nullopt) << s;
  }
}

TEST(ParametersSchema, ContractShape) { EXPECT_EQ(parameters_schema(describe_symbol()), describe_symbol_parameters()); }

TEST(ParametersSchema, EmptyPropertiesIsAnObjectAndRequiredAnArray) {
  json s = parameters_schema(make_tool("reset_session"));
  ASSERT_TRUE(s["properties"].is_object());
  EXPECT_TRUE(s["properties"].empty());
  ASSERT_TRUE(s["required"].is_array());
  EXPECT_TRUE(s["required"].empty());
  EXPECT_EQ(s.dump(), R"({"additionalProperties":false,"properties":{},"required":[],"type":"object"})");
}

TEST(ParametersSchema, EveryParameterType) {
  Tool t = make_tool("typed", {param("s", ParamType::String), param("b", ParamType::Boolean),
                               param("n", ParamType::Number), param("i", ParamType::Integer),
                               param("o", ParamType::Object), param("a", ParamType::Array)});
  json p = parameters_schema(t)["properties"];
  EXPECT_EQ(p["s"]["type"], "string");
  EXPECT_EQ(p["b"]["type"], "boolean");
  EXPECT_EQ(p["n"]["type"], "number");
  EXPECT_EQ(p["i"]["type"], "integer");
  EXPECT_EQ(p["o"]["type"], "object");
  EXPECT_EQ(p["a"]["type"], "array");
  EXPECT_EQ(p["s"]["description"], "The s");
}

TEST(ParametersSchema, ArrayParametersGetItems) {
  Tool t = make_tool("t", {param("a", ParamType::Array), param("o", ParamType::Object)});
  json p = parameters_schema(t)["properties"];
  ASSERT_TRUE(p["a"].contains("items"));
  EXPECT_EQ(p["a"]["items"], json::object());
  EXPECT_FALSE(p["o"].contains("items"));
}

TEST(ParametersSchema, RequiredKeepsOrderAndIsUnique) {
  Tool t = make_tool("write_file", {param("path"), param("content")}, {"content", "path", "content"});
  EXPECT_EQ(parameters_schema(t)["required"], json::array({"content", "path"}));
}

TEST(ToolToSchema, OpenAIFunction) {
  json expected = {{"type", "function"},
                   {"function",
                    {{"name", "describe_symbol"},
                     {"description", describe_symbol().description},
                     {"parameters", describe_symbol_parameters()}}}};
  EXPECT_EQ(tool_to_schema(describe_symbol(), SchemaFormat::OpenAI), expected);
  EXPECT_EQ(tool_to_schema(describe_symbol()), expected);  // the default
}

TEST(ToolToSchema, Anthropic) {
  json expected = {{"name", "describe_symbol"},
                   {"description", describe_symbol().description},
                   {"input_schema", describe_symbol_parameters()}};
  EXPECT_EQ(tool_to_schema(describe_symbol(), SchemaFormat::Anthropic), expected);
}

TEST(ToolToSchema, Mcp) {
  json expected = {{"name", "describe_symbol"},
                   {"title", "Describe Symbol"},
                   {"description", describe_symbol().description},
                   {"inputSchema", describe_symbol_parameters()},
                   {"annotations", {{"readOnlyHint", true}, {"destructiveHint", false}}}};
  EXPECT_EQ(tool_to_schema(describe_symbol(), SchemaFormat::Mcp), expected);
}

TEST(ToolToSchema, McpAnnotationsFollowTheSafetyLevel) {
  auto annotations = [](SafetyLevel level) {
    return tool_to_schema(make_tool("t", {}, {}, level), SchemaFormat::Mcp)["annotations"];
  };
  EXPECT_EQ(annotations(SafetyLevel::Safe), json::parse(R"({"readOnlyHint":true,"destructiveHint":false})"));
  // A cautious tool runs code (evaluate_lisp…): it may destroy what the
  // session holds; one whose categories say it reads (read_buffer) only reads.
  EXPECT_EQ(annotations(SafetyLevel::Cautious), json::parse(R"({"readOnlyHint":false,"destructiveHint":true})"));
  EXPECT_EQ(tool_to_schema(make_tool("t", {}, {}, SafetyLevel::Cautious, agentq::testing::returns("ok"), {"buffer"}), SchemaFormat::Mcp)["annotations"],
            json::parse(R"({"readOnlyHint":true,"destructiveHint":false})"));
  EXPECT_EQ(tool_to_schema(make_tool("t", {}, {}, SafetyLevel::Cautious, agentq::testing::returns("ok"), {"buffer", "execution"}), SchemaFormat::Mcp)["annotations"],
            json::parse(R"({"readOnlyHint":false,"destructiveHint":true})"));
  EXPECT_EQ(annotations(SafetyLevel::Dangerous), json::parse(R"({"readOnlyHint":false,"destructiveHint":true})"));
  EXPECT_EQ(mcp_annotations(make_tool("t", {}, {}, SafetyLevel::Dangerous)), annotations(SafetyLevel::Dangerous));
}

TEST(ToolToSchema, NoExtraKeys) {
  EXPECT_EQ(tool_to_schema(describe_symbol(), SchemaFormat::OpenAI).size(), 2u);
  EXPECT_EQ(tool_to_schema(describe_symbol(), SchemaFormat::OpenAI)["function"].size(), 3u);
  EXPECT_EQ(tool_to_schema(describe_symbol(), SchemaFormat::Anthropic).size(), 3u);
  EXPECT_EQ(tool_to_schema(describe_symbol(), SchemaFormat::Mcp).size(), 5u);
}

TEST(ToolToSchema, McpTitleIsTheToolsOrMadeFromItsName) {
  Tool t = make_tool("eval_in_frame");
  EXPECT_EQ(tool_to_schema(t, SchemaFormat::Mcp)["title"], "Eval In Frame");
  EXPECT_EQ(tool_title(make_tool("get_repl_history")), "Get REPL History");
  EXPECT_EQ(tool_title(make_tool("x__y_")), "X  Y");
  t.title = "Evaluate in a frame";
  EXPECT_EQ(tool_to_schema(t, SchemaFormat::Mcp)["title"], "Evaluate in a frame");
  // Only MCP has titles.
  EXPECT_FALSE(tool_to_schema(t, SchemaFormat::Anthropic).contains("title"));
}

TEST(ParametersSchema, BoundsAndDefaultsAreSaidAliasesAreNot) {
  Tool t = make_tool("listing", {param("limit", ParamType::Integer), param("ratio", ParamType::Number),
                                 param("deep", ParamType::Boolean)});
  t.parameters[0].minimum = 1;
  t.parameters[0].maximum = 50;
  t.parameters[0].default_value = 10;
  t.parameters[1].maximum = 0.5;
  t.parameters[2].default_value = false;
  t.parameters[2].aliases = {"deep-p"};
  json p = parameters_schema(t)["properties"];
  EXPECT_EQ(p["limit"]["minimum"].dump(), "1");
  EXPECT_EQ(p["limit"]["maximum"].dump(), "50");
  EXPECT_EQ(p["limit"]["default"], 10);
  EXPECT_EQ(p["ratio"]["maximum"], 0.5);
  EXPECT_FALSE(p["ratio"].contains("minimum"));
  EXPECT_FALSE(p["ratio"].contains("default"));
  EXPECT_EQ(p["deep"]["default"], false);
  EXPECT_FALSE(p.contains("deep-p"));
}

TEST(ParametersSchema, AnEnumIsSaidInEveryFormat) {
  Tool t = make_tool("profile", {param("mode"), param("code")});
  t.parameters[0].choices = {"time", "calls", "alloc"};
  t.parameters[0].default_value = "time";
  for (SchemaFormat format : {SchemaFormat::Mcp, SchemaFormat::OpenAI, SchemaFormat::Anthropic}) {
    std::string text = tool_to_schema(t, format).dump();
    EXPECT_NE(text.find(R"("default":"time","description":"The mode","enum":["time","calls","alloc"])"), std::string::npos)
        << text;
  }
  EXPECT_FALSE(parameters_schema(t)["properties"]["code"].contains("enum"));
}

TEST(ToolToSchema, EmptyParametersSerializeAsObjectAndArray) {
  std::string text = tool_to_schema(make_tool("reset_session"), SchemaFormat::OpenAI).dump();
  EXPECT_NE(text.find(R"("properties":{})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("required":[])"), std::string::npos) << text;
}

TEST(ToolsToSchema, KeepsOrderGiven) {
  auto a = std::make_shared<const Tool>(make_tool("zeta"));
  auto b = std::make_shared<const Tool>(make_tool("alpha"));
  json s = tools_to_schema({a, b}, SchemaFormat::Mcp);
  ASSERT_TRUE(s.is_array());
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]["name"], "zeta");
  EXPECT_EQ(s[1]["name"], "alpha");
  EXPECT_EQ(tools_to_schema({a, b})[0]["type"], "function");
}

TEST(ToolsToSchema, EmptyListIsAnEmptyArray) {
  json s = tools_to_schema({});
  EXPECT_TRUE(s.is_array());
  EXPECT_EQ(s.dump(), "[]");
}

TEST(ToolsToSchema, FromRegistryFilter) {
  Registry r;
  r.register_tool(make_tool("b_tool"));
  r.register_tool(make_tool("a_tool", {}, {}, SafetyLevel::Dangerous));
  json all = tools_to_schema(r.filter(), SchemaFormat::Anthropic);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]["name"], "a_tool");
  json safe = tools_to_schema(r.filter(SafetyLevel::Safe), SchemaFormat::Anthropic);
  ASSERT_EQ(safe.size(), 1u);
  EXPECT_EQ(safe[0]["name"], "b_tool");
}
