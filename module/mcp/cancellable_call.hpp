// McpCallContext, the context of one tools/call (mcp/stdio_server): a
// cancellable call, which notifications/cancelled stops.  (What any call may
// ask of its caller is core/call_context.hpp's CallContext.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/call_context.hpp"
#include "core/mcp_logging.hpp"
#include "core/progress_reporter.hpp"

namespace agentq::mcp {

class McpCallContext final : public CallContext {
 public:
  // Stops the Lisp job with this id, from any thread (Runtime::cancel).
  using JobCanceller = std::function<void(std::uint64_t job_id)>;

  explicit McpCallContext(JobCanceller cancel_job) : cancel_job_(std::move(cancel_job)) {}

  // From any thread: the call's Lisp job, if one is queued or running, is
  // interrupted at once; any later wait of the call sees poll() true and
  // stops too.  The call then ends [ERROR] INTERRUPTED, which the server
  // does not send: a cancelled request gets no response.
  void cancel();

  // ON_WAIT runs (once, on the calling thread) the first time the call
  // polls: when it waits for work elsewhere for longer than a moment (the
  // runtime spins first).  The stdio server hands its reading on then.
  void set_on_wait(std::function<void()> on_wait) { on_wait_ = std::move(on_wait); }

  // NOTIFIER sends one JSON-RPC notification text (say
  // notifications/progress) to the client that made this call, while it
  // runs: the transport sets it before the call starts.  Over stdio it
  // writes a line on stdout (the LineWriter of the responses); over HTTP an
  // SSE event on that request's own response stream.  Called from any
  // thread; the transport serializes.
  using Notifier = std::function<bool(std::string_view json_text)>;
  void set_notifier(Notifier notifier) { notifier_ = std::move(notifier); }
  // Sends JSON_TEXT (a whole notification object, no newline) for this
  // call; false when no transport took it (none set, or the client went).
  bool notify(std::string_view json_text) const { return notifier_ && notifier_(json_text); }
  // The request's params._meta.progressToken: while the call runs, the
  // client gets notifications/progress with the output as it is printed
  // (bounded) and, when nothing is printed, every second the time it has
  // run.  Null: none is sent.
  void set_progress_token(nlohmann::json token) { progress_ = ProgressReporter(std::move(token)); }

  // The client's logging level (its session's; null: it logs nothing)
  // and the request's id, which its log messages name.
  void set_client_log(const ClientLogLevel* level, nlohmann::json request_id) {
    log_level_ = level;
    request_id_ = std::move(request_id);
  }
  // A notifications/message through the notifier, when the client's level
  // admits LEVEL; at most kMaxLogMessagesPerCall per call.
  void log_to_client(McpLogLevel level, const std::string& message, const std::string& tool) override;

  bool poll() override {
    if (on_wait_) std::exchange(on_wait_, nullptr)();
    if (following()) {
      if (std::string text = progress_.tick(); !text.empty()) notify(text);
    }
    return cancelled_.load(std::memory_order_relaxed);
  }
  bool streams_output() const override { return following(); }
  void output(const std::string& text) override;
  bool cancelled() const override { return cancelled_.load(std::memory_order_relaxed); }
  bool interrupt_is_cancel() const override { return true; }
  bool wants_structured() const override { return true; }
  void job_queued(std::uint64_t job_id) override;
  // Nobody can be asked headless: see headless_code_approval.
  HostAnswer approve_in_host(const std::string& form) override;
  void set_allow_dangerous(bool allow) { allow_dangerous_ = allow; }
  // The stdio server's thread takes over the evaluation the worker runs
  // for this call (core/idle_reader.hpp): from now on, the call's
  // evaluation is that one, waited for here.
  void adopt_running_job() { adopts_.store(true, std::memory_order_release); }
  bool adopts_running_job() const override { return adopts_.load(std::memory_order_acquire); }
  // Per thread: the worker's run is superseded, the taker's is not.
  void mark_superseded() override { superseded_by_.store(std::this_thread::get_id(), std::memory_order_release); }
  bool superseded() const override {
    return superseded_by_.load(std::memory_order_acquire) == std::this_thread::get_id();
  }

 private:
  bool following() const { return notifier_ && progress_.following(); }

  JobCanceller cancel_job_;
  std::function<void()> on_wait_;  // the calling thread's alone
  Notifier notifier_;              // set before the call starts, then only read
  ProgressReporter progress_;  // the calling thread's
  std::mutex mutex_;
  std::optional<std::uint64_t> job_;  // the latest job queued for the call
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> adopts_{false};
  std::atomic<std::thread::id> superseded_by_{};
  bool allow_dangerous_ = false;
  const ClientLogLevel* log_level_ = nullptr;
  nlohmann::json request_id_;
  std::atomic<int> logged_{0};
};

}  // namespace agentq::mcp
