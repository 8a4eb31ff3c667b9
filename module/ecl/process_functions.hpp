// The Lisp side's view of the processes a child process started
// (sys/process_tree): the process guard ends them with the child when
// C-g or a timeout interrupts its wait.
#pragma once

namespace agentq::ecl {

// Defines, on an ECL thread:
//   (AGENT-Q::%STOP-FAMILY PID-OR-FAMILY MILLISECONDS) → FAMILY: the process
//     PID (or the members of FAMILY that still run) and its descendants in
//     its session, each stopped, as ((PID . START-TIME) …), parents first;
//     it looks for new ones for at most MILLISECONDS;
//   (AGENT-Q::%ANY-RUNNING-P FAMILY) → whether any member still runs;
//   (AGENT-Q::%END-PROCESSES FAMILY HOW) → NIL; HOW is :TERMINATE (SIGTERM
//     to all, then SIGCONT) or :KILL (SIGKILL).
// They read /proc with interrupts held back, and run a pending interrupt
// only once that is done.
void define_process_functions();

}  // namespace agentq::ecl
