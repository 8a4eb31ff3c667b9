// The stdio server's inline Lisp (see stdio_server.hpp and
// core/idle_reader.hpp): the Lisp worker reads the input while nothing
// runs, and runs a plain evaluate_lisp call itself; a third thread, the
// watcher, takes over an evaluation that lasts or asks its owner.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "core/mcp_route.hpp"
#include "core/session_changes.hpp"
#include "mcp/log.hpp"
#include "mcp/stdio_pending.hpp"

namespace agentq::mcp {

// What the runtime sees of this server: the worker's side of the reading.
class StdioServer::WorkerReading final : public IdleReader {
 public:
  explicit WorkerReading(StdioServer& server) : server_(server) {}
  int fd() const override { return server_.worker_fd_.load(std::memory_order_acquire); }
  void read() override { server_.read_on_worker(); }
  void job_started(std::chrono::steady_clock::time_point take_over_at) override { server_.alarm_->arm(take_over_at); }
  void owner_needed() override { server_.alarm_->ask(); }

 private:
  StdioServer& server_;
};

void StdioServer::use_inline_lisp(InlineLisp lisp) {
  if (inline_lisp_ || !lisp.idle || !lisp.idle()) return;
  alarm_ = std::make_unique<sys::TakeOverAlarm>();
  if (!alarm_->ok()) {
    log(LogLevel::Warn, "inline Lisp is off: no timer or event descriptor");
    alarm_.reset();
    return;
  }
  inline_lisp_ = std::move(lisp);
  worker_options_ = options_;
  worker_reading_ = std::make_shared<WorkerReading>(*this);
  inline_lisp_->set_reader(worker_reading_.get());
  watcher_ = std::thread([this] { alarm_->watch([this](bool asked) { take_over_inline(asked); }); });
}

void StdioServer::stop_inline() {
  if (!inline_lisp_) return;
  worker_fd_.store(-1, std::memory_order_release);
  // Waits until the worker has left read_on_worker.
  inline_lisp_->set_reader(nullptr);
  alarm_->stop();
  if (watcher_.joinable()) watcher_.join();
  alarm_.reset();
  inline_lisp_.reset();
}

bool StdioServer::give_reading_to_worker() {
  if (!inline_lisp_) return false;
  {
    std::lock_guard lock(mutex_);
    if (executing_ || !queue_.empty() || closed_ || input_ended_ || handed_line_ || in_->line_buffered()) return false;
    // Not to a worker still busy with a job nobody waits for (one a quit
    // left unwinding): the next call, made here, settles it first.
    if (!inline_lisp_->idle()) return false;
    worker_fd_.store(in_->fd(), std::memory_order_release);
  }
  inline_lisp_->reader_changed();
  return true;
}

void StdioServer::pass_reading(std::optional<Line> line) {
  {
    std::lock_guard lock(mutex_);
    worker_fd_.store(-1, std::memory_order_release);
    handed_line_ = std::move(line);
    reading_free_ = true;
  }
  wake_.notify_all();
}

void StdioServer::read_on_worker() {
  // Called when the descriptor is readable: read once, then only what is
  // buffered; the worker's wait sees whether more has come.
  bool readable = true;
  while (worker_fd_.load(std::memory_order_acquire) >= 0) {
    Line line;
    switch (in_->try_next(line, readable)) {
      case LineReader::Ready::Wait:
        return;
      case LineReader::Ready::End:
        pass_reading(std::nullopt);
        return;
      case LineReader::Ready::Line:
        if (!run_on_worker(std::move(line))) return;
        break;
    }
  }
}

bool StdioServer::run_on_worker(Line line) {
  // The usual call alone: a plain evaluate_lisp, no progress to follow.
  std::optional<PlainEvaluation> call;
  if (!line.too_long) call = read_plain_evaluation(line.text);
  if (!call) {
    pass_reading(std::move(line));
    return false;
  }
  if (log_enabled(LogLevel::Debug)) log(LogLevel::Debug, "<- " + shortened(line.text) + " (on the worker)");
  std::shared_ptr<Pending> pending = new_pending(std::move(call->id));
  pending->simple = call->simple;
  if (call->simple) pending->name = "evaluate_lisp";
  pending->message = std::move(call->message);
  pending->text = std::move(line.text);
  {
    std::lock_guard lock(mutex_);
    executing_ = true;
    current_ = pending;
    inline_ = pending;
    taken_over_ = false;
    alarm_->clear();
    // Not the worker's while its call runs: a worker that replaces this
    // one meanwhile (it held an error) must not read before the call is
    // taken over.
    worker_fd_.store(-1, std::memory_order_release);
  }
  // A copy per call (two small functions): a worker retired inside the
  // call comes back through here while the next worker runs calls.
  ExecutionOptions options = worker_options_;
  options.context = &pending->context;
  const std::uint64_t definitions = pending->definitions = session_changes().generation();
  std::optional<std::string> response = run_call(*pending, std::move(pending->message), options);
  // The take-over alarm stays armed: the next call's evaluation sets it
  // again, and one that goes off after the call only finds it over (a
  // system call fewer per call).
  bool taken;
  {
    std::lock_guard lock(mutex_);
    // Taken over; or so long ago that other calls have run since (this
    // thread was retired in it and has come back).
    taken = taken_over_ || inline_ != pending;
    if (!taken) {
      worker_fd_.store(in_->fd(), std::memory_order_release);
      executing_ = false;
      current_.reset();
      inline_.reset();
    }
  }
  // Taken over: the watcher answers it, and the reading is the other
  // threads' now.
  if (taken) return false;
  answer(*pending, definitions, response);
  return true;
}

void StdioServer::take_over_inline(bool asked) {
  std::shared_ptr<Pending> pending;
  {
    std::lock_guard lock(mutex_);
    // A stale alarm (the call ended), or one of the next call's before
    // its evaluation started.
    if (!inline_ || taken_over_ || alarm_->due_ns() == 0 || (!asked && !alarm_->due_now())) return;
    // The worker kept the result: it finished, and answers it.
    if (!inline_lisp_->claim()) return;
    taken_over_ = true;
    pending = inline_;
    // The reading is these threads' while the call runs: a cancellation,
    // a ping, the next calls (queued) are read meanwhile.
    worker_fd_.store(-1, std::memory_order_release);
    reading_free_ = true;
  }
  wake_.notify_all();
  log(LogLevel::Debug, "request " + shortened(pending->id.dump()) + " runs on: its owner takes it over");
  ExecutionOptions options = options_;
  options.context = &pending->context;
  pending->context.adopt_running_job();
  // The message again, as the worker read it (see Pending::text).
  nlohmann::json message;
  if (std::optional<PlainEvaluation> call = read_plain_evaluation(pending->text)) message = std::move(call->message);
  std::optional<std::string> response = run_call(*pending, std::move(message), options);
  {
    std::lock_guard lock(mutex_);
    if (current_ == pending) current_.reset();  // no more cancellations for it
  }
  answer(*pending, pending->definitions, response);
  {
    std::lock_guard lock(mutex_);
    executing_ = false;
    inline_.reset();
  }
  wake_.notify_all();  // calls queued meanwhile, or the end
}

}  // namespace agentq::mcp
