// The MCP server over stdio: newline-delimited JSON-RPC in, one line per
// response out.  The thread that calls run() reads every message and
// answers the quick ones itself (initialize, ping, tools/list, errors), so
// they are answered while a tool runs; it queues tools/call requests (and
// batches) for a worker thread that runs them one at a time, and handles
// notifications/cancelled: a queued call is dropped without a response
// (MCP: a cancelled request is not answered), a running one is interrupted
// and answers its [ERROR] INTERRUPTED result.
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
#include "mcp/call_context.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/line_writer.hpp"

namespace agentq::mcp {

class StdioServer {
 public:
  // OPTIONS (approval, hooks) apply to every call; its context is replaced
  // by each call's own.  CANCEL_JOB stops a Lisp job (Runtime::cancel).
  StdioServer(McpServer& server, ExecutionOptions options, McpCallContext::JobCanceller cancel_job,
              LineWriter& out);
  ~StdioServer();
  StdioServer(const StdioServer&) = delete;
  StdioServer& operator=(const StdioServer&) = delete;

  // Reads IN to its end, then waits until every call read has been
  // answered (or dropped).
  void run(LineReader& in);

 private:
  struct Pending;

  void handle(const Line& line, std::size_t limit);
  void queue(const nlohmann::json& id, std::string text);
  void cancel(const nlohmann::json& request_id);
  void work();
  void respond(const std::optional<std::string>& response);
  void finish();

  McpServer& server_;
  ExecutionOptions options_;
  McpCallContext::JobCanceller cancel_job_;
  LineWriter& out_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Pending>> queue_;
  std::map<std::string, std::shared_ptr<Pending>> in_flight_;  // by the request id's JSON text
  bool closed_ = false;
  std::thread worker_;
};

}  // namespace agentq::mcp
