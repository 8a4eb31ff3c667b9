// core/child_pause: the processes a thread's children started are stopped
// while a job runs, continued at its end, past the cap, and at shutdown.
// Real processes: /bin/sh (standing for the gcc driver) and its sleep
// (standing for cc1).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/child_pause.hpp"
#include "core/process_tree.hpp"

using namespace agentq;
using namespace std::chrono_literals;

namespace {

char state_of(int pid) {
  auto stat = find_process(pid);
  return stat ? stat->state : '?';
}

// Waits until PID's state is (or, with WANTED false, is not) 'T'.
bool wait_stopped(int pid, bool wanted, std::chrono::milliseconds limit = 3000ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if ((state_of(pid) == 'T') == wanted) return true;
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

}  // namespace

// One test: gcc_pause_shutdown ends the pausing for the whole process.
TEST(ChildPause, StopsTheGrandchildrenWhileAJobRunsAndContinuesThem) {
  pid_t driver = fork();
  ASSERT_GE(driver, 0);
  if (driver == 0) {
    execl("/bin/sh", "sh", "-c", "sleep 30; :", static_cast<char*>(nullptr));
    _exit(127);
  }
  const int tid = static_cast<int>(syscall(SYS_gettid));
  std::vector<int> grandchildren;
  for (int i = 0; i < 300 && grandchildren.empty(); ++i) {
    grandchildren = grandchildren_of_thread(getpid(), tid);
    if (grandchildren.empty()) std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(grandchildren.size(), 1u);
  const int sleeper = grandchildren[0];

  // No gcc run: a job changes nothing.
  gcc_pause_job_started();
  std::this_thread::sleep_for(50ms);
  EXPECT_NE(state_of(sleeper), 'T');
  gcc_pause_job_ended();

  set_gcc_pause_cap(10s);
  gcc_started(tid);
  EXPECT_TRUE(gcc_running());
  // A job started while it runs stops the grandchild, never the driver.
  unsigned long pauses = gcc_pauses();
  gcc_pause_job_started();
  EXPECT_TRUE(wait_stopped(sleeper, true));
  EXPECT_NE(state_of(driver), 'T');
  EXPECT_GT(gcc_pauses(), pauses);
  gcc_pause_job_ended();
  EXPECT_TRUE(wait_stopped(sleeper, false));

  // Past the cap the job lets it run.
  set_gcc_pause_cap(300ms);
  gcc_pause_job_started();
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_stopped(sleeper, true));
  EXPECT_TRUE(wait_stopped(sleeper, false));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
  std::this_thread::sleep_for(100ms);
  EXPECT_NE(state_of(sleeper), 'T');  // not stopped again in the same job
  gcc_pause_job_ended();

  // A job that waits for the compiles lets it run.
  set_gcc_pause_cap(10s);
  gcc_pause_job_started();
  EXPECT_TRUE(wait_stopped(sleeper, true));
  gcc_pause_release_job();
  EXPECT_TRUE(wait_stopped(sleeper, false));
  gcc_pause_job_ended();

  // The end of the gcc run continues it.
  gcc_pause_job_started();
  EXPECT_TRUE(wait_stopped(sleeper, true));
  gcc_ended();
  EXPECT_TRUE(wait_stopped(sleeper, false));
  EXPECT_FALSE(gcc_running());
  gcc_pause_job_ended();

  // Shutdown continues it at once.
  gcc_started(tid);
  gcc_pause_job_started();
  EXPECT_TRUE(wait_stopped(sleeper, true));
  gcc_pause_shutdown();
  EXPECT_TRUE(wait_stopped(sleeper, false, 100ms));
  gcc_pause_job_ended();
  gcc_ended();

  kill(sleeper, SIGKILL);
  kill(driver, SIGKILL);
  int status;
  waitpid(driver, &status, 0);
}
