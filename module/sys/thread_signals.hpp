#pragma once

// Signal masks of the threads we start.  A fault's signal (SIGSEGV, SIGBUS,
// ...) goes to the faulting thread itself; if that thread blocks it, Linux
// resets the handler to the default and the process dies, whatever handler
// was installed.  A new thread inherits its creator's mask, so a thread
// started from one that blocks everything (the async runner, which keeps
// Emacs's signals away from itself) would have its stack-overflow guard and
// ECL's fault handling silently turned off.  Hence: the masks are set, not
// added to.

#include <pthread.h>
#include <signal.h>

namespace agentq {

// The signals a thread's own faults raise: never blocked.
inline constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP};

// Every signal but the faults.
inline sigset_t all_but_fault_signals() {
  sigset_t set;
  sigfillset(&set);
  for (int sig : kFaultSignals) sigdelset(&set, sig);
  return set;
}

// Lets the faults through on the calling thread.
inline void unblock_fault_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kFaultSignals) sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

// While alive, the calling thread's mask is every signal but the faults, so
// that threads it starts begin with that mask, whatever it had before;
// restored on destruction.
class ThreadStartMask {
 public:
  ThreadStartMask() {
    sigset_t set = all_but_fault_signals();
    pthread_sigmask(SIG_SETMASK, &set, &old_);
  }
  ~ThreadStartMask() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  ThreadStartMask(const ThreadStartMask&) = delete;
  ThreadStartMask& operator=(const ThreadStartMask&) = delete;

 private:
  sigset_t old_;
};

}  // namespace agentq
