#include "sys/thread_cpu.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

pid_t own_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Holds the calling thread to CPU, giving its former mask back on scope exit.
struct HeldTo {
  cpu_set_t before{};
  bool held = false;
  explicit HeldTo(int cpu) {
    if (sched_getaffinity(0, sizeof before, &before) != 0 || !CPU_ISSET(cpu, &before)) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    held = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~HeldTo() {
    if (held) sched_setaffinity(0, sizeof before, &before);
  }
};

TEST(ThreadCpu, TheCallingThreadIsWhereItRuns) {
  HeldTo held(sched_getcpu());
  ASSERT_TRUE(held.held);
  EXPECT_EQ(agentq::thread_cpu(own_tid()), sched_getcpu());
}

TEST(ThreadCpu, ASleepingThreadIsWhereItLastRan) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    std::atomic<pid_t> tid{0};
    std::atomic<bool> done{false};
    std::thread other([&] {
      HeldTo held(cpu);
      tid = own_tid();
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (tid == 0) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // asleep, after running on CPU
    EXPECT_EQ(agentq::thread_cpu(tid), cpu);
    done = true;
    other.join();
  }
}

TEST(ThreadCpu, ANameWithSpacesAndParenthesesIsSkipped) {
  char before[16] = {};
  ASSERT_EQ(prctl(PR_GET_NAME, before), 0);
  ASSERT_EQ(prctl(PR_SET_NAME, "a) b (c) 7 8"), 0);
  HeldTo held(sched_getcpu());
  const int cpu = agentq::thread_cpu(own_tid());
  const int here = sched_getcpu();
  prctl(PR_SET_NAME, before);
  EXPECT_EQ(cpu, here);
}

TEST(ThreadCpu, NoSuchThreadIsMinusOne) {
  EXPECT_EQ(agentq::thread_cpu(0), -1);
  EXPECT_EQ(agentq::thread_cpu(-5), -1);
  // A thread that has ended: its task entry goes (the kernel may take a
  // moment after the join to release it).
  pid_t gone = 0;
  std::thread([&] { gone = own_tid(); }).join();
  int found = 0;
  for (int tries = 0; tries < 1000 && (found = agentq::thread_cpu(gone)) != -1; ++tries)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(found, -1);
  // And the descriptor kept for it is not reused for the next one.
  EXPECT_GE(agentq::thread_cpu(own_tid()), 0);
}

}  // namespace
