// When each step of the last synchronous call happened, for `make bench`'s
// breakdown of the round trip (bench/round-trip.el): steady-clock
// nanoseconds written by the module (Emacs's thread) and the runtime (the
// caller's thread and the worker).  Off unless a benchmark turns it on; off,
// each step costs one relaxed load.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace agentq {

enum class RoundTripStep : int {
  Entered,    // the module function was entered (Elisp → C++)
  Converted,  // the call is a ToolCall
  Enqueued,   // the job is on the worker's queue
  PickedUp,   // the worker took it
  Evaluated,  // Lisp read, evaluated and printed it (%FINISH-JOB)
  Seen,       // the caller saw it done
  Executed,   // the executor returned the ToolResult
  Returned,   // the result plist is made (C++ → Elisp)
  Count
};

struct RoundTripStamps {
  std::atomic<bool> on{false};
  std::atomic<std::int64_t> at[static_cast<int>(RoundTripStep::Count)]{};

  void stamp(RoundTripStep step) {
    if (!on.load(std::memory_order_relaxed)) return;
    at[static_cast<int>(step)].store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count(),
        std::memory_order_relaxed);
  }
};

// The process's one record (one call at a time is timed: the benchmark's).
inline RoundTripStamps& round_trip_stamps() {
  static RoundTripStamps stamps;
  return stamps;
}

}  // namespace agentq
