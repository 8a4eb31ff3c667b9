#include "core/json_limits.hpp"

#include "core/json_fast.hpp"

#include <utility>
#include <vector>

namespace agentq {

using json = nlohmann::json;

// True when TEXT nests arrays/objects deeper than LIMIT.  Exact for valid
// JSON (strings are skipped); invalid JSON is rejected by the parser anyway.
bool text_nesting_exceeds(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > limit) return true;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return false;
}

// The same on a parsed value, without recursion.
bool value_nesting_exceeds(const json& value, int limit) {
  if (!value.is_structured()) return false;
  std::vector<std::pair<const json*, int>> stack;
  stack.emplace_back(&value, 1);
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (depth > limit) return true;
    for (const json& child : *node) {
      if (child.is_structured()) stack.emplace_back(&child, depth + 1);
    }
  }
  return false;
}

std::optional<json> parse_json_bounded(std::string_view text) {
  // The usual message, quickly; anything else as before.
  if (std::optional<json> simple = parse_simple_json(text)) return simple;
  // A NUL would end nlohmann's input early (see jsonrpc.cpp).
  if (text_nesting_exceeds(text) || text.find('\0') != std::string_view::npos) return std::nullopt;
  try {
    json value = json::parse(text, nullptr, false);
    if (value.is_discarded()) return std::nullopt;
    return value;
  } catch (...) {
    return std::nullopt;  // e.g. a number out of range
  }
}

}  // namespace agentq
