// Keeping the background native compile's gcc off the CPUs while the
// worker runs a job (tiering): the compiler thread's gcc would otherwise
// take one CPU of two, and the evaluation shares the other with Emacs.
//
// While gcc runs (gcc_started .. gcc_ended, called by the compiler thread
// around each gcc run), a job that has run for 1 ms stops (SIGSTOP) the
// processes gcc started (cc1, as, collect2, ld: the descendants of the
// compiler thread's children, found in /proc/<pid>/task/<tid>/children);
// the job's end, or its running longer than the cap, continues them
// (SIGCONT).  The compiler thread's own children (the gcc driver) are never
// stopped: ECL waits for them, and a gcc driver only waits for its own
// children anyway.  Nothing is sent to a process group: gcc shares Emacs's.
//
// A C++ thread of its own does the /proc walk and the signals; it looks at
// the worker every 0.5 ms while gcc runs (never otherwise).  So a job's
// start and end cost the worker one atomic load when no gcc runs, and two
// atomic stores when one does; a job shorter than 1 ms (most evaluations)
// never stops gcc: stopping and continuing it would cost more CPU than the
// job.  Linux only (elsewhere /proc lists no children: nothing stops).
#pragma once

#include <chrono>
#include <vector>

namespace agentq {

// The compiler thread (Linux thread id TID) starts a gcc run; a job that
// runs now is past its pause (gcc starts in a job only after the tiering
// grace, or because the job waits for the compiles).
void gcc_started(int tid);
// The gcc run ended: whatever is stopped is continued.
void gcc_ended();
// True while a gcc run is going on (one relaxed atomic load).
bool gcc_running();
// The worker took a job / finished it (or it was abandoned).  Lock-free:
// one atomic load when no gcc runs.
void gcc_pause_job_started();
void gcc_pause_job_ended();
// The running job lets gcc run until it ends (it waits for the compiles).
void gcc_pause_release_job();
// At most this long into one job gcc stays stopped (then it continues, at
// its nice 10, so a long job still gets the native code).
void set_gcc_pause_cap(std::chrono::milliseconds cap);
// Continue everything and stop the pausing thread (runtime shutdown).
void gcc_pause_shutdown();
// How many times gcc's processes were stopped since boot (for tests).
unsigned long gcc_pauses();

// The descendants of the children of thread TID of process PID (not the
// children themselves), parents first, from /proc.
std::vector<int> grandchildren_of_thread(int pid, int tid);

}  // namespace agentq
