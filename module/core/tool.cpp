#include "core/tool.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace agentq {

namespace {

constexpr std::size_t kMaxNameLength = 64;

constexpr char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// TEXT names the lower-case keyword NAME: "safe", ":safe", "SAFE", ":Safe".
bool keyword_matches(std::string_view text, std::string_view name) {
  if (!text.empty() && text.front() == ':') text.remove_prefix(1);
  if (text.size() != name.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (ascii_lower(text[i]) != name[i]) return false;
  }
  return true;
}

// Category spelling without the colon, lower-case.
std::string_view strip_colon(std::string_view text) {
  if (!text.empty() && text.front() == ':') text.remove_prefix(1);
  return text;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

bool is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  });
}

// TEXT as a JSON string, cut after 80 bytes: a name with a NUL, a quote or
// a megabyte of letters still makes a readable message.
std::string in_quotes(std::string_view text) {
  constexpr std::size_t kShown = 80;
  std::string shown(text.substr(0, kShown));
  std::string out = json(shown).dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kShown) out.insert(out.size() - 1, "…");
  return out;
}

}  // namespace

std::string_view to_string(SafetyLevel level) {
  switch (level) {
    case SafetyLevel::Safe: return "safe";
    case SafetyLevel::Cautious: return "cautious";
    case SafetyLevel::Dangerous: return "dangerous";
  }
  return "unknown";
}

std::optional<SafetyLevel> parse_safety_level(std::string_view text) {
  for (SafetyLevel level : {SafetyLevel::Safe, SafetyLevel::Cautious, SafetyLevel::Dangerous}) {
    if (keyword_matches(text, to_string(level))) return level;
  }
  return std::nullopt;
}

std::string_view to_string(ParamType type) {
  switch (type) {
    case ParamType::String: return "string";
    case ParamType::Boolean: return "boolean";
    case ParamType::Number: return "number";
    case ParamType::Integer: return "integer";
    case ParamType::Object: return "object";
    case ParamType::Array: return "array";
  }
  return "unknown";
}

std::optional<ParamType> parse_param_type(std::string_view text) {
  for (ParamType type : {ParamType::String, ParamType::Boolean, ParamType::Number, ParamType::Integer,
                         ParamType::Object, ParamType::Array}) {
    if (keyword_matches(text, to_string(type))) return type;
  }
  return std::nullopt;
}

std::string_view to_string(HandlerKind kind) {
  switch (kind) {
    case HandlerKind::Native: return "native";
    case HandlerKind::Lisp: return "lisp";
    case HandlerKind::Elisp: return "elisp";
  }
  return "unknown";
}

const Parameter* Tool::find_parameter(std::string_view param_name) const {
  for (const Parameter& p : parameters) {
    if (p.name == param_name) return &p;
  }
  return nullptr;
}

bool Tool::has_category(std::string_view category) const {
  const std::string_view wanted = strip_colon(category);
  return std::any_of(categories.begin(), categories.end(), [&](const std::string& c) {
    return equals_ignoring_case(strip_colon(c), wanted);
  });
}

bool is_snake_case(std::string_view name) {
  if (name.empty() || name.front() < 'a' || name.front() > 'z') return false;
  return std::all_of(name.begin() + 1, name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string tool_title(const Tool& tool) {
  if (!tool.title.empty()) return tool.title;
  // Words a Lisp programmer writes in capitals.
  static constexpr std::string_view kAcronyms[] = {"repl", "clos", "mcp", "asdf", "id", "ecl"};
  std::string title;
  std::string_view rest = tool.name;
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('_'), rest.size());
    const std::string_view word = rest.substr(0, end);
    if (!title.empty()) title += ' ';
    if (std::find(std::begin(kAcronyms), std::end(kAcronyms), word) != std::end(kAcronyms)) {
      for (char c : word) title += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    } else if (!word.empty()) {
      title += word.front() >= 'a' && word.front() <= 'z' ? static_cast<char>(word.front() - 'a' + 'A') : word.front();
      title += word.substr(1);
    }
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  return title;
}

void validate_tool_definition(const Tool& tool) {
  if (!is_snake_case(tool.name)) {
    throw ToolDefinitionError("Invalid tool name " + in_quotes(tool.name) +
                              ": tool names must be snake_case (^[a-z][a-z0-9_]*$)");
  }
  if (tool.name.size() > kMaxNameLength) {
    throw ToolDefinitionError("Invalid tool name " + in_quotes(tool.name) + ": tool names must be at most " +
                              std::to_string(kMaxNameLength) + " characters (as OpenAI and Anthropic require)");
  }
  const std::string prefix = "Tool " + tool.name + ": ";
  if (is_blank(tool.description)) {
    throw ToolDefinitionError(prefix + "description must not be empty");
  }
  if (to_string(tool.safety_level) == "unknown") {
    throw ToolDefinitionError(prefix + "unknown safety level " +
                              std::to_string(static_cast<int>(tool.safety_level)) +
                              " (expected safe, cautious or dangerous)");
  }
  if (to_string(tool.kind) == "unknown") {
    throw ToolDefinitionError(prefix + "unknown handler kind " + std::to_string(static_cast<int>(tool.kind)));
  }
  std::unordered_set<std::string_view> seen;
  for (std::size_t i = 0; i < tool.parameters.size(); ++i) {
    const Parameter& p = tool.parameters[i];
    if (p.name.empty()) {
      throw ToolDefinitionError(prefix + "parameter " + std::to_string(i + 1) + " has an empty name");
    }
    if (!seen.insert(p.name).second) {
      throw ToolDefinitionError(prefix + "duplicate parameter " + in_quotes(p.name));
    }
    if (to_string(p.type) == "unknown") {
      throw ToolDefinitionError(prefix + "parameter " + in_quotes(p.name) + " has an unknown type " +
                                std::to_string(static_cast<int>(p.type)));
    }
    const bool numeric = p.type == ParamType::Number || p.type == ParamType::Integer;
    if ((p.minimum || p.maximum) && !numeric) {
      throw ToolDefinitionError(prefix + "parameter " + in_quotes(p.name) +
                                " has bounds (minimum, maximum) but is not a number or integer");
    }
    if (p.minimum && p.maximum && *p.minimum > *p.maximum) {
      throw ToolDefinitionError(prefix + "parameter " + in_quotes(p.name) + "'s minimum is above its maximum");
    }
    if (!p.choices.empty() && p.type != ParamType::String) {
      throw ToolDefinitionError(prefix + "parameter " + in_quotes(p.name) + " has an enum but is not a string");
    }
    std::unordered_set<std::string_view> choices;
    for (const std::string& choice : p.choices) {
      if (!choices.insert(choice).second) {
        throw ToolDefinitionError(prefix + "parameter " + in_quotes(p.name) + " lists " + in_quotes(choice) +
                                  " twice in its enum");
      }
    }
    if (!p.choices.empty() && p.default_value.is_string() &&
        choices.find(p.default_value.get_ref<const std::string&>()) == choices.end()) {
      throw ToolDefinitionError(prefix + "parameter " + in_quotes(p.name) + "'s default is not in its enum");
    }
  }
  for (const std::string& r : tool.required) {
    if (seen.find(r) == seen.end()) {
      throw ToolDefinitionError(prefix + "required parameter " + in_quotes(r) + " is not among its parameters");
    }
  }
  // Aliases after every name is seen: an alias is no parameter's name.
  for (const Parameter& p : tool.parameters) {
    for (const std::string& alias : p.aliases) {
      if (alias.empty() || !seen.insert(alias).second) {
        throw ToolDefinitionError(prefix + "parameter " + in_quotes(p.name) + " has an empty or taken alias " +
                                  in_quotes(alias));
      }
    }
  }
  if (!tool.handler) {
    throw ToolDefinitionError(prefix + "missing handler");
  }
}

}  // namespace agentq
