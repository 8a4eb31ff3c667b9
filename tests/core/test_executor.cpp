#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "core/executor.hpp"
#include "test_helpers.hpp"

using namespace agentq;
using agentq::testing::echo_args;
using agentq::testing::make_tool;
using agentq::testing::param;
using agentq::testing::returns;

namespace {

struct HookEvent {
  HookPhase phase;
  std::string tool;
  json args;
  bool has_result;
  std::optional<ToolResult> result;
};

// Collects every hook call.
struct HookLog {
  std::vector<HookEvent> events;
  Hook hook() {
    return [this](HookPhase phase, const std::string& tool, const json& args, const ToolResult* result) {
      events.push_back({phase, tool, args, result != nullptr,
                        result ? std::optional<ToolResult>(*result) : std::nullopt});
    };
  }
  std::vector<HookPhase> phases() const {
    std::vector<HookPhase> out;
    for (const auto& e : events) out.push_back(e.phase);
    return out;
  }
};

// The invariants of contract tool-execution for one result.
void expect_well_formed(const ToolResult& r, const ToolCall& call) {
  EXPECT_EQ(r.id, call.id);
  EXPECT_EQ(r.success, !r.error.has_value());
  if (!r.success) {
    EXPECT_FALSE(r.error->empty());
    EXPECT_EQ(r.content, *r.error);
  }
  EXPECT_GE(r.execution_time_ms, 0.0);
}

ToolCall make_call(std::string name, json args = json::object(), std::optional<std::string> id = "call_1") {
  ToolCall c;
  c.id = std::move(id);
  c.name = std::move(name);
  c.arguments = std::move(args);
  return c;
}

class ExecutorTest : public ::testing::Test {
 protected:
  ExecutorTest() : executor(registry) {
    registry.register_tool(make_tool("describe_symbol", {param("symbol"), param("package")}, {"symbol"},
                                     SafetyLevel::Safe, [this](const json& args, CallContext&) {
                                       ++describe_runs;
                                       return ToolOutput{true, "described " + args.at("symbol").get<std::string>()};
                                     }));
    registry.register_tool(make_tool("eval_form", {param("form")}, {"form"}, SafetyLevel::Cautious,
                                     returns("evaluated")));
    registry.register_tool(make_tool("write_file", {param("path"), param("content")}, {"path", "content"},
                                     SafetyLevel::Dangerous, [this](const json& args, CallContext&) {
                                       ++write_runs;
                                       last_write_args = args;
                                       return ToolOutput{true, "wrote " + args.at("path").get<std::string>()};
                                     }));
    registry.register_tool(make_tool("evaluate_lisp", {param("code"), param("timeout", ParamType::Number)},
                                     {"code"}, SafetyLevel::Safe, echo_args()));
  }

  Registry registry;
  Executor executor;
  int describe_runs = 0;
  int write_runs = 0;
  json last_write_args;
};

ApprovalFunction always(ApprovalKind kind, json args = nullptr) {
  return [kind, args](const Tool&, const json&) { return ApprovalDecision{kind, args}; };
}

}  // namespace

TEST(HookPhaseNames, ToString) {
  EXPECT_EQ(to_string(HookPhase::Before), "before");
  EXPECT_EQ(to_string(HookPhase::After), "after");
  EXPECT_EQ(to_string(HookPhase::Error), "error");
}

TEST_F(ExecutorTest, SafeToolSucceeds) {
  ToolCall call = make_call("describe_symbol", {{"symbol", "car"}}, "call_abc123");
  ToolResult r = executor.execute(call, {});
  expect_well_formed(r, call);
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.id, "call_abc123");
  EXPECT_EQ(r.content, "described car");
  EXPECT_EQ(r.error, std::nullopt);
  EXPECT_EQ(r.safety_level, SafetyLevel::Safe);
  EXPECT_TRUE(r.approved);
  EXPECT_EQ(describe_runs, 1);
}

TEST_F(ExecutorTest, IdIsEchoedEvenWhenAbsent) {
  ToolCall call = make_call("describe_symbol", {{"symbol", "car"}}, std::nullopt);
  EXPECT_EQ(executor.execute(call, {}).id, std::nullopt);
  ToolCall unknown = make_call("nope", json::object(), "x-1");
  EXPECT_EQ(executor.execute(unknown, {}).id, "x-1");
}

TEST_F(ExecutorTest, UnknownTool) {
  HookLog log;
  ExecutionOptions options;
  options.hooks = {log.hook()};
  ToolCall call = make_call("no_such_tool", {{"a", 1}});
  ToolResult r = executor.execute(call, options);
  expect_well_formed(r, call);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "Unknown tool: no_such_tool");
  EXPECT_EQ(r.content, "Unknown tool: no_such_tool");
  EXPECT_EQ(r.safety_level, std::nullopt);
  EXPECT_FALSE(r.approved);
  ASSERT_EQ(log.events.size(), 1u);
  EXPECT_EQ(log.events[0].phase, HookPhase::Error);
  EXPECT_EQ(log.events[0].tool, "no_such_tool");
  EXPECT_EQ(log.events[0].args, (json{{"a", 1}}));
  ASSERT_TRUE(log.events[0].has_result);
  EXPECT_EQ(log.events[0].result->error, "Unknown tool: no_such_tool");
}

TEST_F(ExecutorTest, HyphenatedNameRunsTheSnakeCaseTool) {
  ToolCall call = make_call("describe-symbol", {{"symbol", "cons"}});
  ToolResult r = executor.execute(call, {});
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.content, "described cons");
}

TEST_F(ExecutorTest, HandlerExceptionBecomesToolError) {
  registry.register_tool(make_tool("boom", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) -> ToolOutput {
    throw std::runtime_error("kaboom");
  }));
  ToolCall call = make_call("boom");
  ToolResult r = executor.execute(call, {});
  expect_well_formed(r, call);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "Tool error: kaboom");
  EXPECT_EQ(r.content, "Tool error: kaboom");
  EXPECT_EQ(r.safety_level, SafetyLevel::Safe);
}

TEST_F(ExecutorTest, NonStandardExceptionBecomesToolError) {
  registry.register_tool(make_tool("boom", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) -> ToolOutput {
    throw 42;
  }));
  ToolResult r = executor.execute(make_call("boom"), {});
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "Tool error: unknown exception");
}

TEST_F(ExecutorTest, JsonExceptionInHandlerIsCaught) {
  registry.register_tool(make_tool("bad_access", {}, {}, SafetyLevel::Safe, [](const json& args, CallContext&) {
    return ToolOutput{true, args.at("missing").get<std::string>()};
  }));
  ToolResult r = executor.execute(make_call("bad_access"), {});
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error->rfind("Tool error: ", 0), 0u);
}

TEST_F(ExecutorTest, HandlerReportedFailure) {
  registry.register_tool(make_tool("fails", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) {
    return ToolOutput{false, "Symbol XYZ not found in package COMMON-LISP"};
  }));
  ToolCall call = make_call("fails");
  ToolResult r = executor.execute(call, {});
  expect_well_formed(r, call);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "Symbol XYZ not found in package COMMON-LISP");
  EXPECT_EQ(r.content, "Symbol XYZ not found in package COMMON-LISP");
}

TEST_F(ExecutorTest, HandlerFailureWithoutTextStillHasAnError) {
  registry.register_tool(make_tool("fails_silently", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) {
    return ToolOutput{false, ""};
  }));
  ToolCall call = make_call("fails_silently");
  ToolResult r = executor.execute(call, {});
  expect_well_formed(r, call);
  EXPECT_FALSE(r.success);
}

TEST_F(ExecutorTest, MissingRequiredArgument) {
  HookLog log;
  ExecutionOptions options;
  options.hooks = {log.hook()};
  ToolCall call = make_call("describe_symbol", {{"package", "cl"}});
  ToolResult r = executor.execute(call, options);
  expect_well_formed(r, call);
  EXPECT_EQ(r.error, "Missing required argument: symbol");
  EXPECT_EQ(r.safety_level, SafetyLevel::Safe);
  EXPECT_EQ(describe_runs, 0);
  EXPECT_EQ(log.phases(), std::vector<HookPhase>{HookPhase::Error});
}

TEST_F(ExecutorTest, WrongArgumentType) {
  ToolCall call = make_call("evaluate_lisp", {{"code", "(+ 1 2)"}, {"timeout", "soon"}});
  ToolResult r = executor.execute(call, {});
  expect_well_formed(r, call);
  EXPECT_EQ(r.error, "Invalid argument 'timeout': expected number, got string");
}

TEST_F(ExecutorTest, ArgumentsNotAnObject) {
  ToolCall call = make_call("evaluate_lisp", json::array({"(+ 1 2)"}));
  ToolResult r = executor.execute(call, {});
  expect_well_formed(r, call);
  EXPECT_EQ(r.error, "Invalid arguments: expected a JSON object, got array");
}

TEST_F(ExecutorTest, NullArgumentsAreAbsentForTheHandler) {
  ToolResult r = executor.execute(make_call("evaluate_lisp", {{"code", "x"}, {"timeout", nullptr}}), {});
  ASSERT_TRUE(r.success) << r.content;
  EXPECT_EQ(json::parse(r.content), (json{{"code", "x"}}));
}

TEST_F(ExecutorTest, NullRequiredArgumentIsMissing) {
  ToolResult r = executor.execute(make_call("evaluate_lisp", {{"code", nullptr}}), {});
  EXPECT_EQ(r.error, "Missing required argument: code");
}

TEST_F(ExecutorTest, NullArgumentObjectIsEmpty) {
  registry.register_tool(make_tool("no_args", {param("x")}, {}, SafetyLevel::Safe, echo_args()));
  ToolResult r = executor.execute(make_call("no_args", nullptr), {});
  ASSERT_TRUE(r.success) << r.content;
  EXPECT_EQ(r.content, "{}");
}

TEST_F(ExecutorTest, HandlerReceivesValidatedArgumentsUnchanged) {
  json args = {{"code", "(list 1 2)"}, {"timeout", 2.5}};
  ToolResult r = executor.execute(make_call("evaluate_lisp", args), {});
  ASSERT_TRUE(r.success);
  EXPECT_EQ(json::parse(r.content), args);
}

TEST_F(ExecutorTest, HandlerReceivesTheCallContext) {
  struct Ctx : CallContext {
    bool poll() override { return true; }
  } ctx;
  CallContext* seen = nullptr;
  bool polled = false;
  registry.register_tool(make_tool("ctx_tool", {}, {}, SafetyLevel::Safe, [&](const json&, CallContext& c) {
    seen = &c;
    polled = c.poll();
    return ToolOutput{true, "ok"};
  }));
  ExecutionOptions options;
  options.context = &ctx;
  EXPECT_TRUE(executor.execute(make_call("ctx_tool"), options).success);
  EXPECT_EQ(seen, &ctx);
  EXPECT_TRUE(polled);
}

TEST_F(ExecutorTest, NullContextGivesANullCallContext) {
  bool polled = true;
  bool cancelled = true;
  registry.register_tool(make_tool("ctx_tool", {}, {}, SafetyLevel::Safe, [&](const json&, CallContext& c) {
    polled = c.poll();
    cancelled = c.cancelled();
    return ToolOutput{true, "ok"};
  }));
  EXPECT_TRUE(executor.execute(make_call("ctx_tool"), {}).success);
  EXPECT_FALSE(polled);
  EXPECT_FALSE(cancelled);
}

// ----------------------------------------------------------------- safety gate

TEST_F(ExecutorTest, CautiousToolRunsWithoutApprovalAndIsHooked) {
  HookLog log;
  bool asked = false;
  ExecutionOptions options;
  options.approve = [&](const Tool&, const json&) {
    asked = true;
    return ApprovalDecision{ApprovalKind::Denied, nullptr};
  };
  options.hooks = {log.hook()};
  ToolResult r = executor.execute(make_call("eval_form", {{"form", "(+ 1 2)"}}), options);
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.content, "evaluated");
  EXPECT_EQ(r.safety_level, SafetyLevel::Cautious);
  EXPECT_TRUE(r.approved);
  EXPECT_FALSE(asked);
  EXPECT_EQ(log.phases(), (std::vector<HookPhase>{HookPhase::Before, HookPhase::After}));
  EXPECT_EQ(log.events[0].tool, "eval_form");
}

TEST_F(ExecutorTest, SafeToolNeverAsksForApproval) {
  bool asked = false;
  ExecutionOptions options;
  options.approve = [&](const Tool&, const json&) {
    asked = true;
    return ApprovalDecision{ApprovalKind::Denied, nullptr};
  };
  EXPECT_TRUE(executor.execute(make_call("describe_symbol", {{"symbol", "car"}}), options).success);
  EXPECT_FALSE(asked);
}

TEST_F(ExecutorTest, DangerousToolWithoutApprovalFunctionIsDenied) {
  HookLog log;
  ExecutionOptions options;
  options.hooks = {log.hook()};
  ToolCall call = make_call("write_file", {{"path", "/tmp/x"}, {"content", "hi"}});
  ToolResult r = executor.execute(call, options);
  expect_well_formed(r, call);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "User denied tool execution");
  EXPECT_EQ(r.content, "User denied tool execution");
  EXPECT_EQ(r.safety_level, SafetyLevel::Dangerous);
  EXPECT_FALSE(r.approved);
  EXPECT_EQ(write_runs, 0);
  EXPECT_EQ(log.phases(), std::vector<HookPhase>{HookPhase::Error});
}

TEST_F(ExecutorTest, DangerousToolApproved) {
  const Tool* asked_tool = nullptr;
  json asked_args;
  ExecutionOptions options;
  options.approve = [&](const Tool& tool, const json& args) {
    asked_tool = &tool;
    asked_args = args;
    return ApprovalDecision{ApprovalKind::Approved, nullptr};
  };
  json args = {{"path", "/tmp/x"}, {"content", "hi"}};
  ToolResult r = executor.execute(make_call("write_file", args), options);
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.content, "wrote /tmp/x");
  EXPECT_TRUE(r.approved);
  EXPECT_EQ(r.safety_level, SafetyLevel::Dangerous);
  EXPECT_EQ(write_runs, 1);
  ASSERT_NE(asked_tool, nullptr);
  EXPECT_EQ(asked_tool->name, "write_file");
  EXPECT_EQ(asked_args, args);
}

TEST_F(ExecutorTest, DangerousToolDenied) {
  ExecutionOptions options;
  options.approve = always(ApprovalKind::Denied);
  ToolResult r = executor.execute(make_call("write_file", {{"path", "/tmp/x"}, {"content", "hi"}}), options);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "User denied tool execution");
  EXPECT_FALSE(r.approved);
  EXPECT_EQ(write_runs, 0);
}

TEST_F(ExecutorTest, DangerousToolModifiedRunsWithNewArguments) {
  HookLog log;
  ExecutionOptions options;
  options.approve = always(ApprovalKind::Modified, {{"path", "/tmp/safer"}, {"content", "edited"}});
  options.hooks = {log.hook()};
  ToolResult r = executor.execute(make_call("write_file", {{"path", "/etc/passwd"}, {"content", "x"}}), options);
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.content, "wrote /tmp/safer");
  EXPECT_TRUE(r.approved);
  EXPECT_EQ(last_write_args, (json{{"path", "/tmp/safer"}, {"content", "edited"}}));
  ASSERT_EQ(log.phases(), (std::vector<HookPhase>{HookPhase::Before, HookPhase::After}));
  EXPECT_EQ(log.events[0].args["path"], "/tmp/safer");
  EXPECT_EQ(log.events[1].args["path"], "/tmp/safer");
}

TEST_F(ExecutorTest, ModifiedArgumentsAreValidatedAgain) {
  ExecutionOptions options;
  options.approve = always(ApprovalKind::Modified, {{"path", "/tmp/x"}});
  ToolCall call = make_call("write_file", {{"path", "/tmp/x"}, {"content", "x"}});
  ToolResult r = executor.execute(call, options);
  expect_well_formed(r, call);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "Missing required argument: content");
  EXPECT_EQ(write_runs, 0);

  options.approve = always(ApprovalKind::Modified, json::array({1}));
  r = executor.execute(call, options);
  EXPECT_EQ(r.error, "Invalid arguments: expected a JSON object, got array");
  EXPECT_EQ(write_runs, 0);

  options.approve = always(ApprovalKind::Modified, {{"path", 1}, {"content", "x"}});
  r = executor.execute(call, options);
  EXPECT_EQ(r.error, "Invalid argument 'path': expected string, got integer");
  EXPECT_EQ(write_runs, 0);
}

TEST_F(ExecutorTest, ModifiedArgumentsDropNulls) {
  ExecutionOptions options;
  options.approve = always(ApprovalKind::Modified, {{"path", "/tmp/y"}, {"content", "c"}, {"mode", nullptr}});
  ToolResult r = executor.execute(make_call("write_file", {{"path", "/tmp/x"}, {"content", "x"}}), options);
  ASSERT_TRUE(r.success);
  EXPECT_EQ(last_write_args, (json{{"path", "/tmp/y"}, {"content", "c"}}));
}

TEST_F(ExecutorTest, ThrowingApprovalFunctionDenies) {
  ExecutionOptions options;
  options.approve = [](const Tool&, const json&) -> ApprovalDecision { throw std::runtime_error("UI crashed"); };
  ToolResult r = executor.execute(make_call("write_file", {{"path", "/tmp/x"}, {"content", "x"}}), options);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "User denied tool execution");
  EXPECT_EQ(write_runs, 0);

  options.approve = [](const Tool&, const json&) -> ApprovalDecision { throw 1; };
  r = executor.execute(make_call("write_file", {{"path", "/tmp/x"}, {"content", "x"}}), options);
  EXPECT_EQ(r.error, "User denied tool execution");
  EXPECT_EQ(write_runs, 0);
}

TEST_F(ExecutorTest, InvalidArgumentsAreRejectedBeforeAskingForApproval) {
  bool asked = false;
  ExecutionOptions options;
  options.approve = [&](const Tool&, const json&) {
    asked = true;
    return ApprovalDecision{ApprovalKind::Approved, nullptr};
  };
  ToolResult r = executor.execute(make_call("write_file", {{"path", "/tmp/x"}}), options);
  EXPECT_EQ(r.error, "Missing required argument: content");
  EXPECT_FALSE(asked);
}

TEST_F(ExecutorTest, ApprovalWaitIsNotExecutionTime) {
  ExecutionOptions options;
  options.approve = [](const Tool&, const json&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    return ApprovalDecision{ApprovalKind::Approved, nullptr};
  };
  ToolResult r = executor.execute(make_call("write_file", {{"path", "/tmp/x"}, {"content", "x"}}), options);
  ASSERT_TRUE(r.success);
  EXPECT_LT(r.execution_time_ms, 50.0);
}

TEST_F(ExecutorTest, ExecutionTimeCoversTheHandler) {
  registry.register_tool(make_tool("slow", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return ToolOutput{true, "done"};
  }));
  ToolResult r = executor.execute(make_call("slow"), {});
  EXPECT_GE(r.execution_time_ms, 5.0);
  EXPECT_LT(r.execution_time_ms, 5000.0);
}

// ------------------------------------------------- denied messages and checks

TEST_F(ExecutorTest, ADeniedToolAnswersItsOwnDeniedMessage) {
  int runs = 0;
  Tool edit = make_tool("propose_edit", {param("path"), param("text")}, {"path"}, SafetyLevel::Dangerous,
                        [&](const json&, CallContext&) {
                          ++runs;
                          return ToolOutput{true, "accepted"};
                        });
  edit.denied_message = "rejected — STOP: do not retry this edit.";
  registry.register_tool(std::move(edit));
  HookLog log;
  ExecutionOptions options;
  options.hooks = {log.hook()};
  ToolCall call = make_call("propose_edit", {{"path", "a.lisp"}});
  // No approval function, a denial, a throwing approval function: the tool's text each time.
  for (ApprovalFunction approve : std::vector<ApprovalFunction>{
           nullptr, always(ApprovalKind::Denied),
           [](const Tool&, const json&) -> ApprovalDecision { throw std::runtime_error("UI crashed"); }}) {
    options.approve = approve;
    ToolResult r = executor.execute(call, options);
    expect_well_formed(r, call);
    EXPECT_FALSE(r.success);
    EXPECT_FALSE(r.approved);
    EXPECT_EQ(r.content, "rejected — STOP: do not retry this edit.");
  }
  EXPECT_EQ(runs, 0);
  ASSERT_EQ(log.events.size(), 3u);
  EXPECT_EQ(log.events[2].phase, HookPhase::Error);
  EXPECT_EQ(log.events[2].result->error, "rejected — STOP: do not retry this edit.");
  // Other tools keep the executor's text.
  options.approve = always(ApprovalKind::Denied);
  EXPECT_EQ(executor.execute(make_call("write_file", {{"path", "/tmp/x"}, {"content", "x"}}), options).error,
            "User denied tool execution");
  EXPECT_EQ(denied_text(*registry.resolve("write_file")), "User denied tool execution");
  EXPECT_EQ(denied_text(*registry.resolve("propose_edit")), "rejected — STOP: do not retry this edit.");
}

TEST_F(ExecutorTest, AFailingCheckFailsTheCallBeforeApprovalAndHandler) {
  int runs = 0;
  json checked;
  Tool edit = make_tool("propose_edit", {param("path"), param("text")}, {"path"}, SafetyLevel::Dangerous,
                        [&](const json&, CallContext&) {
                          ++runs;
                          return ToolOutput{true, "accepted"};
                        });
  edit.check = [&](const json& args, CallContext&) -> std::optional<std::string> {
    checked = args;
    if (args.contains("text")) return std::nullopt;
    return "The text to replace was not found in " + args.at("path").get<std::string>();
  };
  registry.register_tool(std::move(edit));
  bool asked = false;
  HookLog log;
  ExecutionOptions options;
  options.approve = [&](const Tool&, const json&) {
    asked = true;
    return ApprovalDecision{ApprovalKind::Approved, nullptr};
  };
  options.hooks = {log.hook()};
  ToolCall call = make_call("propose_edit", {{"path", "a.lisp"}, {"text", nullptr}});
  ToolResult r = executor.execute(call, options);
  expect_well_formed(r, call);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.content, "The text to replace was not found in a.lisp");
  EXPECT_EQ(r.safety_level, SafetyLevel::Dangerous);
  EXPECT_FALSE(r.approved);
  EXPECT_FALSE(asked);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(checked, (json{{"path", "a.lisp"}}));  // the normalized arguments: a null is absent
  EXPECT_EQ(log.phases(), std::vector<HookPhase>{HookPhase::Error});
  EXPECT_EQ(executor.stats().at("propose_edit").failures, 1u);

  // A check that passes: approval, then the handler.
  r = executor.execute(make_call("propose_edit", {{"path", "a.lisp"}, {"text", "x"}}), options);
  EXPECT_TRUE(r.success);
  EXPECT_TRUE(asked);
  EXPECT_EQ(runs, 1);

  // Invalid arguments never reach the check.
  checked = nullptr;
  r = executor.execute(make_call("propose_edit", {{"text", "x"}}), options);
  EXPECT_EQ(r.error, "Missing required argument: path");
  EXPECT_EQ(checked, nullptr);
}

TEST_F(ExecutorTest, ACheckSeesTheModelsArgumentsNotTheApprovalsAndMayThrow) {
  std::vector<json> checked;
  std::vector<std::string> order;
  Tool tool = make_tool("checked", {param("x")}, {}, SafetyLevel::Dangerous, echo_args());
  tool.check = [&](const json& args, CallContext&) -> std::optional<std::string> {
    order.push_back("check");
    checked.push_back(args);
    if (args.value("x", "") == "throw") throw std::runtime_error("the check broke");
    if (args.value("x", "") == "empty") return std::string();
    return std::nullopt;
  };
  registry.register_tool(std::move(tool));
  ExecutionOptions options;
  options.approve = [&](const Tool&, const json&) {
    order.push_back("approve");
    return ApprovalDecision{ApprovalKind::Modified, {{"x", "from the approval"}}};
  };
  options.hooks = {[&](HookPhase phase, const std::string&, const json&, const ToolResult*) {
    order.push_back(std::string(to_string(phase)));
  }};
  ToolResult r = executor.execute(make_call("checked", {{"x", "from the model"}}), options);
  EXPECT_EQ(r.content, R"({"x":"from the approval"})");
  EXPECT_EQ(checked, (std::vector<json>{json{{"x", "from the model"}}}));
  EXPECT_EQ(order, (std::vector<std::string>{"check", "approve", "before", "after"}));

  r = executor.execute(make_call("checked", {{"x", "throw"}}), options);
  EXPECT_EQ(r.error, "Tool error: the check broke");
  r = executor.execute(make_call("checked", {{"x", "empty"}}), options);
  EXPECT_EQ(r.error, "Tool failed");
}

// What was settled ahead (in Emacs, before the job took the runner) stands
// in for the check and the question; what was not is checked and asked.
TEST_F(ExecutorTest, ASettledCallIsNeitherCheckedNorAskedAgain) {
  std::vector<std::string> order;
  Tool tool = make_tool("settled", {param("x")}, {}, SafetyLevel::Dangerous, echo_args());
  tool.check = [&](const json&, CallContext&) -> std::optional<std::string> {
    order.push_back("check");
    return std::nullopt;
  };
  registry.register_tool(std::move(tool));
  ExecutionOptions options;
  options.approve = [&](const Tool&, const json&) {
    order.push_back("approve");
    return ApprovalDecision{ApprovalKind::Approved, {}};
  };
  options.settled = [&](const Tool& tool, const json& args) -> std::optional<SettledCall> {
    order.push_back("settled " + tool.name);
    std::string x = args.value("x", "");
    if (x == "failed") return SettledCall{std::string("refused ahead"), {}};
    if (x == "denied") return SettledCall{std::nullopt, ApprovalDecision{ApprovalKind::Denied, {}, "no", {}}};
    if (x == "approved") return SettledCall{std::nullopt, ApprovalDecision{ApprovalKind::Approved, {}}};
    return std::nullopt;
  };
  ToolResult r = executor.execute(make_call("settled", {{"x", "failed"}}), options);
  EXPECT_EQ(r.error, "refused ahead");
  EXPECT_FALSE(r.approved);
  r = executor.execute(make_call("settled", {{"x", "denied"}}), options);
  EXPECT_EQ(r.error, "Denied by user: no");
  r = executor.execute(make_call("settled", {{"x", "approved"}}), options);
  EXPECT_TRUE(r.success);
  EXPECT_TRUE(r.approved);
  EXPECT_EQ(order, (std::vector<std::string>{"settled settled", "settled settled", "settled settled"}));
  order.clear();
  r = executor.execute(make_call("settled", {{"x", "other"}}), options);
  EXPECT_TRUE(r.success);
  EXPECT_EQ(order, (std::vector<std::string>{"settled settled", "check", "approve"}));
  // Safe tools are never looked up.
  order.clear();
  EXPECT_TRUE(executor.execute(make_call("describe_symbol", {{"symbol", "car"}}), options).success);
  EXPECT_TRUE(order.empty());
}

TEST_F(ExecutorTest, ASafeToolsCheckRunsBeforeItsHooks) {
  Tool tool = make_tool("safe_checked", {param("x")}, {}, SafetyLevel::Safe, returns("ran"));
  tool.check = [](const json& args, CallContext&) -> std::optional<std::string> {
    if (args.contains("x")) return std::nullopt;
    return std::string("x is needed here");
  };
  registry.register_tool(std::move(tool));
  HookLog log;
  ExecutionOptions options;
  options.hooks = {log.hook()};
  ToolResult r = executor.execute(make_call("safe_checked"), options);
  EXPECT_EQ(r.error, "x is needed here");
  EXPECT_TRUE(r.approved);  // safe tools need no permission, checked or not
  EXPECT_EQ(log.phases(), std::vector<HookPhase>{HookPhase::Error});
  EXPECT_EQ(executor.execute(make_call("safe_checked", {{"x", "1"}}), options).content, "ran");
}

// ----------------------------------------------------------------------- hooks

TEST_F(ExecutorTest, HooksBeforeAndAfterOnSuccess) {
  HookLog log;
  ExecutionOptions options;
  options.hooks = {log.hook()};
  executor.execute(make_call("describe_symbol", {{"symbol", "car"}}), options);
  ASSERT_EQ(log.phases(), (std::vector<HookPhase>{HookPhase::Before, HookPhase::After}));
  EXPECT_FALSE(log.events[0].has_result);
  EXPECT_EQ(log.events[0].tool, "describe_symbol");
  EXPECT_EQ(log.events[0].args, (json{{"symbol", "car"}}));
  ASSERT_TRUE(log.events[1].has_result);
  EXPECT_TRUE(log.events[1].result->success);
  EXPECT_EQ(log.events[1].result->content, "described car");
  EXPECT_EQ(log.events[1].result->id, "call_1");
}

TEST_F(ExecutorTest, HookToolNameIsTheResolvedName) {
  HookLog log;
  ExecutionOptions options;
  options.hooks = {log.hook()};
  executor.execute(make_call("describe-symbol", {{"symbol", "car"}}), options);
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].tool, "describe_symbol");
}

TEST_F(ExecutorTest, BeforeRunsJustBeforeTheHandler) {
  std::vector<std::string> order;
  registry.register_tool(make_tool("ordered", {}, {}, SafetyLevel::Dangerous, [&](const json&, CallContext&) {
    order.push_back("handler");
    return ToolOutput{true, "ok"};
  }));
  ExecutionOptions options;
  options.approve = [&](const Tool&, const json&) {
    order.push_back("approve");
    return ApprovalDecision{ApprovalKind::Approved, nullptr};
  };
  options.hooks = {[&](HookPhase phase, const std::string&, const json&, const ToolResult*) {
    order.push_back(std::string(to_string(phase)));
  }};
  executor.execute(make_call("ordered"), options);
  EXPECT_EQ(order, (std::vector<std::string>{"approve", "before", "handler", "after"}));
}

TEST_F(ExecutorTest, HooksBeforeAndErrorWhenTheHandlerFails) {
  registry.register_tool(make_tool("boom", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) -> ToolOutput {
    throw std::runtime_error("x");
  }));
  HookLog log;
  ExecutionOptions options;
  options.hooks = {log.hook()};
  executor.execute(make_call("boom"), options);
  ASSERT_EQ(log.phases(), (std::vector<HookPhase>{HookPhase::Before, HookPhase::Error}));
  EXPECT_EQ(log.events[1].result->error, "Tool error: x");
}

TEST_F(ExecutorTest, ErrorHookOnDenial) {
  HookLog log;
  ExecutionOptions options;
  options.approve = always(ApprovalKind::Denied);
  options.hooks = {log.hook()};
  executor.execute(make_call("write_file", {{"path", "/tmp/x"}, {"content", "x"}}), options);
  ASSERT_EQ(log.phases(), std::vector<HookPhase>{HookPhase::Error});
  EXPECT_EQ(log.events[0].result->error, "User denied tool execution");
  EXPECT_EQ(log.events[0].tool, "write_file");
}

TEST_F(ExecutorTest, ThrowingHookChangesNothing) {
  HookLog log;
  int calls = 0;
  ExecutionOptions options;
  options.hooks = {[&](HookPhase, const std::string&, const json&, const ToolResult*) {
                     ++calls;
                     throw std::runtime_error("hook failed");
                   },
                   Hook{},  // an empty hook is skipped
                   [&](HookPhase, const std::string&, const json&, const ToolResult*) {
                     ++calls;
                     throw 7;
                   },
                   log.hook()};
  ToolResult r = executor.execute(make_call("describe_symbol", {{"symbol", "car"}}), options);
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.content, "described car");
  EXPECT_EQ(r.error, std::nullopt);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(log.phases(), (std::vector<HookPhase>{HookPhase::Before, HookPhase::After}));
  EXPECT_EQ(describe_runs, 1);

  ToolResult failed = executor.execute(make_call("nope"), options);
  EXPECT_EQ(failed.error, "Unknown tool: nope");
}

TEST_F(ExecutorTest, HookSeesFinalMetadata) {
  HookLog log;
  ExecutionOptions options;
  options.approve = always(ApprovalKind::Approved);
  options.hooks = {log.hook()};
  executor.execute(make_call("write_file", {{"path", "/tmp/x"}, {"content", "x"}}), options);
  ASSERT_EQ(log.events.size(), 2u);
  const ToolResult& r = *log.events[1].result;
  EXPECT_TRUE(r.approved);
  EXPECT_EQ(r.safety_level, SafetyLevel::Dangerous);
  EXPECT_GE(r.execution_time_ms, 0.0);
}

// ----------------------------------------------------------------------- stats

TEST_F(ExecutorTest, StatsCountCallsAndFailuresPerResolvedName) {
  executor.execute(make_call("describe_symbol", {{"symbol", "a"}}), {});
  executor.execute(make_call("describe-symbol", {{"symbol", "b"}}), {});
  executor.execute(make_call("describe_symbol", json::object()), {});  // invalid arguments
  executor.execute(make_call("write_file", {{"path", "p"}, {"content", "c"}}), {});  // denied
  executor.execute(make_call("unknown_tool"), {});

  auto stats = executor.stats();
  ASSERT_EQ(stats.count("describe_symbol"), 1u);
  EXPECT_EQ(stats["describe_symbol"].calls, 3u);
  EXPECT_EQ(stats["describe_symbol"].failures, 1u);
  EXPECT_GE(stats["describe_symbol"].total_ms, 0.0);
  EXPECT_EQ(stats["write_file"].calls, 1u);
  EXPECT_EQ(stats["write_file"].failures, 1u);
  EXPECT_EQ(stats.count("unknown_tool"), 0u);
  EXPECT_EQ(stats.count("describe-symbol"), 0u);
}

TEST_F(ExecutorTest, StatsTotalTimeAccumulates) {
  registry.register_tool(make_tool("slow", {}, {}, SafetyLevel::Safe, [](const json&, CallContext&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return ToolOutput{true, "done"};
  }));
  executor.execute(make_call("slow"), {});
  executor.execute(make_call("slow"), {});
  EXPECT_GE(executor.stats()["slow"].total_ms, 4.0);
}

TEST_F(ExecutorTest, ResetStats) {
  executor.execute(make_call("describe_symbol", {{"symbol", "a"}}), {});
  EXPECT_FALSE(executor.stats().empty());
  executor.reset_stats();
  EXPECT_TRUE(executor.stats().empty());
}

TEST_F(ExecutorTest, RegistryAccessor) { EXPECT_EQ(&executor.registry(), &registry); }

// ------------------------------------------------------------------- to_json

TEST_F(ExecutorTest, ResultToJsonOnSuccess) {
  ToolResult r = executor.execute(make_call("describe_symbol", {{"symbol", "car"}}, "c1"), {});
  json j = r.to_json();
  EXPECT_EQ(j["id"], "c1");
  EXPECT_EQ(j["success"], true);
  EXPECT_EQ(j["content"], "described car");
  EXPECT_TRUE(j["error"].is_null());
  ASSERT_TRUE(j.contains("error"));
  ASSERT_TRUE(j["metadata"].is_object());
  EXPECT_TRUE(j["metadata"]["execution_time_ms"].is_number());
  EXPECT_EQ(j["metadata"]["safety_level"], "safe");
  EXPECT_EQ(j["metadata"]["approved"], true);
  EXPECT_EQ(j.size(), 5u);
  EXPECT_EQ(j["metadata"].size(), 3u);
}

TEST_F(ExecutorTest, ResultToJsonOnFailure) {
  ToolResult r = executor.execute(make_call("nope", json::object(), std::nullopt), {});
  json j = r.to_json();
  EXPECT_TRUE(j["id"].is_null());
  EXPECT_EQ(j["success"], false);
  EXPECT_EQ(j["content"], "Unknown tool: nope");
  EXPECT_EQ(j["error"], "Unknown tool: nope");
  EXPECT_TRUE(j["metadata"]["safety_level"].is_null());
  EXPECT_EQ(j["metadata"]["approved"], false);
}

TEST(ToolResultJson, DangerousDeniedShape) {
  ToolResult r;
  r.id = "x";
  r.success = false;
  r.content = "User denied tool execution";
  r.error = "User denied tool execution";
  r.safety_level = SafetyLevel::Dangerous;
  r.execution_time_ms = 1.5;
  json j = r.to_json();
  EXPECT_EQ(j, json::parse(R"({"id":"x","success":false,"content":"User denied tool execution",
    "error":"User denied tool execution",
    "metadata":{"execution_time_ms":1.5,"safety_level":"dangerous","approved":false}})"));
}

// --------------------------------------------------------------- execute_all

namespace {

// Cancelled once `after` calls have been checked.
struct CancelAfter : CallContext {
  explicit CancelAfter(int n) : after(n) {}
  bool cancelled() const override { return checks++ >= after; }
  int after;
  mutable int checks = 0;
};

}  // namespace

TEST_F(ExecutorTest, ExecuteAllKeepsOrderAndIds) {
  std::vector<ToolCall> calls = {make_call("describe_symbol", {{"symbol", "a"}}, "c1"),
                                 make_call("nope", json::object(), "c2"),
                                 make_call("eval_form", {{"form", "1"}}, "c3"),
                                 make_call("write_file", {{"path", "p"}, {"content", "c"}}, "c4")};
  auto results = executor.execute_all(calls, {});
  ASSERT_EQ(results.size(), 4u);
  for (std::size_t i = 0; i < calls.size(); ++i) expect_well_formed(results[i], calls[i]);
  EXPECT_TRUE(results[0].success);
  EXPECT_EQ(results[1].error, "Unknown tool: nope");
  EXPECT_TRUE(results[2].success);
  EXPECT_EQ(results[3].error, "User denied tool execution");
}

TEST_F(ExecutorTest, ExecuteAllEmpty) { EXPECT_TRUE(executor.execute_all({}, {}).empty()); }

TEST_F(ExecutorTest, ExecuteAllStopsWhenCancelled) {
  CancelAfter ctx(2);
  HookLog log;
  ExecutionOptions options;
  options.context = &ctx;
  options.hooks = {log.hook()};
  std::vector<ToolCall> calls;
  for (int i = 0; i < 5; ++i) calls.push_back(make_call("describe_symbol", {{"symbol", "s"}}, "c" + std::to_string(i)));
  auto results = executor.execute_all(calls, options);
  ASSERT_EQ(results.size(), 5u);
  EXPECT_TRUE(results[0].success);
  EXPECT_TRUE(results[1].success);
  for (int i = 2; i < 5; ++i) {
    expect_well_formed(results[i], calls[i]);
    EXPECT_FALSE(results[i].success);
    EXPECT_EQ(results[i].error, "Cancelled");
    EXPECT_EQ(results[i].content, "Cancelled");
  }
  EXPECT_EQ(describe_runs, 2);
  // The cancelled calls are reported through the error hook too.
  int errors = 0;
  for (const auto& e : log.events) errors += e.phase == HookPhase::Error;
  EXPECT_EQ(errors, 3);
}

TEST_F(ExecutorTest, ExecuteAllCancelledFromTheStart) {
  CancelAfter ctx(0);
  ExecutionOptions options;
  options.context = &ctx;
  auto results = executor.execute_all({make_call("describe_symbol", {{"symbol", "a"}}, "a"),
                                       make_call("write_file", {{"path", "p"}, {"content", "c"}}, "b")},
                                      options);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].error, "Cancelled");
  EXPECT_EQ(results[0].id, "a");
  EXPECT_EQ(results[1].error, "Cancelled");
  EXPECT_EQ(results[1].id, "b");
  EXPECT_EQ(describe_runs, 0);
  EXPECT_EQ(write_runs, 0);
}

TEST_F(ExecutorTest, ExecuteAllCancelledDuringAHandler) {
  struct Flag : CallContext {
    bool flag = false;
    bool cancelled() const override { return flag; }
  } ctx;
  registry.register_tool(make_tool("cancel_me", {}, {}, SafetyLevel::Safe, [&](const json&, CallContext&) {
    ctx.flag = true;  // e.g. C-g while the first call ran
    return ToolOutput{true, "first"};
  }));
  ExecutionOptions options;
  options.context = &ctx;
  auto results = executor.execute_all(
      {make_call("cancel_me", json::object(), "1"), make_call("describe_symbol", {{"symbol", "a"}}, "2")}, options);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].success);
  EXPECT_EQ(results[1].error, "Cancelled");
  EXPECT_EQ(describe_runs, 0);
}

TEST_F(ExecutorTest, ConcurrentExecution) {
  std::atomic<int> runs{0};
  registry.register_tool(make_tool("counter", {}, {}, SafetyLevel::Safe, [&](const json&, CallContext&) {
    runs.fetch_add(1);
    return ToolOutput{true, "ok"};
  }));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) EXPECT_TRUE(executor.execute(make_call("counter"), {}).success);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(runs.load(), 2000);
  EXPECT_EQ(executor.stats()["counter"].calls, 2000u);
  EXPECT_EQ(executor.stats()["counter"].failures, 0u);
}

// ----------------------------------------------------------------------------
// The steps Lisp's EXECUTE-TOOL-CALLS takes from the executor, and the
// standing hooks every call runs.

TEST_F(ExecutorTest, PrepareLooksUpAndValidatesAsExecuteDoes) {
  PreparedCall unknown = executor.prepare("nonexistent", json::object());
  EXPECT_EQ(unknown.tool, nullptr);
  EXPECT_EQ(unknown.error, "Unknown tool: nonexistent");

  PreparedCall missing = executor.prepare("describe-symbol", json::object());
  ASSERT_NE(missing.tool, nullptr);
  EXPECT_EQ(missing.tool->name, "describe_symbol");
  EXPECT_EQ(missing.error, executor.execute({"1", "describe_symbol", json::object()}, {}).error);

  PreparedCall ok = executor.prepare("describe_symbol", {{"symbol", "car"}, {"package", nullptr}});
  EXPECT_FALSE(ok.error);
  EXPECT_EQ(ok.arguments, json({{"symbol", "car"}}));  // a null member is absent
}

TEST_F(ExecutorTest, RecordCallCountsLikeExecute) {
  executor.record_call("describe_symbol", false, 2.5);
  executor.execute({"1", "describe_symbol", {{"symbol", "car"}}}, {});
  ToolStats stats = executor.stats().at("describe_symbol");
  EXPECT_EQ(stats.calls, 2u);
  EXPECT_EQ(stats.failures, 1u);
  EXPECT_GE(stats.total_ms, 2.5);
}

TEST(StandingHooks, RunForEveryCallAfterTheCallersHooksAndNeverBreakIt) {
  Registry registry;
  registry.register_tool(make_tool("echo", {param("x")}, {"x"}));
  Executor executor(registry);
  std::vector<std::string> seen;
  CallContext* context_seen = nullptr;
  executor.add_standing_hook([&](HookPhase phase, const std::string& name, const json&, const ToolResult*,
                                 CallContext& context) {
    seen.push_back("standing " + std::string(to_string(phase)) + " " + name);
    context_seen = &context;
    throw std::runtime_error("a failing standing hook changes nothing");
  });
  ExecutionOptions options;
  options.hooks.push_back([&](HookPhase phase, const std::string&, const json&, const ToolResult*) {
    seen.push_back("caller " + std::string(to_string(phase)));
  });
  NullCallContext context;
  options.context = &context;

  ToolResult ok = executor.execute({"1", "echo", {{"x", "a"}}}, options);
  EXPECT_TRUE(ok.success);
  ToolResult unknown = executor.execute({"2", "nope", json::object()}, options);
  EXPECT_EQ(unknown.error, "Unknown tool: nope");
  EXPECT_EQ(seen, (std::vector<std::string>{"caller before", "standing before echo", "caller after",
                                            "standing after echo", "caller error", "standing error nope"}));
  EXPECT_EQ(context_seen, &context);
}

TEST_F(ExecutorTest, ARuleDenialAnswersItsOwnMessageAsWritten) {
  ExecutionOptions options;
  options.approve = [](const Tool&, const json&) {
    ApprovalDecision decision{ApprovalKind::Denied, {}};
    decision.message = "write_file is dangerous; run the server with --allow-dangerous to allow it.";
    return decision;
  };
  ToolResult result = executor.execute({"1", "write_file", {{"path", "/x"}, {"content", "c"}}}, options);
  EXPECT_FALSE(result.success);
  EXPECT_EQ(result.error, "write_file is dangerous; run the server with --allow-dangerous to allow it.");
  EXPECT_EQ(result.content, result.error);
  EXPECT_FALSE(result.approved);
  EXPECT_EQ(write_runs, 0);
}

TEST_F(ExecutorTest, ADenialWithAReasonTellsTheModelWhy) {
  ExecutionOptions options;
  options.approve = [](const Tool&, const json&) {
    ApprovalDecision decision{ApprovalKind::Denied, {}};
    decision.reason = "use a temporary directory instead";
    return decision;
  };
  ToolResult result = executor.execute({"1", "write_file", {{"path", "/x"}, {"content", "c"}}}, options);
  EXPECT_FALSE(result.success);
  EXPECT_EQ(result.error, "Denied by user: use a temporary directory instead");
  EXPECT_FALSE(result.approved);
  EXPECT_EQ(write_runs, 0);
}
