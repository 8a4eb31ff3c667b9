// Signals in the child processes that Lisp threads start.
//
// The Lisp threads block every asynchronous signal (those belong to Emacs's
// main thread), and a child keeps its parent thread's signal mask across
// exec: programs run by EXT:RUN-PROGRAM started with SIGTERM, SIGINT,
// SIGPIPE, SIGCHLD and the rest blocked, so SIGTERM could not end them.
#pragma once

namespace agentq::ecl {

// Registers, once, a fork handler that gives each child an empty signal
// mask.  (Emacs's own children come from its main thread, whose mask is
// empty already, or from vfork, which runs no fork handlers.)
void unblock_signals_in_children();

}  // namespace agentq::ecl
