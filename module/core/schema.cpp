#include "core/schema.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace agentq {

namespace {

constexpr char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool equals_lower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (ascii_lower(text[i]) != lower[i]) return false;
  }
  return true;
}

// A bound as JSON: a whole number as an integer.
json bound(double value) {
  if (std::trunc(value) == value && std::fabs(value) < 1e15) return static_cast<std::int64_t>(value);
  return value;
}

}  // namespace

std::optional<SchemaFormat> parse_schema_format(std::string_view text) {
  if (!text.empty() && text.front() == ':') text.remove_prefix(1);
  if (text.empty() || equals_lower(text, "openai") || equals_lower(text, "function")) return SchemaFormat::OpenAI;
  if (equals_lower(text, "anthropic")) return SchemaFormat::Anthropic;
  if (equals_lower(text, "mcp")) return SchemaFormat::Mcp;
  return std::nullopt;
}

json parameters_schema(const Tool& tool) {
  json properties = json::object();
  for (const Parameter& p : tool.parameters) {
    json property = json::object();
    property["type"] = to_string(p.type);
    property["description"] = p.description;
    // OpenAI rejects array schemas without "items"; {} accepts any element.
    if (p.type == ParamType::Array) property["items"] = json::object();
    if (p.minimum) property["minimum"] = bound(*p.minimum);
    if (p.maximum) property["maximum"] = bound(*p.maximum);
    if (!p.default_value.is_null()) property["default"] = p.default_value;
    if (!p.choices.empty()) property["enum"] = p.choices;
    properties[p.name] = std::move(property);
  }
  json required = json::array();
  for (const std::string& r : tool.required) {
    // JSON Schema wants the names unique.
    if (std::find(required.begin(), required.end(), r) == required.end()) required.push_back(r);
  }
  json schema = json::object();
  schema["type"] = "object";
  schema["properties"] = std::move(properties);
  schema["required"] = std::move(required);
  // Validation refuses other names (validate_arguments).
  schema["additionalProperties"] = false;
  return schema;
}

json mcp_annotations(const Tool& tool) {
  bool read_only = tool.safety_level == SafetyLevel::Safe;
  if (tool.safety_level == SafetyLevel::Cautious) {
    // Read-only when every category says so (a tool without one may do anything).
    static constexpr std::string_view kReading[] = {"buffer", "introspection", "xref", "clos", "packages", "files"};
    read_only = !tool.categories.empty() &&
                std::all_of(tool.categories.begin(), tool.categories.end(), [](const std::string& category) {
                  return std::find(std::begin(kReading), std::end(kReading), category) != std::end(kReading);
                });
  }
  json annotations = json::object();
  annotations["readOnlyHint"] = read_only;
  annotations["destructiveHint"] = !read_only;
  return annotations;
}

json tool_to_schema(const Tool& tool, SchemaFormat format) {
  json out = json::object();
  switch (format) {
    case SchemaFormat::OpenAI: {
      json function = json::object();
      function["name"] = tool.name;
      function["description"] = tool.description;
      function["parameters"] = parameters_schema(tool);
      out["type"] = "function";
      out["function"] = std::move(function);
      break;
    }
    case SchemaFormat::Anthropic:
      out["name"] = tool.name;
      out["description"] = tool.description;
      out["input_schema"] = parameters_schema(tool);
      break;
    case SchemaFormat::Mcp:
      out["name"] = tool.name;
      out["title"] = tool_title(tool);
      out["description"] = tool.description;
      out["inputSchema"] = parameters_schema(tool);
      if (!tool.output_schema.is_null()) out["outputSchema"] = tool.output_schema;
      out["annotations"] = mcp_annotations(tool);
      break;
  }
  return out;
}

json tools_to_schema(const std::vector<ToolPtr>& tools, SchemaFormat format) {
  json out = json::array();
  out.get_ref<json::array_t&>().reserve(tools.size());
  for (const ToolPtr& tool : tools) {
    if (tool) out.push_back(tool_to_schema(*tool, format));
  }
  return out;
}

}  // namespace agentq
