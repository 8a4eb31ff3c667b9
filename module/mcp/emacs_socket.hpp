// Where a running Emacs serves MCP (M-x sly-agent-q-mcp-server-start),
// and connecting to it.
#pragma once

#include <string>

#include "mcp/unique_fd.hpp"

namespace agentq::mcp {

// The default socket, as the Elisp defcustom sly-agent-q-mcp-socket has it:
// "sly-agent-q/mcp.sock" under $XDG_RUNTIME_DIR, or else under
// sly-agent-q-UID in $TMPDIR (/tmp when unset).
std::string default_emacs_socket();

// A non-blocking, close-on-exec connection to the local socket PATH; an
// empty UniqueFd, with ERROR set (errno's text), when nobody listens there.
UniqueFd connect_emacs_socket(const std::string& path, std::string& error);

}  // namespace agentq::mcp
