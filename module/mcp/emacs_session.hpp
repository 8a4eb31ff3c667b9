// An MCP session of the HTTP transport served by Emacs (--emacs --http):
// an EmacsBridge of its own, so one connection to Emacs per session (Emacs
// keeps each connection's calls, cancellations and approvals apart, as for
// stdio clients) with the bridge's pings, timeouts and errors.  The bridge
// runs on a thread over two pipes; a reader thread hands each response to
// the POST waiting for its id, and a notification naming a request's
// progressToken, or a log message naming it (data.requestId), to that
// request's stream.  The answer to a request that has no stream (no
// progressToken, no log level chosen) is handed over by the bridge's
// thread itself, one thread's wake-up sooner: nothing of that request can
// be behind it in the pipe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "mcp/emacs_bridge.hpp"
#include "mcp/line_writer.hpp"
#include "mcp/mcp_session.hpp"
#include "mcp/unique_fd.hpp"

namespace agentq::mcp {

class EmacsSession final : public McpSession {
 public:
  // Throws std::system_error when the pipes or threads cannot be made.
  explicit EmacsSession(BridgeOptions options);
  ~EmacsSession() override;

  std::optional<std::string> post(std::string_view text, nlohmann::json message, Link& link) override;
  void end() override;
  bool streams_logs(const nlohmann::json& message) const override;

 private:
  struct Waiter {
    Link* link = nullptr;
    std::string progress_token;  // its JSON text; empty for none
    bool done = false;
    std::optional<std::string> response;
    bool direct = false;  // no stream: its answer may skip the reader thread
  };

  using FdPair = std::pair<UniqueFd, UniqueFd>;
  EmacsSession(BridgeOptions options, FdPair to_bridge, FdPair from_bridge);
  void send_line(const std::string& line);
  void read_responses();
  bool take_answer(std::string_view line);
  void cancel_waiter(const std::string& key);
  // Under mutex_: the POST waiting for request KEY stops waiting, with
  // RESPONSE (none: it was cancelled); nothing when nobody waits for it.
  void end_wait_locked(const std::string& key, std::optional<std::string> response);

  // To the bridge a socket pair, so that end() can shut its sending side
  // while another thread may still write (an error, not a closed fd).
  UniqueFd to_bridge_read_, to_bridge_write_;
  UniqueFd from_bridge_read_, from_bridge_write_;
  LineWriter to_bridge_;
  LineWriter from_bridge_;  // the bridge's output
  BridgeOptions options_;
  std::mutex mutex_;
  std::condition_variable answered_;
  std::map<std::string, Waiter*> waiters_;  // by the request id's JSON text
  bool closed_ = false;                     // the bridge ended: no answer will come
  // The client sent logging/setLevel (Emacs keeps the level and filters).
  std::atomic<bool> logging_{false};
  std::thread bridge_thread_;
  std::thread reader_thread_;
};

}  // namespace agentq::mcp
