#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/json_fast.hpp"
#include "core/jsonrpc.hpp"
#include "core/mcp_logging.hpp"
#include "core/schema.hpp"
#include "test_helpers.hpp"

using namespace agentq;
using agentq::testing::echo_args;
using agentq::testing::make_tool;
using agentq::testing::param;
using agentq::testing::returns;
namespace rpc = agentq::jsonrpc_error;

namespace {

class McpTest : public ::testing::Test {
 protected:
  McpTest() : executor(registry), server(executor) {
    registry.register_tool(make_tool("evaluate_lisp",
                                     {param("code"), param("package"), param("capture-time", ParamType::Boolean)},
                                     {"code"}, SafetyLevel::Cautious, [this](const json& args, CallContext&) {
                                       ++eval_runs;
                                       return ToolOutput{true, "=> " + args.at("code").get<std::string>()};
                                     }));
    registry.register_tool(make_tool("reset_session", {}, {}, SafetyLevel::Cautious,
                                     returns("Session reset. All definitions cleared.")));
    registry.register_tool(make_tool("write_file", {param("path"), param("content")}, {"path", "content"},
                                     SafetyLevel::Dangerous, returns("wrote")));
    registry.register_tool(make_tool("echo", {param("x", ParamType::Integer), param("deep", ParamType::Array)}, {}, SafetyLevel::Safe, echo_args()));
    registry.register_tool(make_tool("fails", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) {
      return ToolOutput{false, "[ERROR] UNDEFINED-FUNCTION\nThe function NONEXISTENT-FUNCTION is undefined."};
    }));
  }

  // The response parsed, after checking it is one compact line.
  json ask(std::string_view message, const ExecutionOptions& options = {}) {
    auto text = server.handle(message, options);
    EXPECT_TRUE(text.has_value()) << message.substr(0, 200);
    if (!text) return nullptr;
    EXPECT_EQ(text->find('\n'), std::string::npos);
    return json::parse(*text);
  }

  Registry registry;
  Executor executor;
  McpServer server;
  int eval_runs = 0;
};

void expect_error(const json& response, int code, const json& id) {
  ASSERT_TRUE(response.is_object()) << response.dump();
  EXPECT_EQ(response.value("jsonrpc", ""), "2.0") << response.dump();
  ASSERT_TRUE(response.contains("id")) << response.dump();
  EXPECT_EQ(response["id"], id) << response.dump();
  EXPECT_FALSE(response.contains("result")) << response.dump();
  ASSERT_TRUE(response.contains("error")) << response.dump();
  ASSERT_TRUE(response["error"].is_object());
  ASSERT_TRUE(response["error"]["code"].is_number_integer()) << response.dump();
  EXPECT_EQ(response["error"]["code"].get<int>(), code) << response.dump();
  ASSERT_TRUE(response["error"]["message"].is_string());
  EXPECT_FALSE(response["error"]["message"].get<std::string>().empty());
}

json expect_result(const json& response, const json& id) {
  EXPECT_TRUE(response.is_object()) << response.dump();
  EXPECT_EQ(response.value("jsonrpc", ""), "2.0");
  EXPECT_EQ(response["id"], id);
  EXPECT_FALSE(response.contains("error")) << response.dump();
  EXPECT_TRUE(response.contains("result")) << response.dump();
  return response.value("result", json());
}

std::string call_message(const json& id, const json& params) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}}.dump();
}

std::string call_message_of(const char* method, const json& id, const json& params) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
}

}  // namespace

// ------------------------------------------------------------- lifecycle

TEST_F(McpTest, Initialize) {
  json r = expect_result(
      ask(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",
           "capabilities":{},"clientInfo":{"name":"test","version":"1"}}})"),
      0);
  EXPECT_EQ(r["protocolVersion"], "2025-06-18");
  EXPECT_EQ(r["capabilities"], json::parse(R"({"tools":{"listChanged":false},"resources":{"subscribe":false,"listChanged":true},"prompts":{"listChanged":false},"logging":{}})"));
  EXPECT_TRUE(r["instructions"].is_string() && r["instructions"].get<std::string>().find("evaluate_lisp") != std::string::npos);
  EXPECT_EQ(r["serverInfo"], (json{{"name", "sly-agent-q"}, {"version", std::string(kVersion)}}));
}

TEST_F(McpTest, InitializeEchoesSupportedVersions) {
  for (const char* v : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"}) {
    json msg = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", v}}}};
    EXPECT_EQ(expect_result(ask(msg.dump()), 1)["protocolVersion"], v);
  }
}

TEST_F(McpTest, InitializeOffersLatestForUnknownVersions) {
  for (json v : {json("1999-01-01"), json(""), json(20250618), json(nullptr)}) {
    json msg = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", v}}}};
    EXPECT_EQ(expect_result(ask(msg.dump()), 1)["protocolVersion"], "2025-11-25") << v.dump();
  }
  EXPECT_EQ(expect_result(ask(R"({"jsonrpc":"2.0","id":1,"method":"initialize"})"), 1)["protocolVersion"],
            "2025-11-25");
}

TEST_F(McpTest, InitializeReportsServerInfo) {
  McpServer custom(executor, ServerInfo{"sly-agent-q-mcp", "9.9.9"});
  auto text = custom.handle(R"({"jsonrpc":"2.0","id":"i","method":"initialize","params":{}})", {});
  ASSERT_TRUE(text);
  json r = json::parse(*text)["result"];
  EXPECT_EQ(r["serverInfo"]["name"], "sly-agent-q-mcp");
  EXPECT_EQ(r["serverInfo"]["version"], "9.9.9");
}

TEST_F(McpTest, InitializedNotificationHasNoResponse) {
  EXPECT_EQ(server.handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", {}), std::nullopt);
  EXPECT_EQ(server.handle(R"({"jsonrpc":"2.0","method":"notifications/initialized","params":{}})", {}),
            std::nullopt);
  EXPECT_EQ(server.handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})", {}),
            std::nullopt);
}

TEST_F(McpTest, Ping) {
  EXPECT_EQ(expect_result(ask(R"({"jsonrpc":"2.0","id":5,"method":"ping"})"), 5), json::object());
  EXPECT_EQ(expect_result(ask(R"({"jsonrpc":"2.0","id":5,"method":"ping","params":{}})"), 5), json::object());
}

TEST_F(McpTest, ResponseIsCompactOneLine) {
  auto text = server.handle(R"({"jsonrpc":"2.0","id":5,"method":"ping"})", {});
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, R"({"id":5,"jsonrpc":"2.0","result":{}})");
}

// -------------------------------------------------------------- tools/list

TEST_F(McpTest, ToolsListGivesMcpSchemasSorted) {
  json r = expect_result(ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"), 1);
  ASSERT_TRUE(r["tools"].is_array());
  EXPECT_EQ(r["tools"], tools_to_schema(registry.filter(), SchemaFormat::Mcp));
  std::vector<std::string> names;
  for (const auto& t : r["tools"]) {
    names.push_back(t["name"]);
    EXPECT_TRUE(t["inputSchema"]["properties"].is_object());
    EXPECT_TRUE(t["inputSchema"]["required"].is_array());
    EXPECT_EQ(t["inputSchema"]["type"], "object");
    EXPECT_TRUE(t["description"].is_string());
    EXPECT_TRUE(t["annotations"]["readOnlyHint"].is_boolean()) << t.dump();
    EXPECT_TRUE(t["annotations"]["destructiveHint"].is_boolean()) << t.dump();
  }
  EXPECT_EQ(names, registry.names());
}

TEST_F(McpTest, ToolsListAnnotatesSafetyLevels) {
  json tools = expect_result(ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"), 1)["tools"];
  auto annotations_of = [&](const std::string& name) {
    for (const auto& t : tools)
      if (t["name"] == name) return t["annotations"];
    return json();
  };
  EXPECT_EQ(annotations_of("echo"), json::parse(R"({"readOnlyHint":true,"destructiveHint":false})"));
  EXPECT_EQ(annotations_of("evaluate_lisp"), json::parse(R"({"readOnlyHint":false,"destructiveHint":true})"));
  EXPECT_EQ(annotations_of("write_file"), json::parse(R"({"readOnlyHint":false,"destructiveHint":true})"));
}

TEST_F(McpTest, ServerVersionIsTheProjectVersion) {
  // From CMake's PROJECT_VERSION (agentq_version.hpp), not a literal here.
  ASSERT_FALSE(kVersion.empty());
  EXPECT_EQ(kVersion.find_first_not_of("0123456789."), std::string_view::npos) << kVersion;
  EXPECT_EQ(ServerInfo{}.version, kVersion);
}

TEST_F(McpTest, ToolsListTextMatchesTheJsonPath) {
  const std::string msg = R"({"jsonrpc":"2.0","id":"list-1","method":"tools/list","params":{}})";
  auto text = server.handle(msg, {});
  auto value = server.handle_json(json::parse(msg), {});
  ASSERT_TRUE(text);
  ASSERT_TRUE(value);
  EXPECT_EQ(*text, value->dump());
}

TEST_F(McpTest, ToolsListFollowsRegistration) {
  json before = expect_result(ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"), 1)["tools"];
  registry.register_tool(make_tool("aaa_new_tool"));
  json after = expect_result(ask(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"), 2)["tools"];
  ASSERT_EQ(after.size(), before.size() + 1);
  EXPECT_EQ(after[0]["name"], "aaa_new_tool");

  // Re-registering under the same name with a new description shows at once.
  Tool changed = make_tool("aaa_new_tool", {param("z", ParamType::Array)});
  changed.description = "A changed description.";
  registry.register_tool(changed);
  json again = expect_result(ask(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})"), 3)["tools"];
  EXPECT_EQ(again[0]["description"], "A changed description.");
  EXPECT_EQ(again[0]["inputSchema"]["properties"]["z"]["items"], json::object());
  auto json_path = server.handle_json(json::parse(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})"), {});
  ASSERT_TRUE(json_path);
  EXPECT_EQ((*json_path)["result"]["tools"], again);
}

TEST_F(McpTest, ToolsListOnEmptyRegistry) {
  Registry empty;
  Executor ex(empty);
  McpServer s(ex);
  auto text = s.handle(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", {});
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, R"({"id":1,"jsonrpc":"2.0","result":{"tools":[]}})");
}

TEST_F(McpTest, ToolsListIgnoresCursor) {
  json r = expect_result(ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"abc"}})"), 1);
  EXPECT_EQ(r["tools"].size(), registry.size());
}

// -------------------------------------------------------------- tools/call

TEST_F(McpTest, ToolsCallSuccess) {
  json r = expect_result(
      ask(R"J({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2 3)"}}})J"),
      3);
  EXPECT_EQ(r, json::parse(R"J({"content":[{"type":"text","text":"=> (+ 1 2 3)"}],"isError":false})J"));
  EXPECT_EQ(eval_runs, 1);
}

TEST_F(McpTest, ToolsCallAcceptsHyphenatedName) {
  json r = expect_result(ask(call_message(3, {{"name", "evaluate-lisp"}, {"arguments", {{"code", "6"}}}})), 3);
  EXPECT_EQ(r["content"][0]["text"], "=> 6");
  EXPECT_EQ(r["isError"], false);
}

TEST_F(McpTest, ToolsCallFailureIsAResultWithIsError) {
  json r = expect_result(ask(call_message(6, {{"name", "fails"}, {"arguments", json::object()}})), 6);
  EXPECT_EQ(r["isError"], true);
  ASSERT_EQ(r["content"].size(), 1u);
  EXPECT_EQ(r["content"][0]["type"], "text");
  EXPECT_EQ(r["content"][0]["text"],
            "[ERROR] UNDEFINED-FUNCTION\nThe function NONEXISTENT-FUNCTION is undefined.");
}

TEST_F(McpTest, ToolsCallDeniedIsAResultWithIsError) {
  json r = expect_result(ask(call_message(8, {{"name", "write_file"}, {"arguments", {{"path", "p"}, {"content", "c"}}}})),
                         8);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "User denied tool execution");
}

TEST_F(McpTest, ToolsCallDeniedAnswersTheToolsDeniedMessage) {
  Tool edit = make_tool("propose_edit", {param("path")}, {"path"}, SafetyLevel::Dangerous, returns("accepted"));
  edit.denied_message = "rejected — STOP: do not retry this edit.";
  edit.check = [](const json& args, CallContext&) -> std::optional<std::string> {
    if (args.at("path") == "missing.lisp") return std::string("missing.lisp does not exist");
    return std::nullopt;
  };
  registry.register_tool(std::move(edit));
  json r = expect_result(ask(call_message(9, {{"name", "propose_edit"}, {"arguments", {{"path", "a.lisp"}}}})), 9);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "rejected — STOP: do not retry this edit.");
  r = expect_result(ask(call_message(10, {{"name", "propose_edit"}, {"arguments", {{"path", "missing.lisp"}}}})), 10);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "missing.lisp does not exist");
}

TEST_F(McpTest, ToolsCallGoesThroughApproval) {
  ExecutionOptions options;
  json asked;
  options.approve = [&](const Tool& tool, const json& args) {
    asked = {{"tool", tool.name}, {"args", args}};
    return ApprovalDecision{ApprovalKind::Approved, nullptr};
  };
  json r = expect_result(
      ask(call_message(9, {{"name", "write-file"}, {"arguments", {{"path", "p"}, {"content", "c"}}}}), options), 9);
  EXPECT_EQ(r["isError"], false);
  EXPECT_EQ(r["content"][0]["text"], "wrote");
  EXPECT_EQ(asked["tool"], "write_file");
  EXPECT_EQ(asked["args"]["path"], "p");
}

TEST_F(McpTest, ToolsCallRunsHooksWithTheRequestIdAsCallId) {
  std::vector<std::optional<std::string>> ids;
  ExecutionOptions options;
  options.hooks = {[&](HookPhase phase, const std::string&, const json&, const ToolResult* r) {
    if (phase != HookPhase::Before) ids.push_back(r->id);
  }};
  ask(call_message(7, {{"name", "reset_session"}}), options);
  ask(call_message("req-x", {{"name", "reset_session"}}), options);
  ask(call_message(nullptr, {{"name", "reset_session"}}), options);
  ask(call_message(-2.5, {{"name", "reset_session"}}), options);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[0], "7");
  EXPECT_EQ(ids[1], "req-x");
  EXPECT_EQ(ids[2], std::nullopt);
  EXPECT_EQ(ids[3], "-2.5");
}

TEST_F(McpTest, ToolsCallMissingArgumentsMeansEmpty) {
  json r = expect_result(ask(call_message(1, {{"name", "reset_session"}})), 1);
  EXPECT_EQ(r["content"][0]["text"], "Session reset. All definitions cleared.");
  r = expect_result(ask(call_message(2, {{"name", "echo"}, {"arguments", nullptr}})), 2);
  EXPECT_EQ(r["content"][0]["text"], "{}");
}

TEST_F(McpTest, ToolsCallUnknownTool) {
  json response = ask(call_message(7, {{"name", "invalid-tool-name"}, {"arguments", json::object()}}));
  expect_error(response, rpc::kInvalidParams, 7);
  EXPECT_EQ(response["error"]["message"], "Unknown tool: invalid-tool-name");
}

TEST_F(McpTest, ToolsCallInvalidArgumentsIsTheToolsError) {
  // MCP 2025-11-25 (SEP-1303): the model sees why, and can correct its call.
  json r = expect_result(ask(call_message(4, {{"name", "evaluate_lisp"}, {"arguments", json::object()}})), 4);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "Missing required argument: code");
  EXPECT_EQ(eval_runs, 0);

  r = expect_result(ask(call_message(5, {{"name", "echo"}, {"arguments", {{"x", "one"}}}})), 5);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "Invalid argument 'x': expected integer, got string");

  r = expect_result(ask(call_message(6, {{"name", "echo"}, {"arguments", {{"bogus", 1}}}})), 6);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "Unknown argument 'bogus' for echo (it takes: x, deep)");

  r = expect_result(ask(call_message(7, {{"name", "evaluate_lisp"}, {"arguments", "(+ 1 2)"}})), 7);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "Invalid arguments: expected a JSON object, got string");
  EXPECT_EQ(eval_runs, 0);
}

TEST_F(McpTest, ToolsCallBadParams) {
  expect_error(ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})"), rpc::kInvalidParams, 1);
  expect_error(ask(call_message(1, json::object())), rpc::kInvalidParams, 1);
  expect_error(ask(call_message(1, {{"name", 5}})), rpc::kInvalidParams, 1);
  expect_error(ask(call_message(1, {{"name", nullptr}})), rpc::kInvalidParams, 1);
  expect_error(ask(call_message(1, json::array({"evaluate_lisp"}))), rpc::kInvalidParams, 1);
  EXPECT_EQ(eval_runs, 0);
}

TEST_F(McpTest, ToolsCallHandlerOutputWithInvalidUtf8StaysValidJson) {
  registry.register_tool(make_tool("binary", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) {
    return ToolOutput{true, std::string("ok \xff\xfe bytes \xc3")};
  }));
  auto text = server.handle(call_message(1, {{"name", "binary"}}), {});
  ASSERT_TRUE(text);
  json r = json::parse(*text);  // would throw on invalid UTF-8
  std::string content = r["result"]["content"][0]["text"];
  EXPECT_EQ(content.rfind("ok ", 0), 0u);
  EXPECT_NE(content.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
}

TEST_F(McpTest, ToolsCallWithLargeArgumentString) {
  std::string big(2'000'000, 'x');
  json r = expect_result(ask(call_message(1, {{"name", "evaluate_lisp"}, {"arguments", {{"code", big}}}})), 1);
  EXPECT_EQ(r["content"][0]["text"].get<std::string>().size(), big.size() + 3);
}

TEST_F(McpTest, ToolsCallWithModeratelyNestedArguments) {
  std::string nested = std::string(100, '[') + std::string(100, ']');
  std::string msg = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"deep":)" +
                    nested + "}}}";
  json r = expect_result(ask(msg), 1);
  EXPECT_EQ(r["isError"], false);
}

// ------------------------------------------------------------------ errors

TEST_F(McpTest, UnknownMethod) {
  json response = ask(R"({"jsonrpc":"2.0","id":"abc","method":"resources/subscribe"})");
  expect_error(response, rpc::kMethodNotFound, "abc");
  EXPECT_NE(response["error"]["message"].get<std::string>().find("resources/subscribe"), std::string::npos);
}

TEST_F(McpTest, NotificationsAreNeverAnswered) {
  EXPECT_EQ(server.handle(R"({"jsonrpc":"2.0","method":"no/such/method"})", {}), std::nullopt);
  EXPECT_EQ(server.handle(R"({"jsonrpc":"2.0","method":"ping"})", {}), std::nullopt);
  EXPECT_EQ(server.handle(R"({"jsonrpc":"2.0","method":"ping","params":"bad"})", {}), std::nullopt);
  EXPECT_EQ(server.handle(R"({"jsonrpc":"2.0","method":"tools/list"})", {}), std::nullopt);
  EXPECT_EQ(server.handle(
                R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"1"}}})",
                {}),
            std::nullopt);
  EXPECT_EQ(eval_runs, 0);
}

TEST_F(McpTest, IdsArePreserved) {
  EXPECT_EQ(ask(R"({"jsonrpc":"2.0","id":42,"method":"ping"})")["id"], 42);
  EXPECT_EQ(ask(R"({"jsonrpc":"2.0","id":-1,"method":"ping"})")["id"], -1);
  EXPECT_EQ(ask(R"({"jsonrpc":"2.0","id":"req-1","method":"ping"})")["id"], "req-1");
  EXPECT_EQ(ask(R"({"jsonrpc":"2.0","id":"","method":"ping"})")["id"], "");
  EXPECT_TRUE(ask(R"({"jsonrpc":"2.0","id":null,"method":"ping"})")["id"].is_null());
  EXPECT_EQ(ask(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})")["id"], 1.5);
  EXPECT_EQ(ask(R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"})")["id"],
            std::numeric_limits<std::uint64_t>::max());
  auto text = server.handle(R"({"jsonrpc":"2.0","id":12345678901234,"method":"ping"})", {});
  ASSERT_TRUE(text);
  EXPECT_NE(text->find(R"("id":12345678901234)"), std::string::npos);
}

TEST_F(McpTest, IdOfWrongTypeIsInvalidRequestWithNullId) {
  for (const char* id : {"{}", "[]", "[1]", "true", "false", R"({"a":1})"}) {
    std::string msg = std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"method":"ping"})";
    expect_error(ask(msg), rpc::kInvalidRequest, nullptr);
  }
}

TEST_F(McpTest, InvalidRequestKeepsAValidId) {
  expect_error(ask(R"({"jsonrpc":"1.0","id":9,"method":"ping"})"), rpc::kInvalidRequest, 9);
  expect_error(ask(R"({"id":"x","method":"ping"})"), rpc::kInvalidRequest, "x");
  expect_error(ask(R"({"jsonrpc":"2.0","id":3,"method":7})"), rpc::kInvalidRequest, 3);
}

TEST_F(McpTest, NonObjectParams) {
  for (const char* params : {"[]", "[1,2]", "\"x\"", "1", "true", "null"}) {
    for (const char* method : {"ping", "initialize", "tools/list", "tools/call"}) {
      std::string msg = std::string(R"({"jsonrpc":"2.0","id":1,"method":")") + method + R"(","params":)" + params + "}";
      expect_error(ask(msg), rpc::kInvalidParams, 1);
    }
  }
}

TEST_F(McpTest, MethodNotFoundComesBeforeParamsChecks) {
  expect_error(ask(R"({"jsonrpc":"2.0","id":1,"method":"nope","params":5})"), rpc::kMethodNotFound, 1);
}

TEST_F(McpTest, ParseErrors) {
  for (const char* text : {"", "{", "not json", R"({"jsonrpc":"2.0",})", "[1,]", "{\"a\" 1}"}) {
    json response = ask(text);
    expect_error(response, rpc::kParseError, nullptr);
  }
}

// nlohmann's parser takes a NUL byte for the end of the input: what
// follows one must not be dropped unread (found by tests/hostile).
TEST_F(McpTest, ANulByteAnywhereIsAParseError) {
  using namespace std::string_view_literals;
  for (std::string_view text : {R"({"jsonrpc":"2.0","id":1,"method":"ping"})" "\0"sv,
                                R"({"jsonrpc":"2.0","id":1,"method":"ping"})" "\0{garbage"sv,
                                R"({"jsonrpc":"2.0","id":1,"method":"ping"}  )" "\0 \xff"sv,
                                "\0"sv, R"([{"jsonrpc":"2.0","id":1,"method":"ping"})" "\0]"sv}) {
    json response = ask(text);
    expect_error(response, rpc::kParseError, nullptr);
    EXPECT_NE(response["error"]["message"].get<std::string>().find("NUL"), std::string::npos) << response.dump();
  }
}

TEST_F(McpTest, HugeMethodNameIsNotEchoedWhole) {
  std::string name(1'000'000, 'm');
  json response = ask(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", name}}.dump());
  expect_error(response, rpc::kMethodNotFound, 1);
  EXPECT_LT(response["error"]["message"].get<std::string>().size(), 1000u);
}

TEST_F(McpTest, TruncationKeepsUtf8Valid) {
  std::string name;
  for (int i = 0; i < 5000; ++i) name += "\xC3\xA9";  // é
  auto text = server.handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", name}}.dump(), {});
  ASSERT_TRUE(text);
  json response = json::parse(*text);
  std::string message = response["error"]["message"];
  EXPECT_EQ(message.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_NO_THROW((void)json(message).dump());
}

TEST_F(McpTest, DeeplyNestedInputDoesNotCrash) {
  expect_error(ask(std::string(100000, '[')), rpc::kParseError, nullptr);
  expect_error(ask(std::string(100000, '[') + std::string(100000, ']')), rpc::kParseError, nullptr);
  expect_error(ask(std::string(100000, '{')), rpc::kParseError, nullptr);
  std::string objects;
  for (int i = 0; i < 50000; ++i) objects += R"({"a":)";
  objects += "1";
  objects += std::string(50000, '}');
  expect_error(ask(objects), rpc::kParseError, nullptr);
  // Deep nesting inside a valid request.
  std::string msg = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"deep":)" +
                    std::string(10000, '[') + std::string(10000, ']') + "}}}";
  expect_error(ask(msg), rpc::kParseError, nullptr);
}

TEST_F(McpTest, BracketsInsideStringsDoNotCountAsNesting) {
  std::string code = std::string(10000, '[') + "\\\"" + std::string(10000, '{');
  std::string msg = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":")" +
                    code + R"("}}})";
  json r = expect_result(ask(msg), 1);
  EXPECT_EQ(r["isError"], false);
}

TEST_F(McpTest, HandleJsonRejectsDeepValues) {
  json deep = json::array();
  for (int i = 0; i < 5000; ++i) deep = json::array({std::move(deep)});
  auto r = server.handle_json(deep, {});
  ASSERT_TRUE(r);
  expect_error(*r, rpc::kInvalidRequest, nullptr);
}

TEST_F(McpTest, HandleJsonRequest) {
  auto r = server.handle_json(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, {});
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  EXPECT_EQ(server.handle_json(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, {}), std::nullopt);
  auto bad = server.handle_json(json(7), {});
  ASSERT_TRUE(bad);
  expect_error(*bad, rpc::kInvalidRequest, nullptr);
}

TEST_F(McpTest, ServerSurvivesAThrowingApprovalFunction) {
  ExecutionOptions options;
  options.approve = [](const Tool&, const json&) -> ApprovalDecision { throw std::runtime_error("no UI"); };
  json r = expect_result(
      ask(call_message(1, {{"name", "write_file"}, {"arguments", {{"path", "p"}, {"content", "c"}}}}), options), 1);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "User denied tool execution");
}

// ------------------------------------------------------------------ batches

TEST_F(McpTest, EmptyBatchIsOneInvalidRequest) {
  json response = ask("[]");
  ASSERT_TRUE(response.is_object());
  expect_error(response, rpc::kInvalidRequest, nullptr);
}

TEST_F(McpTest, BatchOfMixedMessages) {
  json response = ask(R"([
    {"jsonrpc":"2.0","id":1,"method":"ping"},
    {"jsonrpc":"2.0","method":"notifications/initialized"},
    {"jsonrpc":"2.0","id":"b","method":"nope"},
    {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"evaluate-lisp","arguments":{"code":"x"}}},
    {"jsonrpc":"2.0","id":4,"method":"tools/list"}
  ])");
  ASSERT_TRUE(response.is_array());
  ASSERT_EQ(response.size(), 4u);
  EXPECT_EQ(expect_result(response[0], 1), json::object());
  expect_error(response[1], rpc::kMethodNotFound, "b");
  EXPECT_EQ(expect_result(response[2], 3)["content"][0]["text"], "=> x");
  EXPECT_EQ(expect_result(response[3], 4)["tools"].size(), registry.size());
}

TEST_F(McpTest, BatchOfNotificationsHasNoResponse) {
  EXPECT_EQ(server.handle(R"([{"jsonrpc":"2.0","method":"notifications/initialized"},
                              {"jsonrpc":"2.0","method":"whatever"}])",
                          {}),
            std::nullopt);
}

TEST_F(McpTest, BatchInvalidElementsEachGetAnError) {
  json response = ask("[1,2,3]");
  ASSERT_TRUE(response.is_array());
  ASSERT_EQ(response.size(), 3u);
  for (const auto& r : response) expect_error(r, rpc::kInvalidRequest, nullptr);

  response = ask(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}, {"foo":"boo"}, [], null,
                     {"jsonrpc":"2.0","id":{},"method":"ping"}, {"jsonrpc":"2.0","method":"x"}])");
  ASSERT_TRUE(response.is_array());
  ASSERT_EQ(response.size(), 5u);
  EXPECT_EQ(expect_result(response[0], 1), json::object());
  for (int i = 1; i < 5; ++i) expect_error(response[i], rpc::kInvalidRequest, nullptr);
}

TEST_F(McpTest, BatchWithInvalidJsonIsOneParseError) {
  json response = ask(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}, {"jsonrpc":"2.0","method")");
  ASSERT_TRUE(response.is_object());
  expect_error(response, rpc::kParseError, nullptr);
}

// -------------------------------------------------------------- hostile table

namespace {

// Not a JSON-RPC error but a result with isError: invalid arguments are
// the tool's error, which the model sees (MCP 2025-11-25, SEP-1303).
constexpr int kToolError = 0;

struct Hostile {
  std::string name;
  std::string message;
  int code;  // or kToolError
  json id;   // the id the response must carry
};

// RESPONSE answers C as it should: its error, or a tool error.
void expect_answer(const json& response, const Hostile& c) {
  if (c.code != kToolError) return expect_error(response, c.code, c.id);
  EXPECT_EQ(response["id"], c.id) << response.dump();
  EXPECT_EQ(response["result"]["isError"], true) << response.dump();
  EXPECT_NE(response["result"]["content"][0]["text"].get<std::string>().find("argument"), std::string::npos)
      << response.dump();
}

std::vector<Hostile> hostile_inputs() {
  const std::string ok_prefix = R"({"jsonrpc":"2.0","id":1,"method":)";
  std::vector<Hostile> cases = {
      {"empty", "", rpc::kParseError, nullptr},
      {"whitespace", "   \n\t ", rpc::kParseError, nullptr},
      {"open_brace", "{", rpc::kParseError, nullptr},
      {"close_brace", "}", rpc::kParseError, nullptr},
      {"open_bracket", "[", rpc::kParseError, nullptr},
      {"garbage", "hello world", rpc::kParseError, nullptr},
      {"minus", "-", rpc::kParseError, nullptr},
      {"single_quotes", "{'jsonrpc':'2.0','id':1,'method':'ping'}", rpc::kParseError, nullptr},
      {"comment", "/* hi */ {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", rpc::kParseError, nullptr},
      {"trailing_garbage", R"({"jsonrpc":"2.0","id":1,"method":"ping"} x)", rpc::kParseError, nullptr},
      {"two_messages", R"({"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"})",
       rpc::kParseError, nullptr},
      {"trailing_comma", R"({"jsonrpc":"2.0","id":1,"method":"ping",})", rpc::kParseError, nullptr},
      {"nan", R"({"jsonrpc":"2.0","id":NaN,"method":"ping"})", rpc::kParseError, nullptr},
      {"unterminated_string", R"({"jsonrpc":"2.0","id":1,"method":"ping)", rpc::kParseError, nullptr},
      {"raw_newline_in_string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\nng\"}", rpc::kParseError, nullptr},
      {"nul_byte", std::string("{\"jsonrpc\":\"2.0\",\0\"id\":1}", 22), rpc::kParseError, nullptr},
      {"invalid_utf8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}", rpc::kParseError, nullptr},
      {"overlong_utf8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc0\xaf\"}", rpc::kParseError, nullptr},
      {"truncated_utf8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xe2\x82\"}", rpc::kParseError, nullptr},
      {"lone_surrogate", R"({"jsonrpc":"2.0","id":1,"method":"\ud800"})", rpc::kParseError, nullptr},
      {"bad_escape", R"({"jsonrpc":"2.0","id":1,"method":"\q"})", rpc::kParseError, nullptr},
      {"deep_open_brackets", std::string(100000, '['), rpc::kParseError, nullptr},
      {"deep_balanced_brackets", std::string(100000, '[') + std::string(100000, ']'), rpc::kParseError, nullptr},
      {"deep_open_braces", std::string(100000, '{'), rpc::kParseError, nullptr},
      {"null", "null", rpc::kInvalidRequest, nullptr},
      {"true", "true", rpc::kInvalidRequest, nullptr},
      {"number", "42", rpc::kInvalidRequest, nullptr},
      {"string", "\"ping\"", rpc::kInvalidRequest, nullptr},
      {"empty_batch", "[]", rpc::kInvalidRequest, nullptr},
      {"empty_object", "{}", rpc::kInvalidRequest, nullptr},
      {"no_method_no_id", R"({"jsonrpc":"2.0"})", rpc::kInvalidRequest, nullptr},
      {"no_method", R"({"jsonrpc":"2.0","id":1})", rpc::kInvalidRequest, 1},
      {"jsonrpc_1_0", R"({"jsonrpc":"1.0","id":1,"method":"ping"})", rpc::kInvalidRequest, 1},
      {"jsonrpc_number", R"({"jsonrpc":2.0,"id":1,"method":"ping"})", rpc::kInvalidRequest, 1},
      {"jsonrpc_missing", R"({"id":1,"method":"ping"})", rpc::kInvalidRequest, 1},
      {"jsonrpc_missing_no_id", R"({"method":"ping"})", rpc::kInvalidRequest, nullptr},
      {"method_number", R"({"jsonrpc":"2.0","id":1,"method":42})", rpc::kInvalidRequest, 1},
      {"method_null", R"({"jsonrpc":"2.0","id":1,"method":null})", rpc::kInvalidRequest, 1},
      {"method_array", R"({"jsonrpc":"2.0","id":"a","method":["ping"]})", rpc::kInvalidRequest, "a"},
      {"method_number_notification", R"({"jsonrpc":"2.0","method":1,"params":"bar"})", rpc::kInvalidRequest,
       nullptr},
      {"id_object", R"({"jsonrpc":"2.0","id":{},"method":"ping"})", rpc::kInvalidRequest, nullptr},
      {"id_array", R"({"jsonrpc":"2.0","id":[1],"method":"ping"})", rpc::kInvalidRequest, nullptr},
      {"id_bool", R"({"jsonrpc":"2.0","id":true,"method":"ping"})", rpc::kInvalidRequest, nullptr},
      {"unknown_method", ok_prefix + R"("nope"})", rpc::kMethodNotFound, 1},
      {"empty_method", ok_prefix + R"(""})", rpc::kMethodNotFound, 1},
      {"nul_in_method", ok_prefix + R"("ping\u0000"})", rpc::kMethodNotFound, 1},
      {"rpc_internal_method", ok_prefix + R"("rpc.discover"})", rpc::kMethodNotFound, 1},
      {"huge_method", ok_prefix + "\"" + std::string(3'000'000, 'a') + "\"}", rpc::kMethodNotFound, 1},
      {"string_id_unknown", R"({"jsonrpc":"2.0","id":"s","method":"nope"})", rpc::kMethodNotFound, "s"},
      {"null_id_unknown", R"({"jsonrpc":"2.0","id":null,"method":"nope"})", rpc::kMethodNotFound, nullptr},
      {"float_id_unknown", R"({"jsonrpc":"2.0","id":-0.5,"method":"nope"})", rpc::kMethodNotFound, -0.5},
      {"overflowing_number", R"({"jsonrpc":"2.0","id":1e400,"method":"nope"})", rpc::kParseError, nullptr},
      {"overflowing_number_in_arguments",
       ok_prefix + R"("tools/call","params":{"name":"echo","arguments":{"x":-1e999}}})", rpc::kParseError, nullptr},
      {"bom_then_garbage", "\xEF\xBB\xBFnope", rpc::kParseError, nullptr},
      {"ping_params_array", ok_prefix + R"("ping","params":[]})", rpc::kInvalidParams, 1},
      {"ping_params_string", ok_prefix + R"("ping","params":"x"})", rpc::kInvalidParams, 1},
      {"ping_params_null", ok_prefix + R"("ping","params":null})", rpc::kInvalidParams, 1},
      {"initialize_params_number", ok_prefix + R"("initialize","params":3})", rpc::kInvalidParams, 1},
      {"list_params_array", ok_prefix + R"("tools/list","params":[1]})", rpc::kInvalidParams, 1},
      {"call_no_params", ok_prefix + R"("tools/call"})", rpc::kInvalidParams, 1},
      {"call_empty_params", ok_prefix + R"("tools/call","params":{}})", rpc::kInvalidParams, 1},
      {"call_params_array", ok_prefix + R"("tools/call","params":["evaluate_lisp"]})", rpc::kInvalidParams, 1},
      {"call_name_number", ok_prefix + R"("tools/call","params":{"name":1}})", rpc::kInvalidParams, 1},
      {"call_name_object", ok_prefix + R"("tools/call","params":{"name":{}}})", rpc::kInvalidParams, 1},
      {"call_unknown_tool", ok_prefix + R"("tools/call","params":{"name":"rm_rf"}})", rpc::kInvalidParams, 1},
      {"call_huge_tool_name", ok_prefix + R"("tools/call","params":{"name":")" + std::string(1'000'000, 'z') + "\"}}",
       rpc::kInvalidParams, 1},
      {"call_arguments_string", ok_prefix + R"J("tools/call","params":{"name":"evaluate_lisp","arguments":"(+ 1 2)"}})J",
       kToolError, 1},
      {"call_arguments_array", ok_prefix + R"("tools/call","params":{"name":"evaluate_lisp","arguments":[]}})",
       kToolError, 1},
      {"call_arguments_number", ok_prefix + R"("tools/call","params":{"name":"evaluate_lisp","arguments":1}})",
       kToolError, 1},
      {"call_missing_required", ok_prefix + R"("tools/call","params":{"name":"evaluate_lisp","arguments":{}}})",
       kToolError, 1},
      {"call_wrong_type", ok_prefix + R"("tools/call","params":{"name":"evaluate-lisp","arguments":{"code":123}}})",
       kToolError, 1},
      {"call_null_required", ok_prefix + R"("tools/call","params":{"name":"evaluate_lisp","arguments":{"code":null}}})",
       kToolError, 1},
  };
  return cases;
}

}  // namespace

TEST_F(McpTest, HostileInputsGetExactlyOneWellFormedAnswer) {
  const auto cases = hostile_inputs();
  ASSERT_GE(cases.size(), 40u);
  for (const Hostile& c : cases) {
    SCOPED_TRACE(c.name);
    auto text = server.handle(c.message, {});
    ASSERT_TRUE(text.has_value());
    EXPECT_EQ(text->find('\n'), std::string::npos);
    json response;
    ASSERT_NO_THROW(response = json::parse(*text)) << *text;
    ASSERT_TRUE(response.is_object()) << *text;  // one response, not a batch
    expect_answer(response, c);
    EXPECT_LT(text->size(), 2000u) << "error responses stay small";
  }
  EXPECT_EQ(eval_runs, 0);
}

TEST_F(McpTest, HostileInputsInsideABatch) {
  // Every parseable hostile request, as a batch element, gets its own answer.
  json batch = json::array();
  std::vector<Hostile> sent;
  for (const Hostile& c : hostile_inputs()) {
    if (c.message.size() > 10000) continue;
    json element = json::parse(c.message, nullptr, false);
    if (element.is_discarded() || element.is_array()) continue;
    batch.push_back(element);
    sent.push_back(c);
  }
  ASSERT_GT(batch.size(), 20u);
  json response = ask(batch.dump());
  ASSERT_TRUE(response.is_array());
  ASSERT_EQ(response.size(), batch.size());  // all hostile ones have an id or are invalid
  for (std::size_t i = 0; i < response.size(); ++i) {
    SCOPED_TRACE(sent[i].name);
    expect_answer(response[i], sent[i]);
  }
}

TEST_F(McpTest, NotificationMethodsSentAsRequestsGetAnEmptyResult) {
  EXPECT_EQ(expect_result(ask(R"({"jsonrpc":"2.0","id":1,"method":"notifications/initialized"})"), 1),
            json::object());
}

TEST_F(McpTest, ConcurrentListsCallsAndRegistrations) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 3; ++t) {
    clients.emplace_back([&, t] {
      int i = 0;
      while (!stop.load()) {
        const std::string id = std::to_string(t) + "-" + std::to_string(i++);
        auto list = server.handle(R"({"jsonrpc":"2.0","id":")" + id + R"(","method":"tools/list"})", {});
        ASSERT_TRUE(list);
        json parsed = json::parse(*list);
        ASSERT_EQ(parsed["id"], id);
        ASSERT_GE(parsed["result"]["tools"].size(), 5u);
        auto call = server.handle(call_message(id, {{"name", "reset_session"}}), {});
        ASSERT_TRUE(call);
        ASSERT_EQ(json::parse(*call)["result"]["isError"], false);
      }
    });
  }
  for (int i = 0; i < 200; ++i) registry.register_tool(make_tool("added_" + std::to_string(i)));
  stop = true;
  for (auto& c : clients) c.join();
  json r = expect_result(ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"), 1);
  EXPECT_EQ(r["tools"].size(), registry.size());
}

TEST_F(McpTest, RandomMutationsAlwaysGetWellFormedAnswers) {
  // A small deterministic fuzz: byte flips, insertions and truncations of
  // valid messages.  Every answer parses and is a JSON-RPC response (or a
  // batch of them); a missing answer only ever comes for notifications.
  const std::vector<std::string> seeds = {
      R"({"jsonrpc":"2.0","id":1,"method":"ping"})",
      R"({"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}})",
      R"J({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"evaluate-lisp","arguments":{"code":"(+ 1 2)"}}})J",
      R"({"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2024-11-05"}})",
      R"([{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}])",
  };
  const std::string alphabet = "{}[]\":,\\0123456789.-eE tfnulraxyz\x01\x7f\xc3\xa9\xff";
  std::uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  auto check_one = [](const json& r) {
    ASSERT_TRUE(r.is_object()) << r.dump();
    EXPECT_EQ(r["jsonrpc"], "2.0");
    ASSERT_TRUE(r.contains("id"));
    EXPECT_NE(r.contains("result"), r.contains("error")) << r.dump();
    if (r.contains("error")) {
      EXPECT_TRUE(r["error"]["code"].is_number_integer());
      EXPECT_TRUE(r["error"]["message"].is_string());
    }
  };
  int answered = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string msg = seeds[next() % seeds.size()];
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits && !msg.empty(); ++e) {
      const std::size_t pos = next() % msg.size();
      switch (next() % 4) {
        case 0: msg[pos] = alphabet[next() % alphabet.size()]; break;
        case 1: msg.insert(pos, 1, alphabet[next() % alphabet.size()]); break;
        case 2: msg.erase(pos, 1); break;
        case 3: msg.resize(pos); break;
      }
    }
    auto text = server.handle(msg, {});
    if (!text) continue;
    ++answered;
    ASSERT_EQ(text->find('\n'), std::string::npos);
    json response;
    ASSERT_NO_THROW(response = json::parse(*text)) << msg;
    if (response.is_array()) {
      EXPECT_FALSE(response.empty());
      for (const auto& r : response) check_one(r);
    } else {
      check_one(response);
    }
  }
  EXPECT_GT(answered, 2000);
}

// handle_json_text writes a tools/call's answer itself instead of dumping
// a tree: the bytes must be dump()'s, for every kind of message.
TEST_F(McpTest, HandleJsonTextWritesWhatDumpWrites) {
  const std::vector<std::string> messages = {
      R"json({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}})json",
      R"({"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"a\"b\\c\n\t\u0001\u001f\u007f é ✓ 😀"}}})",
      R"({"jsonrpc":"2.0","id":"req-\"1\"","method":"tools/call","params":{"name":"fails","arguments":{}}})",
      R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"reset_session"}})",
      R"({"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"echo","arguments":{"x":3}}})",
      R"({"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo","arguments":null}})",
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{}}})",
      R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}})",
      R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":[1]}})",
      R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"x":"no"}}})",
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call"})",
      R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":[]})",
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"p","content":"c"}}})",
      R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}})",
      R"({"jsonrpc":"2.0","id":10,"method":"ping"})",
      R"([{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}])",
      R"({"jsonrpc":"1.0","id":12,"method":"tools/call","params":{"name":"echo"}})",
  };
  for (const std::string& message : messages) {
    json parsed = json::parse(message);
    std::optional<json> tree = server.handle_json(parsed, {});
    std::optional<std::string> text = server.handle_json_text(json(parsed), {});
    ASSERT_EQ(tree.has_value(), text.has_value()) << message;
    if (tree) {
      EXPECT_EQ(*text, tree->dump(-1, ' ', false, json::error_handler_t::replace)) << message;
    }
  }
}

// The stdio server reads the usual tools/call with parse_simple_tools_call
// and answers it with tools_call_text: the bytes must be the whole
// dispatcher's, and what the simple reader leaves alone goes that way.
TEST_F(McpTest, SimpleToolsCallsAnswerAsTheDispatcherDoes) {
  const std::vector<std::pair<std::string, bool>> messages = {
      {R"json({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}})json", true},
      {R"({"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"echo","arguments":{"x":"a\"b\\c\n\t é ✓ 😀"}}})", true},
      {R"({"jsonrpc":"2.0","id":"req-\"1\"","method":"tools/call","params":{"name":"fails","arguments":{}}})", true},
      {R"({"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"reset_session"}})", true},
      {R"({"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"echo","arguments":null}})", true},
      {R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}})", true},
      {R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"x":"no"}}})", true},
      {R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"p","content":"c"}}})", true},
      {R"( { "method" : "tools/call" , "params" : { "arguments" : { "x" : 1 } , "name" : "echo" , "_meta" : { "progressToken" : 5 } } , "id" : "a" , "jsonrpc" : "2.0" , "extra" : [true] } )", true},
      {R"({"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"nope","arguments":{"x":1}},"params":{"name":"echo"}})", true},
      {R"({"jsonrpc":"2.0","id":null,"id":21,"method":"ping","method":"tools/call","params":{"name":"echo"}})", true},
      {R"({"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"echo","name":7}})", false},
      {R"({"jsonrpc":"2.0","id":23,"id":null,"method":"tools/call","params":{"name":"echo"}})", false},
      {R"({"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"echo","arguments":{"x":3}}})", false},
      {R"({"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo","arguments":null}})", false},
      {R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":[1]}})", false},
      {R"({"jsonrpc":"2.0","id":7,"method":"tools/call"})", false},
      {R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":[]})", false},
      {R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}})", false},
      {R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}})", false},
      {R"({"jsonrpc":"2.0","id":10,"method":"ping"})", false},
      {R"([{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}])", false},
      {R"({"jsonrpc":"1.0","id":12,"method":"tools/call","params":{"name":"echo"}})", false},
      {R"({"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":{"x":"\u00e9"}}})", false},
      {R"({"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo"}} x)", false},
      {R"({"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"echo"})", false},
  };
  for (const auto& [message, simple] : messages) {
    std::optional<SimpleToolsCall> call = parse_simple_tools_call(message);
    ASSERT_EQ(call.has_value(), simple) << message;
    if (!call) continue;
    std::optional<json> tree = server.handle_json(json::parse(message), {});
    ASSERT_TRUE(tree) << message;
    EXPECT_EQ(server.tools_call_text(call->id, call->name, std::move(call->arguments), {}),
              tree->dump(-1, ' ', false, json::error_handler_t::replace))
        << message;
  }
}

// A tool's text that is not UTF-8 is replaced as dump() replaces it.
TEST_F(McpTest, HandleJsonTextReplacesInvalidUtf8AsDumpDoes) {
  registry.register_tool(make_tool("bytes", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) {
    return ToolOutput{true, std::string("ok \xff\xfe x \xe2\x82 y \xed\xa0\x80 z \xf4\x90\x80\x80 \xc0\xaf end\n")};
  }));
  const std::string message = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bytes"}})";
  json parsed = json::parse(message);
  std::optional<json> tree = server.handle_json(parsed, {});
  std::optional<std::string> text = server.handle_json_text(json(parsed), {});
  ASSERT_TRUE(tree && text);
  EXPECT_EQ(*text, tree->dump(-1, ' ', false, json::error_handler_t::replace));
}

// ------------------------------------------------------------ resources and prompts

TEST_F(McpTest, ResourcesAndPromptsAreListedAndReadThroughSafeTools) {
  registry.register_tool(make_tool("list_definitions", {}, {}, SafetyLevel::Safe, agentq::testing::returns("[Functions]\n- F (X)")));
  registry.register_tool(make_tool("describe_symbol", {param("symbol"), param("package")}, {"symbol"},
                                   SafetyLevel::Safe, echo_args()));
  registry.register_tool(make_tool("get_last_error", {}, {}, SafetyLevel::Safe, agentq::testing::returns("No error recorded.")));
  json init = expect_result(ask(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})"), 1);
  EXPECT_TRUE(init["capabilities"].contains("resources"));
  EXPECT_TRUE(init["capabilities"].contains("prompts"));
  json list = expect_result(ask(R"({"jsonrpc":"2.0","id":2,"method":"resources/list"})"), 2);
  EXPECT_EQ(list["resources"][0]["uri"], "lisp://session/definitions");
  json templates = expect_result(ask(R"({"jsonrpc":"2.0","id":3,"method":"resources/templates/list"})"), 3);
  EXPECT_EQ(templates["resourceTemplates"][0]["uriTemplate"], "lisp://symbol/{package}/{name}");
  json read = expect_result(
      ask(R"({"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"lisp://session/definitions"}})"), 4);
  EXPECT_EQ(read["contents"][0]["text"], "[Functions]\n- F (X)");
  EXPECT_EQ(read["contents"][0]["uri"], "lisp://session/definitions");
  // A template's variables are percent-decoded into the tool's arguments.
  json symbol = expect_result(
      ask(R"({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"lisp://symbol/CL-USER/%2AFOO%2F%2A"}})"), 5);
  EXPECT_EQ(json::parse(symbol["contents"][0]["text"].get<std::string>()),
            json({{"symbol", "*FOO/*"}, {"package", "CL-USER"}}));
  for (const char* uri : {"lisp://nope", "lisp://symbol/CL-USER", "lisp://symbol//X", "lisp://symbol/A/%zz", "file:///etc/passwd"}) {
    SCOPED_TRACE(uri);
    expect_error(ask(call_message_of("resources/read", 6, {{"uri", uri}})), rpc::kResourceNotFound, 6);
  }
  expect_error(ask(R"({"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}})"), rpc::kInvalidParams, 7);
  // The loaded ASDF systems, through list_systems with no arguments (its defaults).
  std::vector<std::string> uris;
  for (const json& resource : list["resources"]) uris.push_back(resource["uri"]);
  EXPECT_EQ(uris, (std::vector<std::string>{"lisp://session/definitions", "lisp://session/last-error",
                                            "lisp://session/history", "lisp://session/systems"}));
  registry.register_tool(make_tool("list_systems", {param("filter"), param("limit", ParamType::Integer)}, {},
                                   SafetyLevel::Safe, echo_args()));
  json systems = expect_result(
      ask(R"({"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"lisp://session/systems"}})"), 12);
  EXPECT_EQ(json::parse(systems["contents"][0]["text"].get<std::string>()), json::object());
  EXPECT_EQ(systems["contents"][0]["uri"], "lisp://session/systems");
  expect_error(ask(R"({"jsonrpc":"2.0","id":13,"method":"resources/read","params":{"uri":"lisp://session/systems/x"}})"),
               rpc::kResourceNotFound, 13);
  json prompts = expect_result(ask(R"({"jsonrpc":"2.0","id":8,"method":"prompts/list"})"), 8);
  EXPECT_EQ(prompts["prompts"][0]["name"], "explain-error");
  json prompt = expect_result(ask(R"({"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"explain-error"}})"), 9);
  EXPECT_EQ(prompt["messages"][0]["role"], "user");
  EXPECT_NE(prompt["messages"][0]["content"]["text"].get<std::string>().find("No error recorded."), std::string::npos);
  expect_error(ask(R"({"jsonrpc":"2.0","id":10,"method":"prompts/get","params":{"name":"explain-symbol"}})"),
               rpc::kInvalidParams, 10);
  expect_error(ask(R"({"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"nope"}})"), rpc::kInvalidParams, 11);
  EXPECT_EQ(eval_runs, 0);
}

TEST_F(McpTest, AResourceIsNeverReadThroughAToolThatAsksOrRunsCode) {
  // A tool of that name that is not safe (say redefined dangerous) is not called.
  int ran = 0;
  registry.register_tool(make_tool("list_definitions", {}, {}, SafetyLevel::Dangerous, [&](const json&, CallContext&) {
    ++ran;
    return ToolOutput{true, "ran"};
  }));
  expect_error(ask(R"({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"lisp://session/definitions"}})"),
               rpc::kResourceNotFound, 1);
  // Nor a cautious one, such as describe_system, which reads .asd files:
  // lisp://session/systems is list_systems's only while that is safe.
  registry.register_tool(make_tool("list_systems", {}, {}, SafetyLevel::Cautious, [&](const json&, CallContext&) {
    ++ran;
    return ToolOutput{true, "ran"};
  }));
  expect_error(ask(R"({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"lisp://session/systems"}})"),
               rpc::kResourceNotFound, 2);
  EXPECT_EQ(ran, 0);
}

namespace {

// A context that keeps what the executor logs for its client.
class LoggingContext final : public CallContext {
 public:
  void log_to_client(McpLogLevel level, const std::string& message, const std::string& tool) override {
    logged.push_back({level, message, tool});
  }
  struct Entry {
    McpLogLevel level;
    std::string message, tool;
  };
  std::vector<Entry> logged;
};

}  // namespace

TEST_F(McpTest, SetLevelStoresTheClientsLevel) {
  ClientLogLevel level;
  ExecutionOptions options;
  options.log_level = &level;
  EXPECT_FALSE(level.chosen());
  json r = ask(R"({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"warning"}})", options);
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"], json::object());
  EXPECT_TRUE(level.chosen());
  EXPECT_TRUE(level.wants(McpLogLevel::Warning));
  EXPECT_TRUE(level.wants(McpLogLevel::Emergency));
  EXPECT_FALSE(level.wants(McpLogLevel::Notice));
  ask(R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}})", options);
  EXPECT_TRUE(level.wants(McpLogLevel::Debug));
}

TEST_F(McpTest, SetLevelRefusesWhatIsNotALevel) {
  ClientLogLevel level;
  ExecutionOptions options;
  options.log_level = &level;
  for (const char* params : {R"({"level":"loud"})", R"({"level":"WARNING"})", R"({"level":3})", R"({})", R"([])"}) {
    json r = ask(std::string(R"({"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":)") + params + "}",
                 options);
    expect_error(r, rpc::kInvalidParams, 7);
  }
  expect_error(ask(R"({"jsonrpc":"2.0","id":8,"method":"logging/setLevel"})", options), rpc::kInvalidParams, 8);
  json r = ask(R"({"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"loud"}})", options);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("debug, info, notice, warning"), std::string::npos);
  EXPECT_FALSE(level.chosen());
}

TEST_F(McpTest, ADeniedDangerousCallIsLoggedForTheClient) {
  LoggingContext context;
  ExecutionOptions options;
  options.context = &context;  // no approval function: denied
  json r = ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"y"}}})",
               options);
  EXPECT_EQ(r["result"]["isError"], true);
  ASSERT_EQ(context.logged.size(), 1u);
  EXPECT_EQ(context.logged[0].level, McpLogLevel::Notice);
  EXPECT_EQ(context.logged[0].tool, "write_file");
  EXPECT_NE(context.logged[0].message.find("write_file was denied"), std::string::npos);
  // A safe call logs nothing.
  ask(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}})", options);
  EXPECT_EQ(context.logged.size(), 1u);
}

TEST(McpLogging, LevelsByName) {
  const char* names[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
  for (int i = 0; i < 8; ++i) {
    auto level = parse_mcp_log_level(names[i]);
    ASSERT_TRUE(level.has_value()) << names[i];
    EXPECT_EQ(static_cast<int>(*level), i);
    EXPECT_EQ(mcp_log_level_name(*level), names[i]);
  }
  EXPECT_FALSE(parse_mcp_log_level("").has_value());
  EXPECT_FALSE(parse_mcp_log_level("Info").has_value());
  EXPECT_FALSE(parse_mcp_log_level("warn").has_value());
}

TEST(McpLogging, NothingIsWantedBeforeTheClientChooses) {
  ClientLogLevel level;
  EXPECT_FALSE(level.wants(McpLogLevel::Emergency));
  level.set(McpLogLevel::Error);
  EXPECT_FALSE(level.wants(McpLogLevel::Warning));
  EXPECT_TRUE(level.wants(McpLogLevel::Error));
  EXPECT_TRUE(level.wants(McpLogLevel::Critical));
}

TEST(McpLogging, NotificationTextIsBounded) {
  json n = json::parse(mcp_log_notification(McpLogLevel::Warning, "short", 42, "evaluate_lisp"));
  EXPECT_EQ(n["method"], "notifications/message");
  EXPECT_FALSE(n.contains("id"));
  EXPECT_EQ(n["params"]["level"], "warning");
  EXPECT_EQ(n["params"]["logger"], "sly-agent-q");
  EXPECT_EQ(n["params"]["data"]["message"], "short");
  EXPECT_EQ(n["params"]["data"]["requestId"], 42);
  EXPECT_EQ(n["params"]["data"]["tool"], "evaluate_lisp");
  std::string big;
  for (int i = 0; i < 3000; ++i) big += "é";  // two bytes each
  json cut = json::parse(mcp_log_notification(McpLogLevel::Info, big));
  const std::string text = cut["params"]["data"]["message"];
  EXPECT_LE(text.size(), kMaxLogMessageBytes + 3);
  EXPECT_EQ(text.substr(text.size() - 3), "...");
  EXPECT_FALSE(cut["params"]["data"].contains("requestId"));
  EXPECT_FALSE(cut["params"]["data"].contains("tool"));
}
