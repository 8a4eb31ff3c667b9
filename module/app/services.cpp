#include "app/services.hpp"

#include "ecl/evaluate_tool.hpp"
#include "ecl/lisp_tools.hpp"

namespace agentq::app {

Services::Services() {
  ecl::register_evaluate_lisp(registry, lisp.runtime(), lisp.evaluate_settings());
  // Tools defined in Lisp join the same registry; Lisp calls tools through
  // the same executor, and its hooks see every call.
  ecl::attach_tool_services(executor, lisp.runtime(), lisp.evaluate_settings());
}

Services& services() {
  // Never destroyed: threads (the async runner, ECL's) may use it at exit.
  static Services& instance = *new Services;
  return instance;
}

Services& services_with_tools() {
  Services& instance = services();
  try {
    instance.lisp.boot();
  } catch (const std::exception&) {
    // Reported by the calls that need the runtime.
  }
  return instance;
}

}  // namespace agentq::app
