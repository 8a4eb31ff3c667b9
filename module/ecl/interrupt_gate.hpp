// Thread interrupts that wait until the thread is back in Lisp.
//
// ECL runs a thread interrupt (MP:INTERRUPT-PROCESS: our C-g and timeouts,
// and PROCESS-KILL) inside its signal handler, wherever the thread was.  When
// that is inside the C library (malloc, fork, stdio, GMP…) the interrupted
// code may hold a process-wide lock: fork() holds every malloc arena.
// Unwinding from there, or allocating in the handler, deadlocks the thread
// and then Emacs at its next malloc.  ECL itself only defers interrupts in
// its own critical sections.
//
// The gate sits in front of ECL's handler.  An interrupt that lands in code
// loaded before the Lisp world started (other than ECL and this module) is
// left in the thread's queue, and the sender signals again about a
// millisecond later (Runtime::evaluate); ECL runs the whole queue at the
// first signal that finds the thread in Lisp.  The same for ECL's own
// interrupt-free C sections, always: ECL would run the interrupt where such
// a section ends, just after a C library call and before Lisp records its
// effect (fclose done, the stream not yet marked closed: unwinding closes it
// again and glibc aborts the process), and to get there it write-protects
// the thread's environment, which a finalizer run inside the section (in
// the collector) writes first: ECL's "internal error", an unwind out of the
// collector.  (A loop of EXT:GC calls is let in where each collection ends,
// see INSTALL-COLLECTION-GUARD in lisp/guards.lisp.)  The same while the
// collector's finalizers run on the thread: they run through the gate's own
// notifier, with Lisp's interrupts off too (ECL's CLOSE in a stream's
// finalizer turns interrupts back on inside the allocation that ran it).
// The same inside the code of ECL's CLOSE of a file stream (on a C FILE or a
// bare descriptor) and of the function it ends in: ECL ends its
// interrupt-free section right after fclose (close), before the stream is
// marked closed, and an interrupt run there (a signal that came just then)
// left the stream open on a freed FILE, closed again by the unwinding's
// CLOSE :ABORT or the collector: a flush failing with EBADF, then glibc's
// abort or a corrupted heap.
// A thread blocked in a system call (sleep, read, a lock wait) is
// interrupted at once, as before: the call returned EINTR and holds nothing.
// Except two waits that may hold other locks: anything inside fork() (it
// takes libgc's lock and every malloc arena's in turn, waiting for each one
// another thread holds), and the C library's wait for one of its own locks;
// an interrupt run there allocated and deadlocked on its own fork's locks.
//
// Interrupts other code sends to its own Lisp threads get no repeat: one
// that lands in foreign code waits for the next signal or for the thread's
// next MP:WITHOUT-INTERRUPTS exit.
#pragma once

#include <cstddef>

namespace agentq::ecl {

// Call once on the worker after cl_boot, before any interrupt can be sent.
// Also makes the collector run its finalizers through the gate's notifier.
void install_interrupt_gate(int interrupt_signal);

// Interrupts the gate deferred so far: Runtime::evaluate signals the worker
// again when it grows; tests check it.
unsigned long deferred_interrupts();

// How many of ECL's close functions the gate found and keeps interrupts out
// of (3: a FILE stream's, a descriptor stream's, and the one both end in);
// 0 before install_interrupt_gate.
std::size_t guarded_close_functions();

}  // namespace agentq::ecl
