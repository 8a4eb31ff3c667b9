#include "core/progress_reporter.hpp"

namespace agentq {

namespace {

constexpr auto kEvery = std::chrono::seconds(1);

}  // namespace

std::string ProgressReporter::notification(const std::string& message) {
  nlohmann::json params = nlohmann::json::object();
  params["progressToken"] = token_;
  params["progress"] = ++progress_;
  params["message"] = message;
  nlohmann::json notification = nlohmann::json::object();
  notification["jsonrpc"] = "2.0";
  notification["method"] = "notifications/progress";
  notification["params"] = std::move(params);
  last_ = std::chrono::steady_clock::now();
  return notification.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ProgressReporter::tick() {
  if (!following()) return {};
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < kEvery) return {};
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - started_).count();
  return notification("running for " + std::to_string(seconds) + " s");
}

std::string ProgressReporter::output(const std::string& text) {
  if (!following() || output_sent_ >= kMostOutput || text.empty()) return {};
  std::string part = text.substr(0, kMostOutput - output_sent_);
  if (part.size() < text.size()) {
    std::size_t cut = part.size();
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    part.resize(cut);
  }
  if (part.empty()) return {};
  output_sent_ += part.size();
  return notification(part);
}

}  // namespace agentq
