// Tool calls and their results as Emacs values, and what a call made from
// Emacs needs while it runs: the current Env, C-g, approvals and hooks.
// Main thread only, inside a module call.
#pragma once

#include <emacs-module.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "emacs/convert.hpp"
#include "emacs/env.hpp"

namespace agentq::emacs {

// The Env of the module call running on this thread, or null (another
// thread, or between module calls): Elisp handlers reached through the
// executor use it.
const Env* current_env();

class CurrentEnv {
 public:
  explicit CurrentEnv(const Env& env);
  ~CurrentEnv();
  CurrentEnv(const CurrentEnv&) = delete;
  CurrentEnv& operator=(const CurrentEnv&) = delete;

 private:
  const Env* previous_;
};

// Waiting for Lisp on the main thread: C-g is seen through process_input,
// and a progress function (sly-agent-q--waiting) is called every 100 ms
// once the wait is longer than 200 ms.  Lisp's requests of Emacs
// (eval-in-emacs) are served here.
class EmacsCallContext final : public CallContext {
 public:
  // STRUCTURED: the caller takes structured results (an MCP request).
  explicit EmacsCallContext(const Env& env, bool structured = false);
  // USER: whether the call is the person's own, which the caller knows.
  EmacsCallContext(const Env& env, bool structured, bool user);
  bool poll() override;
  bool wants_structured() const override { return structured_; }
  bool calls_in_bursts() const override { return true; }
  bool cancelled() const override { return quit_ || env_.exit_pending(); }
  HostAnswer eval_in_host(const std::string& form) override;
  bool user_origin() const override { return user_; }
  // Whether the call ran Elisp that may show progress (the wait's message,
  // a form Lisp had Emacs evaluate): what the caller then tidies.
  bool ran_elisp() const { return ran_elisp_; }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kFirstTick = std::chrono::milliseconds(200);
  static constexpr auto kTick = std::chrono::milliseconds(100);
  const Env& env_;
  Clock::time_point start_, next_tick_;
  bool quit_ = false;
  bool ran_elisp_ = false;
  bool user_;
  bool structured_;
};

// What a call's ORIGIN (a value of sly-agent-q-call-origin) makes it,
// given UI-ORIGIN (sly-agent-q-ui-origin's value), compared as text: the
// front end's own call for UI-ORIGIN, the person's own for "user" and for
// the front end's; anything else (nil, a symbol, other text) an agent's.
struct CallOrigin {
  bool user = false;
  bool ui = false;
};
CallOrigin call_origin(const Env& env, emacs_value origin, emacs_value ui_origin);

// Whether the call being made is the person's own: call_origin of the two
// variables' values now.  False when it cannot say (an agent's call: the
// safe side).
bool user_call(const Env& env);

// Serves an Emacs Lisp form for Lisp: (sly-agent-q--eval-for-lisp FORM).
// QUIT is set when C-g quit the form (the quit is left pending).
HostAnswer eval_elisp_for_lisp(const Env& env, const std::string& form, bool& quit);

// What an approval function's ANSWER means (:approved, (:denied REASON),
// (:modified ARGS); anything else denies).  ARGS that cannot be converted
// leave an error pending (NonLocalExit).
ApprovalDecision approval_decision(const Env& env, emacs_value answer);

// The Elisp approval FUNCTION (nil: none) and hook FUNCTIONS as the
// executor's; they call Elisp through ENV, which must outlive them.
ApprovalFunction elisp_approval(const Env& env, emacs_value function);
std::vector<Hook> elisp_hooks(const Env& env, emacs_value functions);
// One hook FUNCTION as the executor's.
Hook elisp_hook(const Env& env, emacs_value function);

emacs_value result_to_plist(const Env& env, const ToolResult& result);

// A call plist (or alist, hash table, JSON string; also the OpenAI shape
// {id, function: {name, arguments}}) → a ToolCall.  Throws ConversionError;
// ID gets the call's id when it could be read.
ToolCall to_tool_call(const Env& env, emacs_value value, std::optional<std::string>& id);


ToolResult invalid_call_result(std::optional<std::string> id, const std::string& message);

// A call as read from Emacs: converted, or already failed (its error result).
struct PendingCall {
  std::optional<ToolCall> call;
  ToolResult invalid;
};

// Emacs refused to hand over a value, e.g. a string with raw bytes.
extern const char* const kUnreadableValue;

// The options of calls made from Emacs: the Elisp APPROVAL function and
// HOOKS, and CONTEXT, which must outlive them.
ExecutionOptions options_for(const Env& env, emacs_value approval, emacs_value hooks, CallContext& context);

// The call that READ converts, or its error result when it cannot be
// converted (a quit still quits: NonLocalExit).
template <typename Read>
PendingCall read_call(const Env& env, Read read) {
  PendingCall pending;
  std::optional<std::string> id;
  try {
    pending.call = read(id);
  } catch (const ConversionError& e) {
    pending.invalid = invalid_call_result(id, e.what());
  } catch (const NonLocalExit&) {
    // Emacs refused to hand over a value (e.g. a string with raw bytes);
    // only this call fails.  A quit still quits.
    if (!env.clear_unless_quit()) throw;
    pending.invalid = invalid_call_result(id, kUnreadableValue);
  }
  return pending;
}

// The elements of CALLS, a proper list (nil: none).  Throws ConversionError.
std::vector<emacs_value> call_values(const Env& env, emacs_value calls);

}  // namespace agentq::emacs
