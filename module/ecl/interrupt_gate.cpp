#include "ecl/interrupt_gate.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "ecl/code_ranges.hpp"
#include "ecl/ecl_api.hpp"

// libgcc's lookup of the unwind table entry (FDE) that covers an address,
// and the start of the function it describes.  Exported by libgcc_s
// (GCC_3.0) and libgcc_eh; no public header declares it.
extern "C" {
struct dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
const void* _Unwind_Find_FDE(void* pc, struct dwarf_eh_bases* bases);
}

namespace agentq::ecl {

namespace {

// Written once before the gate is installed, read-only afterwards.
constexpr std::size_t kMaxRanges = 512;
CodeRange g_foreign[kMaxRanges];
std::size_t g_foreign_count = 0;
struct sigaction g_ecl_action;
bool g_installed = false;
std::atomic<unsigned long> g_deferred{0};
// The code of ECL's CLOSE for streams on a C FILE and on a file descriptor,
// and of the function both end in, which marks the stream closed (see
// find_close_functions).
constexpr std::size_t kMaxClosing = 4;
CodeRange g_closing[kMaxClosing];
std::size_t g_closing_count = 0;
// Nonzero while this thread runs the collector's finalizers (see
// run_finalizers).  Initial-exec: read in the signal handler, where a
// dynamically allocated TLS block is not safe to touch.
__attribute__((tls_model("initial-exec"))) thread_local int t_finalizing = 0;
// Nonzero on a thread from the first step of its fork() to the last
// (pthread_atfork).  fork takes libgc's lock, stdio's list lock and every
// malloc arena's, one after the other, and a lock already held by another
// thread is waited for in a futex wait that the signal ends with EINTR:
// what in_foreign_code lets through as a blocking call that holds nothing.
// An interrupt let in there ran ECL's handler, which allocates, and it
// waited for good for an arena lock its own fork held; so did every thread
// after it, Emacs's at its next malloc (one hang in a full ERT run,
// 2026-11-29: sly-agent-q-hostile/timeouts-during-fork-and-file-io).
__attribute__((tls_model("initial-exec"))) thread_local int t_forking = 0;
// The C library's wait for one of its own locks (malloc's arenas, stdio's
// list), where the thread may hold another of them: never a wait that Lisp
// code asked for (those are pthread's and the kernel's), so no interrupt
// needs to end it.  Found at install (GLIBC_PRIVATE, exported); {0, 0}
// when not found.
CodeRange g_libc_lock_wait{0, 0};

void fork_begins() { t_forking = 1; }
void fork_ends() { t_forking = 0; }

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

// True when the thread was stopped in ECL's CLOSE of a file stream, or in a
// function that it called last (ECL's small stream predicates, PLT stubs),
// where ECL's interrupt-free section has ended after fclose (close) and the
// stream is not yet marked closed.  An interrupt run there left the stream
// open on a freed FILE: the unwinding's CLOSE :ABORT (WITH-OPEN-FILE's)
// flushed it (EBADF) and fclosed it again, or the collector's finalizer
// did: glibc aborted, or the heap was corrupted.  Those callees' frames are
// a few words deep: a return address into the close functions among the
// top words of the stack (or, on aarch64, in the link register) counts.
// A stale word that happens to look like one only delays the interrupt by
// a repeat.
bool in_close_code(const void* context) {
  if (g_closing_count == 0) return false;
  const auto* uc = static_cast<const ucontext_t*>(context);
  if (range_of(pc_of(context), g_closing, g_closing_count)) return true;
  constexpr int kStackWords = 8;
#if defined(__x86_64__)
  const auto* stack = reinterpret_cast<const std::uintptr_t*>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  if (range_of(static_cast<std::uintptr_t>(uc->uc_mcontext.regs[30]), g_closing, g_closing_count)) return true;
  const auto* stack = reinterpret_cast<const std::uintptr_t*>(uc->uc_mcontext.sp);
#else
  (void)uc;
  return false;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
  for (int i = 0; i < kStackWords; ++i)
    if (range_of(stack[i], g_closing, g_closing_count)) return true;
  return false;
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
    // Nor inside ECL's CLOSE of a file stream (see in_close_code), nor
    // inside fork or the C library's wait for its own locks (t_forking,
    // g_libc_lock_wait), which may hold other locks.
    if (env->disable_interrupts != 0 || t_finalizing != 0 || t_forking != 0 || in_foreign_code(context) ||
        in_close_code(context) || range_of(pc_of(context), &g_libc_lock_wait, 1)) {
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

// The code of the function that starts at START, as its unwind table entry
// says; {0, 0} when there is none.  (A part GCC moved out of line, a
// function's .cold part, has an entry of its own: only error paths.)
CodeRange function_code(std::uintptr_t start) {
  dwarf_eh_bases bases{};
  if (!_Unwind_Find_FDE(reinterpret_cast<void*>(start), &bases) ||
      reinterpret_cast<std::uintptr_t>(bases.func) != start)
    return {0, 0};
  constexpr std::uintptr_t kMaxSize = 1 << 16;
  for (std::uintptr_t end = start + 1; end - start < kMaxSize; ++end) {
    dwarf_eh_bases next{};
    if (!_Unwind_Find_FDE(reinterpret_cast<void*>(end), &next) || next.func != bases.func) return {start, end};
  }
  return {0, 0};
}

void add_closing_function(cl_object (*function)(cl_object)) {
  auto start = reinterpret_cast<std::uintptr_t>(function);
  if (!start || range_of(start, g_closing, g_closing_count) || g_closing_count == kMaxClosing) return;
  CodeRange code = function_code(start);
  if (code.end) g_closing[g_closing_count++] = code;
}

// A stream on /dev/null, opened as a file stream (on a C FILE, as OPEN makes
// by default) and as one on a bare descriptor (:CSTREAM NIL, as sockets
// are), closed again: its dispatch table names ECL's close function of that
// kind, then the one that marks a stream closed.  (Static functions of
// libecl, which Debian ships without their symbols.)  May exit non-locally.
void probe_close_functions() {
  cl_object name = ecl_make_simple_base_string(const_cast<char*>("/dev/null"), -1);
  cl_object cstream[] = {ECL_T, ECL_NIL};
  for (cl_object on_file : cstream) {
    cl_object stream = cl_open(7, name, ecl_make_keyword("DIRECTION"), ecl_make_keyword("OUTPUT"),
                               ecl_make_keyword("IF-EXISTS"), ecl_make_keyword("APPEND"),
                               ecl_make_keyword("CSTREAM"), on_file);
    if (ecl_t_of(stream) != t_stream) continue;
    add_closing_function(stream->stream.ops->close);
    cl_close(1, stream);
    add_closing_function(stream->stream.ops->close);
  }
}

// ECL's CLOSE of a file stream fcloses (or closes) inside an interrupt-free
// section, ends the section, and only then marks the stream closed: an
// interrupt run between the two, at a signal that came just then, unwound
// out of CLOSE with the FILE freed and the stream open, which the
// unwinding's CLOSE :ABORT (WITH-OPEN-FILE's), or the collector's
// finalizer, closed again.  The gate keeps interrupts out of these
// functions' code.
void find_close_functions() {
  cl_env_ptr env = ecl_process_env();
  ECL_CATCH_ALL_BEGIN(env) {
    probe_close_functions();
  }
  ECL_CATCH_ALL_END;
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
  find_close_functions();
  g_installed = true;
  t_finalizing = 0;  // the TLS slot touched once outside any handler
  t_forking = 0;
  // Registered after libgc's (at its start): prepare steps run in reverse
  // order and the others in order, so the mark is set before libgc takes
  // its lock and cleared after it lets it go.
  pthread_atfork(fork_begins, fork_ends, fork_ends);
  if (void* wait = dlsym(RTLD_DEFAULT, "__lll_lock_wait_private"))
    g_libc_lock_wait = function_code(reinterpret_cast<std::uintptr_t>(wait));
  // Finalizers run where libgc would run them, through run_finalizers.
  GC_set_finalizer_notifier(run_finalizers);
  GC_set_finalize_on_demand(1);

  struct sigaction action = g_ecl_action;
  action.sa_sigaction = gate;
  sigaction(interrupt_signal, &action, nullptr);
}

unsigned long deferred_interrupts() { return g_deferred.load(std::memory_order_relaxed); }

std::size_t guarded_close_functions() { return g_closing_count; }

}  // namespace agentq::ecl
