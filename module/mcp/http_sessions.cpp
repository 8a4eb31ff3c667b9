#include "mcp/http_sessions.hpp"

#include <algorithm>

#include "mcp/http_request.hpp"

namespace agentq::mcp {

std::string SessionTable::add(std::shared_ptr<McpSession> session, std::shared_ptr<McpSession>& evicted) {
  std::string id = random_hex(16);
  std::lock_guard lock(mutex_);
  if (max_ == 0) return {};
  if (sessions_.size() >= max_) {
    auto oldest = std::min_element(sessions_.begin(), sessions_.end(),
                                   [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
    evicted = std::move(oldest->second.session);
    sessions_.erase(oldest);
  }
  sessions_.emplace(id, Entry{std::move(session), ++uses_});
  return id;
}

std::shared_ptr<McpSession> SessionTable::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  it->second.used = ++uses_;
  return it->second.session;
}

std::shared_ptr<McpSession> SessionTable::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  auto session = std::move(it->second.session);
  sessions_.erase(it);
  return session;
}

std::map<std::string, std::shared_ptr<McpSession>> SessionTable::take_all() {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::shared_ptr<McpSession>> all;
  for (auto& [id, entry] : sessions_) all.emplace(id, std::move(entry.session));
  sessions_.clear();
  return all;
}

std::size_t SessionTable::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace agentq::mcp
