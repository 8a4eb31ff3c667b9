// Checking a call's arguments against the tool's parameter schema before
// the handler runs.
#pragma once

#include <optional>
#include <string>

#include "core/tool.hpp"

namespace agentq {

// Returns nullopt when ARGS fits TOOL, else the message for the model:
//   "Invalid arguments: expected a JSON object, got array"
//   "Missing required argument: code"
//   "Invalid argument 'timeout': expected number, got string"
//   "Invalid argument 'limit': at most 50, got 100"
//   "Unknown argument 'bogus' for get_last_error (it takes no arguments)"
// A null value counts as absent.  An argument that is no parameter (nor a
// parameter's alias) is refused, as the schema's additionalProperties:
// false says: a misspelt name would otherwise be silently ignored.
// "integer" takes integers and floats with an integral value; "number"
// any number; a parameter's minimum and maximum bound both.
// ALLOW_UNKNOWN: other names pass (an approval's modified arguments, which
// carry the review's own: hunks_applied, hunks_total…).
std::optional<std::string> validate_arguments(const Tool& tool, const json& args, bool allow_unknown = false);

// JSON type name for messages: "string", "number", "integer", "boolean",
// "object", "array", "null".
std::string json_type_name(const json& value);

}  // namespace agentq
