// Where another thread of this process runs, or waits to run: Linux's
// "processor" field of /proc/self/task/TID/stat.  For a caller deciding
// whether yielding its CPU could help a thread it has just woken.
#pragma once

#include <sys/types.h>

namespace agentq {

// The CPU thread TID (of this process) last ran on, or is queued on when
// runnable; -1 when it cannot be told (no such thread, no /proc).  One
// pread of a descriptor this thread keeps open: a few microseconds.
int thread_cpu(pid_t tid);

}  // namespace agentq
