#include "mcp/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>

namespace agentq::mcp {

namespace {

std::atomic<LogLevel> g_level{LogLevel::Warn};
std::mutex g_mutex;

std::string_view name(LogLevel level) {
  switch (level) {
    case LogLevel::Error: return "error";
    case LogLevel::Warn: return "warn";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "?";
}

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view text) {
  for (LogLevel level : {LogLevel::Error, LogLevel::Warn, LogLevel::Info, LogLevel::Debug}) {
    if (text == name(level)) return level;
  }
  if (text == "warning") return LogLevel::Warn;
  return std::nullopt;
}

void set_log_level(LogLevel level) { g_level.store(level, std::memory_order_relaxed); }

bool log_enabled(LogLevel level) { return level <= g_level.load(std::memory_order_relaxed); }

void log(LogLevel level, std::string_view text) {
  if (!log_enabled(level)) return;
  std::string line = "sly-agent-q-mcp: ";
  line += name(level);
  line += ": ";
  line += text;
  line += '\n';
  std::lock_guard lock(g_mutex);
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to log: drop it
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string shortened(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return std::string(text);
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string out(text.substr(0, cut));
  out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace agentq::mcp
