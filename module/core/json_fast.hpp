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

// A tools/call request as MCP clients send it, read without building the
// JSON tree of the envelope.
struct SimpleToolsCall {
  nlohmann::json id;         // a string or a number
  std::string name;          // params.name
  nlohmann::json arguments;  // params.arguments: an object, or null when absent or null
  nlohmann::json progress_token;  // params._meta.progressToken (a string or number), or null
};

// TEXT as a tools/call when it is one of the simple kind (see above) that
// the dispatcher would run: a JSON object whose "jsonrpc" is "2.0", whose
// "id" is a string or a number, whose "method" is "tools/call" and whose
// "params" is an object with a string "name" and "arguments" an object,
// null or absent; other members are ignored, as the dispatcher ignores
// them.  Anything else, nullopt: the message then takes the usual way
// (parse, route, dispatch), which answers it as before.  Never throws.
std::optional<SimpleToolsCall> parse_simple_tools_call(std::string_view text);

// META's progressToken (a request's params._meta) when it is a string or a
// number; null otherwise.
nlohmann::json progress_token_of(const nlohmann::json& meta);

// A request MESSAGE's params._meta.progressToken, as progress_token_of
// reads it; null when it has none.
nlohmann::json request_progress_token(const nlohmann::json& message);

}  // namespace agentq
