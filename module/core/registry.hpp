// The one registry of tools, whoever defined them (C++, Lisp, Elisp)
// (contract tool-registry).  Thread-safe: the Emacs main thread, the ECL
// thread and the MCP server may all use it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tool.hpp"

namespace agentq {

using ToolPtr = std::shared_ptr<const Tool>;

class Registry {
 public:
  // Validates (validate_tool_definition, throws ToolDefinitionError) and
  // stores TOOL under its name, replacing any tool of that name.  Returns it.
  ToolPtr register_tool(Tool tool);

  // Exact name; nullptr when absent.
  ToolPtr get(std::string_view name) const;

  // Exact name, else the name with '-' read as '_' ("evaluate-lisp" finds
  // "evaluate_lisp"); nullptr when neither exists.
  ToolPtr resolve(std::string_view name) const;

  // Sorted names.
  std::vector<std::string> names() const;

  // Tools sorted by name, filtered: at or below MAX_LEVEL when given; with at
  // least one of CATEGORIES when CATEGORIES is non-empty; both filters AND.
  std::vector<ToolPtr> filter(std::optional<SafetyLevel> max_level = std::nullopt,
                              const std::vector<std::string>& categories = {}) const;

  std::size_t size() const;

  // Changes whenever a tool is registered: a cache of the registry (Lisp's
  // *AGENT-Q-REGISTRY*) is stale when this differs from what it saw.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, ToolPtr> tools_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace agentq
