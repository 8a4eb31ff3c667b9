// Watches one HTTP connection for its client hanging up while a call it
// posted runs, so that the call is stopped (McpSession::Link::client_gone),
// as a closed stdio or Emacs connection stops its calls.  One watching
// thread per connection, started at its first call and kept until the
// connection ends: a call costs two uncontended locks, not a thread
// started and joined (which cost each HTTP call a clone, two wake-ups and
// an exit, and its tail under load).  Only a hang-up counts (POLLRDHUP:
// the client shut its sending side, or closed): a pipelined next request
// is data, left for its turn.  A hang-up stays: every later call on the
// connection is stopped too.
#pragma once

#include <mutex>
#include <thread>

#include "mcp/mcp_session.hpp"
#include "mcp/unique_fd.hpp"

namespace agentq::mcp {

class HangupWatch {
 public:
  explicit HangupWatch(int fd) : fd_(fd) {}
  HangupWatch(const HangupWatch&) = delete;
  HangupWatch& operator=(const HangupWatch&) = delete;
  ~HangupWatch();  // stops the thread

  // While it lives, a hang-up calls LINK.client_gone() (at once when the
  // client has hung up already).
  class Watching {
   public:
    Watching(HangupWatch& watch, McpSession::Link& link);
    Watching(const Watching&) = delete;
    Watching& operator=(const Watching&) = delete;
    ~Watching();

   private:
    HangupWatch& watch_;
  };

 private:
  void run();

  const int fd_;
  UniqueFd done_;  // an eventfd: the connection ends
  std::thread thread_;
  std::mutex mutex_;
  McpSession::Link* link_ = nullptr;  // the call running, if any
  bool gone_ = false;
};

}  // namespace agentq::mcp
