// Synchronous fault signals shared by Emacs and ECL in one process.
//
// Both install SIGSEGV/SIGBUS handlers: ECL to turn stack overflow on its
// threads into a Lisp condition, Emacs to survive its own stack overflow.
// After cl_boot a small dispatcher owns the signals and forwards each fault
// to ECL's handler on an ECL thread and to the host's handler elsewhere.
// On an armed Lisp thread it runs on the thread's alternate stack and
// first gives stack_guard.hpp the fault: a C-stack overflow there becomes
// a Lisp error instead of the end of the process.
#pragma once

namespace agentq::ecl {

// Call on the worker before cl_boot: records the host's handlers.
void remember_host_signal_handlers();

// Call on the worker after cl_boot: installs the dispatcher where ECL
// replaced a handler.
void route_signals_by_thread();

}  // namespace agentq::ecl
