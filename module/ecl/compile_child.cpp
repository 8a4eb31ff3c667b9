#include "ecl/compile_child.hpp"

#include <dlfcn.h>
#include <gc/gc.h>
#include <gc/gc_mark.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "sys/thread_signals.hpp"
#include "ecl/flat_directory.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/lisp_string.hpp"

namespace agentq::ecl {
namespace {

// The private directories made and not yet removed: removed at exit too
// (an Emacs that quits while a batch compiles would leave them in /tmp).
// Held across a directory's making and its registration, so that the
// exit's removal sees every directory made.
std::timed_mutex g_directories_mutex;
// How long the exit waits for a thread making or removing a directory.
constexpr auto kExitLockWait = std::chrono::milliseconds(200);
std::set<std::string> g_directories;

// The compile child's SIGTERM, which the kernel sends when the thread
// that forked it ends (with its process, however that ends): the child
// removes the private directories it knew at the fork (its batch's) and
// ends.  System calls only: the signal may come inside malloc or the
// collector.  (With SIGKILL, the child died and left them in /tmp.)  The
// compiler it runs (gcc, cc1, as, ld: its process group) is stopped and
// reaped first: one still writing an object file into a directory would
// keep it from being removed.  Our own SIGTERM stays blocked in here.
void end_compile_child(int) {
  int saved = errno;
  if (getpgrp() == getpid()) kill(0, SIGTERM);  // never Emacs's group (setpgid failed)
  // At most 2 s: a compiler that ignores SIGTERM does not keep this child.
  for (int tick = 0; tick < 200;) {
    pid_t reaped = waitpid(-1, nullptr, WNOHANG);
    if (reaped < 0 && errno != EINTR) break;  // none left
    if (reaped == 0) {
      timespec pause{0, 10 * 1000 * 1000};
      nanosleep(&pause, nullptr);
      ++tick;
    }
  }
  errno = saved;
  for (const std::string& path : g_directories) remove_flat_directory(path.c_str());
  _exit(1);
}

// Only the thread that forked exists in the child; see the header.
void become_compile_child(pid_t parent) {
  GC_atfork_child();
  struct sigaction action {};
  action.sa_handler = end_compile_child;
  sigfillset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigset_t set = all_but_fault_signals();
  sigdelset(&set, SIGTERM);  // the death signal: never blocked here
  pthread_sigmask(SIG_SETMASK, &set, nullptr);  // our atfork handler let them all in
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);  // the parent was already gone
  setpgid(0, 0);
  GC_set_finalizer_notifier(nullptr);  // finalize_on_demand is set: none run
}

cl_object fork_compile_child() {
  const pid_t parent = getpid();
  GC_atfork_prepare();  // does nothing when libgc installed its own handlers
  const pid_t pid = fork();
  if (pid == 0) {
    become_compile_child(parent);
    return one_value(ecl_make_fixnum(0));
  }
  GC_atfork_parent();
  return one_value(pid > 0 ? ecl_make_fixnum(pid) : ECL_NIL);
}

// libgc marks the objects on a thread's local free lists at a collection
// (so that they stay free): taken next, they would look older than the
// fork.  So each small size's list (ECL allocates with GC_malloc and
// GC_malloc_atomic) is used up, until an unmarked object comes from a
// refill.  Larger objects come from blocks the collection swept.
void use_up_marked_free_lists() {
  constexpr std::size_t kGranule = 16, kLargestLocal = 25 * kGranule;
  for (std::size_t bytes = kGranule; bytes <= kLargestLocal; bytes += kGranule)
    for (bool atomic : {false, true})
      for (int i = 0; i < 100000; ++i) {
        void* object = atomic ? GC_malloc_atomic(bytes) : GC_malloc(bytes);
        if (object == nullptr || !GC_is_marked(GC_base(object))) break;
      }
}

cl_object mark_live_objects() {
  GC_gcollect();
  GC_disable();
  use_up_marked_free_lists();
  return one_value(ECL_NIL);
}

cl_object preexisting_object_p(cl_object object) {
  void* address = object;
#ifdef ECL_SMALL_CONS
  if (ECL_CONSP(object)) address = ECL_CONS_PTR(object);
  else if (ECL_IMMEDIATE(object)) return one_value(ECL_NIL);
#else
  if (ECL_IMMEDIATE(object) || object == ECL_NIL) return one_value(ECL_NIL);
#endif
  void* base = GC_base(address);
  return one_value(base == nullptr || GC_is_marked(base) ? ECL_T : ECL_NIL);
}

cl_object child_exit(cl_object code) { _exit(ECL_FIXNUMP(code) ? static_cast<int>(ecl_fixnum(code) & 0xff) : 1); }

int exit_status(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

// The CPU time (utime + stime, in clock ticks) PID has used, or -1.
long long cpu_ticks(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* file = std::fopen(path, "r");
  if (!file) return -1;
  char line[1024];
  const bool read = std::fgets(line, sizeof line, file) != nullptr;
  std::fclose(file);
  if (!read) return -1;
  // pid (comm) state ...: comm may hold anything, so from the last ')'.
  const char* fields = std::strrchr(line, ')');
  unsigned long long utime = 0, stime = 0;
  if (!fields || std::sscanf(fields + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
    return -1;
  return static_cast<long long>(utime + stime);
}

cl_object wait_child(cl_object pid_object, cl_object timeout_object, cl_object stall_object) {
  if (!ECL_FIXNUMP(pid_object) || ecl_fixnum(pid_object) <= 0 || !ECL_FIXNUMP(timeout_object) ||
      !ECL_FIXNUMP(stall_object))
    return one_value(ECL_NIL);
  const auto pid = static_cast<pid_t>(ecl_fixnum(pid_object));
  const long timeout_ms = ecl_fixnum(timeout_object);
  const long stall_ms = ecl_fixnum(stall_object);
  int result = -1;
  const char* ended_by = nullptr;  // "TIMEOUT" or "STALLED"
  outside_lisp([&] {
    timespec start{}, now{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    long long last_ticks = -1;
    long progress_ms = 0;  // when the child last used CPU time
    for (long checked_ms = 0;;) {
      int status = 0;
      pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        result = exit_status(status);
        return;
      }
      if (done < 0 && errno != EINTR) return;  // not our child (any more)
      clock_gettime(CLOCK_MONOTONIC, &now);
      long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
      if (elapsed >= timeout_ms) {
        ended_by = "TIMEOUT";
        break;
      }
      // A child that uses no CPU for STALL-MS waits for something that will
      // not come (a lock held at the fork): checked every 100 ms.
      if (stall_ms > 0 && elapsed - checked_ms >= 100) {
        checked_ms = elapsed;
        long long ticks = cpu_ticks(pid);
        if (ticks != last_ticks) {
          last_ticks = ticks;
          progress_ms = elapsed;
        } else if (elapsed - progress_ms >= stall_ms) {
          ended_by = "STALLED";
          break;
        }
      }
      timespec pause{0, 1000000};  // a child lives some tens of ms: 1 ms is close enough
      nanosleep(&pause, nullptr);
    }
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  });
  if (ended_by) return one_value(ecl_make_keyword(ended_by));
  return one_value(result >= 0 ? ecl_make_fixnum(result) : ECL_NIL);
}

void remove_directories_at_exit() {
  std::unique_lock lock(g_directories_mutex, kExitLockWait);  // never wait long at exit
  if (!lock.owns_lock()) return;
  for (const std::string& path : g_directories) remove_flat_directory(path.c_str());
  g_directories.clear();
}

cl_object make_private_directory() {
  std::string path;
  bool made = false;
  outside_lisp([&] {
    static std::once_flag at_exit;
    std::call_once(at_exit, [] { std::atexit(remove_directories_at_exit); });
    const char* tmp = getenv("TMPDIR");
    path = (tmp && *tmp) ? tmp : "/tmp";
    if (path.back() != '/') path += '/';
    path += "sly-agent-q-compile-XXXXXX";
    std::lock_guard lock(g_directories_mutex);
    made = mkdtemp(path.data()) != nullptr;
    if (made) g_directories.insert(path);
    path += '/';
  });
  return one_value(made ? make_lisp_string(path) : ECL_NIL);
}

cl_object remove_private_directory(cl_object path_object) {
  if (!ecl_stringp(path_object)) return one_value(ECL_NIL);
  std::string path = lisp_string_to_utf8(path_object);
  bool known = false;
  outside_lisp([&] {
    if (!path.empty() && path.back() == '/') path.pop_back();
    std::lock_guard lock(g_directories_mutex);
    known = g_directories.erase(path) > 0;
    if (known) remove_flat_directory(path.c_str());
  });
  return one_value(known ? ECL_T : ECL_NIL);
}

// (%COMPILER-KEEPER) → the path of sly-agent-q-run-compiler beside the
// file this code is in (the core module, or the MCP server), or NIL.
cl_object compiler_keeper() {
  std::string path;
  outside_lisp([&] {
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&compiler_keeper), &self) == 0 || self.dli_fname == nullptr) return;
    char* real = realpath(self.dli_fname, nullptr);
    if (!real) return;
    std::string file = real;
    std::free(real);
    std::string::size_type slash = file.rfind('/');
    if (slash == std::string::npos) return;
    std::string keeper = file.substr(0, slash + 1) + "sly-agent-q-run-compiler";
    if (access(keeper.c_str(), X_OK) == 0) path = std::move(keeper);
  });
  return one_value(path.empty() ? ECL_NIL : make_lisp_string(path));
}

}  // namespace

void define_compile_child_functions() {
  define_lisp_function("%FORK-COMPILE-CHILD", fork_compile_child);
  define_lisp_function("%MARK-LIVE-OBJECTS", mark_live_objects);
  define_lisp_function("%PREEXISTING-OBJECT-P", preexisting_object_p);
  define_lisp_function("%CHILD-EXIT", child_exit);
  define_lisp_function("%WAIT-CHILD", wait_child);
  define_lisp_function("%MAKE-PRIVATE-DIRECTORY", make_private_directory);
  define_lisp_function("%REMOVE-PRIVATE-DIRECTORY", remove_private_directory);
  define_lisp_function("%COMPILER-KEEPER", compiler_keeper);
}

}  // namespace agentq::ecl
