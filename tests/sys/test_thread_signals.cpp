// sys/thread_signals: threads we start never block their faults' signals,
// whatever their creator blocks.
#include "sys/thread_signals.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

namespace {

sigset_t mask_of_a_thread_started_here(bool with_start_mask) {
  sigset_t seen;
  sigemptyset(&seen);
  auto body = [](void* out) -> void* {
    pthread_sigmask(SIG_SETMASK, nullptr, static_cast<sigset_t*>(out));
    return nullptr;
  };
  pthread_t thread;
  if (with_start_mask) {
    agentq::ThreadStartMask mask;
    EXPECT_EQ(pthread_create(&thread, nullptr, body, &seen), 0);
  } else {
    EXPECT_EQ(pthread_create(&thread, nullptr, body, &seen), 0);
  }
  pthread_join(thread, nullptr);
  return seen;
}

// Runs F on a thread that blocks every signal (as the async runner does).
template <typename F>
void on_a_thread_blocking_everything(F f) {
  struct Call {
    F* f;
  } call{&f};
  pthread_t thread;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  ASSERT_EQ(pthread_create(
                &thread, nullptr,
                [](void* c) -> void* {
                  (*static_cast<Call*>(c)->f)();
                  return nullptr;
                },
                &call),
            0);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_join(thread, nullptr);
}

}  // namespace

TEST(ThreadSignals, AThreadStartedFromOneBlockingEverythingGetsItsFaults) {
  on_a_thread_blocking_everything([] {
    // What a thread inherits without the start mask: the faults blocked.
    sigset_t inherited = mask_of_a_thread_started_here(false);
    EXPECT_TRUE(sigismember(&inherited, SIGSEGV));
    sigset_t started = mask_of_a_thread_started_here(true);
    for (int sig : agentq::kFaultSignals) EXPECT_FALSE(sigismember(&started, sig)) << sig;
    // Asynchronous signals stay blocked, for the host's threads to take.
    EXPECT_TRUE(sigismember(&started, SIGINT));
    EXPECT_TRUE(sigismember(&started, SIGCHLD));
    EXPECT_TRUE(sigismember(&started, SIGIO));
    // And the creator's own mask is given back.
    sigset_t own;
    pthread_sigmask(SIG_SETMASK, nullptr, &own);
    EXPECT_TRUE(sigismember(&own, SIGSEGV));
  });
}

TEST(ThreadSignals, UnblockingTheFaultsLeavesTheRest) {
  on_a_thread_blocking_everything([] {
    agentq::unblock_fault_signals();
    sigset_t own;
    pthread_sigmask(SIG_SETMASK, nullptr, &own);
    for (int sig : agentq::kFaultSignals) EXPECT_FALSE(sigismember(&own, sig)) << sig;
    EXPECT_TRUE(sigismember(&own, SIGTERM));
  });
}
