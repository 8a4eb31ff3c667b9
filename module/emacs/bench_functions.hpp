// Module functions for `make bench` only (bench/round-trip.el): the steps
// of the last call's round trip, and the floors they are read against,
// measured inside this process.  Nothing else calls them.
#pragma once

#include "emacs/env.hpp"

namespace agentq::emacs {

// (sly-agent-q--module-bench WHAT &optional N) — WHAT:
//   "stamps-on", "stamps-off": record the steps of each call (off: one load per step)
//   "stamps": the last call's steps as a vector of nanoseconds since it
//             entered the module (round_trip_stamps.hpp, in step order)
//   "pingpong": two threads on two CPUs hand a flag to each other N times,
//               spinning: the median one-way hand-off, in nanoseconds
//   "plist": the median time of making a result plist, N times, in nanoseconds
emacs_value bench(const Env& env, ptrdiff_t nargs, emacs_value* args);

// (sly-agent-q--module-bench-noop APPROVAL HOOKS ID NAME &rest ARGUMENTS) → nil:
// the module call itself, with the arguments of a call, as a floor.
emacs_value bench_noop(const Env& env, ptrdiff_t nargs, emacs_value* args);

}  // namespace agentq::emacs
