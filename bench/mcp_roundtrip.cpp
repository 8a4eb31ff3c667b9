// mcp_roundtrip N COMMAND [ARG...]: starts COMMAND with pipes for its stdin
// and stdout, sends it N MCP requests `tools/call evaluate_lisp (+ 1 2)' one
// at a time (each after the last one's answer), after N/10 unmeasured ones,
// and prints one line:
//   p50_us=… p90_us=… p99_us=… mean_us=… calls=N
// The same client times bench/null_responder, which answers without any
// work, so the pipe-and-client floor is measured in the same run.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

int in_fd = -1, out_fd = -1;
std::string pending;  // bytes read after the last answer's newline

bool send_all(const std::string& line) {
  std::size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(in_fd, line.data() + done, line.size() - done);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads up to and including the next newline; false at the end.
bool read_answer(std::string& answer) {
  char chunk[1 << 16];
  for (;;) {
    if (auto nl = pending.find('\n'); nl != std::string::npos) {
      answer.assign(pending, 0, nl);
      pending.erase(0, nl + 1);
      return true;
    }
    ssize_t n = ::read(out_fd, chunk, sizeof chunk);
    if (n <= 0) return false;
    pending.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: mcp_roundtrip N COMMAND [ARG...]\n");
    return 2;
  }
  const long n = std::atol(argv[1]);
  int in[2], out[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0) return 1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, in[1]);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  pid_t pid;
  if (::posix_spawn(&pid, argv[2], &actions, nullptr, argv + 2, environ) != 0) {
    std::perror("posix_spawn");
    return 1;
  }
  ::close(in[0]);
  ::close(out[1]);
  in_fd = in[1];
  out_fd = out[0];
  ::signal(SIGPIPE, SIG_IGN);

  std::string answer;
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(n));
  const long warm = std::max(100L, n / 10);
  for (long i = 0; i < warm + n; ++i) {
    std::string line = R"({"jsonrpc":"2.0","id":)" + std::to_string(i) +
                       R"json(,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}})json"
                       "\n";
    auto start = std::chrono::steady_clock::now();
    if (!send_all(line) || !read_answer(answer)) {
      std::fprintf(stderr, "mcp_roundtrip: the server stopped after %ld calls\n", i);
      return 1;
    }
    auto end = std::chrono::steady_clock::now();
    if (i == 0 && answer.find("=> 3") == std::string::npos) {
      std::fprintf(stderr, "mcp_roundtrip: unexpected answer: %.300s\n", answer.c_str());
      return 1;
    }
    if (i >= warm) times.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  ::close(in_fd);
  int status;
  ::waitpid(pid, &status, 0);
  std::sort(times.begin(), times.end());
  auto at = [&](double q) { return times[static_cast<std::size_t>(q * static_cast<double>(times.size() - 1))]; };
  double sum = 0;
  for (double t : times) sum += t;
  std::printf("p50_us=%.1f p90_us=%.1f p99_us=%.1f mean_us=%.1f calls=%ld\n", at(0.5), at(0.9), at(0.99),
              sum / static_cast<double>(times.size()), n);
  return 0;
}
