// The Lisp side's view of the processes a child process started
// (core/process_tree): the process guard ends them with the child when
// C-g or a timeout interrupts its wait.
#pragma once

namespace agentq::ecl {

// Defines, on an ECL thread:
//   (AGENT-Q::%DESCENDANTS PID) → ((PID . START-TIME) …), parents first,
//     of those still in PID's session (core/process_tree);
//   (AGENT-Q::%END-PROCESSES PROCESSES HOW) → how many of PROCESSES (as
//     %DESCENDANTS gives them) still ran; HOW is :PROBE (send nothing),
//     :TERMINATE (SIGTERM) or :KILL (SIGKILL).
void define_process_functions();

}  // namespace agentq::ecl
