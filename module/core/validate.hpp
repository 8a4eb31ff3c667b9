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
// A null value counts as absent.  Arguments not among the parameters are
// allowed (models add extras; handlers may read aliases).  "integer" takes
// integers and floats with an integral value; "number" any number.
std::optional<std::string> validate_arguments(const Tool& tool, const json& args);

// JSON type name for messages: "string", "number", "integer", "boolean",
// "object", "array", "null".
std::string json_type_name(const json& value);

}  // namespace agentq
