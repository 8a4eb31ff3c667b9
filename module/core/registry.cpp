#include "core/registry.hpp"

#include <algorithm>
#include <mutex>

namespace agentq {

ToolPtr Registry::register_tool(Tool tool) {
  validate_tool_definition(tool);
  auto stored = std::make_shared<const Tool>(std::move(tool));
  std::unique_lock lock(mutex_);
  tools_.insert_or_assign(stored->name, stored);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return stored;
}

ToolPtr Registry::get(std::string_view name) const {
  const std::string key(name);
  std::shared_lock lock(mutex_);
  auto it = tools_.find(key);
  return it == tools_.end() ? nullptr : it->second;
}

ToolPtr Registry::resolve(std::string_view name) const {
  std::string key(name);
  std::shared_lock lock(mutex_);
  if (auto it = tools_.find(key); it != tools_.end()) return it->second;
  if (key.find('-') == std::string::npos) return nullptr;
  std::replace(key.begin(), key.end(), '-', '_');
  auto it = tools_.find(key);
  return it == tools_.end() ? nullptr : it->second;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  {
    std::shared_lock lock(mutex_);
    out.reserve(tools_.size());
    for (const auto& entry : tools_) out.push_back(entry.first);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ToolPtr> Registry::filter(std::optional<SafetyLevel> max_level,
                                      const std::vector<std::string>& categories) const {
  std::vector<ToolPtr> out;
  {
    std::shared_lock lock(mutex_);
    out.reserve(tools_.size());
    for (const auto& entry : tools_) {
      const Tool& tool = *entry.second;
      if (max_level && static_cast<int>(tool.safety_level) > static_cast<int>(*max_level)) continue;
      if (!categories.empty() &&
          std::none_of(categories.begin(), categories.end(),
                       [&](const std::string& c) { return tool.has_category(c); })) {
        continue;
      }
      out.push_back(entry.second);
    }
  }
  std::sort(out.begin(), out.end(), [](const ToolPtr& a, const ToolPtr& b) { return a->name < b->name; });
  return out;
}

std::size_t Registry::size() const {
  std::shared_lock lock(mutex_);
  return tools_.size();
}

}  // namespace agentq
