// Where the worker and the background compiler run: the worker moves off
// the caller's CPU and off the CPUs a background compile uses; the
// compiler keeps off the worker's.  Part of the runtime (runtime_state.hpp).

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/cpu_quota.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/runtime_state.hpp"

namespace agentq::ecl {

bool can_spin() {
  static const bool several = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    bool cpus = sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) > 1;
    auto quota = cgroup_cpu_quota();
    return cpus && !(quota && *quota < 2.0);
  }();
  return several;
}

// The CPUs the process was allowed before any move (taken at boot).
const cpu_set_t& process_cpus() {
  static const cpu_set_t allowed = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_ZERO(&set);
    return set;
  }();
  return allowed;
}

namespace {

std::uint64_t mask_of(const cpu_set_t& set) {
  std::uint64_t mask = 0;
  for (int cpu = 0; cpu < 64; ++cpu)
    if (CPU_ISSET(cpu, &set)) mask |= std::uint64_t{1} << cpu;
  return mask;
}

}  // namespace

// A worker that finds itself on the caller's CPU, with another CPU allowed,
// moves off it (this thread's affinity only: Emacs's threads keep theirs).
// Yielding to each other on the shared CPU (see kNoCpu) kept such a process
// at the one-CPU cost for its whole life.  Measured 2026-11-25 with a shell
// busy loop on one CPU of two, 5 processes each, A/B in the same minutes:
// medians 11.7-17.4 us without the move (the one-CPU runs: 12.6-17.6 us),
// 6.0-7.6 us with it, against 6.0-7.2 us quiet: the scheduler then keeps the
// busy loop away from the worker's CPU.  The allowed set is the one the
// process had before any move, so a worker started later starts free.
//
// While a background compile runs, the worker stays off its CPUs too
// (compile_cpus), even if that leaves it on the caller's: the caller
// sleeps while the worker runs a job, gcc does not.  Without this, on 2
// CPUs the scheduler woke the caller on the one gcc left free (the
// worker's) and the worker moved off it onto gcc's: 2026-11-25,
// bench/tiering-meanwhile.el, in 5 of 20 processes the batch took
// 3.1-12.9 s instead of 1.6-1.8, and in the two of them under perf sched
// the session's cc1, as and ld held the worker's CPU while it was runnable
// for 1.3 and 2.9 s of the run.  With it: no batch over 2.5 s in 20.
//
// CALLER: the CPU the caller was last seen on (kNoCpu: not known).
namespace {
thread_local int t_placed_caller = kNoCpu;
thread_local std::uint64_t t_placed_compile = 0;
}  // namespace

void place_worker(int caller) {
  const cpu_set_t& allowed = process_cpus();
  const std::uint64_t compile = g_impl->compile_cpus.load(std::memory_order_relaxed);
  int& placed_caller = t_placed_caller;
  std::uint64_t& placed_compile = t_placed_compile;
  if (CPU_COUNT(&allowed) < 2 || (caller == placed_caller && compile == placed_compile)) return;
  if (caller != kNoCpu && !CPU_ISSET(caller, &allowed)) caller = kNoCpu;
  if (caller == kNoCpu && compile == 0) return;
  cpu_set_t off_both = allowed, off_compile = allowed, off_caller = allowed;
  for (int cpu = 0; cpu < 64; ++cpu)
    if (cpu_in_mask(cpu, compile)) {
      CPU_CLR(cpu, &off_both);
      CPU_CLR(cpu, &off_compile);
    }
  if (caller != kNoCpu) {
    CPU_CLR(caller, &off_both);
    CPU_CLR(caller, &off_caller);
  }
  const cpu_set_t& set = CPU_COUNT(&off_both) > 0      ? off_both
                         : CPU_COUNT(&off_compile) > 0 ? off_compile
                                                       : off_caller;
  if (CPU_COUNT(&set) == 0) return;
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0) {
    placed_caller = caller;
    placed_compile = compile;
  }
}

// A worker that reads its own input (an idle reader, core/idle_reader.hpp)
// has no caller to keep off: it may run on any allowed CPU again, else it
// stays held to the one it was moved to, with a busy process there
// perhaps, while the other CPU is idle.  (A compile's CPUs it keeps off.)
void free_worker_from_caller(bool force) {
  if (t_placed_caller == kNoCpu && !force) return;
  const std::uint64_t compile = g_impl->compile_cpus.load(std::memory_order_relaxed);
  t_placed_caller = kNoCpu;
  if (compile != 0) {
    t_placed_compile = ~compile;  // placed again below, off the compile alone
    place_worker(kNoCpu);
    return;
  }
  const cpu_set_t& allowed = process_cpus();
  if (pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0) t_placed_compile = 0;
}

bool pull_worker_here(pid_t tid) {
  const int here = sched_getcpu();
  if (tid <= 0 || here < 0 || !CPU_ISSET(here, &process_cpus())) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(here, &set);
  return sched_setaffinity(tid, sizeof set, &set) == 0;
}

namespace {

// (%LOWER-THREAD-PRIORITY): this thread (and the children it starts) at
// nice 10, so that the worker keeps its CPU.
cl_object lower_thread_priority() {
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  return one_value(ECL_NIL);
}

// (%KEEP-OFF-WORKER-CPUS) → the CPUs the batch keeps to, or NIL when it
// may use them all: this thread (and the gcc it starts next) on
// the CPUs the worker is not pinned to (see place_worker), if any; else,
// with a worker free to run anywhere, on all but the CPU it was last seen
// on; else on all the process's.  The compiler thread calls it before
// each batch, and the worker then stays off those CPUs until
// %RELEASE-COMPILE-CPUS.  Without it gcc could land on the worker's CPU,
// which the worker may not leave: measured 2026-11-25
// (bench/tiering-meanwhile.el, load 3-10 on 2 CPUs, 3-4 rounds of a
// 40-DEFUN batch, 8 processes without, 11 with), the p90 round trip of an
// (+ 1 2) evaluation during a compile over quiet was 1.0-3.6 times (median
// of processes 2.4) without, 0.5-1.3 (1.0) with.
cl_object keep_off_worker_cpus() {
  Runtime::Impl& impl = *g_impl;
  cpu_set_t set = process_cpus(), worker_set, rest;
  pid_t worker = __atomic_load_n(&impl.worker_tid, __ATOMIC_ACQUIRE);
  CPU_ZERO(&worker_set);
  CPU_ZERO(&rest);
  if (worker != 0 && sched_getaffinity(worker, sizeof worker_set, &worker_set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set) && !CPU_ISSET(cpu, &worker_set)) CPU_SET(cpu, &rest);
    const int last = impl.worker_cpu.load(std::memory_order_relaxed);
    if (CPU_COUNT(&rest) == 0 && last != kNoCpu && CPU_ISSET(last, &set) && CPU_COUNT(&set) > 1) {
      rest = set;
      CPU_CLR(last, &rest);
    }
  }
  if (CPU_COUNT(&rest) > 0) set = rest;
  impl.compile_cpus.store(CPU_COUNT(&rest) > 0 ? mask_of(rest) : 0, std::memory_order_relaxed);
  if (CPU_COUNT(&set) > 0) pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  cl_object cpus = ECL_NIL;
  for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu)
    if (CPU_ISSET(cpu, &rest)) cpus = ecl_cons(ecl_make_fixnum(cpu), cpus);
  return one_value(cpus);
}

// (%RELEASE-COMPILE-CPUS): the batch ended; the worker may use every CPU
// again (it moves when it next meets the caller on its CPU).
cl_object release_compile_cpus() {
  g_impl->compile_cpus.store(0, std::memory_order_relaxed);
  return one_value(ECL_NIL);
}

}  // namespace

void define_cpu_functions() {
  define_lisp_function("%LOWER-THREAD-PRIORITY", lower_thread_priority);
  define_lisp_function("%KEEP-OFF-WORKER-CPUS", keep_off_worker_cpus);
  define_lisp_function("%RELEASE-COMPILE-CPUS", release_compile_cpus);
}

}  // namespace agentq::ecl
