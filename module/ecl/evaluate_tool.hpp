// The evaluate_lisp tool (contract evaluate-lisp): a Lisp-handled tool in
// the one registry, run by the ECL runtime.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>

#include "core/registry.hpp"
#include "ecl/runtime.hpp"

namespace agentq::ecl {

// Defaults the front end may change at any time (Emacs: defcustoms),
// owned by the composition root (app/lisp) and read by every job.
struct EvaluateSettings {
  std::atomic<double> default_timeout_s{30.0};  // ≤ 0 ⇒ no timeout
  std::atomic<std::size_t> output_limit{1000000};
};

// Seconds → a job's time limit: 0 or less (or NaN) is none, more than a
// year is a year.
std::chrono::milliseconds to_timeout(double seconds);

// Registers evaluate_lisp (cautious, category execution; "evaluate-lisp"
// resolves to it).  Arguments: code (required), package, capture_time
// (also read as capture-time, its older name), timeout (seconds, may only
// lower the default), debug (hold an unhandled error live).
// Its calls run on RUNTIME with SETTINGS' limits.
void register_evaluate_lisp(Registry& registry, Runtime& runtime, const EvaluateSettings& settings);

}  // namespace agentq::ecl
