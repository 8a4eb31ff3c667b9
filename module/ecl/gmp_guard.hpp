// GMP allocation that an ECL interrupt cannot split.
//
// Emacs owns GMP's memory functions (they must stay Emacs's: NOTES.md), so
// ECL's bignum code allocates with malloc.  ECL runs an interrupt (C-g,
// timeout) inside its signal handler, and that handler may itself use GMP:
// an interrupt landing inside malloc would take malloc's lock twice and
// deadlock the worker — and then Emacs, at its next malloc.  The wrappers
// installed here block the interrupt signal around each GMP allocation on
// ECL threads, so the interrupt is delivered just after.  Other threads
// (Emacs's own bignums) pass straight through.
#pragma once

namespace agentq::ecl {

// Call on the worker before cl_boot, while no other thread uses GMP.
void guard_gmp_allocation(int interrupt_signal);

}  // namespace agentq::ecl
