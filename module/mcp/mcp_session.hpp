// What serves one MCP session of the HTTP transport: each client's
// messages, one POST at a time per connection (several connections may
// post to the same session at once).
#pragma once

#include <functional>
#include <mutex>
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

  // Between a POST and the call it brought: the transport's way out for
  // notifications, and the session's way to stop the call when the client
  // has gone (its connection closed: nowhere is left to answer).
  class Link {
   public:
    explicit Link(Notify notify) : notify(std::move(notify)) {}
    const Notify notify;
    // The session, around a call: what stops it (empty: nothing runs).
    void set_canceller(std::function<void()> cancel) {
      std::lock_guard lock(mutex_);
      cancel_ = std::move(cancel);
      if (cancel_ && gone_) cancel_();
    }
    // The transport, from any thread: the client has gone.
    void client_gone() {
      std::lock_guard lock(mutex_);
      gone_ = true;
      if (cancel_) cancel_();
    }

   private:
    std::mutex mutex_;
    std::function<void()> cancel_;
    bool gone_ = false;
  };

  virtual ~McpSession() = default;

  // True when the answer to the request MESSAGE is to be an SSE stream
  // even without a progressToken: its client asked for log messages
  // (logging/setLevel), which come on the request's stream before its
  // response.
  virtual bool streams_logs(const nlohmann::json& message) const {
    (void)message;
    return false;
  }

  // One message TEXT (an object: a request, a notification or a response;
  // MESSAGE is it parsed), on the POST's connection thread, which waits.
  // LINK.notify sends this request's notifications.  Returns the response text, or nullopt when nothing is to be answered
  // (a notification, a response, a request cancelled before it ran).
  virtual std::optional<std::string> post(std::string_view text, nlohmann::json message, Link& link) = 0;

  // The session ends (DELETE, the server stops): its calls are cancelled.
  // Later posts are not made.  Returns at once.
  virtual void end() = 0;
};

}  // namespace agentq::mcp
