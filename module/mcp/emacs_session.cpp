#include "mcp/emacs_session.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "core/json_envelope.hpp"
#include "core/json_fast.hpp"
#include "core/json_limits.hpp"
#include "core/json_text.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/log.hpp"

namespace agentq::mcp {

namespace {

std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) throw std::system_error(errno, std::generic_category(), "pipe");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::pair<UniqueFd, UniqueFd> make_socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
    throw std::system_error(errno, std::generic_category(), "socketpair");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace

EmacsSession::EmacsSession(BridgeOptions options)
    : EmacsSession(std::move(options), make_socket_pair(), make_pipe()) {}

EmacsSession::EmacsSession(BridgeOptions options, FdPair to_bridge, FdPair from_bridge)
    : to_bridge_read_(std::move(to_bridge.first)),
      to_bridge_write_(std::move(to_bridge.second)),
      from_bridge_read_(std::move(from_bridge.first)),
      from_bridge_write_(std::move(from_bridge.second)),
      to_bridge_(to_bridge_write_.get()),
      from_bridge_(from_bridge_write_.get(), [this](std::string_view line) { return take_answer(line); }),
      options_(std::move(options)) {
  bridge_thread_ = std::thread([this] {
    EmacsBridge(options_, to_bridge_read_.get(), from_bridge_).run();
    from_bridge_write_.reset();  // the reader sees the end
  });
  reader_thread_ = std::thread([this] { read_responses(); });
}

EmacsSession::~EmacsSession() {
  end();
  if (bridge_thread_.joinable()) bridge_thread_.join();
  if (reader_thread_.joinable()) reader_thread_.join();
}

void EmacsSession::send_line(const std::string& line) {
  if (!to_bridge_.write_line(line)) log(LogLevel::Warn, "HTTP session: the bridge to Emacs is closed");
}

std::optional<std::string> EmacsSession::post(std::string_view, nlohmann::json message, Link& link) {
  const auto id = message.find("id");
  const auto method = message.find("method");
  const bool is_request = id != message.end() && method != message.end() && (id->is_string() || id->is_number());
  // One line each: a body may have been sent pretty-printed.
  const std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!is_request) {
    if (method != message.end() && *method == "notifications/cancelled")
      if (auto params = message.find("params"); params != message.end() && params->is_object())
        if (auto request = params->find("requestId"); request != params->end() && (request->is_string() || request->is_number()))
          cancel_waiter(json_scalar_text(*request));
    send_line(line);
    return std::nullopt;
  }
  if (*method == "logging/setLevel") logging_ = true;
  const std::string key = json_scalar_text(*id);
  Waiter waiter;
  waiter.link = &link;
  if (nlohmann::json token = request_progress_token(message); !token.is_null())
    waiter.progress_token = json_scalar_text(token);
  waiter.direct = waiter.progress_token.empty() && !logging_.load();
  {
    std::lock_guard lock(mutex_);
    if (closed_) return std::nullopt;
    if (!waiters_.emplace(key, &waiter).second) {
      nlohmann::json error = {{"jsonrpc", "2.0"},
                              {"id", *id},
                              {"error",
                               {{"code", -32600},
                                {"message", "Invalid Request: a request with this id is still running in this session"}}}};
      return error.dump();
    }
  }
  // The client gone: Emacs stops the call, and nobody waits for it.
  link.set_canceller([this, key] {
    send_line(nlohmann::json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"},
                             {"params", {{"requestId", nlohmann::json::parse(key)}, {"reason", "the client hung up"}}}}
                  .dump());
    cancel_waiter(key);
  });
  send_line(line);
  std::unique_lock lock(mutex_);
  answered_.wait(lock, [&] { return waiter.done; });
  lock.unlock();
  link.set_canceller(nullptr);
  return std::move(waiter.response);
}

void EmacsSession::end_wait_locked(const std::string& key, std::optional<std::string> response) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;  // answered already, or cancelled
  it->second->response = std::move(response);
  it->second->done = true;
  waiters_.erase(it);
  answered_.notify_all();
}

void EmacsSession::cancel_waiter(const std::string& key) {
  // A cancelled request may get no answer (MCP): its POST stops waiting.
  std::lock_guard lock(mutex_);
  end_wait_locked(key, std::nullopt);
}

bool EmacsSession::take_answer(std::string_view line) {
  std::optional<MessageEnvelope> envelope = scan_message_envelope(line);
  if (!envelope || !envelope->has_id || envelope->has_method) return false;
  if (!(envelope->id.is_string() || envelope->id.is_number())) return false;
  std::lock_guard lock(mutex_);
  auto it = waiters_.find(envelope->id_text);
  if (it == waiters_.end() || !it->second->direct) return false;
  end_wait_locked(envelope->id_text, std::string(line));
  return true;
}

void EmacsSession::read_responses() {
  LineReader in(from_bridge_read_.get(), kMaxLineBytes * 16);
  while (std::optional<Line> line = in.next()) {
    if (line->too_long) continue;
    // An answer to the POST waiting for request KEY (its id's JSON text).
    auto deliver = [&](const std::string& key) {
      std::lock_guard lock(mutex_);
      end_wait_locked(key, std::move(line->text));
    };
    // The usual line, an answer, read by the light scan (no JSON tree);
    // anything else parsed whole.
    if (std::optional<MessageEnvelope> envelope = scan_message_envelope(line->text);
        envelope && envelope->has_id && !envelope->has_method) {
      if (envelope->id.is_string() || envelope->id.is_number()) deliver(envelope->id_text);
      continue;
    }
    std::optional<nlohmann::json> message = parse_json_bounded(line->text);
    if (!message || !message->is_object()) continue;
    auto id = message->find("id");
    if (id != message->end() && !message->contains("method")) {
      if (id->is_string() || id->is_number()) deliver(json_scalar_text(*id));
      continue;
    }
    std::lock_guard lock(mutex_);
    // A notification: to the request whose progress it reports, if any.
    if (auto method = message->find("method");
        method != message->end() && *method == "notifications/resources/list_changed") {
      // About the session, not a request: every stream open now.
      for (auto& [key, waiter] : waiters_) waiter->link->notify(line->text);
      continue;
    }
    auto params = message->find("params");
    if (params == message->end() || !params->is_object()) continue;
    auto token = params->find("progressToken");
    if (token == params->end()) {
      // A log message about a request (data.requestId): on its stream.
      auto data = params->find("data");
      if (data == params->end() || !data->is_object()) continue;
      auto request = data->find("requestId");
      if (request == data->end() || !(request->is_string() || request->is_number())) continue;
      auto it = waiters_.find(json_scalar_text(*request));
      if (it != waiters_.end()) it->second->link->notify(line->text);
      continue;
    }
    const std::string token_text = json_scalar_text(*token);
    for (auto& [key, waiter] : waiters_)
      if (waiter->progress_token == token_text) waiter->link->notify(line->text);
  }
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (auto& [key, waiter] : waiters_) waiter->done = true;
  waiters_.clear();
  answered_.notify_all();
}

bool EmacsSession::streams_logs(const nlohmann::json& message) const {
  const auto method = message.find("method");
  return logging_ && method != message.end() && *method == "tools/call";
}

void EmacsSession::end() {
  std::vector<std::string> running;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, waiter] : waiters_) running.push_back(key);
  }
  for (const std::string& key : running)
    send_line(nlohmann::json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"},
                             {"params", {{"requestId", nlohmann::json::parse(key)}, {"reason", "the session ended"}}}}
                  .dump());
  // The end of the bridge's input: it answers what it has, then ends.
  ::shutdown(to_bridge_write_.get(), SHUT_WR);
}

}  // namespace agentq::mcp
