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
//
// With inline Lisp (use_inline_lisp), a connection waiting for its next
// request is handed to the Lisp worker while it is idle (parked): the
// worker waits on every parked connection (core/idle_reader.hpp), reads
// the request itself and runs a plain evaluate_lisp POST there and then,
// answering it as JSON, so the usual call costs no thread hop (as over
// stdio).  Anything else it hands back, with what it read, to the
// connection's thread.  An evaluation that lasts (2 ms) or asks its owner
// is taken over by a watcher thread, which waits for it as a connection's
// thread waits for a call; meanwhile, and while any connection's thread
// serves a request itself, every connection is its own thread's again
// (http_inline.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "mcp/http_sessions.hpp"
#include "mcp/inline_lisp.hpp"
#include "mcp/mcp_session.hpp"
#include "mcp/unique_fd.hpp"
#include "sys/take_over_alarm.hpp"

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
  // Before start(): the Lisp worker serves the usual calls itself.
  void use_inline_lisp(InlineLisp lisp);
  // Accepts connections on a thread of its own until stop().
  void start();
  // Stops accepting, ends every session (cancelling its calls), closes
  // every connection and waits for their threads.  Idempotent.
  void stop();

 private:
  struct Exchange;
  struct Connection;
  class WorkerReading;
  friend class WorkerReading;
  void accept_loop();
  void serve_connection(int fd);
  bool handle(int fd, Exchange& exchange);
  bool post(int fd, Exchange& exchange);
  bool remove_session(int fd, Exchange& exchange);

  // --- inline Lisp (http_inline.cpp); guarded by inline_mutex_ unless said
  enum class Parked { No, Back, Closed };
  // On CONNECTION's thread, between requests, when nothing is buffered:
  // the connection is the worker's until it hands it back (Back: its
  // buffer holds what the worker read), the connection idles past
  // read_timeout or the server stops (Closed), or it could not be parked
  // (No).
  Parked park(Connection& connection);
  // While one lives, a connection's thread serves a request itself: no
  // connection is the worker's.
  class ThreadServes;
  void hand_back_locked(Connection& connection);
  void hand_back_all_locked();
  // On the worker (IdleReader::read): serves the parked connections that
  // have input.
  void read_on_worker();
  enum class Served { Keep, Back, TakenOver };
  Served serve_on_worker(Connection& connection);
  // The plain call at the head of CONNECTION's buffer, or null.
  struct PlainPost;
  std::optional<PlainPost> plain_post(const Connection& connection);
  // The watcher's, at each ring of alarm_: takes over an inline
  // evaluation that lasts or asks its owner.
  void take_over_inline(bool asked);
  void stop_inline();

  std::optional<InlineLisp> inline_lisp_;  // set before start()
  std::shared_ptr<IdleReader> worker_reading_;
  UniqueFd epoll_;  // the parked connections: what the worker waits on
  std::unique_ptr<sys::TakeOverAlarm> alarm_;
  std::thread watcher_;
  std::mutex inline_mutex_;
  std::set<Connection*> parked_;  // in epoll_ (not the one the worker serves)
  int threads_serving_ = 0;       // ThreadServes alive
  bool inline_stopping_ = false;
  // The call the worker runs, for the watcher that may take it over.
  struct InlineRun {
    // Its thread waits in park() until the connection is handed back.
    Connection* connection = nullptr;
    std::shared_ptr<McpSession> session;  // outlives CALL, which refers to it
    std::shared_ptr<McpSession::InlineCall> call;
  };
  std::optional<InlineRun> inline_run_;  // the worker's call, while it runs
  bool taken_over_ = false;                // ... which the watcher took over
  // The worker waits on epoll_; not while its call runs until the watcher
  // has taken it over and let it go: a worker that replaces this one
  // meanwhile (the first held an error) must not serve other connections
  // before the call is taken over (the take-over state is the call's).
  std::atomic<bool> worker_reads_{true};

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
