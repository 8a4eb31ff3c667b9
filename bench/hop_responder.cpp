// The one-hop floor for bench/mcp_roundtrip: does no work, like
// bench/null_responder, but in the shape sly-agent-q-mcp has.  A reader
// thread reads the lines and hands each to a second thread with the
// hand-off sly-agent-q-mcp uses to reach its ECL worker (module/ecl/
// runtime_*.cpp: a mutex-guarded queue and an atomic count; the worker polls
// for kWorkerPoll after each job, yielding every kWorkerYieldEvery, then
// sleeps on a condition variable; the caller spins for the answer while
// the worker is known to be on another CPU; each side publishes its CPU and
// the worker moves off the caller's).  Keep the two in step.
//
//   hop_responder there   the second thread writes the fixed answer
//   hop_responder back    the second thread hands the answer back and the
//                         reader writes it (what sly-agent-q-mcp does: the
//                         reading thread waits for ECL, then answers)
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

// As in module/ecl/runtime_state.hpp.
constexpr auto kWorkerYieldEvery = std::chrono::microseconds(100);
constexpr auto kWorkerPoll = std::chrono::milliseconds(2);
constexpr auto kCallerSpin = std::chrono::microseconds(300);
constexpr auto kPickupSpin = std::chrono::microseconds(20);
constexpr auto kPollSlice = std::chrono::milliseconds(5);
constexpr int kNoCpu = -1;

constexpr char kAnswer[] =
    R"({"id":1,"jsonrpc":"2.0","result":{"content":[{"text":"=> 3","type":"text"}],"isError":false}})"
    "\n";

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

bool can_spin() {
  static const bool several = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) > 1;
  }();
  return several;
}

enum class State : int { Queued, Running, Done };
struct Job {
  std::atomic<State> state{State::Queued};
};

bool g_writer_answers = true;  // "there"
std::mutex g_mutex;
std::condition_variable g_job_cv, g_done_cv;
std::deque<std::shared_ptr<Job>> g_queue;
std::atomic<std::size_t> g_queued{0};
bool g_worker_sleeping = false, g_stopping = false;
int g_callers_sleeping = 0;
std::atomic<int> g_caller_cpu{kNoCpu}, g_worker_cpu{kNoCpu};

bool write_answer() { return ::write(1, kAnswer, sizeof kAnswer - 1) == static_cast<ssize_t>(sizeof kAnswer - 1); }

void move_worker_off_cpu(int cpu) {
  static const cpu_set_t allowed = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_ZERO(&set);
    return set;
  }();
  thread_local int avoided = kNoCpu;
  if (cpu == kNoCpu || cpu == avoided || !CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2) return;
  cpu_set_t set = allowed;
  CPU_CLR(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0) avoided = cpu;
}

int publish_worker_cpu() {
  int cpu = sched_getcpu();
  if (g_worker_cpu.load(std::memory_order_relaxed) != cpu) g_worker_cpu.store(cpu, std::memory_order_relaxed);
  return cpu;
}

bool caller_shares_worker_cpu() {
  int cpu = sched_getcpu();
  if (g_caller_cpu.load(std::memory_order_relaxed) != cpu) g_caller_cpu.store(cpu, std::memory_order_relaxed);
  return cpu == g_worker_cpu.load(std::memory_order_relaxed);
}

// runtime_jobs.cpp's next_job, finish_job and wake_callers, without the Lisp.
void worker() {
  for (;;) {
    std::shared_ptr<Job> job;
    auto start = Clock::now();
    auto poll_until = start + kWorkerPoll, next_yield = start + kWorkerYieldEvery;
    const bool spin = can_spin();
    for (auto now = start; g_queued.load(std::memory_order_acquire) == 0 && now < poll_until; now = Clock::now()) {
      cpu_relax();
      int caller = g_caller_cpu.load(std::memory_order_relaxed);
      bool shared = spin && publish_worker_cpu() == caller;
      if (shared) move_worker_off_cpu(caller);
      if (now >= next_yield || !spin || shared) {
        sched_yield();
        next_yield = now + kWorkerYieldEvery;
      }
    }
    {
      std::unique_lock lock(g_mutex);
      if (g_queue.empty() && !g_stopping) {
        g_worker_sleeping = true;
        g_job_cv.wait(lock, [] { return g_stopping || !g_queue.empty(); });
        g_worker_sleeping = false;
      }
      if (g_queue.empty()) return;
      job = std::move(g_queue.front());
      g_queue.pop_front();
      g_queued.fetch_sub(1, std::memory_order_release);
      job->state.store(State::Running, std::memory_order_release);
    }
    if (g_writer_answers) {
      if (!write_answer()) ::_exit(1);
      job->state.store(State::Done, std::memory_order_release);
      continue;
    }
    job->state.store(State::Done, std::memory_order_release);
    bool sleeping;
    {
      std::lock_guard lock(g_mutex);
      sleeping = g_callers_sleeping > 0;
    }
    if (sleeping) g_done_cv.notify_all();
  }
}

void sleep_slice(const Job& job) {
  std::unique_lock lock(g_mutex);
  ++g_callers_sleeping;
  g_done_cv.wait_for(lock, kPollSlice, [&] { return job.state.load() == State::Done; });
  --g_callers_sleeping;
}

// runtime.cpp's Runtime::evaluate (runtime_wait.cpp): queue the job, then (back) wait for it.
void hand_over() {
  auto job = std::make_shared<Job>();
  auto start = Clock::now();
  bool wake;
  {
    std::lock_guard lock(g_mutex);
    g_queue.push_back(job);
    g_queued.fetch_add(1, std::memory_order_release);
    wake = g_worker_sleeping;
  }
  if (wake) g_job_cv.notify_one();
  if (g_writer_answers) return;
  const bool spin = can_spin();
  auto spin_until = start + kCallerSpin, pickup_until = start + kPickupSpin;
  while (job->state.load(std::memory_order_acquire) != State::Done) {
    auto now = Clock::now();
    if (now >= spin_until) break;
    bool running = job->state.load(std::memory_order_relaxed) == State::Running;
    bool shared = spin && caller_shares_worker_cpu();
    if (spin && (running || (!wake && now < pickup_until)) && !shared)
      cpu_relax();
    else if (running && shared)
      sleep_slice(*job);
    else
      sched_yield();
  }
  while (job->state.load(std::memory_order_acquire) != State::Done) sleep_slice(*job);
  if (!write_answer()) ::_exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  g_writer_answers = !(argc > 1 && std::strcmp(argv[1], "back") == 0);
  std::thread second(worker);
  static char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n <= 0) break;
    for (const char* p = buffer; (p = static_cast<const char*>(std::memchr(p, '\n', buffer + n - p))); ++p)
      hand_over();
  }
  {
    std::lock_guard lock(g_mutex);
    g_stopping = true;
  }
  g_job_cv.notify_all();
  second.join();
  return 0;
}
