#include "mcp/protocol_fds.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace agentq::mcp {

namespace {

[[noreturn]] void fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

// A close-on-exec copy of FD above the standard three.
UniqueFd private_copy(int fd, const char* what) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0) fail(what);
  return UniqueFd(copy);
}

void point(int from, int to, const char* what) {
  while (::dup2(from, to) < 0) {
    if (errno != EINTR) fail(what);
  }
}

}  // namespace

ProtocolFds take_protocol_fds() {
  ProtocolFds fds;
  fds.in = private_copy(STDIN_FILENO, "cannot keep stdin for the protocol");
  fds.out = private_copy(STDOUT_FILENO, "cannot keep stdout for the protocol");
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null) fail("cannot open /dev/null");
  if (null.get() <= STDERR_FILENO) null = private_copy(null.get(), "cannot open /dev/null");  // fd 2 was closed
  // A client may give us no stderr: then the log, and fd 1, go nowhere
  // (and no later file takes fd 2 by chance).
  if (::fcntl(STDERR_FILENO, F_GETFD) < 0) point(null.get(), STDERR_FILENO, "cannot point stderr at /dev/null");
  point(null.get(), STDIN_FILENO, "cannot point stdin at /dev/null");
  point(STDERR_FILENO, STDOUT_FILENO, "cannot point stdout at stderr");
  return fds;
}

}  // namespace agentq::mcp
