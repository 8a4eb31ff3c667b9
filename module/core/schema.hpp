// Tool schemas for the providers: OpenAI function, Anthropic tool, MCP tool.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/registry.hpp"

namespace agentq {

enum class SchemaFormat { OpenAI, Anthropic, Mcp };

// "openai" (also "" and "function"), "anthropic", "mcp"; nullopt otherwise.
std::optional<SchemaFormat> parse_schema_format(std::string_view text);

// {"type":"object","properties":{…},"required":[…],"additionalProperties":false}:
// properties is always an object (also when empty), required always an
// array; a property has minimum, maximum and default when its parameter
// says them.
json parameters_schema(const Tool& tool);

// MCP's tool annotations, from the safety level and categories:
// readOnlyHint for a safe tool, and for a cautious one whose categories
// all say it reads (buffer, introspection, xref, clos, packages, files:
// read_buffer);
// destructiveHint for every other: a dangerous tool, and a cautious one
// that runs code (evaluate_lisp, load_system, reset_session…), which may
// change or delete anything the session holds.
json mcp_annotations(const Tool& tool);

// openai:    {"type":"function","function":{"name","description","parameters"}}
// anthropic: {"name","description","input_schema"}
// mcp:       {"name","title","description","inputSchema","annotations"}, and
//            "outputSchema" for a tool that has one (Tool::output_schema)
json tool_to_schema(const Tool& tool, SchemaFormat format = SchemaFormat::OpenAI);

// A JSON array of tool_to_schema, in the order given.
json tools_to_schema(const std::vector<ToolPtr>& tools, SchemaFormat format = SchemaFormat::OpenAI);

}  // namespace agentq
