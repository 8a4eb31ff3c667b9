// The ECL worker thread, its job queue and the wait loop of the callers.
//
// Threads:
//   worker   — boots ECL, runs AGENT-Q::WORKER-LOOP, which takes jobs from
//              %NEXT-JOB and hands results to %FINISH-JOB (both below).
//   watchdog — an ECL thread that interrupts the worker on request (C-g,
//              timeout): only an ECL thread may call MP:INTERRUPT-PROCESS.
//   callers  — any other thread (the Emacs main thread, the MCP server)
//              enqueues a job and waits in Runtime::evaluate; they never
//              call ECL themselves.
//
// C++ frames that Lisp can unwind through (a longjmp, so no destructors)
// hold no objects with destructors and no locks.

#include "ecl/runtime.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <list>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <gc/gc.h>

#include "core/cpu_quota.hpp"
#include "core/lisp_nesting.hpp"
#include "core/thread_signals.hpp"
#include "core/utf8.hpp"
#include "ecl/child_pipes.hpp"
#include "ecl/child_signals.hpp"
#include "ecl/compile_child.hpp"
#include "ecl/ecl_api.hpp"
#include "ecl/interrupt_gate.hpp"
#include "ecl/job_origin.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/lisp_json.hpp"
#include "ecl/lisp_tools.hpp"
#include "ecl/lisp_string.hpp"
#include "ecl/process_functions.hpp"
#include "ecl/signals.hpp"
#include "ecl/stack_guard.hpp"
#include "ecl/tiering.hpp"

extern "C" void init_agentq_lisp(cl_object);  // the compiled lisp/ files
extern "C" void ecl_cs_set_org(cl_env_ptr);    // libecl's, in its internal.h

namespace agentq::ecl {

namespace {

using Clock = std::chrono::steady_clock;

enum class JobState : int { Queued, Running, Done };
enum class BootState : int { None, Booting, Running, Failed, Stopped };
// Finalizer: the job's finalizers used up their budget (%FINALIZER-BUDGET);
// it stops the running finalizer, not the job.
// Break: the REPL's C-c C-c, which stops the evaluation in the REPL's
// debugger with a CONTINUE restart instead of unwinding it.
enum class Interrupt : int { Quit, Timeout, Cancel, Finalizer, Break };

// What an interactive evaluation wrote and its owner has not taken yet:
// filled by the worker (%STREAM-OUTPUT), emptied by the owner's wait.
struct OutputSink {
  std::mutex mutex;
  std::string text;  // UTF-8, whole characters
};

// Work a running job asks of its owner, the caller waiting for it; run on
// the owner's thread with the owner's context.
using OwnerWork = std::function<void(CallContext&)>;

struct Job {
  std::uint64_t id = 0;
  EvalRequest request;
  std::atomic<JobState> state{JobState::Queued};
  bool success = false;
  std::string text;
  // A list: unlike a deque, an empty one allocates nothing (most jobs ask
  // nothing of their owner).
  std::list<OwnerWork> requests;  // guarded by Impl::mutex
  bool owner_gone = false;          // guarded by Impl::mutex: no more requests served
  // Set by Runtime::cancel from any thread; the owner's wait stops the job
  // as it stops it for C-g or a timeout.
  std::atomic<bool> cancel_requested{false};
  // Set for an interactive evaluation (EvalRequest::interactive_key).
  std::shared_ptr<OutputSink> output;
  // While the job's finalizers run: when their budget ends (steady clock,
  // ns since its epoch), 0 otherwise.  Set by the worker, read by the owner.
  std::atomic<std::int64_t> finalizer_deadline_ns{0};
  // The REPL's C-c C-c (Runtime::break_job): when the owner next sends the
  // break interrupt (steady clock, ns), until Lisp takes it (%BREAK-TAKEN);
  // 0 when none waits.  Repeated: one landing where Lisp holds interrupts
  // off, or before the job's debugger is set up, does nothing.
  std::atomic<std::int64_t> break_due_ns{0};
};

// A request of Lisp code to the host (eval-in-emacs), answered by the job's
// owner.  Shared: the Lisp side may stop waiting (an interrupt) before the
// answer comes.
struct HostRequest {
  std::string form;
  bool approval = false;  // an approval question (%ASK-APPROVAL)
  std::mutex mutex;
  std::condition_variable answered_cv;
  bool answered = false;
  HostAnswer answer;

  void answer_with(HostAnswer given) {
    {
      std::lock_guard lock(mutex);
      if (answered) return;
      answer = std::move(given);
      answered = true;
    }
    answered_cv.notify_all();
  }
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// How long each side polls before sleeping.  Waking a thread that sleeps on
// a futex costs 50-100 us on a VM whose idle vCPU halts, twenty times the
// whole round trip.  So after a job the worker keeps polling for the next
// one (agent tool calls come in bursts) until kWorkerPoll, yielding the CPU
// every kWorkerYieldEvery to anything runnable there.  (Yielding on every turn
// made the next evaluation 4x slower: each system call left the worker's
// TLB and caches cold.)  The caller spins while the worker is known to be
// on a CPU (see NOTES.md, "Speed").  With a single CPU both sides yield.
constexpr auto kWorkerYieldEvery = std::chrono::microseconds(100);
constexpr auto kWorkerPoll = std::chrono::milliseconds(2);
constexpr auto kCallerSpin = std::chrono::microseconds(300);
// A polling worker picks a job up within a microsecond or two when it is on
// a CPU; one that has not after this long is not running (preempted, or
// sharing our only CPU), and the caller yields to it.
constexpr auto kPickupSpin = std::chrono::microseconds(20);
// Two CPUs are no promise that the two threads run on different ones.  With
// another process keeping one CPU busy, the scheduler put the caller and the
// worker on the same CPU in 3 of 5 Emacs processes (and, rarely, in a quiet
// machine), for the process's whole life.  Per-phase timestamps of 3,000
// calls in such a process: pickup 23 us (the caller spinning kPickupSpin for
// a worker that could not run), evaluation 12 us, and 104 us from the
// worker's finish to the caller seeing it (the worker polling for the next
// job on the CPU the caller needed, until its kWorkerYieldEvery yield): a
// median of 133 us per call against 7-12 us when they ran apart.  So each
// side publishes the CPU it is on, and neither spins while the other waits
// for the same CPU: they yield to each other as on a single CPU, and the
// caller sleeps while the worker runs its job (yielding, the caller kept
// taking the CPU back: 9-12 us of evaluation instead of 4.5).  12-13 us.
// And the worker then moves off the caller's CPU: see place_worker.
constexpr int kNoCpu = -1;
constexpr auto kPollSlice = std::chrono::milliseconds(5);
constexpr auto kInterruptGrace = std::chrono::seconds(3);
constexpr auto kInterruptRepeat = std::chrono::milliseconds(500);
constexpr auto kDeferredRetry = std::chrono::milliseconds(1);
constexpr auto kBootTimeout = std::chrono::seconds(20);

// Spinning while another thread works only pays with a second CPU: in the
// affinity mask, and in the cgroup's CPU quota, if it has one.
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

}  // namespace

struct Runtime::Impl {
  // --- boot
  std::mutex boot_mutex;
  std::condition_variable boot_cv;
  std::atomic<BootState> boot_state{BootState::None};
  std::string boot_error;
  double boot_ms = 0;
  double cl_boot_ms = 0;
  pthread_t worker_thread{};
  std::size_t heap_limit = std::size_t{1} << 30;
  bool shutdown_attempted = false;

  // --- jobs
  std::mutex mutex;
  std::condition_variable job_cv;   // worker waits for jobs
  std::condition_variable done_cv;  // callers wait for results / waiter work
  std::deque<std::shared_ptr<Job>> queue;
  std::atomic<std::size_t> queued{0};
  bool stopping = false;
  bool worker_sleeping = false;
  int callers_sleeping = 0;
  std::shared_ptr<Job> current;  // owned by the worker
  // Id of the running job (0: none), read by the interrupt on the worker
  // itself: state evaluated code cannot change.
  std::atomic<std::uint64_t> current_id{0};
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::uint64_t> jobs_run{0};
  // Where the last caller and the worker run (kNoCpu: not known), so that
  // neither spins on the CPU the other needs.  See kNoCpu.
  std::atomic<int> caller_cpu{kNoCpu};
  std::atomic<int> worker_cpu{kNoCpu};
  // The CPUs (0-63, as bits; 0: none) a background compile runs on: the
  // compiler thread and the gcc it starts.  The worker stays off them.
  std::atomic<std::uint64_t> compile_cpus{0};
  // A background compile forks the process (ecl/compile_child.hpp): while
  // it does, the worker holds still between jobs, in %NEXT-JOB, where it
  // holds none of ECL's locks (a lock held at the fork stays locked in the
  // child for good).  Both changed under mutex; hold_requested is atomic
  // for the worker's polling, which reads it without the lock.
  std::atomic<bool> hold_requested{false};
  bool worker_held = false;
  std::condition_variable held_cv;

  // --- interrupts, served by the watchdog
  std::mutex interrupt_mutex;
  std::condition_variable interrupt_cv;
  std::deque<std::pair<std::uint64_t, Interrupt>> interrupts;
  bool interrupt_stop = false;

  // A job still unwinding after C-g cut its grace short: the next call
  // waits for it until abandon_at, then replaces the worker.
  std::shared_ptr<Job> abandoned;
  Clock::time_point abandon_at;

  // --- workers.  A worker stuck in a job it will not leave is retired (it
  // runs on, at the lowest priority, until it returns) and a fresh Lisp
  // thread in the same image takes its place.  A thread is the worker while
  // its t_worker_generation is worker_generation.
  std::atomic<std::uint64_t> worker_generation{1};
  pid_t worker_tid = 0;
  std::atomic<std::uint64_t> replaced_workers{0};
  std::atomic<std::int64_t> retired_running{0};  // retired workers still in Lisp

  // Set by set_heap_limit, applied by the worker before its next job.
  std::atomic<std::size_t> pending_heap_limit{0};

  // --- requests of running Lisp code to the host, by ticket
  std::mutex host_mutex;
  std::map<std::uint64_t, std::shared_ptr<HostRequest>> host_requests;
  std::uint64_t next_ticket = 1;

  void request_interrupt(std::uint64_t id, Interrupt why) {
    {
      std::lock_guard lock(interrupt_mutex);
      interrupts.emplace_back(id, why);
    }
    interrupt_cv.notify_one();
  }

  void wake_callers() {
    bool sleeping;
    {
      std::lock_guard lock(mutex);
      sleeping = callers_sleeping > 0;
    }
    if (sleeping) done_cv.notify_all();
  }

  bool alive() const { return boot_state.load() == BootState::Running; }

  // The worker's CPU, published for callers (stored only when it changed,
  // so that a polling worker does not keep the line bouncing).
  int publish_worker_cpu() {
    int cpu = sched_getcpu();
    if (worker_cpu.load(std::memory_order_relaxed) != cpu) worker_cpu.store(cpu, std::memory_order_relaxed);
    return cpu;
  }

  // True when the calling thread (a caller) runs on the worker's CPU, which
  // it records for the worker.
  bool caller_shares_worker_cpu() {
    int cpu = sched_getcpu();
    if (caller_cpu.load(std::memory_order_relaxed) != cpu) caller_cpu.store(cpu, std::memory_order_relaxed);
    return cpu == worker_cpu.load(std::memory_order_relaxed);
  }

  // Runs what JOB asked of its owner, on the owner's thread.
  void serve_requests(Job& job, CallContext& context) {
    for (;;) {
      OwnerWork work;
      {
        std::lock_guard lock(mutex);
        if (job.requests.empty()) return;
        work = std::move(job.requests.front());
        job.requests.pop_front();
      }
      try {
        work(context);
      } catch (...) {
        // Requests report their own errors; nothing may escape into the
        // wait loop.
      }
    }
  }

  // The owner stops serving JOB (it has been interrupted, or has returned):
  // what it still asks is refused.
  void close_requests(Job& job) {
    std::list<OwnerWork> left;
    {
      std::lock_guard lock(mutex);
      job.owner_gone = true;
      left.swap(job.requests);
    }
    struct Refusing final : CallContext {
      HostAnswer eval_in_host(const std::string&) override {
        return {false, "the call that started this evaluation no longer waits for it (interrupted or timed out)"};
      }
    } refusing;
    for (OwnerWork& work : left) {
      try {
        work(refusing);
      } catch (...) {
      }
    }
  }

  // Queues WORK for the owner of the running job; false when no job runs
  // or its owner no longer serves.
  bool ask_owner(OwnerWork work) {
    {
      std::lock_guard lock(mutex);
      if (!current || current->owner_gone) return false;
      current->requests.push_back(std::move(work));
    }
    done_cv.notify_all();
    return true;
  }

  // Waits for a job that C-g left unwinding, until its grace is over, then
  // replaces the worker if it still has not unwound.  False on C-g.
  bool settle_abandoned(CallContext& context);

  // Hands what JOB wrote since the last time to its owner's context.
  static void deliver_output(Job& job, CallContext& context) {
    if (!job.output) return;
    std::string text;
    {
      std::lock_guard lock(job.output->mutex);
      text.swap(job.output->text);
    }
    if (text.empty()) return;
    try {
      context.output(text);
    } catch (...) {
      // The owner reports its own failures; the output is lost, not the call.
    }
  }

  // Sleeps up to SLICE unless JOB finishes or work is posted.
  void sleep_slice(const Job& job, Clock::duration slice) {
    std::unique_lock lock(mutex);
    ++callers_sleeping;
    done_cv.wait_for(lock, slice, [&] {
      return job.state.load() == JobState::Done || !job.requests.empty() || job.cancel_requested.load() ||
             !alive();
    });
    --callers_sleeping;
  }
};

namespace {

Runtime::Impl* g_impl = nullptr;  // set once by Runtime's constructor

cl_object lisp_symbol(const char* name) { return ecl_make_symbol(name, "AGENT-Q"); }

// Lisp objects the runtime keeps for itself, out of evaluated code's reach:
// no variable to set, no package to delete or rename.  GC roots.
struct LispRoots {
  cl_object worker_loop = ECL_NIL;       // AGENT-Q::WORKER-LOOP, taken at boot
  cl_object escaped_job_text = ECL_NIL;  // AGENT-Q::ESCAPED-JOB-TEXT
  cl_object worker = ECL_NIL;            // the worker's MP:PROCESS
  cl_object watchdog = ECL_NIL;          // the watchdog's MP:PROCESS
  cl_object compiler = ECL_NIL;          // the background native compiler's (tiering.lisp)
  // Interned at boot: interning takes the package's lock, which an
  // interrupt landing there would leave held.
  cl_object worker_keyword = ECL_NIL;    // :WORKER
  cl_object watchdog_keyword = ECL_NIL;  // :WATCHDOG
  cl_object compiler_keyword = ECL_NIL;  // :COMPILER
  cl_object evaluate_lisp_name = ECL_NIL;  // "evaluate_lisp", the evaluations' handler
};
LispRoots g_roots;

// Evaluations this thread is waiting for (a caller's thread).
thread_local int t_waiting_for_lisp = 0;

// This thread's worker generation (0: never a worker).
thread_local std::uint64_t t_worker_generation = 0;

// On the worker: where the running job's output goes (null: the job keeps
// its output in its result, as usual).  Set by %NEXT-JOB.
thread_local std::shared_ptr<OutputSink> t_output;

bool current_worker() {
  return t_worker_generation != 0 && t_worker_generation == g_impl->worker_generation.load(std::memory_order_acquire);
}

// ----------------------------------------------------------------------------
// Functions called from Lisp on the worker / watchdog threads.

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

// (%NEXT-JOB) → id tool code package flags output-limit timeout-ms
// heap-limit arguments interactive-key, or NIL to stop (the runtime stops, or this thread
// is no longer the worker).  TOOL names the job's handler ("evaluate_lisp"
// for an evaluation); ARGUMENTS are another tool's, as Lisp data.
// HEAP-LIMIT is a new limit to apply first, or NIL.  INTERACTIVE-KEY: an
// integer for an interactive evaluation (see EvalRequest), else NIL.
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
bool cpu_in_mask(int cpu, std::uint64_t mask) { return cpu >= 0 && cpu < 64 && ((mask >> cpu) & 1u) != 0; }

std::uint64_t mask_of(const cpu_set_t& set) {
  std::uint64_t mask = 0;
  for (int cpu = 0; cpu < 64; ++cpu)
    if (CPU_ISSET(cpu, &set)) mask |= std::uint64_t{1} << cpu;
  return mask;
}

// CALLER: the CPU the caller was last seen on (kNoCpu: not known).
void place_worker(int caller) {
  const cpu_set_t& allowed = process_cpus();
  const std::uint64_t compile = g_impl->compile_cpus.load(std::memory_order_relaxed);
  thread_local int placed_caller = kNoCpu;
  thread_local std::uint64_t placed_compile = 0;
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

// The worker, with LOCK on impl.mutex, holds still for %HOLD-WORKER until
// %RELEASE-WORKER (or the runtime stops, or it is retired).
void hold_still(Runtime::Impl& impl, std::unique_lock<std::mutex>& lock) {
  impl.worker_held = true;
  impl.held_cv.notify_all();
  impl.job_cv.wait(lock, [&] { return !impl.hold_requested || impl.stopping || !current_worker(); });
  impl.worker_held = false;
}

cl_object next_job() {
  Runtime::Impl& impl = *g_impl;
  std::shared_ptr<Job> job;
  {
    auto start = Clock::now();
    auto poll_until = start + kWorkerPoll, next_yield = start + kWorkerYieldEvery;
    const bool spin = can_spin();  // with a single CPU the caller needs it back at once
    for (auto now = start; impl.queued.load(std::memory_order_acquire) == 0 && now < poll_until && current_worker() &&
                           !impl.hold_requested.load(std::memory_order_relaxed);
         now = Clock::now()) {
      cpu_relax();
      // On the caller's CPU, the caller needs it back at once too.
      int caller = impl.caller_cpu.load(std::memory_order_relaxed);
      const int cpu = impl.publish_worker_cpu();
      bool shared = spin && cpu == caller;
      if (shared || cpu_in_mask(cpu, impl.compile_cpus.load(std::memory_order_relaxed))) place_worker(caller);
      if (now >= next_yield || !spin || shared) {
        sched_yield();
        next_yield = now + kWorkerYieldEvery;
      }
    }
    std::unique_lock lock(impl.mutex);
    for (;;) {
      if (impl.hold_requested && !impl.stopping && current_worker()) {
        hold_still(impl, lock);
        continue;
      }
      if (impl.queue.empty() && !impl.stopping && current_worker()) {
        impl.worker_sleeping = true;
        impl.job_cv.wait(lock, [&] {
          return impl.stopping || !impl.queue.empty() || !current_worker() || impl.hold_requested;
        });
        impl.worker_sleeping = false;
        continue;
      }
      break;
    }
    if (!impl.queue.empty() && current_worker()) {
      job = std::move(impl.queue.front());
      impl.queue.pop_front();
      impl.queued.fetch_sub(1, std::memory_order_release);
      job->state.store(JobState::Running, std::memory_order_release);
      impl.current = job;
      impl.current_id.store(job->id, std::memory_order_release);
    }
  }
  // No locks held from here: allocation may unwind (storage exhaustion).
  if (!job) return one_value(ECL_NIL);
  // Woken on a CPU a background compile runs on: off it before the job.
  if (std::uint64_t compile = impl.compile_cpus.load(std::memory_order_relaxed);
      compile != 0 && cpu_in_mask(impl.publish_worker_cpu(), compile))
    place_worker(impl.caller_cpu.load(std::memory_order_relaxed));
  rearm_stack_guard();  // what an overflow in the last job opened
  // ECL takes a fault at the address of the last one for a fault in its
  // handling, which it does not signal: a job's first is signalled.
  ecl_process_env()->fault_address = nullptr;
  if (job->output || t_output) t_output = job->output;  // no reference counting per usual job
  cl_env_ptr env = ecl_process_env();
  const EvalRequest& request = job->request;
  set_current_origin(!request.agent ? Origin::User : request.approved ? Origin::ApprovedAgent : Origin::Agent);
  std::size_t heap_limit = impl.pending_heap_limit.exchange(0);
  const bool evaluation = request.tool.empty();
  cl_object id = ecl_make_unsigned_integer(job->id);
  cl_object tool = evaluation ? g_roots.evaluate_lisp_name : make_lisp_string(request.tool);
  cl_object code = evaluation ? make_lisp_string(request.code) : ECL_NIL;
  cl_object package = request.package.empty() ? ECL_NIL : make_lisp_string(request.package);
  cl_object heap = heap_limit ? ecl_make_unsigned_integer(heap_limit) : ECL_NIL;
  cl_object arguments = evaluation ? ECL_NIL : json_to_lisp(request.arguments);
  cl_object interactive = request.interactive_key ? ecl_make_unsigned_integer(request.interactive_key) : ECL_NIL;
  env->values[0] = id;
  env->values[1] = tool;
  env->values[2] = code;
  env->values[3] = package;
  env->values[4] = ecl_make_fixnum((request.capture_time ? 1 : 0) | (request.debugger ? 2 : 0));
  env->values[5] = ecl_make_fixnum(static_cast<cl_fixnum>(request.output_limit));
  env->values[6] = ecl_make_fixnum(static_cast<cl_fixnum>(request.timeout.count()));
  env->values[7] = heap;
  env->values[8] = arguments;
  env->values[9] = interactive;
  env->nvalues = 10;
  return id;
}

// The mask ECL gives the threads the boot worker starts (see
// replacement_main).
void* g_boot_sigmask = nullptr;

// The worker's binding and frame stacks at boot, in entries as ECL keeps
// them: evaluated code may shrink them (EXT:SET-LIMIT), and the worker
// needs them back.
cl_index g_boot_bds_size = 0, g_boot_frs_size = 0;

// (%FINISH-JOB id success-p text) → true when the worker's stacks are
// smaller than at boot and should be restored.  A retired worker's result
// is dropped: its job was already answered.
cl_object finish_job(cl_object id, cl_object success, cl_object text) {
  Runtime::Impl& impl = *g_impl;
  (void)id;
  cl_env_ptr env = ecl_process_env();
  bool shrunk = env->bds_size < g_boot_bds_size || env->frs_size < g_boot_frs_size;
  if (!current_worker()) return one_value(shrunk ? ECL_T : ECL_NIL);
  std::shared_ptr<Job> job;
  try {
    std::string utf8 = lisp_string_to_utf8(text);
    {
      std::lock_guard lock(impl.mutex);
      if (current_worker()) {
        job = std::move(impl.current);
        impl.current_id.store(0, std::memory_order_release);
      }
    }
    if (job) {
      job->success = success != ECL_NIL;
      job->text = std::move(utf8);
      job->state.store(JobState::Done, std::memory_order_release);
      impl.jobs_run.fetch_add(1, std::memory_order_relaxed);
    }
  } catch (...) {
    if (job) {
      job->success = false;
      job->text = "[ERROR] INTERNAL\nThe result could not be transferred (out of memory).";
      job->state.store(JobState::Done, std::memory_order_release);
    }
  }
  job.reset();
  impl.wake_callers();
  return one_value(shrunk ? ECL_T : ECL_NIL);
}

// (%NEXT-INTERRUPT) → id reason worker, or NIL to stop.  Runs on the
// watchdog.  WORKER is the process to interrupt, from the runtime's roots.
cl_object next_interrupt() {
  Runtime::Impl& impl = *g_impl;
  std::uint64_t id = 0;
  Interrupt why = Interrupt::Cancel;
  bool stop = false;
  {
    std::unique_lock lock(impl.interrupt_mutex);
    impl.interrupt_cv.wait(lock, [&] { return impl.interrupt_stop || !impl.interrupts.empty(); });
    if (impl.interrupts.empty()) {
      stop = true;
    } else {
      std::tie(id, why) = impl.interrupts.front();
      impl.interrupts.pop_front();
    }
  }
  if (stop) return one_value(ECL_NIL);
  const char* name = why == Interrupt::Quit        ? "QUIT"
                     : why == Interrupt::Timeout   ? "TIMEOUT"
                     : why == Interrupt::Finalizer ? "FINALIZER"
                     : why == Interrupt::Break     ? "BREAK"
                                                   : "CANCEL";
  // Build every object before filling env->values: interning sets values.
  cl_object reason = ecl_make_keyword(name);
  cl_object job = ecl_make_unsigned_integer(id);
  cl_env_ptr env = ecl_process_env();
  env->values[0] = job;
  env->values[1] = reason;
  env->values[2] = __atomic_load_n(&g_roots.worker, __ATOMIC_ACQUIRE);
  env->nvalues = 3;
  return env->values[0];
}

// (%CURRENT-JOB) → id of the running job, or NIL (also on a retired worker).
cl_object current_job() {
  std::uint64_t id = current_worker() ? g_impl->current_id.load(std::memory_order_acquire) : 0;
  return one_value(id ? ecl_make_unsigned_integer(id) : ECL_NIL);
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// (%FINALIZER-BUDGET ms): the running job's finalizers may run MS more
// milliseconds, after which its owner interrupts them (reason :FINALIZER);
// 0: they are over.  On the worker only.
cl_object finalizer_budget(cl_object ms) {
  if (!current_worker() || !ECL_FIXNUMP(ms) || ecl_fixnum(ms) < 0) return one_value(ECL_NIL);
  const std::int64_t due = ecl_fixnum(ms) == 0 ? 0 : steady_ns() + ecl_fixnum(ms) * 1000000;
  std::lock_guard lock(g_impl->mutex);
  if (g_impl->current) g_impl->current->finalizer_deadline_ns.store(due, std::memory_order_release);
  return one_value(ECL_T);
}

// (%SET-WATCHDOG process): the watchdog, known before its thread runs.
cl_object set_watchdog(cl_object process) {
  __atomic_store_n(&g_roots.watchdog, process, __ATOMIC_RELEASE);
  return one_value(ECL_NIL);
}

// (%WORKER-BUSY-P) → true while the worker runs a job (any thread).
cl_object worker_busy_p() {
  return one_value(g_impl->current_id.load(std::memory_order_acquire) != 0 ? ECL_T : ECL_NIL);
}

// (%SET-COMPILER-THREAD process): the background compiler, known before
// its thread runs; it runs at nice 10, which the gcc it starts inherits.
cl_object set_compiler_thread(cl_object process) {
  __atomic_store_n(&g_roots.compiler, process, __ATOMIC_RELEASE);
  return one_value(ECL_NIL);
}

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

// (%HOLD-WORKER timeout-ms) → T once the worker holds still between jobs,
// until %RELEASE-WORKER; NIL (and no hold) when it did not within
// TIMEOUT-MS (a long job).  The compiler thread forks meanwhile.
cl_object hold_worker(cl_object timeout) {
  Runtime::Impl& impl = *g_impl;
  const auto wait = std::chrono::milliseconds(ECL_FIXNUMP(timeout) && ecl_fixnum(timeout) > 0 ? ecl_fixnum(timeout) : 0);
  bool held = false;
  outside_lisp([&] {
    std::unique_lock lock(impl.mutex);
    impl.hold_requested = true;
    impl.job_cv.notify_all();
    held = impl.held_cv.wait_for(lock, wait, [&] { return impl.worker_held || impl.stopping; }) && impl.worker_held;
    if (!held) {
      impl.hold_requested = false;
      impl.job_cv.notify_all();
    }
  });
  return one_value(held ? ECL_T : ECL_NIL);
}

// (%HOLD-POINT) → T after holding still for a %HOLD-WORKER, else NIL at
// once.  For a job of the worker's that waits for the compiler thread
// (WAIT-FOR-NATIVE-COMPILES), at a point where it holds no lock.
cl_object hold_point() {
  Runtime::Impl& impl = *g_impl;
  if (!impl.hold_requested.load(std::memory_order_relaxed) || !current_worker()) return one_value(ECL_NIL);
  bool held = false;
  outside_lisp([&] {
    std::unique_lock lock(impl.mutex);
    if (!impl.hold_requested || impl.stopping) return;
    held = true;
    hold_still(impl, lock);
  });
  return one_value(held ? ECL_T : ECL_NIL);
}

// (%RELEASE-WORKER): the worker goes on (see %HOLD-WORKER).
cl_object release_worker() {
  Runtime::Impl& impl = *g_impl;
  outside_lisp([&] {
    std::lock_guard lock(impl.mutex);
    impl.hold_requested = false;
    impl.job_cv.notify_all();
  });
  return one_value(ECL_NIL);
}

// (%RUNTIME-PROCESS-P process) → true for the worker, the watchdog and
// the background compiler.
cl_object runtime_process_p(cl_object process) {
  bool ours = process != ECL_NIL && (process == __atomic_load_n(&g_roots.worker, __ATOMIC_ACQUIRE) ||
                                     process == __atomic_load_n(&g_roots.watchdog, __ATOMIC_ACQUIRE) ||
                                     process == __atomic_load_n(&g_roots.compiler, __ATOMIC_ACQUIRE));
  return one_value(ours ? ECL_T : ECL_NIL);
}

// (%RUNTIME-THREAD-P) → :WORKER on a worker (current or retired),
// :WATCHDOG on the watchdog, else NIL.
cl_object runtime_thread_p() {
  if (t_worker_generation != 0) return one_value(g_roots.worker_keyword);
  cl_object self = ecl_process_env()->own_process;
  if (self == __atomic_load_n(&g_roots.compiler, __ATOMIC_ACQUIRE)) return one_value(g_roots.compiler_keyword);
  return one_value(self == __atomic_load_n(&g_roots.watchdog, __ATOMIC_ACQUIRE) ? g_roots.watchdog_keyword : ECL_NIL);
}

// A ticket for %HOST-ANSWER, or 0 when no caller serves the running job.
// FORM is Elisp source text; an APPROVAL question is asked through
// CallContext::approve_in_host.
std::uint64_t post_host_request(cl_object form, bool approval) {
  Runtime::Impl& impl = *g_impl;
  if (!current_worker() || !ecl_stringp(form)) return 0;
  std::string text;
  if (!outside_lisp([&] { text = lisp_string_to_utf8(form); })) return 0;
  std::uint64_t ticket = 0;
  outside_lisp([&] {
    auto request = std::make_shared<HostRequest>();
    request->form = std::move(text);
    request->approval = approval;
    {
      std::lock_guard lock(impl.host_mutex);
      ticket = impl.next_ticket++;
      impl.host_requests[ticket] = request;
    }
    bool posted = impl.ask_owner([request](CallContext& owner) {
      request->answer_with(request->approval ? owner.approve_in_host(request->form) : owner.eval_in_host(request->form));
    });
    if (!posted) {
      std::lock_guard lock(impl.host_mutex);
      impl.host_requests.erase(ticket);
      ticket = 0;
    }
  });
  return ticket;
}

// (%ASK-HOST form) → a ticket for %HOST-ANSWER, or NIL when no caller
// serves the running job (FORM: Elisp source text).
cl_object ask_host(cl_object form) {
  std::uint64_t ticket = post_host_request(form, false);
  return one_value(ticket ? ecl_make_unsigned_integer(ticket) : ECL_NIL);
}

// (%ASK-APPROVAL form) → like %ASK-HOST, for an approval question about an
// agent's code.  An answer that approves makes the job an approved
// agent's (job_origin.hpp) when %HOST-ANSWER returns it: only the host's
// answer can, never evaluated code.
cl_object ask_approval(cl_object form) {
  std::uint64_t ticket = post_host_request(form, true);
  return one_value(ticket ? ecl_make_unsigned_integer(ticket) : ECL_NIL);
}

// (%HOST-ANSWER ticket wait-ms) → done-p ok-p text.  Waits at most WAIT-MS
// with interrupts held back; the Lisp side calls it again until done, so
// C-g and timeouts still reach the evaluation.
cl_object host_answer(cl_object ticket, cl_object wait_ms) {
  Runtime::Impl& impl = *g_impl;
  std::uint64_t id = ecl_to_uint64_t(ticket);
  long ms = ECL_FIXNUMP(wait_ms) ? ecl_fixnum(wait_ms) : 10;
  bool done = true, ok = false;
  std::string text = "unknown request to Emacs";
  outside_lisp([&] {
    std::shared_ptr<HostRequest> request;
    {
      std::lock_guard lock(impl.host_mutex);
      auto it = impl.host_requests.find(id);
      if (it == impl.host_requests.end()) return;
      request = it->second;
    }
    std::unique_lock lock(request->mutex);
    done = request->answered_cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return request->answered; });
    if (done) {
      ok = request->answer.ok;
      text = request->answer.text;
      if (request->approval && ok && current_origin() == Origin::Agent && approval_grants(text))
        set_current_origin(Origin::ApprovedAgent);
      lock.unlock();
      std::lock_guard map_lock(impl.host_mutex);
      impl.host_requests.erase(id);
    }
  });
  cl_object answer = done ? make_lisp_string(text) : ECL_NIL;
  cl_env_ptr env = ecl_process_env();
  env->values[0] = done ? ECL_T : ECL_NIL;
  env->values[1] = ok ? ECL_T : ECL_NIL;
  env->values[2] = answer;
  env->nvalues = 3;
  return env->values[0];
}

// (%BREAK-TAKEN) → T when the running job had a C-c C-c waiting (the
// REPL's, Runtime::break_job), which it takes now: the owner stops sending
// it; NIL when none waits (a repeat already on its way when the first was
// taken), which the caller ignores.
cl_object break_taken() {
  Runtime::Impl& impl = *g_impl;
  if (!current_worker()) return one_value(ECL_NIL);
  bool taken = false;
  outside_lisp([&] {
    std::lock_guard lock(impl.mutex);
    if (impl.current) taken = impl.current->break_due_ns.exchange(0, std::memory_order_acq_rel) != 0;
  });
  return one_value(taken ? ECL_T : ECL_NIL);
}

// (%FORGET-HOST-REQUEST ticket): the Lisp side stopped waiting.
cl_object forget_host_request(cl_object ticket) {
  Runtime::Impl& impl = *g_impl;
  std::uint64_t id = ecl_to_uint64_t(ticket);
  outside_lisp([&] {
    std::lock_guard lock(impl.host_mutex);
    impl.host_requests.erase(id);
  });
  return one_value(ECL_NIL);
}

// (%STREAM-OUTPUT output start end) → T when OUTPUT (a string's characters
// from START to END, or a character) went to the owner of the running
// interactive evaluation; NIL on any other thread (one evaluated code
// started, a retired worker) or for any other job: the caller then keeps
// the output in the result as usual.
cl_object stream_output(cl_object output, cl_object start, cl_object end) {
  OutputSink* sink = t_output.get();
  if (!sink || !current_worker()) return one_value(ECL_NIL);
  std::size_t from = 0, to = 0, length = 0;
  const bool base = ECL_BASE_STRING_P(output);
  if (ECL_CHARACTERP(output)) {
    to = 1;
  } else if (base || ecl_t_of(output) == t_string) {
    length = base ? output->base_string.fillp : output->string.fillp;
    if (!ECL_FIXNUMP(start) || !ECL_FIXNUMP(end)) return one_value(ECL_NIL);
    from = static_cast<std::size_t>(std::max<cl_fixnum>(0, ecl_fixnum(start)));
    to = static_cast<std::size_t>(std::max<cl_fixnum>(0, ecl_fixnum(end)));
    to = std::min(to, length);
    if (from > to) from = to;
  } else {
    return one_value(ECL_NIL);
  }
  bool sent = outside_lisp([&] {
    std::string text;
    if (ECL_CHARACTERP(output)) {
      utf8::append(text, static_cast<char32_t>(ECL_CHAR_CODE(output)));
    } else {
      text.reserve(to - from);
      for (std::size_t i = from; i < to; ++i)
        utf8::append(text, base ? output->base_string.self[i] : static_cast<char32_t>(output->string.self[i]));
    }
    std::lock_guard lock(sink->mutex);
    sink->text += text;
  });
  return one_value(sent ? ECL_T : ECL_NIL);
}

// (%GC-TIME-MS) → milliseconds spent in full collections so far.
cl_object gc_time_ms() {
  return one_value(ecl_make_unsigned_integer(GC_get_full_gc_total_time()));
}

// (%GC-COUNT) → the number of collections so far (GC_get_gc_no).
cl_object gc_count() {
  return one_value(ecl_make_unsigned_integer(GC_get_gc_no()));
}

// (%LIVE-PACKAGE-P object) → true when OBJECT is a package that was not
// deleted (one whose name is not NIL).  PACKAGE-NAME would copy the name.
cl_object live_package_p(cl_object object) {
  return one_value(ECL_PACKAGEP(object) && object->pack.name != ECL_NIL ? ECL_T : ECL_NIL);
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

void watch_gc_phases() {
  g_gc_phases.previous = GC_get_on_collection_event();
  GC_set_on_collection_event(gc_event);
}

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

// ----------------------------------------------------------------------------
// The worker thread.

// The signal ECL uses to interrupt a thread, named for the interrupt gate.
const int kInterruptSignal = SIGRTMIN + 2;

// The worker's binding and frame stacks, in entries (ECL's defaults are
// 8192 and 2048): deep recursion through special bindings or handlers
// should end in the C stack's overflow, not these.  Given to cl_boot so
// the stacks are made at their size instead of grown (and copied, and
// collected for) afterwards; the Lisp side re-arms them at these sizes.
constexpr cl_fixnum kBindingStackEntries = 65536;
constexpr cl_fixnum kFrameStackEntries = 16384;

void set_boot_options() {
  ecl_set_option(ECL_OPT_TRAP_SIGINT, 0);             // Emacs owns SIGINT (C-g on a tty)
  ecl_set_option(ECL_OPT_SIGNAL_HANDLING_THREAD, 0);  // would mask async signals process-wide
  ecl_set_option(ECL_OPT_TRAP_SIGPIPE, 0);
  ecl_set_option(ECL_OPT_TRAP_SIGILL, 0);
  ecl_set_option(ECL_OPT_TRAP_SIGFPE, 0);
  ecl_set_option(ECL_OPT_TRAP_SIGSEGV, 1);  // stack overflow detection; see signals.cpp
  ecl_set_option(ECL_OPT_TRAP_SIGBUS, 1);
  ecl_set_option(ECL_OPT_TRAP_INTERRUPT_SIGNAL, 1);  // MP:INTERRUPT-PROCESS
  ecl_set_option(ECL_OPT_THREAD_INTERRUPT_SIGNAL, kInterruptSignal);
  // Mandatory: Emacs's own bignums use GMP; letting ECL move GMP onto the
  // Boehm heap hangs Emacs.
  ecl_set_option(ECL_OPT_SET_GMP_MEMORY_FUNCTIONS, 0);
  ecl_set_option(ECL_OPT_INCREMENTAL_GC, 0);
}

// Threads made later (the watchdog, evaluated code's) get ECL's defaults.
struct WorkerStackOptions {
  cl_fixnum binding = ecl_get_option(ECL_OPT_BIND_STACK_SIZE);
  cl_fixnum frame = ecl_get_option(ECL_OPT_FRAME_STACK_SIZE);
  WorkerStackOptions() {
    ecl_set_option(ECL_OPT_BIND_STACK_SIZE, kBindingStackEntries);
    ecl_set_option(ECL_OPT_FRAME_STACK_SIZE, kFrameStackEntries);
  }
  void restore_defaults() const {
    ecl_set_option(ECL_OPT_BIND_STACK_SIZE, binding);
    ecl_set_option(ECL_OPT_FRAME_STACK_SIZE, frame);
  }
};

// Runs after everything else at exit only if nobody called shutdown():
// registered after cl_boot, so it runs before ECL's own atexit handler,
// which would hang when run on the main thread.
void shutdown_at_exit() { Runtime::instance().shutdown(); }

// Kept free of C++ objects with destructors: Lisp may unwind through it.
// Returns NIL on success, else a Lisp string or T saying what failed.
cl_object load_lisp_side(cl_env_ptr env, std::size_t heap_limit) {
  cl_object failure = ECL_T;
  ECL_CATCH_ALL_BEGIN(env) {
    // The package, then the functions written in C++, then the compiled
    // Lisp: it takes those functions by identity as it loads (see
    // DEFINE-HOST-FUNCTIONS in package.lisp), so evaluated code that
    // redefines their names changes nothing the runtime calls.
    cl_make_package(3, ecl_make_simple_base_string(const_cast<char*>("AGENT-Q"), -1), ecl_make_keyword("USE"),
                    ecl_list1(ecl_make_simple_base_string(const_cast<char*>("CL"), -1)));
    define_lisp_function("%NEXT-JOB", next_job);
    define_lisp_function("%FINISH-JOB", finish_job);
    define_lisp_function("%FINALIZER-BUDGET", finalizer_budget);
    define_lisp_function("%NEXT-INTERRUPT", next_interrupt);
    define_lisp_function("%GC-TIME-MS", gc_time_ms);
    define_lisp_function("%GC-COUNT", gc_count);
    define_lisp_function("%GC-PHASE-US", gc_phase_us);
    define_lisp_function("%THREAD-RUN-DELAY-US", thread_run_delay_us);
    define_lisp_function("%CURRENT-CPU", current_cpu);
    define_lisp_function("%LIVE-PACKAGE-P", live_package_p);
    define_lisp_function("%LISP-THREAD-COUNT", lisp_thread_count);
    define_lisp_function("%MONOTONIC-US", monotonic_us);
    define_lisp_function("%THREAD-CPU-US", thread_cpu_us);
    define_lisp_function("%STREAM-OUTPUT", stream_output);
    define_lisp_function("%CURRENT-JOB", current_job);
    define_lisp_function("%SET-WATCHDOG", set_watchdog);
    define_lisp_function("%SET-COMPILER-THREAD", set_compiler_thread);
    define_lisp_function("%WORKER-BUSY-P", worker_busy_p);
    define_lisp_function("%LOWER-THREAD-PRIORITY", lower_thread_priority);
    define_lisp_function("%KEEP-OFF-WORKER-CPUS", keep_off_worker_cpus);
    define_lisp_function("%RELEASE-COMPILE-CPUS", release_compile_cpus);
    define_lisp_function("%HOLD-WORKER", hold_worker);
    define_lisp_function("%RELEASE-WORKER", release_worker);
    define_lisp_function("%HOLD-POINT", hold_point);
    define_lisp_function("%RUNTIME-PROCESS-P", runtime_process_p);
    define_lisp_function("%RUNTIME-THREAD-P", runtime_thread_p);
    define_lisp_function("%ASK-HOST", ask_host);
    define_lisp_function("%ASK-APPROVAL", ask_approval);
    define_lisp_function("%BREAK-TAKEN", break_taken);
    define_origin_functions();
    define_lisp_function("%HOST-ANSWER", host_answer);
    define_lisp_function("%FORGET-HOST-REQUEST", forget_host_request);
    define_process_functions();
    define_child_pipes();
    define_lisp_tool_functions();
    define_tiering_functions();
    define_compile_child_functions();
    define_stack_guard_functions();
    ecl_init_module(nullptr, init_agentq_lisp);
    for (cl_object* root : {&g_roots.worker_loop, &g_roots.escaped_job_text, &g_roots.worker, &g_roots.watchdog,
                            &g_roots.compiler, &g_roots.worker_keyword, &g_roots.watchdog_keyword,
                            &g_roots.compiler_keyword, &g_roots.evaluate_lisp_name})
      ecl_register_root(root);
    g_roots.evaluate_lisp_name = make_lisp_string("evaluate_lisp");
    g_roots.worker_keyword = ecl_make_keyword("WORKER");
    g_roots.watchdog_keyword = ecl_make_keyword("WATCHDOG");
    g_roots.compiler_keyword = ecl_make_keyword("COMPILER");
    g_roots.worker_loop = ecl_fdefinition(lisp_symbol("WORKER-LOOP"));
    g_roots.escaped_job_text = ecl_fdefinition(lisp_symbol("ESCAPED-JOB-TEXT"));
    failure = cl_funcall(4, lisp_symbol("BOOT"), ecl_make_unsigned_integer(heap_limit),
                         ecl_make_fixnum(kBindingStackEntries), ecl_make_fixnum(kFrameStackEntries));
  }
  ECL_CATCH_ALL_END;
  return failure;
}

// After a non-local exit escaped WORKER-LOOP: the escaped job's [ERROR]
// text from the Lisp side, or NIL.  Kept free of C++ objects with
// destructors, like load_lisp_side.
cl_object escaped_job_text(cl_env_ptr env) {
  cl_object text = ECL_NIL;
  ECL_CATCH_ALL_BEGIN(env) {
    text = cl_funcall(1, g_roots.escaped_job_text);
  }
  ECL_CATCH_ALL_END;
  return text;
}

// Returns true when WORKER-LOOP returned normally (stop requested, or this
// thread was retired), false when a non-local exit escaped it.  FRESH:
// this thread replaces a retired worker.
bool run_worker_loop(cl_env_ptr env, bool fresh) {
  bool returned = false;
  ECL_CATCH_ALL_BEGIN(env) {
    cl_funcall(2, g_roots.worker_loop, fresh ? ECL_T : ECL_NIL);
    returned = true;
  }
  ECL_CATCH_ALL_END;
  return returned;
}

// Serves jobs on this thread as worker GENERATION until the runtime stops
// or the thread is retired.
void serve_jobs(cl_env_ptr env, std::uint64_t generation, bool fresh) {
  Runtime::Impl& impl = *g_impl;
  t_worker_generation = generation;
  bool serving;
  {
    // Published only while this thread is the worker, under the lock with
    // which %NEXT-JOB hands out jobs and replace_worker retires: a thread
    // retired before it got here (two restarts in a row) must not take the
    // place of the worker that replaced it as the watchdog's target or the
    // next retired tid.  Every job the worker takes therefore runs on the
    // thread the watchdog interrupts.
    std::lock_guard lock(impl.mutex);
    serving = current_worker();
    if (serving) {
      __atomic_store_n(&impl.worker_tid, static_cast<pid_t>(syscall(SYS_gettid)), __ATOMIC_RELEASE);
      __atomic_store_n(&g_roots.worker, env->own_process, __ATOMIC_RELEASE);
    }
  }
  // A thread retired before it served skips the loop: it would take no job,
  // and its FRESH work (limits, streams) would race its successor's.
  // A non-local exit that escapes the loop (it should not) fails the job it
  // interrupted; the loop then starts again.
  while (serving && !run_worker_loop(env, fresh)) {
    fresh = false;
    cl_object escaped = escaped_job_text(env);
    std::shared_ptr<Job> job;
    {
      std::lock_guard lock(impl.mutex);
      if (current_worker()) job = std::move(impl.current);
    }
    if (job) {
      job->success = false;
      job->text = ecl_stringp(escaped)
                      ? lisp_string_to_utf8(escaped)
                      : "[ERROR] CONTROL-ERROR\nA non-local exit escaped the evaluation; the session is still alive.";
      job->state.store(JobState::Done);
      impl.wake_callers();
    }
  }
  if (!current_worker()) impl.retired_running.fetch_sub(1);
}

// SI::*EXIT-HOOKS*, run as cl_shutdown runs them: each once, errors
// caught (si_safe_eval), the list shortened as it goes.
void run_exit_hooks() {
  const cl_object hooks_symbol = ecl_make_symbol("*EXIT-HOOKS*", "SI");
  const cl_object funcall = ecl_make_symbol("FUNCALL", "CL");
  cl_object hooks = ecl_symbol_value(hooks_symbol);
  while (ECL_CONSP(hooks)) {
    si_safe_eval(3, cl_list(2, funcall, ECL_CONS_CAR(hooks)), ECL_NIL, OBJNULL);
    hooks = ECL_CONS_CDR(hooks);
    cl_set(hooks_symbol, hooks);
  }
}

// The runtime stops with this thread, the worker: the watchdog ends, and
// ECL's exit hooks run here if this is the thread that booted it.
void stop_runtime(bool boot_thread) {
  Runtime::Impl& impl = *g_impl;
  {
    std::lock_guard lock(impl.interrupt_mutex);
    impl.interrupt_stop = true;
  }
  impl.interrupt_cv.notify_all();
  // What cl_shutdown does first: the exit hooks.  Its next step, closing
  // every loaded library, is left out: other Lisp threads may still run
  // (the background compiler loading ECL's compiler or its own code, a
  // thread of the user's), and one faulted at exit in a library closed
  // under it.  The process is ending; the libraries go with it.
  if (boot_thread) run_exit_hooks();
  ecl_set_option(ECL_OPT_BOOTED, -1);  // else ECL's atexit handler would shut down on the main thread: hang
  impl.boot_state = BootState::Stopped;
  impl.wake_callers();
}

void* worker_main(void* generation) {
  Runtime::Impl& impl = *g_impl;
  auto started = Clock::now();
  set_boot_options();
  remember_host_signal_handlers();
  char arg0[] = "sly-agent-q";
  char* argv[] = {arg0, nullptr};
  WorkerStackOptions stack_options;
  cl_boot(1, argv);
  stack_options.restore_defaults();
  impl.cl_boot_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  std::atexit(shutdown_at_exit);
  route_signals_by_thread();
  prepare_stack_guard();
  arm_stack_guard();
  install_interrupt_gate(kInterruptSignal);
  GC_start_performance_measurement();
  watch_gc_phases();
  process_cpus();  // before the worker moves

  cl_env_ptr env = ecl_process_env();
  g_boot_sigmask = env->default_sigmask;
  g_boot_bds_size = env->bds_size;
  g_boot_frs_size = env->frs_size;
  cl_object failure = load_lisp_side(env, impl.heap_limit);
  if (failure != ECL_NIL) {
    std::string reason = failure == ECL_T ? "a non-local exit" : lisp_string_to_utf8(failure);
    {
      std::lock_guard lock(impl.boot_mutex);
      impl.boot_error = "the AGENT-Q Lisp code failed to load (" + reason + ")";
      impl.boot_state = BootState::Failed;
    }
    impl.boot_cv.notify_all();
    return nullptr;
  }
  {
    std::lock_guard lock(impl.boot_mutex);
    impl.boot_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    impl.boot_state = BootState::Running;
  }
  impl.boot_cv.notify_all();

  // The generation this thread was started as, not the current one: a
  // restart_worker right after boot (before this line) has already made a
  // replacement the worker, and reading the generation here made this
  // thread a second worker of the same generation, taking jobs the
  // watchdog never interrupted (it interrupts the replacement).
  serve_jobs(env, reinterpret_cast<std::uintptr_t>(generation), false);
  if (current_worker()) {
    stop_runtime(true);
    return nullptr;
  }
  // Retired.  This thread's stack must outlive the process: ECL registered
  // it with the collector at boot, and it cannot be released like others.
  for (;;) pause();
}

// A worker that replaces a retired one: a new Lisp thread in the same image.
void* replacement_main(void* generation) {
  if (!ecl_import_current_thread(ECL_NIL, ECL_NIL)) {
    g_impl->boot_state = BootState::Failed;
    g_impl->boot_error = "a fresh worker thread could not join the Lisp image";
    g_impl->wake_callers();
    return nullptr;
  }
  cl_env_ptr env = ecl_process_env();
  // What cl_boot does for the boot worker, ECL 21.2's
  // ecl_import_current_thread does not: let in the thread interrupt signal
  // (else C-g and timeouts never stop a job here, each is abandoned after
  // its grace, and MP:PROCESS-JOIN, woken by that signal, never returns),
  // and give the mask threads started here begin with (else
  // MP:PROCESS-ENABLE copies it from a null pointer: a segfault).
  sigset_t interrupt;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, kInterruptSignal);
  pthread_sigmask(SIG_UNBLOCK, &interrupt, nullptr);
  if (env->default_sigmask == nullptr) env->default_sigmask = g_boot_sigmask;
  // Nor does it give the thread its C-stack limit (the env's is left
  // null, and Lisp recursion went unchecked until the process died); ECL's
  // own threads get it from this function.
  ecl_cs_set_org(env);
  arm_stack_guard();
  serve_jobs(env, reinterpret_cast<std::uintptr_t>(generation), true);
  bool stopping = current_worker();
  if (stopping)
    stop_runtime(false);  // joined by Runtime::shutdown
  else
    pthread_detach(pthread_self());
  ecl_release_current_thread();
  return nullptr;
}

// Starts a thread that runs no host code: all async signals blocked (they
// stay with the host's threads), the faults ECL handles let through, also
// when the caller blocks them (the async runner does).
int start_lisp_thread(pthread_t* thread, void* (*main)(void*), void* argument) {
  ThreadStartMask mask;
  return pthread_create(thread, nullptr, main, argument);
}

// Retires the worker and starts a fresh Lisp thread in the same image, so
// every definition is kept.  The retired thread runs on at the lowest
// priority (SCHED_IDLE) until it returns, if ever; its job, if it still has
// one, is answered with TEXT.  Called by a caller, never by a Lisp thread.
void replace_worker(Runtime::Impl& impl, const std::string& text) {
  std::shared_ptr<Job> job;
  pid_t retired_tid;
  std::uint64_t generation;
  {
    std::lock_guard lock(impl.mutex);
    generation = impl.worker_generation.fetch_add(1) + 1;
    job = std::move(impl.current);
    impl.current_id.store(0, std::memory_order_release);
    // Taken, not read: once retired, the tid is nobody's to lower again
    // (the thread may end, and its tid go to another thread).  Zero when
    // the worker never got to serve_jobs; it then takes no job.
    retired_tid = __atomic_exchange_n(&impl.worker_tid, 0, __ATOMIC_ACQ_REL);
    impl.retired_running.fetch_add(1);
  }
  impl.job_cv.notify_all();  // an idle worker leaves %NEXT-JOB
  impl.replaced_workers.fetch_add(1);
  if (retired_tid != 0) {
    sched_param lowest{};
    sched_setscheduler(retired_tid, SCHED_IDLE, &lowest);
  }
  if (job) {
    job->success = false;
    job->text = text;
    job->state.store(JobState::Done, std::memory_order_release);
  }
  pthread_t thread;
  int rc = start_lisp_thread(&thread, replacement_main, reinterpret_cast<void*>(static_cast<std::uintptr_t>(generation)));
  if (rc == 0) {
    impl.worker_thread = thread;
  } else {
    impl.boot_error = std::string("cannot start a fresh Lisp thread: ") + std::strerror(rc);
    impl.boot_state = BootState::Failed;
  }
  impl.wake_callers();
}

std::size_t worker_stack_size() {
  rlimit limit{};
  getrlimit(RLIMIT_STACK, &limit);
  std::size_t base = limit.rlim_cur == RLIM_INFINITY ? (std::size_t{64} << 20) : limit.rlim_cur;
  // ECL sizes its C stack checks from RLIMIT_STACK; give every ECL thread
  // more than that so the checks fire before the real end of the stack.
  return base + (std::size_t{4} << 20);
}

}  // namespace

// ECL's reader recurses in C without checking its stack: code nested
// 100,000 deep ran off the end of it and killed the process.  So the code,
// and every string argument of a Lisp tool (which may read it), is
// measured first.
namespace {
std::optional<std::string> too_deep_to_read(const EvalRequest& request) {
  bool deep = lisp_nesting_exceeds(request.code);
  if (!deep && request.arguments.is_object()) {
    for (const auto& [key, value] : request.arguments.items()) {
      if (value.is_string() && lisp_nesting_exceeds(value.get_ref<const std::string&>())) {
        deep = true;
        break;
      }
    }
  }
  if (!deep) return std::nullopt;
  return "[ERROR] READER-ERROR\nThe code nests lists, vectors or quotes more than " +
         std::to_string(kMaxLispNesting) +
         " levels deep, more than the Lisp reader can read without overflowing its stack; it was not read. "
         "The session is still alive.";
}
}  // namespace

// ----------------------------------------------------------------------------
// Runtime

Runtime& Runtime::instance() {
  static Runtime runtime;
  return runtime;
}

// The Impl is never destroyed (the "static T& x = *new T" idiom): ECL
// threads may still run at process exit and must never see freed state.
Runtime::Runtime() : impl_(new Impl) { g_impl = impl_; }

Runtime::~Runtime() = default;

void Runtime::ensure_booted() {
  Impl& impl = *impl_;
  BootState state = impl.boot_state.load();
  if (state == BootState::Running) return;
  std::unique_lock lock(impl.boot_mutex);
  state = impl.boot_state.load();
  if (state == BootState::None) {
    impl.boot_state = BootState::Booting;
    std::size_t stack = worker_stack_size();
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, stack);
    // Threads ECL creates later (the watchdog, user threads) get the same.
    pthread_setattr_default_np(&attributes);
    pthread_attr_destroy(&attributes);
    // Async signals stay with the host's threads (but not with children).
    unblock_signals_in_children();
    int rc = start_lisp_thread(&impl.worker_thread, worker_main,
                               reinterpret_cast<void*>(static_cast<std::uintptr_t>(impl.worker_generation.load())));
    if (rc != 0) {
      impl.boot_state = BootState::Failed;
      impl.boot_error = std::string("cannot start the Lisp thread: ") + std::strerror(rc);
    }
  }
  impl.boot_cv.wait_for(lock, kBootTimeout, [&] { return impl.boot_state.load() != BootState::Booting; });
  switch (impl.boot_state.load()) {
    case BootState::Running:
      return;
    case BootState::Booting:
      throw RuntimeError("the Lisp runtime did not finish booting");
    case BootState::Stopped:
      throw RuntimeError("the Lisp runtime has been shut down");
    default:
      throw RuntimeError("the Lisp runtime failed to boot: " + impl.boot_error);
  }
}

bool Runtime::Impl::settle_abandoned(CallContext& context) {
  std::shared_ptr<Job> stuck;
  Clock::time_point give_up;
  {
    std::lock_guard lock(mutex);
    if (abandoned && abandoned->state.load() == JobState::Done) abandoned.reset();
    stuck = abandoned;
    give_up = abandon_at;
  }
  if (!stuck) return true;
  while (stuck->state.load(std::memory_order_acquire) != JobState::Done && Clock::now() < give_up) {
    if (context.poll()) return false;
    sleep_slice(*stuck, kPollSlice);
  }
  {
    std::lock_guard lock(mutex);
    if (abandoned == stuck) abandoned.reset();
  }
  if (stuck->state.load(std::memory_order_acquire) != JobState::Done) {
    request_interrupt(stuck->id, Interrupt::Cancel);
    replace_worker(*this, "");  // its caller was answered when C-g was pressed
  }
  return true;
}

bool Runtime::cancel(std::uint64_t job_id) {
  Impl& impl = *impl_;
  std::shared_ptr<Job> job;
  {
    std::lock_guard lock(impl.mutex);
    if (impl.current && impl.current->id == job_id) job = impl.current;
    for (const auto& queued : impl.queue)
      if (queued->id == job_id) job = queued;
  }
  if (!job || job->state.load() == JobState::Done) return false;
  job->cancel_requested = true;
  impl.done_cv.notify_all();  // the owner may sleep in its wait
  return true;
}

bool Runtime::break_job(std::uint64_t job_id) {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mutex);
    if (!impl.current || impl.current->id != job_id || impl.current->state.load() == JobState::Done) return false;
    // A break still waiting to be taken: the evaluation holds interrupts
    // off (or its debugger is not set up yet); the caller aborts instead.
    if (impl.current->break_due_ns.load(std::memory_order_acquire) != 0) return false;
    // The owner's wait sends it now and again until Lisp takes it.
    impl.current->break_due_ns.store(steady_ns(), std::memory_order_release);
  }
  impl.done_cv.notify_all();  // the owner may sleep in its wait
  return true;
}

void Runtime::restart_worker() {
  ensure_booted();
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mutex);
    impl.abandoned.reset();
  }
  replace_worker(impl,
                 "[ERROR] INTERRUPTED\nThe Lisp worker was restarted while this evaluation ran; the session "
                 "continues on a new thread, with every definition kept.");
}

EvalOutcome Runtime::evaluate(EvalRequest given, CallContext& context) {
  if (auto refused = too_deep_to_read(given)) return {false, std::move(*refused)};
  ensure_booted();
  Impl& impl = *impl_;
  // A call made while this thread already waits for Lisp (from a wait
  // function, a hook, or Elisp that Lisp asked Emacs to evaluate) would
  // queue behind the evaluation it waits inside: refused at once.
  if (t_waiting_for_lisp > 0)
    return {false,
            "[ERROR] BUSY\nThe Lisp session is running the evaluation this call was made from: Emacs is "
            "waiting for it (this call came from a wait function, a hook, or Emacs Lisp that the evaluation "
            "asked Emacs to run). Evaluations run one at a time; make this call after that one returns."};
  struct WaitingForLisp {
    WaitingForLisp() { ++t_waiting_for_lisp; }
    ~WaitingForLisp() { --t_waiting_for_lisp; }
  } waiting_for_lisp;
  if (!impl.settle_abandoned(context))
    return {false,
            "[ERROR] INTERRUPTED\nThe evaluation was withdrawn before it started (quit by the user): the Lisp "
            "session was still unwinding an earlier evaluation."};
  auto job = std::make_shared<Job>();
  job->id = impl.next_id.fetch_add(1);
  job->request = std::move(given);
  const EvalRequest& request = job->request;
  if (request.interactive_key) job->output = std::make_shared<OutputSink>();
  auto start = Clock::now();
  auto deadline = Clock::time_point::max();
  if (request.timeout.count() > 0 && request.timeout < std::chrono::hours(24 * 365))
    deadline = start + request.timeout;

  bool wake;
  {
    std::lock_guard lock(impl.mutex);
    impl.queue.push_back(job);
    impl.queued.fetch_add(1, std::memory_order_release);
    wake = impl.worker_sleeping;
  }
  if (wake) impl.job_cv.notify_one();
  context.job_queued(job->id);

  // Whatever the job still asks once this caller stops serving it is refused.
  struct CloseRequests {
    Impl& impl;
    Job& job;
    ~CloseRequests() { impl.close_requests(job); }
  } close_requests{impl, *job};
  // An interactive evaluation's last output reaches its owner before the
  // result, however the call ends.
  struct DeliverOutput {
    Job& job;
    CallContext& context;
    ~DeliverOutput() { Impl::deliver_output(job, context); }
  } deliver_output{*job, context};

  // Spin while the worker is known to be on a CPU: polling for this job
  // (it picks it up within kPickupSpin) or running it.  Yield while a worker
  // we had to wake, or one that is slow to pick up, has not started, so it
  // gets to run if it shares this CPU; with a single CPU, always yield.  (A
  // system call per call, even a yield, made every call slower on a VM.)
  // On the worker's CPU, always yield (see kNoCpu).
  const bool spin = can_spin();
  auto spin_until = start + kCallerSpin, pickup_until = start + kPickupSpin;
  while (job->state.load(std::memory_order_acquire) != JobState::Done) {
    auto now = Clock::now();
    if (now >= spin_until) break;
    bool running = job->state.load(std::memory_order_relaxed) == JobState::Running;
    bool shared = spin && impl.caller_shares_worker_cpu();
    if (spin && (running || (!wake && now < pickup_until)) && !shared)
      cpu_relax();
    else if (running && shared)
      impl.sleep_slice(*job, kPollSlice);  // woken when done: a yield would take the CPU back from it
    else
      sched_yield();
  }

  std::optional<Interrupt> interrupted;
  unsigned long deferred_seen = 0;  // deferred_interrupts() when a break was last sent
  while (job->state.load(std::memory_order_acquire) != JobState::Done) {
    auto serving = Clock::now();
    impl.serve_requests(*job, context);
    Impl::deliver_output(*job, context);
    // The time Emacs spent on the job's own requests (a prompt waiting on
    // the person) does not count against its limit.
    if (deadline != Clock::time_point::max()) deadline += Clock::now() - serving;
    if (!impl.alive()) throw RuntimeError("the Lisp runtime stopped during the evaluation");
    if (job->cancel_requested.load(std::memory_order_relaxed)) {
      interrupted = Interrupt::Cancel;
      break;
    }
    if (context.poll()) {
      interrupted = context.interrupt_is_cancel() ? Interrupt::Cancel : Interrupt::Quit;
      break;
    }
    if (Clock::now() >= deadline) {
      interrupted = Interrupt::Timeout;
      break;
    }
    // The REPL's C-c C-c (Runtime::break_job): sent, and again after
    // kInterruptRepeat until Lisp takes it (%BREAK-TAKEN); meanwhile the
    // worker is signalled again within a millisecond whenever the gate held
    // the interrupt back (it landed in foreign code: a loop that calls
    // GET-INTERNAL-REAL-TIME spends most of its time in the C library).
    const std::int64_t break_due = job->break_due_ns.load(std::memory_order_acquire);
    if (std::int64_t due = break_due;
        due != 0 && steady_ns() >= due &&
        job->break_due_ns.compare_exchange_strong(
            due, due + std::chrono::duration_cast<std::chrono::nanoseconds>(kInterruptRepeat).count())) {
      deferred_seen = deferred_interrupts();
      impl.request_interrupt(job->id, Interrupt::Break);
    } else if (unsigned long now_deferred = deferred_interrupts(); break_due != 0 && now_deferred != deferred_seen) {
      deferred_seen = now_deferred;
      pthread_kill(impl.worker_thread, kInterruptSignal);
    }
    // The finalizers' budget spent: stop the one running (again after
    // kInterruptRepeat, should the first interrupt find it in C code).
    if (std::int64_t due = job->finalizer_deadline_ns.load(std::memory_order_acquire);
        due != 0 && steady_ns() >= due &&
        job->finalizer_deadline_ns.compare_exchange_strong(
            due, due + std::chrono::duration_cast<std::chrono::nanoseconds>(kInterruptRepeat).count()))
      impl.request_interrupt(job->id, Interrupt::Finalizer);
    impl.sleep_slice(*job, break_due != 0 ? kDeferredRetry : kPollSlice);
  }

  if (interrupted) {
    // A C-c C-c not taken yet is dropped: its interrupt, still queued on
    // the worker, finds none waiting (%BREAK-TAKEN) and leaves the unwind be.
    job->break_due_ns.store(0, std::memory_order_release);
    impl.close_requests(*job);
    {
      // Never started (queued behind another caller's evaluation): withdraw it.
      std::lock_guard lock(impl.mutex);
      auto it = std::find(impl.queue.begin(), impl.queue.end(), job);
      if (it != impl.queue.end()) {
        impl.queue.erase(it);
        impl.queued.fetch_sub(1, std::memory_order_release);
        return {false, *interrupted != Interrupt::Timeout
                           ? std::string("[ERROR] INTERRUPTED\nThe evaluation was withdrawn before it started (") +
                                 (*interrupted == Interrupt::Quit ? "quit by the user" : "cancelled") +
                                 "): the Lisp session was busy with another evaluation."
                           : "[ERROR] TIMEOUT\nThe evaluation was withdrawn before it started: the Lisp session "
                             "was busy with another evaluation for the whole time limit."};
      }
    }
    // Interrupt, then give the evaluation time to unwind (its cleanups run),
    // repeating the interrupt in case it landed between two jobs' checks,
    // and within a millisecond when the gate held it back (the worker was in
    // foreign code or in one of ECL's interrupt-free C sections).
    auto give_up = Clock::now() + kInterruptGrace;
    bool quit_in_grace = false;  // C-g while a timed-out evaluation unwinds
    while (job->state.load(std::memory_order_acquire) != JobState::Done && Clock::now() < give_up &&
           !quit_in_grace) {
      unsigned long deferred = deferred_interrupts();
      impl.request_interrupt(job->id, *interrupted);
      auto next = Clock::now() + kInterruptRepeat;
      while (job->state.load(std::memory_order_acquire) != JobState::Done && Clock::now() < next) {
        if (*interrupted == Interrupt::Timeout && context.poll()) {
          quit_in_grace = true;
          break;
        }
        impl.sleep_slice(*job, kDeferredRetry);
        // Still queued on the worker: signal it again, without a new request.
        if (unsigned long now_deferred = deferred_interrupts(); now_deferred != deferred) {
          deferred = now_deferred;
          pthread_kill(impl.worker_thread, kInterruptSignal);
        }
      }
    }
    if (quit_in_grace && job->state.load(std::memory_order_acquire) != JobState::Done) {
      std::lock_guard lock(impl.mutex);
      impl.abandoned = job;  // the next call waits out the rest of its grace
      impl.abandon_at = give_up;
      return {false, "[ERROR] INTERRUPTED\nThe evaluation timed out and was still unwinding when the user quit."};
    }
    if (job->state.load(std::memory_order_acquire) != JobState::Done) {
      // Interrupts disabled for good, or cleanup forms that cancel every
      // unwind (a GO out of an UNWIND-PROTECT cleanup, in a loop).
      std::string text =
          (*interrupted == Interrupt::Timeout
               ? "[ERROR] TIMEOUT\nEvaluation did not finish within its time limit, and the evaluation could not "
                 "be unwound"
               : "[ERROR] INTERRUPTED\nEvaluation was interrupted, but the evaluation could not be unwound") +
          std::string(" within ") +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kInterruptGrace).count()) +
          " seconds (it may run with interrupts disabled); it was abandoned and the session continues on a new "
          "thread, with every definition kept.";
      replace_worker(impl, text);
      return {false, text};
    }
  }

  EvalOutcome outcome{job->success, std::move(job->text)};
  // Each section (stdout, stderr, values) is bounded in Lisp, with its own
  // marker; this only bounds the whole if something still slipped through.
  std::size_t limit = request.output_limit > 0 ? 3 * request.output_limit + 4096 : 0;
  if (limit > 0 && outcome.text.size() > limit) {
    std::size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(outcome.text[cut]) & 0xC0) == 0x80) --cut;
    std::size_t dropped = outcome.text.size() - cut;
    outcome.text.resize(cut);
    outcome.text += "\n[... result truncated: " + std::to_string(dropped) + " more bytes not shown (limit " +
                    std::to_string(request.output_limit) + " per section) ...]";
  }
  return outcome;
}

void Runtime::set_heap_limit(std::size_t bytes) {
  Impl& impl = *impl_;
  std::lock_guard lock(impl.boot_mutex);
  impl.heap_limit = bytes;
  // Applied by the worker before its next job (at boot, BOOT applies it).
  if (bytes > 0 && impl.boot_state.load() == BootState::Running) impl.pending_heap_limit.store(bytes);
}

RuntimeStatus Runtime::status() const {
  const Impl& impl = *impl_;
  RuntimeStatus status;
  BootState state = impl.boot_state.load();
  status.booted = state == BootState::Running || state == BootState::Stopped;
  status.alive = state == BootState::Running;
  status.boot_ms = impl.boot_ms;
  status.cl_boot_ms = impl.cl_boot_ms;
  status.jobs = impl.jobs_run.load();
  status.heap_limit = impl.heap_limit;
  status.replaced_workers = impl.replaced_workers.load();
  auto running = impl.retired_running.load();
  status.abandoned_threads = running > 0 ? static_cast<std::uint64_t>(running) : 0;
  return status;
}

void Runtime::shutdown() {
  Impl& impl = *impl_;
  std::unique_lock boot_lock(impl.boot_mutex);
  if (impl.boot_state.load() != BootState::Running || impl.shutdown_attempted) return;
  impl.shutdown_attempted = true;
  // Stop taking jobs; interrupt a running one so the worker gets back to
  // the loop; then wait for ECL to shut down on its own thread.
  std::uint64_t running = 0;
  {
    std::lock_guard lock(impl.mutex);
    impl.stopping = true;
    if (impl.current) running = impl.current->id;
  }
  impl.job_cv.notify_all();
  if (running) impl.request_interrupt(running, Interrupt::Cancel);
  boot_lock.unlock();
  auto give_up = Clock::now() + std::chrono::seconds(3);
  while (impl.boot_state.load() == BootState::Running && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (impl.boot_state.load() == BootState::Stopped) {
    pthread_join(impl.worker_thread, nullptr);
  } else {
    // The worker is stuck in code that ignores interrupts.  ECL's own atexit
    // handler would now run cl_shutdown on the exiting main thread and wedge
    // the process; tell ECL it is not booted so that handler does nothing,
    // and let process exit end the thread.
    ecl_set_option(ECL_OPT_BOOTED, -1);
  }
}

bool Runtime::post_to_waiter(std::function<void()> work) {
  return impl_->ask_owner([work = std::move(work)](CallContext&) { work(); });
}

}  // namespace agentq::ecl
