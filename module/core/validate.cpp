#include "core/validate.hpp"

#include <cmath>

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

std::optional<std::string> validate_arguments(const Tool& tool, const json& args) {
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
  for (const Parameter& p : tool.parameters) {
    auto it = args.find(p.name);
    if (it == args.end() || it->is_null()) continue;
    if (!fits(p.type, *it)) {
      std::string msg = "Invalid argument '";
      msg += p.name;
      msg += "': expected ";
      msg += to_string(p.type);
      msg += ", got ";
      msg += json_type_name(*it);
      return msg;
    }
  }
  return std::nullopt;
}

}  // namespace agentq
