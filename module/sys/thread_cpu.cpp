#include "sys/thread_cpu.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace agentq {

int thread_cpu(pid_t tid) {
  // This thread's descriptor of the last TID asked about, kept open.
  thread_local int fd = -1;
  thread_local pid_t open_tid = 0;
  if (tid <= 0) return -1;
  if (tid != open_tid) {
    if (fd >= 0) ::close(fd);
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
    open_tid = tid;
  }
  if (fd < 0) return -1;
  char text[1024];
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return -1;
  text[n] = '\0';
  // The name, field 2, is in parentheses and may hold spaces and
  // parentheses itself: count from the last ')'.  Field 3 follows it.
  const char* after_name = std::strrchr(text, ')');
  if (!after_name) return -1;
  int field = 2;
  for (const char* p = after_name + 1; *p; ++p)
    if (*p == ' ' && ++field == 39) return std::atoi(p + 1);
  return -1;
}

}  // namespace agentq
