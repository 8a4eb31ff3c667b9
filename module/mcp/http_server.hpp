// MCP's Streamable HTTP transport (spec 2025-11-25), on 127.0.0.1 only:
// POST /mcp carries one JSON-RPC message; its answer is JSON, or an SSE
// stream (the call's notifications, then its response) when the request
// asks for progress (params._meta.progressToken) and accepts
// text/event-stream.  Notifications and responses get 202.  GET is 405
// (no server-initiated stream); DELETE ends a session.
//
// Every request shows the bearer token (else 401) and no foreign Origin
// (else 403).  initialize opens a session (Mcp-Session-Id); every other
// request names one (400 without, 404 for an unknown one).
//
// A small HTTP/1.1 server: one thread per connection (at most
// max_connections, further ones get 503), keep-alive, Content-Length
// bodies (chunked ones get 411), bounded heads (431) and bodies (413), and
// a request that does not arrive whole within read_timeout is dropped.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "mcp/http_sessions.hpp"
#include "mcp/mcp_session.hpp"
#include "mcp/unique_fd.hpp"

namespace agentq::mcp {

struct HttpServerOptions {
  int port = 0;       // 0: a free port (see HttpServer::port)
  std::string token;  // the bearer token every request must show
  std::size_t max_connections = 32;
  std::size_t max_sessions = 64;
  std::size_t max_head_bytes = 16 * 1024;
  std::size_t max_body_bytes = std::size_t{16} << 20;
  std::chrono::milliseconds read_timeout{30000};  // a request's arrival, and an idle keep-alive
};

class HttpServer {
 public:
  using SessionFactory = std::function<std::unique_ptr<McpSession>()>;

  // Binds 127.0.0.1:PORT and listens.  Throws std::system_error.
  HttpServer(HttpServerOptions options, SessionFactory make_session);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Accepts connections on a thread of its own until stop().
  void start();
  // Stops accepting, ends every session (cancelling its calls), closes
  // every connection and waits for their threads.  Idempotent.
  void stop();

 private:
  struct Exchange;
  void accept_loop();
  void serve_connection(int fd);
  bool handle(int fd, Exchange& exchange);
  bool post(int fd, Exchange& exchange);
  bool remove_session(int fd, Exchange& exchange);

  HttpServerOptions options_;
  SessionFactory make_session_;
  SessionTable sessions_;
  UniqueFd listener_;
  UniqueFd wake_read_, wake_write_;  // stop() wakes the accept loop
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::set<int> connections_;  // open ones, for stop()
  std::size_t threads_ = 0;    // connection threads running
  bool stopping_ = false;
};

}  // namespace agentq::mcp
