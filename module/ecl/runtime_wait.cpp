// The caller's side of a job: it is queued, the caller waits for it
// (spinning, yielding or sleeping), serves what it asks of its owner
// meanwhile, and on C-g, a cancel or its deadline interrupts it, waits
// out its grace and, if it will not unwind, abandons it.  Runs on the
// callers' threads, never in Lisp.  Part of the runtime (runtime_state.hpp).

#include <algorithm>
#include <string>

#include "ecl/interrupt_gate.hpp"
#include "ecl/runtime_state.hpp"
#include "sys/thread_cpu.hpp"

namespace agentq::ecl {

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

Clock::time_point Runtime::Impl::deadline_of(const Job& job, Clock::time_point start) {
  const auto timeout = job.request.timeout;
  if (timeout.count() > 0 && timeout < std::chrono::hours(24 * 365)) return start + timeout;
  return Clock::time_point::max();
}

std::shared_ptr<Job> Runtime::Impl::make_job(EvalRequest request) {
  auto job = std::make_shared<Job>();
  job->id = next_id.fetch_add(1);
  job->request = std::move(request);
  if (job->request.interactive_key || job->request.stream_output) job->output = std::make_shared<OutputSink>();
  return job;
}

bool Runtime::Impl::enqueue(const std::shared_ptr<Job>& job) {
  bool wake;
  {
    std::lock_guard lock(mutex);
    queue.push_back(job);
    queued.fetch_add(1, std::memory_order_release);
    wake = worker_sleeping;
  }
  if (wake) wake_worker();
  round_trip_stamps().stamp(RoundTripStep::Enqueued);
  return wake;
}

// Spin while the worker is known to be on a CPU: polling for this job
// (it picks it up within kPickupSpin) or running it.  Yield while a worker
// we had to wake, or one that is slow to pick up, has not started, so it
// gets to run if it shares this CPU; with a single CPU, always yield.  (A
// system call per call, even a yield, made every call slower on a VM.)
// On the worker's CPU, always yield (see kNoCpu).
//
// A woken worker that has not started yet is looked up first (at first
// the CPU it took its last job on, then, after kPickupSpin, where it waits
// to run, thread_cpu, every kPickupSpin; reading it every call cost the
// asynchronous round trip 4 us of 57): queued on another CPU, it is not
// waiting for ours, and a yield could only hand this CPU to another
// process.  Under Linux's EEVDF a yield gives up the rest of the slice:
// with a busy process on this CPU, the caller then sat out that process's
// slice (2-4 ms, the other CPU idle) after the worker had finished.  Seen
// in a scheduler trace of bench/mcp_tail with one CPU busy (perf sched
// timehist), runs of ten such calls in a row; in 40 runs of headless
// servers that yielded, 6 had p99 12-25x the do-nothing floor's, in 30
// runs that looked first, none (the worst 5x).
void Runtime::Impl::wait_for_pickup(Job& job, Clock::time_point started, bool woke) {
  const bool spin = can_spin();
  auto spin_until = started + kCallerSpin, pickup_until = started + kPickupSpin;
  Clock::time_point next_look{};
  bool elsewhere = false;  // the woken worker waits to run on another CPU
  while (job.state.load(std::memory_order_acquire) != JobState::Done) {
    auto now = Clock::now();
    if (now >= spin_until) break;
    bool running = job.state.load(std::memory_order_relaxed) == JobState::Running;
    if (spin && woke && !running && elsewhere && now >= started + kPullAfter && worker_still_hot()) {
      // Behind another process on its CPU: here, while this thread sleeps.
      if (pull_worker_here(__atomic_load_n(&worker_tid, __ATOMIC_ACQUIRE)))
        worker_pulled.store(true, std::memory_order_release);
      break;
    }
    bool shared = spin && caller_shares_worker_cpu();
    if (spin && woke && !running && now >= next_look) {
      // First where it took its last job (free), then, if it has not
      // started within kPickupSpin, where it waits now (a system call).
      const int cpu = now < pickup_until ? worker_cpu.load(std::memory_order_relaxed)
                                         : thread_cpu(__atomic_load_n(&worker_tid, __ATOMIC_ACQUIRE));
      elsewhere = cpu >= 0 && cpu != sched_getcpu();
      next_look = now < pickup_until ? pickup_until : now + kPickupSpin;
    }
    if (spin && (running || (!woke && now < pickup_until) || (woke && elsewhere)) && !shared)
      cpu_relax();
    else if (running && shared)
      sleep_slice(job, kPollSlice);  // woken when done: a yield would take the CPU back from it
    else
      sched_yield();
  }
}

std::optional<Interrupt> Runtime::Impl::serve_until_done(Job& job, CallContext& context,
                                                         Clock::time_point deadline) {
  unsigned long deferred_seen = 0;  // deferred_interrupts() when a break was last sent
  while (job.state.load(std::memory_order_acquire) != JobState::Done) {
    auto serving = Clock::now();
    serve_requests(job, context);
    deliver_output(job, context);
    // The time Emacs spent on the job's own requests (a prompt waiting on
    // the person) does not count against its limit.
    if (deadline != Clock::time_point::max()) deadline += Clock::now() - serving;
    if (!alive()) throw RuntimeError("the Lisp runtime stopped during the evaluation");
    if (job.cancel_requested.load(std::memory_order_relaxed)) return Interrupt::Cancel;
    if (context.poll()) return context.interrupt_is_cancel() ? Interrupt::Cancel : Interrupt::Quit;
    if (Clock::now() >= deadline) return Interrupt::Timeout;
    const bool breaking = send_break(job, deferred_seen);
    // The finalizers' budget spent: stop the one running (again after
    // kInterruptRepeat, should the first interrupt find it in C code).
    if (std::int64_t due = job.finalizer_deadline_ns.load(std::memory_order_acquire);
        due != 0 && steady_ns() >= due &&
        job.finalizer_deadline_ns.compare_exchange_strong(
            due, due + std::chrono::duration_cast<std::chrono::nanoseconds>(kInterruptRepeat).count()))
      request_interrupt(job.id, Interrupt::Finalizer);
    sleep_slice(job, breaking ? kDeferredRetry : kPollSlice);
  }
  return std::nullopt;
}

// The REPL's C-c C-c (Runtime::break_job): sent, and again after
// kInterruptRepeat until Lisp takes it (%BREAK-TAKEN); meanwhile the worker
// is signalled again within a millisecond whenever the gate held the
// interrupt back (it landed in foreign code: a loop that calls
// GET-INTERNAL-REAL-TIME spends most of its time in the C library).  True
// while a break waits to be taken.
bool Runtime::Impl::send_break(Job& job, unsigned long& deferred_seen) {
  std::int64_t due = job.break_due_ns.load(std::memory_order_acquire);
  if (due == 0) return false;
  if (steady_ns() >= due &&
      job.break_due_ns.compare_exchange_strong(
          due, due + std::chrono::duration_cast<std::chrono::nanoseconds>(kInterruptRepeat).count())) {
    deferred_seen = deferred_interrupts();
    request_interrupt(job.id, Interrupt::Break);
  } else {
    signal_again_if_deferred(deferred_seen);
  }
  return true;
}

// The gate held an interrupt back since DEFERRED_SEEN (deferred_interrupts()
// then): it is still queued on the worker, so signal the worker again,
// without a new request.
void Runtime::Impl::signal_again_if_deferred(unsigned long& deferred_seen) {
  if (unsigned long now_deferred = deferred_interrupts(); now_deferred != deferred_seen) {
    deferred_seen = now_deferred;
    pthread_kill(worker_thread, kInterruptSignal);
  }
}

// Never started (queued behind another caller's evaluation): withdraw it.
std::optional<EvalOutcome> Runtime::Impl::withdraw_queued(const std::shared_ptr<Job>& job, Interrupt why) {
  std::lock_guard lock(mutex);
  auto it = std::find(queue.begin(), queue.end(), job);
  if (it == queue.end()) return std::nullopt;
  queue.erase(it);
  queued.fetch_sub(1, std::memory_order_release);
  return EvalOutcome{false, why != Interrupt::Timeout
                                ? std::string("[ERROR] INTERRUPTED\nThe evaluation was withdrawn before it started (") +
                                      (why == Interrupt::Quit ? "quit by the user" : "cancelled") +
                                      "): the Lisp session was busy with another evaluation."
                                : "[ERROR] TIMEOUT\nThe evaluation was withdrawn before it started: the Lisp session "
                                  "was busy with another evaluation for the whole time limit."};
}

// Interrupt, then give the evaluation time to unwind (its cleanups run),
// repeating the interrupt in case it landed between two jobs' checks,
// and within a millisecond when the gate held it back (the worker was in
// foreign code or in one of ECL's interrupt-free C sections).  True when
// the user quit while a timed-out evaluation unwound.
bool Runtime::Impl::interrupt_within_grace(Job& job, Interrupt why, CallContext& context,
                                           Clock::time_point give_up) {
  while (job.state.load(std::memory_order_acquire) != JobState::Done && Clock::now() < give_up) {
    unsigned long deferred = deferred_interrupts();
    request_interrupt(job.id, why);
    auto next = Clock::now() + kInterruptRepeat;
    while (job.state.load(std::memory_order_acquire) != JobState::Done && Clock::now() < next) {
      if (why == Interrupt::Timeout && context.poll()) return true;  // C-g while a timed-out evaluation unwinds
      sleep_slice(job, kDeferredRetry);
      signal_again_if_deferred(deferred);
    }
  }
  return false;
}

std::optional<EvalOutcome> Runtime::Impl::escalate(const std::shared_ptr<Job>& job, Interrupt why,
                                                   CallContext& context) {
  // A C-c C-c not taken yet is dropped: its interrupt, still queued on the
  // worker, finds none waiting (%BREAK-TAKEN) and leaves the unwind be.
  job->break_due_ns.store(0, std::memory_order_release);
  close_requests(*job);
  if (auto withdrawn = withdraw_queued(job, why)) return withdrawn;
  auto give_up = Clock::now() + kInterruptGrace;
  bool quit_in_grace = interrupt_within_grace(*job, why, context, give_up);
  if (quit_in_grace && job->state.load(std::memory_order_acquire) != JobState::Done) {
    std::lock_guard lock(mutex);
    abandoned = job;  // the next call waits out the rest of its grace
    abandon_at = give_up;
    return EvalOutcome{false,
                       "[ERROR] INTERRUPTED\nThe evaluation timed out and was still unwinding when the user quit."};
  }
  if (job->state.load(std::memory_order_acquire) != JobState::Done) {
    // Interrupts disabled for good, or cleanup forms that cancel every
    // unwind (a GO out of an UNWIND-PROTECT cleanup, in a loop).
    std::string text =
        (why == Interrupt::Timeout
             ? "[ERROR] TIMEOUT\nEvaluation did not finish within its time limit, and the evaluation could not "
               "be unwound"
             : "[ERROR] INTERRUPTED\nEvaluation was interrupted, but the evaluation could not be unwound") +
        std::string(" within ") +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kInterruptGrace).count()) +
        " seconds (it may run with interrupts disabled); it was abandoned and the session continues on a new "
        "thread, with every definition kept.";
    replace_worker(*this, text);
    return EvalOutcome{false, text};
  }
  return std::nullopt;
}

void Runtime::Impl::serve_requests(Job& job, CallContext& context) {
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

void Runtime::Impl::close_requests(Job& job) {
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

bool Runtime::Impl::ask_owner(OwnerWork work) {
  {
    std::lock_guard lock(mutex);
    if (!current || current->owner_gone) return false;
    current->requests.push_back(std::move(work));
    // Asked of nobody yet (an inline job, core/idle_reader.hpp): its
    // reader's thread takes it over now.
    if (current == inline_job && idle_reader && inline_claim.load(std::memory_order_acquire) == InlineClaim::Open)
      idle_reader->owner_needed();
  }
  done_cv.notify_all();
  return true;
}

void Runtime::Impl::deliver_output(Job& job, CallContext& context) {
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

void Runtime::Impl::sleep_slice(const Job& job, Clock::duration slice) {
  std::unique_lock lock(mutex);
  ++callers_sleeping;
  done_cv.wait_for(lock, slice, [&] {
    return job.state.load() == JobState::Done || !job.requests.empty() || job.cancel_requested.load() ||
           !alive();
  });
  --callers_sleeping;
}

}  // namespace agentq::ecl
