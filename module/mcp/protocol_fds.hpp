// Keeps stdout for the protocol alone.  The real stdin and stdout move to
// private descriptors (close-on-exec, so no child inherits them); fd 0
// becomes /dev/null and fd 1 a copy of stderr.  Whatever else in the
// process writes to fd 1 (ECL's own streams, C's stdout, a child process
// started with the parent's descriptors) lands in the log, and nothing
// but the server reads its requests.
#pragma once

#include "mcp/unique_fd.hpp"

namespace agentq::mcp {

struct ProtocolFds {
  UniqueFd in;   // the requests: what was fd 0
  UniqueFd out;  // the responses: what was fd 1
};

// Call before anything else may use fds 0 and 1 (before booting ECL).
// Throws std::system_error when a descriptor cannot be moved.
ProtocolFds take_protocol_fds();

}  // namespace agentq::mcp
