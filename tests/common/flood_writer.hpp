// A client that floods a child process: COUNT lines written whole on a
// thread of their own (a write waits while the pipe is full), counted as
// they go through, to see where a server stops reading.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "common/child_process.hpp"

namespace agentq::fixtures {

class FloodWriter {
 public:
  // LINE(i) is the i-th line (0-based), newline included.
  FloodWriter(ChildProcess& child, int count, std::function<std::string(int)> line)
      : thread_([this, &child, count, line = std::move(line)] {
          for (int i = 0; i < count; ++i) {
            std::string text = line(i);
            if (!child.write_all(text)) return;
            bytes_ += static_cast<long long>(text.size());
            ++lines_;
          }
        }) {}
  ~FloodWriter() { join(); }
  FloodWriter(const FloodWriter&) = delete;
  FloodWriter& operator=(const FloodWriter&) = delete;

  // Waits until the writes have stopped going through for half a second
  // (at most 30 s); returns the lines written by then.
  int wait_until_stalled() {
    long long before = -1;
    for (int i = 0; i < 60 && bytes_.load() != before; ++i) {
      before = bytes_.load();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return lines_.load();
  }

  void join() {
    if (thread_.joinable()) thread_.join();
  }
  long long bytes() const { return bytes_.load(); }
  int lines() const { return lines_.load(); }

 private:
  std::atomic<long long> bytes_{0};
  std::atomic<int> lines_{0};
  std::thread thread_;
};

}  // namespace agentq::fixtures
