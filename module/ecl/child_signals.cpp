#include "ecl/child_signals.hpp"

#include <pthread.h>
#include <signal.h>

#include <mutex>

namespace agentq::ecl {

namespace {

// Runs in the child between fork and exec: async-signal-safe calls only.
void unblock_all_signals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace

void unblock_signals_in_children() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, unblock_all_signals); });
}

}  // namespace agentq::ecl
