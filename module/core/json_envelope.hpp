// The envelope of a JSON-RPC message (its id, its method, its
// params.requestId) read from its text without building the JSON tree of
// the message: what a relay needs to pair answers with requests, when it
// passes the line on as it came (sly-agent-q-mcp --emacs, whose Emacs
// parses the line itself).  The rest of the message is only checked to be
// JSON, byte by byte.
//
// It reads the usual message, a single object; anything else it leaves to
// the full parser (parse_json_bounded), which the caller then uses as
// before.  What it reads, it reads exactly as that parser would: a text it
// accepts is one parse_json_bounded accepts, with the same members.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agentq {

struct MessageEnvelope {
  bool has_id = false;
  nlohmann::json id;    // when has_id: a string, an integer or null
  std::string id_text;  // when has_id: id.dump() (the key of a table of requests: 1 and "1" differ)
  bool has_method = false;
  std::string method;  // when has_method (it is a string)
  // params.requestId, when params is an object with that member: a
  // string, an integer or null (a notifications/cancelled names its request so).
  bool has_request_id = false;
  nlohmann::json request_id;
  std::string request_id_text;  // request_id.dump()
};

// TEXT's envelope when TEXT is a JSON object (surrounding whitespace
// allowed) that parse_json_bounded would accept and whose "id" and
// params.requestId, when present, are strings, integers (at most 18
// digits) or null, whose "method", when present, is a string, where
// "id", "method", "params" and params.requestId appear at most once and
// without \u escapes in those strings or in the keys of the message and
// of params, and whose numbers have no exponent.  Otherwise nullopt, which
// says nothing about whether TEXT is JSON: parse it.  Never throws.
std::optional<MessageEnvelope> scan_message_envelope(std::string_view text);

}  // namespace agentq
