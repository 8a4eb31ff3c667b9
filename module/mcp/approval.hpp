// Approval of dangerous tools without a person to ask: all of them
// (--allow-dangerous) or none, with a denial that says how to allow them.
#pragma once

#include <string>

#include "core/executor.hpp"

namespace agentq::mcp {

// The text of a dangerous call denied because --allow-dangerous is off.
std::string headless_denial(const Tool& tool);

ApprovalFunction headless_approval(bool allow_dangerous);

// What the headless server answers when an agent's code (evaluate_lisp
// and the other tools that run code) would touch the world: approved with
// --allow-dangerous, else refused with a text that says how to allow it.
// The answer is as Emacs prints it for Lisp (CallContext::approve_in_host).
HostAnswer headless_code_approval(bool allow_dangerous);

}  // namespace agentq::mcp
