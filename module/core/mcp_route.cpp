#include "core/mcp_route.hpp"

#include "core/json_fast.hpp"
#include "core/json_limits.hpp"

namespace agentq::mcp {

namespace {

bool has_method(const nlohmann::json& message, std::string_view method) {
  auto it = message.find("method");
  return it != message.end() && it->is_string() && it->get_ref<const std::string&>() == method;
}

}  // namespace

Route route_message(std::string_view text) {
  Route route;
  try {
    std::optional<nlohmann::json> message = parse_json_bounded(text);
    if (!message) return route;
    if (message->is_array()) {
      route.kind = Route::Kind::Queue;
      route.message = std::move(*message);
      return route;
    }
    if (!message->is_object()) return route;
    const auto id = message->find("id");
    if (id != message->end()) {
      // What runs Lisp (a tool) may run for long.
      if (has_method(*message, "tools/call") || has_method(*message, "resources/read") ||
          has_method(*message, "prompts/get")) {
        route.kind = Route::Kind::Queue;
        route.id = *id;
        route.message = std::move(*message);
      }
      return route;
    }
    if (has_method(*message, "notifications/cancelled")) {
      const auto params = message->find("params");
      if (params == message->end() || !params->is_object()) return route;
      const auto request = params->find("requestId");
      if (request == params->end() || !(request->is_string() || request->is_number())) return route;
      route.kind = Route::Kind::Cancel;
      route.request_id = *request;
    }
  } catch (...) {
    route = Route{};
  }
  return route;
}

bool is_plain_evaluation(const nlohmann::json& message) {
  if (!message.is_object() || !has_method(message, "tools/call")) return false;
  const auto id = message.find("id");
  const auto params = message.find("params");
  if (id == message.end() || !(id->is_string() || id->is_number()) || params == message.end() ||
      !params->is_object())
    return false;
  const auto name = params->find("name");
  return name != params->end() && *name == "evaluate_lisp" && request_progress_token(message).is_null();
}

std::optional<PlainEvaluation> read_plain_evaluation(std::string_view text) {
  if (std::optional<SimpleToolsCall> call = parse_simple_tools_call(text)) {
    if (call->name != "evaluate_lisp" || !call->progress_token.is_null()) return std::nullopt;
    return PlainEvaluation{std::move(call->id), std::move(call->arguments), true};
  }
  try {
    std::optional<nlohmann::json> message = parse_json_bounded(text);
    if (!message || !is_plain_evaluation(*message)) return std::nullopt;
    nlohmann::json id = (*message)["id"];
    return PlainEvaluation{std::move(id), std::move(*message), false};
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace agentq::mcp
