// GC statistics and the clocks and counters benchmarks read, as Lisp
// functions.  Part of the runtime (runtime_state.hpp).

#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdio>

#include <gc/gc.h>

#include "ecl/lisp_function.hpp"
#include "ecl/runtime_state.hpp"

namespace agentq::ecl {

namespace {

// (%GC-TIME-MS) → milliseconds spent in full collections so far.
cl_object gc_time_ms() {
  return one_value(ecl_make_unsigned_integer(GC_get_full_gc_total_time()));
}

// (%GC-COUNT) → the number of collections so far (GC_get_gc_no).
cl_object gc_count() {
  return one_value(ecl_make_unsigned_integer(GC_get_gc_no()));
}

// (%LISP-THREAD-COUNT) → how many Lisp threads ECL lists (what
// (LENGTH (MP:ALL-PROCESSES)) says, without making the list).  Read without
// ECL's lock: a thread starting or ending meanwhile may or may not be
// counted, as with a list taken a moment earlier or later.
cl_object lisp_thread_count() {
  cl_object vector = *static_cast<cl_object volatile*>(&cl_core.processes);
  cl_fixnum count = 0;
  if (vector != ECL_NIL && vector != nullptr) {
    cl_index fill = vector->vector.fillp;
    for (cl_index i = 0; i < fill; ++i) {
      if (vector->vector.self.t[i] != ECL_NIL) ++count;
    }
  }
  return one_value(ecl_make_fixnum(count));
}

cl_index clock_us(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<cl_index>(now.tv_sec) * 1000000u + static_cast<cl_index>(now.tv_nsec / 1000);
}

// (%THREAD-RUN-DELAY-US) → microseconds this thread spent runnable but
// waiting for a CPU (the kernel's schedstat run_delay), or NIL when the
// kernel does not say.  For benchmarks.
cl_object thread_run_delay_us() {
  unsigned long long run_ns = 0, delay_ns = 0;
  bool ok = false;
  if (std::FILE* file = std::fopen("/proc/thread-self/schedstat", "r")) {
    ok = std::fscanf(file, "%llu %llu", &run_ns, &delay_ns) == 2;
    std::fclose(file);
  }
  return one_value(ok ? ecl_make_unsigned_integer(static_cast<cl_index>(delay_ns / 1000)) : ECL_NIL);
}

// (%CURRENT-CPU) → the CPU this thread runs on now.  For benchmarks.
cl_object current_cpu() { return one_value(ecl_make_fixnum(sched_getcpu())); }

// Where collections spend their time, for benchmarks (%GC-PHASE-US):
// totals in microseconds since boot, kept by the collector's event
// callback (called with its allocation lock held; no allocation here).
struct GcPhases {
  std::atomic<std::uint64_t> stopping{0};  // stopping the world: every thread acknowledges
  std::atomic<std::uint64_t> marking{0};   // marking, the world stopped
  std::atomic<std::uint64_t> starting{0};  // restarting the world
  std::atomic<std::uint64_t> reclaiming{0};  // sweeping, after the world restarted
  std::atomic<std::uint64_t> by_worker{0}, by_others{0};  // collections started on the worker / elsewhere
  std::uint64_t stop_begin = 0, mark_begin = 0, start_begin = 0, reclaim_begin = 0;
  GC_on_collection_event_proc previous = nullptr;
};
GcPhases g_gc_phases;

void gc_event(GC_EventType event) {
  GcPhases& p = g_gc_phases;
  const std::uint64_t now = clock_us(CLOCK_MONOTONIC);
  auto add = [now](std::atomic<std::uint64_t>& total, std::uint64_t begin) {
    if (begin != 0 && now >= begin) total.fetch_add(now - begin, std::memory_order_relaxed);
  };
  switch (event) {
    case GC_EVENT_START:
      (current_worker() ? p.by_worker : p.by_others).fetch_add(1, std::memory_order_relaxed);
      break;
    case GC_EVENT_PRE_STOP_WORLD: p.stop_begin = now; break;
    case GC_EVENT_POST_STOP_WORLD: add(p.stopping, p.stop_begin); break;
    case GC_EVENT_MARK_START: p.mark_begin = now; break;
    case GC_EVENT_MARK_END: add(p.marking, p.mark_begin); break;
    case GC_EVENT_PRE_START_WORLD: p.start_begin = now; break;
    case GC_EVENT_POST_START_WORLD: add(p.starting, p.start_begin); break;
    case GC_EVENT_RECLAIM_START: p.reclaim_begin = now; break;
    case GC_EVENT_RECLAIM_END: add(p.reclaiming, p.reclaim_begin); break;
    default: break;
  }
  if (p.previous) p.previous(event);
}

}  // namespace

void watch_gc_phases() {
  g_gc_phases.previous = GC_get_on_collection_event();
  GC_set_on_collection_event(gc_event);
}

namespace {

// (%GC-PHASE-US) → (STOPPING MARKING STARTING RECLAIMING BY-WORKER
// BY-OTHERS HEAP-BYTES): microseconds collections spent stopping the
// world, marking, restarting it and sweeping, and how many started on the
// worker and on other threads, since boot; the heap's size now.  For
// benchmarks.
cl_object gc_phase_us() {
  const GcPhases& p = g_gc_phases;
  cl_object values[] = {
      ecl_make_unsigned_integer(p.stopping.load(std::memory_order_relaxed)),
      ecl_make_unsigned_integer(p.marking.load(std::memory_order_relaxed)),
      ecl_make_unsigned_integer(p.starting.load(std::memory_order_relaxed)),
      ecl_make_unsigned_integer(p.reclaiming.load(std::memory_order_relaxed)),
      ecl_make_unsigned_integer(p.by_worker.load(std::memory_order_relaxed)),
      ecl_make_unsigned_integer(p.by_others.load(std::memory_order_relaxed)),
      ecl_make_unsigned_integer(GC_get_heap_size())};
  cl_object list = ECL_NIL;
  for (int i = 6; i >= 0; --i) list = ecl_cons(values[i], list);
  return one_value(list);
}

// (%MONOTONIC-US) → microseconds of the monotonic clock (ECL's internal
// time has a 1 ms unit): for benchmarks.
cl_object monotonic_us() { return one_value(ecl_make_unsigned_integer(clock_us(CLOCK_MONOTONIC))); }

// (%THREAD-CPU-US) → microseconds of CPU time this thread used.
cl_object thread_cpu_us() { return one_value(ecl_make_unsigned_integer(clock_us(CLOCK_THREAD_CPUTIME_ID))); }

}  // namespace

void define_stats_functions() {
  define_lisp_function("%GC-TIME-MS", gc_time_ms);
  define_lisp_function("%GC-COUNT", gc_count);
  define_lisp_function("%GC-PHASE-US", gc_phase_us);
  define_lisp_function("%THREAD-RUN-DELAY-US", thread_run_delay_us);
  define_lisp_function("%CURRENT-CPU", current_cpu);
  define_lisp_function("%LISP-THREAD-COUNT", lisp_thread_count);
  define_lisp_function("%MONOTONIC-US", monotonic_us);
  define_lisp_function("%THREAD-CPU-US", thread_cpu_us);
}

}  // namespace agentq::ecl
