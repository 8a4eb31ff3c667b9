// JSON-RPC 2.0 / MCP dispatcher over the executor: initialize,
// notifications/initialized, ping, tools/list, tools/call (contract
// tools-call).  Transport-free: one message text in, one text out.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "agentq_version.hpp"
#include "core/executor.hpp"

namespace agentq {

namespace jsonrpc_error {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kResourceNotFound = -32002;  // MCP's
// Ours (the server-defined range; 429 as HTTP's Too Many Requests): a
// client has as many requests waiting as it may (Emacs's socket server).
inline constexpr int kTooManyRequests = -32029;
}  // namespace jsonrpc_error

struct ServerInfo {
  std::string name = "sly-agent-q";
  std::string version{kVersion};  // the project's, from CMake
};

class McpServer {
 public:
  McpServer(Executor& executor, ServerInfo info = {});

  // One message: a request, a notification or a batch array.  Returns the
  // response text, or nullopt when nothing is to be sent (a notification,
  // a batch of notifications).  Never throws; every malformed input gets
  // exactly one well-formed error response (parse error -32700 with id null,
  // invalid request -32600, method not found -32601, invalid params -32602).
  // tools/call: an unknown tool → error -32602; invalid arguments, and a
  // tool that ran and failed (or was denied) → result with isError true
  // (MCP 2025-11-25: the model sees why and can correct its call).
  std::optional<std::string> handle(std::string_view message, const ExecutionOptions& options);

  // The same on parsed JSON; nullopt for notifications.
  std::optional<json> handle_json(const json& message, const ExecutionOptions& options);

  // handle_json's response as text: the same bytes as its dump() (invalid
  // UTF-8 replaced).  May take MESSAGE's parts.  A single tools/call, the
  // common case, has its answer written straight into the text: no JSON
  // tree is built for it and its arguments are moved, not copied.
  std::optional<std::string> handle_json_text(json&& message, const ExecutionOptions& options);

  // The response text to a tools/call request read by
  // parse_simple_tools_call (core/json_fast): ID a string or a number,
  // ARGUMENTS an object, or null when absent; taken, not copied.  The same
  // bytes as handle_json_text gives for the whole message.
  std::string tools_call_text(const json& id, const std::string& name, json&& arguments,
                              const ExecutionOptions& options);

 private:
  json dispatch(const std::string& method, const json& params, const json& id,
                const ExecutionOptions& options);
  // tools/call on PARAMS (an object or absent): the error response in
  // ERROR, or the call's result.  ARGUMENTS, when given, are PARAMS's, to
  // be moved from.
  std::optional<ToolResult> call_tool(const json& params, json* arguments, const json& id,
                                      const ExecutionOptions& options, json& error);
  // NAME's tool, or null with the error response in ERROR.
  ToolPtr resolve_tool(const std::string& name, const json& id, json& error);
  // The rest of call_tool, once TOOL is found: GIVEN, the arguments object
  // (null: none given), MOVABLE the same to move from (null: copy GIVEN).
  // Invalid arguments fail the call (a result), as a tool's error does.
  ToolResult call_resolved_tool(ToolPtr tool, const json* given, json* movable, const json& id,
                                const ExecutionOptions& options);

  // resources/read and prompts/get (core/mcp_catalog): what a resource or
  // a prompt quotes is a safe tool's result.
  json read_resource(const json& params, const json& id, const ExecutionOptions& options);
  json get_prompt(const json& params, const json& id, const ExecutionOptions& options);
  // logging/setLevel: the level into OPTIONS.log_level; -32602 for a
  // level MCP does not name.
  json set_log_level(const json& params, const json& id, const ExecutionOptions& options);
  // CALL's result when its tool is safe; nullopt for any other.
  std::optional<ToolResult> run_safe_tool(const ToolCall& call, const ExecutionOptions& options);

  // The tools/list result for the registry's current tools, rebuilt
  // whenever a tool was (re-)registered since the last call.
  struct ToolsList;
  std::shared_ptr<const ToolsList> tools_list();

  Executor& executor_;
  ServerInfo info_;
  std::mutex tools_list_mutex_;
  std::shared_ptr<const ToolsList> tools_list_;
};

}  // namespace agentq
