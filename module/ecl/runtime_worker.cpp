// Boot and the worker threads: ECL boots on the first worker, which loads
// the Lisp side and serves jobs; a worker stuck in a job is retired and a
// fresh Lisp thread in the same image replaces it.  Part of the runtime
// (runtime_state.hpp).

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <gc/gc.h>

#include "sys/thread_signals.hpp"
#include "ecl/child_pipes.hpp"
#include "ecl/compile_child.hpp"
#include "ecl/interrupt_gate.hpp"
#include "ecl/job_origin.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/lisp_string.hpp"
#include "ecl/lisp_tools.hpp"
#include "ecl/process_functions.hpp"
#include "ecl/runtime_state.hpp"
#include "ecl/signals.hpp"
#include "ecl/stack_guard.hpp"
#include "ecl/tiering.hpp"

extern "C" void init_agentq_lisp(cl_object);  // the compiled lisp/ files
extern "C" void ecl_cs_set_org(cl_env_ptr);    // libecl's, in its internal.h

namespace agentq::ecl {

LispRoots g_roots;
constinit thread_local std::uint64_t t_worker_generation = 0;
void* g_boot_sigmask = nullptr;
cl_index g_boot_bds_size = 0, g_boot_frs_size = 0;

// The signal ECL uses to interrupt a thread, named for the interrupt gate.
const int kInterruptSignal = SIGRTMIN + 2;

namespace {

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
    define_job_functions();
    define_host_request_functions();
    define_cpu_functions();
    define_stats_functions();
    define_sampler_functions();
    define_origin_functions();
    define_process_functions();
    define_child_pipes();
    define_lisp_tool_functions();
    define_tiering_functions();
    define_compile_child_functions();
    define_stack_guard_functions();
    ecl_init_module(nullptr, init_agentq_lisp);
    for (cl_object* root : {&g_roots.worker_loop, &g_roots.escaped_job_text, &g_roots.worker, &g_roots.watchdog,
                            &g_roots.compiler, &g_roots.worker_keyword, &g_roots.watchdog_keyword,
                            &g_roots.compiler_keyword, &g_roots.evaluate_lisp_name, &g_roots.run_inline_job})
      ecl_register_root(root);
    g_roots.evaluate_lisp_name = make_lisp_string("evaluate_lisp");
    g_roots.worker_keyword = ecl_make_keyword("WORKER");
    g_roots.watchdog_keyword = ecl_make_keyword("WATCHDOG");
    g_roots.compiler_keyword = ecl_make_keyword("COMPILER");
    g_roots.worker_loop = ecl_fdefinition(lisp_symbol("WORKER-LOOP"));
    g_roots.escaped_job_text = ecl_fdefinition(lisp_symbol("ESCAPED-JOB-TEXT"));
    g_roots.run_inline_job = ecl_fdefinition(lisp_symbol("RUN-INLINE-JOB"));
    failure = cl_funcall(4, lisp_symbol("BOOT"), ecl_make_unsigned_integer(heap_limit),
                         ecl_make_fixnum(kBindingStackEntries), ecl_make_fixnum(kFrameStackEntries));
  }
  ECL_CATCH_ALL_END;
  return failure;
}

// After a non-local exit escaped a job: its [ERROR] text from the Lisp
// side, or NIL.  Kept free of C++ objects with destructors, like
// load_lisp_side.
cl_object escaped_job_text(cl_env_ptr env) {
  cl_object text = ECL_NIL;
  ECL_CATCH_ALL_BEGIN(env) {
    text = cl_funcall(1, g_roots.escaped_job_text);
  }
  ECL_CATCH_ALL_END;
  return text;
}

}  // namespace

void answer_escaped_job(Runtime::Impl& impl, cl_env_ptr env) {
  cl_object escaped = escaped_job_text(env);
  std::shared_ptr<Job> job;
  {
    std::lock_guard lock(impl.mutex);
    if (current_worker()) {
      job = std::move(impl.current);
      impl.current_id.store(0, std::memory_order_release);
    }
  }
  if (!job) return;
  job->success = false;
  job->text = ecl_stringp(escaped)
                  ? lisp_string_to_utf8(escaped)
                  : "[ERROR] CONTROL-ERROR\nA non-local exit escaped the evaluation; the session is still alive.";
  job->state.store(JobState::Done, std::memory_order_release);
  impl.wake_callers();
}

namespace {

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
    answer_escaped_job(impl, env);
  }
  if (!current_worker()) (t_holds_error ? impl.held_threads : impl.retired_running).fetch_sub(1);
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

}  // namespace

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

namespace {

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
  remove_former_worker(env->own_process);
  ecl_release_current_thread();
  return nullptr;
}

}  // namespace

// Starts a thread that runs no host code: all async signals blocked (they
// stay with the host's threads), the faults ECL handles let through, also
// when the caller blocks them (the async runner does).
int start_lisp_thread(pthread_t* thread, void* (*main)(void*), void* argument) {
  ThreadStartMask mask;
  return pthread_create(thread, nullptr, main, argument);
}

thread_local bool t_holds_error = false;

// Retires the worker and starts a fresh Lisp thread in the same image, so
// every definition is kept.  The retired thread runs on at the lowest
// priority (SCHED_IDLE) until it returns, if ever; its job, if it still has
// one, is answered with TEXT.  HELD: called by the worker itself for an
// error it holds (%DETACH-WORKER): it keeps its priority.
void replace_worker(Runtime::Impl& impl, const std::string& text, bool held) {
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
    (held ? impl.held_threads : impl.retired_running).fetch_add(1);
    add_former_worker(__atomic_load_n(&g_roots.worker, __ATOMIC_ACQUIRE));
    // Inside its idle reader's read(), in an inline job: set_idle_reader
    // no longer waits for it (see Impl::retired_inline).
    if (impl.inline_running) {
      impl.inline_running = false;
      ++impl.retired_inline;
      // Its call is taken over at once (it was answered with TEXT, or
      // holds an error): not left for the take-over's moment.
      if (impl.idle_reader) impl.idle_reader->owner_needed();
    }
  }
  impl.idle_cv.notify_all();
  impl.wake_worker();  // an idle worker leaves %NEXT-JOB
  if (!held) impl.replaced_workers.fetch_add(1);
  if (retired_tid != 0 && !held) {
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

}  // namespace agentq::ecl
