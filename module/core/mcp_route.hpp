// Where an MCP message goes: answered at once by whoever reads it, queued
// for a worker (tools/call, batches: they may run for long), or a
// cancellation.  Shared by the headless server's reading thread and the
// socket server in Emacs (sly-agent-q--module-mcp-line).
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agentq::mcp {

struct Route {
  enum class Kind {
    Answer,  // quick: initialize, ping, tools/list, notifications, every malformed message
    Queue,   // a tools/call, resources/read or prompts/get request, or a batch: may run for long
    Cancel,  // notifications/cancelled naming a request
  };
  Kind kind = Kind::Answer;
  nlohmann::json id;          // Queue: the request's id (null for a batch, which cannot be cancelled)
  nlohmann::json request_id;  // Cancel: params.requestId, a string or a number
  nlohmann::json message;     // Queue: the message, parsed (so that it is parsed once)
};

// Never throws; a message it cannot read is Answer (the dispatcher then
// answers the error).
Route route_message(std::string_view text);

// MESSAGE (a request, parsed) is the usual call: a tools/call of
// evaluate_lisp with an id and no progress to follow, which the Lisp
// worker may run itself (core/idle_reader.hpp).
bool is_plain_evaluation(const nlohmann::json& message);

// TEXT read as that usual call: by the fast reader when it can (json_fast:
// only its id and arguments are built), else parsed whole; nullopt when it
// is not one.  The inline readers (stdio, HTTP) and their takers, which
// read a call's text again, share it.
struct PlainEvaluation {
  nlohmann::json id;
  nlohmann::json message;  // the call's arguments when SIMPLE, else the whole message
  bool simple = false;
};
std::optional<PlainEvaluation> read_plain_evaluation(std::string_view text);

}  // namespace agentq::mcp
