#include "mcp/headless_session.hpp"

#include "core/json_fast.hpp"
#include "core/json_text.hpp"
#include "core/mcp_route.hpp"
#include "core/session_changes.hpp"
#include "mcp/log.hpp"

namespace agentq::mcp {

HeadlessSession::HeadlessSession(McpServer& server, ExecutionOptions options, McpCallContext::JobCanceller cancel_job,
                                 bool allow_dangerous)
    : server_(server), options_(std::move(options)), cancel_job_(std::move(cancel_job)), allow_dangerous_(allow_dangerous) {
  options_.context = nullptr;
  options_.log_level = &log_level_;
}

std::optional<std::string> HeadlessSession::post(std::string_view text, nlohmann::json message, Link& link) {
  // The same routing as stdio's, on the message already parsed.
  Route route;
  const auto id = message.find("id");
  const auto method = message.find("method");
  const bool is_call = id != message.end() && method != message.end() && *method == "tools/call";
  if (is_call) {
    McpCallContext context(cancel_job_);
    context.set_allow_dangerous(allow_dangerous_);
    context.set_notifier(link.notify);
    context.set_progress_token(request_progress_token(message));
    context.set_client_log(&log_level_, *id);
    const std::string key = id->is_string() || id->is_number() ? json_scalar_text(*id) : std::string();
    std::multimap<std::string, McpCallContext*>::iterator entry;
    {
      std::lock_guard lock(mutex_);
      if (ended_) context.cancel();
      entry = running_.emplace(key, &context);
    }
    link.set_canceller([&context] { context.cancel(); });
    ExecutionOptions options = options_;
    options.context = &context;
    const std::uint64_t definitions = session_changes().generation();
    std::optional<std::string> response = server_.handle_json_text(std::move(message), options);
    // Before the answer, on its stream (dropped for a JSON answer).
    if (session_changes().generation() != definitions) link.notify(kResourcesListChanged);
    link.set_canceller(nullptr);
    {
      std::lock_guard lock(mutex_);
      running_.erase(entry);
    }
    // The spec: a cancelled request gets no response (as over stdio); its
    // stream ends without one.
    if (context.cancelled()) {
      log(LogLevel::Info, "request " + shortened(key) + " was cancelled: interrupted, not answered");
      return std::nullopt;
    }
    return response;
  }
  route = route_message(text);
  if (route.kind == Route::Kind::Cancel) {
    const std::string key = json_scalar_text(route.request_id);
    std::lock_guard lock(mutex_);
    auto [first, last] = running_.equal_range(key);
    if (first == last) log(LogLevel::Debug, "cancellation of request " + shortened(key) + ": not running");
    for (auto it = first; it != last; ++it) {
      log(LogLevel::Info, "request " + shortened(key) + " cancelled while running: interrupting it");
      it->second->cancel();
    }
    return std::nullopt;
  }
  return server_.handle(text, options_);
}

bool HeadlessSession::streams_logs(const nlohmann::json& message) const {
  const auto method = message.find("method");
  return log_level_.chosen() && method != message.end() && *method == "tools/call";
}

void HeadlessSession::end() {
  std::lock_guard lock(mutex_);
  ended_ = true;
  for (auto& [key, context] : running_) context->cancel();
}

}  // namespace agentq::mcp
