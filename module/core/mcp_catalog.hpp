// MCP resources and prompts: what a client may read from the session and
// the prompts it may offer its user.  Each resource is read by calling a
// safe tool (its text is the tool's), so what it shows and who may see it
// are the tools' own; a prompt's text is made here, with a tool's result
// in it where it needs the session's state.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/executor.hpp"

namespace agentq::mcp {

// resources/list's result: {"resources": [{uri, name, title, description, mimeType}…]}.
nlohmann::json resources_list();

// resources/templates/list's result: {"resourceTemplates": [{uriTemplate, name, …}…]}.
nlohmann::json resource_templates_list();

// The tool call that reads URI (a resource or a filled template), or
// nullopt when no resource has that URI.
std::optional<ToolCall> resource_call(const std::string& uri);

// prompts/list's result: {"prompts": [{name, title, description, arguments}…]}.
nlohmann::json prompts_list();

// A prompt: the tool call whose result it quotes (none: nullopt), and how
// to make its messages from that result's text.
struct PromptPlan {
  std::optional<ToolCall> call;
  std::string description;
  // The user message's text before and after the quoted result.
  std::string before, after;
};

// NAME's plan with ARGUMENTS (an object of strings, or null), or an error
// message (unknown prompt, a missing argument) in ERROR.
std::optional<PromptPlan> prompt_plan(const std::string& name, const nlohmann::json& arguments, std::string& error);

}  // namespace agentq::mcp
