#include "mcp/http_sessions.hpp"

#include "mcp/http_request.hpp"

namespace agentq::mcp {

std::string SessionTable::add(std::shared_ptr<McpSession> session) {
  std::string id = random_hex(16);
  std::lock_guard lock(mutex_);
  if (sessions_.size() >= max_) return {};
  sessions_.emplace(id, std::move(session));
  return id;
}

std::shared_ptr<McpSession> SessionTable::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

std::shared_ptr<McpSession> SessionTable::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  auto session = std::move(it->second);
  sessions_.erase(it);
  return session;
}

std::map<std::string, std::shared_ptr<McpSession>> SessionTable::take_all() {
  std::lock_guard lock(mutex_);
  return std::exchange(sessions_, {});
}

std::size_t SessionTable::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace agentq::mcp
