// One connection of the HTTP server (mcp/http_server), and the inline
// Lisp's state: shared by its files, nothing else includes it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <string>

#include "mcp/hangup_watch.hpp"
#include "mcp/http_server.hpp"

namespace agentq::mcp {

struct HttpServer::Connection {
  explicit Connection(int fd) : fd(fd), watch(fd) {}
  const int fd;
  HangupWatch watch;
  // Read and not yet served; the worker's while it reads the connection,
  // else its thread's.
  std::string buffer;
  // An answer the worker could not write at once (the client reads
  // slowly): the connection's thread writes it first.
  std::string unsent;
  // Who reads the connection (guarded by inline_mutex_): its thread; the
  // worker, which waits on it (parked); or the worker serving it, or the
  // watcher that took its call over.
  enum class Reader { Thread, Parked, Worker } reader = Reader::Thread;
  std::condition_variable handed_back;  // with inline_mutex_: reader is Thread again
  std::chrono::steady_clock::time_point last_served{};  // by the worker (guarded)
};

class HttpServer::ThreadServes {
 public:
  explicit ThreadServes(HttpServer& server) : server_(server.inline_lisp_ ? &server : nullptr) {}
  ~ThreadServes() { end(); }
  ThreadServes(const ThreadServes&) = delete;
  ThreadServes& operator=(const ThreadServes&) = delete;

  // The request's call waits for its Lisp job (McpSession::Link::on_wait):
  // until end(), every connection is its thread's, so that nothing waits
  // behind the job.  Nothing without inline Lisp.
  void begin();
  void end();

 private:
  HttpServer* server_;
  bool begun_ = false;
};

}  // namespace agentq::mcp
