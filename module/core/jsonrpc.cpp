#include "core/jsonrpc.hpp"

#include "core/json_limits.hpp"
#include "core/json_text.hpp"

#include <array>
#include <exception>
#include <utility>
#include <vector>

#include "core/mcp_catalog.hpp"
#include "core/mcp_logging.hpp"
#include "core/schema.hpp"
#include "core/validate.hpp"

namespace agentq {

namespace {

using namespace jsonrpc_error;

// Deeper messages are refused before parsing: handlers, converters and
// dump() recurse over the value.
constexpr int kMaxDepth = 256;
// Longest piece of client text echoed back in an error message.
constexpr std::size_t kMaxEcho = 200;

// Newest first: the one answered when a client asks for another.
constexpr std::array<std::string_view, 5> kProtocolVersions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                               "2024-11-05", "2024-10-07"};

// What initialize tells a model about using the session.
constexpr const char* kInstructions =
    "A live Common Lisp (ECL) session that persists between calls: definitions stay. Evaluate code with "
    "evaluate_lisp (debug: true holds an unhandled error live: then invoke_restart, backtrace, "
    "eval_in_frame); look things up with describe_symbol, apropos_search, who_calls; list_systems lists "
    "the loaded ASDF systems, load_system loads one, run_tests runs their tests. Tools that touch files or the world ask the user first; "
    "a denied call says why.";

constexpr std::string_view kInternalErrorText =
    R"({"error":{"code":-32603,"message":"Internal error"},"id":null,"jsonrpc":"2.0"})";

// Stands for an absent "params" member.
const json& absent_params() {
  static const json value(json::value_t::discarded);
  return value;
}

std::string dump(const json& value) {
  // Strings from handlers may hold invalid UTF-8: replace, never throw.
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// TEXT cut to at most kMaxEcho bytes at a UTF-8 character boundary.
std::string echo(std::string_view text) {
  if (text.size() <= kMaxEcho) return std::string(text);
  std::size_t cut = kMaxEcho;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string out(text.substr(0, cut));
  out += "...";
  return out;
}

json error_response(int code, std::string message, const json& id) {
  json error = json::object();
  error["code"] = code;
  error["message"] = std::move(message);
  json response = json::object();
  response["jsonrpc"] = "2.0";
  response["id"] = id;
  response["error"] = std::move(error);
  return response;
}

json result_response(json result, const json& id) {
  json response = json::object();
  response["jsonrpc"] = "2.0";
  response["id"] = id;
  response["result"] = std::move(result);
  return response;
}

bool valid_id(const json& id) { return id.is_string() || id.is_number() || id.is_null(); }

std::optional<std::string> call_id(const json& id) {
  if (id.is_string()) return id.get<std::string>();
  if (id.is_null()) return std::nullopt;
  std::string text;
  append_json_scalar(text, id);
  return text;
}

}  // namespace

McpServer::McpServer(Executor& executor, ServerInfo info) : executor_(executor), info_(std::move(info)) {}

struct McpServer::ToolsList {
  std::vector<ToolPtr> tools;  // what it was built from; keeps them alive, so no address is reused
  json result;                 // {"tools":[…]}
  std::string text;            // result, dumped
};

std::shared_ptr<const McpServer::ToolsList> McpServer::tools_list() {
  std::vector<ToolPtr> tools = executor_.registry().filter();
  {
    std::lock_guard lock(tools_list_mutex_);
    // Registering a tool always stores a new object, so equal pointers mean
    // the very same definitions.
    if (tools_list_ && tools_list_->tools == tools) return tools_list_;
  }
  auto fresh = std::make_shared<ToolsList>();
  fresh->result = json::object();
  fresh->result["tools"] = tools_to_schema(tools, SchemaFormat::Mcp);
  fresh->text = dump(fresh->result);
  fresh->tools = std::move(tools);
  std::lock_guard lock(tools_list_mutex_);
  tools_list_ = fresh;
  return fresh;
}

namespace {

// A request object that passed the envelope checks.
struct Request {
  const std::string* method;
  const json* params;  // absent_params() when absent
  json id;
};

// Checks one element of a message or batch: an error response, a
// notification (nothing to answer), or a request to dispatch.
struct Envelope {
  std::optional<json> error;
  std::optional<Request> request;  // neither set: a notification
};

Envelope read_envelope(const json& message) {
  Envelope out;
  if (!message.is_object()) {
    out.error = error_response(kInvalidRequest, "Invalid Request: expected a JSON object", nullptr);
    return out;
  }
  const auto id_it = message.find("id");
  const bool notification = id_it == message.end();
  json id = nullptr;
  if (!notification) {
    if (!valid_id(*id_it)) {
      out.error = error_response(kInvalidRequest, "Invalid Request: id must be a string, a number or null", nullptr);
      return out;
    }
    id = *id_it;
  }
  const auto version = message.find("jsonrpc");
  if (version == message.end() || !version->is_string() || version->get_ref<const std::string&>() != "2.0") {
    out.error = error_response(kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"", id);
    return out;
  }
  const auto method = message.find("method");
  if (method == message.end() || !method->is_string()) {
    out.error = error_response(kInvalidRequest, "Invalid Request: method must be a string", id);
    return out;
  }
  // Notifications (notifications/initialized, notifications/cancelled, and
  // anything else) are never answered.
  if (notification) return out;
  const auto params = message.find("params");
  out.request = Request{&method->get_ref<const std::string&>(),
                        params == message.end() ? &absent_params() : &*params, std::move(id)};
  return out;
}

template <typename Dispatch>
std::optional<json> handle_single(const json& message, Dispatch&& dispatch) {
  Envelope envelope = read_envelope(message);
  if (envelope.error) return std::move(envelope.error);
  if (!envelope.request) return std::nullopt;
  return dispatch(*envelope.request->method, *envelope.request->params, envelope.request->id);
}

template <typename Dispatch>
std::optional<json> handle_parsed(const json& message, Dispatch&& dispatch) {
  if (message.is_array()) {
    if (message.empty()) return error_response(kInvalidRequest, "Invalid Request: empty batch", nullptr);
    json responses = json::array();
    for (const json& element : message) {
      if (auto response = handle_single(element, dispatch)) responses.push_back(std::move(*response));
    }
    if (responses.empty()) return std::nullopt;
    return responses;
  }
  return handle_single(message, dispatch);
}

}  // namespace

std::optional<std::string> McpServer::handle(std::string_view message, const ExecutionOptions& options) {
  try {
    if (text_nesting_exceeds(message, kMaxDepth)) {
      return dump(error_response(kParseError,
                                 "Parse error: nested deeper than " + std::to_string(kMaxDepth) + " levels",
                                 nullptr));
    }
    // nlohmann's lexer takes a NUL byte for the end of the input and would
    // ignore whatever follows it; no JSON text holds a raw NUL anyway.
    if (message.find('\0') != std::string_view::npos) {
      return dump(error_response(kParseError, "Parse error: a NUL byte in the message", nullptr));
    }
    json parsed;
    try {
      parsed = json::parse(message.begin(), message.end());
    } catch (const json::exception& e) {
      // parse_error, and out_of_range for numbers such as 1e400.
      return dump(error_response(kParseError, "Parse error: " + echo(e.what()), nullptr));
    }
    if (parsed.is_object()) {
      Envelope envelope = read_envelope(parsed);
      if (envelope.error) return dump(*envelope.error);
      if (!envelope.request) return std::nullopt;
      const Request& request = *envelope.request;
      if (*request.method == "tools/list" && (request.params->is_discarded() || request.params->is_object())) {
        // The common big answer: splice the prepared text instead of
        // copying and dumping the schemas each time.  Same bytes as dump().
        auto list = tools_list();
        std::string text;
        text.reserve(list->text.size() + 64);
        text += R"({"id":)";
        text += dump(request.id);
        text += R"(,"jsonrpc":"2.0","result":)";
        text += list->text;
        text += '}';
        return text;
      }
      return dump(dispatch(*request.method, *request.params, request.id, options));
    }
    auto response = handle_parsed(parsed, [&](const std::string& method, const json& params, const json& id) {
      return dispatch(method, params, id, options);
    });
    if (!response) return std::nullopt;
    return dump(*response);
  } catch (...) {
    return std::string(kInternalErrorText);
  }
}

std::optional<json> McpServer::handle_json(const json& message, const ExecutionOptions& options) {
  try {
    if (value_nesting_exceeds(message, kMaxDepth)) {
      return error_response(kInvalidRequest,
                            "Invalid Request: nested deeper than " + std::to_string(kMaxDepth) + " levels",
                            nullptr);
    }
    return handle_parsed(message, [&](const std::string& method, const json& params, const json& id) {
      return dispatch(method, params, id, options);
    });
  } catch (...) {
    return json::parse(kInternalErrorText);
  }
}

std::optional<ToolResult> McpServer::call_tool(const json& params, json* arguments, const json& id,
                                               const ExecutionOptions& options, json& error) {
  if (params.is_discarded()) {
    error = error_response(kInvalidParams, "Invalid params: tools/call needs params {name, arguments}", id);
    return std::nullopt;
  }
  const auto name_it = params.find("name");
  if (name_it == params.end() || !name_it->is_string()) {
    error = error_response(kInvalidParams, "Invalid params: name must be a string", id);
    return std::nullopt;
  }
  ToolPtr tool = resolve_tool(name_it->get_ref<const std::string&>(), id, error);
  if (!tool) return std::nullopt;
  const json* given = nullptr;
  const auto args_it = params.find("arguments");
  if (args_it != params.end() && !args_it->is_null()) {
    if (!args_it->is_object()) {
      // The tool's error, as for any invalid arguments (SEP-1303).
      ToolCall call;
      call.id = call_id(id);
      call.name = tool->name;
      call.arguments = *args_it;
      return executor_.execute(call, options);
    }
    given = &*args_it;
  }
  return call_resolved_tool(std::move(tool), given, given ? arguments : nullptr, id, options);
}

ToolPtr McpServer::resolve_tool(const std::string& name, const json& id, json& error) {
  ToolPtr tool = executor_.registry().resolve(name);
  if (!tool) error = error_response(kInvalidParams, "Unknown tool: " + echo(name), id);
  return tool;
}

ToolResult McpServer::call_resolved_tool(ToolPtr tool, const json* given, json* movable, const json& id,
                                         const ExecutionOptions& options) {
  ToolCall call;
  call.id = call_id(id);
  call.name = tool->name;
  if (given) {
    if (movable)
      call.arguments = std::move(*movable);
    else
      call.arguments = *given;
  }
  // Invalid arguments are the tool's error, which the model sees and can
  // correct (MCP 2025-11-25, SEP-1303), not a protocol error: the executor
  // validates them again and fails the call.
  if (validate_arguments(*tool, call.arguments)) return executor_.execute(call, options);
  return executor_.execute_validated(call, std::move(tool), options);
}

namespace {

// OUTCOME's structured result as JSON (an object), or null: none, or not
// an object (a tool's bug: the text content still says it all).
json structured_content(const ToolResult& outcome) {
  if (outcome.structured.empty()) return nullptr;
  json value = json::parse(outcome.structured, nullptr, false);
  return value.is_object() ? value : json(nullptr);
}

// What dump(result_response(…)) writes for a tools/call's result, keys in
// its (sorted) order.
std::string tools_call_result_text(const json& id, const ToolResult& outcome) {
  std::string text;
  text.reserve(outcome.content.size() + outcome.structured.size() + 96);
  text += R"({"id":)";
  append_json_scalar(text, id);
  text += R"(,"jsonrpc":"2.0","result":{"content":[{"text":)";
  append_json_string(text, outcome.content);
  text += R"(,"type":"text"}],"isError":)";
  text += outcome.success ? "false" : "true";
  // Written by our own JSON writers (C++'s, Lisp's JSON-TEXT): spliced as
  // it is, the hot path not parsing it again.
  if (!outcome.structured.empty() && outcome.structured.front() == '{' && outcome.structured.back() == '}') {
    text += R"(,"structuredContent":)";
    text += outcome.structured;
  }
  text += "}}";
  return text;
}

}  // namespace

std::string McpServer::tools_call_text(const json& id, const std::string& name, json&& arguments,
                                       const ExecutionOptions& options) {
  try {
    json error;
    std::optional<ToolResult> outcome;
    if (ToolPtr tool = resolve_tool(name, id, error)) {
      json* given = arguments.is_null() ? nullptr : &arguments;
      outcome = call_resolved_tool(std::move(tool), given, given, id, options);
    }
    if (!outcome) return dump(error);
    return tools_call_result_text(id, *outcome);
  } catch (...) {
    return std::string(kInternalErrorText);
  }
}

std::optional<std::string> McpServer::handle_json_text(json&& message, const ExecutionOptions& options) {
  try {
    if (message.is_object() && !value_nesting_exceeds(message, kMaxDepth)) {
      Envelope envelope = read_envelope(message);
      if (envelope.request && *envelope.request->method == "tools/call" &&
          (envelope.request->params->is_discarded() || envelope.request->params->is_object())) {
        const Request& request = *envelope.request;
        json* arguments = nullptr;
        if (!request.params->is_discarded()) {
          auto it = message["params"].find("arguments");
          if (it != message["params"].end()) arguments = &*it;
        }
        json error;
        std::optional<ToolResult> outcome = call_tool(*request.params, arguments, request.id, options, error);
        if (!outcome) return dump(error);
        return tools_call_result_text(request.id, *outcome);
      }
    }
    std::optional<json> response = handle_json(message, options);
    if (!response) return std::nullopt;
    return dump(*response);
  } catch (...) {
    return std::string(kInternalErrorText);
  }
}

std::optional<ToolResult> McpServer::run_safe_tool(const ToolCall& call, const ExecutionOptions& options) {
  ToolPtr tool = executor_.registry().resolve(call.name);
  // Resources and prompts only read: never a tool that asks or runs code.
  if (!tool || tool->safety_level != SafetyLevel::Safe) return std::nullopt;
  return executor_.execute(call, options);
}

json McpServer::read_resource(const json& params, const json& id, const ExecutionOptions& options) {
  const auto uri = params.is_object() ? params.find("uri") : params.end();
  if (!params.is_object() || uri == params.end() || !uri->is_string())
    return error_response(kInvalidParams, "Invalid params: resources/read needs params {uri}", id);
  const std::string& text = uri->get_ref<const std::string&>();
  std::optional<ToolCall> call = mcp::resource_call(text);
  std::optional<ToolResult> result = call ? run_safe_tool(*call, options) : std::nullopt;
  if (!result) return error_response(kResourceNotFound, "Resource not found: " + echo(text), id);
  if (!result->success) return error_response(kResourceNotFound, echo(text) + ": " + echo(result->content), id);
  json content = {{"uri", text}, {"mimeType", "text/plain"}, {"text", std::move(result->content)}};
  return result_response({{"contents", json::array({std::move(content)})}}, id);
}

json McpServer::set_log_level(const json& params, const json& id, const ExecutionOptions& options) {
  const auto level = params.is_object() ? params.find("level") : params.end();
  std::optional<McpLogLevel> parsed;
  if (level != params.end() && level->is_string()) parsed = parse_mcp_log_level(level->get_ref<const std::string&>());
  if (!parsed) {
    std::string given = level == params.end() ? std::string("none") : echo(dump(*level));
    return error_response(kInvalidParams,
                          "Invalid params: level must be one of debug, info, notice, warning, error, critical, "
                          "alert, emergency; got " + given,
                          id);
  }
  if (options.log_level) options.log_level->set(*parsed);
  return result_response(json::object(), id);
}

json McpServer::get_prompt(const json& params, const json& id, const ExecutionOptions& options) {
  const auto name = params.is_object() ? params.find("name") : params.end();
  if (!params.is_object() || name == params.end() || !name->is_string())
    return error_response(kInvalidParams, "Invalid params: prompts/get needs params {name, arguments}", id);
  std::string problem;
  std::optional<mcp::PromptPlan> plan =
      mcp::prompt_plan(name->get<std::string>(), params.value("arguments", json()), problem);
  if (!plan) return error_response(kInvalidParams, "Invalid params: " + problem, id);
  std::string text = plan->before;
  if (plan->call) {
    std::optional<ToolResult> result = run_safe_tool(*plan->call, options);
    text += result ? result->content : "(the session could not say)";
    text += plan->after;
  }
  json message = {{"role", "user"}, {"content", {{"type", "text"}, {"text", std::move(text)}}}};
  return result_response({{"description", plan->description}, {"messages", json::array({std::move(message)})}}, id);
}

json McpServer::dispatch(const std::string& method, const json& params, const json& id,
                         const ExecutionOptions& options) {
  try {
    const bool absent = params.is_discarded();
    const bool known = method == "initialize" || method == "ping" || method == "tools/list" ||
                       method == "tools/call" || method == "notifications/initialized" ||
                       method == "notifications/cancelled" || method == "resources/list" ||
                       method == "resources/templates/list" || method == "resources/read" ||
                       method == "prompts/list" || method == "prompts/get" || method == "logging/setLevel";
    if (!known) return error_response(kMethodNotFound, "Method not found: " + echo(method), id);
    if (!absent && !params.is_object()) {
      return error_response(kInvalidParams, "Invalid params: params must be an object, got " + json_type_name(params),
                            id);
    }

    if (method == "tools/call") {
      json error;
      std::optional<ToolResult> outcome = call_tool(params, nullptr, id, options, error);
      if (!outcome) return error;
      json text = json::object();
      text["type"] = "text";
      text["text"] = std::move(outcome->content);
      json result = json::object();
      result["content"] = json::array({std::move(text)});
      result["isError"] = !outcome->success;
      if (json structured = structured_content(*outcome); !structured.is_null())
        result["structuredContent"] = std::move(structured);
      return result_response(std::move(result), id);
    }

    if (method == "tools/list") {
      return result_response(tools_list()->result, id);
    }
    if (method == "resources/list") return result_response(mcp::resources_list(), id);
    if (method == "resources/templates/list") return result_response(mcp::resource_templates_list(), id);
    if (method == "prompts/list") return result_response(mcp::prompts_list(), id);
    if (method == "resources/read") return read_resource(params, id, options);
    if (method == "logging/setLevel") return set_log_level(params, id, options);
    if (method == "prompts/get") return get_prompt(params, id, options);

    if (method == "initialize") {
      std::string version(kProtocolVersions.front());
      if (!absent) {
        const auto requested = params.find("protocolVersion");
        if (requested != params.end() && requested->is_string()) {
          for (std::string_view supported : kProtocolVersions) {
            if (requested->get_ref<const std::string&>() == supported) version = supported;
          }
        }
      }
      json tools = json::object();
      tools["listChanged"] = false;
      json capabilities = json::object();
      capabilities["tools"] = std::move(tools);
      capabilities["resources"] = {{"subscribe", false}, {"listChanged", true}};
      capabilities["prompts"] = {{"listChanged", false}};
      capabilities["logging"] = json::object();
      json server = json::object();
      server["name"] = info_.name;
      server["version"] = info_.version;
      json result = json::object();
      result["protocolVersion"] = version;
      result["capabilities"] = std::move(capabilities);
      result["serverInfo"] = std::move(server);
      result["instructions"] = kInstructions;
      return result_response(std::move(result), id);
    }

    // ping, and the notification methods when sent as requests.
    return result_response(json::object(), id);
  } catch (const std::exception& e) {
    return error_response(kInternalError, std::string("Internal error: ") + e.what(), id);
  } catch (...) {
    return error_response(kInternalError, "Internal error", id);
  }
}

}  // namespace agentq
