#include "mcp/line_splitter.hpp"

#include <string>
#include <utility>

namespace agentq::mcp {

namespace {

Line finished(Line line) {
  if (!line.too_long && !line.text.empty() && line.text.back() == '\r') {
    line.text.pop_back();
    --line.bytes;
  }
  return line;
}

}  // namespace

void LineSplitter::take(std::string_view piece) {
  line_.bytes += piece.size();
  if (line_.too_long) return;
  if (line_.bytes > max_bytes_) {
    line_.too_long = true;
    std::string().swap(line_.text);
    return;
  }
  line_.text.append(piece);
}

void LineSplitter::feed(std::string_view data, const std::function<void(Line&)>& emit) {
  while (!data.empty()) {
    const std::size_t newline = data.find('\n');
    if (newline == std::string_view::npos) {
      take(data);
      return;
    }
    take(data.substr(0, newline));
    data.remove_prefix(newline + 1);
    Line line = finished(std::exchange(line_, Line{}));
    emit(line);
  }
}

std::optional<Line> LineSplitter::finish() {
  if (line_.bytes == 0) return std::nullopt;
  return finished(std::exchange(line_, Line{}));
}

}  // namespace agentq::mcp
