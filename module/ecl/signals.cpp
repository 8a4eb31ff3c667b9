#include "ecl/signals.hpp"

#include <signal.h>

#include <cstring>

#include "ecl/ecl_api.hpp"
#include "ecl/stack_guard.hpp"

namespace agentq::ecl {

namespace {

constexpr int kRoutedSignals[] = {SIGSEGV, SIGBUS};
struct sigaction g_host[NSIG];
struct sigaction g_ecl[NSIG];

void* handler_of(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(action.sa_sigaction)
                                        : reinterpret_cast<void*>(action.sa_handler);
}

void forward(const struct sigaction& action, int sig, siginfo_t* info, void* context) {
  if (action.sa_flags & SA_SIGINFO) {
    action.sa_sigaction(sig, info, context);
  } else if (action.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);
    raise(sig);
  } else if (action.sa_handler != SIG_IGN) {
    action.sa_handler(sig);
  }
}

void dispatch(int sig, siginfo_t* info, void* context) {
  if (open_foreign_guard(info, context)) return;
  // ecl_process_env_unsafe() is non-null exactly on threads ECL knows.
  if (!ecl_process_env_unsafe()) return forward(g_host[sig], sig, info, context);
  // On an armed Lisp thread this runs on its alternate stack: a C-stack
  // overflow becomes a Lisp error, other faults go to ECL's handler on the
  // thread's own stack (stack_guard.hpp).
  const struct sigaction& ecl = g_ecl[sig];
  if ((ecl.sa_flags & SA_SIGINFO) && handle_stack_fault(sig, info, context, ecl.sa_sigaction)) return;
  forward(ecl, sig, info, context);
}

}  // namespace

void remember_host_signal_handlers() {
  for (int sig : kRoutedSignals) sigaction(sig, nullptr, &g_host[sig]);
}

void route_signals_by_thread() {
  for (int sig : kRoutedSignals) {
    sigaction(sig, nullptr, &g_ecl[sig]);
    if (handler_of(g_ecl[sig]) == handler_of(g_host[sig])) continue;  // ECL left it alone
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = dispatch;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigfillset(&action.sa_mask);
    sigdelset(&action.sa_mask, sig);
    sigaction(sig, &action, nullptr);
  }
}

}  // namespace agentq::ecl
