#include "core/child_pause.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <dirent.h>
#include <fstream>
#include <mutex>
#include <pthread.h>
#include <set>
#include <string>
#include <thread>

namespace agentq {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> read_children(const std::string& path) {
  std::vector<int> pids;
  std::ifstream in(path);
  int pid;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

// Children of every thread of PID.
std::vector<int> children_of_process(int pid) {
  std::vector<int> pids;
  std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task.c_str());
  if (!dir) return pids;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    for (int child : read_children(task + "/" + entry->d_name + "/children")) pids.push_back(child);
  }
  closedir(dir);
  return pids;
}

// How often the pausing thread looks at the worker while gcc runs, and how
// long a job runs before gcc is stopped for it: a short job (most
// evaluations take microseconds) costs nothing but two atomic stores;
// stopping and continuing gcc for it would cost more CPU than it saves.
constexpr auto kPoll = std::chrono::microseconds(500);
constexpr auto kStopAfter = std::chrono::milliseconds(1);

// State shared with the pausing thread; never destroyed (the thread is
// detached and may outlive static destruction at exit).
struct Pauser {
  std::mutex mutex;
  std::condition_variable cv;
  int compiler_tid = 0;                 // 0: no gcc run
  std::chrono::milliseconds cap{1000};
  bool quit = false;
  bool thread_started = false;
  bool thread_done = false;             // it left, having continued all
  std::set<int> stopped;                // pids we stopped
  unsigned long pauses = 0;
};

// The worker's side, written without a lock (see kStopAfter).
std::atomic<int> g_gcc_tid{0};
std::atomic<bool> g_job_running{false};
std::atomic<std::uint64_t> g_job_seq{0};
std::atomic<std::int64_t> g_job_start{0};       // steady clock, ns
std::atomic<std::uint64_t> g_released_seq{0};   // this job lets gcc run
std::atomic<bool> g_stopped{false};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

Pauser& pauser() {
  static Pauser* p = new Pauser;  // never destroyed: see Pauser
  return *p;
}

// Stops gcc's tree below the compiler thread's children; walks again
// until no new process appears (a child started meanwhile).  Returns the
// pids stopped.
std::set<int> stop_tree(int tid) {
  std::set<int> done;
  for (int round = 0; round < 4; ++round) {
    bool more = false;
    for (int pid : grandchildren_of_thread(getpid(), tid)) {
      if (done.count(pid)) continue;
      if (kill(pid, SIGSTOP) == 0) done.insert(pid);
      more = true;
    }
    if (!more) break;
  }
  return done;
}

void continue_all(const std::set<int>& pids, int tid) {
  for (int pid : pids) kill(pid, SIGCONT);
  // Any that appeared since (none should: their parents were stopped).
  if (tid != 0)
    for (int pid : grandchildren_of_thread(getpid(), tid))
      if (!pids.count(pid)) kill(pid, SIGCONT);
}

// True when gcc should be stopped now: a job runs, for longer than
// kStopAfter and less than the cap, and did not let gcc run.
bool want_stopped(const Pauser& p) {
  if (p.compiler_tid == 0 || !g_job_running.load(std::memory_order_acquire)) return false;
  std::uint64_t seq = g_job_seq.load(std::memory_order_acquire);
  if (g_released_seq.load(std::memory_order_acquire) == seq) return false;
  auto age = std::chrono::nanoseconds(now_ns() - g_job_start.load(std::memory_order_acquire));
  return age >= kStopAfter && age < p.cap;
}

void pauser_main() {
  Pauser& p = pauser();
  std::unique_lock lock(p.mutex);
  for (;;) {
    if (p.quit) break;
    bool want = want_stopped(p);
    bool have = !p.stopped.empty();
    if (want && !have) {
      int tid = p.compiler_tid;
      lock.unlock();
      std::set<int> pids = stop_tree(tid);
      lock.lock();
      if (!pids.empty()) {
        p.stopped = std::move(pids);
        g_stopped.store(true, std::memory_order_release);
        ++p.pauses;
        continue;
      }
      // Nothing to stop (between gcc's steps): look again at the next poll.
    } else if (!want && have) {
      std::set<int> pids;
      pids.swap(p.stopped);
      g_stopped.store(false, std::memory_order_release);
      int tid = p.compiler_tid;
      lock.unlock();
      continue_all(pids, tid);
      lock.lock();
      continue;
    }
    if (p.compiler_tid != 0)
      p.cv.wait_for(lock, kPoll);
    else
      p.cv.wait(lock);
  }
  // Continued under the lock, so that shutdown knows when it is done.
  continue_all(p.stopped, p.compiler_tid);
  p.stopped.clear();
  g_stopped.store(false, std::memory_order_release);
  p.thread_done = true;
  p.cv.notify_all();
}

void start_thread_locked(Pauser& p) {
  if (p.thread_started || p.quit) return;
  p.thread_started = true;
  // No signals here: they belong to Emacs's threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    std::thread(pauser_main).detach();
  } catch (...) {
    p.thread_started = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

std::vector<int> grandchildren_of_thread(int pid, int tid) {
  std::vector<int> result;
  std::vector<int> level;
  for (int child : read_children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/children"))
    for (int grandchild : children_of_process(child)) level.push_back(grandchild);
  std::set<int> seen;
  while (!level.empty()) {
    std::vector<int> next;
    for (int p : level) {
      if (p <= 0 || p == pid || !seen.insert(p).second) continue;
      result.push_back(p);
      for (int c : children_of_process(p)) next.push_back(c);
    }
    level.swap(next);
  }
  return result;
}

void gcc_started(int tid) {
  Pauser& p = pauser();
  // A job running now is past its pause (gcc starts in a job only after
  // the tiering grace, or because the job waits for the compiles).
  g_released_seq.store(g_job_seq.load(std::memory_order_acquire), std::memory_order_release);
  {
    std::lock_guard lock(p.mutex);
    p.compiler_tid = tid;
    start_thread_locked(p);
  }
  g_gcc_tid.store(tid, std::memory_order_release);
  p.cv.notify_all();
}

void gcc_ended() {
  Pauser& p = pauser();
  g_gcc_tid.store(0, std::memory_order_release);
  {
    std::lock_guard lock(p.mutex);
    p.compiler_tid = 0;
  }
  p.cv.notify_all();
}

bool gcc_running() { return g_gcc_tid.load(std::memory_order_relaxed) != 0; }

void gcc_pause_job_started() {
  if (!gcc_running()) return;
  g_job_start.store(now_ns(), std::memory_order_relaxed);
  g_job_seq.fetch_add(1, std::memory_order_acq_rel);
  g_job_running.store(true, std::memory_order_release);
}

void gcc_pause_job_ended() {
  if (!g_job_running.load(std::memory_order_relaxed)) return;
  g_job_running.store(false, std::memory_order_release);
  if (g_stopped.load(std::memory_order_acquire)) {
    Pauser& p = pauser();
    { std::lock_guard lock(p.mutex); }  // not between its look and its wait
    p.cv.notify_all();
  }
}

void gcc_pause_release_job() {
  g_released_seq.store(g_job_seq.load(std::memory_order_acquire), std::memory_order_release);
  Pauser& p = pauser();
  { std::lock_guard lock(p.mutex); }
  p.cv.notify_all();
}

void set_gcc_pause_cap(std::chrono::milliseconds cap) {
  Pauser& p = pauser();
  {
    std::lock_guard lock(p.mutex);
    p.cap = cap;
  }
  p.cv.notify_all();
}

void gcc_pause_shutdown() {
  Pauser& p = pauser();
  bool thread;
  g_job_running.store(false, std::memory_order_release);
  {
    std::lock_guard lock(p.mutex);
    p.quit = true;
    thread = p.thread_started;
  }
  p.cv.notify_all();
  if (!thread) return;
  // The thread continues what it stopped as it leaves: wait for that (a
  // few milliseconds at most).
  std::unique_lock lock(p.mutex);
  p.cv.wait_for(lock, std::chrono::milliseconds(500), [&] { return p.thread_done; });
  if (!p.thread_done) {
    continue_all(p.stopped, p.compiler_tid);
    p.stopped.clear();
  }
}

unsigned long gcc_pauses() {
  Pauser& p = pauser();
  std::lock_guard lock(p.mutex);
  return p.pauses;
}

}  // namespace agentq
