// Newline-delimited messages from a file descriptor, each at most a limit
// long: a longer line is skipped (never held in memory whole) and reported
// as such, so that it can be answered and the next one read.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>

namespace agentq::mcp {

struct Line {
  std::string text;          // without the newline (and a \r before it); empty when too long
  bool too_long = false;     // longer than the limit: TEXT is empty
  std::size_t bytes = 0;     // the line's length, newline not counted
};

// The longest message sly-agent-q-mcp reads.
inline constexpr std::size_t kMaxLineBytes = std::size_t{16} << 20;

class LineReader {
 public:
  LineReader(int fd, std::size_t max_bytes);

  // The next line; the last one may lack its newline.  nullopt at the end
  // of the input (or on a read error, which is the end too).  Blocks.
  std::optional<Line> next();

  // The next line if one is there without waiting: LINE set and Ready::Line;
  // Ready::Wait when the rest of it has not come yet (what has is kept);
  // Ready::End at the end of the input.  READABLE: the descriptor was
  // seen readable, so it is read once (and READABLE cleared) when the
  // line is not whole yet; else nothing is read (no system call).
  enum class Ready { Line, Wait, End };
  Ready try_next(Line& line, bool& readable);

  // A whole line, or the end, is there without reading.
  bool line_buffered() const;

  int fd() const { return fd_; }

  std::size_t max_bytes() const { return max_bytes_; }

 private:
  void take(const char* data, std::size_t size);
  Line finish();
  // Takes what the chunk holds up to a newline: true when a line ended.
  bool take_buffered();
  // Reads once into the chunk (EOF_ set at the end, or on an error).
  // False when nothing was there (EAGAIN).
  bool fill();

  int fd_;
  std::size_t max_bytes_;
  std::array<char, 65536> chunk_{};
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  Line line_;  // the line being read
};

}  // namespace agentq::mcp
