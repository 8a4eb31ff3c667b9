#include "ecl/stack_guard.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>

#include "sys/thread_signals.hpp"
#include "ecl/code_ranges.hpp"
#include "ecl/ecl_api.hpp"
#include "ecl/lisp_function.hpp"

namespace agentq::ecl {

namespace {

#if defined(__x86_64__) && defined(__linux__)
constexpr bool kSupported = true;
#else
constexpr bool kSupported = false;
#endif

// Guard k (0: the highest) covers [lo + (kGuards - k) * kGuardSpacing, +
// kGuardSize) of a stack whose lowest usable address is lo.  The room
// between two guards (448 KiB) is what the handlers of an overflow run in;
// code that may not be unwound at the first guard goes on to the next.
constexpr int kGuards = 4;
constexpr std::uintptr_t kGuardSize = 64 * 1024;
constexpr std::uintptr_t kGuardSpacing = 512 * 1024;
// Below ECL's own limit by at least this much, or the thread is not armed.
constexpr std::uintptr_t kBelowLimit = 256 * 1024;
// Where ECL's check stops the handlers' Lisp code, above the room's floor.
constexpr std::uintptr_t kHandlerMargin = 64 * 1024;
// The alternate signal stack: the dispatcher's own few frames, and ECL's
// handler for a fault past every guard.
constexpr std::size_t kAltStackSize = 64 * 1024;
constexpr int kMaxArmed = 512;

struct ArmedThread {
  std::atomic<int> state{0};  // 0 free, 1 being filled or emptied, 2 armed
  std::uintptr_t lo = 0, hi = 0;
  std::uintptr_t guards[kGuards] = {};
  std::atomic<unsigned> opened{0};  // bit k: guard k is open
  void* altstack = nullptr;         // mapping of kAltStackSize plus a guard page
};

ArmedThread g_armed[kMaxArmed];
std::atomic<unsigned long> g_caught{0};

// Where libecl's code lies: faults there may be unwound.
constexpr std::size_t kMaxEclCode = 8;
CodeRange g_ecl_code[kMaxEclCode];
std::size_t g_ecl_code_count = 0;

struct OverflowObjects {
  cl_object stack_overflow = ECL_NIL;  // EXT:STACK-OVERFLOW
  cl_object c_stack = ECL_NIL;         // EXT:C-STACK
  cl_object size = ECL_NIL;            // :SIZE
  cl_object type = ECL_NIL;            // :TYPE
};
OverflowObjects g_objects;
std::atomic<bool> g_prepared{false};

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

bool in_ecl_code(std::uintptr_t pc) { return range_of(pc, g_ecl_code, g_ecl_code_count) != nullptr; }

// True when SP is THREAD's: in its stack, or just below it (a frame that
// ran past its end).
bool stack_holds(const ArmedThread& thread, std::uintptr_t sp) { return sp + kPage * 16 >= thread.lo && sp < thread.hi; }

// The armed thread whose stack SP lies in (a signal handler's lookup: no
// thread-local storage, no locks).
ArmedThread* armed_by_stack(std::uintptr_t sp) {
  for (ArmedThread& thread : g_armed)
    if (thread.state.load(std::memory_order_acquire) == 2 && stack_holds(thread, sp)) return &thread;
  return nullptr;
}

void close_guards(ArmedThread& thread) {
  for (std::uintptr_t guard : thread.guards) mprotect(reinterpret_cast<void*>(guard), kGuardSize, PROT_NONE);
  thread.opened.store(0, std::memory_order_release);
}

void open_guard(ArmedThread& thread, int k) {
  mprotect(reinterpret_cast<void*>(thread.guards[k]), kGuardSize, PROT_READ | PROT_WRITE);
  thread.opened.fetch_or(1u << k, std::memory_order_acq_rel);
}

void close_guard(ArmedThread& thread, int k) {
  thread.opened.fetch_and(~(1u << k), std::memory_order_acq_rel);
  mprotect(reinterpret_cast<void*>(thread.guards[k]), kGuardSize, PROT_NONE);
}

// The guard of an armed thread ADDRESS lies in, as (thread, index), or a
// null thread.
std::pair<ArmedThread*, int> guard_at(std::uintptr_t address) {
  for (ArmedThread& thread : g_armed) {
    if (thread.state.load(std::memory_order_acquire) != 2 || address < thread.lo || address >= thread.hi) continue;
    for (int k = 0; k < kGuards; ++k)
      if (address >= thread.guards[k] && address < thread.guards[k] + kGuardSize) return {&thread, k};
  }
  return {nullptr, 0};
}

// True when THREAD, its stack pointer at SP, has 8 KiB below it that no
// closed guard covers: room to resume in.
bool room_below(const ArmedThread& thread, std::uintptr_t sp) {
  constexpr std::uintptr_t kRoom = 8 * 1024;
  if (sp < thread.lo + kRoom) return false;
  unsigned opened = thread.opened.load(std::memory_order_acquire);
  for (int k = 0; k < kGuards; ++k)
    if (!(opened & (1u << k)) && sp - kRoom < thread.guards[k] + kGuardSize && sp > thread.guards[k]) return false;
  return true;
}

void open_guards(ArmedThread& thread) {
  for (std::uintptr_t guard : thread.guards)
    mprotect(reinterpret_cast<void*>(guard), kGuardSize, PROT_READ | PROT_WRITE);
}

// The calling thread's entry, disarmed when the thread exits: before
// pthread caches its stack for another thread, which must not find guard
// regions in it.
struct Arming {
  ArmedThread* thread = nullptr;
  ~Arming() {
    if (!thread) return;
    thread->state.store(1, std::memory_order_release);
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
    open_guards(*thread);
    munmap(thread->altstack, kAltStackSize + kPage);
    thread->altstack = nullptr;
    thread->state.store(0, std::memory_order_release);
    thread = nullptr;
  }
};
thread_local Arming t_arming;

#if defined(__x86_64__) && defined(__linux__)
// Makes the interrupted thread resume in FUNCTION(A0, A1, A2) on its own
// stack, below the interrupted frame (past its red zone), as if called
// there; FUNCTION never returns.  COPY (SIZE bytes) is put on that stack
// first and passed as A1.
void resume_in(ucontext_t* context, void* function, std::uintptr_t a0, std::uintptr_t a1, std::uintptr_t a2,
               const void* copy = nullptr, std::size_t size = 0) {
  greg_t* registers = context->uc_mcontext.gregs;
  std::uintptr_t sp = static_cast<std::uintptr_t>(registers[REG_RSP]) - 256;
  if (copy) {
    sp = (sp - size) & ~std::uintptr_t{15};
    std::memcpy(reinterpret_cast<void*>(sp), copy, size);
    a1 = sp;
  }
  sp &= ~std::uintptr_t{15};
  sp -= sizeof(std::uintptr_t);  // the return address of a call: none
  *reinterpret_cast<std::uintptr_t*>(sp) = 0;
  registers[REG_RSP] = static_cast<greg_t>(sp);
  registers[REG_RIP] = static_cast<greg_t>(reinterpret_cast<std::uintptr_t>(function));
  registers[REG_RDI] = static_cast<greg_t>(a0);
  registers[REG_RSI] = static_cast<greg_t>(a1);
  registers[REG_RDX] = static_cast<greg_t>(a2);
}
#endif

// Runs on the overflowing thread, below guard GUARD (opened: the
// collector scans the stack from here up, through it), in the room down
// to FLOOR: signals the overflow as ECL does for Lisp code's, with ECL's
// check set just above the floor so that the handlers' own Lisp code
// gets a STACK-OVERFLOW of its own rather than running on into the next
// guard.  The handlers unwind (the job's FAIL, or evaluated code's own
// HANDLER-CASE), and on the way out, still below the guard, the limit is
// given back and the guard closed again: every frame left to unwind to
// lies above it (nothing ran inside a closed guard), so it is armed for
// the next overflow even when evaluated code goes on after catching one.
[[noreturn]] void signal_overflow(ArmedThread* thread, int guard, std::uintptr_t floor) {
  cl_env_ptr env = ecl_process_env();
  char* const limit = env->cs_limit;
  const cl_index size = env->cs_size;
  const auto lowered_size = static_cast<cl_index>(env->cs_org - reinterpret_cast<char*>(floor));
  env->cs_size = lowered_size;
  env->cs_limit = reinterpret_cast<char*>(floor + kHandlerMargin);
  g_caught.fetch_add(1, std::memory_order_relaxed);
  ECL_UNWIND_PROTECT_BEGIN(env) {
    cl_error(5, g_objects.stack_overflow, g_objects.size, ecl_make_unsigned_integer(size), g_objects.type,
             g_objects.c_stack);
  }
  ECL_UNWIND_PROTECT_EXIT {
    // Unless a handler's EXT:SET-LIMIT set its own.
    if (env->cs_size == lowered_size) {
      env->cs_size = size;
      env->cs_limit = limit;
    }
    close_guard(*thread, guard);
  }
  ECL_UNWIND_PROTECT_END;
  ecl_internal_error("the C-stack overflow error returned");
  __builtin_unreachable();
}

// Runs ECL's fault handler on the faulting thread's own stack, as it ran
// before the thread had an alternate one.  It signals the fault as a Lisp
// condition and unwinds; in one of ECL's interrupt-free sections it queues
// it and returns, and seeing the same fault again it unwinds to the
// outermost frame (what the faulting instruction, repeated, would make it
// do).
[[noreturn]] void run_ecl_fault_handler(int sig, siginfo_t* info, void (*handler)(int, siginfo_t*, void*)) {
  handler(sig, info, nullptr);
  handler(sig, info, nullptr);
  ecl_internal_error("ECL's fault handler returned twice");
  __builtin_unreachable();
}

int collect_ecl_code(struct dl_phdr_info* info, std::size_t, void* data) {
  if (!object_contains(info, reinterpret_cast<std::uintptr_t>(data))) return 0;
  add_code_ranges(info, g_ecl_code, g_ecl_code_count, kMaxEclCode);
  return 1;
}

cl_object lisp_arm_stack_guard() { return one_value(arm_stack_guard() ? ECL_T : ECL_NIL); }

}  // namespace

void prepare_stack_guard() {
  if (!kSupported || g_prepared.load()) return;
  for (cl_object* root : {&g_objects.stack_overflow, &g_objects.c_stack, &g_objects.size, &g_objects.type})
    ecl_register_root(root);
  g_objects.stack_overflow = ecl_make_symbol("STACK-OVERFLOW", "EXT");
  g_objects.c_stack = ecl_make_symbol("C-STACK", "EXT");
  g_objects.size = ecl_make_keyword("SIZE");
  g_objects.type = ecl_make_keyword("TYPE");
  // The code of the library cl_cons is in: libecl.
  dl_iterate_phdr(collect_ecl_code, reinterpret_cast<void*>(&cl_cons));
  g_prepared.store(true);
}

bool arm_stack_guard() {
  if (!kSupported || !g_prepared.load()) return false;
  // A thread that blocks its faults' signals dies at the first guard,
  // whoever started it with that mask.
  unblock_fault_signals();
  if (t_arming.thread) return true;
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return false;
  void* base = nullptr;
  std::size_t size = 0;
  int rc = pthread_attr_getstack(&attributes, &base, &size);
  pthread_attr_destroy(&attributes);
  if (rc != 0) return false;
  auto lo = (reinterpret_cast<std::uintptr_t>(base) + kPage - 1) & ~(kPage - 1);
  auto hi = reinterpret_cast<std::uintptr_t>(base) + size;
  // The guards lie well below ECL's limit, where only C code that does
  // not check its stack goes.
  cl_env_ptr env = ecl_process_env();
  std::uintptr_t top_guard = lo + kGuards * kGuardSpacing;
  auto limit = reinterpret_cast<std::uintptr_t>(env->cs_limit);
  if (top_guard + kGuardSize + kBelowLimit > limit || limit > hi) return false;
  void* altstack = mmap(nullptr, kAltStackSize + kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                        -1, 0);
  if (altstack == MAP_FAILED) return false;
  mprotect(altstack, kPage, PROT_NONE);  // its own overflow faults instead of writing below it
  ArmedThread* slot = nullptr;
  for (ArmedThread& candidate : g_armed) {
    int free = 0;
    if (candidate.state.compare_exchange_strong(free, 1)) {
      slot = &candidate;
      break;
    }
  }
  if (!slot) {
    munmap(altstack, kAltStackSize + kPage);
    return false;
  }
  slot->lo = lo;
  slot->hi = hi;
  for (int k = 0; k < kGuards; ++k) slot->guards[k] = lo + static_cast<std::uintptr_t>(kGuards - k) * kGuardSpacing;
  slot->altstack = altstack;
  stack_t stack{};
  stack.ss_sp = static_cast<char*>(altstack) + kPage;
  stack.ss_size = kAltStackSize;
  if (sigaltstack(&stack, nullptr) != 0) {
    munmap(altstack, kAltStackSize + kPage);
    slot->state.store(0);
    return false;
  }
  close_guards(*slot);
  t_arming.thread = slot;
  slot->state.store(2, std::memory_order_release);
  return true;
}

void rearm_stack_guard() {
  ArmedThread* thread = t_arming.thread;
  if (thread && thread->opened.load(std::memory_order_acquire) != 0) close_guards(*thread);
}

bool open_foreign_guard(siginfo_t* info, void* context) {
#if defined(__x86_64__) && defined(__linux__)
  if (info->si_signo != SIGSEGV) return false;
  auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  auto [thread, k] = guard_at(address);
  if (!thread) return false;
  auto sp = static_cast<std::uintptr_t>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP]);
  if (stack_holds(*thread, sp)) return false;  // its own: an overflow
  open_guard(*thread, k);
  return true;
#else
  (void)info;
  (void)context;
  return false;
#endif
}

bool handle_stack_fault(int sig, siginfo_t* info, void* context, void (*ecl_handler)(int, siginfo_t*, void*)) {
#if defined(__x86_64__) && defined(__linux__)
  auto* uc = static_cast<ucontext_t*>(context);
  greg_t* registers = uc->uc_mcontext.gregs;
  auto sp = static_cast<std::uintptr_t>(registers[REG_RSP]);
  ArmedThread* thread = armed_by_stack(sp);
  if (!thread) return false;
  // Only on the alternate stack: on its own stack the thread can run
  // ECL's handler as it is.
  stack_t current{};
  if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_ONSTACK)) return false;
  auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (sig == SIGSEGV) {
    for (int k = 0; k < kGuards; ++k) {
      std::uintptr_t guard = thread->guards[k];
      if (address < guard || address >= guard + kGuardSize) continue;
      open_guard(*thread, k);
      const bool last = k + 1 == kGuards;
      cl_env_ptr env = ecl_process_env_unsafe();
      const bool unwindable = env && env->disable_interrupts == 0 &&
                              in_ecl_code(static_cast<std::uintptr_t>(registers[REG_RIP]));
      // Not here: the code goes on, into the room below, which the next
      // guard ends.  At the last guard there is no next: unwound anyway.
      if (!unwindable && !last) return true;
      std::uintptr_t floor = last ? thread->lo : thread->guards[k + 1] + kGuardSize;
      // Resumed below the guard (the faulting frame, abandoned, may reach into it).
      registers[REG_RSP] = static_cast<greg_t>(std::min(sp, guard));
      resume_in(uc, reinterpret_cast<void*>(&signal_overflow), reinterpret_cast<std::uintptr_t>(thread),
                static_cast<std::uintptr_t>(k), floor);
      return true;
    }
    // Past every guard (or in the thread's own guard page): no room to
    // resume in.  ECL's handler, on the alternate stack.
    if (address + kGuardSpacing >= thread->lo && address < thread->guards[kGuards - 1]) return false;
  }
  if (!room_below(*thread, sp)) return false;  // as it came
  resume_in(uc, reinterpret_cast<void*>(&run_ecl_fault_handler), static_cast<std::uintptr_t>(sig), 0,
            reinterpret_cast<std::uintptr_t>(ecl_handler), info, sizeof *info);
  return true;
#else
  (void)sig;
  (void)info;
  (void)context;
  (void)ecl_handler;
  return false;
#endif
}

unsigned long stack_overflows_caught() { return g_caught.load(std::memory_order_relaxed); }

void define_stack_guard_functions() { define_lisp_function("%ARM-STACK-GUARD", lisp_arm_stack_guard); }

}  // namespace agentq::ecl
