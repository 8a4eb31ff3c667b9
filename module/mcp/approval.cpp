#include "mcp/approval.hpp"

namespace agentq::mcp {

std::string headless_denial(const Tool& tool) {
  return "Denied: " + tool.name +
         " is a dangerous tool (it makes lasting changes outside the Lisp session) and this MCP server runs "
         "headless, with nobody to approve it. Do not retry; the user can run sly-agent-q-mcp with "
         "--allow-dangerous to allow it.";
}

ApprovalFunction headless_approval(bool allow_dangerous) {
  if (allow_dangerous) {
    return [](const Tool&, const json&) {
      ApprovalDecision decision;
      decision.kind = ApprovalKind::Approved;
      return decision;
    };
  }
  return [](const Tool& tool, const json&) {
    ApprovalDecision decision;
    decision.kind = ApprovalKind::Denied;
    decision.message = headless_denial(tool);
    return decision;
  };
}

HostAnswer headless_code_approval(bool allow_dangerous) {
  if (allow_dangerous) return {true, "\"approved\""};
  return {true,
          "(\"refused\" . \"Denied: this code touches the world outside the Lisp session (see the findings above) "
          "and this MCP server runs headless, with nobody to approve it. Do not retry; the user can run "
          "sly-agent-q-mcp with --allow-dangerous to allow it.\")"};
}

}  // namespace agentq::mcp
