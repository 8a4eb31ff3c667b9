// Tools defined in Lisp (AGENT-Q:DEFINE-TOOL, REGISTER-TOOL) and Lisp's
// view of the one registry and executor: registered where Emacs and MCP see
// them, run as jobs that the worker hands to their Lisp handlers, and
// called from Lisp (EXECUTE-TOOL-CALLS) through the executor's own lookup,
// validation and counters.
#pragma once

#include "core/executor.hpp"
#include "core/registry.hpp"
#include "ecl/evaluate_tool.hpp"
#include "ecl/runtime.hpp"

namespace agentq::ecl {

// Gives Lisp the executor (and its registry) every front door uses, and
// the runtime and settings the jobs of the tools it defines run with; adds
// the standing hook that runs Lisp's *TOOL-EXECUTION-HOOKS* for calls made
// from Emacs or MCP.  Called once by the composition root (app/services),
// before any call runs.
void attach_tool_services(Executor& executor, Runtime& runtime, const EvaluateSettings& settings);

// Defines the AGENT-Q::%… functions of Lisp's tool API.  Call on the
// worker thread at boot.
void define_lisp_tool_functions();

}  // namespace agentq::ecl
