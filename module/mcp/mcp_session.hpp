// What serves one MCP session of the HTTP transport: each client's
// messages, one POST at a time per connection (several connections may
// post to the same session at once).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agentq::mcp {

class McpSession {
 public:
  // Sends one notification text for the request being answered (an SSE
  // event on its response); false when it could not be sent.
  using Notify = std::function<bool(std::string_view json_text)>;

  virtual ~McpSession() = default;

  // One message TEXT (an object: a request, a notification or a response;
  // MESSAGE is it parsed), on the POST's connection thread, which waits.
  // Returns the response text, or nullopt when nothing is to be answered
  // (a notification, a response, a request cancelled before it ran).
  virtual std::optional<std::string> post(std::string_view text, nlohmann::json message, const Notify& notify) = 0;

  // The session ends (DELETE, the server stops): its calls are cancelled.
  // Later posts are not made.  Returns at once.
  virtual void end() = 0;
};

}  // namespace agentq::mcp
