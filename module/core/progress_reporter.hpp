// notifications/progress for one MCP call that sent a progressToken: the
// output an evaluation prints, as it prints it (the first 64 KiB of the
// call; its result has it all), and once a second while nothing else was
// sent, the time it has run.  Pure: it makes the notifications' text, the
// transport sends them (McpCallContext headless and over HTTP, the Emacs
// module's asynchronous calls through --emacs).  One thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace agentq {

class ProgressReporter {
 public:
  // TOKEN: the request's params._meta.progressToken; null: none is sent.
  explicit ProgressReporter(nlohmann::json token = nullptr) : token_(std::move(token)) {}

  bool following() const { return !token_.is_null(); }
  // The notification for output TEXT, or empty (not following, or past
  // the bound).  Whole UTF-8 characters only.
  std::string output(const std::string& text);
  // "running for N s" once a second while nothing else was sent, else empty.
  std::string tick();

  static constexpr std::size_t kMostOutput = 64 * 1024;

 private:
  std::string notification(const std::string& message);

  nlohmann::json token_;
  std::uint64_t progress_ = 0;   // notifications made so far
  std::size_t output_sent_ = 0;  // bytes of output in them
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = started_;
};

}  // namespace agentq
