// sly-agent-q-mcp: the MCP server over stdio, headless (no Emacs): its own
// ECL with the Lisp-side tools, the same registry, executor and
// dispatcher as the Emacs module (app/services).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "agentq_version.hpp"
#include "app/services.hpp"
#include "mcp/approval.hpp"
#include "mcp/emacs_bridge.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/line_writer.hpp"
#include "mcp/log.hpp"
#include "mcp/options.hpp"
#include "mcp/protocol_fds.hpp"
#include "mcp/stdio_server.hpp"

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
  LineWriter out(fds.out.get());
  LineReader in(fds.in.get(), kMaxLineBytes);
  {
    StdioServer server(services.server, std::move(execution),
                       [&services](std::uint64_t job) { services.lisp.cancel(job); }, out,
                       options.allow_dangerous);
    server.run(in);
  }
  services.lisp.shutdown();
  log(LogLevel::Info, "done");
  return 0;
}

int serve(const Options& options) {
  set_log_level(options.log_level);
  block_sigpipe();
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
