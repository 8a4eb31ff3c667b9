// Small builders shared by the core tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/call_context.hpp"
#include "core/tool.hpp"

namespace agentq::testing {

inline Handler returns(std::string text) {
  return [text = std::move(text)](const json&, CallContext&) { return ToolOutput{true, text}; };
}

// A tool that echoes its arguments as compact JSON.
inline Handler echo_args() {
  return [](const json& args, CallContext&) { return ToolOutput{true, args.dump()}; };
}

inline Tool make_tool(std::string name, std::vector<Parameter> parameters = {}, std::vector<std::string> required = {},
                      SafetyLevel level = SafetyLevel::Safe, Handler handler = returns("ok"),
                      std::vector<std::string> categories = {}) {
  Tool tool;
  tool.name = std::move(name);
  tool.description = "Test tool " + tool.name + " that does something useful for the tests.";
  tool.parameters = std::move(parameters);
  tool.required = std::move(required);
  tool.safety_level = level;
  tool.categories = std::move(categories);
  tool.handler = std::move(handler);
  return tool;
}

inline Parameter param(std::string name, ParamType type = ParamType::String, std::string description = "") {
  if (description.empty()) description = "The " + name;
  return Parameter{std::move(name), type, std::move(description)};
}

}  // namespace agentq::testing
