// Tools defined in Lisp (AGENT-Q:DEFINE-TOOL): registered in the one
// registry that Emacs and MCP use, and run as jobs that the worker hands to
// their Lisp handlers.
#pragma once

#include <functional>

#include "core/registry.hpp"
#include "core/tool.hpp"

namespace agentq::ecl {

// Where a tool defined in Lisp is registered: set by the composition root
// (app/services).  Throws ToolDefinitionError for a bad definition.
using ToolRegistrar = std::function<void(Tool)>;
void set_tool_registrar(ToolRegistrar registrar);

// Defines AGENT-Q::%DEFINE-TOOL.  Call on the worker thread at boot.
void define_lisp_tool_functions();

// Registers the session tools handled in Lisp: list_definitions (safe),
// reset_session and load_system (cautious).
void register_session_tools(Registry& registry);

}  // namespace agentq::ecl
