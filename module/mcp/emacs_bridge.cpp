#include "mcp/emacs_bridge.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "core/json_envelope.hpp"
#include "core/json_limits.hpp"
#include "core/jsonrpc.hpp"
#include "core/json_fast.hpp"
#include "mcp/emacs_socket.hpp"
#include "mcp/log.hpp"
#include "sys/answer_fifo.hpp"

namespace agentq::mcp {

namespace {

using json = nlohmann::json;

constexpr std::string_view kPingPrefix = "sly-agent-q-mcp-bridge-ping-";
constexpr std::string_view kChannelPrefix = "sly-agent-q-mcp-bridge-channel-";
// The bridge's own method: Emacs opens the FIFO it names (emacs_bridge.hpp).
constexpr std::string_view kAnswerChannelMethod = "sly-agent-q/answer-channel";
// Emacs's answers may be long (a file read whole): more than a request.
constexpr std::size_t kMaxResponseBytes = kMaxLineBytes * 16;
// Cancelled requests remembered for their late answer.
constexpr std::size_t kMaxCancelled = 1024;

bool blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

// The ids of the requests in MESSAGE (an object or a batch) that expect
// an answer: those with an id member that is a string, a number or null.
std::vector<json> request_ids(const json& message) {
  std::vector<json> ids;
  auto one = [&](const json& element) {
    if (!element.is_object()) return;
    auto id = element.find("id");
    auto method = element.find("method");
    if (id == element.end() || method == element.end() || !method->is_string()) return;
    if (id->is_string() || id->is_number() || id->is_null()) ids.push_back(*id);
  };
  if (message.is_array())
    for (const json& element : message) one(element);
  else
    one(message);
  return ids;
}

bool is_ping(const json& id) {
  return id.is_string() && id.get_ref<const std::string&>().starts_with(kPingPrefix);
}

bool is_channel_answer(const json& id) {
  return id.is_string() && id.get_ref<const std::string&>().starts_with(kChannelPrefix);
}

// An answer to a request of the bridge's own (never the client's).
bool is_bridge_own(const json& id) { return is_ping(id) || is_channel_answer(id); }

// The directory of PATH, absolute ("" when the working directory is unknown).
std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (directory[0] == '/') return directory;
  char cwd[4096];
  if (!::getcwd(cwd, sizeof cwd)) return {};
  return std::string(cwd) + "/" + directory;
}

// What the bridge reads of a line from the client.
struct ClientMessage {
  bool readable = false;  // JSON: else Emacs's dispatcher answers the parse error (id null)
  // The requests that expect an answer (request_ids), each with its id's
  // dump(), the key of outstanding_.
  std::vector<std::pair<json, std::string>> ids;
  std::string method;                      // a single message's, when it is a string
  std::optional<std::string> request_key;  // a single message's params.requestId, dump()
};

// TEXT read by the light scan when it is the usual single message, else
// (a batch, anything unusual, what is not JSON) parsed whole as before.
ClientMessage read_client_message(std::string_view text) {
  ClientMessage read;
  if (std::optional<MessageEnvelope> envelope = scan_message_envelope(text)) {
    read.readable = true;
    if (envelope->has_method) {
      // The scan reads only ids that are strings, integers or null.
      if (envelope->has_id) read.ids.emplace_back(std::move(envelope->id), std::move(envelope->id_text));
      read.method = std::move(envelope->method);
    }
    if (envelope->has_request_id) read.request_key = std::move(envelope->request_id_text);
    return read;
  }
  std::optional<json> message;
  try {
    message = parse_json_bounded(text);
  } catch (...) {
  }
  if (!message) return read;
  read.readable = true;
  for (json& id : request_ids(*message)) {
    std::string key = id.dump();
    read.ids.emplace_back(std::move(id), std::move(key));
  }
  if (message->is_object()) {
    if (auto method = message->find("method"); method != message->end() && method->is_string())
      read.method = method->get<std::string>();
    if (auto params = message->find("params"); params != message->end() && params->is_object())
      if (auto request = params->find("requestId"); request != params->end()) read.request_key = request->dump();
  }
  return read;
}

std::string error_text(const json& id, int code, const std::string& message) {
  json response = json::object();
  response["jsonrpc"] = "2.0";
  response["id"] = id;
  response["error"] = {{"code", code}, {"message", message}};
  return response.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

EmacsBridge::EmacsBridge(BridgeOptions options, int in_fd, LineWriter& out)
    : options_(std::move(options)),
      in_fd_(in_fd),
      out_(out),
      from_client_(kMaxLineBytes),
      from_emacs_(kMaxResponseBytes),
      from_answers_(kMaxResponseBytes) {
  if (options_.ping_interval > options_.timeout / 3) options_.ping_interval = options_.timeout / 3;
  if (options_.ping_interval < std::chrono::milliseconds(20)) options_.ping_interval = std::chrono::milliseconds(20);
}

EmacsBridge::~EmacsBridge() { close_answer_channel(); }

std::string EmacsBridge::not_serving(const std::string& why) const {
  return "Emacs is not serving MCP at " + options_.socket + " (" + why +
         "): start it with M-x sly-agent-q-mcp-server-start";
}

void EmacsBridge::respond(std::string_view text) {
  if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "-> " + shortened(text));
  if (!out_.write_line(text)) log(LogLevel::Warn, "stdout is closed: response dropped");
}

void EmacsBridge::respond_error(const json& id, int code, const std::string& message) {
  respond(error_text(id, code, message));
}

bool EmacsBridge::connect() {
  if (emacs_) return true;
  std::string error;
  emacs_ = connect_emacs_socket(options_.socket, error);
  if (!emacs_) {
    connect_error_ = error;
    log(LogLevel::Info, not_serving(error));
    return false;
  }
  log(LogLevel::Info, "connected to Emacs at " + options_.socket);
  from_emacs_.clear();
  to_emacs_.clear();
  to_emacs_sent_ = 0;
  last_heard_ = Clock::now();
  ping_pending_ = false;
  open_answer_channel();
  return true;
}

void EmacsBridge::open_answer_channel() {
  close_answer_channel();
  const std::string directory = directory_of(options_.socket);
  if (directory.empty()) return;
  // Unique in this process, whose HTTP sessions each have a bridge.
  static std::atomic<std::uint64_t> channels_made{0};
  const std::uint64_t number = ++channels_made;
  const std::string suffix = std::to_string(::getpid()) + "-" + std::to_string(number);
  std::string path = directory + "/answers-" + suffix;
  std::string why;
  // A name left by an earlier bridge of this pid is ours to replace (the
  // directory is the user's own, which Emacs checked).
  answers_.reset(make_private_fifo(path, O_RDONLY, why));
  if (!answers_) {
    log(LogLevel::Info, "no answer channel (answers come through Emacs): " + why);
    return;
  }
  answers_path_ = path;
  answers_kept_open_.reset(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  from_answers_.clear();
  json params = {{"path", path}};
  // The request channel, the same way (no name: no direct requests).
  std::string requests = directory + "/requests-" + suffix;
  requests_.reset(make_private_fifo(requests, O_RDWR, why));
  if (requests_) {
    requests_path_ = requests;
    params["requests"] = requests;
  }
  json request = {{"jsonrpc", "2.0"},
                  {"id", std::string(kChannelPrefix) + std::to_string(number)},
                  {"method", std::string(kAnswerChannelMethod)},
                  {"params", std::move(params)}};
  to_emacs_ += request.dump(-1, ' ', false, json::error_handler_t::replace);
  to_emacs_ += '\n';
}

void EmacsBridge::remove_answers_name() {
  if (!answers_path_.empty()) ::unlink(answers_path_.c_str());
  answers_path_.clear();
  if (!requests_path_.empty()) ::unlink(requests_path_.c_str());
  requests_path_.clear();
}

void EmacsBridge::close_answer_channel() {
  remove_answers_name();
  answers_.reset();
  answers_kept_open_.reset();
  from_answers_.clear();
  requests_.reset();
  direct_ = false;
}

bool EmacsBridge::send_direct(const Line& line, const std::string& method,
                              const std::vector<std::pair<json, std::string>>& ids) {
  // One at a time, and only when nothing else is outstanding: then it
  // cannot overtake anything of this client's.
  if (!direct_ || !requests_ || direct_key_ || !outstanding_.empty() || method != "tools/call" || ids.size() != 1 ||
      line.text.size() + 1 > kAnswerFifoAtomicBytes)
    return false;
  std::optional<SimpleToolsCall> call = parse_simple_tools_call(line.text);
  if (!call || call->name != "evaluate_lisp" || !call->progress_token.is_null()) return false;
  if (!write_line_whole(requests_.get(), line.text)) return false;
  outstanding_.insert_or_assign(ids[0].second, Outstanding{ids[0].first, Clock::now()});
  direct_key_ = ids[0].second;
  return true;
}

void EmacsBridge::release_held_back() {
  std::deque<Line> waiting = std::exchange(held_back_, {});
  for (const Line& line : waiting) on_client_line(line);
}

void EmacsBridge::lost(const std::string& why) {
  log(LogLevel::Warn, not_serving(why));
  emacs_.reset();
  direct_key_.reset();
  close_answer_channel();
  to_emacs_.clear();
  to_emacs_sent_ = 0;
  from_emacs_.clear();
  ping_pending_ = false;
  auto outstanding = std::exchange(outstanding_, {});
  for (auto& [key, request] : outstanding) respond_error(request.id, bridge_error::kNotServing, not_serving(why));
}

void EmacsBridge::on_client_line(const Line& line) {
  if (line.too_long) {
    respond_error(nullptr, jsonrpc_error::kParseError,
                  "Parse error: the message is " + std::to_string(line.bytes) + " bytes long, more than the " +
                      std::to_string(from_client_.max_bytes()) + " bytes this server reads; it was skipped");
    return;
  }
  if (blank(line.text)) return;
  if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "<- " + shortened(line.text));
  ClientMessage message = read_client_message(line.text);
  const std::vector<std::pair<json, std::string>>& ids = message.ids;
  const bool expects_answer = !message.readable || !ids.empty();
  const std::string& method = message.method;
  auto answer_here = [&] {
    if (auto response = local_server_.handle(line.text, ExecutionOptions{})) respond(*response);
  };
  if (method == "ping" && !ids.empty()) return answer_here();
  if (method == kAnswerChannelMethod) {
    // The bridge's own: no client opens files in Emacs.
    for (const auto& [id, key] : ids)
      respond_error(id, jsonrpc_error::kMethodNotFound, "Method not found: " + method);
    return;
  }
  if (!connect()) {
    if (method == "initialize" && !ids.empty()) return answer_here();
    if (!expects_answer) return;  // a notification: nobody to tell
    const std::string text = not_serving(connect_error_);
    if (!message.readable) respond_error(nullptr, bridge_error::kNotServing, text);
    for (const auto& [id, key] : ids) respond_error(id, bridge_error::kNotServing, text);
    return;
  }
  if (method == "notifications/cancelled" && ids.empty() && message.request_key) {
    // The request it names waits no more: not for an error of ours.
    if (outstanding_.erase(*message.request_key) > 0) {
      cancelled_.push_back(*message.request_key);
      if (cancelled_.size() > kMaxCancelled) cancelled_.pop_front();
      if (direct_key_ == *message.request_key) {
        // A copy after the request on its FIFO: the Lisp thread, which may
        // not have read the request yet, then never runs it (the socket's
        // copy stops it if it runs).
        if (requests_) write_line_whole(requests_.get(), line.text);
        direct_key_.reset();
      }
    }
    // One still waiting here is dropped: never sent, never answered.
    std::erase_if(held_back_, [&](const Line& waiting) {
      ClientMessage held = read_client_message(waiting.text);
      return held.ids.size() == 1 && held.ids[0].second == *message.request_key;
    });
  }
  if (direct_key_ && !ids.empty() &&
      (method == "tools/call" || method == "resources/read" || method == "prompts/get" || method.empty())) {
    // After the direct request, in the order sent (emacs_bridge.hpp).
    held_back_.push_back(line);
    return;
  }
  if (send_direct(line, method, ids)) return;
  const Clock::time_point now = Clock::now();
  for (const auto& [id, key] : ids) outstanding_.insert_or_assign(key, Outstanding{id, now});
  to_emacs_.append(line.text);
  to_emacs_ += '\n';
  flush_emacs();
}

void EmacsBridge::on_emacs_line(const Line& line) {
  last_heard_ = Clock::now();
  if (line.too_long) {
    lost("it sent an answer of " + std::to_string(line.bytes) + " bytes, more than the " +
         std::to_string(kMaxResponseBytes) + " this bridge reads");
    return;
  }
  if (blank(line.text)) return;
  // True: the client waits for it.  ID: the message's id (none: null),
  // KEY its dump().
  auto forget = [&](const json* id, bool has_method, const std::string& key) -> bool {
    if (!id) return true;  // not an answer: pass it on
    if (has_method) return true;
    if (is_ping(*id)) {
      ping_pending_ = false;
      return false;
    }
    if (is_channel_answer(*id)) {
      // Emacs opened the FIFOs (or could not): their names have done their work.
      remove_answers_name();
      if (line.text.find("\"error\"") != std::string::npos) {
        log(LogLevel::Info, "Emacs did not open the answer channel (answers come through it): " + shortened(line.text));
        close_answer_channel();
      } else {
        // An Emacs that reads the request channel says so.
        direct_ = requests_ && line.text.find("\"requests\":true") != std::string::npos;
        if (!direct_) requests_.reset();
        log(LogLevel::Info, direct_ ? "Emacs reads plain evaluations on the request channel"
                                    : "no request channel: every request goes through Emacs's socket");
      }
      return false;
    }
    if (outstanding_.erase(key) > 0) {
      if (direct_key_ == key) direct_key_.reset();
      return true;
    }
    if (auto it = std::find(cancelled_.begin(), cancelled_.end(), key); it != cancelled_.end()) {
      // A cancelled call that was running, interrupted: the spec says a
      // cancelled request gets no response (Emacs sends none; an older one may).
      cancelled_.erase(it);
      return false;
    }
    return id->is_null();  // a parse error's answer
  };
  auto late = [&] {
    log(LogLevel::Info, "a late answer (its request was answered or cancelled already), dropped: " + shortened(line.text));
  };
  // The usual line, one answer, read by the light scan; anything else
  // parsed whole.
  if (std::optional<MessageEnvelope> envelope = scan_message_envelope(line.text)) {
    const json* id = envelope->has_id ? &envelope->id : nullptr;
    if (forget(id, envelope->has_method, envelope->id_text))
      respond(line.text);
    else if (!id || !is_bridge_own(*id))
      late();
    return;
  }
  std::optional<json> message;
  try {
    message = parse_json_bounded(line.text);
  } catch (...) {
  }
  if (!message) {
    log(LogLevel::Warn, "Emacs sent a line that is not JSON, dropped: " + shortened(line.text));
    return;
  }
  auto forget_element = [&](const json& element) -> bool {
    if (!element.is_object()) return false;
    auto id = element.find("id");
    if (id == element.end()) return true;
    return forget(&*id, element.contains("method"), id->dump());
  };
  if (message->is_array()) {
    bool any = false;
    for (const json& element : *message) any = forget_element(element) || any;
    if (any) respond(line.text);
    return;
  }
  if (forget_element(*message)) {
    respond(line.text);
  } else if (!message->contains("id") || !is_bridge_own((*message)["id"])) {
    late();
  }
}

void EmacsBridge::flush_emacs() {
  while (emacs_ && !to_emacs_.empty()) {
    ssize_t n = ::send(emacs_.get(), to_emacs_.data() + to_emacs_sent_, to_emacs_.size() - to_emacs_sent_,
                       MSG_NOSIGNAL);
    if (n > 0) {
      // What was sent is dropped all at once, or when it is half the
      // buffer: erasing each send's bytes from the front of a large
      // buffer would copy it again and again.
      to_emacs_sent_ += static_cast<std::size_t>(n);
      if (to_emacs_sent_ == to_emacs_.size()) {
        to_emacs_.clear();
        to_emacs_sent_ = 0;
      } else if (to_emacs_sent_ > to_emacs_.size() / 2) {
        to_emacs_.erase(0, to_emacs_sent_);
        to_emacs_sent_ = 0;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // poll says when
    lost(std::string("it went away: ") + std::strerror(errno));
    return;
  }
}

void EmacsBridge::read_client() {
  char chunk[65536];
  ssize_t n = ::read(in_fd_, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) {
    client_open_ = false;
    if (auto last = from_client_.finish()) on_client_line(*last);
    log(LogLevel::Info, "end of input: answering the requests already read, then exiting");
    return;
  }
  from_client_.feed(std::string_view(chunk, static_cast<std::size_t>(n)), [&](Line& line) { on_client_line(line); });
}

ssize_t EmacsBridge::read_emacs_lines(int fd, LineSplitter& lines) {
  char chunk[65536];
  ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n > 0)
    lines.feed(std::string_view(chunk, static_cast<std::size_t>(n)), [&](Line& line) {
      if (emacs_) on_emacs_line(line);
    });
  return n;
}

void EmacsBridge::read_emacs() {
  ssize_t n = read_emacs_lines(emacs_.get(), from_emacs_);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) lost(n == 0 ? "it went away" : std::string("it went away: ") + std::strerror(errno));
}

void EmacsBridge::read_answers() {
  // The runner writes whole lines, each an answer as Emacs would send it.
  ssize_t n = read_emacs_lines(answers_.get(), from_answers_);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  // Not while the bridge holds a write end; but never spin on it.
  if (n <= 0) close_answer_channel();
}

void EmacsBridge::expire(Clock::time_point now) {
  // While the client is there, a request waits as long as Emacs answers
  // (pings included): it may be asking the person.  After the end of
  // input, each request has the timeout from when it was sent.
  for (auto it = outstanding_.begin(); it != outstanding_.end();) {
    Clock::time_point since = client_open_ ? std::max(it->second.sent, last_heard_) : it->second.sent;
    if (now - since < options_.timeout) {
      ++it;
      continue;
    }
    const auto seconds = std::chrono::duration_cast<std::chrono::duration<double>>(options_.timeout).count();
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", seconds);
    respond_error(it->second.id, bridge_error::kTimeout,
                  std::string("Emacs did not answer within ") + bound +
                      " s (it is busy or stuck; see --emacs-timeout): the request was abandoned");
    if (direct_key_ == it->first) direct_key_.reset();
    it = outstanding_.erase(it);
  }
}

EmacsBridge::Clock::time_point EmacsBridge::next_ping() const {
  // A ping never answered (Emacs was stuck when it came) is given up
  // after the timeout, and another one sent.
  return ping_pending_ ? ping_sent_ + options_.timeout : std::max(last_heard_, ping_sent_) + options_.ping_interval;
}

void EmacsBridge::ping(Clock::time_point now) {
  if (!emacs_ || outstanding_.empty() || now < next_ping()) return;
  json message = {{"jsonrpc", "2.0"}, {"id", std::string(kPingPrefix) + std::to_string(++pings_)}, {"method", "ping"}};
  to_emacs_ += message.dump();
  to_emacs_ += '\n';
  ping_pending_ = true;
  ping_sent_ = now;
  flush_emacs();
}

EmacsBridge::Clock::time_point EmacsBridge::next_wakeup(Clock::time_point now) const {
  Clock::time_point next = now + std::chrono::seconds(60);
  for (const auto& [key, request] : outstanding_) {
    Clock::time_point since = client_open_ ? std::max(request.sent, last_heard_) : request.sent;
    next = std::min(next, since + options_.timeout);
  }
  if (emacs_ && !outstanding_.empty()) next = std::min(next, next_ping());
  return std::max(next, now);
}

void EmacsBridge::run() {
  while (client_open_ || !outstanding_.empty() || !held_back_.empty()) {
    Clock::time_point now = Clock::now();
    expire(now);
    ping(now);
    if (!direct_key_ && !held_back_.empty()) release_held_back();
    if (!client_open_ && outstanding_.empty() && held_back_.empty()) break;
    pollfd fds[3];
    nfds_t count = 0;
    int client_index = -1, emacs_index = -1, answers_index = -1;
    if (client_open_ && !client_waits()) {
      client_index = static_cast<int>(count);
      fds[count++] = {in_fd_, POLLIN, 0};
    }
    if (emacs_) {
      emacs_index = static_cast<int>(count);
      fds[count++] = {emacs_.get(), static_cast<short>(POLLIN | (to_emacs_.empty() ? 0 : POLLOUT)), 0};
    }
    if (answers_) {
      answers_index = static_cast<int>(count);
      fds[count++] = {answers_.get(), POLLIN, 0};
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_wakeup(now) - now).count() + 1;
    int ready = ::poll(fds, count, static_cast<int>(wait));
    if (ready < 0 && errno != EINTR) {
      log(LogLevel::Error, std::string("poll: ") + std::strerror(errno));
      break;
    }
    if (ready <= 0) continue;
    // The socket first: what Emacs sent about a call comes before the
    // runner's answer to it.
    if (emacs_index >= 0 && fds[emacs_index].revents) {
      if (fds[emacs_index].revents & (POLLIN | POLLHUP | POLLERR)) read_emacs();
      if (emacs_ && (fds[emacs_index].revents & POLLOUT)) flush_emacs();
    }
    if (answers_index >= 0 && answers_ && (fds[answers_index].revents & (POLLIN | POLLHUP | POLLERR))) read_answers();
    if (client_index >= 0 && (fds[client_index].revents & (POLLIN | POLLHUP | POLLERR))) read_client();
    if (!direct_key_ && !held_back_.empty()) release_held_back();
  }
  close_answer_channel();
  // Requests left after a poll failure still get their one answer.
  if (!outstanding_.empty()) lost("the bridge stopped");
}

}  // namespace agentq::mcp
