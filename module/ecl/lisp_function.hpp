// Lisp functions written in C++.
#pragma once

#include <type_traits>

#include "ecl/ecl_api.hpp"

namespace agentq::ecl {

// Defines AGENT-Q::NAME as FUNCTION, which takes its arguments as
// cl_objects (the arity follows from its type).  Call on an ECL thread.
template <typename... Arguments>
void define_lisp_function(const char* name, cl_object (*function)(Arguments...)) {
  static_assert((std::is_same_v<Arguments, cl_object> && ...), "Lisp arguments are cl_objects");
  // ECL keeps every fixed-arity function as a cl_objectfn_fixed; the cast
  // through void(*)() says that is meant.
  ecl_def_c_function(ecl_make_symbol(name, "AGENT-Q"),
                     reinterpret_cast<cl_objectfn_fixed>(reinterpret_cast<void (*)()>(function)),
                     sizeof...(Arguments));
}

// VALUE as the only value of a Lisp function written in C++.
inline cl_object one_value(cl_object value) {
  cl_env_ptr env = ecl_process_env();
  env->nvalues = 1;
  return env->values[0] = value;
}

// Runs WORK, which must not touch Lisp, as an interrupt-free section: an
// interrupt arriving meanwhile is held back (the interrupt gate defers it)
// and run once WORK is over, when no C++ frame of it is left to unwind
// past (unwinding from inside would skip its destructors: leaked memory,
// descriptors).  False when WORK threw.
template <typename Work>
bool outside_lisp(Work&& work) {
  static const cl_object interrupts_enabled = ecl_make_symbol("*INTERRUPTS-ENABLED*", "EXT");
  cl_env_ptr env = ecl_process_env();
  const int was_disabled = env->disable_interrupts;
  env->disable_interrupts = 1;
  bool done = true;
  try {
    work();
  } catch (...) {
    done = false;
  }
  env->disable_interrupts = was_disabled;
  if (!was_disabled && env->interrupt_struct->pending_interrupt != ECL_NIL &&
      ecl_symbol_value(interrupts_enabled) != ECL_NIL)
    ecl_check_pending_interrupts(env);
  return done;
}

}  // namespace agentq::ecl
