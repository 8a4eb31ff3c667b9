// An MCP session of the HTTP transport served by this process's own
// dispatcher (headless): the same McpServer, executor and approval as the
// stdio server, so one policy.  Every session shares the one Lisp
// session (the process has one ECL): their calls take turns on its worker.
// A tools/call runs on the thread of the POST that brought it, with a
// McpCallContext of its own: notifications/cancelled from the same
// session names it by its id and interrupts it, and no other session's.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "core/jsonrpc.hpp"
#include "core/mcp_logging.hpp"
#include "mcp/cancellable_call.hpp"
#include "mcp/mcp_session.hpp"

namespace agentq::mcp {

class HeadlessSession final : public McpSession {
 public:
  // OPTIONS: the approval and hooks of every call (its context is each
  // call's own).  CANCEL_JOB stops a Lisp job; ALLOW_DANGEROUS as the
  // stdio server's.
  HeadlessSession(McpServer& server, ExecutionOptions options, McpCallContext::JobCanceller cancel_job,
                  bool allow_dangerous);

  std::optional<std::string> post(std::string_view text, nlohmann::json message, Link& link) override;
  void end() override;
  bool streams_logs(const nlohmann::json& message) const override;
  std::unique_ptr<InlineCall> inline_call(std::string_view body) override;

 private:
  class Running;
  class Inline;
  // CONTEXT set up for a call with request ID: this session's allowance,
  // NOTIFY for its notifications, TOKEN (null: none) for its progress.
  void prepare(McpCallContext& context, const nlohmann::json& id, Notify notify, nlohmann::json token);
  // RESPONSE, unless CONTEXT's call (request KEY) was cancelled: the spec
  // says a cancelled request gets no response.
  static std::optional<std::string> unless_cancelled(const McpCallContext& context, const std::string& key,
                                                     std::optional<std::string> response);

  McpServer& server_;
  ClientLogLevel log_level_;  // the session's logging/setLevel
  ExecutionOptions options_;
  McpCallContext::JobCanceller cancel_job_;
  const bool allow_dangerous_;
  std::mutex mutex_;
  // The calls running, by the request id's JSON text (several may share
  // one: a client's mistake; a cancellation then stops them all).
  std::multimap<std::string, McpCallContext*> running_;
  bool ended_ = false;
};

}  // namespace agentq::mcp
