#include "ecl/interrupt_gate.hpp"

#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "ecl/code_ranges.hpp"
#include "ecl/ecl_api.hpp"

namespace agentq::ecl {

namespace {

// Written once before the gate is installed, read-only afterwards.
constexpr std::size_t kMaxRanges = 512;
CodeRange g_foreign[kMaxRanges];
std::size_t g_foreign_count = 0;
struct sigaction g_ecl_action;
bool g_installed = false;
std::atomic<unsigned long> g_deferred{0};
// Nonzero while this thread runs the collector's finalizers (see
// run_finalizers).  Initial-exec: read in the signal handler, where a
// dynamically allocated TLS block is not safe to touch.
__attribute__((tls_model("initial-exec"))) thread_local int t_finalizing = 0;

std::uintptr_t pc_of(const void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

// True when the thread was stopped in foreign code that may hold a lock.
// A blocking system call that the signal ended with EINTR holds none (and
// must stay interruptible: sleep, read, a lock wait); a call about to be
// restarted (fork's clone, with every malloc arena locked) may.
bool in_foreign_code(const void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  std::uintptr_t pc = pc_of(context);
#if defined(__x86_64__)
  const CodeRange* range = range_of(pc, g_foreign, g_foreign_count);
  if (!range) return false;
  std::uint16_t previous = 0;
  if (pc - 2 >= range->start) std::memcpy(&previous, reinterpret_cast<const void*>(pc - 2), 2);
  bool after_syscall = previous == 0x050f;  // syscall
  return !(after_syscall && uc->uc_mcontext.gregs[REG_RAX] == -EINTR);
#elif defined(__aarch64__)
  const CodeRange* range = range_of(pc, g_foreign, g_foreign_count);
  if (!range) return false;
  std::uint32_t previous = 0;
  if (pc - 4 >= range->start) std::memcpy(&previous, reinterpret_cast<const void*>(pc - 4), 4);
  bool after_syscall = previous == 0xd4000001;  // svc #0
  return !(after_syscall && static_cast<long>(uc->uc_mcontext.regs[0]) == -EINTR);
#else
  (void)uc;
  (void)pc;
  return false;  // no way to tell here: ECL's behaviour unchanged
#endif
}

void gate(int sig, siginfo_t* info, void* context) {
  cl_env_ptr env = ecl_process_env_unsafe();
  if (env && env->interrupt_struct->pending_interrupt != ECL_NIL) {
    // Never handed to ECL inside a section where its C code disabled
    // interrupts: ECL would queue it and write-protect the thread's
    // environment, and run it at the first write there, which is not only
    // the section's end: a finalizer the collector runs inside the section
    // writes it too (ECL's internal error "write access to the environment
    // while interrupts were disabled", an unwind out of the collector), and
    // the section's end is often just after a C library call, before Lisp
    // records its effect (fclose done, the stream not yet marked closed:
    // the unwinding closes it again and glibc aborts).  Nor while the
    // collector's finalizers run on this thread: a stream's finalizer
    // re-enables interrupts halfway through the allocation that ran it.
    // So wait for a signal that finds the thread in Lisp.
    if (env->disable_interrupts != 0 || t_finalizing != 0 || in_foreign_code(context)) {
      g_deferred.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  g_ecl_action.sa_sigaction(sig, info, context);
}

// GC_invoke_finalizers, with the thread's mark for the gate undone also
// when a finalizer's error unwinds past it.  GCC says of the frame that
// ECL_UNWIND_PROTECT_BEGIN keeps for its END (__next_fr) that the longjmp
// might clobber it (-Wclobbered): ECL's macro declares it before its
// setjmp and sets it only after a jump has returned there, so no value of
// it lives across the jump.  The warning is silenced for this function
// alone, which holds nothing else across the setjmp.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wclobbered"
void invoke_finalizers_marked(cl_env_ptr env) {
  ECL_UNWIND_PROTECT_BEGIN(env) {
    GC_invoke_finalizers();
  }
  ECL_UNWIND_PROTECT_EXIT {
    t_finalizing = 0;
  }
  ECL_UNWIND_PROTECT_END;
}
#pragma GCC diagnostic pop

// The collector's finalizers, on the thread whose allocation (or EXT:GC)
// found them due, as libgc would run them itself, but with interrupts held
// back: marked for the gate, and with Lisp's EXT:*INTERRUPTS-ENABLED* NIL.
// ECL's stream finalizer (CLOSE) enables interrupts again inside the
// allocation that ran it (ECL's sections do not nest), and a Lisp finalizer
// (ECL's for a child process, which waits for it under a lock) checks for
// interrupts where its WITHOUT-INTERRUPTS ends: an interrupt run there
// unwound out of the collector and out of the C code around the allocation,
// say the end of another stream's CLOSE, after its fclose and before the
// stream was marked closed.  The interrupt stays queued, and runs at the
// next signal that finds the thread back in Lisp.  The mark and the binding
// are undone also when a finalizer's error unwinds past this function.
void run_finalizers() {
  if (t_finalizing) return;  // a finalizer's own allocation: the loop below goes on
  cl_env_ptr env = ecl_process_env_unsafe();
  if (!env || !env->own_process || env->own_process->process.phase < ECL_PROCESS_ACTIVE) {
    GC_invoke_finalizers();  // not a running Lisp thread: ECL's finalizer defers Lisp's work
    return;
  }
  t_finalizing = 1;
  ecl_bds_bind(env, ECL_INTERRUPTS_ENABLED, ECL_NIL);
  invoke_finalizers_marked(env);
  ecl_bds_unwind1(env);
}

struct Exclusions {
  std::uintptr_t ecl;  // an address in libecl
  std::uintptr_t own;  // an address in this module (and its compiled Lisp)
};

int collect_foreign_code(dl_phdr_info* info, std::size_t, void* data) {
  const auto& exclusions = *static_cast<const Exclusions*>(data);
  if (object_contains(info, exclusions.ecl) || object_contains(info, exclusions.own)) return 0;
  add_code_ranges(info, g_foreign, g_foreign_count, kMaxRanges);
  return 0;
}

}  // namespace

void install_interrupt_gate(int interrupt_signal) {
  if (g_installed) return;
  sigaction(interrupt_signal, nullptr, &g_ecl_action);
  if (!(g_ecl_action.sa_flags & SA_SIGINFO)) return;  // not ECL's handler: leave it
  Exclusions exclusions{reinterpret_cast<std::uintptr_t>(&cl_boot),
                        reinterpret_cast<std::uintptr_t>(&install_interrupt_gate)};
  dl_iterate_phdr(collect_foreign_code, &exclusions);
  g_installed = true;
  t_finalizing = 0;  // the TLS slot touched once outside any handler
  // Finalizers run where libgc would run them, through run_finalizers.
  GC_set_finalizer_notifier(run_finalizers);
  GC_set_finalize_on_demand(1);

  struct sigaction action = g_ecl_action;
  action.sa_sigaction = gate;
  sigaction(interrupt_signal, &action, nullptr);
}

unsigned long deferred_interrupts() { return g_deferred.load(std::memory_order_relaxed); }

}  // namespace agentq::ecl
