#include "ecl/interrupt_gate.hpp"

#include <link.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "ecl/ecl_api.hpp"

namespace agentq::ecl {

namespace {

struct Range {
  std::uintptr_t start;
  std::uintptr_t end;
};

// Written once before the gate is installed, read-only afterwards.
constexpr std::size_t kMaxRanges = 512;
Range g_foreign[kMaxRanges];
std::size_t g_foreign_count = 0;
// The garbage collector's code (libgc), foreign code among the rest.
constexpr std::size_t kMaxCollectorRanges = 8;
Range g_collector[kMaxCollectorRanges];
std::size_t g_collector_count = 0;
struct sigaction g_ecl_action;
bool g_installed = false;
std::atomic<unsigned long> g_deferred{0};
// Deferrals since an interrupt was last let through, and how many of them
// (about a millisecond apart, see Runtime::evaluate) an interrupt waits
// before ECL may run it at the end of its C section.
std::atomic<unsigned long> g_consecutive{0};
constexpr unsigned long kPatience = 20;

const Range* range_of(std::uintptr_t pc, const Range* ranges, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (pc >= ranges[i].start && pc < ranges[i].end) return &ranges[i];
  return nullptr;
}

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
  const Range* range = range_of(pc, g_foreign, g_foreign_count);
  if (!range) return false;
  std::uint16_t previous = 0;
  if (pc - 2 >= range->start) std::memcpy(&previous, reinterpret_cast<const void*>(pc - 2), 2);
  bool after_syscall = previous == 0x050f;  // syscall
  return !(after_syscall && uc->uc_mcontext.gregs[REG_RAX] == -EINTR);
#elif defined(__aarch64__)
  const Range* range = range_of(pc, g_foreign, g_foreign_count);
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
    // Inside a section where ECL's C code disabled interrupts, ECL runs the
    // interrupt where the section ends: often just after a C library call,
    // before the Lisp state records its effect (fclose done, stream not yet
    // marked closed: the unwinding closes it again and glibc aborts).  So
    // wait for a signal that finds the thread elsewhere.  Only a thread that
    // keeps being found in the garbage collector (a loop of collections,
    // whose section ends cleanly) is left to ECL.  Elsewhere, always wait:
    // a thread busy opening and closing files is found inside those
    // sections again and again under load, and letting ECL have it there
    // crashed the process.
    bool c_disabled = env->disable_interrupts != 0;
    if (c_disabled || in_foreign_code(context)) {
      unsigned long missed = g_consecutive.fetch_add(1, std::memory_order_relaxed) + 1;
      bool collecting = c_disabled && range_of(pc_of(context), g_collector, g_collector_count);
      if (!collecting || missed <= kPatience) {
        g_deferred.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    g_consecutive.store(0, std::memory_order_relaxed);
  }
  g_ecl_action.sa_sigaction(sig, info, context);
}

struct Exclusions {
  std::uintptr_t ecl;        // an address in libecl
  std::uintptr_t own;        // an address in this module (and its compiled Lisp)
  std::uintptr_t collector;  // an address in libgc
};

bool object_contains(const dl_phdr_info* info, std::uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (address >= start && address < start + segment.p_memsz) return true;
  }
  return false;
}

int collect_foreign_code(dl_phdr_info* info, std::size_t, void* data) {
  const auto& exclusions = *static_cast<const Exclusions*>(data);
  if (object_contains(info, exclusions.ecl) || object_contains(info, exclusions.own)) return 0;
  bool collector = object_contains(info, exclusions.collector);
  for (int i = 0; i < info->dlpi_phnum && g_foreign_count < kMaxRanges; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || !(segment.p_flags & PF_X)) continue;
    std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    g_foreign[g_foreign_count++] = {start, start + segment.p_memsz};
    if (collector && g_collector_count < kMaxCollectorRanges)
      g_collector[g_collector_count++] = {start, start + segment.p_memsz};
  }
  return 0;
}

}  // namespace

void install_interrupt_gate(int interrupt_signal) {
  if (g_installed) return;
  sigaction(interrupt_signal, nullptr, &g_ecl_action);
  if (!(g_ecl_action.sa_flags & SA_SIGINFO)) return;  // not ECL's handler: leave it
  Exclusions exclusions{reinterpret_cast<std::uintptr_t>(&cl_boot),
                        reinterpret_cast<std::uintptr_t>(&install_interrupt_gate),
                        reinterpret_cast<std::uintptr_t>(&GC_gcollect)};
  dl_iterate_phdr(collect_foreign_code, &exclusions);
  g_installed = true;

  struct sigaction action = g_ecl_action;
  action.sa_sigaction = gate;
  sigaction(interrupt_signal, &action, nullptr);
}

unsigned long deferred_interrupts() { return g_deferred.load(std::memory_order_relaxed); }

}  // namespace agentq::ecl
