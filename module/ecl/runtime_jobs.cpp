// The Lisp-callable functions the worker and the watchdog run on: taking
// a job (%NEXT-JOB) and handing its result back (%FINISH-JOB), taking an
// interrupt (%NEXT-INTERRUPT), holding still while the background
// compiler forks, and telling the runtime's threads apart.  Part of the
// runtime (runtime_state.hpp).
//
// Called from Lisp: C++ frames here that Lisp can unwind through hold no
// objects with destructors and no locks.

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>

#include "core/utf8.hpp"
#include "ecl/job_origin.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/lisp_json.hpp"
#include "ecl/lisp_string.hpp"
#include "ecl/runtime_state.hpp"
#include "ecl/stack_guard.hpp"

namespace agentq::ecl {

namespace {

// On the worker: where the running job's output goes (null: the job keeps
// its output in its result, as usual).  Set by %NEXT-JOB.
thread_local std::shared_ptr<OutputSink> t_output;

// The worker, with LOCK on impl.mutex, holds still for %HOLD-WORKER until
// %RELEASE-WORKER (or the runtime stops, or it is retired).
void hold_still(Runtime::Impl& impl, std::unique_lock<std::mutex>& lock) {
  impl.worker_held = true;
  impl.held_cv.notify_all();
  impl.job_cv.wait(lock, [&] { return !impl.hold_requested || impl.stopping || !current_worker(); });
  impl.worker_held = false;
}

// On the worker: whether the last job's caller calls in bursts
// (Job::poll_after).  Set by %NEXT-JOB.
thread_local bool t_poll_after = false;

// Polls for a job for up to kWorkerPoll after the last one when its caller
// calls in bursts (CallContext::calls_in_bursts: Emacs's own synchronous
// calls), moving off the caller's CPU and off a compile's (see
// place_worker).  After anyone else's (an MCP client's, an asynchronous
// call's) only a wake-ahead's window: their next call comes later, and a
// poll kept a CPU from everything else meanwhile, and made the worker one
// the scheduler lets wait when it is woken.  bench/mcp_tail, one CPU kept
// busy, every server served in turns: with the poll headless p50 3.5 ms
// (and, with Emacs's worker still polling after MCP calls, p99 7.6 ms),
// --emacs p50 3.1 ms; without it 57 us, p99 144 us, and 172 us.
void poll_for_job(Runtime::Impl& impl) {
  auto start = Clock::now();
  // A wake-ahead (Runtime::wake_ahead) may have asked for longer.
  auto poll_until = std::max(t_poll_after ? start + kWorkerPoll : start,
                             Clock::time_point(Clock::duration(impl.wake_ahead_until_ns.load(std::memory_order_relaxed))));
  auto next_yield = start + kWorkerYieldEvery;
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
}

// The next job, taken off the queue and made the running one, once the
// worker is not held; null when the runtime stops or this thread is no
// longer the worker, or (WOKEN_AHEAD) it was woken to poll, or (INPUT)
// its idle reader's descriptor is readable.
std::shared_ptr<Job> take_job(Runtime::Impl& impl, bool& woken_ahead, bool& input) {
  std::shared_ptr<Job> job;
  std::unique_lock lock(impl.mutex);
  for (;;) {
    if (impl.hold_requested && !impl.stopping && current_worker()) {
      hold_still(impl, lock);
      continue;
    }
    if (impl.queue.empty() && !impl.stopping && current_worker()) {
      const int fd = impl.idle_reader ? impl.idle_reader->fd() : -1;
      if (fd >= 0 && !impl.wake_ahead_requested) {
        // Idle with a reader: its input is the usual next job.
        if (impl.wait_for_idle_input(lock, fd)) {
          input = true;
          return job;
        }
      } else {
        impl.worker_falls_asleep();
        impl.job_cv.wait(lock, [&] {
          return impl.stopping || !impl.queue.empty() || !current_worker() || impl.hold_requested ||
                 impl.wake_ahead_requested || (impl.idle_reader && impl.idle_reader->fd() >= 0);
        });
        impl.worker_sleeping = false;
      }
      if (impl.wake_ahead_requested) {
        // Woken ahead of a call: poll for it (poll_for_job), awake.
        impl.wake_ahead_requested = false;
        if (impl.queue.empty() && !impl.stopping && !impl.hold_requested) {
          woken_ahead = true;
          return job;
        }
      }
      continue;
    }
    break;
  }
  if (!impl.queue.empty() && current_worker()) {
    job = std::move(impl.queue.front());
    impl.queue.pop_front();
    impl.queued.fetch_sub(1, std::memory_order_release);
    round_trip_stamps().stamp(RoundTripStep::PickedUp);
    // Before Running: a caller that sees it running knows where (kNoCpu).
    impl.publish_worker_cpu();
    job->state.store(JobState::Running, std::memory_order_release);
    impl.current = job;
    impl.current_id.store(job->id, std::memory_order_release);
  }
  return job;
}

// JOB's request as the values %NEXT-JOB returns, after readying the worker
// for it.  Allocates: call with no locks held.
cl_object job_values(Runtime::Impl& impl, const std::shared_ptr<Job>& job);

// (%NEXT-JOB) → id tool code package flags output-limit timeout-ms
// heap-limit arguments interactive-key, or NIL to stop (the runtime stops, or this thread
// is no longer the worker).  TOOL names the job's handler ("evaluate_lisp"
// for an evaluation); ARGUMENTS are another tool's, as Lisp data.
// HEAP-LIMIT is a new limit to apply first, or NIL.  INTERACTIVE-KEY: an
// integer for an interactive evaluation (see EvalRequest), else NIL.
cl_object next_job() {
  Runtime::Impl& impl = *g_impl;
  std::shared_ptr<Job> job;
  for (;;) {
    bool woken_ahead = false, input = false;
    poll_for_job(impl);
    job = take_job(impl, woken_ahead, input);  // null and WOKEN_AHEAD: woken to poll
    if (input) {
      impl.run_idle_reader();  // the calls it reads run here, as inline jobs
      continue;
    }
    if (!woken_ahead) break;
  }
  // No locks held from here: allocation may unwind (storage exhaustion).
  if (!job) return one_value(ECL_NIL);
  return job_values(impl, job);
}

// (%INLINE-JOB) → what %NEXT-JOB returns, for the job the worker runs for
// its idle reader (Runtime::Impl::run_inline); NIL when none.
cl_object inline_job() {
  Runtime::Impl& impl = *g_impl;
  std::shared_ptr<Job> job;
  {
    std::lock_guard lock(impl.mutex);
    if (current_worker() && impl.inline_running) job = impl.current;
  }
  if (!job) return one_value(ECL_NIL);
  return job_values(impl, job);
}

cl_object job_values(Runtime::Impl& impl, const std::shared_ptr<Job>& job) {
  // Woken on a CPU a background compile runs on: off it before the job.
  if (std::uint64_t compile = impl.compile_cpus.load(std::memory_order_relaxed);
      compile != 0 && cpu_in_mask(impl.publish_worker_cpu(), compile))
    place_worker(impl.caller_cpu.load(std::memory_order_relaxed));
  // Pulled to a caller's CPU to start this job: free to run anywhere again.
  if (impl.worker_pulled.exchange(false, std::memory_order_acq_rel)) free_worker_from_caller(true);
  rearm_stack_guard();  // what an overflow in the last job opened
  // ECL takes a fault at the address of the last one for a fault in its
  // handling, which it does not signal: a job's first is signalled.
  ecl_process_env()->fault_address = nullptr;
  t_poll_after = job->poll_after;
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
  env->values[4] = ecl_make_fixnum((request.capture_time ? 1 : 0) | (request.debugger ? 2 : 0) |
                                   (request.hold_errors ? 4 : 0) | (request.structured ? 8 : 0) |
                                   (request.stream_output ? 16 : 0));
  env->values[5] = ecl_make_fixnum(static_cast<cl_fixnum>(request.output_limit));
  env->values[6] = ecl_make_fixnum(static_cast<cl_fixnum>(request.timeout.count()));
  env->values[7] = heap;
  env->values[8] = arguments;
  env->values[9] = interactive;
  env->nvalues = 10;
  return id;
}

// (%FINISH-JOB id success-p text) → true when the worker's stacks are
// smaller than at boot and should be restored.  A retired worker's result
// is dropped: its job was already answered.
cl_object finish_job(cl_object id, cl_object success, cl_object text) {
  round_trip_stamps().stamp(RoundTripStep::Evaluated);
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

// (%DETACH-WORKER text) → T: on the worker, inside a job, for an error
// held with its stack (lisp/held-errors.lisp): the job is answered with
// TEXT (a failure), this thread stops being the worker and a fresh worker
// serves the next jobs; the held evaluation goes on here later, or ends.
// NIL when this thread is not the worker or runs no job.
cl_object detach_worker(cl_object text) {
  Runtime::Impl& impl = *g_impl;
  if (!current_worker() || !ecl_stringp(text)) return one_value(ECL_NIL);
  std::string utf8 = lisp_string_to_utf8(text);
  {
    std::lock_guard lock(impl.mutex);
    if (!impl.current) return one_value(ECL_NIL);
  }
  t_holds_error = true;
  replace_worker(impl, utf8, true);
  return one_value(ECL_T);
}

// (%CURRENT-JOB) → id of the running job, or NIL (also on a retired worker).
// (%SET-JOB-STRUCTURE text): the running job's EvalOutcome::structure, a
// JSON object's text.  On the worker only; NIL elsewhere.
cl_object set_job_structure(cl_object text) {
  if (!current_worker() || !ecl_stringp(text)) return one_value(ECL_NIL);
  std::string utf8 = lisp_string_to_utf8(text);
  std::lock_guard lock(g_impl->mutex);
  if (!g_impl->current) return one_value(ECL_NIL);
  g_impl->current->structure = std::move(utf8);
  return one_value(ECL_T);
}

// (%SET-ONE-VALUE-STRUCTURE package-name): the running job's structure is
// its text's one => value in that package (made by Runtime::evaluate: no
// JSON is written in Lisp for the usual answer).
cl_object set_one_value_structure(cl_object package) {
  if (!current_worker() || !ecl_stringp(package)) return one_value(ECL_NIL);
  std::string utf8 = lisp_string_to_utf8(package);
  std::lock_guard lock(g_impl->mutex);
  if (!g_impl->current) return one_value(ECL_NIL);
  g_impl->current->one_value_package = std::move(utf8);
  g_impl->current->one_value = true;
  return one_value(ECL_T);
}

cl_object current_job() {
  std::uint64_t id = current_worker() ? g_impl->current_id.load(std::memory_order_acquire) : 0;
  return one_value(id ? ecl_make_unsigned_integer(id) : ECL_NIL);
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
    impl.wake_worker();
    held = impl.held_cv.wait_for(lock, wait, [&] { return impl.worker_held || impl.stopping; }) && impl.worker_held;
    if (!held) {
      impl.hold_requested = false;
      impl.wake_worker();
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
    impl.wake_worker();
  });
  return one_value(ECL_NIL);
}

namespace {

std::mutex g_former_mutex;
std::vector<cl_object> g_former_workers;  // live threads' processes: ECL's thread list keeps them
std::atomic<cl_fixnum> g_former_count{0};

bool former_worker_p(cl_object process) {
  if (g_former_count.load(std::memory_order_acquire) == 0) return false;
  bool found = false;
  outside_lisp([&] {
    std::lock_guard lock(g_former_mutex);
    found = std::find(g_former_workers.begin(), g_former_workers.end(), process) != g_former_workers.end();
  });
  return found;
}

}  // namespace

// (%OWN-PROCESS) → this thread's MP:PROCESS.  On a thread that joined Lisp
// through ecl_import_current_thread (a replacement worker), ECL 21.2 leaves
// MP:*CURRENT-PROCESS* at another thread's process.
cl_object own_process() { return one_value(ecl_process_env()->own_process); }

// (%FORMER-WORKER-COUNT) → how many former workers are still Lisp threads.
cl_object former_worker_count() { return one_value(ecl_make_fixnum(g_former_count.load(std::memory_order_acquire))); }

// (%RUNTIME-PROCESS-P process) → true for the worker, the watchdog, the
// background compiler and former workers (a held error's thread).
cl_object runtime_process_p(cl_object process) {
  bool ours = process != ECL_NIL && (process == __atomic_load_n(&g_roots.worker, __ATOMIC_ACQUIRE) ||
                                     process == __atomic_load_n(&g_roots.watchdog, __ATOMIC_ACQUIRE) ||
                                     process == __atomic_load_n(&g_roots.compiler, __ATOMIC_ACQUIRE) ||
                                     former_worker_p(process));
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

// (%FUNCTIONS-INTACT-P alist) → true when each (NAME . FUNCTION) of ALIST,
// NAME a symbol, still names FUNCTION as a function (not a macro).  What
// FBOUNDP and FDEFINITION tell, read from the symbol's function cell:
// checked before every job (worker.lisp), at a tenth of their cost.
cl_object functions_intact_p(cl_object alist) {
  for (cl_object tail = alist; ECL_CONSP(tail); tail = ECL_CONS_CDR(tail)) {
    cl_object entry = ECL_CONS_CAR(tail);
    if (!ECL_CONSP(entry)) return one_value(ECL_NIL);
    cl_object name = ECL_CONS_CAR(entry);
    if (ecl_t_of(name) != t_symbol || ECL_SYM_FUN(name) != ECL_CONS_CDR(entry) ||
        (name->symbol.stype & ecl_stp_macro) != 0)
      return one_value(ECL_NIL);
  }
  return one_value(ECL_T);
}

// (%LIVE-PACKAGE-P object) → true when OBJECT is a package that was not
// deleted (one whose name is not NIL).  PACKAGE-NAME would copy the name.
cl_object live_package_p(cl_object object) {
  return one_value(ECL_PACKAGEP(object) && object->pack.name != ECL_NIL ? ECL_T : ECL_NIL);
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

}  // namespace

void define_job_functions() {
  define_lisp_function("%NEXT-JOB", next_job);
  define_lisp_function("%INLINE-JOB", inline_job);
  define_lisp_function("%FINISH-JOB", finish_job);
  define_lisp_function("%FINALIZER-BUDGET", finalizer_budget);
  define_lisp_function("%BREAK-TAKEN", break_taken);
  define_lisp_function("%NEXT-INTERRUPT", next_interrupt);
  define_lisp_function("%LIVE-PACKAGE-P", live_package_p);
  define_lisp_function("%FUNCTIONS-INTACT-P", functions_intact_p);
  define_lisp_function("%STREAM-OUTPUT", stream_output);
  define_lisp_function("%CURRENT-JOB", current_job);
  define_lisp_function("%SET-JOB-STRUCTURE", set_job_structure);
  define_lisp_function("%SET-ONE-VALUE-STRUCTURE", set_one_value_structure);
  define_lisp_function("%DETACH-WORKER", detach_worker);
  define_lisp_function("%SET-WATCHDOG", set_watchdog);
  define_lisp_function("%SET-COMPILER-THREAD", set_compiler_thread);
  define_lisp_function("%WORKER-BUSY-P", worker_busy_p);
  define_lisp_function("%HOLD-WORKER", hold_worker);
  define_lisp_function("%RELEASE-WORKER", release_worker);
  define_lisp_function("%HOLD-POINT", hold_point);
  define_lisp_function("%RUNTIME-PROCESS-P", runtime_process_p);
  define_lisp_function("%RUNTIME-THREAD-P", runtime_thread_p);
  define_lisp_function("%FORMER-WORKER-COUNT", former_worker_count);
  define_lisp_function("%OWN-PROCESS", own_process);
}

void add_former_worker(cl_object process) {
  if (process == ECL_NIL || process == nullptr) return;
  std::lock_guard lock(g_former_mutex);
  g_former_workers.push_back(process);
  g_former_count.store(static_cast<cl_fixnum>(g_former_workers.size()), std::memory_order_release);
}

void remove_former_worker(cl_object process) {
  std::lock_guard lock(g_former_mutex);
  std::erase(g_former_workers, process);
  g_former_count.store(static_cast<cl_fixnum>(g_former_workers.size()), std::memory_order_release);
}

}  // namespace agentq::ecl
