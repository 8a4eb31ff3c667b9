// When an evaluation the Lisp worker runs for an idle reader
// (core/idle_reader.hpp) is to be taken over by its owner: at a moment
// (arm: IdleReader::job_started's), or at once when the evaluation asks
// its owner for something (ask: IdleReader::owner_needed).  A timer and
// an event descriptor, which one watcher thread waits on (wait).  Used by
// the stdio and HTTP servers and by Emacs's worker lane.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

namespace agentq::sys {

// The steady clock's time point AT in ns (CLOCK_MONOTONIC on Linux).
inline std::int64_t steady_ns_of(std::chrono::steady_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
}

class TakeOverAlarm {
 public:
  // ok() is false when a descriptor could not be made (inline calls off).
  TakeOverAlarm();
  ~TakeOverAlarm();
  TakeOverAlarm(const TakeOverAlarm&) = delete;
  TakeOverAlarm& operator=(const TakeOverAlarm&) = delete;

  bool ok() const { return timer_fd_ >= 0 && owner_fd_ >= 0; }

  // Any thread: the moment AT (the last one set counts).  An alarm left
  // from an earlier evaluation finds it not come yet.
  void arm(std::chrono::steady_clock::time_point at);
  // No moment set (the next evaluation has not started): a ring of the
  // timer is then stale.
  void clear() { due_ns_.store(0, std::memory_order_release); }
  // The moment set, in steady-clock ns; 0 when cleared.
  std::int64_t due_ns() const { return due_ns_.load(std::memory_order_acquire); }
  // The moment set has come (false when cleared).  The watcher asks again
  // under its own lock: a ring of the last evaluation's timer may come
  // just after the next one armed it anew.
  bool due_now() const {
    const std::int64_t due = due_ns();
    return due != 0 && steady_ns_of(std::chrono::steady_clock::now()) >= due;
  }
  // Any thread: take over now.
  void ask();
  // Any thread: wait() returns Stop from now on.
  void stop();

  enum class Ring { Due, Asked, Stop };
  // The watcher: blocks until the moment has come (Due), an ask (Asked:
  // whatever the moment) or stop().  A stale ring is not returned.
  Ring wait();
  // The watcher's loop: ON_RING(asked) at each ring, until stop().
  void watch(const std::function<void(bool asked)>& on_ring);

 private:
  int timer_fd_ = -1;
  int owner_fd_ = -1;
  std::atomic<std::int64_t> due_ns_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace agentq::sys
