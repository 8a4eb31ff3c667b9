// mcp_tail N BUILD_DIR REPO_ROOT: the tail of `tools/call evaluate_lisp
// (+ 1 2)' for every MCP server at once, interleaved so that each sees the
// same noise.  It starts each server once, initializes it, warms it up,
// then calls them in turns (one call to each, round robin, the first one
// rotating) N times each: first quiet, then with one CPU kept busy by a
// spinning child process.  The servers:
//
//   floor_stdio     bench/null_responder: answers each line, does nothing
//   floor_http      bench/http_null_responder: the same over loopback HTTP
//   floor_ecl_stdio bench/ecl_responder: ECL reads, evaluates and prints
//                   (+ 1 2) per line on one thread, none of our work
//   headless_stdio  sly-agent-q-mcp, its own ECL, over pipes
//   headless_http   sly-agent-q-mcp --http 0
//   emacs_stdio     sly-agent-q-mcp --emacs SOCKET, against a batch Emacs
//                   serving MCP with the module (tests/mcp/serve-emacs.el)
//   emacs_http      sly-agent-q-mcp --emacs SOCKET --http 0, the same Emacs
//   cl_mcp_server   github.com/quasi/cl-mcp-server on SBCL, when
//                   $CL_MCP_SERVER_DIR names a checkout (it is in neither
//                   Debian nor npm); its tool is evaluate-lisp
//
// It prints, for each condition and server, p50, p90, p99, p99.9, max and
// the share of calls over 1 ms, the load average, each server's start
// (spawn to initialize answered) and first call, then the ratios against
// issue 40's targets: headless p99 <= 2x the floor's p99, --emacs p50 <=
// 3x headless's.  A server that cannot start says `unavailable (why)'.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kAnswerTimeoutMs = 30000;
constexpr auto kStartTimeout = std::chrono::seconds(90);

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// A child process; killed (SIGTERM, then SIGKILL) and reaped when destroyed.
struct Child {
  pid_t pid = -1;
  int in = -1, out = -1;  // our ends of its stdin and stdout, or -1
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(); }
  void stop() {
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    in = out = -1;
    if (pid <= 0) return;
    int status;
    for (int i = 0; i < 100; ++i) {  // closing stdin ends most of them
      if (::waitpid(pid, &status, WNOHANG) == pid) return (void)(pid = -1);
      if (i == 20) ::kill(pid, SIGTERM);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    pid = -1;
  }
};

// Starts ARGV with pipes for stdin (and stdout when PIPE_OUT, else
// /dev/null), stderr to ERR_FILE, ENV added to the environment.
std::unique_ptr<Child> spawn(const std::vector<std::string>& argv, bool pipe_out, const std::string& err_file,
                             const std::vector<std::string>& env = {}) {
  int in[2], out[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0 || (pipe_out && ::pipe2(out, O_CLOEXEC) != 0)) return nullptr;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  if (pipe_out) posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  else posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> environment(env);
  for (char** e = environ; *e; ++e) environment.emplace_back(*e);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  auto child = std::make_unique<Child>();
  int rc = ::posix_spawnp(&child->pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  if (pipe_out) ::close(out[1]);
  child->in = in[1];
  child->out = pipe_out ? out[0] : -1;
  if (rc != 0) {
    child->pid = -1;
    return nullptr;
  }
  return child;
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads more from FD into BUFFER, waiting at most kAnswerTimeoutMs.
bool read_more(int fd, std::string& buffer) {
  pollfd ready{fd, POLLIN, 0};
  int rc;
  do rc = ::poll(&ready, 1, kAnswerTimeoutMs);
  while (rc < 0 && errno == EINTR);
  if (rc <= 0) return false;
  char chunk[1 << 16];
  ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n <= 0) return false;
  buffer.append(chunk, static_cast<std::size_t>(n));
  return true;
}

std::string slurp(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Stats {
  std::vector<double> us;
  double at(double q) const {
    std::size_t i = std::min(us.size() - 1, static_cast<std::size_t>(q * static_cast<double>(us.size())));
    return us[i];
  }
};

struct Server {
  std::string name;
  bool http = false;
  bool initialize = true;                  // the floors are not MCP servers
  std::string tool = "evaluate_lisp";
  std::vector<std::string> argv, env;
  std::string unavailable;                 // why not, when it is not measured
  std::unique_ptr<Child> child;
  std::string err_file, token_file;
  std::string pending;                     // stdio: bytes after the last answer
  int sock = -1, port = 0;                 // http
  std::string token, session, host;
  long next_id = 0;
  double ready_ms = 0, first_call_us = 0;
  Stats quiet, busy;

  ~Server() {
    if (sock >= 0) ::close(sock);
  }

  void fail(std::string why) {
    std::replace(why.begin(), why.end(), '\n', ' ');
    if (unavailable.empty()) unavailable = std::move(why);
    if (sock >= 0) ::close(sock);
    sock = -1;
    if (child) child->stop();
  }

  // stdio: one line in, one line back.
  bool stdio_exchange(const std::string& line, std::string* answer) {
    if (!write_all(child->in, line + "\n")) return false;
    if (!answer) return true;
    for (;;) {
      if (auto nl = pending.find('\n'); nl != std::string::npos) {
        answer->assign(pending, 0, nl);
        pending.erase(0, nl + 1);
        return true;
      }
      if (!read_more(child->out, pending)) return false;
    }
  }

  // http: one POST, its answer's body (and the session it names).
  bool http_exchange(const std::string& body, std::string* answer) {
    std::string request = "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + token +
                          "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
    if (!session.empty()) request += "Mcp-Session-Id: " + session + "\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (!write_all(sock, request)) return false;
    std::size_t end;
    while ((end = pending.find("\r\n\r\n")) == std::string::npos)
      if (!read_more(sock, pending)) return false;
    std::string head = pending.substr(0, end);
    std::string lowered = head;
    for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto length_at = lowered.find("content-length:");
    if (length_at == std::string::npos) return false;  // an SSE stream: not asked for
    std::size_t length = std::strtoul(lowered.c_str() + length_at + 15, nullptr, 10);
    if (auto at = lowered.find("mcp-session-id:"); at != std::string::npos && session.empty()) {
      std::size_t from = head.find_first_not_of(' ', at + 15);
      session = head.substr(from, head.find("\r\n", from) - from);
    }
    while (pending.size() < end + 4 + length)
      if (!read_more(sock, pending)) return false;
    if (answer) answer->assign(pending, end + 4, length);
    pending.erase(0, end + 4 + length);
    return true;
  }

  bool exchange(const std::string& message, std::string* answer) {
    return http ? http_exchange(message, answer) : stdio_exchange(message, answer);
  }

  std::string call_message() {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(++next_id) + R"(,"method":"tools/call","params":{"name":")" +
           tool + R"json(","arguments":{"code":"(+ 1 2)"}}})json";
  }

  // One call, timed; false (and unavailable) when it went wrong.
  bool call(double* us, bool check = false) {
    std::string message = call_message(), answer;
    auto start = Clock::now();
    bool ok = exchange(message, &answer);
    auto end = Clock::now();
    if (!ok) {
      fail("stopped answering");
      return false;
    }
    if (check && answer.find("=> 3") == std::string::npos) {
      fail("unexpected answer: " + answer.substr(0, 200));
      return false;
    }
    if (us) *us = micros(end - start);
    // MCP_TAIL_TRACE=FILE: every call's server, start (steady clock, s) and
    // time, to line slow calls up with a scheduler trace (perf sched
    // record -k CLOCK_MONOTONIC).
    static FILE* trace = [] {
      const char* path = std::getenv("MCP_TAIL_TRACE");
      return path && *path ? std::fopen(path, "w") : nullptr;
    }();
    if (trace)
      std::fprintf(trace, "%s %.6f %.1f\n", name.c_str(),
                   std::chrono::duration<double>(start.time_since_epoch()).count(), micros(end - start));
    return true;
  }

  // Spawns, connects, initializes.
  void start(const std::string& tmp) {
    err_file = tmp + "/" + name + ".err";
    auto began = Clock::now();
    child = spawn(argv, !http || !initialize, err_file, env);
    if (!child) return fail("cannot start " + argv[0]);
    if (http) {
      if (initialize) {
        // sly-agent-q-mcp says its URL on stderr once it serves.
        std::string err;
        while ((err = slurp(err_file)).find("/mcp\n") == std::string::npos) {
          int status;
          if (::waitpid(child->pid, &status, WNOHANG) == child->pid) {
            child->pid = -1;
            return fail("exited: " + err.substr(0, 300));
          }
          if (Clock::now() - began > kStartTimeout) return fail("did not serve within 90 s");
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        auto at = err.find("http://127.0.0.1:");
        port = std::atoi(err.c_str() + at + 17);
        std::ifstream in(token_file);
        in >> token;
      } else {
        std::string line;
        while (line.find('\n') == std::string::npos)
          if (!read_more(child->out, line)) return fail("printed no port");
        port = std::atoi(line.c_str());
      }
      host = "127.0.0.1:" + std::to_string(port);
      sock = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(static_cast<std::uint16_t>(port));
      if (::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
        return fail("cannot connect to port " + std::to_string(port));
      int yes = 1;
      ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    }
    if (initialize) {
      std::string answer;
      if (!exchange(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
                    R"("capabilities":{},"clientInfo":{"name":"mcp_tail","version":"1"}}})",
                    &answer) ||
          answer.find("\"result\"") == std::string::npos)
        return fail("initialize failed: " + answer.substr(0, 200) + slurp(err_file).substr(0, 300));
      std::string ignored;
      if (!exchange(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", http ? &ignored : nullptr))
        return fail("notifications/initialized failed");
    }
    ready_ms = micros(Clock::now() - began) / 1000;
    call(&first_call_us, true);
  }
};

// A child that keeps one CPU busy until killed.
struct Spinner {
  pid_t pid = ::fork();
  Spinner() {
    if (pid == 0) {
      volatile unsigned long n = 0;
      for (;;) n = n + 1;
    }
  }
  ~Spinner() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

void run_condition(std::vector<Server*>& servers, long n, long warm, bool busy) {
  std::vector<Server*> live;
  for (Server* s : servers)
    if (s->unavailable.empty()) live.push_back(s);
  for (long round = 0; round < warm + n; ++round) {
    for (std::size_t k = 0; k < live.size(); ++k) {
      Server* s = live[(static_cast<std::size_t>(round) + k) % live.size()];
      if (!s->unavailable.empty()) continue;
      double us;
      if (!s->call(&us)) continue;
      if (round >= warm) (busy ? s->busy : s->quiet).us.push_back(us);
    }
  }
}

void report(const char* condition, const std::vector<Server*>& servers, bool busy) {
  for (const Server* s : servers) {
    if (!s->unavailable.empty()) {
      std::printf("bench: mcp_tail %-5s %-15s unavailable (%s)\n", condition, s->name.c_str(), s->unavailable.c_str());
      continue;
    }
    Stats stats = busy ? s->busy : s->quiet;
    if (stats.us.empty()) continue;
    std::sort(stats.us.begin(), stats.us.end());
    std::size_t over = static_cast<std::size_t>(
        std::count_if(stats.us.begin(), stats.us.end(), [](double us) { return us > 1000; }));
    std::printf("bench: mcp_tail %-5s %-15s p50_us=%.0f p90_us=%.0f p99_us=%.0f p99.9_us=%.0f max_us=%.0f "
                "over_1ms=%.2f%% calls=%zu\n",
                condition, s->name.c_str(), stats.at(0.5), stats.at(0.9), stats.at(0.99), stats.at(0.999),
                stats.us.back(), 100.0 * static_cast<double>(over) / static_cast<double>(stats.us.size()),
                stats.us.size());
  }
}

std::optional<double> percentile(const Server& s, bool busy, double q) {
  if (!s.unavailable.empty()) return std::nullopt;
  Stats stats = busy ? s.busy : s.quiet;
  if (stats.us.empty()) return std::nullopt;
  std::sort(stats.us.begin(), stats.us.end());
  return stats.at(q);
}

void ratio(const char* condition, const Server& a, const Server& b, double q, const char* what, double target) {
  const bool busy = std::strcmp(condition, "busy") == 0;
  auto x = percentile(a, busy, q), y = percentile(b, busy, q);
  if (!x || !y) {
    std::printf("ratio: mcp_tail %-5s %s %s / %s unavailable\n", condition, what, a.name.c_str(), b.name.c_str());
    return;
  }
  std::printf("ratio: mcp_tail %-5s %s %s %.0f us / %s %.0f us = %.2f (target <= %g) %s\n", condition, what,
              a.name.c_str(), *x, b.name.c_str(), *y, *x / *y, target, *x / *y <= target ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: mcp_tail N BUILD_DIR REPO_ROOT\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  const long n = std::atol(argv[1]);
  const long warm = std::max(50L, n / 10);
  const std::string build = argv[2], root = argv[3];
  char tmp_template[] = "/tmp/mcp_tail.XXXXXX";
  if (!::mkdtemp(tmp_template)) return 1;
  const std::string tmp = tmp_template;
  const std::string mcp = build + "/sly-agent-q-mcp";
  const std::string socket = tmp + "/emacs.sock";

  // The Emacs the --emacs servers forward to.
  std::unique_ptr<Child> emacs;
  std::string emacs_missing;
  double emacs_ready_ms = 0;
  {
    auto began = Clock::now();
    emacs = spawn({"emacs", "-Q", "--batch", "-L", root + "/elisp", "-l", root + "/tests/mcp/serve-emacs.el"}, false,
                  tmp + "/emacs.err",
                  {"AGENTQ_MCP_SOCKET=" + socket, "SLY_AGENT_Q_MODULE=" + build + "/sly-agent-q-module.so"});
    struct stat st{};
    while (emacs && ::stat(socket.c_str(), &st) != 0) {
      int status;
      if (::waitpid(emacs->pid, &status, WNOHANG) == emacs->pid) {
        emacs->pid = -1;
        emacs_missing = "Emacs exited: " + slurp(tmp + "/emacs.err").substr(0, 200);
        std::replace(emacs_missing.begin(), emacs_missing.end(), '\n', ' ');
        break;
      }
      if (Clock::now() - began > kStartTimeout) {
        emacs_missing = "Emacs did not serve MCP within 90 s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!emacs) emacs_missing = "no emacs on the PATH";
    emacs_ready_ms = micros(Clock::now() - began) / 1000;
  }

  std::vector<std::unique_ptr<Server>> owned;
  auto add = [&](std::string name, bool http, std::vector<std::string> args) -> Server& {
    owned.push_back(std::make_unique<Server>());
    Server& s = *owned.back();
    s.name = std::move(name);
    s.http = http;
    s.argv = std::move(args);
    return s;
  };
  add("floor_stdio", false, {build + "/null_responder"}).initialize = false;
  add("floor_http", true, {build + "/http_null_responder"}).initialize = false;
  // What any server on ECL pays: ECL reads, evaluates and prints (+ 1 2)
  // for each line on its one thread, none of our work (the ECL floor).
  add("floor_ecl_stdio", false, {build + "/ecl_responder"}).initialize = false;
  add("headless_stdio", false, {mcp});
  Server& headless_http = add("headless_http", true, {mcp, "--http", "0", "--http-token-file", tmp + "/h.token"});
  headless_http.token_file = tmp + "/h.token";
  Server& emacs_stdio = add("emacs_stdio", false, {mcp, "--emacs", socket});
  Server& emacs_http =
      add("emacs_http", true, {mcp, "--emacs", socket, "--http", "0", "--http-token-file", tmp + "/e.token"});
  emacs_http.token_file = tmp + "/e.token";
  if (!emacs_missing.empty()) emacs_stdio.unavailable = emacs_http.unavailable = emacs_missing;
  Server& cl = add("cl_mcp_server", false, {"sbcl", "--script"});
  cl.tool = "evaluate-lisp";
  const char* cl_dir = std::getenv("CL_MCP_SERVER_DIR");
  struct stat st{};
  if (!cl_dir || !*cl_dir)
    cl.unavailable = "not in Debian or npm: set CL_MCP_SERVER_DIR to a checkout of github.com/quasi/cl-mcp-server";
  else if (::stat((std::string(cl_dir) + "/run-server.lisp").c_str(), &st) != 0)
    cl.unavailable = std::string("no run-server.lisp in ") + cl_dir;
  else if (std::system("command -v sbcl >/dev/null 2>&1") != 0)
    cl.unavailable = "sbcl not installed (bench/install-peers.sh installs it)";
  else
    cl.argv.push_back(std::string(cl_dir) + "/run-server.lisp");

  // MCP_TAIL_EXTRA="NAME|BINARY|ENV=V ENV=V;...": more headless servers
  // (over HTTP when NAME ends in _http, else stdio), in the same turns: another build, or the same with a setting,
  // to compare before and after under the same noise.
  if (const char* extra = std::getenv("MCP_TAIL_EXTRA")) {
    std::stringstream entries(extra);
    std::string entry;
    while (std::getline(entries, entry, ';')) {
      std::stringstream fields(entry);
      std::string name, binary, env_text, var;
      std::getline(fields, name, '|');
      std::getline(fields, binary, '|');
      std::getline(fields, env_text);
      if (name.empty() || binary.empty()) continue;
      // A name ending in _http: served over --http 0.
      const bool http = name.size() > 5 && name.ends_with("_http");
      Server& s = http ? add(name, true, {binary, "--http", "0", "--http-token-file", tmp + "/" + name + ".token"})
                       : add(name, false, {binary});
      if (http) s.token_file = tmp + "/" + name + ".token";
      std::stringstream vars(env_text);
      while (vars >> var) s.env.push_back(var);
    }
  }
  // MCP_TAIL_ONLY=name,name...: only those (a comparison of a few).
  const char* only = std::getenv("MCP_TAIL_ONLY");
  for (auto& s : owned)
    if (only && *only && ("," + std::string(only) + ",").find("," + s->name + ",") == std::string::npos)
      s->unavailable = "not in MCP_TAIL_ONLY";
  std::vector<Server*> servers;
  for (auto& s : owned) servers.push_back(s.get());
  for (Server* s : servers)
    if (s->unavailable.empty()) s->start(tmp);
  if (emacs_missing.empty()) std::printf("bench: mcp_tail emacs_serving_ms=%.0f (batch Emacs, module loaded)\n", emacs_ready_ms);
  for (Server* s : servers)
    if (s->unavailable.empty())
      std::printf("bench: mcp_tail start %-15s ready_ms=%.1f first_call_us=%.0f\n", s->name.c_str(), s->ready_ms,
                  s->first_call_us);

  const std::string load_before = loadavg();
  run_condition(servers, n, warm, false);
  std::printf("bench: mcp_tail quiet loadavg=%s (before) %s (after), %ld calls each, interleaved\n",
              load_before.c_str(), loadavg().c_str(), n);
  report("quiet", servers, false);
  {
    Spinner spinner;
    const std::string busy_before = loadavg();
    run_condition(servers, n, warm, true);
    std::printf("bench: mcp_tail busy  loadavg=%s (before) %s (after), one CPU kept busy by a spinning process\n",
                busy_before.c_str(), loadavg().c_str());
  }
  report("busy", servers, true);
  Server& floor_stdio = *owned[0];
  Server& floor_http = *owned[1];
  Server& floor_ecl = *owned[2];
  Server& headless_stdio = *owned[3];
  for (const char* condition : {"quiet", "busy"}) {
    ratio(condition, headless_stdio, floor_stdio, 0.99, "p99", 2);
    // Whether the target is above this machine's floor for a server on ECL.
    ratio(condition, floor_ecl, floor_stdio, 0.99, "p99", 2);
    ratio(condition, headless_http, floor_http, 0.99, "p99", 2);
    ratio(condition, emacs_stdio, headless_stdio, 0.5, "p50", 3);
    ratio(condition, emacs_http, headless_http, 0.5, "p50", 3);
  }
  for (Server* s : servers)
    if (s->child) s->child->stop();
  if (emacs) emacs->stop();
  std::string cleanup = "rm -rf '" + tmp + "'";
  [[maybe_unused]] int rc = std::system(cleanup.c_str());
  return 0;
}
