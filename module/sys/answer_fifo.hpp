// The way back from the runner to an MCP bridge that skips Emacs's thread.
//
// Under `--emacs` every answer used to travel runner → pipe → Emacs's
// filter → the client's connection → bridge.  The bridge makes a FIFO in
// the socket's directory (the user's own) and asks Emacs to open it for
// writing; a finished tools/call is then written there by the runner
// itself, in one atomic write, and Emacs only does the bookkeeping.
//
// Opening is careful, because whoever can reach the socket names the
// file: only a FIFO, not a symbolic link, owned by this user, that no
// other user may open, with a reader already (nothing blocks).
#pragma once

#include <limits.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace agentq {

// The longest answer written at once: POSIX makes writes of up to
// PIPE_BUF bytes to a FIFO atomic, so lines never mix.
inline constexpr std::size_t kAnswerFifoAtomicBytes = PIPE_BUF;

// Opens the FIFO at PATH for writing, nonblocking and close-on-exec.
// Returns the descriptor, or -1 with WHY (a sentence) when PATH is not
// a FIFO of the user's own that only the user may open, or has no reader.
int open_answer_fifo(const std::string& path, std::string& why);

// The way there: the FIFO at PATH, checked the same way, opened for
// reading (nonblocking, close-on-exec), from which the Lisp worker reads
// a bridge's plain evaluations itself.  -1 with WHY when refused.
int open_request_fifo(const std::string& path, std::string& why);

// The bridge's side: makes a FIFO at PATH (replacing a name left there),
// mode 0600 whatever the umask, and opens it with FLAGS (O_RDONLY or
// O_RDWR; nonblocking, close-on-exec).  Returns the descriptor, or -1
// with WHY, the FIFO's name then removed.
int make_private_fifo(const std::string& path, int flags, std::string& why);

// Writes TEXT and a newline to FD in one write, whole or not at all (at
// most kAnswerFifoAtomicBytes).  For a caller that holds SIGPIPE off
// already (the bridge blocks it for the whole process).
bool write_line_whole(int fd, std::string_view text);

// Writes TEXT and a newline to FD in one atomic write.  False when it is
// longer than kAnswerFifoAtomicBytes, the FIFO is full, or its reader is
// gone (no SIGPIPE is left pending on the calling thread).
bool write_answer_line(int fd, std::string_view text);

}  // namespace agentq
