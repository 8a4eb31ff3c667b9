// The HTTP server's inline Lisp (see http_server.hpp and
// core/idle_reader.hpp): while no connection's thread serves a request,
// the Lisp worker waits on the connections that wait for their next
// request, reads it, and runs a plain evaluate_lisp POST itself; a
// watcher thread takes over an evaluation that lasts or asks its owner.

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "mcp/http_connection.hpp"
#include "mcp/http_wire.hpp"
#include "mcp/log.hpp"

namespace agentq::mcp {

// What the runtime sees of this server: the worker's side.
class HttpServer::WorkerReading final : public IdleReader {
 public:
  explicit WorkerReading(HttpServer& server) : server_(server) {}
  // The parked connections' set: readable when one of them is.
  int fd() const override {
    return server_.worker_reads_.load(std::memory_order_acquire) ? server_.epoll_.get() : -1;
  }
  void read() override { server_.read_on_worker(); }
  void job_started(std::chrono::steady_clock::time_point take_over_at) override { server_.alarm_->arm(take_over_at); }
  void owner_needed() override { server_.alarm_->ask(); }

 private:
  HttpServer& server_;
};

void HttpServer::ThreadServes::begin() {
  if (!server_ || begun_) return;
  begun_ = true;
  std::lock_guard lock(server_->inline_mutex_);
  ++server_->threads_serving_;
  server_->hand_back_all_locked();
}

void HttpServer::ThreadServes::end() {
  if (!begun_) return;
  begun_ = false;
  std::lock_guard lock(server_->inline_mutex_);
  --server_->threads_serving_;
}

struct HttpServer::PlainPost {
  std::size_t length = 0;  // of the request, head and body, in the buffer
  std::shared_ptr<McpSession> session;
  std::unique_ptr<McpSession::InlineCall> call;
  std::string_view body;  // in the buffer
};

void HttpServer::use_inline_lisp(InlineLisp lisp) {
  if (inline_lisp_ || !lisp.idle || !lisp.idle()) return;
  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  alarm_ = std::make_unique<sys::TakeOverAlarm>();
  if (!epoll_ || !alarm_->ok()) {
    log(LogLevel::Warn, "inline Lisp is off: no epoll, timer or event descriptor");
    epoll_.reset();
    alarm_.reset();
    return;
  }
  inline_lisp_ = std::move(lisp);
  worker_reading_ = std::make_shared<WorkerReading>(*this);
  inline_lisp_->set_reader(worker_reading_.get());
  watcher_ = std::thread([this] { alarm_->watch([this](bool asked) { take_over_inline(asked); }); });
}

void HttpServer::stop_inline() {
  if (!inline_lisp_) return;
  {
    std::lock_guard lock(inline_mutex_);
    if (inline_stopping_) return;
    inline_stopping_ = true;
    hand_back_all_locked();
  }
  // Waits until the worker has left read_on_worker (stopping an inline
  // evaluation nobody waits for).
  inline_lisp_->set_reader(nullptr);
  alarm_->stop();
  if (watcher_.joinable()) watcher_.join();
}

HttpServer::Parked HttpServer::park(Connection& connection) {
  // Not while a job runs or waits (one a quit left unwinding): the next
  // call, made by this thread, settles it first.
  if (!inline_lisp_->idle()) return Parked::No;
  std::unique_lock lock(inline_mutex_);
  if (threads_serving_ > 0 || inline_stopping_) return Parked::No;
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.ptr = &connection;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, connection.fd, &event) < 0) return Parked::No;
  connection.reader = Connection::Reader::Parked;
  connection.last_served = std::chrono::steady_clock::now();
  parked_.insert(&connection);
  for (;;) {
    const auto deadline = connection.last_served + options_.read_timeout;
    if (connection.handed_back.wait_until(lock, deadline, [&] {
          return connection.reader == Connection::Reader::Thread;
        }))
      return Parked::Back;
    // Idle for read_timeout: closed, as an idle connection of a thread's.
    if (connection.reader == Connection::Reader::Parked &&
        std::chrono::steady_clock::now() >= connection.last_served + options_.read_timeout) {
      hand_back_locked(connection);
      return Parked::Closed;
    }
    // The worker, or the watcher, serves it: it hands it back when done.
    if (connection.reader == Connection::Reader::Worker) connection.last_served = std::chrono::steady_clock::now();
  }
}

void HttpServer::hand_back_locked(Connection& connection) {
  if (parked_.erase(&connection) != 0) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, connection.fd, nullptr);
  connection.reader = Connection::Reader::Thread;
  connection.handed_back.notify_one();
}

void HttpServer::hand_back_all_locked() {
  // Not the one the worker serves: it hands it back itself.
  for (Connection* connection : parked_) {
    if (connection->reader != Connection::Reader::Parked) continue;
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, connection->fd, nullptr);
    connection->reader = Connection::Reader::Thread;
    connection->handed_back.notify_one();
  }
  std::erase_if(parked_, [](Connection* c) { return c->reader == Connection::Reader::Thread; });
}

void HttpServer::read_on_worker() {
  epoll_event events[16];
  const int ready = epoll_wait(epoll_.get(), events, 16, 0);
  for (int i = 0; i < ready; ++i) {
    auto* connection = static_cast<Connection*>(events[i].data.ptr);
    {
      // Handed back meanwhile (its thread may have left): not looked at.
      std::lock_guard lock(inline_mutex_);
      if (!parked_.contains(connection) || connection->reader != Connection::Reader::Parked) continue;
      connection->reader = Connection::Reader::Worker;
    }
    Served served;
    try {
      served = serve_on_worker(*connection);
    } catch (...) {
      // Its thread's again, unless the watcher has its call.
      std::lock_guard lock(inline_mutex_);
      if (inline_run_ && inline_run_->connection == connection) {
        if (taken_over_) return;
        inline_run_.reset();
      }
      worker_reads_.store(true, std::memory_order_release);
      served = Served::Back;
    }
    // Its call taken over: the connection is the watcher's, and every
    // other one its thread's.
    if (served == Served::TakenOver) return;
    std::lock_guard lock(inline_mutex_);
    if (served == Served::Keep && threads_serving_ == 0 && !inline_stopping_) {
      connection->reader = Connection::Reader::Parked;
      connection->last_served = std::chrono::steady_clock::now();
    } else {
      hand_back_locked(*connection);
    }
  }
}

HttpServer::Served HttpServer::serve_on_worker(Connection& connection) {
  // What has come, without waiting.
  const std::size_t most = options_.max_head_bytes + options_.max_body_bytes;
  for (;;) {
    char chunk[16384];
    ssize_t n = ::recv(connection.fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      connection.buffer.append(chunk, static_cast<std::size_t>(n));
      if (connection.buffer.size() > most) return Served::Back;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return Served::Back;  // the end, or an error: its thread sees it
  }
  while (!connection.buffer.empty()) {
    std::optional<PlainPost> post = plain_post(connection);
    if (!post) return Served::Back;  // anything else is the thread's
    std::shared_ptr<McpSession::InlineCall> call = std::move(post->call);
    {
      std::lock_guard lock(inline_mutex_);
      // The next of pipelined calls, not while another thread's call waits.
      if (threads_serving_ > 0 || inline_stopping_) return Served::Back;
      inline_run_ = InlineRun{&connection, post->session, call};
      taken_over_ = false;
      alarm_->clear();
      worker_reads_.store(false, std::memory_order_release);
    }
    if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "<- " + shortened(post->body) + " (on the worker)");
    connection.buffer.erase(0, post->length);
    std::optional<std::string> response = call->run();
    {
      // Taken over; or so long ago that other calls have run since (this
      // thread was retired in it and has come back).
      std::lock_guard lock(inline_mutex_);
      if (taken_over_ || !inline_run_ || inline_run_->call != call) return Served::TakenOver;
      inline_run_.reset();
      worker_reads_.store(true, std::memory_order_release);
    }
    const std::string answer = json_answer(response, true);
    // Not waiting on a client that does not read: what does not fit now
    // its thread writes.
    std::string_view left = answer;
    while (!left.empty()) {
      ssize_t n = ::send(connection.fd, left.data(), left.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        connection.unsent.assign(left);
        return Served::Back;
      }
      if (n <= 0) return Served::Back;
      left.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  return Served::Keep;
}

std::optional<HttpServer::PlainPost> HttpServer::plain_post(const Connection& connection) {
  // Every check the connection's thread makes, passed; whatever fails one
  // (or is not a plain call) its thread reads again and answers.
  const std::string& buffer = connection.buffer;
  const std::size_t head_end = find_head_end(buffer);
  if (head_end == std::string::npos || head_end > options_.max_head_bytes) return std::nullopt;
  std::string_view head(buffer.data(), head_end);
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.remove_suffix(1);
  std::optional<HttpRequest> request = parse_request_head(head);
  if (!request || request->method != "POST" || request->count("transfer-encoding") || !keeps_alive(*request))
    return std::nullopt;
  std::string_view path = request->target;
  if (path.substr(0, path.find('?')) != "/mcp") return std::nullopt;
  std::optional<long long> length = content_length(*request);
  if (!length || *length < 0 || static_cast<std::size_t>(*length) > options_.max_body_bytes ||
      buffer.size() - head_end < static_cast<std::size_t>(*length))
    return std::nullopt;
  if (auto origin = request->header("origin"); origin && !origin_allowed(*origin, port_)) return std::nullopt;
  auto authorization = request->header("authorization");
  if (!authorization || request->count("authorization") != 1 || !bearer_matches(*authorization, options_.token))
    return std::nullopt;
  if (auto version = request->header("mcp-protocol-version"); version && !protocol_version_supported(*version))
    return std::nullopt;
  if (!header_lists(request->header("content-type"), "application/json")) return std::nullopt;
  if (auto accept = request->header("accept"); accept && !header_lists(accept, "application/json") &&
                                               !header_lists(accept, "*/*") &&
                                               !header_lists(accept, "text/event-stream"))
    return std::nullopt;
  auto session_id = request->header("mcp-session-id");
  if (!session_id) return std::nullopt;
  PlainPost post;
  post.session = sessions_.find(std::string(*session_id));
  if (!post.session) return std::nullopt;
  post.length = head_end + static_cast<std::size_t>(*length);
  post.body = std::string_view(buffer).substr(head_end, static_cast<std::size_t>(*length));
  post.call = post.session->inline_call(post.body);
  if (!post.call) return std::nullopt;
  return post;
}

void HttpServer::take_over_inline(bool asked) {
  InlineRun run;
  {
    std::lock_guard lock(inline_mutex_);
    // A stale alarm (the call ended), or one of the next call's before
    // its evaluation started.
    if (!inline_run_ || taken_over_ || alarm_->due_ns() == 0 || (!asked && !alarm_->due_now())) return;
    // The worker kept the result: it finished, and answers it.
    if (!inline_lisp_->claim()) return;
    taken_over_ = true;
    run = *inline_run_;
    // Its thread's when the call ends; the worker waits on it no more.
    if (parked_.erase(run.connection) != 0) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, run.connection->fd, nullptr);
    // While it runs, every connection is its thread's: a ping, a
    // cancellation, the next calls are read meanwhile.
    ++threads_serving_;
    hand_back_all_locked();
  }
  log(LogLevel::Debug, "an HTTP call runs on: its owner takes it over");
  McpSession::Link link([](std::string_view) { return false; });
  std::optional<std::string> response;
  {
    HangupWatch::Watching watching(run.connection->watch, link);
    response = run.call->take_over(link);
  }
  // The thread waits in park(): this is the connection's only writer.
  write_all(run.connection->fd, json_answer(response, true));
  {
    std::lock_guard lock(inline_mutex_);
    if (inline_run_ && inline_run_->call == run.call) inline_run_.reset();
    --threads_serving_;
    hand_back_locked(*run.connection);
    worker_reads_.store(true, std::memory_order_release);
  }
  // The worker (or the one that replaced it) waits on the connections again.
  inline_lisp_->reader_changed();
}

}  // namespace agentq::mcp
