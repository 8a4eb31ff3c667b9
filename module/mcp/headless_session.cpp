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

// A call in running_ while it lives: a cancellation of its id finds it.
class HeadlessSession::Running {
 public:
  Running(HeadlessSession& session, std::string key, McpCallContext& context) : session_(session) {
    std::lock_guard lock(session_.mutex_);
    if (session_.ended_) context.cancel();
    entry_ = session_.running_.emplace(std::move(key), &context);
  }
  ~Running() {
    std::lock_guard lock(session_.mutex_);
    session_.running_.erase(entry_);
  }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  HeadlessSession& session_;
  std::multimap<std::string, McpCallContext*>::iterator entry_;
};

// A plain evaluate_lisp call the worker runs (McpSession::InlineCall).
// Read by the fast reader (its arguments) or parsed whole (its message,
// which then goes through the dispatcher, envelope checks and all, as the
// connection's thread would send it).  The taker reads BODY again: the
// worker's run consumes its own, and most calls are never taken over.
class HeadlessSession::Inline final : public McpSession::InlineCall {
 public:
  Inline(HeadlessSession& session, PlainEvaluation call, std::string_view body)
      : session_(session),
        call_(std::move(call)),
        key_(json_scalar_text(call_.id)),
        body_(body),
        context_(session.cancel_job_),
        running_(session, key_, context_) {
    session.prepare(context_, call_.id, [](std::string_view) { return false; }, nullptr);
  }

  std::optional<std::string> run() override {
    std::optional<std::string> response = dispatch(std::move(call_));
    if (context_.superseded()) return std::nullopt;  // taken over: the taker answers
    return unless_cancelled(context_, key_, std::move(response));
  }

  std::optional<std::string> take_over(Link& link) override {
    link.set_canceller([this] { context_.cancel(); });
    context_.adopt_running_job();
    std::optional<PlainEvaluation> again = read_plain_evaluation(body_);
    std::optional<std::string> response = again ? dispatch(std::move(*again)) : std::nullopt;
    link.set_canceller(nullptr);
    return unless_cancelled(context_, key_, std::move(response));
  }

 private:
  std::optional<std::string> dispatch(PlainEvaluation call) {
    ExecutionOptions options = session_.options_;
    options.context = &context_;
    if (call.simple) return session_.server_.tools_call_text(call.id, "evaluate_lisp", std::move(call.message), options);
    return session_.server_.handle_json_text(std::move(call.message), options);
  }

  HeadlessSession& session_;
  PlainEvaluation call_;
  const std::string key_;
  const std::string body_;
  McpCallContext context_;
  Running running_;
};

void HeadlessSession::prepare(McpCallContext& context, const nlohmann::json& id, Notify notify, nlohmann::json token) {
  context.set_allow_dangerous(allow_dangerous_);
  context.set_notifier(std::move(notify));
  context.set_progress_token(std::move(token));
  context.set_client_log(&log_level_, id);
}

std::optional<std::string> HeadlessSession::unless_cancelled(const McpCallContext& context, const std::string& key,
                                                             std::optional<std::string> response) {
  // The spec: a cancelled request gets no response (as over stdio); its
  // stream ends without one.
  if (context.cancelled()) {
    log(LogLevel::Info, "request " + shortened(key) + " was cancelled: interrupted, not answered");
    return std::nullopt;
  }
  return response;
}

std::unique_ptr<McpSession::InlineCall> HeadlessSession::inline_call(std::string_view body) {
  if (log_level_.chosen()) return nullptr;  // its log messages come on a stream
  std::optional<PlainEvaluation> call = read_plain_evaluation(body);
  if (!call) return nullptr;
  return std::make_unique<Inline>(*this, std::move(*call), body);
}

std::optional<std::string> HeadlessSession::post(std::string_view text, nlohmann::json message, Link& link) {
  // The same routing as stdio's, on the message already parsed.
  Route route;
  const auto id = message.find("id");
  const auto method = message.find("method");
  const bool is_call = id != message.end() && method != message.end() && *method == "tools/call";
  if (is_call) {
    McpCallContext context(cancel_job_);
    prepare(context, *id, link.notify, request_progress_token(message));
    if (link.on_wait) context.set_on_wait(link.on_wait);
    const std::string key = id->is_string() || id->is_number() ? json_scalar_text(*id) : std::string();
    Running running(*this, key, context);
    link.set_canceller([&context] { context.cancel(); });
    ExecutionOptions options = options_;
    options.context = &context;
    const std::uint64_t definitions = session_changes().generation();
    std::optional<std::string> response = server_.handle_json_text(std::move(message), options);
    // Before the answer, on its stream (dropped for a JSON answer).
    if (session_changes().generation() != definitions) link.notify(kResourcesListChanged);
    link.set_canceller(nullptr);
    return unless_cancelled(context, key, std::move(response));
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
