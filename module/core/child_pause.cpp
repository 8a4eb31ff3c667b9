#include "core/child_pause.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

// State shared with the pausing thread; never destroyed (the thread is
// detached and may outlive static destruction at exit).
struct Pauser {
  std::mutex mutex;
  std::condition_variable cv;
  int compiler_tid = 0;                 // 0: no gcc run
  bool job_running = false;
  bool released = false;                // the running job let gcc run
  Clock::time_point job_start;
  std::chrono::milliseconds cap{1000};
  bool quit = false;
  bool thread_started = false;
  bool thread_done = false;             // it left, having continued all
  std::set<int> stopped;                // pids we stopped
  unsigned long pauses = 0;
};

std::atomic<int> g_gcc_tid{0};
std::atomic<bool> g_job_noted{false};

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

void pauser_main() {
  Pauser& p = pauser();
  std::unique_lock lock(p.mutex);
  for (;;) {
    if (p.quit) break;
    auto now = Clock::now();
    auto deadline = p.job_start + p.cap;
    bool want = p.compiler_tid != 0 && p.job_running && !p.released && now < deadline;
    bool have = !p.stopped.empty();
    if (want && !have) {
      int tid = p.compiler_tid;
      lock.unlock();
      std::set<int> pids = stop_tree(tid);
      lock.lock();
      p.stopped = std::move(pids);
      if (!p.stopped.empty()) ++p.pauses;
      else {
        // Nothing to stop (between gcc's steps): look again shortly.
        p.cv.wait_for(lock, std::chrono::milliseconds(2));
      }
      continue;
    }
    if (!want && have) {
      std::set<int> pids;
      pids.swap(p.stopped);
      int tid = p.compiler_tid;
      lock.unlock();
      continue_all(pids, tid);
      lock.lock();
      continue;
    }
    if (want)
      p.cv.wait_until(lock, deadline);
    else
      p.cv.wait(lock);
  }
  // Continued under the lock, so that shutdown knows when it is done.
  continue_all(p.stopped, p.compiler_tid);
  p.stopped.clear();
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
  {
    std::lock_guard lock(p.mutex);
    p.compiler_tid = tid;
    p.released = true;  // a job running now is past its pause
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
  Pauser& p = pauser();
  {
    std::lock_guard lock(p.mutex);
    p.job_running = true;
    p.released = false;
    p.job_start = Clock::now();
  }
  g_job_noted.store(true, std::memory_order_relaxed);
  p.cv.notify_all();
}

void gcc_pause_job_ended() {
  if (!g_job_noted.load(std::memory_order_relaxed)) return;
  g_job_noted.store(false, std::memory_order_relaxed);
  Pauser& p = pauser();
  {
    std::lock_guard lock(p.mutex);
    p.job_running = false;
  }
  p.cv.notify_all();
}

void gcc_pause_release_job() {
  Pauser& p = pauser();
  {
    std::lock_guard lock(p.mutex);
    p.released = true;
  }
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
  {
    std::lock_guard lock(p.mutex);
    p.quit = true;
    p.job_running = false;
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
