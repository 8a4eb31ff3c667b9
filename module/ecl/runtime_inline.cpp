// The worker's idle reader (core/idle_reader.hpp): while it has no job, the
// worker waits on the reader's descriptor as well, and runs the calls it
// reads there itself; an evaluation made from there runs on the worker
// with nobody waiting (run_inline), unless the reader's own thread claims
// it (claim_inline_job) and waits for it as its owner (adopt_inline).
// Part of the runtime (runtime_state.hpp).

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "ecl/runtime_state.hpp"

namespace agentq::ecl {

constinit thread_local bool t_idle_reading = false;
// The reader generation this thread reads for (Impl::reader_generation).
thread_local std::uint64_t t_reader_generation = 0;

namespace {

// How long an evaluation the worker runs for its reader goes on with
// nobody waiting before the reader's thread takes it over (its time limit,
// cancellations, output): a usual call is long over by then.
constexpr auto kInlineTakeOver = std::chrono::milliseconds(2);

// Kept free of C++ objects with destructors: Lisp may unwind through it.
// False when a non-local exit escaped the job (it should not).
bool run_inline_lisp(cl_env_ptr env) {
  bool returned = false;
  ECL_CATCH_ALL_BEGIN(env) {
    cl_funcall(1, g_roots.run_inline_job);
    returned = true;
  }
  ECL_CATCH_ALL_END;
  return returned;
}

// A worker retired while it ran an inline job, which has now returned
// after its reader was replaced (the server stopped): the reader's frames
// below may be gone, so this thread never returns into them.
[[noreturn]] void park_retired_thread() {
  (t_holds_error ? g_impl->held_threads : g_impl->retired_running).fetch_sub(1);
  for (;;) pause();
}

}  // namespace

void Runtime::Impl::wake_worker() {
  job_cv.notify_all();
  if (worker_polls_fd.load(std::memory_order_acquire)) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(wake_fd, &one, sizeof one);
  }
}

bool Runtime::Impl::wait_for_idle_input(std::unique_lock<std::mutex>& lock, int fd) {
  free_worker_from_caller();
  worker_falls_asleep();
  worker_polls_fd.store(true, std::memory_order_release);
  lock.unlock();
  pollfd fds[2] = {{wake_fd, POLLIN, 0}, {fd, POLLIN, 0}};
  int ready = ::poll(fds, 2, -1);
  if (ready > 0 && (fds[0].revents & POLLIN)) {
    std::uint64_t count;
    [[maybe_unused]] ssize_t got = ::read(wake_fd, &count, sizeof count);
  }
  lock.lock();
  worker_polls_fd.store(false, std::memory_order_release);
  worker_sleeping = false;
  return ready > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

void Runtime::Impl::run_idle_reader() {
  IdleReader* reader;
  {
    std::lock_guard lock(mutex);
    reader = idle_reader;
    if (!reader || !current_worker()) return;
    ++idle_readers;
    t_reader_generation = reader_generation;
  }
  t_idle_reading = true;
  try {
    reader->read();
  } catch (...) {
    // The reader answers its own failures; the worker goes on.
  }
  t_idle_reading = false;
  {
    std::lock_guard lock(mutex);
    --idle_readers;
  }
  idle_cv.notify_all();
}

EvalOutcome Runtime::Impl::run_inline(EvalRequest request, CallContext& context) {
  auto job = make_job(std::move(request));
  job->started = Clock::now();
  IdleReader* reader;
  {
    std::lock_guard lock(mutex);
    // An idle worker ran whatever a quit left unwinding to its end.
    if (abandoned && abandoned->state.load() == JobState::Done) abandoned.reset();
    job->state.store(JobState::Running, std::memory_order_release);
    current = job;
    current_id.store(job->id, std::memory_order_release);
    inline_job = job;
    inline_running = true;
    inline_claim.store(InlineClaim::Open, std::memory_order_release);
    reader = idle_reader;
  }
  context.job_queued(job->id);
  const auto timeout = job->request.timeout;
  const auto take_over = timeout.count() > 0 ? std::min<Clock::duration>(kInlineTakeOver, timeout) : kInlineTakeOver;
  if (reader) reader->job_started(job->started + take_over);
  t_idle_reading = false;  // inside the job, calls are as anywhere on the worker
  const bool returned = run_inline_lisp(ecl_process_env());
  t_idle_reading = true;
  {
    // Retired meanwhile (abandoned, or it held an error and the error's
    // restart was chosen since): the owner that took its call over has
    // answered it, and the inline state is the next calls' now.  It goes
    // back through its reader, which finds the call no longer its own,
    // and out of the worker loop, unless its reader is gone.
    std::unique_lock lock(mutex);
    if (current_worker()) {
      inline_running = false;
    } else {
      --retired_inline;
      if (reader_generation != t_reader_generation) {
        --idle_readers;
        lock.unlock();
        idle_cv.notify_all();
        park_retired_thread();
      }
      context.mark_superseded();
      return EvalOutcome{false, "[ERROR] INTERRUPTED\nThis evaluation's thread was retired; its call was answered."};
    }
  }
  if (!returned) answer_escaped_job(*this, ecl_process_env());
  InlineClaim open = InlineClaim::Open;
  if (!inline_claim.compare_exchange_strong(open, InlineClaim::Worker, std::memory_order_acq_rel)) {
    context.mark_superseded();
    return EvalOutcome{false, "[ERROR] INTERRUPTED\nThe call's owner took this evaluation over; it answers it."};
  }
  return finished_outcome(*job);
}

EvalOutcome Runtime::Impl::adopt_inline(CallContext& context) {
  std::shared_ptr<Job> job;
  {
    std::lock_guard lock(mutex);
    job = inline_job;
  }
  if (!job || inline_claim.load(std::memory_order_acquire) != InlineClaim::Owner)
    return EvalOutcome{false, "[ERROR] INTERNAL\nNo evaluation of the worker's was taken over for this call."};
  context.job_queued(job->id);
  const auto deadline = deadline_of(*job, job->started);
  OwnerWait owner_wait(*this, *job, context);
  if (std::optional<Interrupt> why = serve_until_done(*job, context, deadline))
    if (std::optional<EvalOutcome> ended = escalate(job, *why, context)) return std::move(*ended);
  return finished_outcome(*job);
}

void Runtime::set_idle_reader(IdleReader* reader) {
  Impl& impl = *impl_;
  std::unique_lock lock(impl.mutex);
  if (impl.wake_fd < 0) impl.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  impl.idle_reader = impl.wake_fd >= 0 ? reader : nullptr;
  ++impl.reader_generation;
  auto reading_done = [&] { return impl.idle_readers == impl.retired_inline; };
  // The worker still runs an inline job nobody waits for (one a quit left
  // unwinding, abandoned): it is stopped, and if it will not unwind within
  // the grace, retired, as the next call would have (settle_abandoned).
  if (!reading_done() && impl.inline_running && impl.current) {
    const std::uint64_t running = impl.current->id;
    const auto give_up = Clock::now() + kInterruptGrace;
    lock.unlock();
    impl.request_interrupt(running, Interrupt::Cancel);
    lock.lock();
    if (!impl.idle_cv.wait_until(lock, give_up, reading_done) && impl.inline_running) {
      lock.unlock();
      replace_worker(impl, "");
      lock.lock();
    }
  }
  impl.idle_cv.wait(lock, reading_done);
  lock.unlock();
  impl.wake_worker();  // to wait on the new descriptor, or none
}

bool Runtime::worker_idle() const {
  Impl& impl = *impl_;
  std::lock_guard lock(impl.mutex);
  return !impl.current && impl.queue.empty() &&
         !(impl.abandoned && impl.abandoned->state.load() != JobState::Done) && impl.alive();
}

bool Runtime::on_worker_thread() const { return current_worker(); }

bool Runtime::claim_inline_job() {
  InlineClaim open = InlineClaim::Open;
  return impl_->inline_claim.compare_exchange_strong(open, InlineClaim::Owner, std::memory_order_acq_rel);
}

void Runtime::idle_reader_changed() {
  {
    // The worker tests the reader's descriptor under this lock before it
    // waits: taking it here means it either saw the new one or waits
    // already, and is woken.
    std::lock_guard lock(impl_->mutex);
  }
  impl_->wake_worker();
}

}  // namespace agentq::ecl
