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
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/jsonrpc.hpp"
#include "core/mcp_logging.hpp"
#include "mcp/cancellable_call.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/line_writer.hpp"

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

  // Reads IN to its end, then waits until every call read has been
  // answered (or dropped).
  void run(LineReader& in);

 private:
  struct Pending;

  // Each thread's loop: take the reading when it is free, run queued calls.
  void serve();
  // Reads while this thread holds the reading; returns when it ends or was
  // handed to the other thread.
  void read_lines();
  // False when the reading was handed on while LINE's call ran here.
  bool handle(const Line& line, std::size_t limit);
  bool call(std::shared_ptr<Pending> pending);
  void hand_off_reading();
  // A call's notifier (McpCallContext::notify): a line on out_.
  McpCallContext::Notifier line_notifier();
  void execute(Pending& pending);
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
  // The queued calls by the request id's JSON text (the latest of each
  // id), and the call running; cancellations look for them.
  std::map<std::string, std::shared_ptr<Pending>> in_flight_;
  std::shared_ptr<Pending> current_;
  bool reading_free_ = false;  // nobody reads: the next idle thread takes it
  bool handed_off_ = false;    // the call running where the reading was has handed it on
  bool executing_ = false;     // a call runs (one at a time)
  bool input_ended_ = false;
  bool closed_ = false;
  std::thread worker_;
};

}  // namespace agentq::mcp
