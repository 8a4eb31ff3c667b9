// The runtime's shared state: what the pieces of the runtime (ecl/runtime*.cpp)
// share, and nothing outside them includes.  The pieces, one job each:
//   runtime.cpp          the public API (Runtime): boot, evaluate, cancel,
//                        restart, status, shutdown
//   runtime_wait.cpp     the caller's side of a job: queue, wait, serve the
//                        job's requests, escalate an interrupt
//   runtime_jobs.cpp     the Lisp-callable functions the worker and the
//                        watchdog take jobs and interrupts with
//   runtime_host.cpp     the Lisp-callable requests to the host (eval-in-emacs)
//   runtime_cpus.cpp     where the worker and the background compiler run
//   runtime_stats.cpp    GC statistics and the clocks benchmarks read
//   sampler.cpp          profile_form's sampling of the worker (a CPU-time timer, a signal of its own)
//   runtime_worker.cpp   boot, the worker threads and their replacement
//
// Threads:
//   worker   — boots ECL, runs AGENT-Q::WORKER-LOOP, which takes jobs from
//              %NEXT-JOB and hands results to %FINISH-JOB (runtime_jobs.cpp).
//   watchdog — an ECL thread that interrupts the worker on request (C-g,
//              timeout): only an ECL thread may call MP:INTERRUPT-PROCESS.
//   callers  — any other thread (the Emacs main thread, the MCP server)
//              enqueues a job and waits in Runtime::evaluate; they never
//              call ECL themselves.
//
// C++ frames that Lisp can unwind through (a longjmp, so no destructors)
// hold no objects with destructors and no locks.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/round_trip_stamps.hpp"
#include "ecl/ecl_api.hpp"
#include "ecl/runtime.hpp"

namespace agentq::ecl {

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
  std::string structure;  // EvalOutcome::structure: set by the worker before Done
  // Set instead by %SET-ONE-VALUE-STRUCTURE: the package's name, the
  // structure to be made from the text's one => line.
  std::string one_value_package;
  bool one_value = false;
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
  // Its caller's CallContext::calls_in_bursts: the worker polls for the
  // next job after this one (kWorkerPoll) instead of sleeping at once.
  bool poll_after = false;
  // A job the worker runs for its idle reader (run_inline): when it
  // started, for the time limit of the owner that takes it over.
  Clock::time_point started{};
};

// Who has the result of the job the worker runs for its idle reader.
enum class InlineClaim : int { Open, Worker, Owner };

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
// A woken worker still waiting to run on another CPU after kPullAfter,
// which went to sleep less than kWorkerHotFor before, waits behind another
// process there: the scheduler does not move a thread that ran in the last
// 0.5 ms (sched_migration_cost) to the idle CPU, so it would wait out that
// process's slice (2-4 ms).  The caller moves it to its own CPU instead
// and sleeps (pull_worker_here).  A worker asleep for longer the scheduler
// moves itself when the caller's CPU idles; one slow to start then is
// waking an idle CPU (over 100 us on a VM), and moving it would only cost
// (Emacs's call after 10 ms idle: 190-205 us median, 246-292 when pulled).
constexpr auto kPullAfter = std::chrono::microseconds(100);
constexpr auto kWorkerHotFor = std::chrono::milliseconds(1);
constexpr auto kPollSlice = std::chrono::milliseconds(5);
constexpr auto kInterruptGrace = std::chrono::seconds(3);
constexpr auto kInterruptRepeat = std::chrono::milliseconds(500);
constexpr auto kDeferredRetry = std::chrono::milliseconds(1);
constexpr auto kBootTimeout = std::chrono::seconds(20);

// Spinning while another thread works only pays with a second CPU: in the
// affinity mask, and in the cgroup's CPU quota, if it has one
// (runtime_cpus.cpp).
bool can_spin();

inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

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
  // A call is on its way (Runtime::wake_ahead): the worker polls until
  // then (steady clock, ns since its epoch), woken if it slept.
  std::atomic<std::int64_t> wake_ahead_until_ns{0};
  bool wake_ahead_requested = false;  // guarded by mutex: wakes a sleeping worker to poll
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
  // A caller moved the worker to its CPU (pull_worker_here): the worker
  // lets itself run anywhere again when it starts the job.
  std::atomic<bool> worker_pulled{false};
  // When the worker last went to sleep (steady_ns): see kWorkerHotFor.
  std::atomic<std::int64_t> worker_slept_ns{0};
  std::atomic<std::uint64_t> replaced_workers{0};
  std::atomic<std::int64_t> held_threads{0};  // former workers holding an error (lisp/held-errors.lisp)
  std::atomic<std::int64_t> retired_running{0};  // retired workers still in Lisp

  // --- the idle reader (Runtime::set_idle_reader, core/idle_reader.hpp)
  IdleReader* idle_reader = nullptr;  // guarded by mutex
  // Threads inside idle_reader->read() (guarded by mutex), of which
  // RETIRED_INLINE were retired while inside an inline job's Lisp (stuck,
  // or holding an error): set_idle_reader waits for the others.  One that
  // returns after its reader was replaced (READER_GENERATION) parks for
  // good instead of returning into the reader's frames.
  int idle_readers = 0;
  int retired_inline = 0;
  std::uint64_t reader_generation = 0;
  std::condition_variable idle_cv;
  // The worker runs an inline job (guarded by mutex), and which one.
  bool inline_running = false;
  std::shared_ptr<Job> inline_job;
  std::atomic<InlineClaim> inline_claim{InlineClaim::Open};
  // An eventfd that wakes the worker waiting on the idle reader's
  // descriptor (worker_polls_fd) as job_cv wakes it otherwise.
  int wake_fd = -1;
  std::atomic<bool> worker_polls_fd{false};

  // Wakes the worker, wherever it waits for work.
  void wake_worker();
  // On the worker, with LOCK held and nothing to do: waits until it is
  // woken (wake_worker) or FD, the idle reader's, is readable (true).
  bool wait_for_idle_input(std::unique_lock<std::mutex>& lock, int fd);
  // On the worker: lets its idle reader read (IdleReader::read).
  void run_idle_reader();

  // On the worker, from its idle reader's read(): runs REQUEST's job on
  // this thread, nobody waiting (see core/idle_reader.hpp).
  EvalOutcome run_inline(EvalRequest request, CallContext& context);
  // The owner's side of a claimed inline job (claim_inline_job).
  EvalOutcome adopt_inline(CallContext& context);

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
  // On the worker, with mutex held: it goes to sleep (worker_sleeping).
  void worker_falls_asleep() {
    worker_sleeping = true;
    worker_slept_ns.store(steady_ns(), std::memory_order_relaxed);
  }
  // The worker went to sleep less than kWorkerHotFor ago.
  bool worker_still_hot() const {
    return steady_ns() - worker_slept_ns.load(std::memory_order_relaxed) <
           std::chrono::duration_cast<std::chrono::nanoseconds>(kWorkerHotFor).count();
  }

  // The caller's side of a job (runtime_wait.cpp), in the order
  // Runtime::evaluate takes its steps.

  // Waits for a job that C-g left unwinding, until its grace is over, then
  // replaces the worker if it still has not unwound.  False on C-g.
  bool settle_abandoned(CallContext& context);

  // A job for REQUEST, not queued yet.
  std::shared_ptr<Job> make_job(EvalRequest request);

  // Queues JOB for the worker; true when the worker slept and was woken.
  bool enqueue(const std::shared_ptr<Job>& job);

  // The first moments after STARTED: spins or yields while the worker
  // picks JOB up and, often, finishes it.  WOKE: the worker had to be woken.
  void wait_for_pickup(Job& job, Clock::time_point started, bool woke);

  // Serves what JOB asks of its owner until it is done; or the interrupt
  // to send it: C-g, a cancel, or DEADLINE passed.  Throws RuntimeError
  // when the runtime stops meanwhile.
  std::optional<Interrupt> serve_until_done(Job& job, CallContext& context, Clock::time_point deadline);
  // Sends JOB's pending C-c C-c (Runtime::break_job); true while one waits.
  bool send_break(Job& job, unsigned long& deferred_seen);
  // Signals the worker again when the gate held an interrupt back since
  // DEFERRED_SEEN (deferred_interrupts() then), which it updates.
  void signal_again_if_deferred(unsigned long& deferred_seen);

  // Stops JOB for WHY: withdraws it when still queued, else interrupts it
  // and waits out its grace, abandoning it when it will not unwind.  The
  // outcome when the call ends without the job's own result, else none
  // (the job unwound and finished).
  std::optional<EvalOutcome> escalate(const std::shared_ptr<Job>& job, Interrupt why, CallContext& context);

  // Runs what JOB asked of its owner, on the owner's thread.
  void serve_requests(Job& job, CallContext& context);

  // The owner stops serving JOB (it has been interrupted, or has returned):
  // what it still asks is refused.
  void close_requests(Job& job);

  // Queues WORK for the owner of the running job; false when no job runs
  // or its owner no longer serves.
  bool ask_owner(OwnerWork work);

  // Hands what JOB wrote since the last time to its owner's context.
  static void deliver_output(Job& job, CallContext& context);

  // When JOB's time limit, counted from START, runs out (max: none).
  static Clock::time_point deadline_of(const Job& job, Clock::time_point start);

  // Sleeps up to SLICE unless JOB finishes or work is posted.
  void sleep_slice(const Job& job, Clock::duration slice);

  // Parts of escalate.
  std::optional<EvalOutcome> withdraw_queued(const std::shared_ptr<Job>& job, Interrupt why);
  bool interrupt_within_grace(Job& job, Interrupt why, CallContext& context, Clock::time_point give_up);
};

// While an owner waits for its job: however the wait ends, what the job
// still asks is refused, and an interactive evaluation's last output
// reaches the owner before the result.
class OwnerWait {
 public:
  OwnerWait(Runtime::Impl& impl, Job& job, CallContext& context) : impl_(impl), job_(job), context_(context) {}
  ~OwnerWait() {
    impl_.close_requests(job_);
    Runtime::Impl::deliver_output(job_, context_);
  }
  OwnerWait(const OwnerWait&) = delete;
  OwnerWait& operator=(const OwnerWait&) = delete;

 private:
  Runtime::Impl& impl_;
  Job& job_;
  CallContext& context_;
};

// The state below is shared by the runtime's files alone: hidden, so that
// reading it costs what it cost when they were one file (no indirection
// through the module's symbol table).

// Set once by Runtime's constructor; the Impl lives for the whole process.
extern Runtime::Impl* g_impl __attribute__((visibility("hidden")));

inline cl_object lisp_symbol(const char* name) { return ecl_make_symbol(name, "AGENT-Q"); }

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
  cl_object run_inline_job = ECL_NIL;      // AGENT-Q::RUN-INLINE-JOB, taken at boot
};
extern LispRoots g_roots __attribute__((visibility("hidden")));  // runtime_worker.cpp

// This thread's worker generation (0: never a worker).  Initial-exec: read
// on every job (current_worker), as cheaply as a variable of the file that
// reads it.
extern constinit thread_local std::uint64_t t_worker_generation
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

inline bool current_worker() {
  return t_worker_generation != 0 && t_worker_generation == g_impl->worker_generation.load(std::memory_order_acquire);
}

// True on the worker while its idle reader reads (and so runs calls there).
extern constinit thread_local bool t_idle_reading
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

// The outcome of a finished JOB, its text moved out (runtime.cpp).
EvalOutcome finished_outcome(Job& job);

// After a non-local exit escaped the job running on this thread, the
// worker (it should not): the job is answered with the [ERROR] text the
// Lisp side made of it, and is no longer the running one
// (runtime_worker.cpp).
void answer_escaped_job(Runtime::Impl& impl, cl_env_ptr env);

// The signal ECL uses to interrupt a thread, named for the interrupt gate.
extern const int kInterruptSignal;

// The mask ECL gives the threads the boot worker starts (see
// replacement_main).
extern void* g_boot_sigmask;

// The worker's binding and frame stacks at boot, in entries as ECL keeps
// them: evaluated code may shrink them (EXT:SET-LIMIT), and the worker
// needs them back.
extern cl_index g_boot_bds_size, g_boot_frs_size;

// Retires the worker and starts a fresh Lisp thread in the same image, so
// every definition is kept.  The retired thread runs on at the lowest
// priority (SCHED_IDLE) until it returns, if ever; its job, if it still has
// one, is answered with TEXT.  Called by a caller; HELD: by the worker
// itself, for an error it holds (%DETACH-WORKER): then it keeps its
// priority and counts as a held thread, not a retired one.
// (runtime_worker.cpp)
void replace_worker(Runtime::Impl& impl, const std::string& text, bool held = false);

// True on a thread that stopped being the worker to hold an error.
extern thread_local bool t_holds_error;

// Former workers (retired, or holding an error) still in ECL's list of
// threads: the runtime's own, not evaluated code's (%RUNTIME-PROCESS-P,
// %FORMER-WORKER-COUNT).  Added when a worker is replaced, removed when
// its thread leaves Lisp.  (runtime_jobs.cpp)
void add_former_worker(cl_object process);
void remove_former_worker(cl_object process);

// Boot and the worker threads (runtime_worker.cpp).
std::size_t worker_stack_size();
// Starts a thread that runs no host code (see runtime_worker.cpp).
int start_lisp_thread(pthread_t* thread, void* (*main)(void*), void* argument);
// The boot worker's thread: boots ECL, loads the Lisp side and serves
// jobs as worker GENERATION (a std::uintptr_t).
void* worker_main(void* generation);

// CPU placement (runtime_cpus.cpp).
const cpu_set_t& process_cpus();
inline bool cpu_in_mask(int cpu, std::uint64_t mask) { return cpu >= 0 && cpu < 64 && ((mask >> cpu) & 1u) != 0; }
void place_worker(int caller);
// FORCE: even when the worker did not place itself (a caller pulled it).
void free_worker_from_caller(bool force = false);
// On a caller's thread: the worker (thread TID), waiting to run elsewhere,
// may run only on this thread's CPU.  False when it could not be moved.
bool pull_worker_here(pid_t tid);

// GC statistics (runtime_stats.cpp): starts keeping the collections' phases.
void watch_gc_phases();

// The Lisp functions each piece defines, called at boot before the
// compiled Lisp loads (load_lisp_side, runtime_worker.cpp).
void define_job_functions();          // runtime_jobs.cpp
void define_host_request_functions(); // runtime_host.cpp
void define_cpu_functions();          // runtime_cpus.cpp
void define_stats_functions();        // runtime_stats.cpp
void define_sampler_functions();      // sampler.cpp

}  // namespace agentq::ecl
