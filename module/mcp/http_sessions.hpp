// The MCP sessions of the HTTP transport by their Mcp-Session-Id: at most
// a given number at once; when full, the one used longest ago makes room
// (clients often go without ending theirs).  Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "mcp/mcp_session.hpp"

namespace agentq::mcp {

class SessionTable {
 public:
  explicit SessionTable(std::size_t max_sessions) : max_(max_sessions) {}

  // Adds SESSION under a fresh random id (128 bits from /dev/urandom, hex)
  // and returns the id.  When the table was full, the session used longest
  // ago is taken out into EVICTED, for the caller to end.
  std::string add(std::shared_ptr<McpSession> session, std::shared_ptr<McpSession>& evicted);
  // The session ID names, or null (never held, or ended); it counts as used.
  std::shared_ptr<McpSession> find(const std::string& id) const;
  // Takes ID's session out of the table (null when none): the caller ends it.
  std::shared_ptr<McpSession> remove(const std::string& id);
  // Takes every session out.
  std::map<std::string, std::shared_ptr<McpSession>> take_all();
  std::size_t size() const;

 private:
  const std::size_t max_;
  mutable std::mutex mutex_;
  struct Entry {
    std::shared_ptr<McpSession> session;
    mutable std::uint64_t used = 0;  // the use count when last used (find() is const)
  };
  std::map<std::string, Entry> sessions_;
  mutable std::uint64_t uses_ = 0;
};

}  // namespace agentq::mcp
