#include "app/services.hpp"

#include "ecl/evaluate_tool.hpp"

namespace agentq::app {

Services::Services() { ecl::register_evaluate_lisp(registry); }

Services& services() {
  // Never destroyed: threads (the async runner, ECL's) may use it at exit.
  static Services& instance = *new Services;
  return instance;
}

}  // namespace agentq::app
