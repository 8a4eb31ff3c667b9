// Whose code runs on a Lisp thread: the person's, or an agent's (the chat's
// model, an MCP client, a tool call made through the Lisp API).  An agent's
// code is read before it runs, and what it does to the world (files,
// processes, Emacs) asks the person first (lisp/agent-code.lisp); the
// person's own code runs as typed.
//
// The state lives here, in C++, where evaluated code cannot set it: Lisp
// may only lower it (make a thread an agent's), adopt a state it was handed
// as a token by the runtime, or have an approval the host gave raise it.
#pragma once

#include <string_view>

namespace agentq::ecl {

enum class Origin {
  User,           // the person's own code: runs as typed
  Agent,          // an agent's: world-touching steps ask first
  ApprovedAgent,  // an agent's call the person approved: runs as the person's
};

// This thread's origin (a thread never set is the person's: Emacs's and
// the runtime's own threads; a thread evaluated code starts adopts its
// creator's, see lisp/agent-code.lisp).
Origin current_origin();
void set_current_origin(Origin origin);

// True when ANSWER, the text Emacs printed for an approval question
// (sly-agent-q--approve-agent-code), lets the call go on: "approved" or a
// modification.
bool approval_grants(std::string_view answer);

// The person's setting sly-agent-q-ask-before-agent-code: every agent's
// evaluation asks, whatever its code touches (%ASK-BEFORE-AGENT-CODE-P).
void set_ask_before_agent_code(bool ask);

// Defines %JOB-ORIGIN, %ORIGIN-TOKEN, %ADOPT-ORIGIN and
// %ASK-BEFORE-AGENT-CODE-P in AGENT-Q.
void define_origin_functions();

}  // namespace agentq::ecl
