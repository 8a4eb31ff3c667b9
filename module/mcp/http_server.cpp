#include "mcp/http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/json_limits.hpp"
#include "core/jsonrpc.hpp"
#include "mcp/hangup_watch.hpp"
#include "mcp/http_connection.hpp"
#include "mcp/http_request.hpp"
#include "mcp/http_wire.hpp"
#include "mcp/log.hpp"
#include "mcp/unique_fd.hpp"

namespace agentq::mcp {

namespace {

// Reads what has come into BUFFER, waiting until DEADLINE; false at the
// end of the input, an error or the deadline.
bool read_more(int fd, std::string& buffer, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd ready{fd, POLLIN, 0};
    int rc = ::poll(&ready, 1, static_cast<int>(std::min<long long>(left.count(), 1000000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return false;
    char chunk[16384];
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
}

// A JSON-RPC error object with id null, the body of a refused POST.
std::string rpc_error(int code, const std::string& message) {
  nlohmann::json error = {{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", code}, {"message", message}}}};
  return error.dump();
}

// SESSION's answer to a request, while WATCH sees whether the client
// closes the connection meanwhile: then the call is stopped (LINK).
std::optional<std::string> post_watched(HangupWatch& watch, McpSession& session, std::string_view text,
                                        nlohmann::json message, McpSession::Link& link) {
  HangupWatch::Watching watching(watch, link);
  return session.post(text, std::move(message), link);
}

// After a refusal: the answer is sent and the sending side shut, then
// what the client still sends (a body not read) is read and dropped for a
// moment, so that closing does not reset the connection before the client
// has read the answer.
void drain_and_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  std::string ignored;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::size_t total = 0;
  while (total < (std::size_t{1} << 20) && read_more(fd, ignored, deadline)) {
    total += ignored.size();
    ignored.clear();
  }
}

}  // namespace

struct HttpServer::Exchange {
  HangupWatch* watch = nullptr;  // the connection's
  ThreadServes* serving = nullptr;  // begun when a call waits (inline Lisp)
  HttpRequest request;
  std::string body;
  bool keep_alive = true;
};

HttpServer::HttpServer(HttpServerOptions options, SessionFactory make_session)
    : options_(std::move(options)), make_session_(std::move(make_session)), sessions_(options_.max_sessions) {
  listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener_) throw std::system_error(errno, std::generic_category(), "socket");
  int yes = 1;
  ::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only, whatever the port
  address.sin_port = htons(static_cast<std::uint16_t>(options_.port));
  if (options_.port < 0 || options_.port > 65535 ||
      ::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) < 0)
    throw std::system_error(errno, std::generic_category(), "bind 127.0.0.1:" + std::to_string(options_.port));
  if (::listen(listener_.get(), 64) < 0) throw std::system_error(errno, std::generic_category(), "listen");
  socklen_t size = sizeof address;
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address), &size);
  port_ = ntohs(address.sin_port);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) throw std::system_error(errno, std::generic_category(), "pipe");
  wake_read_.reset(fds[0]);
  wake_write_.reset(fds[1]);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() { acceptor_ = std::thread([this] { accept_loop(); }); }

void HttpServer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
  }
  if (wake_write_) {
    char byte = 0;
    [[maybe_unused]] ssize_t n = ::write(wake_write_.get(), &byte, 1);
  }
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& [id, session] : sessions_.take_all()) session->end();
  stop_inline();
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return threads_ == 0; });
}

void HttpServer::accept_loop() {
  for (;;) {
    pollfd ready[2] = {{listener_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    int rc = ::poll(ready, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || ready[1].revents) return;
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) ::poll(nullptr, 0, 50);  // out of descriptors: not a busy loop
      continue;
    }
    timeval send_timeout{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    std::unique_lock lock(mutex_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    if (threads_ >= options_.max_connections) {
      lock.unlock();
      log(LogLevel::Warn, "HTTP: more than " + std::to_string(options_.max_connections) + " connections: refused one");
      timeval quick{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &quick, sizeof quick);
      std::string body = "too many connections\n";
      write_all(fd, response_head(503, "text/plain", body.size(), false) + body);
      ::close(fd);
      continue;
    }
    ++threads_;
    connections_.insert(fd);
    lock.unlock();
    try {
      std::thread([this, fd] {
        try {
          serve_connection(fd);
        } catch (const std::exception& e) {
          log(LogLevel::Error, std::string("HTTP connection: ") + e.what());
        }
        std::lock_guard guard(mutex_);
        connections_.erase(fd);
        ::close(fd);
        if (--threads_ == 0) idle_.notify_all();
      }).detach();
    } catch (const std::system_error&) {
      std::lock_guard guard(mutex_);
      connections_.erase(fd);
      ::close(fd);
      if (--threads_ == 0) idle_.notify_all();
    }
  }
}

void HttpServer::serve_connection(int fd) {
  Connection connection(fd);
  HangupWatch& watch = connection.watch;
  std::string& buffer = connection.buffer;
  auto refuse = [fd](int status, std::string_view why, std::string_view extra = {}) {
    std::string body = std::string(why) + "\n";
    write_all(fd, response_head(status, "text/plain", body.size(), false, extra) + body);
    drain_and_close(fd);
  };
  for (;;) {
    // Between requests, the worker waits for the next one (inline Lisp).
    if (inline_lisp_ && buffer.empty()) {
      if (park(connection) == Parked::Closed) return;
      if (!connection.unsent.empty()) {
        if (!write_all(fd, connection.unsent)) return;
        connection.unsent.clear();
      }
    }
    // A request has read_timeout to arrive whole (and an idle connection
    // as long to send its next one): a half request held open costs only
    // its own thread, and not for ever.
    const auto deadline = std::chrono::steady_clock::now() + options_.read_timeout;
    std::size_t head_end;
    while ((head_end = find_head_end(buffer)) == std::string::npos) {
      if (buffer.size() > options_.max_head_bytes) return refuse(431, "the request head is too large");
      if (!read_more(fd, buffer, deadline)) return;
    }
    if (head_end > options_.max_head_bytes) return refuse(431, "the request head is too large");
    std::string_view head(buffer.data(), head_end);
    while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.remove_suffix(1);
    std::optional<HttpRequest> request = parse_request_head(head);
    if (!request) return refuse(400, "malformed request");
    Exchange exchange;
    exchange.watch = &watch;
    exchange.request = std::move(*request);
    if (exchange.request.count("transfer-encoding"))
      return refuse(411, "chunked request bodies are not read: send Content-Length");
    std::optional<long long> length = content_length(exchange.request);
    if (length && *length < 0) return refuse(400, "malformed Content-Length");
    const std::size_t body_bytes = length ? static_cast<std::size_t>(*length) : 0;
    if (body_bytes > options_.max_body_bytes)
      return refuse(413, "the body is larger than " + std::to_string(options_.max_body_bytes) + " bytes");
    // Whoever may not ask is answered before its body is read; the
    // connection then closes.
    // DNS rebinding: a page elsewhere must not reach this server.
    if (auto origin = exchange.request.header("origin"); origin && !origin_allowed(*origin, port_)) {
      log(LogLevel::Warn, "HTTP: refused a request from Origin " + shortened(*origin, 100));
      return refuse(403, "forbidden Origin");
    }
    auto authorization = exchange.request.header("authorization");
    if (!authorization || exchange.request.count("authorization") != 1 ||
        !bearer_matches(*authorization, options_.token)) {
      return refuse(401, "a valid bearer token is required (see the token file sly-agent-q-mcp printed)",
                    "WWW-Authenticate: Bearer\r\n");
    }
    buffer.erase(0, head_end);
    while (buffer.size() < body_bytes)
      if (!read_more(fd, buffer, deadline)) return;
    exchange.body = buffer.substr(0, body_bytes);
    buffer.erase(0, body_bytes);
    exchange.keep_alive = keeps_alive(exchange.request);
    ThreadServes serving(*this);
    exchange.serving = &serving;
    if (!handle(fd, exchange) || !exchange.keep_alive) return;
  }
}

bool HttpServer::handle(int fd, Exchange& exchange) {
  const HttpRequest& request = exchange.request;
  auto plain = [&](int status, std::string_view text, std::string_view extra = {}) {
    std::string body = std::string(text) + (text.empty() ? "" : "\n");
    return write_all(fd, response_head(status, body.empty() ? "" : "text/plain", body.size(), exchange.keep_alive,
                                       extra) + body);
  };
  std::string_view path = request.target;
  path = path.substr(0, path.find('?'));
  if (path != "/mcp") return plain(404, "not found: the MCP endpoint is /mcp");
  if (auto version = request.header("mcp-protocol-version"); version && !protocol_version_supported(*version))
    return plain(400, "unsupported MCP-Protocol-Version");
  if (request.method == "POST") return post(fd, exchange);
  if (request.method == "DELETE") return remove_session(fd, exchange);
  // No stream the server starts on its own: the spec allows 405 for GET.
  return plain(405, "only POST and DELETE are served at /mcp", "Allow: POST, DELETE\r\n");
}

bool HttpServer::remove_session(int fd, Exchange& exchange) {
  auto id = exchange.request.header("mcp-session-id");
  std::shared_ptr<McpSession> session = id ? sessions_.remove(std::string(*id)) : nullptr;
  if (!session) {
    std::string body = id ? "unknown session\n" : "Mcp-Session-Id is required\n";
    return write_all(fd, response_head(id ? 404 : 400, "text/plain", body.size(), exchange.keep_alive) + body);
  }
  log(LogLevel::Info, "HTTP: session ended by its client");
  session->end();
  return write_all(fd, response_head(204, "", 0, exchange.keep_alive));
}

bool HttpServer::post(int fd, Exchange& exchange) {
  const HttpRequest& request = exchange.request;
  auto answer = [&](int status, const std::string& body, std::string_view extra = {}) {
    return write_all(fd, response_head(status, body.empty() ? "" : "application/json", body.size(),
                                       exchange.keep_alive, extra) + body);
  };
  auto content_type = request.header("content-type");
  if (!content_type || !header_lists(content_type, "application/json"))
    return answer(415, rpc_error(jsonrpc_error::kInvalidRequest, "Content-Type must be application/json"));
  auto accept = request.header("accept");
  const bool accepts_sse = header_lists(accept, "text/event-stream");
  if (accept && !accepts_sse && !header_lists(accept, "application/json") && !header_lists(accept, "*/*"))
    return answer(406, rpc_error(jsonrpc_error::kInvalidRequest,
                                 "Accept must list application/json or text/event-stream"));
  std::optional<nlohmann::json> parsed = parse_json_bounded(exchange.body);
  if (!parsed) return answer(400, rpc_error(jsonrpc_error::kParseError, "Parse error: the body is not JSON"));
  if (parsed->is_array())
    return answer(400, rpc_error(jsonrpc_error::kInvalidRequest,
                                 "Invalid Request: one JSON-RPC message per POST (no batches over HTTP)"));
  if (!parsed->is_object())
    return answer(400, rpc_error(jsonrpc_error::kInvalidRequest, "Invalid Request: not a JSON-RPC message"));
  const nlohmann::json& message = *parsed;
  const auto method = message.find("method");
  const bool has_method = method != message.end() && method->is_string();
  const bool is_request = has_method && message.contains("id");
  auto drop = [](std::string_view) { return false; };

  if (is_request && *method == "initialize") {
    std::shared_ptr<McpSession> session = make_session_();
    McpSession::Link link(drop);
    std::optional<std::string> response = session->post(exchange.body, std::move(*parsed), link);
    if (!response) return answer(202, "");
    if (response->find("\"error\"") != std::string::npos &&
        nlohmann::json::parse(*response, nullptr, false).contains("error")) {
      session->end();
      return answer(200, *response);
    }
    std::shared_ptr<McpSession> evicted;
    std::string id = sessions_.add(session, evicted);
    if (evicted) {
      log(LogLevel::Info, "HTTP: " + std::to_string(options_.max_sessions) +
                              " sessions open: the one used longest ago ended to make room");
      evicted->end();
    }
    if (id.empty()) {
      session->end();
      return answer(503, rpc_error(jsonrpc_error::kInternalError, "this server takes no MCP sessions"));
    }
    log(LogLevel::Info, "HTTP: session opened (" + std::to_string(sessions_.size()) + " open)");
    return answer(200, *response, "Mcp-Session-Id: " + id + "\r\n");
  }

  auto session_id = request.header("mcp-session-id");
  if (!session_id)
    return answer(400, rpc_error(jsonrpc_error::kInvalidRequest, "Mcp-Session-Id is required: initialize first"));
  std::shared_ptr<McpSession> session = sessions_.find(std::string(*session_id));
  if (!session) return answer(404, rpc_error(jsonrpc_error::kInvalidRequest, "unknown or ended MCP session"));

  if (!is_request) {
    // A notification (cancellations among them) or a response: accepted.
    McpSession::Link link(drop);
    session->post(exchange.body, std::move(*parsed), link);
    return answer(202, "");
  }

  // A request that asks for progress is answered on an SSE stream, so
  // that its notifications can come before its response.
  bool wants_stream = false;
  if (auto params = message.find("params"); params != message.end() && params->is_object())
    if (auto meta = params->find("_meta"); meta != params->end() && meta->is_object())
      wants_stream = meta->contains("progressToken");
  // And one whose client asked for log messages: they come on its stream.
  if (!wants_stream) wants_stream = session->streams_logs(message);
  auto on_wait = [&exchange] { exchange.serving->begin(); };
  if (!wants_stream || !accepts_sse) {
    McpSession::Link link(drop);
    link.on_wait = on_wait;
    std::optional<std::string> response = post_watched(*exchange.watch, *session, exchange.body, std::move(*parsed), link);
    return write_all(fd, json_answer(response, exchange.keep_alive));
  }

  // SSE, chunked, so the connection lives on after the stream.
  std::mutex write_mutex;
  bool open = write_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                            "Transfer-Encoding: chunked\r\n" +
                                std::string(exchange.keep_alive ? "" : "Connection: close\r\n") + "\r\n");
  auto event = [&](std::string_view json_text) {
    std::lock_guard lock(write_mutex);
    if (!open) return false;
    // data: lines carry no newline of the text: JSON text has none raw.
    std::string data = "event: message\ndata: " + std::string(json_text) + "\n\n";
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    open = write_all(fd, std::string(size) + data + "\r\n");
    return open;
  };
  McpSession::Link link(event);
  link.on_wait = on_wait;
  std::optional<std::string> response = post_watched(*exchange.watch, *session, exchange.body, std::move(*parsed), link);
  if (response) event(*response);
  std::lock_guard lock(write_mutex);
  return open && write_all(fd, "0\r\n\r\n");
}

}  // namespace agentq::mcp
