// The MCP sessions of the HTTP transport by their Mcp-Session-Id: at most
// a given number at once.  Thread-safe.
#pragma once

#include <cstddef>
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
  // and returns the id; empty when the table is full.
  std::string add(std::shared_ptr<McpSession> session);
  // The session ID names, or null (never held, or ended).
  std::shared_ptr<McpSession> find(const std::string& id) const;
  // Takes ID's session out of the table (null when none): the caller ends it.
  std::shared_ptr<McpSession> remove(const std::string& id);
  // Takes every session out.
  std::map<std::string, std::shared_ptr<McpSession>> take_all();
  std::size_t size() const;

 private:
  const std::size_t max_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<McpSession>> sessions_;
};

}  // namespace agentq::mcp
