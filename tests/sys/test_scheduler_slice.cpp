// sys/scheduler_slice: the slice asked for is the one the kernel keeps,
// for this thread and the threads it starts; the nice value stays.
#include "sys/scheduler_slice.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>

namespace {

// Linux 6.12 brought slices a thread may ask for.
bool kernel_takes_slices() {
  utsname name{};
  if (::uname(&name) != 0) return false;
  int major = 0, minor = 0;
  if (std::sscanf(name.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 6 || (major == 6 && minor >= 12);
}

}  // namespace

TEST(SchedulerSlice, TheThreadAndThoseItStartsKeepTheSliceAndTheNiceValue) {
  if (!kernel_takes_slices() || agentq::current_scheduler_slice().count() == 0)
    GTEST_SKIP() << "this kernel has no slice a thread may ask for";
  // On a thread of its own, so the test's main thread keeps its slice.
  std::thread([] {
    ASSERT_EQ(::setpriority(PRIO_PROCESS, 0, 3), 0);
    std::string why;
    ASSERT_TRUE(agentq::request_scheduler_slice(std::chrono::microseconds(150), why)) << why;
    EXPECT_EQ(agentq::current_scheduler_slice().count(), 150);
    EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), 3);
    auto started = std::async(std::launch::async, [] { return agentq::current_scheduler_slice().count(); });
    EXPECT_EQ(started.get(), 150);
  }).join();
}
