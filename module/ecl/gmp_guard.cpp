#include "ecl/gmp_guard.hpp"

#include <gmp.h>
#include <pthread.h>
#include <signal.h>

#include "ecl/ecl_api.hpp"

namespace agentq::ecl {

namespace {

void* (*g_alloc)(size_t) = nullptr;
void* (*g_realloc)(void*, size_t, size_t) = nullptr;
void (*g_free)(void*, size_t) = nullptr;
sigset_t g_interrupt_set;

class InterruptsBlocked {
 public:
  InterruptsBlocked() : active_(ecl_process_env_unsafe() != nullptr) {
    if (active_) pthread_sigmask(SIG_BLOCK, &g_interrupt_set, &old_);
  }
  ~InterruptsBlocked() {
    if (active_) pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  InterruptsBlocked(const InterruptsBlocked&) = delete;
  InterruptsBlocked& operator=(const InterruptsBlocked&) = delete;

 private:
  bool active_;
  sigset_t old_;
};

void* guarded_alloc(size_t size) {
  InterruptsBlocked blocked;
  return g_alloc(size);
}

void* guarded_realloc(void* pointer, size_t old_size, size_t new_size) {
  InterruptsBlocked blocked;
  return g_realloc(pointer, old_size, new_size);
}

void guarded_free(void* pointer, size_t size) {
  InterruptsBlocked blocked;
  g_free(pointer, size);
}

}  // namespace

void guard_gmp_allocation(int interrupt_signal) {
  if (g_alloc) return;
  sigemptyset(&g_interrupt_set);
  sigaddset(&g_interrupt_set, interrupt_signal);
  mp_get_memory_functions(&g_alloc, &g_realloc, &g_free);
  mp_set_memory_functions(guarded_alloc, guarded_realloc, guarded_free);
}

}  // namespace agentq::ecl
