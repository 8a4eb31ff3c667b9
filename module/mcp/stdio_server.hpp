// The MCP server over stdio: newline-delimited JSON-RPC in, one line per
// response out.  Two threads take turns at reading the input: the one
// reading answers the quick messages itself (initialize, ping, tools/list,
// errors) and runs a tools/call (or batch) itself too when none is running,
// so a call costs no thread hop beyond the one to ECL.  Should the call
// wait for more than a moment (its first poll), or be a batch, the reading
// passes to the other thread at once, so pings and cancellations are read
// and answered while it runs; calls read meanwhile queue and run one at a
// time, in order.  notifications/cancelled drops a queued call without a
// response (MCP: a cancelled request is not answered) and interrupts a
// running one, which answers its [ERROR] INTERRUPTED result.
//
// With inline Lisp (use_inline_lisp), while nothing runs the reading is
// the Lisp worker's own (core/idle_reader.hpp): it reads the next lines
// when they come and runs a plain evaluate_lisp call itself, so the usual
// call costs one wake-up, as in a Lisp REPL.  Anything else it reads
// (another message, a call with a progressToken) it hands, with the
// reading, to these threads.  An evaluation that lasts longer than a
// moment (2 ms) or asks its owner for something is taken over by a third
// thread, which then waits for it as the calls above are waited for, and
// the reading is these threads' again until all is quiet.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/idle_reader.hpp"
#include "core/jsonrpc.hpp"
#include "core/mcp_logging.hpp"
#include "mcp/cancellable_call.hpp"
#include "mcp/inline_lisp.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/line_writer.hpp"
#include "sys/take_over_alarm.hpp"

namespace agentq::mcp {

class StdioServer {
 public:
  // OPTIONS (approval, hooks) apply to every call; its context is replaced
  // by each call's own.  CANCEL_JOB stops a Lisp job (Runtime::cancel).
  // ALLOW_DANGEROUS: an agent's code that touches the world runs unasked
  // (--allow-dangerous), else it is refused.
  StdioServer(McpServer& server, ExecutionOptions options, McpCallContext::JobCanceller cancel_job,
              LineWriter& out, bool allow_dangerous = false);
  ~StdioServer();
  StdioServer(const StdioServer&) = delete;
  StdioServer& operator=(const StdioServer&) = delete;

  using InlineLisp = mcp::InlineLisp;
  // Before run(): the worker reads and runs the usual calls itself.
  void use_inline_lisp(InlineLisp lisp);

  // Reads IN to its end, then waits until every call read has been
  // answered (or dropped).
  void run(LineReader& in);

 private:
  struct Pending;
  class WorkerReading;
  friend class WorkerReading;

  // --- inline Lisp (stdio_inline.cpp)
  // On the worker: reads and runs the lines there are (IdleReader::read).
  void read_on_worker();
  // On the worker: runs LINE's call there, or hands it on with the
  // reading (false: the reading is no longer the worker's).
  bool run_on_worker(Line line);
  // Hands the reading, and LINE (none: the end) to this object's threads.
  void pass_reading(std::optional<Line> line);
  // When nothing runs or waits, nor a line is already there: the reading
  // becomes the worker's (true).
  bool give_reading_to_worker();
  // The third thread's, at each ring of alarm_: takes over an inline
  // evaluation that lasts or asks its owner.
  void take_over_inline(bool asked);
  void stop_inline();

  // Each thread's loop: take the reading when it is free, run queued calls.
  void serve();
  // Reads while this thread holds the reading; returns when it ends or was
  // handed to the other thread.
  void read_lines();
  // False when the reading was handed on while LINE's call ran here.
  bool handle(const Line& line, std::size_t limit);
  bool call(std::shared_ptr<Pending> pending);
  void hand_off_reading();
  // A call with request id ID, its context set up for this server.
  std::shared_ptr<Pending> new_pending(nlohmann::json id);
  // A call's notifier (McpCallContext::notify): a line on out_.
  McpCallContext::Notifier line_notifier();
  void execute(Pending& pending);
  // PENDING's call with MESSAGE (its arguments, or its whole message).
  std::optional<std::string> run_call(const Pending& pending, nlohmann::json message, const ExecutionOptions& options);
  // Answers PENDING, which started when the session's definitions were at
  // DEFINITIONS: resources/list_changed first if they changed, then
  // RESPONSE, unless the call was cancelled (no answer, as the spec says).
  void answer(const Pending& pending, std::uint64_t definitions, const std::optional<std::string>& response);
  void cancel(const nlohmann::json& request_id);
  // A call that sent a progressToken gets notifications/progress through
  // its notifier (TOKEN null: none was sent).
  void follow_progress(Pending& pending, nlohmann::json token);
  void respond(const std::optional<std::string>& response);
  void finish();

  McpServer& server_;
  ClientLogLevel log_level_;        // the client's logging/setLevel
  ExecutionOptions options_;        // for the call running; its context is the call's
  ExecutionOptions quick_options_;  // for what the reading thread answers at once
  McpCallContext::JobCanceller cancel_job_;
  LineWriter& out_;
  const bool allow_dangerous_;

  LineReader* in_ = nullptr;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Pending>> queue_;
  // The queue's calls' message bytes.  The reading waits while the queue
  // is full (kMaxQueuedCalls calls or kMaxQueuedBytes): a client that
  // floods fills its pipe, not this process's memory.
  std::size_t queued_bytes_ = 0;
  static constexpr std::size_t kMaxQueuedCalls = 256;
  static constexpr std::size_t kMaxQueuedBytes = std::size_t{64} << 20;
  bool queue_full() const { return queue_.size() >= kMaxQueuedCalls || queued_bytes_ >= kMaxQueuedBytes; }
  void dequeued(const Pending& pending);
  // The queued calls by the request id's JSON text (the latest of each
  // id), and the call running; cancellations look for them.
  std::map<std::string, std::shared_ptr<Pending>> in_flight_;
  std::shared_ptr<Pending> current_;
  bool reading_free_ = false;  // nobody reads: the next idle thread takes it
  bool handed_off_ = false;    // the call running where the reading was has handed it on
  bool executing_ = false;     // a call runs (one at a time)
  // Threads in call() waiting for the thread of an ended call to say so,
  // or for room in the queue: whoever ends a call wakes them.
  int callers_waiting_ = 0;
  bool input_ended_ = false;
  bool closed_ = false;
  std::thread worker_;

  // --- inline Lisp; guarded by mutex_ unless said
  std::optional<InlineLisp> inline_lisp_;
  std::shared_ptr<IdleReader> worker_reading_;  // a WorkerReading
  std::atomic<int> worker_fd_{-1};  // the reading is the worker's: in_'s descriptor
  std::optional<Line> handed_line_;  // read by the worker, for these threads
  std::shared_ptr<Pending> inline_;  // the call the worker runs
  bool taken_over_ = false;          // ... which the watcher took over
  ExecutionOptions worker_options_;  // the worker's calls'
  // The watcher's: an inline evaluation's moment passed, or it asks its
  // owner (cleared: its evaluation has not started).
  std::unique_ptr<sys::TakeOverAlarm> alarm_;
  std::thread watcher_;
};

}  // namespace agentq::mcp
