#include "mcp/line_writer.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace agentq::mcp {

bool LineWriter::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A non-blocking descriptor from the client: wait until it takes more.
      pollfd ready{fd_, POLLOUT, 0};
      ::poll(&ready, 1, -1);
      continue;
    }
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool LineWriter::write_line(std::string_view text) {
  std::lock_guard lock(mutex_);
  if (broken_.load()) return false;
  // One write for a short line; a long one is written as is, then "\n".
  bool ok;
  if (text.size() < 65536) {
    std::string line;
    line.reserve(text.size() + 1);
    line.append(text);
    line += '\n';
    ok = write_all(line);
  } else {
    ok = write_all(text) && write_all("\n");
  }
  if (!ok) broken_.store(true);
  return ok;
}

}  // namespace agentq::mcp
