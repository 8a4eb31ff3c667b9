// The command line of sly-agent-q-mcp.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mcp/log.hpp"

namespace agentq::mcp {

struct Options {
  bool allow_dangerous = false;    // --allow-dangerous: dangerous tools run without asking
  std::vector<std::string> roots;  // --root DIR…: absolute, existing directories, in order given
  LogLevel log_level = LogLevel::Warn;
  // --emacs [SOCKET]: forward to the Emacs serving MCP there (no Lisp here).
  bool emacs = false;
  std::string emacs_socket;   // the default socket when --emacs names none
  double emacs_timeout_s = 30;  // --emacs-timeout SECONDS
  // --http PORT: serve MCP's Streamable HTTP on 127.0.0.1:PORT (0: a free
  // port) instead of stdio.
  std::optional<int> http_port;
  std::string http_token_file;  // --http-token-file FILE; default_http_token_file() when empty
  // --sched-slice MICROSECONDS: the scheduler slice asked for (Linux 6.12+),
  // so that a call waking beside a busy CPU's other work may run sooner;
  // 0 (the default) leaves the kernel's.
  int sched_slice_us = 0;
  // Headless over stdio, the Lisp worker reads the input itself while
  // idle and runs a plain evaluate_lisp call there (mcp/stdio_server.hpp);
  // --no-inline-lisp: every call is handed to it by the reading thread.
  bool inline_lisp = true;
};

struct CommandLine {
  enum class Action { Serve, Help, Version, Fail };
  Action action = Action::Serve;
  Options options;
  std::string error;  // what is wrong, when Fail
};

// ARGS without the program name.  Never throws for bad input: a problem
// is Action::Fail with the reason.
CommandLine parse_command_line(std::span<const std::string> args);

// Where the bearer token of --http is written by default: beside the
// default Emacs socket (sly-agent-q/http-token under $XDG_RUNTIME_DIR,
// else under /tmp/sly-agent-q-UID).
std::string default_http_token_file();

// The --help text.
std::string usage();

}  // namespace agentq::mcp
