#include "mcp/stdio_server.hpp"

#include <algorithm>
#include <utility>

#include "mcp/log.hpp"
#include "core/mcp_route.hpp"

namespace agentq::mcp {

struct StdioServer::Pending {
  Pending(std::string key, std::string text, McpCallContext::JobCanceller cancel_job)
      : key(std::move(key)), text(std::move(text)), context(std::move(cancel_job)) {}
  std::string key;  // empty: not cancellable (a batch)
  std::string text;
  McpCallContext context;
  bool running = false;  // taken by the worker (guarded by the server's mutex)
};

namespace {

bool blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

std::string too_long_error(const Line& line, std::size_t limit) {
  nlohmann::json error = nlohmann::json::object();
  error["code"] = jsonrpc_error::kParseError;
  error["message"] = "Parse error: the message is " + std::to_string(line.bytes) + " bytes long, more than the " +
                     std::to_string(limit) + " bytes this server reads; it was skipped";
  nlohmann::json response = nlohmann::json::object();
  response["jsonrpc"] = "2.0";
  response["id"] = nullptr;
  response["error"] = std::move(error);
  return response.dump();
}

}  // namespace

StdioServer::StdioServer(McpServer& server, ExecutionOptions options, McpCallContext::JobCanceller cancel_job,
                         LineWriter& out)
    : server_(server), options_(std::move(options)), cancel_job_(std::move(cancel_job)), out_(out) {
  options_.context = nullptr;
  worker_ = std::thread([this] { work(); });
}

StdioServer::~StdioServer() { finish(); }

void StdioServer::finish() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void StdioServer::run(LineReader& in) {
  while (std::optional<Line> line = in.next()) handle(*line, in.max_bytes());
  log(LogLevel::Info, "end of input: answering the calls already read, then exiting");
  finish();
}

void StdioServer::respond(const std::optional<std::string>& response) {
  if (!response) return;
  if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "-> " + shortened(*response));
  if (!out_.write_line(*response)) log(LogLevel::Warn, "stdout is closed: response dropped");
}

void StdioServer::handle(const Line& line, std::size_t limit) {
  if (line.too_long) {
    log(LogLevel::Warn, "skipped a message of " + std::to_string(line.bytes) + " bytes (limit " +
                            std::to_string(limit) + ")");
    respond(too_long_error(line, limit));
    return;
  }
  if (blank(line.text)) return;
  if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "<- " + shortened(line.text));
  Route route = route_message(line.text);
  switch (route.kind) {
    case Route::Kind::Queue:
      queue(route.id, line.text);
      return;
    case Route::Kind::Cancel:
      cancel(route.request_id);
      return;
    case Route::Kind::Answer:
      respond(server_.handle(line.text, options_));
      return;
  }
}

void StdioServer::queue(const nlohmann::json& id, std::string text) {
  // A null id (a batch, or a request that names none) cannot be cancelled.
  std::string key = id.is_string() || id.is_number() ? id.dump() : std::string();
  auto pending = std::make_shared<Pending>(std::move(key), std::move(text), cancel_job_);
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(pending);
    if (!pending->key.empty()) in_flight_.insert_or_assign(pending->key, pending);
  }
  wake_.notify_one();
}

void StdioServer::cancel(const nlohmann::json& request_id) {
  const std::string key = request_id.dump();
  std::shared_ptr<Pending> running;
  {
    std::lock_guard lock(mutex_);
    auto it = in_flight_.find(key);
    if (it == in_flight_.end()) {
      log(LogLevel::Debug, "cancellation of request " + shortened(key) + ": not queued or running");
      return;
    }
    std::shared_ptr<Pending> pending = it->second;
    if (!pending->running) {
      std::erase(queue_, pending);
      in_flight_.erase(it);
      log(LogLevel::Info, "request " + shortened(key) + " cancelled before it ran: dropped, not answered");
      return;
    }
    running = std::move(pending);
  }
  log(LogLevel::Info, "request " + shortened(key) + " cancelled while running: interrupting it");
  running->context.cancel();
}

void StdioServer::work() {
  for (;;) {
    std::shared_ptr<Pending> pending;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return closed_ || !queue_.empty(); });
      if (queue_.empty()) return;
      pending = std::move(queue_.front());
      queue_.pop_front();
      pending->running = true;
    }
    ExecutionOptions options = options_;
    options.context = &pending->context;
    std::optional<std::string> response = server_.handle(pending->text, options);
    {
      std::lock_guard lock(mutex_);
      if (!pending->key.empty()) {
        auto it = in_flight_.find(pending->key);
        if (it != in_flight_.end() && it->second == pending) in_flight_.erase(it);
      }
    }
    respond(response);
  }
}

}  // namespace agentq::mcp
