// What the Lisp worker reads itself while it has no job (the MCP stdio
// server's requests): one thread for the usual call, as a plain Lisp REPL
// reading its input has.  Handing each call from the thread that read it
// to the worker and back cost two wake-ups where the REPL has one, and
// with one CPU kept busy each could land behind the busy process.
//
// While the reading is the worker's (fd() >= 0), the worker waits on that
// descriptor as well as for jobs; when it is readable, the worker calls
// read(), which reads what it can without blocking and runs the usual
// calls there and then: an evaluation made from read() runs on the worker
// itself (Runtime::evaluate), with nobody waiting for it.  If it lasts
// (job_started's moment) or asks its owner for something (owner_needed),
// the reader's own thread takes it over (Runtime::claim_inline_job) and
// waits for it as any caller does: its time limit, a cancellation, an
// approval.  Implemented by mcp/stdio_server; core knows no ECL.
#pragma once

#include <chrono>

namespace agentq {

class IdleReader {
 public:
  virtual ~IdleReader() = default;

  // The descriptor the worker waits on while idle; -1 while the reading
  // is not the worker's.  Any thread; must not block.
  virtual int fd() const = 0;

  // On the worker, when fd() is readable: reads and runs what it can
  // without blocking, then returns.  May hand the reading on (fd() -1).
  virtual void read() = 0;

  // On the worker, from read(): an evaluation has started on it.  Unless
  // it has finished by TAKE_OVER_AT, the reader's owner takes it over.
  virtual void job_started(std::chrono::steady_clock::time_point take_over_at) = 0;

  // From any thread: the evaluation started from read() asks its owner for
  // something (an approval, Emacs): take it over now.
  virtual void owner_needed() = 0;
};

}  // namespace agentq
