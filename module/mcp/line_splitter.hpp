// Newline-delimited messages from bytes that arrive in pieces (a
// non-blocking descriptor watched with poll): the LineReader's rules —
// a line longer than the limit is skipped, never held whole, and reported.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>

#include "mcp/line_reader.hpp"

namespace agentq::mcp {

class LineSplitter {
 public:
  explicit LineSplitter(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Takes DATA; calls EMIT with each line it completes, in order.
  void feed(std::string_view data, const std::function<void(Line&)>& emit);

  // The last line when the input ended without a newline after it.
  std::optional<Line> finish();

  void clear() { line_ = Line{}; }
  std::size_t max_bytes() const { return max_bytes_; }

 private:
  void take(std::string_view piece);

  std::size_t max_bytes_;
  Line line_;  // the line being read
};

}  // namespace agentq::mcp
