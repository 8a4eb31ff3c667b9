// The one composition root: the registry, the executor and the MCP
// dispatcher that every front door shares (the Emacs module now, the MCP
// binary later), with the built-in tools registered.
#pragma once

#include "core/executor.hpp"
#include "core/jsonrpc.hpp"
#include "core/registry.hpp"

namespace agentq::app {

struct Services {
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
