// The server's log: one line per message on stderr (stdout carries only
// the protocol), filtered by --log-level.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace agentq::mcp {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

// "error", "warn", "info", "debug"; nullopt for anything else.
std::optional<LogLevel> parse_log_level(std::string_view text);

void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);

// "sly-agent-q-mcp: LEVEL: TEXT\n" on fd 2 when LEVEL is enabled, in one
// write; lines from several threads never mix.
void log(LogLevel level, std::string_view text);

// TEXT cut to at most LIMIT bytes (at a UTF-8 character boundary), with
// "... (N bytes)" when cut: for echoing protocol messages.
std::string shortened(std::string_view text, std::size_t limit = 300);

}  // namespace agentq::mcp
