#include "app/lisp.hpp"

#include "ecl/evaluate_tool.hpp"
#include "ecl/job_origin.hpp"
#include "ecl/runtime.hpp"
#include "ecl/tiering.hpp"

namespace agentq::app {

Lisp::Lisp() : runtime_(ecl::Runtime::instance()), settings_(std::make_unique<ecl::EvaluateSettings>()) {}

Lisp::~Lisp() = default;

void Lisp::boot() {
  try {
    runtime_.ensure_booted();
  } catch (const ecl::RuntimeError& e) {
    throw LispError(e.what());
  }
}

void Lisp::start_boot() { runtime_.start_boot(); }


LispStatus Lisp::status() const {
  ecl::RuntimeStatus runtime = runtime_.status();
  ecl::TieringCounts tiering = ecl::tiering_counts();
  LispStatus status;
  status.booted = runtime.booted;
  status.alive = runtime.alive;
  status.boot_ms = runtime.boot_ms;
  status.cl_boot_ms = runtime.cl_boot_ms;
  status.jobs = runtime.jobs;
  status.heap_limit = runtime.heap_limit;
  status.replaced_workers = runtime.replaced_workers;
  status.abandoned_threads = runtime.abandoned_threads;
  status.held_errors = runtime.held_errors;
  status.native_tiering = ecl::native_tiering();
  status.tiering_waiting = tiering.waiting;
  status.tiering_native = tiering.native;
  status.tiering_bytecodes = tiering.bytecodes;
  status.tiering_in_child = tiering.in_child;
  status.tiering_in_session = tiering.in_session;
  return status;
}

bool Lisp::cancel(std::uint64_t job_id) { return runtime_.cancel(job_id); }
bool Lisp::break_job(std::uint64_t job_id) { return runtime_.break_job(job_id); }

void Lisp::restart_worker() {
  try {
    runtime_.restart_worker();
  } catch (const ecl::RuntimeError& e) {
    throw LispError(e.what());
  }
}

void Lisp::shutdown() { runtime_.shutdown(); }

void Lisp::set_idle_reader(IdleReader* reader) { runtime_.set_idle_reader(reader); }

bool Lisp::claim_inline_job() { return runtime_.claim_inline_job(); }

void Lisp::idle_reader_changed() { runtime_.idle_reader_changed(); }

bool Lisp::worker_idle() const { return runtime_.worker_idle(); }

bool Lisp::on_worker_thread() const { return runtime_.on_worker_thread(); }

bool Lisp::wake_ahead(std::chrono::milliseconds window, bool warm) { return runtime_.wake_ahead(window, warm); }

std::vector<std::string> Lisp::take_notes() { return ecl::take_runtime_notes(); }

void Lisp::set_eval_timeout(double seconds) { settings_->default_timeout_s = seconds; }

void Lisp::set_output_limit(std::size_t characters) { settings_->output_limit = characters; }

void Lisp::set_heap_limit(std::size_t bytes) { runtime_.set_heap_limit(bytes); }

void Lisp::set_native_tiering(bool on) { ecl::set_native_tiering(on); }

void Lisp::set_ask_before_agent_code(bool ask) { ecl::set_ask_before_agent_code(ask); }

}  // namespace agentq::app
