#include "core/mcp_logging.hpp"

#include <array>

namespace agentq {

namespace {

constexpr std::array<std::string_view, 8> kNames = {"debug", "info",     "notice", "warning",
                                                    "error", "critical", "alert",  "emergency"};

}  // namespace

std::optional<McpLogLevel> parse_mcp_log_level(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<McpLogLevel>(i);
  return std::nullopt;
}

std::string_view mcp_log_level_name(McpLogLevel level) { return kNames.at(static_cast<std::size_t>(level)); }

std::string mcp_log_notification(McpLogLevel level, std::string_view message, const nlohmann::json& request_id,
                                 std::string_view tool) {
  std::string text(message.substr(0, kMaxLogMessageBytes));
  if (text.size() < message.size()) {
    std::size_t cut = text.size();
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
    text += "...";
  }
  nlohmann::json data = nlohmann::json::object();
  data["message"] = std::move(text);
  if (request_id.is_string() || request_id.is_number()) data["requestId"] = request_id;
  if (!tool.empty()) data["tool"] = std::string(tool);
  nlohmann::json params = nlohmann::json::object();
  params["level"] = std::string(mcp_log_level_name(level));
  params["logger"] = "sly-agent-q";
  params["data"] = std::move(data);
  nlohmann::json notification = nlohmann::json::object();
  notification["jsonrpc"] = "2.0";
  notification["method"] = "notifications/message";
  notification["params"] = std::move(params);
  return notification.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace agentq
