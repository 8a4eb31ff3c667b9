// sly-agent-q-mcp: the MCP server over stdio, headless (no Emacs): its own
// ECL with the Lisp-side tools, the same registry, executor and
// dispatcher as the Emacs module (app/services).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <string>
#include <vector>

#include "agentq_version.hpp"
#include "app/services.hpp"
#include "mcp/approval.hpp"
#include "mcp/emacs_bridge.hpp"
#include "mcp/emacs_session.hpp"
#include "mcp/headless_session.hpp"
#include "mcp/http_request.hpp"
#include "mcp/http_server.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/line_writer.hpp"
#include "mcp/log.hpp"
#include "mcp/options.hpp"
#include "mcp/protocol_fds.hpp"
#include "mcp/stdio_server.hpp"
#include "sys/scheduler_slice.hpp"

namespace {

using namespace agentq;
using namespace agentq::mcp;

// A client that goes away is an EPIPE for the writer, not the end of the
// process.  Blocked before any thread starts, so every thread inherits it;
// child processes get an empty mask (ecl/child_signals).
void block_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The signals that end the HTTP server, blocked in every thread (before
// any starts) and read from a signalfd by the main thread.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// TOKEN into FILE, mode 0600 (its directory made 0700 when missing).
void write_token_file(const std::string& file, const std::string& token) {
  namespace fs = std::filesystem;
  fs::path parent = fs::path(file).parent_path();
  if (!parent.empty() && !fs::exists(parent)) {
    fs::create_directories(parent);
    fs::permissions(parent, fs::perms::owner_all, fs::perm_options::replace);
  }
  // Nobody else may swap the file in a directory that is not the user's own.
  struct stat directory{};
  if (::stat(parent.empty() ? "." : parent.c_str(), &directory) < 0 || directory.st_uid != ::getuid() ||
      (directory.st_mode & 022) != 0)
    throw std::runtime_error("the token file's directory " + parent.string() +
                             " must be yours and writable by nobody else (chmod 700)");
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) throw std::system_error(errno, std::generic_category(), "cannot write the token file " + file);
  // A file already there that is not ours cannot be made 0600: refused.
  if (::fchmod(fd.get(), 0600) < 0) throw std::system_error(errno, std::generic_category(), "chmod " + file);
  std::string text = token + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::system_error(errno, std::generic_category(), "cannot write the token file " + file);
}

// Serves MCP over HTTP, each session made by MAKE_SESSION, until a stop
// signal, or the end of stdin when it is a pipe or a socket (the process
// that started this one went away).
int serve_http(const Options& options, const ProtocolFds& fds, HttpServer::SessionFactory make_session,
               std::optional<InlineLisp> inline_lisp = std::nullopt) {
  HttpServerOptions http;
  http.port = *options.http_port;
  std::unique_ptr<HttpServer> server;
  const std::string token_file =
      options.http_token_file.empty() ? default_http_token_file() : options.http_token_file;
  try {
    http.token = random_hex(32);
    // Bound first: a port in use leaves the token file of whoever has it.
    server = std::make_unique<HttpServer>(http, std::move(make_session));
    write_token_file(token_file, http.token);
  } catch (const std::exception& e) {
    log(LogLevel::Error, e.what());
    return 1;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(server->port()) + "/mcp";
  // Whatever the log level: these lines are what the user needs.
  std::fprintf(stderr,
               "sly-agent-q-mcp: serving MCP (Streamable HTTP) at %s\n"
               "sly-agent-q-mcp: bearer token in %s\n"
               "sly-agent-q-mcp: claude mcp add --transport http sly-agent-q %s --header \"Authorization: Bearer %s\"\n",
               url.c_str(), token_file.c_str(), url.c_str(), http.token.c_str());
  std::fflush(stderr);
  if (inline_lisp) server->use_inline_lisp(std::move(*inline_lisp));
  server->start();

  sigset_t signals = stop_signals();
  UniqueFd signal_fd(::signalfd(-1, &signals, SFD_CLOEXEC));
  struct stat in_stat{};
  const bool watch_in = ::fstat(fds.in.get(), &in_stat) == 0 && (S_ISFIFO(in_stat.st_mode) || S_ISSOCK(in_stat.st_mode));
  for (;;) {
    pollfd ready[2] = {{signal_fd.get(), POLLIN, 0}, {watch_in ? fds.in.get() : -1, POLLIN, 0}};
    int rc = ::poll(ready, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) break;
    if (ready[0].revents) {
      signalfd_siginfo info{};
      [[maybe_unused]] ssize_t n = ::read(signal_fd.get(), &info, sizeof info);
      log(LogLevel::Info, "signal " + std::to_string(info.ssi_signo) + ": stopping");
      break;
    }
    if (ready[1].revents) {
      char buffer[4096];
      ssize_t n = ::read(fds.in.get(), buffer, sizeof buffer);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        log(LogLevel::Info, "end of stdin: stopping");
        break;
      }
    }
  }
  server->stop();
  ::unlink(token_file.c_str());
  return 0;
}

// --emacs: forward to Emacs; no Lisp boots in this process.
int bridge(const Options& options, const ProtocolFds& fds) {
  log(LogLevel::Info, "sly-agent-q-mcp " + std::string(kVersion) + ": forwarding to Emacs at " + options.emacs_socket);
  // Emacs decides those: its approval function, its allowed directories.
  if (options.allow_dangerous)
    log(LogLevel::Warn, "--allow-dangerous does nothing with --emacs: Emacs asks you (sly-agent-q-approval-function)");
  if (!options.roots.empty())
    log(LogLevel::Warn, "--root does nothing with --emacs: Emacs has sly-agent-q-allowed-directories");
  BridgeOptions bridge_options;
  bridge_options.socket = options.emacs_socket;
  bridge_options.timeout = std::chrono::milliseconds(static_cast<long long>(options.emacs_timeout_s * 1000));
  if (options.http_port) {
    // Each HTTP session its own bridge, so its own connection to Emacs.
    int status = serve_http(options, fds, [bridge_options]() -> std::unique_ptr<McpSession> {
      return std::make_unique<EmacsSession>(bridge_options);
    });
    log(LogLevel::Info, "done");
    return status;
  }
  LineWriter out(fds.out.get());
  EmacsBridge(bridge_options, fds.in.get(), out).run();
  log(LogLevel::Info, "done");
  return 0;
}

// Headless: this process's own ECL and the Lisp-side tools.
int headless(const Options& options, const ProtocolFds& fds) {
  app::Services& services = app::services_with_tools();
  app::LispStatus status = services.lisp.status();
  if (!status.alive)
    log(LogLevel::Error, "the Lisp runtime did not boot: only the tools that need no Lisp will work");
  log(LogLevel::Info, "sly-agent-q-mcp " + std::string(kVersion) + ": " + std::to_string(services.registry.size()) +
                          " tools, Lisp booted in " + std::to_string(static_cast<int>(status.boot_ms)) + " ms" +
                          (options.allow_dangerous ? ", dangerous tools allowed" : ", dangerous tools denied"));
  // No tool that runs headless reads files by the allowed directories yet
  // (the file tools are Emacs's): kept for them, and said.
  if (!options.roots.empty()) log(LogLevel::Info, "allowed directories: " + joined(options.roots));

  ExecutionOptions execution;
  execution.approve = headless_approval(options.allow_dangerous);
  app::Lisp& lisp = services.lisp;
  const InlineLisp inline_lisp{[&lisp](IdleReader* reader) { lisp.set_idle_reader(reader); },
                               [&lisp] { return lisp.claim_inline_job(); }, [&lisp] { lisp.idle_reader_changed(); },
                               [&lisp] { return lisp.worker_idle(); }};
  if (options.http_port) {
    int status = serve_http(
        options, fds,
        [&services, execution, &options]() -> std::unique_ptr<McpSession> {
          return std::make_unique<HeadlessSession>(services.server, execution,
                                                   [&services](std::uint64_t job) { services.lisp.cancel(job); },
                                                   options.allow_dangerous);
        },
        options.inline_lisp ? std::optional<InlineLisp>(inline_lisp) : std::nullopt);
    services.lisp.shutdown();
    log(LogLevel::Info, "done");
    return status;
  }
  LineWriter out(fds.out.get());
  LineReader in(fds.in.get(), kMaxLineBytes);
  {
    StdioServer server(services.server, std::move(execution),
                       [&services](std::uint64_t job) { services.lisp.cancel(job); }, out,
                       options.allow_dangerous);
    if (options.inline_lisp) server.use_inline_lisp(inline_lisp);
    server.run(in);
  }
  services.lisp.shutdown();
  log(LogLevel::Info, "done");
  return 0;
}

int serve(const Options& options) {
  set_log_level(options.log_level);
  block_sigpipe();
  // Before any thread starts: they inherit it.
  if (options.sched_slice_us > 0) {
    std::string why;
    if (!request_scheduler_slice(std::chrono::microseconds(options.sched_slice_us), why))
      log(LogLevel::Info, "the kernel keeps its own scheduler slice (" + why + ")");
  }
  if (options.http_port) {
    sigset_t signals = stop_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  }
  ProtocolFds fds;
  try {
    fds = take_protocol_fds();
  } catch (const std::exception& e) {
    log(LogLevel::Error, e.what());
    return 1;
  }
  return options.emacs ? bridge(options, fds) : headless(options, fds);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  CommandLine command = parse_command_line(args);
  switch (command.action) {
    case CommandLine::Action::Help:
      std::fputs(usage().c_str(), stdout);
      return 0;
    case CommandLine::Action::Version:
      std::printf("sly-agent-q-mcp %.*s\n", static_cast<int>(kVersion.size()), kVersion.data());
      return 0;
    case CommandLine::Action::Fail:
      std::fprintf(stderr, "sly-agent-q-mcp: %s\nTry 'sly-agent-q-mcp --help'.\n", command.error.c_str());
      return 2;
    case CommandLine::Action::Serve:
      break;
  }
  return serve(command.options);
}
