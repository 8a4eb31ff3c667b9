#include "mcp/stdio_server.hpp"

#include <algorithm>
#include <utility>

#include "mcp/log.hpp"
#include "mcp/stdio_pending.hpp"
#include "core/json_fast.hpp"
#include "core/json_text.hpp"
#include "core/mcp_route.hpp"
#include "core/session_changes.hpp"

namespace agentq::mcp {

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

// A request id as the key of in_flight_: its JSON text.
std::string id_key(const nlohmann::json& id) { return json_scalar_text(id); }

// A null id (a batch, or a request that names none) cannot be cancelled.
bool cancellable(const nlohmann::json& id) { return id.is_string() || id.is_number(); }

}  // namespace

StdioServer::StdioServer(McpServer& server, ExecutionOptions options, McpCallContext::JobCanceller cancel_job,
                         LineWriter& out, bool allow_dangerous)
    : server_(server),
      options_(std::move(options)),
      cancel_job_(std::move(cancel_job)),
      out_(out),
      allow_dangerous_(allow_dangerous) {
  options_.context = nullptr;
  options_.log_level = &log_level_;
  quick_options_ = options_;
  worker_ = std::thread([this] { serve(); });
}

StdioServer::~StdioServer() { finish(); }

void StdioServer::finish() {
  stop_inline();
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void StdioServer::run(LineReader& in) {
  {
    std::lock_guard lock(mutex_);
    in_ = &in;
    reading_free_ = true;
  }
  serve();
  finish();
}

void StdioServer::serve() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] {
      return closed_ || (reading_free_ && !input_ended_) || (!executing_ && !queue_.empty()) ||
             (input_ended_ && !executing_ && queue_.empty());
    });
    if (reading_free_ && !input_ended_ && !closed_) {
      reading_free_ = false;
      lock.unlock();
      read_lines();
      lock.lock();
      continue;
    }
    if (!executing_ && !queue_.empty()) {
      std::shared_ptr<Pending> pending = std::move(queue_.front());
      queue_.pop_front();
      dequeued(*pending);
      if (cancellable(pending->id)) {
        auto it = in_flight_.find(id_key(pending->id));
        if (it != in_flight_.end() && it->second == pending) in_flight_.erase(it);
      }
      current_ = pending;
      executing_ = true;
      lock.unlock();
      execute(*pending);
      lock.lock();
      executing_ = false;
      // The thread waiting for the end, or for this call to be over.
      if (input_ended_ || callers_waiting_ > 0) wake_.notify_all();
      continue;
    }
    // The input ended and every call read has been answered, or closing.
    if (closed_ || (input_ended_ && !executing_ && queue_.empty())) return;
  }
}

void StdioServer::read_lines() {
  for (;;) {
    std::optional<Line> line;
    {
      std::lock_guard lock(mutex_);
      line = std::exchange(handed_line_, std::nullopt);
    }
    if (!line) {
      if (give_reading_to_worker()) return;
      line = in_->next();
    }
    if (!line) break;
    if (!handle(*line, in_->max_bytes())) return;  // the other thread reads now
  }
  log(LogLevel::Info, "end of input: answering the calls already read, then exiting");
  {
    std::lock_guard lock(mutex_);
    input_ended_ = true;
  }
  wake_.notify_all();
}

void StdioServer::respond(const std::optional<std::string>& response) {
  if (!response) return;
  if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "-> " + shortened(*response));
  if (!out_.write_line(*response)) log(LogLevel::Warn, "stdout is closed: response dropped");
}

bool StdioServer::handle(const Line& line, std::size_t limit) {
  if (line.too_long) {
    log(LogLevel::Warn, "skipped a message of " + std::to_string(line.bytes) + " bytes (limit " +
                            std::to_string(limit) + ")");
    respond(too_long_error(line, limit));
    return true;
  }
  if (blank(line.text)) return true;
  if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "<- " + shortened(line.text));
  // The usual tools/call, read without building the envelope's JSON tree.
  if (std::optional<SimpleToolsCall> simple = parse_simple_tools_call(line.text)) {
    auto pending = new_pending(std::move(simple->id));
    pending->bytes = line.bytes;
    pending->message = std::move(simple->arguments);
    pending->name = std::move(simple->name);
    pending->simple = true;
    follow_progress(*pending, std::move(simple->progress_token));
    return call(std::move(pending));
  }
  Route route = route_message(line.text);
  switch (route.kind) {
    case Route::Kind::Queue: {
      auto pending = new_pending(std::move(route.id));
      pending->bytes = line.bytes;
      pending->message = std::move(route.message);
      follow_progress(*pending, request_progress_token(pending->message));
      return call(std::move(pending));
    }
    case Route::Kind::Cancel:
      cancel(route.request_id);
      return true;
    case Route::Kind::Answer:
      respond(server_.handle(line.text, quick_options_));
      return true;
  }
  return true;
}

std::shared_ptr<StdioServer::Pending> StdioServer::new_pending(nlohmann::json id) {
  auto pending = std::make_shared<Pending>(std::move(id), cancel_job_);
  pending->context.set_allow_dangerous(allow_dangerous_);
  pending->context.set_notifier(line_notifier());
  pending->context.set_client_log(&log_level_, pending->id);
  return pending;
}

McpCallContext::Notifier StdioServer::line_notifier() {
  // A notification is one more line on stdout: the same writer as the
  // responses, so it never interleaves with one.
  return [this](std::string_view text) {
    if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "-> " + shortened(text));
    return out_.write_line(text);
  };
}

bool StdioServer::call(std::shared_ptr<Pending> pending) {
  const bool batch = !pending->simple && pending->message.is_array();
  {
    std::unique_lock lock(mutex_);
    // The call before has ended (current_ is reset before its answer is
    // written) on a thread that has not yet said so: a client that sends
    // the next call as soon as it has the answer is that fast.  Queued,
    // this call would run on that thread while this one reads, and the
    // reading, being here, could not go back to the worker: the two
    // threads then kept those roles call after call (two thread hops more
    // each).  So wait that moment out, and run the call here.
    if (executing_ && !current_ && queue_.empty()) {
      ++callers_waiting_;
      wake_.wait(lock, [this] { return !executing_ || current_ || !queue_.empty() || closed_; });
      --callers_waiting_;
    }
    if (queue_full()) {
      // Read no more until there is room (the thread running calls wakes
      // this one after each); then queue it, or run it here if all ran.
      ++callers_waiting_;
      wake_.wait(lock, [this] { return !queue_full() || closed_; });
      --callers_waiting_;
    }
    if (executing_ || !queue_.empty()) {
      if (cancellable(pending->id)) in_flight_.insert_or_assign(id_key(pending->id), pending);
      queued_bytes_ += pending->bytes;
      queue_.push_back(std::move(pending));
      return true;  // the thread running a call takes it next
    }
    executing_ = true;
    current_ = pending;
    handed_off_ = false;
  }
  // Run it here.  A batch may run long without polling: hand the reading on
  // now; a single call hands it on once it waits (see McpCallContext).
  if (batch) hand_off_reading();
  else pending->context.set_on_wait([this] { hand_off_reading(); });
  execute(*pending);
  bool keep_reading, wake;
  {
    std::lock_guard lock(mutex_);
    executing_ = false;
    keep_reading = !handed_off_;
    // Calls queued meanwhile, or the end, are for the other thread; waking
    // it after every call for nothing would cost each call a system call.
    wake = !queue_.empty() || input_ended_ || callers_waiting_ > 0;
  }
  if (wake) wake_.notify_all();
  return keep_reading;
}

void StdioServer::dequeued(const Pending& pending) { queued_bytes_ -= pending.bytes; }

void StdioServer::hand_off_reading() {
  {
    std::lock_guard lock(mutex_);
    handed_off_ = true;
    reading_free_ = true;
  }
  wake_.notify_all();
}

void StdioServer::execute(Pending& pending) {
  // One call runs at a time, so the options are shared; only the context
  // is the call's.
  options_.context = &pending.context;
  const std::uint64_t definitions = session_changes().generation();
  std::optional<std::string> response = run_call(pending, std::move(pending.message), options_);
  options_.context = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (current_.get() == &pending) current_.reset();  // its owner still holds it
  }
  answer(pending, definitions, response);
}

std::optional<std::string> StdioServer::run_call(const Pending& pending, nlohmann::json message,
                                                 const ExecutionOptions& options) {
  if (pending.simple) return server_.tools_call_text(pending.id, pending.name, std::move(message), options);
  return server_.handle_json_text(std::move(message), options);
}

void StdioServer::answer(const Pending& pending, std::uint64_t definitions,
                         const std::optional<std::string>& response) {
  // One per call at most, a line of its own before the answer.
  if (session_changes().generation() != definitions) respond(std::string(kResourcesListChanged));
  // The spec: a cancelled request gets no response (the client has
  // forgotten its id; an answer would be one "for an unknown request").
  if (pending.context.cancelled()) {
    log(LogLevel::Info, "request " + shortened(id_key(pending.id)) + " was cancelled: interrupted, not answered");
    return;
  }
  respond(response);
}

void StdioServer::follow_progress(Pending& pending, nlohmann::json token) {
  // The notifier (line_notifier) was set: its notifications are lines.
  if (!token.is_null()) pending.context.set_progress_token(std::move(token));
}

void StdioServer::cancel(const nlohmann::json& request_id) {
  const std::string key = id_key(request_id);
  std::shared_ptr<Pending> running;
  {
    std::lock_guard lock(mutex_);
    // The latest call with that id: a queued one, else the one running.
    auto it = in_flight_.find(key);
    if (it != in_flight_.end()) {
      if (std::erase(queue_, it->second) > 0) dequeued(*it->second);
      in_flight_.erase(it);
      log(LogLevel::Info, "request " + shortened(key) + " cancelled before it ran: dropped, not answered");
      return;
    }
    if (!current_ || !cancellable(current_->id) || id_key(current_->id) != key) {
      log(LogLevel::Debug, "cancellation of request " + shortened(key) + ": not queued or running");
      return;
    }
    running = current_;
  }
  log(LogLevel::Info, "request " + shortened(key) + " cancelled while running: interrupting it");
  running->context.cancel();
}

}  // namespace agentq::mcp
