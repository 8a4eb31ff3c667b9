// What serves one MCP session of the HTTP transport: each client's
// messages, one POST at a time per connection (several connections may
// post to the same session at once).
#pragma once

#include <functional>
#include <memory>
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
    // Set by the transport before post(): runs once, on the posting
    // thread, when the call waits for its Lisp job longer than a moment
    // (McpCallContext::set_on_wait).
    std::function<void()> on_wait;
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

  // A call the Lisp worker runs on its own thread (the HTTP server's
  // inline Lisp, core/idle_reader.hpp), answered as JSON.
  class InlineCall {
   public:
    virtual ~InlineCall() = default;
    // On the worker: runs the call.  Its response, or nullopt when there
    // is none (cancelled) or the call was taken over (the taker answers).
    virtual std::optional<std::string> run() = 0;
    // On the thread that claimed the worker's evaluation
    // (Runtime::claim_inline_job): waits for it as its owner (time limit,
    // cancellation, LINK's client gone) and returns the response, or
    // nullopt when cancelled.
    virtual std::optional<std::string> take_over(Link& link) = 0;
  };

  // BODY's call when the worker may run it: a tools/call of evaluate_lisp
  // with no progressToken, whose client streams no log messages.  Null
  // otherwise: BODY is posted as usual.
  virtual std::unique_ptr<InlineCall> inline_call(std::string_view body) {
    (void)body;
    return nullptr;
  }

  // The session ends (DELETE, the server stops): its calls are cancelled.
  // Later posts are not made.  Returns at once.
  virtual void end() = 0;
};

}  // namespace agentq::mcp
