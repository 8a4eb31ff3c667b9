#include "app/services.hpp"

#include "ecl/evaluate_tool.hpp"
#include "ecl/lisp_tools.hpp"

namespace agentq::app {

Services::Services() {
  ecl::register_evaluate_lisp(registry);
  ecl::register_session_tools(registry);
  // Tools defined in Lisp (AGENT-Q:DEFINE-TOOL) join the same registry.
  ecl::set_tool_registrar([this](Tool tool) { registry.register_tool(std::move(tool)); });
}

Services& services() {
  // Never destroyed: threads (the async runner, ECL's) may use it at exit.
  static Services& instance = *new Services;
  return instance;
}

}  // namespace agentq::app
