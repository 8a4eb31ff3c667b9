// Guards for JSON from outside: nlohmann's parser and dump recurse, so
// nesting is bounded before a text is parsed or a value is walked.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agentq {

inline constexpr int kMaxJsonDepth = 256;

// True when TEXT nests arrays/objects deeper than LIMIT.  Exact for valid
// JSON (strings are skipped); invalid JSON is rejected by the parser anyway.
bool text_nesting_exceeds(std::string_view text, int limit = kMaxJsonDepth);

// The same on a parsed value, without recursion.
bool value_nesting_exceeds(const nlohmann::json& value, int limit = kMaxJsonDepth);

// Parses TEXT when it is valid JSON nested at most kMaxJsonDepth deep;
// nullopt otherwise.  Never throws.
std::optional<nlohmann::json> parse_json_bounded(std::string_view text);

}  // namespace agentq
