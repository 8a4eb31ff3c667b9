#include "mcp/line_writer.hpp"

#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace agentq::mcp {

bool LineWriter::write_line(std::string_view text) {
  std::lock_guard lock(mutex_);
  if (broken_.load()) return false;
  if (taker_ && taker_(text)) return true;
  // The line and its newline in one system call, without copying the line.
  char newline = '\n';
  iovec parts[2] = {{const_cast<char*>(text.data()), text.size()}, {&newline, 1}};
  iovec* next = parts;
  int count = 2;
  while (count > 0) {
    ssize_t n = ::writev(fd_, next, count);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A non-blocking descriptor from the client: wait until it takes more.
      pollfd ready{fd_, POLLOUT, 0};
      ::poll(&ready, 1, -1);
      continue;
    }
    if (n <= 0) {
      broken_.store(true);
      return false;
    }
    auto done = static_cast<std::size_t>(n);
    while (count > 0 && done >= next->iov_len) {
      done -= next->iov_len;
      ++next;
      --count;
    }
    if (count > 0) {
      next->iov_base = static_cast<char*>(next->iov_base) + done;
      next->iov_len -= done;
    }
  }
  return true;
}

}  // namespace agentq::mcp
