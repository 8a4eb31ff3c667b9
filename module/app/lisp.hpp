// The session's Lisp as the front doors see it: its settings, its status
// and the controls of its runtime.  emacs/ and mcp/ reach Lisp only
// through here (and through the tools, app/services); the runtime itself
// (ecl/runtime.hpp) is handed by the composition root to the tools that
// run jobs on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace agentq {
class IdleReader;
}

namespace agentq::ecl {
class Runtime;
struct EvaluateSettings;
}  // namespace agentq::ecl

namespace agentq::app {

// Raised when the Lisp runtime cannot be booted or has died.
class LispError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// RuntimeStatus's fields and tiering's, copied: emacs/ and mcp/ see Lisp
// through this header alone, which includes nothing of ecl/.
struct LispStatus {
  bool booted = false;
  bool alive = false;
  double boot_ms = 0;     // thread start → ready for the first job
  double cl_boot_ms = 0;  // of which ECL's own cl_boot
  std::uint64_t jobs = 0;
  std::size_t heap_limit = 0;
  std::uint64_t replaced_workers = 0;   // fresh worker threads started so far
  std::uint64_t abandoned_threads = 0;  // retired workers still running Lisp code
  std::uint64_t held_errors = 0;        // threads holding an error (evaluate_lisp's debug)
  bool native_tiering = false;
  // Native tiering's counts, as the Lisp side last published them
  // (ecl/tiering.hpp).
  std::uint64_t tiering_waiting = 0;
  std::uint64_t tiering_native = 0;
  std::uint64_t tiering_bytecodes = 0;
  std::uint64_t tiering_in_child = 0;
  std::uint64_t tiering_in_session = 0;
};

class Lisp {
 public:
  Lisp();
  ~Lisp();
  Lisp(const Lisp&) = delete;
  Lisp& operator=(const Lisp&) = delete;

  // Boots the runtime if it is not running yet; throws LispError when it
  // cannot.
  void boot();
  LispStatus status() const;
  // Stops job JOB_ID (queued or running) from any thread, as C-g does
  // (Runtime::cancel).  False when no such job is queued or running.
  bool cancel(std::uint64_t job_id);
  // The REPL's C-c C-c: the running job JOB_ID stops in the REPL's
  // debugger with CONTINUE (Runtime::break_job).
  bool break_job(std::uint64_t job_id);
  // A fresh worker thread in the same image (Runtime::restart_worker).
  void restart_worker();
  // Starts booting and returns at once (Runtime::start_boot).
  void start_boot();
  // A call is on its way: the worker polls for WINDOW (Runtime::wake_ahead).
  bool wake_ahead(std::chrono::milliseconds window, bool warm);
  // Stops the runtime for good (Runtime::shutdown).
  void shutdown();
  // The worker reads READER's input itself while idle, and runs its calls
  // (core/idle_reader.hpp; Runtime::set_idle_reader); null: none.
  void set_idle_reader(IdleReader* reader);
  // Takes the evaluation the worker runs for its reader over
  // (Runtime::claim_inline_job).
  bool claim_inline_job();
  // Wakes the idle worker to look at its reader's descriptor again.
  void idle_reader_changed();
  // The worker runs nothing and has nothing left unwinding
  // (Runtime::worker_idle).
  bool worker_idle() const;
  // (Runtime::on_worker_thread).
  bool on_worker_thread() const;
  // The background compiler's lines for the log since the last call.
  std::vector<std::string> take_notes();

  // Settings, any time (Emacs: defcustoms).
  void set_eval_timeout(double seconds);  // ≤ 0: no timeout
  void set_output_limit(std::size_t characters);
  void set_heap_limit(std::size_t bytes);  // 0: ECL's default
  void set_native_tiering(bool on);
  void set_ask_before_agent_code(bool ask);

  // For the composition root: what the tools run their jobs with.
  ecl::Runtime& runtime() { return runtime_; }
  const ecl::EvaluateSettings& evaluate_settings() const { return *settings_; }

 private:
  ecl::Runtime& runtime_;
  std::unique_ptr<ecl::EvaluateSettings> settings_;
};

}  // namespace agentq::app
