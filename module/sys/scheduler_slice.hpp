// A short scheduler slice for a process that mostly waits and answers.
//
// On Linux 6.12 and later (EEVDF), a SCHED_OTHER thread may ask for a
// shorter slice (sched_setattr's sched_runtime, no privilege needed): when
// it wakes beside a thread that uses its CPU, it runs sooner, rather than
// after the other's whole slice.  The MCP binary asks for one before it
// starts any thread (threads inherit it).  Its nice value is kept.
#pragma once

#include <chrono>
#include <string>

namespace agentq {

// Asks for SLICE for the calling thread and the threads it starts later.
// False with WHY when the kernel refused (older kernels ignore the request
// or refuse it; nothing changes then).
bool request_scheduler_slice(std::chrono::microseconds slice, std::string& why);

// The calling thread's slice now, from /proc (0 when unknown).
std::chrono::microseconds current_scheduler_slice();

}  // namespace agentq
