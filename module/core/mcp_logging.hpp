// MCP logging (2025-11-25): the client picks a level with
// logging/setLevel; the server then sends notifications/message at that
// level or above.  Nothing is sent before the client picks one.  Pure:
// the levels, their names, one client's choice, the notification's text.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agentq {

// RFC 5424's severities, least severe first (as MCP names them).
enum class McpLogLevel : int { Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency };

// "debug" … "emergency" (exactly, lower case); nullopt for anything else.
std::optional<McpLogLevel> parse_mcp_log_level(std::string_view name);
std::string_view mcp_log_level_name(McpLogLevel level);

// The level one client (a connection, an HTTP session) asked for.  Read
// and set from any thread.
class ClientLogLevel {
 public:
  void set(McpLogLevel level) { level_.store(static_cast<int>(level), std::memory_order_relaxed); }
  // True when a message at LEVEL is to be sent: the client set a level
  // and LEVEL is at it or above.
  // True once the client chose a level.
  bool chosen() const { return level_.load(std::memory_order_relaxed) != kUnset; }
  bool wants(McpLogLevel level) const {
    const int chosen = level_.load(std::memory_order_relaxed);
    return chosen != kUnset && static_cast<int>(level) >= chosen;
  }

 private:
  static constexpr int kUnset = -1;
  std::atomic<int> level_{kUnset};
};

// Longest message text a notification carries (bytes; cut at a character).
inline constexpr std::size_t kMaxLogMessageBytes = 2000;
// Most log notifications one call sends; later ones are dropped.
inline constexpr int kMaxLogMessagesPerCall = 8;

// The notifications/message text: logger "sly-agent-q", data
// {"message": MESSAGE (cut to kMaxLogMessageBytes), "requestId": ID (when
// not null: the request it is about), "tool": TOOL (when not empty)}.
std::string mcp_log_notification(McpLogLevel level, std::string_view message, const nlohmann::json& request_id = {},
                                 std::string_view tool = {});

}  // namespace agentq
