// The Lisp-callable requests of running Lisp code to the host: Elisp to
// evaluate (eval-in-emacs) and approval questions about an agent's code,
// posted to the job's owner, the caller waiting for it, and answered on
// its thread (Runtime::Impl::serve_requests).  Part of the runtime
// (runtime_state.hpp).

#include "ecl/job_origin.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/lisp_string.hpp"
#include "ecl/runtime_state.hpp"

namespace agentq::ecl {

namespace {

// A ticket for %HOST-ANSWER, or 0 when no caller serves the running job.
// FORM is Elisp source text; an APPROVAL question is asked through
// CallContext::approve_in_host.
std::uint64_t post_host_request(cl_object form, bool approval) {
  Runtime::Impl& impl = *g_impl;
  if (!current_worker() || !ecl_stringp(form)) return 0;
  std::string text;
  if (!outside_lisp([&] { text = lisp_string_to_utf8(form); })) return 0;
  std::uint64_t ticket = 0;
  outside_lisp([&] {
    auto request = std::make_shared<HostRequest>();
    request->form = std::move(text);
    request->approval = approval;
    {
      std::lock_guard lock(impl.host_mutex);
      ticket = impl.next_ticket++;
      impl.host_requests[ticket] = request;
    }
    bool posted = impl.ask_owner([request](CallContext& owner) {
      request->answer_with(request->approval ? owner.approve_in_host(request->form) : owner.eval_in_host(request->form));
    });
    if (!posted) {
      std::lock_guard lock(impl.host_mutex);
      impl.host_requests.erase(ticket);
      ticket = 0;
    }
  });
  return ticket;
}

// (%ASK-HOST form) → a ticket for %HOST-ANSWER, or NIL when no caller
// serves the running job (FORM: Elisp source text).
cl_object ask_host(cl_object form) {
  std::uint64_t ticket = post_host_request(form, false);
  return one_value(ticket ? ecl_make_unsigned_integer(ticket) : ECL_NIL);
}

// (%ASK-APPROVAL form) → like %ASK-HOST, for an approval question about an
// agent's code.  An answer that approves makes the job an approved
// agent's (job_origin.hpp) when %HOST-ANSWER returns it: only the host's
// answer can, never evaluated code.
cl_object ask_approval(cl_object form) {
  std::uint64_t ticket = post_host_request(form, true);
  return one_value(ticket ? ecl_make_unsigned_integer(ticket) : ECL_NIL);
}

// (%HOST-ANSWER ticket wait-ms) → done-p ok-p text.  Waits at most WAIT-MS
// with interrupts held back; the Lisp side calls it again until done, so
// C-g and timeouts still reach the evaluation.
cl_object host_answer(cl_object ticket, cl_object wait_ms) {
  Runtime::Impl& impl = *g_impl;
  std::uint64_t id = ecl_to_uint64_t(ticket);
  long ms = ECL_FIXNUMP(wait_ms) ? ecl_fixnum(wait_ms) : 10;
  bool done = true, ok = false;
  std::string text = "unknown request to Emacs";
  outside_lisp([&] {
    std::shared_ptr<HostRequest> request;
    {
      std::lock_guard lock(impl.host_mutex);
      auto it = impl.host_requests.find(id);
      if (it == impl.host_requests.end()) return;
      request = it->second;
    }
    std::unique_lock lock(request->mutex);
    done = request->answered_cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return request->answered; });
    if (done) {
      ok = request->answer.ok;
      text = request->answer.text;
      if (request->approval && ok && current_origin() == Origin::Agent && approval_grants(text))
        set_current_origin(Origin::ApprovedAgent);
      lock.unlock();
      std::lock_guard map_lock(impl.host_mutex);
      impl.host_requests.erase(id);
    }
  });
  cl_object answer = done ? make_lisp_string(text) : ECL_NIL;
  cl_env_ptr env = ecl_process_env();
  env->values[0] = done ? ECL_T : ECL_NIL;
  env->values[1] = ok ? ECL_T : ECL_NIL;
  env->values[2] = answer;
  env->nvalues = 3;
  return env->values[0];
}

// (%FORGET-HOST-REQUEST ticket): the Lisp side stopped waiting.
cl_object forget_host_request(cl_object ticket) {
  Runtime::Impl& impl = *g_impl;
  std::uint64_t id = ecl_to_uint64_t(ticket);
  outside_lisp([&] {
    std::lock_guard lock(impl.host_mutex);
    impl.host_requests.erase(id);
  });
  return one_value(ECL_NIL);
}

}  // namespace

void define_host_request_functions() {
  define_lisp_function("%ASK-HOST", ask_host);
  define_lisp_function("%ASK-APPROVAL", ask_approval);
  define_lisp_function("%HOST-ANSWER", host_answer);
  define_lisp_function("%FORGET-HOST-REQUEST", forget_host_request);
}

}  // namespace agentq::ecl
