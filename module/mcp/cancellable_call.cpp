#include "mcp/cancellable_call.hpp"

#include "mcp/approval.hpp"

namespace agentq::mcp {

void McpCallContext::cancel() {
  std::optional<std::uint64_t> job;
  {
    std::lock_guard lock(mutex_);
    cancelled_.store(true);
    job = job_;
  }
  // poll() would notice within a few milliseconds; this wakes the wait now.
  if (job && cancel_job_) cancel_job_(*job);
}

void McpCallContext::job_queued(std::uint64_t job_id) {
  bool cancelled;
  {
    std::lock_guard lock(mutex_);
    job_ = job_id;
    cancelled = cancelled_.load();
  }
  if (cancelled && cancel_job_) cancel_job_(job_id);
}

HostAnswer McpCallContext::approve_in_host(const std::string&) { return headless_code_approval(allow_dangerous_); }

}  // namespace agentq::mcp
