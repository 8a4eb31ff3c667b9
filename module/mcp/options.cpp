#include "mcp/options.hpp"

#include "mcp/emacs_socket.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace agentq::mcp {

namespace {

// DIR as an absolute, normalized directory name, or an error message.
bool resolve_root(const std::string& dir, std::string& out) {
  namespace fs = std::filesystem;
  if (dir.empty()) {
    out = "--root needs a directory name";
    return false;
  }
  std::error_code error;
  fs::path path = fs::weakly_canonical(fs::absolute(dir, error), error);
  if (error || !fs::is_directory(path, error)) {
    out = "--root " + dir + ": not a directory";
    return false;
  }
  out = path.string();
  return true;
}

}  // namespace

CommandLine parse_command_line(std::span<const std::string> args) {
  CommandLine result;
  auto fail = [&](std::string message) {
    result.action = CommandLine::Action::Fail;
    result.error = std::move(message);
    return result;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    // --name=value is read as --name value.
    std::string name = arg, value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    auto take_value = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= args.size()) return false;
      value = args[++i];
      return true;
    };
    if (name == "-h" || name == "--help") {
      result.action = CommandLine::Action::Help;
      return result;
    }
    if (name == "--version") {
      result.action = CommandLine::Action::Version;
      return result;
    }
    if (name == "--allow-dangerous" && !has_value) {
      result.options.allow_dangerous = true;
    } else if (name == "--root") {
      if (!take_value()) return fail("--root needs a directory name");
      std::string root;
      if (!resolve_root(value, root)) return fail(root);
      result.options.roots.push_back(std::move(root));
    } else if (name == "--emacs") {
      result.options.emacs = true;
      // The socket is optional: the next argument, unless it is an option.
      if (has_value) {
        if (value.empty()) return fail("--emacs= needs a socket file name");
        result.options.emacs_socket = value;
      } else if (i + 1 < args.size() && !args[i + 1].starts_with("-")) {
        result.options.emacs_socket = args[++i];
      }
    } else if (name == "--emacs-timeout") {
      if (!take_value()) return fail("--emacs-timeout needs a number of seconds");
      char* end = nullptr;
      double seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(seconds > 0) || seconds > 86400)
        return fail("--emacs-timeout " + value + ": expected a number of seconds, more than 0 and at most 86400");
      result.options.emacs_timeout_s = seconds;
    } else if (name == "--http") {
      if (!take_value()) return fail("--http needs a port number (0: any free port)");
      char* end = nullptr;
      long port = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || port < 0 || port > 65535)
        return fail("--http " + value + ": expected a port number from 0 to 65535");
      result.options.http_port = static_cast<int>(port);
    } else if (name == "--http-token-file") {
      if (!take_value() || value.empty()) return fail("--http-token-file needs a file name");
      result.options.http_token_file = value;
    } else if (name == "--sched-slice") {
      if (!take_value()) return fail("--sched-slice needs a number of microseconds (0: the kernel's)");
      char* end = nullptr;
      long us = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || us < 0 || (us > 0 && us < 100) || us > 100000)
        return fail("--sched-slice " + value + ": expected 0 or a number of microseconds from 100 to 100000");
      result.options.sched_slice_us = static_cast<int>(us);
    } else if (name == "--no-inline-lisp" && !has_value) {
      result.options.inline_lisp = false;
    } else if (name == "--log-level") {
      if (!take_value()) return fail("--log-level needs one of error, warn, info, debug");
      auto level = parse_log_level(value);
      if (!level) return fail("--log-level " + value + ": expected error, warn, info or debug");
      result.options.log_level = *level;
    } else {
      return fail("unknown argument " + arg);
    }
  }
  if (!result.options.http_token_file.empty() && !result.options.http_port)
    return fail("--http-token-file goes with --http");
  if (result.options.emacs && result.options.emacs_socket.empty())
    result.options.emacs_socket = default_emacs_socket();
  return result;
}

std::string default_http_token_file() {
  std::string socket = default_emacs_socket();
  return socket.substr(0, socket.rfind('/') + 1) + "http-token";
}

std::string usage() {
  return R"(Usage: sly-agent-q-mcp [OPTION]...
       sly-agent-q-mcp --emacs [SOCKET] [--emacs-timeout SECONDS]
       sly-agent-q-mcp [--emacs [SOCKET]] --http PORT [--http-token-file FILE]
An MCP server over stdio (newline-delimited JSON-RPC 2.0 on stdin and
stdout) with its own Common Lisp session (ECL) and the Lisp-side tools of
sly-agent-q: evaluate_lisp, the introspection tools, load_system and the
rest.  The tools defined in Emacs (read_file, write_file, read_buffer, ...)
are not available: no Emacs runs here.

With --emacs, the tools run in your Emacs instead: start the server there
with M-x sly-agent-q-mcp-server-start, and this program forwards each
request to it (no Lisp runs in this process).  Every tool is there, the
Emacs ones too, and dangerous calls are approved in Emacs's minibuffer.

Options:
  --allow-dangerous    run dangerous tools without asking; by default they
                       are denied, since nobody is there to approve them
  --root DIR           a directory file tools may use (repeatable); kept
                       for the file tools, none of which runs headless yet
  --emacs [SOCKET]     forward requests to the Emacs serving MCP on the local
                       socket SOCKET (default: sly-agent-q/mcp.sock under
                       $XDG_RUNTIME_DIR, else under /tmp/sly-agent-q-UID;
                       the default of Emacs's sly-agent-q-mcp-socket)
  --emacs-timeout SECONDS
                       answer a request with an error when Emacs has said
                       nothing for this long (default 30); a call waiting
                       for your approval waits as long as Emacs answers
  --http PORT          serve MCP's Streamable HTTP transport at
                       http://127.0.0.1:PORT/mcp instead of stdio (0: a
                       free port, printed); loopback only, several clients
                       at once (one Lisp session shared), each request
                       with the bearer token written at start to the
                       token file (mode 0600) and printed on stderr; ends
                       on SIGINT, SIGTERM or SIGHUP, or when stdin, if a
                       pipe or socket, ends
  --http-token-file FILE
                       where to write the token (default: http-token in
                       the directory of the default socket, above)
  --sched-slice MICROSECONDS
                       ask Linux (6.12 and later) for this scheduler slice
                       for this process's threads, so that a request may
                       be served sooner when other work keeps the CPUs
                       busy (100 to 100000; default 0: the kernel's)
  --no-inline-lisp     headless (stdio or HTTP), hand every call from the
                       thread that reads it to the Lisp thread, instead of
                       letting the idle Lisp thread read and run the usual
                       evaluate_lisp call itself (one thread hop fewer)
  --log-level LEVEL    error, warn (the default), info or debug; the log
                       goes to stderr
  --help               this text
  --version            the version

stdout carries only protocol messages: whatever the Lisp side writes to the
process's standard output goes to stderr.  The server ends when stdin ends,
after answering the requests it has read.
)";
}

}  // namespace agentq::mcp
