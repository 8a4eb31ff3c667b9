#include "ecl/job_origin.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <random>

#include "ecl/lisp_function.hpp"

namespace agentq::ecl {

namespace {

thread_local Origin t_origin = Origin::User;
std::atomic<bool> g_ask_before_agent_code{false};

// One secret number per state, drawn at boot: a token is what the runtime
// hands a thread evaluated code starts (or a finalizer) so that it runs as
// its creator did.  Code can only get the token of its own state, so no
// token raises an agent's thread to the person's.
const std::array<cl_fixnum, 3>& tokens() {
  static const std::array<cl_fixnum, 3> drawn = [] {
    std::random_device device;
    std::mt19937_64 generator((static_cast<std::uint64_t>(device()) << 32) ^ device());
    std::uniform_int_distribution<cl_fixnum> range(1 << 20, MOST_POSITIVE_FIXNUM);
    std::array<cl_fixnum, 3> out{};
    do {
      for (cl_fixnum& token : out) token = range(generator);
    } while (out[0] == out[1] || out[1] == out[2] || out[0] == out[2]);
    return out;
  }();
  return drawn;
}

// (%JOB-ORIGIN) → NIL (the person's), :AGENT or :APPROVED.
cl_object job_origin() {
  static const cl_object agent = ecl_make_keyword("AGENT");
  static const cl_object approved = ecl_make_keyword("APPROVED");
  switch (t_origin) {
    case Origin::Agent:
      return one_value(agent);
    case Origin::ApprovedAgent:
      return one_value(approved);
    default:
      return one_value(ECL_NIL);
  }
}

// (%ORIGIN-TOKEN) → the token of this thread's state.
cl_object origin_token() { return one_value(ecl_make_fixnum(tokens()[static_cast<int>(t_origin)])); }

// (%ADOPT-ORIGIN token-or-:agent) → T when this thread took that state.
// :AGENT lowers any thread to an agent's; a token gives its own state.
cl_object adopt_origin(cl_object token) {
  static const cl_object agent = ecl_make_keyword("AGENT");
  if (token == agent) {
    t_origin = Origin::Agent;
    return one_value(ECL_T);
  }
  if (!ECL_FIXNUMP(token)) return one_value(ECL_NIL);
  const auto& known = tokens();
  for (int state = 0; state < 3; ++state) {
    if (known[state] == ecl_fixnum(token)) {
      t_origin = static_cast<Origin>(state);
      return one_value(ECL_T);
    }
  }
  return one_value(ECL_NIL);
}

// (%ASK-BEFORE-AGENT-CODE-P) → T when every agent's evaluation asks.
cl_object ask_before_agent_code_p() {
  return one_value(g_ask_before_agent_code.load(std::memory_order_relaxed) ? ECL_T : ECL_NIL);
}

}  // namespace

void set_ask_before_agent_code(bool ask) { g_ask_before_agent_code.store(ask, std::memory_order_relaxed); }

Origin current_origin() { return t_origin; }
void set_current_origin(Origin origin) { t_origin = origin; }

bool approval_grants(std::string_view answer) {
  return answer == "\"approved\"" || answer.rfind("(\"modified\" . ", 0) == 0;
}

void define_origin_functions() {
  (void)tokens();
  define_lisp_function("%JOB-ORIGIN", job_origin);
  define_lisp_function("%ORIGIN-TOKEN", origin_token);
  define_lisp_function("%ADOPT-ORIGIN", adopt_origin);
  define_lisp_function("%ASK-BEFORE-AGENT-CODE-P", ask_before_agent_code_p);
}

}  // namespace agentq::ecl
