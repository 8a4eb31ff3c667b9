// The embedded ECL: one Lisp image per process, living on its own thread.
// Nothing outside module/ecl calls ECL; every other thread talks to it
// through jobs.  See docs/ecl-in-emacs.md for why each precaution exists.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/call_context.hpp"
#include "core/idle_reader.hpp"

namespace agentq::ecl {

// Raised when the Lisp runtime cannot be booted or has died.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A job: an evaluate_lisp call (TOOL empty: CODE, PACKAGE, CAPTURE_TIME)
// or a call of the Lisp-handled tool TOOL with ARGUMENTS, dispatched inside
// ECL through the table of Lisp job handlers.  The limits apply to both.
struct EvalRequest {
  std::string tool;
  nlohmann::json arguments;
  std::string code;
  std::string package;  // empty ⇒ the session's package
  bool capture_time = false;
  bool debugger = false;  // an error stops in the REPL's debugger (CallContext::wants_debugger)
  bool hold_errors = false;  // an unhandled error is held live (evaluate_lisp's debug: true)
  bool structured = false;   // also make EvalOutcome::structure (CallContext::wants_structured)
  bool stream_output = false;  // a copy of the output to CallContext::output as printed (streams_output)
  std::chrono::milliseconds timeout{30000};
  std::size_t output_limit = 1000000;  // characters kept per output section
  // Nonzero: an interactive evaluation (CallContext::interactive_key), whose
  // output goes to CallContext::output as it is written.
  std::uint64_t interactive_key = 0;
  // An agent's job (not CallContext::user_origin): its code is read before
  // it runs and its world-touching steps ask (ecl/job_origin.hpp).
  bool agent = false;
  // An agent's call the person approved (a dangerous tool's, asked by the
  // executor): it runs as the person's.
  bool approved = false;
};

struct EvalOutcome {
  EvalOutcome() = default;
  EvalOutcome(bool success, std::string text, std::string structure = {})
      : success(success), text(std::move(text)), structure(std::move(structure)) {}

  bool success = false;
  std::string text;  // the contract's result text, or the [ERROR] text
  // When the request was structured and the evaluation succeeded: its
  // values and output as a JSON object's text (%SET-JOB-STRUCTURE).
  std::string structure;
};

struct RuntimeStatus {
  bool booted = false;
  bool alive = false;
  double boot_ms = 0;     // thread start → ready for the first job
  double cl_boot_ms = 0;  // of which ECL's own cl_boot
  std::uint64_t jobs = 0;
  std::size_t heap_limit = 0;
  std::uint64_t replaced_workers = 0;   // fresh worker threads started so far
  std::uint64_t abandoned_threads = 0;  // retired workers still running Lisp code
  std::uint64_t held_errors = 0;        // former workers holding an error (evaluate_lisp's debug)
};

class Runtime {
 public:
  // The process's one runtime.
  static Runtime& instance();

  // Boots ECL on its thread if it is not running yet (idempotent, thread
  // safe).  Throws RuntimeError when booting fails or the runtime is dead.
  void ensure_booted();
  // Starts booting, if it has not started, and returns at once: the first
  // call that needs Lisp (ensure_booted) then waits only for what is left.
  // An Emacs serving MCP boots so as its server starts, not at the first
  // client's initialize (150 ms quiet; 1.8 s, once 6.3 s, under load).
  void start_boot();

  // Runs CODE per the evaluate-lisp contract and waits for it on the calling
  // thread, calling context.poll() every few milliseconds.  When poll()
  // returns true or the timeout passes, the evaluation is interrupted and
  // unwinds; the call returns an [ERROR] outcome.  Never throws for
  // anything the evaluated code does; throws RuntimeError only when the
  // runtime cannot run at all.
  EvalOutcome evaluate(EvalRequest request, CallContext& context);

  // Stops job JOB_ID (queued or running) from any thread, the way C-g or a
  // timeout stops it: its owner's call returns [ERROR] INTERRUPTED
  // (cancelled).  False when no such job is queued or running.  The id
  // reaches the owner through CallContext::job_queued.
  bool cancel(std::uint64_t job_id);
  // The REPL's C-c C-c: the running job JOB_ID, an evaluation with the
  // REPL's debugger, stops in the debugger with a CONTINUE restart (Lisp's
  // INTERRUPT-JOB, reason :BREAK).  False when JOB_ID is not running, or
  // when its last break is still waiting to be taken (interrupts held off):
  // the caller cancels instead.
  bool break_job(std::uint64_t job_id);

  // A call is on its way (an agent's tool call is streaming in): the worker
  // wakes now, if it sleeps, and polls for the next job for WINDOW, as it
  // does for 2 ms after each job; with WARM, it first runs a throwaway
  // evaluation ('AGENT-Q::WARM-UP, left out of the REPL's history), so that the
  // call finds its code and data in the caches.  Does nothing (false) unless the runtime runs and is idle:
  // never boots it, never waits.
  bool wake_ahead(std::chrono::milliseconds window, bool warm);

  // While READER's reading is the worker's, the idle worker waits on its
  // descriptor too and runs what it reads itself (core/idle_reader.hpp).
  // Null: none.  Setting another waits until the worker has left the last
  // one's read(), so that it can be destroyed.
  void set_idle_reader(IdleReader* reader);
  // The idle reader's owner takes over the evaluation the worker runs for
  // it: true, and the owner then waits for it (CallContext::
  // adopts_running_job); false when the worker has already kept its
  // result (it finished), and answers it itself.
  bool claim_inline_job();
  // The idle reader's descriptor changed (its reading became the
  // worker's): an idle worker looks again.
  void idle_reader_changed();
  // True when the worker runs no job, none is queued and none is left
  // unwinding: the reading may be given to it.
  bool worker_idle() const;

  // True on the Lisp worker thread (not one retired since).
  bool on_worker_thread() const;

  // Retires the worker thread and starts a fresh one in the same image
  // (definitions kept).  A job it was running is answered INTERRUPTED and
  // left to run on at the lowest priority.
  void restart_worker();

  // Heap limit in bytes for the Lisp heap (0 ⇒ ECL's default).  Takes effect
  // at boot, or before the next job when already booted.
  void set_heap_limit(std::size_t bytes);

  RuntimeStatus status() const;

  // Stops the worker and shuts ECL down on its own thread.  Idempotent; the
  // runtime cannot be booted again in this process afterwards.
  void shutdown();

  // For tests of the wait loop: work posted here from the ECL thread runs
  // on the thread that is waiting in evaluate().  Returns false when no
  // thread is waiting.
  bool post_to_waiter(std::function<void()> work);

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  struct Impl;  // opaque; public only so the runtime's pieces can name it (runtime_state.hpp)

 private:
  Runtime();
  ~Runtime();
  Impl* impl_;  // lives for the whole process: ECL cannot be restarted
};

}  // namespace agentq::ecl
