// McpCallContext, the context of one tools/call (mcp/stdio_server): a
// cancellable call, which notifications/cancelled stops.  (What any call may
// ask of its caller is core/call_context.hpp's CallContext.)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>

#include "core/call_context.hpp"

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

  bool poll() override {
    if (on_wait_) std::exchange(on_wait_, nullptr)();
    return cancelled_.load(std::memory_order_relaxed);
  }
  bool cancelled() const override { return cancelled_.load(std::memory_order_relaxed); }
  bool interrupt_is_cancel() const override { return true; }
  bool wants_structured() const override { return true; }
  void job_queued(std::uint64_t job_id) override;
  // Nobody can be asked headless: see headless_code_approval.
  HostAnswer approve_in_host(const std::string& form) override;
  void set_allow_dangerous(bool allow) { allow_dangerous_ = allow; }

 private:
  JobCanceller cancel_job_;
  std::function<void()> on_wait_;  // the calling thread's alone
  std::mutex mutex_;
  std::optional<std::uint64_t> job_;  // the latest job queued for the call
  std::atomic<bool> cancelled_{false};
  bool allow_dangerous_ = false;
};

}  // namespace agentq::mcp
