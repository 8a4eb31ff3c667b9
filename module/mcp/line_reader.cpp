#include "mcp/line_reader.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace agentq::mcp {

LineReader::LineReader(int fd, std::size_t max_bytes) : fd_(fd), max_bytes_(max_bytes) {}

void LineReader::take(const char* data, std::size_t size) {
  line_.bytes += size;
  if (line_.too_long) return;
  if (line_.bytes > max_bytes_) {
    line_.too_long = true;
    std::string().swap(line_.text);  // let the memory go
    return;
  }
  line_.text.append(data, size);
}

Line LineReader::finish() {
  Line line = std::exchange(line_, Line{});
  if (!line.too_long && !line.text.empty() && line.text.back() == '\r') {
    line.text.pop_back();
    --line.bytes;
  }
  return line;
}

std::optional<Line> LineReader::next() {
  for (;;) {
    if (pos_ < end_) {
      const char* begin = chunk_.data() + pos_;
      const std::size_t available = end_ - pos_;
      const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', available));
      const std::size_t size = newline ? static_cast<std::size_t>(newline - begin) : available;
      take(begin, size);
      pos_ += size;
      if (newline) {
        ++pos_;
        return finish();
      }
      continue;
    }
    if (eof_) {
      if (line_.bytes > 0) return finish();
      return std::nullopt;
    }
    ssize_t n = ::read(fd_, chunk_.data(), chunk_.size());
    if (n > 0) {
      pos_ = 0;
      end_ = static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A client may hand us a non-blocking descriptor: wait for data.
      pollfd ready{fd_, POLLIN, 0};
      ::poll(&ready, 1, -1);
    } else if (n == 0 || errno != EINTR) {
      eof_ = true;
    }
  }
}

}  // namespace agentq::mcp
