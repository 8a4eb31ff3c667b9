// Runs tool calls (contract tool-execution): lookup → argument validation →
// safety gate (approval for dangerous tools) → hooks → handler → result.
// Every front door (Elisp, Lisp, MCP) goes through here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/call_context.hpp"
#include "core/registry.hpp"

namespace agentq {

struct ToolCall {
  std::optional<std::string> id;  // echoed in the result as given
  std::string name;
  json arguments = json::object();
};

struct ToolResult {
  std::optional<std::string> id;
  bool success = false;
  std::string content;               // always set; on failure the error text
  std::optional<std::string> error;  // set exactly when !success
  double execution_time_ms = 0;
  std::optional<SafetyLevel> safety_level;  // nullopt for an unknown tool
  bool approved = false;  // ran with permission: safe/cautious, or dangerous and approved
  std::optional<std::int64_t> condition_id;  // a held error's id (ToolOutput::condition_id)
  std::string structured;  // ToolOutput::structured: JSON text, or empty

  // {"id","success","content","error"(null),"metadata":{"execution_time_ms","safety_level","approved"}},
  // and metadata "condition_id" when an error is held.
  json to_json() const;
};

enum class ApprovalKind { Approved, Denied, Modified };

struct ApprovalDecision {
  ApprovalDecision() = default;
  ApprovalDecision(ApprovalKind kind, json arguments, std::string reason = {}, std::string message = {})
      : kind(kind), arguments(std::move(arguments)), reason(std::move(reason)), message(std::move(message)) {}

  ApprovalKind kind = ApprovalKind::Denied;
  json arguments;  // the new arguments when kind == Modified
  // When denied: what the person said, for the model ("Denied by user:
  // REASON"); empty for a plain denial.
  std::string reason;
  // When denied by a rule rather than a person (the headless MCP server's
  // "no dangerous tools"): the whole text of the denied call, as written,
  // instead of the tool's denied message.  Empty ⇒ denied_text(tool, reason).
  std::string message;
};

// Asked on the calling thread for every dangerous tool.  May take minutes.
// Throwing counts as a denial.
using ApprovalFunction = std::function<ApprovalDecision(const Tool& tool, const json& args)>;

enum class HookPhase { Before, After, Error };
std::string_view to_string(HookPhase phase);  // "before" "after" "error"

// Observability hook.  RESULT is null for Before.  A hook that throws is
// ignored: it changes nothing else.
using Hook = std::function<void(HookPhase phase, const std::string& tool_name,
                                const json& args, const ToolResult* result)>;

// A hook that every call runs, whoever made it, after the caller's own
// hooks (Lisp's *TOOL-EXECUTION-HOOKS*).  CONTEXT is the call's: a hook
// that waits for other work can be stopped by C-g like the call.
using StandingHook = std::function<void(HookPhase phase, const std::string& tool_name, const json& args,
                                        const ToolResult* result, CallContext& context)>;

// What was settled about a dangerous call before the call reached the
// executor (in Emacs, asked before its job took the one runner, so that no
// caller waits behind a question): its check already failed with FAILURE,
// or it passed and the person gave DECISION.  Either way the check is not
// run again and the approval function is not asked.
struct SettledCall {
  std::optional<std::string> failure;
  ApprovalDecision decision;
};

// Asked for each dangerous call whose arguments are valid, before its
// check: what was settled about a call of TOOL with ARGS (normalized), or
// nullopt for nothing (the call is checked and asked about as usual).
using SettledFunction = std::function<std::optional<SettledCall>(const Tool& tool, const json& args)>;

class ClientLogLevel;  // core/mcp_logging.hpp

struct ExecutionOptions {
  ApprovalFunction approve;  // empty ⇒ dangerous tools are denied
  SettledFunction settled;   // empty ⇒ nothing settled ahead
  std::vector<Hook> hooks;
  CallContext* context = nullptr;  // null ⇒ a NullCallContext
  // The client's logging/setLevel choice, which McpServer sets (null: the
  // transport keeps none; the request is still answered).
  ClientLogLevel* log_level = nullptr;
};

struct ToolStats {
  std::uint64_t calls = 0;
  std::uint64_t failures = 0;
  double total_ms = 0;
};

// What a caller that runs a call's later steps itself (Lisp's
// EXECUTE-TOOL-CALLS: approval, hooks and handler in Lisp) takes from the
// executor: the tool, and the arguments as its handler sees them.
struct PreparedCall {
  ToolPtr tool;                      // null for an unknown tool
  std::optional<std::string> error;  // "Unknown tool: …" or the validation message
  json arguments;                    // normalized (no null members), when !error
};

// The text of a denied dangerous call, unless the tool has its own.
inline constexpr std::string_view kDeniedMessage = "User denied tool execution";

// What a denied call of TOOL answers: its denied_message, or kDeniedMessage.
// When the person gave a REASON: "Denied by user: REASON", or the tool's
// own text followed by "The user said: REASON".
std::string denied_text(const Tool& tool, const std::string& reason = {});

class Executor {
 public:
  explicit Executor(Registry& registry);

  // Never throws for bad input: every problem becomes a failed ToolResult.
  //   unknown tool       → "Unknown tool: NAME"
  //   bad arguments      → validate_arguments' message
  //   check fails        → the check's message (before any approval)
  //   dangerous, denied  → denied_text(tool): "User denied tool execution"
  //   handler throws     → "Tool error: MESSAGE"
  //   handler failure    → its text
  // Hooks: Before just before the handler; After on success; Error on every
  // failure (also unknown tool, invalid arguments, denial).
  ToolResult execute(const ToolCall& call, const ExecutionOptions& options) const;

  // execute() for a call whose caller already looked its tool up (TOOL,
  // the registry's tool named CALL.name) and found CALL.arguments valid for
  // it (validate_arguments): both are not done again.
  ToolResult execute_validated(const ToolCall& call, ToolPtr tool, const ExecutionOptions& options) const;

  // In order; once options.context->cancelled(), the rest get "Cancelled".
  std::vector<ToolResult> execute_all(const std::vector<ToolCall>& calls,
                                      const ExecutionOptions& options) const;

  // Lookup and argument validation, as execute() does them (not the
  // tool's check, which its caller runs).  Never throws for bad input.
  PreparedCall prepare(const std::string& name, const json& args) const;

  // Counts a call that ran outside execute() (see PreparedCall).
  void record_call(const std::string& name, bool success, double ms) const { record(name, success, ms); }

  // Adds a hook every later call runs.  Call before any call runs (the
  // composition root does), not while calls run.
  void add_standing_hook(StandingHook hook) { standing_hooks_.push_back(std::move(hook)); }

  // Per-tool counters, by resolved tool name.
  std::map<std::string, ToolStats> stats() const;
  void reset_stats();

  Registry& registry() const { return registry_; }

 private:
  void record(const std::string& name, bool success, double ms) const;
  ToolResult run(const ToolCall& call, ToolPtr tool, bool validated, const ExecutionOptions& options) const;
  void run_hooks(const ExecutionOptions& options, CallContext& context, HookPhase phase, const std::string& tool_name,
                 const json& args, const ToolResult* result) const noexcept;

  Registry& registry_;
  std::vector<StandingHook> standing_hooks_;
  mutable std::mutex stats_mutex_;
  mutable std::map<std::string, ToolStats> stats_;
};

}  // namespace agentq
