#include "mcp/hangup_watch.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "mcp/log.hpp"

namespace agentq::mcp {

HangupWatch::~HangupWatch() {
  if (!thread_.joinable()) return;
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(done_.get(), &one, sizeof one);
  thread_.join();
}

HangupWatch::Watching::Watching(HangupWatch& watch, McpSession::Link& link) : watch_(watch) {
  std::lock_guard lock(watch.mutex_);
  if (watch.gone_) {
    link.client_gone();
    return;
  }
  watch.link_ = &link;
  if (watch.thread_.joinable() || watch.done_) return;
  // The first call on this connection: the thread that watches it.  Without
  // an eventfd, or a thread, calls are not watched (as before, when the
  // per-call watcher could not start).
  watch.done_.reset(::eventfd(0, EFD_CLOEXEC));
  if (!watch.done_) return;
  try {
    watch.thread_ = std::thread([&watch] { watch.run(); });
  } catch (const std::system_error&) {
    log(LogLevel::Warn, "HTTP: no thread to watch a connection for its client hanging up");
  }
}

HangupWatch::Watching::~Watching() {
  std::lock_guard lock(watch_.mutex_);
  watch_.link_ = nullptr;
}

void HangupWatch::run() {
  for (;;) {
    pollfd ready[2] = {{fd_, POLLRDHUP, 0}, {done_.get(), POLLIN, 0}};
    int rc = ::poll(ready, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || ready[1].revents) return;
    if (ready[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
      std::lock_guard lock(mutex_);
      gone_ = true;
      if (link_) {
        log(LogLevel::Info, "HTTP: the client closed the connection of a running call: cancelling it");
        link_->client_gone();
      }
      return;
    }
    // Data (a pipelined request) is not a hang-up; do not spin on it.
    ::poll(nullptr, 0, 10);
  }
}

}  // namespace agentq::mcp
