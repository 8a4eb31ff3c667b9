// Approval of dangerous tools without a person to ask: all of them
// (--allow-dangerous) or none, with a denial that says how to allow them.
#pragma once

#include <string>

#include "core/executor.hpp"

namespace agentq::mcp {

// The text of a dangerous call denied because --allow-dangerous is off.
std::string headless_denial(const Tool& tool);

ApprovalFunction headless_approval(bool allow_dangerous);

}  // namespace agentq::mcp
