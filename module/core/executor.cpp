#include "core/executor.hpp"

#include "core/mcp_logging.hpp"

#include <exception>
#include <utility>

#include "core/validate.hpp"

namespace agentq {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kCancelled = "Cancelled";

// Time spent executing a call, leaving out the time a person takes to
// answer an approval prompt.
class Stopwatch {
 public:
  Stopwatch() : started_(Clock::now()) {}
  void pause() {
    if (running_) {
      elapsed_ += Clock::now() - started_;
      running_ = false;
    }
  }
  void resume() {
    if (!running_) {
      started_ = Clock::now();
      running_ = true;
    }
  }
  double ms() {
    pause();
    return std::chrono::duration<double, std::milli>(elapsed_).count();
  }

 private:
  Clock::time_point started_;
  Clock::duration elapsed_{};
  bool running_ = true;
};

void fail(ToolResult& result, std::string message) {
  result.success = false;
  result.content = message;
  result.error = std::move(message);
}

bool has_null_member(const json& args) {
  if (!args.is_object()) return false;
  for (const auto& entry : args.items()) {
    if (entry.value().is_null()) return true;
  }
  return false;
}

// The arguments as the handler sees them: an object without null members
// (a null counts as absent).  Copies only when something must change.
const json& normalized_args(const json& args, json& storage) {
  if (args.is_null()) {
    storage = json::object();
    return storage;
  }
  if (!has_null_member(args)) return args;
  storage = json::object();
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (!it.value().is_null()) storage[it.key()] = it.value();
  }
  return storage;
}

ApprovalDecision ask_approval(const ExecutionOptions& options, const Tool& tool, const json& args) {
  if (!options.approve) return {};
  try {
    return options.approve(tool, args);
  } catch (...) {
    return {};  // a throwing approval function denies
  }
}

}  // namespace

// The text of a denial: the tool's own (propose_file_edit's "rejected —
// STOP …") or the usual one; what the person said, when they said why.
std::string denied_text(const Tool& tool, const std::string& reason) {
  if (!tool.denied_message.empty())
    return reason.empty() ? tool.denied_message : tool.denied_message + "\nThe user said: " + reason;
  return reason.empty() ? std::string(kDeniedMessage) : "Denied by user: " + reason;
}

std::string_view to_string(HookPhase phase) {
  switch (phase) {
    case HookPhase::Before: return "before";
    case HookPhase::After: return "after";
    case HookPhase::Error: return "error";
  }
  return "unknown";
}

json ToolResult::to_json() const {
  json metadata = json::object();
  metadata["execution_time_ms"] = execution_time_ms;
  metadata["safety_level"] = safety_level ? json(std::string(to_string(*safety_level))) : json(nullptr);
  metadata["approved"] = approved;
  if (condition_id) metadata["condition_id"] = *condition_id;
  json out = json::object();
  out["id"] = id ? json(*id) : json(nullptr);
  out["success"] = success;
  out["content"] = content;
  out["error"] = error ? json(*error) : json(nullptr);
  out["metadata"] = std::move(metadata);
  return out;
}

Executor::Executor(Registry& registry) : registry_(registry) {}

void Executor::run_hooks(const ExecutionOptions& options, CallContext& context, HookPhase phase,
                         const std::string& tool_name, const json& args, const ToolResult* result) const noexcept {
  // A failing hook never changes the call.
  for (const Hook& hook : options.hooks) {
    if (!hook) continue;
    try {
      hook(phase, tool_name, args, result);
    } catch (...) {
    }
  }
  for (const StandingHook& hook : standing_hooks_) {
    try {
      hook(phase, tool_name, args, result, context);
    } catch (...) {
    }
  }
}

PreparedCall Executor::prepare(const std::string& name, const json& args) const {
  PreparedCall prepared;
  try {
    prepared.tool = registry_.resolve(name);
    if (!prepared.tool) {
      prepared.error = "Unknown tool: " + name;
      return prepared;
    }
    prepared.error = validate_arguments(*prepared.tool, args);
    if (!prepared.error) {
      json storage;
      const json& normalized = normalized_args(args, storage);
      prepared.arguments = &normalized == &storage ? std::move(storage) : normalized;
    }
  } catch (const std::exception& e) {
    prepared.error = std::string("Tool error: ") + e.what();
  }
  return prepared;
}

ToolResult Executor::execute(const ToolCall& call, const ExecutionOptions& options) const {
  ToolPtr tool;
  try {
    tool = registry_.resolve(call.name);
  } catch (const std::exception& e) {
    Stopwatch clock;
    ToolResult result;
    result.id = call.id;
    fail(result, std::string("Tool error: ") + e.what());
    NullCallContext null_context;
    result.execution_time_ms = clock.ms();
    run_hooks(options, options.context ? *options.context : null_context, HookPhase::Error, call.name,
              call.arguments, &result);
    return result;
  }
  return run(call, std::move(tool), false, options);
}

ToolResult Executor::execute_validated(const ToolCall& call, ToolPtr tool, const ExecutionOptions& options) const {
  return run(call, std::move(tool), true, options);
}

namespace {

// Why CALL stops before anyone is asked, if it does: its arguments are
// invalid (unless VALIDATED already), a settled call failed, or the tool's
// check says so.  ARGS becomes the normalized arguments (kept in STORAGE
// when they differ from the call's); SETTLED, a dangerous tool's settled
// call (options.settled), if any.
std::optional<std::string> precondition_failure(const Tool& tool, bool validated, const ExecutionOptions& options,
                                                CallContext& context, const json*& args, json& storage,
                                                std::optional<SettledCall>& settled) {
  std::optional<std::string> message;
  if (!validated) message = validate_arguments(tool, *args);
  if (!message) {
    args = &normalized_args(*args, storage);
    if (tool.safety_level == SafetyLevel::Dangerous && options.settled) {
      try {
        settled = options.settled(tool, *args);
      } catch (...) {
        settled.reset();
      }
      if (settled && settled->failure) message = settled->failure->empty() ? "Tool failed" : *settled->failure;
    }
    if (tool.check && !settled) {
      try {
        message = tool.check(*args, context);
      } catch (const std::exception& e) {
        message = std::string("Tool error: ") + e.what();
      } catch (...) {
        message = "Tool error: unknown exception";
      }
      if (message && message->empty()) message = "Tool failed";
    }
  }
  return message;
}

// A dangerous tool's approval: the settled call's decision, or the
// person's, asked with CLOCK paused.  Why the call stops when denied;
// arguments the person modified replace ARGS (kept in STORAGE).
std::optional<std::string> approval_failure(const Tool& tool, const ExecutionOptions& options, Stopwatch& clock,
                                            std::optional<SettledCall>& settled, const json*& args, json& storage,
                                            ToolResult& result) {
  ApprovalDecision decision;
  if (settled) {
    decision = std::move(settled->decision);
  } else {
    clock.pause();
    decision = ask_approval(options, tool, *args);
    clock.resume();
  }
  switch (decision.kind) {
    case ApprovalKind::Approved:
      result.approved = true;
      return std::nullopt;
    case ApprovalKind::Modified: {
      // Run with the person's arguments, checked like the model's.
      result.approved = true;
      json modified = std::move(decision.arguments);
      // The approval may add its own (the review's hunks_applied…).
      std::optional<std::string> message = validate_arguments(tool, modified, true);
      json normalized;
      const bool copied = &normalized_args(modified, normalized) == &normalized;
      storage = copied ? std::move(normalized) : std::move(modified);
      args = &storage;
      return message;
    }
    case ApprovalKind::Denied:
    default:
      return decision.message.empty() ? denied_text(tool, decision.reason) : std::move(decision.message);
  }
}

// Runs TOOL's handler on ARGS; its output, or what it threw, goes into RESULT.
void run_handler(const Tool& tool, const json& args, CallContext& context, ToolResult& result) {
  try {
    ToolOutput output = tool.handler(args, context);
    result.condition_id = output.condition_id;
    result.structured = std::move(output.structured);
    if (output.success) {
      result.success = true;
      result.content = std::move(output.text);
      result.error.reset();
    } else {
      fail(result, output.text.empty() ? std::string("Tool failed") : std::move(output.text));
    }
  } catch (const std::exception& e) {
    fail(result, std::string("Tool error: ") + e.what());
  } catch (...) {
    fail(result, "Tool error: unknown exception");
  }
}

}  // namespace

ToolResult Executor::run(const ToolCall& call, ToolPtr tool, bool validated, const ExecutionOptions& options) const {
  Stopwatch clock;
  ToolResult result;
  result.id = call.id;
  NullCallContext null_context;
  CallContext& context = options.context ? *options.context : null_context;

  if (!tool) {
    if (!result.error) fail(result, "Unknown tool: " + call.name);
    result.execution_time_ms = clock.ms();
    run_hooks(options, context, HookPhase::Error, call.name, call.arguments, &result);
    return result;
  }

  const std::string& name = tool->name;
  result.safety_level = tool->safety_level;
  // Safe and cautious tools need no permission; dangerous ones get it below.
  result.approved = tool->safety_level != SafetyLevel::Dangerous;

  // Whatever happens from here on, the result is recorded and hooked.
  json storage;  // normalized or modified arguments, when they differ from the call's
  const json* hook_args = &call.arguments;
  try {
    const json* args = &call.arguments;
    std::optional<SettledCall> settled;
    std::optional<std::string> message =
        precondition_failure(*tool, validated, options, context, args, storage, settled);
    if (!message && tool->safety_level == SafetyLevel::Dangerous) {
      message = approval_failure(*tool, options, clock, settled, args, storage, result);
      // A caller that only sees the result may want to know it was asked.
      if (message && !result.approved)
        context.log_to_client(McpLogLevel::Notice, name + " was denied: " + *message, name);
    }
    hook_args = args;

    if (message) {
      fail(result, std::move(*message));
    } else {
      run_hooks(options, context, HookPhase::Before, name, *args, nullptr);
      run_handler(*tool, *args, context, result);
    }

    result.execution_time_ms = clock.ms();
    // Taken over by another thread, which counts and hooks the call.
    if (context.superseded()) return result;
    record(name, result.success, result.execution_time_ms);
    run_hooks(options, context, result.success ? HookPhase::After : HookPhase::Error, name, *args, &result);
    return result;
  } catch (const std::exception& e) {
    // Only reached when the executor itself fails (e.g. out of memory).
    fail(result, std::string("Tool error: ") + e.what());
  } catch (...) {
    fail(result, "Tool error: unknown exception");
  }
  result.success = false;
  result.execution_time_ms = clock.ms();
  try {
    record(name, false, result.execution_time_ms);
  } catch (...) {
  }
  run_hooks(options, context, HookPhase::Error, name, *hook_args, &result);
  return result;
}

std::vector<ToolResult> Executor::execute_all(const std::vector<ToolCall>& calls,
                                              const ExecutionOptions& options) const {
  std::vector<ToolResult> results;
  results.reserve(calls.size());
  bool cancelled = false;
  for (const ToolCall& call : calls) {
    if (!cancelled && options.context && options.context->cancelled()) cancelled = true;
    if (!cancelled) {
      results.push_back(execute(call, options));
      continue;
    }
    ToolResult result;
    result.id = call.id;
    fail(result, std::string(kCancelled));
    ToolPtr tool = registry_.resolve(call.name);
    if (tool) result.safety_level = tool->safety_level;
    NullCallContext null_context;
    run_hooks(options, options.context ? *options.context : null_context, HookPhase::Error,
              tool ? tool->name : call.name, call.arguments, &result);
    results.push_back(std::move(result));
  }
  return results;
}

void Executor::record(const std::string& name, bool success, double ms) const {
  std::lock_guard lock(stats_mutex_);
  auto it = stats_.find(name);
  if (it == stats_.end()) it = stats_.emplace(name, ToolStats{}).first;
  ToolStats& s = it->second;
  ++s.calls;
  if (!success) ++s.failures;
  s.total_ms += ms;
}

std::map<std::string, ToolStats> Executor::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void Executor::reset_stats() {
  std::lock_guard lock(stats_mutex_);
  stats_.clear();
}

}  // namespace agentq
