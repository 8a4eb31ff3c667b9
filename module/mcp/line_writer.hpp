// Whole lines to a file descriptor, from any thread: a line is written
// entirely before the next one starts, so responses never interleave.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string_view>

namespace agentq::mcp {

class LineWriter {
 public:
  // Takes a line first; false hands it on to the descriptor.
  using Taker = std::function<bool(std::string_view line)>;

  explicit LineWriter(int fd, Taker taker = {}) : fd_(fd), taker_(std::move(taker)) {}

  // Writes TEXT and a newline.  False when the reader has gone (EPIPE) or
  // the write failed; later lines are then dropped too.  SIGPIPE must be
  // blocked or ignored in the calling thread, or a gone reader ends the
  // process.
  bool write_line(std::string_view text);

  bool broken() const { return broken_.load(); }

 private:
  int fd_;
  Taker taker_;
  std::mutex mutex_;
  std::atomic<bool> broken_{false};
};

}  // namespace agentq::mcp
