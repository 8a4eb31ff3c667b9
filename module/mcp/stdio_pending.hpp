// A call the stdio server has read (mcp/stdio_server): shared by its
// files, nothing else includes it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "mcp/cancellable_call.hpp"
#include "mcp/stdio_server.hpp"

namespace agentq::mcp {

struct StdioServer::Pending {
  Pending(nlohmann::json id, McpCallContext::JobCanceller cancel_job)
      : id(std::move(id)), context(std::move(cancel_job)) {}
  nlohmann::json id;  // a string or a number, else not cancellable (a batch)
  // The whole message; or, for a tools/call read by
  // parse_simple_tools_call (simple), its arguments, and NAME the tool.
  nlohmann::json message;
  std::string name;
  bool simple = false;
  // A call the worker runs inline: its line, which the thread that may
  // take it over reads again (the worker's call consumes MESSAGE; a copy
  // of the text costs less than one of the parsed message, and most calls
  // are never taken over).
  std::string text;
  std::uint64_t definitions = 0;  // session_changes() when it started
  std::size_t bytes = 0;          // the message's length, as read
  McpCallContext context;
};

}  // namespace agentq::mcp
