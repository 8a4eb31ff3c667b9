// The one composition root: the session's Lisp (its runtime, settings and
// controls), the registry, the executor and the MCP dispatcher that every
// front door shares (the Emacs module, the MCP binary), with the built-in
// tools registered and handed the runtime they run their jobs on.
// emacs/ and mcp/ reach Lisp only through here.
#pragma once

#include "app/lisp.hpp"
#include "core/executor.hpp"
#include "core/jsonrpc.hpp"
#include "core/registry.hpp"

namespace agentq::app {

struct Services {
  Lisp lisp;
  Registry registry;
  Executor executor{registry};
  McpServer server{executor, ServerInfo{}};  // "sly-agent-q", the project's version
  Services();
};

// The process's services, made on first use.
Services& services();

// The services once every built-in tool is registered: the Agent-Q tools
// are defined in Lisp, so this boots the Lisp runtime (once; a boot that
// fails leaves the tools registered so far, and the calls that need Lisp
// report the failure).  For anything that looks tools up or lists them.
Services& services_with_tools();

}  // namespace agentq::app
