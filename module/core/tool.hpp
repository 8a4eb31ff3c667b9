// A tool: what the model may call, with its parameter schema, safety level
// and handler (contract tool-protocol). Pure C++, no Emacs or ECL.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentq {

using json = nlohmann::json;

enum class SafetyLevel { Safe = 0, Cautious = 1, Dangerous = 2 };

// "safe" / "cautious" / "dangerous".
std::string_view to_string(SafetyLevel level);
// Accepts "safe", ":safe", "SAFE" …; nullopt for anything else.
std::optional<SafetyLevel> parse_safety_level(std::string_view text);

enum class ParamType { String, Boolean, Number, Integer, Object, Array };

// The JSON-schema type name: "string", "boolean", "number", "integer", "object", "array".
std::string_view to_string(ParamType type);
// Accepts "string", ":string", "STRING" …; nullopt for anything else.
std::optional<ParamType> parse_param_type(std::string_view text);

struct Parameter {
  Parameter() = default;
  Parameter(std::string name, ParamType type, std::string description)
      : name(std::move(name)), type(type), description(std::move(description)) {}

  std::string name;
  ParamType type = ParamType::String;
  std::string description;
  // Bounds of a number or integer, checked before the handler runs and
  // given in the schema (minimum, maximum); unset: none.
  std::optional<double> minimum;
  std::optional<double> maximum;
  // The value used when the argument is absent, for the schema's
  // "default"; null: none said.  The handler applies it: this only tells.
  json default_value;
  // Older names still accepted for it (not in the schema): evaluate_lisp's
  // capture-time.  The handler reads them.
  std::vector<std::string> aliases;
  // The only values a string parameter takes (the schema's "enum"),
  // checked before the handler runs; empty: any string.
  std::vector<std::string> choices;
};

// Who runs the handler: plain C++, Lisp on the ECL thread, or Elisp on the
// Emacs main thread.  Informational: the handler closure does the routing.
enum class HandlerKind { Native, Lisp, Elisp };
std::string_view to_string(HandlerKind kind);

class CallContext;

// What a handler produced.  On success TEXT is the content for the model;
// on failure it is the error message (the executor copies it to content too).
struct ToolOutput {
  ToolOutput() = default;
  ToolOutput(bool success, std::string text, std::optional<std::int64_t> condition_id = std::nullopt)
      : success(success), text(std::move(text)), condition_id(condition_id) {}

  bool success = true;
  std::string text;
  // evaluate_lisp with debug: the id of the error it holds live (the
  // result's metadata condition_id).
  std::optional<std::int64_t> condition_id;
  // The result as a JSON object's text, fitting the tool's output_schema
  // (MCP's structuredContent); empty: none.  Made only when the caller
  // asks (CallContext::wants_structured).
  std::string structured;
};

// ARGS is always a JSON object, already validated against the parameters.
// A handler may throw; the executor turns the exception into
// "Tool error: <what()>".
using Handler = std::function<ToolOutput(const json& args, CallContext& context)>;

// A precondition of a call, run after argument validation and before the
// approval of a dangerous tool and the :before hooks: nullopt lets the call
// go on; a message fails it with that text (no approval is asked, the
// handler does not run).  It sees the model's arguments only: arguments an
// approval modified are not checked again, so a handler checks again what
// it relies on.  A check may throw, like a handler ("Tool error: …").
using Check = std::function<std::optional<std::string>(const json& args, CallContext& context)>;

struct Tool {
  std::string name;
  // A short human name for clients' lists ("Evaluate Lisp"); empty: made
  // from the name (tool_title).
  std::string title;
  std::string description;
  std::vector<Parameter> parameters;
  std::vector<std::string> required;
  SafetyLevel safety_level = SafetyLevel::Safe;
  // Lower-case keywords without the colon: "introspection", "execution".
  std::vector<std::string> categories;
  HandlerKind kind = HandlerKind::Native;
  Handler handler;
  // Optional; see Check.
  Check check;
  // The text of a denied call of this tool; empty means the executor's
  // kDeniedMessage ("User denied tool execution").
  std::string denied_message;
  // The JSON schema of ToolOutput::structured (MCP's outputSchema); null:
  // the tool gives text only.
  json output_schema;

  const Parameter* find_parameter(std::string_view param_name) const;
  bool has_category(std::string_view category) const;
};

// Thrown when a tool definition breaks the protocol's invariants.
class ToolDefinitionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// ^[a-z][a-z0-9_]*$
bool is_snake_case(std::string_view name);

// TOOL's title, or one made from its name: "evaluate_lisp" → "Evaluate Lisp".
std::string tool_title(const Tool& tool);

// Throws ToolDefinitionError with a message naming the problem: empty or
// non-snake_case name, empty description, duplicate or empty parameter
// name, required name not among the parameters, missing handler.
void validate_tool_definition(const Tool& tool);

}  // namespace agentq
