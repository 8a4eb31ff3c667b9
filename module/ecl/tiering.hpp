// Native tiering's host side: whether it is on (an option of the host),
// and the notes the background compiler leaves for the host's log.  The
// Lisp half is lisp/tiering.lisp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace agentq::ecl {

// On by default; the Emacs option sly-agent-q-native-tiering turns it off.
// Read by Lisp for each DEFUN evaluated at top level.
void set_native_tiering(bool on);
bool native_tiering();

// The lines the background compiler posted since the last call (at most
// the last 100), oldest first.  Any thread.
std::vector<std::string> take_runtime_notes();

// Definitions waiting for the background compiler, made native, and left
// as bytecodes since boot, and batches whose Lisp half ran in a compile
// child or in the session, as the Lisp side last published them.
struct TieringCounts {
  std::uint64_t waiting = 0;
  std::uint64_t native = 0;
  std::uint64_t bytecodes = 0;
  std::uint64_t in_child = 0;
  std::uint64_t in_session = 0;
};
TieringCounts tiering_counts();

// Defines, on an ECL thread:
//   (AGENT-Q::%TIERING-ENABLED-P) → whether native tiering is on;
//   (AGENT-Q::%POST-NOTE TEXT) → NIL: TEXT for the host's log;
//   (AGENT-Q::%PUBLISH-TIERING-COUNTS WAITING NATIVE BYTECODES IN-CHILD
//     IN-SESSION) → NIL.
void define_tiering_functions();

}  // namespace agentq::ecl
