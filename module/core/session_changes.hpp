// A count of the changes to the Lisp session's definitions (a DEF… form
// evaluated, a system loaded, reset_session), which Lisp notes
// (AGENT-Q::%NOTE-DEFINITIONS-CHANGED) and the MCP transports compare
// around a call: changed, they send notifications/resources/list_changed.
// One per process, as the Lisp session is.
#pragma once

#include <atomic>
#include <cstdint>

namespace agentq {

class SessionChanges {
 public:
  void note() { generation_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> generation_{0};
};

inline SessionChanges& session_changes() {
  static SessionChanges changes;
  return changes;
}

// The notification's text: no params.
inline constexpr const char* kResourcesListChanged =
    R"({"jsonrpc":"2.0","method":"notifications/resources/list_changed"})";

}  // namespace agentq
