// A parser for the JSON that MCP clients send almost always: objects,
// arrays, strings with the short escapes, integers, true, false and null.
// What it parses, it parses exactly as nlohmann's parser would (the same
// values, the same number types, the last of duplicate keys); anything
// else (\u escapes, fractions and exponents, long integers, deep nesting,
// malformed text) it leaves to that parser.  nlohmann's lexer cost ~10,000
// instructions and a dozen allocations for a 130-byte tools/call.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agentq {

// TEXT parsed, or nullopt when it is not JSON of the simple kind above
// (which says nothing about whether it is JSON).  Never throws for bad
// input.
std::optional<nlohmann::json> parse_simple_json(std::string_view text);

}  // namespace agentq
