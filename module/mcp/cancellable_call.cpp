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

namespace {

// Output sent in progress notifications, per call: past it, the rest waits
// for the result (which has it all).
constexpr std::size_t kMostProgressOutput = 64 * 1024;
constexpr auto kProgressEvery = std::chrono::seconds(1);

}  // namespace

void McpCallContext::send_progress(const std::string& message) {
  nlohmann::json params = nlohmann::json::object();
  params["progressToken"] = progress_token_;
  params["progress"] = ++progress_;
  params["message"] = message;
  nlohmann::json notification = nlohmann::json::object();
  notification["jsonrpc"] = "2.0";
  notification["method"] = "notifications/progress";
  notification["params"] = std::move(params);
  notify(notification.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  last_progress_ = std::chrono::steady_clock::now();
}

void McpCallContext::progress_tick() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < kProgressEvery) return;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - started_).count();
  send_progress("running for " + std::to_string(seconds) + " s");
}

void McpCallContext::output(const std::string& text) {
  if (!following() || output_sent_ >= kMostProgressOutput) return;
  std::string part = text.substr(0, kMostProgressOutput - output_sent_);
  // Whole UTF-8 characters only.
  if (part.size() < text.size()) {
    std::size_t cut = part.size();
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    part.resize(cut);
  }
  output_sent_ += part.size();
  send_progress(part);
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
