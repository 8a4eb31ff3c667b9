// Statistical sampling of the worker for profile_form's mode sample.
//
// While a form runs, a POSIX timer on the worker's own CPU-time clock
// sends the worker a signal of its own (not ECL's interrupt signal, which
// C-g, time limits and heap limits use: sampling never goes through ECL's
// interrupt queue, so it cannot delay, eat or outlive one of those).  The
// handler runs no Lisp and allocates nothing: it copies the interrupted
// C stack's return addresses (libgcc's unwinder, through the signal frame)
// and the functions on ECL's invocation history stack (the bytecode
// interpreter's frames, which the C stack does not name) into buffers
// allocated before sampling began.  The function objects are kept in
// memory the collector scans, so none is freed before the samples are
// read.  Stopping deletes the timer, blocks the signal on the worker
// again and consumes one still pending: nothing arrives after the form.
// Part of the runtime (runtime_state.hpp).

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <gc/gc.h>

#include "ecl/lisp_function.hpp"

namespace agentq::ecl {

namespace {

constexpr int kNativeDepth = 96;  // C frames kept per sample, innermost first
constexpr int kLispDepth = 64;    // interpreter frames kept per sample
constexpr long kMaxSamples = 10000;
constexpr std::ptrdiff_t kStackMargin = 256 * 1024;  // stack left above ECL's limit to take a sample

struct Sampler {
  std::atomic<int> active{0};
  int signal = 0;
  bool installed = false;
  timer_t timer{};
  bool timer_made = false;
  long capacity = 0;
  std::atomic<long> count{0};
  std::atomic<long> dropped{0};    // ticks after the buffer was full
  std::atomic<long> skipped{0};    // ticks too near the end of the stack (or off a Lisp thread)
  std::atomic<long> truncated{0};  // samples whose stack was deeper than kept
  std::atomic<long> unwound{0};    // samples whose C stack was walked past the signal frame
  std::atomic<int> in_handler{0};  // handlers running now (a retired worker's may run on another CPU)
  std::uintptr_t* native = nullptr;  // capacity × (1 + kNativeDepth): count, then addresses
  cl_object* lisp = nullptr;         // capacity × (1 + kLispDepth), scanned by the collector
};
Sampler g_sampler;

struct Walk {
  std::uintptr_t pc;  // where the signal stopped the thread
  bool found;
  int kept;
  bool cut;
  std::uintptr_t* out;
};

_Unwind_Reason_Code walk_frame(struct _Unwind_Context* context, void* data) {
  auto* walk = static_cast<Walk*>(data);
  int before = 0;
  std::uintptr_t ip = _Unwind_GetIPInfo(context, &before);
  if (!walk->found) {
    // The handler's own frames and the signal trampoline come first.
    if (ip == walk->pc && before) walk->found = true;
    else return _URC_NO_REASON;
  }
  if (walk->kept == kNativeDepth) {
    walk->cut = true;
    return _URC_END_OF_STACK;
  }
  // A return address points after its call: look the caller up by the
  // call instruction itself.
  walk->out[walk->kept] = (walk->kept == 0 || before) ? ip : ip - 1;
  ++walk->kept;
  return _URC_NO_REASON;
}

void on_sample(int, siginfo_t*, void* context) {
  Sampler& s = g_sampler;
  s.in_handler.fetch_add(1, std::memory_order_acq_rel);
  if (!s.active.load(std::memory_order_acquire)) {
    s.in_handler.fetch_sub(1, std::memory_order_acq_rel);
    return;
  }
  const int saved_errno = errno;
  long index = s.count.load(std::memory_order_relaxed);
  if (index >= s.capacity) {
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    s.in_handler.fetch_sub(1, std::memory_order_acq_rel);
    errno = saved_errno;
    return;
  }
  // The handler runs on the thread's own stack: near its end (deep
  // recursion about to overflow), unwinding could run into the guard
  // page, and ECL's overflow handling would unwind out of this handler.
  // No sample there.
  cl_env_ptr env = ecl_process_env_unsafe();
  const auto* here = static_cast<const char*>(__builtin_frame_address(0));
  if (!env || !env->cs_limit || here < env->cs_limit + kStackMargin) {
    s.skipped.fetch_add(1, std::memory_order_relaxed);
    s.in_handler.fetch_sub(1, std::memory_order_acq_rel);
    errno = saved_errno;
    return;
  }
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  const std::uintptr_t pc = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  const std::uintptr_t sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  const std::uintptr_t pc = static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
  const std::uintptr_t sp = static_cast<std::uintptr_t>(uc->uc_mcontext.sp);
#else
  const std::uintptr_t pc = 0, sp = 0;
#endif
  std::uintptr_t* native = s.native + index * (1 + kNativeDepth);
  Walk walk{pc, false, 0, false, native + 1};
  _Unwind_Backtrace(walk_frame, &walk);
  if (walk.found) {
    s.unwound.fetch_add(1, std::memory_order_relaxed);
  } else {
    walk.kept = 1;  // the unwinder could not pass the signal frame: the pc alone
    native[1] = pc;
  }
  native[0] = static_cast<std::uintptr_t>(walk.kept);

  // ECL's invocation history: frames live on this thread's stack, above
  // the interrupted stack pointer and below the stack's origin.
  cl_object* lisp = s.lisp + index * (1 + kLispDepth);
  int kept = 0;
  if (env->cs_org) {
    const auto top = reinterpret_cast<std::uintptr_t>(env->cs_org);
    struct ecl_ihs_frame* frame = env->ihs_top;
    while (frame) {
      const auto at = reinterpret_cast<std::uintptr_t>(frame);
      if (at < sp || at >= top || frame->index == 0) break;
      if (kept == kLispDepth) {
        walk.cut = true;
        break;
      }
      lisp[1 + kept++] = frame->function;
      frame = frame->next;
    }
  }
  lisp[0] = ecl_make_fixnum(kept);
  if (walk.cut) s.truncated.fetch_add(1, std::memory_order_relaxed);
  s.count.store(index + 1, std::memory_order_release);
  s.in_handler.fetch_sub(1, std::memory_order_acq_rel);
  errno = saved_errno;
}

void release_buffers() {
  Sampler& s = g_sampler;
  // A handler still running (on a thread the timer was made for, if that
  // thread is no longer this one) finishes first.  One that never returns
  // (a fault in it unwound past it) leaves its buffers allocated: leaked,
  // never freed under it.
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (s.in_handler.load(std::memory_order_acquire) != 0) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 1) {
      s.in_handler.store(0);
      s.native = nullptr;
      s.lisp = nullptr;
      s.capacity = 0;
      return;
    }
    sched_yield();
  }
  std::free(s.native);
  s.native = nullptr;
  if (s.lisp) GC_FREE(s.lisp);
  s.lisp = nullptr;
  s.capacity = 0;
}

sigset_t sample_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, g_sampler.signal);
  return set;
}

// Stops the timer and makes sure no tick of it is left to arrive.
void stop_sampling() {
  Sampler& s = g_sampler;
  s.active.store(0, std::memory_order_release);
  if (s.timer_made) {
    timer_delete(s.timer);
    s.timer_made = false;
    sigset_t set = sample_set();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    timespec zero{0, 0};
    while (sigtimedwait(&set, nullptr, &zero) > 0) {
    }
  }
}

cl_object error_text(const char* text) { return one_value(ecl_make_simple_base_string(text, -1)); }

// (%SAMPLER-START INTERVAL-US CAPACITY) → T, or a string saying why not.
// Call on the thread to sample (the worker), with no sampling running.
cl_object sampler_start(cl_object interval, cl_object capacity) {
  Sampler& s = g_sampler;
  if (!ECL_FIXNUMP(interval) || !ECL_FIXNUMP(capacity)) return error_text("bad arguments");
  const long interval_us = ecl_fixnum(interval);
  const long samples = ecl_fixnum(capacity);
  if (interval_us < 1 || samples < 1 || samples > kMaxSamples) return error_text("bad arguments");
  stop_sampling();
  release_buffers();
  if (!s.installed) {
    // A real-time signal nobody handles: Emacs, ECL and the collector
    // leave these alone (ECL's interrupt signal is SIGRTMIN+2).
    for (int candidate = SIGRTMIN + 6; candidate <= SIGRTMAX - 2; ++candidate) {
      struct sigaction old{};
      if (sigaction(candidate, nullptr, &old) != 0) continue;
      if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
      struct sigaction action{};
      action.sa_sigaction = on_sample;
      action.sa_flags = SA_SIGINFO | SA_RESTART;
      // No interrupt of ECL's (nor any other handler) runs on top of a
      // sample; faults stay deliverable (blocked, one would end the process).
      sigfillset(&action.sa_mask);
      for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigdelset(&action.sa_mask, fault);
      if (sigaction(candidate, &action, nullptr) != 0) continue;
      s.signal = candidate;
      s.installed = true;
      break;
    }
    if (!s.installed) return error_text("no free real-time signal for the sampler");
    // The unwinder loads what it needs at its first use: not in a handler.
    _Unwind_Backtrace([](struct _Unwind_Context*, void*) { return _URC_END_OF_STACK; }, nullptr);
  }
  s.native = static_cast<std::uintptr_t*>(std::calloc(static_cast<std::size_t>(samples) * (1 + kNativeDepth),
                                                      sizeof(std::uintptr_t)));
  s.lisp = static_cast<cl_object*>(GC_MALLOC_UNCOLLECTABLE(static_cast<std::size_t>(samples) * (1 + kLispDepth) *
                                                           sizeof(cl_object)));
  if (!s.native || !s.lisp) {
    release_buffers();
    return error_text("no memory for the samples");
  }
  s.capacity = samples;
  s.count.store(0);
  s.dropped.store(0);
  s.skipped.store(0);
  s.truncated.store(0);
  s.unwound.store(0);

  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = s.signal;
  event._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &s.timer) != 0) {
    release_buffers();
    return error_text("timer_create failed");
  }
  s.timer_made = true;
  itimerspec spec{};
  spec.it_interval.tv_sec = interval_us / 1000000;
  spec.it_interval.tv_nsec = (interval_us % 1000000) * 1000;
  spec.it_value = spec.it_interval;
  s.active.store(1, std::memory_order_release);
  sigset_t set = sample_set();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  if (timer_settime(s.timer, 0, &spec, nullptr) != 0) {
    stop_sampling();
    release_buffers();
    return error_text("timer_settime failed");
  }
  return one_value(ECL_T);
}

// (%SAMPLER-STOP) → (SAMPLES DROPPED TRUNCATED UNWOUND SKIPPED): stops
// sampling (at once; also when none runs) and says how many samples were
// taken, how many ticks found the buffer full, how many stacks were cut,
// how many C stacks the unwinder walked past the signal frame, and how
// many ticks found the stack too near its end to take a sample.
cl_object sampler_stop() {
  stop_sampling();
  Sampler& s = g_sampler;
  cl_object list = ecl_list1(ecl_make_fixnum(s.skipped.load()));
  list = ecl_cons(ecl_make_fixnum(s.unwound.load()), list);
  list = ecl_cons(ecl_make_fixnum(s.truncated.load()), list);
  list = ecl_cons(ecl_make_fixnum(s.dropped.load()), list);
  list = ecl_cons(ecl_make_fixnum(s.count.load()), list);
  return one_value(list);
}

bool plausible_function(cl_object object) {
  if (object == ECL_NIL || ECL_IMMEDIATE(object)) return false;
  const auto address = reinterpret_cast<std::uintptr_t>(object);
  const auto symbols = reinterpret_cast<std::uintptr_t>(cl_symbols);
  const bool static_symbol = address >= symbols && address < symbols + cl_num_symbols_in_core * sizeof(cl_symbols[0]);
  if (!static_symbol && GC_base(object) != static_cast<void*>(object)) return false;
  switch (ecl_t_of(object)) {
    case t_symbol: case t_bytecodes: case t_bclosure: case t_cfun: case t_cfunfixed: case t_cclosure:
      return true;
    default:
      return false;
  }
}

// (%SAMPLER-SAMPLE I) → (ADDRESSES . FUNCTIONS) for sample I, both
// innermost first: the C stack's addresses as integers and the
// interpreter's function objects (only those that are objects: a frame
// caught while being pushed may hold anything).  NIL past the last.
cl_object sampler_sample(cl_object index_object) {
  Sampler& s = g_sampler;
  if (!ECL_FIXNUMP(index_object)) return one_value(ECL_NIL);
  const long index = ecl_fixnum(index_object);
  if (s.active.load() || index < 0 || index >= s.count.load() || index >= s.capacity) return one_value(ECL_NIL);
  const std::uintptr_t* native = s.native + index * (1 + kNativeDepth);
  cl_object addresses = ECL_NIL;
  for (long i = static_cast<long>(native[0]); i > 0; --i)
    addresses = ecl_cons(ecl_make_unsigned_integer(native[i]), addresses);
  cl_object* lisp = s.lisp + index * (1 + kLispDepth);
  cl_object functions = ECL_NIL;
  for (long i = ecl_fixnum(lisp[0]); i > 0; --i)
    if (plausible_function(lisp[i])) functions = ecl_cons(lisp[i], functions);
  return one_value(ecl_cons(addresses, functions));
}

// (%SAMPLER-RELEASE) → NIL: frees the samples' buffers.
cl_object sampler_release() {
  stop_sampling();
  release_buffers();
  return one_value(ECL_NIL);
}

// (%FUNCTION-ENTRY FUNCTION) → the address of FUNCTION's machine code, or
// NIL when it has none of its own (bytecodes, generic functions).
cl_object function_entry(cl_object function) {
  void* entry = nullptr;
  if (!ECL_IMMEDIATE(function) && function != ECL_NIL) {
    switch (ecl_t_of(function)) {
      case t_cfun: entry = reinterpret_cast<void*>(function->cfun.entry); break;
      case t_cfunfixed: entry = reinterpret_cast<void*>(function->cfunfixed.entry_fixed); break;
      case t_cclosure: entry = reinterpret_cast<void*>(function->cclosure.entry); break;
      default: break;
    }
  }
  return one_value(entry ? ecl_make_unsigned_integer(reinterpret_cast<std::uintptr_t>(entry)) : ECL_NIL);
}

// (%NATIVE-SYMBOL ADDRESS) → (NAME SYMBOL-ADDRESS OBJECT-BASE OBJECT-FILE
// SYMBOL-SIZE), what the dynamic linker says of ADDRESS: the exported
// symbol at or below it (NAME, SYMBOL-ADDRESS and SYMBOL-SIZE NIL when
// none) and the object holding it; NIL outside every object.  ADDRESS is
// inside the symbol only when below SYMBOL-ADDRESS + SYMBOL-SIZE: past
// that it is in a function the object does not export.
cl_object native_symbol(cl_object address_object) {
  if (!ECL_FIXNUMP(address_object) && !ECL_BIGNUMP(address_object)) return one_value(ECL_NIL);
  if (ecl_minusp(address_object)) return one_value(ECL_NIL);
  const auto address = static_cast<std::uintptr_t>(fixnnint(address_object));
  Dl_info info{};
  void* extra = nullptr;
  if (dladdr1(reinterpret_cast<void*>(address), &info, &extra, RTLD_DL_SYMENT) == 0) return one_value(ECL_NIL);
  const auto* symbol_entry = static_cast<const ElfW(Sym)*>(extra);
  const bool named = info.dli_sname && info.dli_saddr;
  cl_object name = named ? ecl_make_simple_base_string(info.dli_sname, -1) : ECL_NIL;
  cl_object symbol = named ? ecl_make_unsigned_integer(reinterpret_cast<std::uintptr_t>(info.dli_saddr)) : ECL_NIL;
  cl_object size = named && symbol_entry ? ecl_make_unsigned_integer(symbol_entry->st_size) : ECL_NIL;
  cl_object file = info.dli_fname ? ecl_make_simple_base_string(info.dli_fname, -1) : ECL_NIL;
  return one_value(cl_list(5, name, symbol, ecl_make_unsigned_integer(reinterpret_cast<std::uintptr_t>(info.dli_fbase)),
                           file, size));
}

}  // namespace

void define_sampler_functions() {
  define_lisp_function("%SAMPLER-START", sampler_start);
  define_lisp_function("%SAMPLER-STOP", sampler_stop);
  define_lisp_function("%SAMPLER-SAMPLE", sampler_sample);
  define_lisp_function("%SAMPLER-RELEASE", sampler_release);
  define_lisp_function("%FUNCTION-ENTRY", function_entry);
  define_lisp_function("%NATIVE-SYMBOL", native_symbol);
}

}  // namespace agentq::ecl
