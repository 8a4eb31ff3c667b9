#include "sys/scheduler_slice.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

namespace agentq {

namespace {

// The kernel's struct sched_attr (glibc 2.36 has no wrapper).
struct SchedAttr {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
  std::uint32_t sched_util_min;
  std::uint32_t sched_util_max;
};

}  // namespace

bool request_scheduler_slice(std::chrono::microseconds slice, std::string& why) {
#ifdef SYS_sched_setattr
  SchedAttr attr{};
  attr.size = sizeof attr;
  attr.sched_policy = 0;  // SCHED_OTHER
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, 0);  // kept: a niced server stays niced
  attr.sched_nice = errno == 0 ? nice : 0;
  attr.sched_runtime = static_cast<std::uint64_t>(slice.count()) * 1000u;
  if (::syscall(SYS_sched_setattr, 0, &attr, 0) == 0) return true;
  why = std::strerror(errno);
  return false;
#else
  why = "no sched_setattr on this system";
  return false;
#endif
}

std::chrono::microseconds current_scheduler_slice() {
  std::ifstream in("/proc/thread-self/sched");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("se.slice", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    std::istringstream value(line.substr(colon + 1));
    long long nanoseconds = 0;
    if (value >> nanoseconds) return std::chrono::microseconds(nanoseconds / 1000);
    break;
  }
  return std::chrono::microseconds(0);
}

}  // namespace agentq
