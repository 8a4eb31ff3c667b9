// The compile child: a background native compile runs its Lisp half (ECL's
// compiler, up to the C file) in a forked copy of the process, so that the
// compiler's allocations and live data never enter the session's heap,
// where every collection stops the worker too.  The parent then runs gcc
// and loads the result.  The Lisp half is in lisp/compile-child.lisp.
#pragma once

namespace agentq::ecl {

// Defines, on an ECL thread:
//   (AGENT-Q::%FORK-COMPILE-CHILD) → the child's pid in the parent, 0 in
//     the child, NIL when fork failed.  The child is the calling thread
//     alone: libgc is told (GC_atfork_*), every signal but the faults is
//     blocked, it is in a process group of its own (so killing the group
//     ends a gcc it might start), it dies with the thread that made it, and
//     no finalizer runs in it (one could write a stream's buffer twice).
//   (AGENT-Q::%MARK-LIVE-OBJECTS) → NIL: in the child, a full collection,
//     then no more (GC_disable), so that %PREEXISTING-OBJECT-P can tell the
//     objects that existed at the fork from the ones made since (an object
//     made since taken as an older one only makes the batch compile in the
//     session; the other way round cannot happen: every live object is
//     marked).
//   (AGENT-Q::%PREEXISTING-OBJECT-P OBJECT) → true when OBJECT is not an
//     immediate and is either outside libgc's heap or was live at
//     %MARK-LIVE-OBJECTS.
//   (AGENT-Q::%CHILD-EXIT CODE) → does not return: _exit(CODE).
//   (AGENT-Q::%WAIT-CHILD PID TIMEOUT-MS STALL-MS) → its exit status (128
//     + signal when killed), or, after killing its process group and
//     reaping it, :TIMEOUT past TIMEOUT-MS, or :STALLED when it used no CPU
//     time for STALL-MS (0: never), as a child waiting on a lock held at
//     the fork would.
//   (AGENT-Q::%MAKE-PRIVATE-DIRECTORY) → a new directory only this user
//     can read ("/tmp/sly-agent-q-compile-XXXXXX/", under $TMPDIR if set),
//     or NIL.  Removed at exit if it is still there.
//   (AGENT-Q::%REMOVE-PRIVATE-DIRECTORY PATH) → T: PATH, made by
//     %MAKE-PRIVATE-DIRECTORY, is removed with the files in it (not
//     subdirectories); NIL for any other PATH.
void define_compile_child_functions();

}  // namespace agentq::ecl
