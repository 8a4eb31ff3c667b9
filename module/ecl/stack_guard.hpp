// C-stack overflow in ECL's own C code, made an error instead of a crash.
//
// Lisp code checks its C stack (ECL's ecl_cs_check, a STACK-OVERFLOW
// condition at the thread's limit), but much of ECL's C code recurses
// without a check: COPY-TREE, EQUAL, EQUALP, SXHASH, SUBST, TREE-EQUAL on a
// list nested a million deep ran past the limit into the thread's guard
// page, and with no stack left to run a signal handler on, the kernel
// killed the process (Emacs with it).
//
// An armed Lisp thread has an alternate signal stack and a few guard
// regions (PROT_NONE) in the unused bottom of its stack, below ECL's
// limit.  A fault in one of them runs the fault dispatcher (signals.cpp)
// on the alternate stack, which opens that guard and, when the faulting
// code may be unwound (it runs in libecl, outside ECL's interrupt-free
// sections: no allocator or other foreign lock is held), makes the thread
// resume below the guard in a function that signals EXT:STACK-OVERFLOW
// there, in the room down to the next guard.  The job's usual handlers
// report it and unwind, closing the guard again on the way out.  Code
// that may not be unwound (the collector, malloc, our own C++) goes on
// into the room below the guard and the next guard stops it; guards left
// open so are closed before the worker's next job.  (The collector scans
// a thread's stack from its stack pointer up; a guard is open whenever it
// lies in that range, and one the collector still meets, in the moment
// between closing and unwinding past it, is opened by the fault.)
//
// Other faults on an armed thread (EXT:SEGMENTATION-VIOLATION) are handed
// to ECL's handler on the thread's own stack, as before there was an
// alternate stack: Lisp code must not run on the small alternate stack.
//
// x86-64 Linux only; elsewhere arming does nothing.
#pragma once

#include <signal.h>

namespace agentq::ecl {

// Once, on the booting thread after cl_boot: the Lisp objects the
// overflow error is made of, and where libecl's code lies.
void prepare_stack_guard();

// Arms the calling thread, which ECL knows (its stack must be the one
// pthread gave it).  Idempotent; disarmed when the thread exits.  False
// when the thread could not be armed (small stack, no room in the table).
bool arm_stack_guard();

// On an armed thread between jobs, at a shallow depth: closes the guards
// an overflow opened and gives ECL its C-stack limit back.
void rearm_stack_guard();

// Called by the dispatcher for a SIGSEGV/SIGBUS on an ECL thread.  True
// when the fault was dealt with here (the thread resumes elsewhere, or
// goes on into an opened guard); false when it goes to ECL's handler as
// it came (an unarmed thread, or a fault past every guard).
// ECL_HANDLER: ECL's handler, for faults that are not an overflow.
bool handle_stack_fault(int sig, siginfo_t* info, void* context, void (*ecl_handler)(int, siginfo_t*, void*));

// Called by the dispatcher for a SIGSEGV on any thread first: a fault in
// a closed guard of another thread's stack (the collector scanning that
// stack) opens it and is done with.  True when that was the case.
bool open_foreign_guard(siginfo_t* info, void* context);

// For the tests: how many overflows armed threads turned into errors.
unsigned long stack_overflows_caught();

// Defines AGENT-Q::%ARM-STACK-GUARD (arms the calling Lisp thread).
void define_stack_guard_functions();

}  // namespace agentq::ecl
