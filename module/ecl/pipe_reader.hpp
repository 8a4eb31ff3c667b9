// Reading a child process's output pipe for the process guard: whatever
// the pipe holds now, without waiting, decoded as UTF-8 with U+FFFD for
// each byte that is not (ECL's own decoder replaced a bad byte together
// with the good ones after it).
#pragma once

namespace agentq::ecl {

// Defines, on an ECL thread:
//   (AGENT-Q::%READ-PIPE FD CARRY) → TEXT, CARRY, STATE: what the pipe FD
//     holds now (at most 1 MB), CARRY the bytes of a character the pipe
//     cut in two (a base string, "" at first), STATE :END at the end of
//     the pipe, :MORE when more may be there already, else NIL.
void define_pipe_reader();

}  // namespace agentq::ecl
