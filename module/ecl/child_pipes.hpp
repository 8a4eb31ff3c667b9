// The process guard's ends of a child process's pipes: what a pipe holds
// now, and what it takes now, without waiting, so that the guard can copy
// Lisp streams to and from a child while it watches for C-g and timeouts.
#pragma once

namespace agentq::ecl {

// Defines, on an ECL thread:
//   (AGENT-Q::%READ-PIPE FD CARRY) → TEXT, CARRY, STATE: what the pipe FD
//     holds now (at most 1 MB), decoded as UTF-8 with U+FFFD for each byte
//     that is not (ECL's own decoder replaced a bad byte together with the
//     good ones after it).  CARRY is the bytes of a character the pipe cut
//     in two (a base string, "" at first); STATE :END at the end of the
//     pipe, :MORE when more may be there already, else NIL.
//   (AGENT-Q::%WRITE-PIPE FD DATA START) → NEXT, STATE: writes DATA from
//     START to its end (its fill pointer), a string as UTF-8 or a vector of
//     (UNSIGNED-BYTE 8) as it is, to the pipe FD as far as it takes it now
//     (at most 1 MB), never part of a character.  NEXT is the index after
//     what was written; STATE :FULL when the pipe took no more for now,
//     :CLOSED when it never will (nobody reads it), NIL when all is written.
void define_child_pipes();

}  // namespace agentq::ecl
