// Tool calls that do not block Emacs (sly-agent-q-execute-tool-calls-async).
//
// A runner thread executes the submitted batches in order, through the same
// executor as synchronous calls.  What needs Emacs (an approval, a hook, an
// Elisp handler, Lisp's eval-in-emacs) is queued for the main thread and a
// byte is written to a pipe (env->open_channel); the pipe process's filter
// calls serve(), which runs the queued work and hands back the finished
// batches, whose callbacks then run in the filter, outside any module call.
#pragma once

#include <emacs-module.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <stdexcept>
#include <vector>

#include "core/executor.hpp"
#include "core/json_fast.hpp"
#include "emacs/calls.hpp"
#include "emacs/env.hpp"

namespace agentq::emacs::async {

// Work for the main thread was abandoned: its batch was cancelled, or no
// Emacs serves the queue.
class NotServed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The pipe whose process filter calls serve(): its write end.
void set_channel(int fd);
bool has_channel();

// A dangerous call of a job, settled on the main thread when the job was
// submitted: its check ran there, and unless it failed, the person is
// asked before the job may take the runner (release() gives the answers).
// The runner's call with the same tool and arguments then takes this in
// place of its check and question (ExecutionOptions::settled).
struct AheadCall {
  std::string tool;
  json arguments;                            // normalized, as the approval function gets them
  std::optional<std::string> failure;        // the check failed: nothing to ask
  std::optional<ApprovalDecision> decision;  // the person's answer (release())
  bool used = false;                         // taken by a call (runner only)
  bool asks() const { return !failure; }
};

// Queues a batch.  APPROVAL and HOOKS are the approval function and the
// hook list at submission, as global refs the batch now owns (freed by
// serve() when the batch is handed back).  DEBUGGER: an error in its
// evaluations stops in the REPL's debugger (the REPL's own calls only).
// INTERACTIVE: its evaluations are interactive (CallContext::interactive_key,
// with the job id as the key), their output handed back by serve() as it
// comes.  AHEAD: its dangerous calls settled now.  HOLD: the batch waits,
// off the queue, until release() (its questions answered).  Returns the
// job id.
std::uint64_t submit(std::vector<PendingCall> calls, emacs_value approval, emacs_value hooks, bool has_hooks,
                     bool debugger = false, bool interactive = false, std::vector<AheadCall> ahead = {},
                     bool hold = false, bool user = false);

// Queues the held job ID, its questions answered: DECISIONS, in the order
// of its AheadCalls that ask (a missing one denies).  False when no such
// job is held.
bool release(std::uint64_t id, std::vector<ApprovalDecision> decisions);

// The person's later answer (the REPL's debugger) to the request that
// Emacs answered with (later . KEY).  False when nothing waits for KEY
// (its batch was cancelled, or the key is unknown).
bool answer_later(std::uint64_t key, HostAnswer answer);

// True while a request waits for its later answer under KEY.
bool later_pending(std::uint64_t key);

// One MCP message (JSON-RPC 2.0: a tools/call request, a batch…): parsed
// once, by whoever read it, or the text the dispatcher is to answer (it
// could not be parsed).
struct McpMessage {
  std::optional<json> parsed;
  std::string text;
  json id;  // the request's id, which its log messages name (null: a batch)
  // Or, instead of PARSED: a tools/call read by the fast reader
  // (parse_simple_tools_call), whose envelope was never made a tree.
  std::optional<SimpleToolsCall> simple;
};

// Queues MESSAGE to run on the runner through the dispatcher (McpServer)
// with APPROVAL and HOOKS as for submit().  serve() hands it back as
// (ID . RESPONSE-TEXT), RESPONSE-TEXT nil when nothing is to be answered.
// AHEAD and HOLD as for submit().  ANSWER_CHANNEL (open_answer_channel,
// 0 for none): the runner writes the response there itself when it can,
// and serve() then hands back (ID . nil).  ON_WORKER: a plain evaluation
// (mcp::is_plain_evaluation) with no hook and nothing to ask may run on
// the Lisp worker itself, when it and the runner are idle (the runner
// takes it over if it lasts: see WorkerLane in async_calls.cpp).
std::uint64_t submit_mcp(McpMessage message, emacs_value approval, emacs_value hooks, bool has_hooks,
                         std::vector<AheadCall> ahead = {}, bool hold = false, std::uint64_t answer_channel = 0,
                         bool on_worker = false);

// How many batches the worker ran itself (ON_WORKER, or read from a
// bridge) and answered, how many of those the runner took over (or back,
// unread); how many requests it read from a bridge's request channel and
// ran (DIRECT), and how many of those it handed to Emacs's thread instead.
struct InlineCounts {
  std::uint64_t on_worker = 0;
  std::uint64_t taken_over = 0;
  std::uint64_t direct = 0;
  std::uint64_t declined = 0;
};
InlineCounts inline_counts();

// A bridge's answer channel (sys/answer_fifo.hpp): the FIFO at PATH,
// opened for the runner to write a connection's answers on.  Returns its
// id; throws std::runtime_error saying why it cannot be opened.
std::uint64_t open_answer_channel(const std::string& path);
// Closes channel ID (its connection ended), and its request channel,
// cancelling the request read there that runs; unknown ids are ignored.
void close_answer_channel(std::uint64_t id);

// The bridge's request channel beside answer channel CHANNEL: the FIFO at
// PATH (checked as the answer channel is, opened for reading), which the
// idle Lisp worker reads itself: a plain evaluate_lisp request there runs
// on the worker with nothing of Emacs's (no Elisp job, no hook) when
// allow_direct_requests() said so and nothing else runs or waits; any
// other, or then, is handed to Emacs's thread as if it came on the socket
// (sly-agent-q--mcp-direct-line).  Throws std::runtime_error saying why
// it cannot be opened.
void open_request_channel(const std::string& path, std::uint64_t channel);

// Whether requests read from a bridge may run without Emacs's thread
// (Elisp: sly-agent-q-mcp-lisp-on-worker, and no tool-call hook).
void allow_direct_requests(bool allowed);
// And whether the runtime runs with the options' global values
// (given_options.hpp); both must hold.
void set_options_global(bool global);

// A request read from a bridge runs now (Elisp has no job for it: what
// asks Lisp synchronously would wait behind it).
bool direct_request_running();

// Cancels the request ID read from channel CHANNEL's bridge, if it runs
// now: it is interrupted and never answered.  False when it does not.
bool cancel_direct(std::uint64_t channel, const json& id);
// How many answers went out on a channel, and how many were handed back
// to Emacs instead (a channel given, but the answer could not go on it).
struct AnswerCounts {
  std::uint64_t direct = 0;
  std::uint64_t through_emacs = 0;
};
AnswerCounts answer_counts();

// Takes job ID off the queue (or out of the held jobs) if the runner has
// not taken it yet: it never runs and is never handed back.  False when it
// is running, finished or unknown.  On the main thread (it frees the job's
// global refs).
bool withdraw(const Env& env, std::uint64_t id);

// Cancels job ID: a running Lisp evaluation is interrupted, calls not yet
// run fail with INTERRUPTED (a held job once released).  False when no
// such job is held, queued or running.
bool cancel(std::uint64_t id);

// The REPL's C-c C-c on job ID, a batch submitted with the debugger: its
// running evaluation stops in the debugger with CONTINUE
// (Runtime::break_job).  False when ID is not running or has no debugger.
bool break_into(std::uint64_t id);

// On the main thread (the pipe's filter): runs the queued work, then
// returns ((ID . RESULTS) …) for the batches finished since the last call,
// each preceded by (ID :output TEXT) when an interactive batch wrote
// output not handed back yet; the running batch's output comes last.
// NO_QUESTIONS (while the person answers a question): approvals stay
// queued, the rest is served, even inside an outer serve() that asks.
emacs_value serve(const Env& env, bool no_questions = false);

// On the main thread, inside a synchronous call that waits for Lisp: runs
// the work asynchronous calls queued for the main thread (not their
// callbacks).  An asynchronous job may hold the worker while it waits for
// Emacs; a synchronous call queued behind it would otherwise wait out its
// whole time limit.
void serve_work_while_waiting(const Env& env);

// Runs WORK with an Env on the main thread and waits for it: at once when
// this is the main thread inside a module call, else through the queue.
// Throws NotServed when the work was abandoned.  QUESTION: the work asks
// the person (an approval), so serve(…, no_questions) leaves it queued.
void run_on_main(const std::function<void(const Env&)>& work, bool question = false);

}  // namespace agentq::emacs::async
