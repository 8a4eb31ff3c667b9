// JSON text written straight into a string, byte for byte what nlohmann's
// dump(-1, ' ', false, error_handler_t::replace) writes, for the answers
// that are spliced instead of built as a tree and dumped (each dump()
// makes a serializer: an output adapter, a 512-byte indent buffer and a
// localeconv() call).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agentq {

// TEXT as a JSON string, quotes included.  Invalid UTF-8 becomes U+FFFD
// the way the replace handler does it.
void append_json_string(std::string& out, std::string_view text);

// VALUE as dump() writes it: integers, strings, null and booleans
// directly, anything else through dump().
void append_json_scalar(std::string& out, const nlohmann::json& value);

// VALUE's JSON text as append_json_scalar writes it: a request id as the
// key of a table (1 and "1" differ).
std::string json_scalar_text(const nlohmann::json& value);

}  // namespace agentq
