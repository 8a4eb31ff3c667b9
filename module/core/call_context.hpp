// What a running tool call may ask of whoever started it.  The Emacs glue
// implements it with env->process_input (C-g) and a spinner; the MCP server
// with a cancellation flag; tests with plain objects.
#pragma once

#include <cstdint>
#include <string>

namespace agentq {

enum class McpLogLevel : int;  // core/mcp_logging.hpp

// What the host (Emacs) answered a request of a running job.
struct HostAnswer {
  bool ok = false;
  std::string text;  // the printed value, or what went wrong
  // Nonzero: Emacs will answer later, under this key, from a command of
  // the person (the REPL's debugger); only an asynchronous call can wait.
  std::uint64_t later = 0;
};

class CallContext {
 public:
  virtual ~CallContext() = default;

  // Called every few milliseconds while a handler waits for work on another
  // thread.  Returns true when the caller wants the call abandoned (C-g,
  // notifications/cancelled); the handler then interrupts its work and
  // returns promptly.  Runs on the calling thread.
  virtual bool poll() { return false; }

  // True once the caller has abandoned the whole batch: the executor gives
  // the remaining calls a "Cancelled" result without running them.
  virtual bool cancelled() const { return false; }

  // True when poll() asking to stop means a cancellation (an asynchronous
  // call's sly-agent-q-cancel, MCP's notifications/cancelled), not C-g.
  virtual bool interrupt_is_cancel() const { return false; }

  // The runtime queued a job for this call, with this id: what a
  // cancellation names (Runtime::cancel), from any thread.
  virtual void job_queued(std::uint64_t job_id) { (void)job_id; }

  // True when an error in this call's evaluation may stop in the REPL's
  // debugger (the person chooses a restart) instead of failing the call:
  // only for the REPL's own evaluations, never for a model's tool call.
  virtual bool wants_debugger() const { return false; }

  // Nonzero when the caller follows the evaluation interactively (the REPL):
  // what it writes is handed to output() as it is written, and left out of
  // the result; its values are kept in the session under this key
  // (AGENT-Q::REPL-VALUE).  Zero, the usual: output is in the result.
  virtual std::uint64_t interactive_key() const { return 0; }

  // Output of an interactive evaluation (see interactive_key), in order,
  // every few milliseconds while it runs and the rest before the call
  // returns.  Runs on the calling thread.
  virtual void output(const std::string& text) { (void)text; }

  // Evaluates FORM (Elisp source text) for the running job, which waits for
  // the answer: Lisp asking Emacs.  Runs on the calling thread, the one
  // that started the call.  A context with no Emacs behind it refuses.
  virtual HostAnswer eval_in_host(const std::string& form) {
    (void)form;
    return {false, "no Emacs is waiting for this call, so it cannot evaluate Emacs Lisp"};
  }

  // True when the call is the person's own (a command of theirs: the REPL,
  // the evaluate commands, C-c C-c in a Lisp buffer): its code runs as
  // typed.  False, the default, for an agent's call (the chat's model, an
  // MCP client, the Lisp API, a call nobody marked): its code is read
  // first and what touches the world asks the person.
  virtual bool user_origin() const { return false; }

  // True when the caller follows a non-interactive evaluation's output as
  // it is printed (MCP progress notifications): a copy of it is handed to
  // output() meanwhile, and the result still has it all.
  virtual bool streams_output() const { return false; }

  // True when the caller takes structured results (MCP's structuredContent):
  // a tool with an output schema then makes ToolOutput::structured too.
  virtual bool wants_structured() const { return false; }

  // True when this caller's next call usually follows within microseconds
  // (Emacs's own synchronous calls: an agent's tool calls, a completion
  // after each key): after its job the runtime's worker polls a short while
  // for the next one instead of sleeping.  False (an MCP client, an
  // asynchronous call): the worker sleeps at once, since its poll would
  // keep a CPU from the rest of the machine for a call that comes later.
  virtual bool calls_in_bursts() const { return false; }

  // True when this call does not start its evaluation but takes over the
  // one the worker already runs for it (core/idle_reader.hpp): it waits
  // for it as its owner, with its time limit from when it started.
  virtual bool adopts_running_job() const { return false; }

  // The evaluation this thread ran for the call was taken over by another
  // thread (see adopts_running_job), which reports the call: this thread's
  // run of it is not counted, nor hooked.  Marked by the runtime.
  virtual void mark_superseded() {}
  virtual bool superseded() const { return false; }

  // Asks whoever stands behind the call whether an agent's code may touch
  // the world: FORM is the Emacs Lisp approval question
  // (sly-agent-q--approve-agent-code …); the answer's text is what it
  // printed ("approved", ("denied" . REASON), ("modified" . CODE), or
  // ("refused" . TEXT) for a denial to be shown as it is).  By default
  // Emacs is asked.
  virtual HostAnswer approve_in_host(const std::string& form) { return eval_in_host(form); }

  // Something the caller's client may want to know and would not see in
  // the result (MCP's notifications/message): a call denied, refused or
  // waiting for the person.  TOOL names the tool it is about.  Sent only
  // when the client asked for LEVEL (logging/setLevel), bounded per call;
  // by default dropped.  Runs on the calling thread.
  virtual void log_to_client(McpLogLevel level, const std::string& message, const std::string& tool) {
    (void)level, (void)message, (void)tool;
  }
};

// A context that never quits: for tests and internal callers.
class NullCallContext final : public CallContext {};

}  // namespace agentq
