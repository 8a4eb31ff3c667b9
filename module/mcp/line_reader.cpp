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

bool LineReader::take_buffered() {
  const char* begin = chunk_.data() + pos_;
  const std::size_t available = end_ - pos_;
  const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', available));
  const std::size_t size = newline ? static_cast<std::size_t>(newline - begin) : available;
  take(begin, size);
  pos_ += size;
  if (!newline) return false;
  ++pos_;
  return true;
}

bool LineReader::fill() {
  ssize_t n = ::read(fd_, chunk_.data(), chunk_.size());
  if (n > 0) {
    pos_ = 0;
    end_ = static_cast<std::size_t>(n);
  } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    return false;
  } else if (n == 0 || errno != EINTR) {
    eof_ = true;
  }
  return true;
}

std::optional<Line> LineReader::next() {
  for (;;) {
    if (pos_ < end_) {
      if (take_buffered()) return finish();
      continue;
    }
    if (eof_) {
      if (line_.bytes > 0) return finish();
      return std::nullopt;
    }
    if (!fill()) {
      // A client may hand us a non-blocking descriptor: wait for data.
      pollfd ready{fd_, POLLIN, 0};
      ::poll(&ready, 1, -1);
    }
  }
}

LineReader::Ready LineReader::try_next(Line& line, bool& readable) {
  for (;;) {
    if (pos_ < end_) {
      if (take_buffered()) {
        line = finish();
        return Ready::Line;
      }
      continue;
    }
    if (eof_) {
      if (line_.bytes == 0) return Ready::End;
      line = finish();
      return Ready::Line;
    }
    if (!readable) return Ready::Wait;
    readable = false;
    if (!fill()) return Ready::Wait;
  }
}

bool LineReader::line_buffered() const {
  return eof_ || (pos_ < end_ && std::memchr(chunk_.data() + pos_, '\n', end_ - pos_) != nullptr);
}

}  // namespace agentq::mcp
