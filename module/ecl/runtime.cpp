// The embedded ECL's public face (ecl/runtime.hpp): boot, evaluate,
// cancel, restart, status, shutdown.  The runtime's other pieces, one job
// each, and its threads are listed in runtime_state.hpp.
//
// C++ frames that Lisp can unwind through (a longjmp, so no destructors)
// hold no objects with destructors and no locks.

#include "ecl/runtime.hpp"

#include <pthread.h>

#include <cstring>
#include <thread>

#include "core/json_text.hpp"
#include "ecl/lisp_nesting.hpp"
#include "ecl/child_signals.hpp"
#include "ecl/runtime_state.hpp"

namespace agentq::ecl {

Runtime::Impl* g_impl = nullptr;

namespace {

// Evaluations this thread is waiting for (a caller's thread).
thread_local int t_waiting_for_lisp = 0;

// ECL's reader recurses in C without checking its stack: code nested
// 100,000 deep ran off the end of it and killed the process.  So the code,
// and every string argument of a Lisp tool (which may read it), is
// measured first.
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

// Each section (stdout, stderr, values) is bounded in Lisp, with its own
// marker; this only bounds the whole if something still slipped through.
EvalOutcome finished_outcome(Job& job) {
  const EvalRequest& request = job.request;
  EvalOutcome outcome{job.success, std::move(job.text), std::move(job.structure)};
  // The usual answer's structure, from its one "=> VALUE" line.
  if (job.one_value && outcome.success && outcome.text.starts_with("=> ")) {
    outcome.structure = R"({"package":)";
    append_json_string(outcome.structure, job.one_value_package);
    outcome.structure += R"(,"values":[)";
    append_json_string(outcome.structure, std::string_view(outcome.text).substr(3));
    outcome.structure += "]}";
  }
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

namespace {

// Starts the worker thread, which boots ECL, unless a boot was started
// already.  With impl.boot_mutex held.
void begin_boot(Runtime::Impl& impl) {
  if (impl.boot_state.load() != BootState::None) return;
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

}  // namespace

void Runtime::start_boot() {
  Impl& impl = *impl_;
  if (impl.boot_state.load() != BootState::None) return;
  std::lock_guard lock(impl.boot_mutex);
  begin_boot(impl);
}

void Runtime::ensure_booted() {
  Impl& impl = *impl_;
  BootState state = impl.boot_state.load();
  if (state == BootState::Running) return;
  std::unique_lock lock(impl.boot_mutex);
  begin_boot(impl);
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
  if (context.adopts_running_job()) return impl.adopt_inline(context);
  if (t_idle_reading && current_worker()) return impl.run_inline(std::move(given), context);
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
  auto job = impl.make_job(std::move(given));
  job->poll_after = context.calls_in_bursts();
  auto start = Clock::now();
  const auto deadline = Impl::deadline_of(*job, start);
  bool woke = impl.enqueue(job);
  context.job_queued(job->id);
  OwnerWait owner_wait(impl, *job, context);
  impl.wait_for_pickup(*job, start, woke);
  if (std::optional<Interrupt> why = impl.serve_until_done(*job, context, deadline))
    if (std::optional<EvalOutcome> ended = impl.escalate(job, *why, context)) return std::move(*ended);
  round_trip_stamps().stamp(RoundTripStep::Seen);
  return finished_outcome(*job);
}

bool Runtime::wake_ahead(std::chrono::milliseconds window, bool warm) {
  Impl& impl = *impl_;
  if (!impl.alive() || window.count() <= 0) return false;
  const std::int64_t until = steady_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(window).count();
  std::int64_t was = impl.wake_ahead_until_ns.load(std::memory_order_relaxed);
  while (was < until && !impl.wake_ahead_until_ns.compare_exchange_weak(was, until, std::memory_order_relaxed)) {
  }
  bool wake;
  {
    std::lock_guard lock(impl.mutex);
    if (impl.current || !impl.queue.empty() || impl.abandoned || impl.stopping) return false;
    wake = impl.worker_sleeping;
    if (warm) {
      // Nobody waits for it: its requests are refused, its text dropped.
      EvalRequest request;
      // Read, evaluated and printed as a call is; the REPL's history
      // (*, +, /) leaves it out (read-eval-forms), as the inspector's.
      request.code = "'agent-q::warm-up";
      request.timeout = std::chrono::milliseconds(1000);
      request.output_limit = 100;
      auto job = impl.make_job(std::move(request));
      job->owner_gone = true;
      impl.queue.push_back(std::move(job));
      impl.queued.fetch_add(1, std::memory_order_release);
    } else if (wake) {
      impl.wake_ahead_requested = true;
    }
  }
  if (wake) impl.wake_worker();
  return true;
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
  auto held = impl.held_threads.load();
  status.held_errors = held > 0 ? static_cast<std::uint64_t>(held) : 0;
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
  impl.wake_worker();
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
