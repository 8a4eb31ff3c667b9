#include "sys/system_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace agentq {

// With open and read rather than a stream: ending a fork loop's family
// reads thousands of /proc files, and a stream per file took seconds.
std::optional<std::string> read_system_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t length = read(fd, buffer, sizeof buffer);
    if (length < 0 && errno == EINTR) continue;
    if (length < 0) {
      close(fd);
      return std::nullopt;
    }
    if (length == 0) break;
    text.append(buffer, static_cast<std::size_t>(length));
  }
  close(fd);
  return text;
}

}  // namespace agentq
