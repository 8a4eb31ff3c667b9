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

void McpCallContext::output(const std::string& text) {
  if (!following()) return;
  if (std::string notification = progress_.output(text); !notification.empty()) notify(notification);
}

HostAnswer McpCallContext::approve_in_host(const std::string&) {
  HostAnswer answer = headless_code_approval(allow_dangerous_);
  if (!allow_dangerous_)
    log_to_client(McpLogLevel::Warning,
                  "code that touches the world outside the Lisp session was refused: nobody can approve it "
                  "headless (--allow-dangerous allows it)",
                  std::string());
  return answer;
}

void McpCallContext::log_to_client(McpLogLevel level, const std::string& message, const std::string& tool) {
  if (!log_level_ || !log_level_->wants(level) || !notifier_) return;
  if (logged_.fetch_add(1) >= kMaxLogMessagesPerCall) return;
  notify(mcp_log_notification(level, message, request_id_, tool));
}

}  // namespace agentq::mcp
