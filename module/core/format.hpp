// format-tool-result of contract tool-execution, for values produced in C++.
#pragma once

#include <string>

#include "core/tool.hpp"

namespace agentq {

// string → unchanged; null → "nil"; false → "nil"; true → "T";
// number → its printed form (integers exactly, floats shortest round-trip);
// array → s-expression "(1 2 \"x\")" with strings quoted, nested arrays
// nested; object → plist "(:key value …)".
std::string format_tool_result(const json& value);

}  // namespace agentq
