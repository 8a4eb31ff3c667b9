// sly-agent-q-run-compiler PROGRAM ARGS...: runs the C compiler ECL asks
// for (gcc, and the cc1, as and ld it starts) so that it ends with the
// process that asked, however that one ends.
//
// ECL's native compiler runs gcc as a child of Emacs (or of the MCP
// server).  Killed (SIGKILL, or SIGTERM to the MCP server), that process
// left gcc running on for up to 40 s, reparented to init, and the files it
// and ECL were writing (/tmp/ecl*.c, .eclh, .data, .o, .tmp) behind.  So
// ECL runs this instead (tiering.lisp,
// USE-COMPILER-KEEPER: its *CC* and *LD*, so this program gets gcc's
// arguments and runs the compiler named in SLY_AGENT_Q_CC), which:
// - puts the compiler in a process group of its own (with the cc1, as and
//   ld it starts);
// - asks the kernel for SIGTERM when the thread that started it ends
//   (PR_SET_PDEATHSIG: that thread ends with its process);
// - on SIGTERM, SIGINT or SIGHUP, sends SIGTERM to that group (gcc's driver
//   removes its own temporary files then), waits up to 0.2 s, kills what
//   is left, removes ECL's files of the compile (the source named by -c and
//   the files beside it with the same stem, the -o output, and the compile
//   child's private directory they may lie in) and exits 143.
// Otherwise it waits for the compiler and exits with its status.
//
// Only async-signal-safe calls after the start: the handler may run at
// any point.

#include <errno.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <initializer_list>

#include "ecl/flat_directory.hpp"

namespace {

constexpr int kMaxPath = 4096;
// ECL writes STEM.c, STEM.eclh, STEM.data, then gcc STEM.o (or the -o
// file); STEM.tmp is ECL's fasl under construction.
constexpr const char* kStemSuffixes[] = {".c", ".eclh", ".data", ".o", ".tmp", ".fas"};
constexpr const char* kPrivatePrefix = "sly-agent-q-compile-";
char g_stem[kMaxPath];    // the -c source without ".c", or empty
char g_output[kMaxPath];  // the -o file, or empty
volatile pid_t g_compiler = 0;

bool copy(char* to, const char* from, size_t size) {
  size_t length = strlen(from);
  if (length + 8 >= size) return false;
  memcpy(to, from, length + 1);
  return true;
}

// The directory of the stem, when it is one of the compile child's private
// ones (tiering.lisp), which holds nothing else: emptied and removed.
void remove_private_directory() {
  const char* slash = strrchr(g_stem, '/');
  if (!slash) return;
  char directory[kMaxPath];
  size_t length = static_cast<size_t>(slash - g_stem);
  memcpy(directory, g_stem, length);
  directory[length] = '\0';
  const char* base = strrchr(directory, '/');
  if (!base || strncmp(base + 1, kPrivatePrefix, strlen(kPrivatePrefix)) != 0) return;
  agentq::ecl::remove_flat_directory(directory);
}

void remove_files() {
  if (g_output[0]) unlink(g_output);
  if (!g_stem[0]) return;
  char path[kMaxPath + 8];
  size_t stem = strlen(g_stem);
  memcpy(path, g_stem, stem + 1);
  // ECL's own temporary name (/tmp/eclXXXXXX), made with mkstemp: that
  // file too.  A COMPILE-FILE's stem is the user's file's name.
  const char* base = strrchr(g_stem, '/');
  base = base ? base + 1 : g_stem;
  const bool temporary = strncmp(base, "ecl", 3) == 0;
  if (temporary) unlink(path);
  for (const char* suffix : kStemSuffixes) {
    if (!temporary && strcmp(suffix, ".fas") == 0) continue;
    size_t length = strlen(suffix);
    memcpy(path + stem, suffix, length + 1);
    unlink(path);
  }
  remove_private_directory();
}

void pause_ms(long ms) {
  timespec pause{0, ms * 1000000L};
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
}

void end_compile(int) {
  const pid_t group = g_compiler;
  if (group > 0) {
    kill(-group, SIGTERM);  // gcc's driver removes its temporary files
    for (int i = 0; i < 20; ++i) {
      int status = 0;
      if (waitpid(group, &status, WNOHANG) == group) break;
      pause_ms(10);
    }
    kill(-group, SIGKILL);  // cc1, as, ld: whatever is left of the group
  }
  remove_files();
  _exit(143);
}

}  // namespace

int main(int argc, char** argv) {
  // ECL's *CC* (and *LD*) is this program: the compiler's arguments come
  // first, and the compiler itself from SLY_AGENT_Q_CC (tiering.lisp,
  // USE-COMPILER-KEEPER).
  const char* compiler = nullptr;
  if (argc >= 2 && argv[1][0] == '-') {
    compiler = getenv("SLY_AGENT_Q_CC");
    if (!compiler || !*compiler) compiler = "gcc";
  }
  if (argc < 2) {
    static const char usage[] = "usage: sly-agent-q-run-compiler PROGRAM [ARGS...]\n";
    (void)!write(2, usage, sizeof usage - 1);
    return 2;
  }
  const pid_t parent = getppid();
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "-c") == 0) {
      const char* source = argv[i + 1];
      size_t length = strlen(source);
      if (length > 2 && strcmp(source + length - 2, ".c") == 0 && copy(g_stem, source, sizeof g_stem))
        g_stem[length - 2] = '\0';
    } else if (strcmp(argv[i], "-o") == 0) {
      copy(g_output, argv[i + 1], sizeof g_output);
    }
  }
  struct sigaction action {};
  action.sa_handler = end_compile;
  sigfillset(&action.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &action, nullptr);
  sigset_t unblocked;
  sigemptyset(&unblocked);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&unblocked, sig);
  sigprocmask(SIG_UNBLOCK, &unblocked, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) return 143;  // already gone

  // Held back until the compiler's pid is known to the handler.
  sigprocmask(SIG_BLOCK, &unblocked, nullptr);
  const pid_t child = fork();
  if (child < 0) return 127;
  if (child == 0) {
    setpgid(0, 0);
    // The compiler gets the signals' defaults and an empty mask.
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (compiler) {
      argv[0] = const_cast<char*>(compiler);
      execvp(compiler, argv);
    } else {
      execvp(argv[1], argv + 1);
    }
    _exit(127);
  }
  setpgid(child, child);  // also here: no moment when a signal finds it in ours
  g_compiler = child;
  sigprocmask(SIG_UNBLOCK, &unblocked, nullptr);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
