#include "core/validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace agentq {

namespace {

bool fits(ParamType type, const json& value) {
  switch (type) {
    case ParamType::String: return value.is_string();
    case ParamType::Boolean: return value.is_boolean();
    case ParamType::Number: return value.is_number();
    case ParamType::Integer:
      if (value.is_number_integer()) return true;
      if (value.is_number_float()) {
        const double d = value.get<double>();
        return std::isfinite(d) && std::trunc(d) == d;
      }
      return false;
    case ParamType::Object: return value.is_object();
    case ParamType::Array: return value.is_array();
  }
  return false;
}

std::string number_text(double value) {
  json number = value;
  if (std::trunc(value) == value && std::fabs(value) < 1e15) number = static_cast<std::int64_t>(value);
  return number.dump();
}

// Why VALUE, given for P under NAME, does not fit it; nullopt when it does
// (null counts as absent).
std::optional<std::string> check_value(const Parameter& p, const std::string& name, const json& value) {
  if (value.is_null()) return std::nullopt;
  if (!fits(p.type, value)) {
    return "Invalid argument '" + name + "': expected " + std::string(to_string(p.type)) + ", got " +
           json_type_name(value);
  }
  if (!p.choices.empty() &&
      std::find(p.choices.begin(), p.choices.end(), value.get_ref<const std::string&>()) == p.choices.end()) {
    std::string listed;
    for (const std::string& choice : p.choices) listed += (listed.empty() ? "" : ", ") + json(choice).dump();
    return "Invalid argument '" + name + "': one of " + listed + ", got " + value.dump();
  }
  if (p.minimum || p.maximum) {
    const double number = value.get<double>();
    if (p.minimum && number < *p.minimum)
      return "Invalid argument '" + name + "': at least " + number_text(*p.minimum) + ", got " + value.dump();
    if (p.maximum && number > *p.maximum)
      return "Invalid argument '" + name + "': at most " + number_text(*p.maximum) + ", got " + value.dump();
  }
  return std::nullopt;
}

// TOOL's parameter called NAME, or that has NAME for an alias; null if none.
const Parameter* parameter_named(const Tool& tool, const std::string& name) {
  for (const Parameter& p : tool.parameters) {
    if (p.name == name) return &p;
  }
  for (const Parameter& p : tool.parameters) {
    if (std::find(p.aliases.begin(), p.aliases.end(), name) != p.aliases.end()) return &p;
  }
  return nullptr;
}

// The message for ARGS's members that are no parameter of TOOL.
std::string unknown_arguments(const Tool& tool, const json& args) {
  constexpr std::size_t kMostNamed = 5;  // a message stays short, whatever was sent
  std::string unknown;
  std::size_t count = 0;
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (parameter_named(tool, it.key()) || it.value().is_null()) continue;
    if (++count > kMostNamed) continue;
    if (!unknown.empty()) unknown += ", ";
    unknown += "'" + (it.key().size() > 64 ? it.key().substr(0, 64) + "..." : it.key()) + "'";
  }
  if (count > kMostNamed) unknown += " and " + std::to_string(count - kMostNamed) + " more";
  std::string takes;
  for (const Parameter& p : tool.parameters) takes += (takes.empty() ? "" : ", ") + p.name;
  return "Unknown argument " + unknown + " for " + tool.name + " (" +
         (takes.empty() ? std::string("it takes no arguments") : "it takes: " + takes) + ")";
}

}  // namespace

std::string json_type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::binary: return "binary";
    case json::value_t::discarded: return "discarded";
  }
  return "unknown";
}

std::optional<std::string> validate_arguments(const Tool& tool, const json& args, bool allow_unknown) {
  // A null argument object is read as no arguments at all (Lisp/Elisp nil).
  if (args.is_null()) {
    for (const std::string& name : tool.required) return "Missing required argument: " + name;
    return std::nullopt;
  }
  if (!args.is_object()) {
    return "Invalid arguments: expected a JSON object, got " + json_type_name(args);
  }
  for (const std::string& name : tool.required) {
    auto it = args.find(name);
    if (it == args.end() || it->is_null()) return "Missing required argument: " + name;
  }
  bool unknown = false;
  for (auto it = args.begin(); it != args.end(); ++it) {
    const Parameter* p = parameter_named(tool, it.key());
    if (!p) {
      unknown = unknown || !it.value().is_null();  // null: absent
      continue;
    }
    if (auto problem = check_value(*p, it.key(), it.value())) return problem;
  }
  if (unknown && !allow_unknown) return unknown_arguments(tool, args);
  return std::nullopt;
}

}  // namespace agentq
