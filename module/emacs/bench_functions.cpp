#include "emacs/bench_functions.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/round_trip_stamps.hpp"
#include "emacs/calls.hpp"

namespace agentq::emacs {

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t median(std::vector<std::int64_t> samples) {
  if (samples.empty()) return 0;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2), samples.end());
  return samples[samples.size() / 2];
}

std::int64_t since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

// Pins the calling thread (a thread of its own, never Emacs's) to the
// INDEXth CPU the process may use.
void pin_to(int index) {
  cpu_set_t allowed, one;
  CPU_ZERO(&one);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) <= index) return;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed) && seen++ == index) {
      CPU_SET(cpu, &one);
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      return;
    }
}

// Two threads, each on a CPU of its own, pass a counter back and forth,
// spinning, as the caller and a polling worker do: half of each round.
std::int64_t ping_pong(std::int64_t rounds) {
  std::atomic<std::int64_t> ball{0};
  std::vector<std::int64_t> samples;
  samples.reserve(static_cast<std::size_t>(rounds));
  std::thread pong([&] {
    pin_to(1);
    for (std::int64_t i = 1; i <= 2 * rounds; i += 2) {
      while (ball.load(std::memory_order_acquire) != i) __builtin_ia32_pause();
      ball.store(i + 1, std::memory_order_release);
    }
  });
  std::thread ping([&] {
    pin_to(0);
    for (std::int64_t i = 0; i < 2 * rounds; i += 2) {
      auto start = Clock::now();
      ball.store(i + 1, std::memory_order_release);
      while (ball.load(std::memory_order_acquire) != i + 2) __builtin_ia32_pause();
      samples.push_back(since(start) / 2);
    }
  });
  ping.join();
  pong.join();
  return median(std::move(samples));
}

std::int64_t plist_floor(const Env& env, std::int64_t count) {
  ToolResult result;
  result.id = "p";
  result.success = true;
  result.content = "=> 3";
  result.execution_time_ms = 0.004;
  result.safety_level = SafetyLevel::Cautious;
  std::vector<std::int64_t> samples;
  samples.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    auto start = Clock::now();
    result_to_plist(env, result);
    samples.push_back(since(start));
  }
  return median(std::move(samples));
}

}  // namespace

emacs_value bench(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  const std::string what = env.to_string(args[0]);
  const std::int64_t n = nargs > 1 && !env.is_nil(args[1]) ? std::max<std::int64_t>(1, env.to_integer(args[1])) : 1000;
  RoundTripStamps& stamps = round_trip_stamps();
  if (what == "stamps-on" || what == "stamps-off") {
    stamps.on.store(what == "stamps-on");
    return Env::sym().nil;
  }
  if (what == "stamps") {
    constexpr int count = static_cast<int>(RoundTripStep::Count);
    emacs_value steps[count];
    const std::int64_t entered = stamps.at[0].load(std::memory_order_relaxed);
    for (int i = 0; i < count; ++i) steps[i] = env.integer(stamps.at[i].load(std::memory_order_relaxed) - entered);
    return env.call(Env::sym().vector, count, steps);
  }
  if (what == "pingpong") return env.integer(ping_pong(n));
  if (what == "plist") return env.integer(plist_floor(env, n));
  throw std::invalid_argument("sly-agent-q--module-bench: unknown WHAT " + what);
}

emacs_value bench_noop(const Env&, ptrdiff_t, emacs_value*) { return Env::sym().nil; }

}  // namespace agentq::emacs
