#include "ecl/lisp_tools.hpp"

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecl/evaluate_tool.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/lisp_string.hpp"
#include "ecl/runtime.hpp"

namespace agentq::ecl {

namespace {

std::mutex g_registrar_mutex;
ToolRegistrar g_registrar;

// A string designator's text: a string, or a symbol's name in lower case
// (:string → "string").  Throws for anything else.
std::string designator_text(cl_object value, const char* what) {
  if (ecl_stringp(value)) return lisp_string_to_utf8(value);
  if (value != ECL_NIL && ECL_SYMBOLP(value)) {
    std::string name = lisp_string_to_utf8(ecl_symbol_name(value));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
  }
  throw ToolDefinitionError(std::string(what) + " must be a string or a symbol");
}

std::vector<cl_object> list_items(cl_object list, const char* what) {
  std::vector<cl_object> items;
  for (; list != ECL_NIL; list = ECL_CONS_CDR(list)) {
    if (!ECL_CONSP(list) || items.size() > 10000) throw ToolDefinitionError(std::string(what) + " must be a list");
    items.push_back(ECL_CONS_CAR(list));
  }
  return items;
}

std::vector<std::string> names(cl_object list, const char* what) {
  std::vector<std::string> out;
  for (cl_object item : list_items(list, what)) out.push_back(designator_text(item, what));
  return out;
}

// (:name "x" :type :string :description "…") → a Parameter.
Parameter parameter(cl_object plist, const std::string& tool) {
  Parameter out;
  std::string type = "string";
  std::vector<cl_object> items = list_items(plist, "each parameter");
  if (items.size() % 2 != 0) throw ToolDefinitionError("Tool " + tool + ": a parameter must be a plist");
  for (std::size_t i = 0; i < items.size(); i += 2) {
    std::string key = designator_text(items[i], "a parameter's key");
    if (key == "name")
      out.name = designator_text(items[i + 1], "a parameter's :name");
    else if (key == "type")
      type = designator_text(items[i + 1], "a parameter's :type");
    else if (key == "description")
      out.description = designator_text(items[i + 1], "a parameter's :description");
  }
  auto parsed = parse_param_type(type);
  if (!parsed)
    throw ToolDefinitionError("Tool " + tool + ": parameter \"" + out.name + "\" has unknown type \"" + type +
                              "\" (string, boolean, number, integer, object or array)");
  out.type = *parsed;
  return out;
}

// A tool handled in Lisp: each call is a job of the runtime, which the
// worker hands to the tool's function in the job-handler table.
Handler lisp_handler(const std::string& name) {
  return [name](const json& arguments, CallContext& context) -> ToolOutput {
    const EvaluateSettings& settings = evaluate_settings();
    EvalRequest request;
    request.tool = name;
    request.arguments = arguments;
    request.timeout = to_timeout(settings.default_timeout_s.load());
    request.output_limit = settings.output_limit.load();
    EvalOutcome outcome = Runtime::instance().evaluate(request, context);
    return {outcome.success, std::move(outcome.text)};
  };
}

// (%DEFINE-TOOL name description parameters required safety categories)
// → NIL, or a string saying what is wrong with the definition.
cl_object define_tool(cl_object name, cl_object description, cl_object parameters, cl_object required,
                      cl_object safety, cl_object categories) {
  std::string failure;
  bool failed = !outside_lisp([&] {
    try {
      Tool tool;
      tool.name = designator_text(name, "the tool's name");
      std::string canonical = tool.name;
      for (char& c : canonical)
        if (c == '-') c = '_';
      if (canonical == "evaluate_lisp" || canonical == "list_definitions" || canonical == "reset_session" ||
          canonical == "load_system")
        throw ToolDefinitionError(canonical + " is the runtime's own tool; choose another name");
      tool.description = description == ECL_NIL ? "" : designator_text(description, "the description");
      for (cl_object item : list_items(parameters, "the parameters")) tool.parameters.push_back(parameter(item, tool.name));
      tool.required = names(required, ":required");
      std::string level = designator_text(safety, ":safety-level");
      auto parsed = parse_safety_level(level);
      if (!parsed)
        throw ToolDefinitionError("Tool " + tool.name + ": unknown safety level " + level +
                                  " (:safe, :cautious or :dangerous)");
      tool.safety_level = *parsed;
      tool.categories = names(categories, ":categories");
      tool.kind = HandlerKind::Lisp;
      tool.handler = lisp_handler(tool.name);
      std::lock_guard lock(g_registrar_mutex);
      if (!g_registrar) throw ToolDefinitionError("no tool registry is attached to this Lisp runtime");
      g_registrar(std::move(tool));
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  if (failed && failure.empty()) failure = "the tool could not be defined (out of memory)";
  return one_value(failure.empty() ? ECL_NIL : make_lisp_string(failure));
}

}  // namespace

void set_tool_registrar(ToolRegistrar registrar) {
  std::lock_guard lock(g_registrar_mutex);
  g_registrar = std::move(registrar);
}

void define_lisp_tool_functions() { define_lisp_function("%DEFINE-TOOL", define_tool); }

void register_session_tools(Registry& registry) {
  Tool list;
  list.name = "list_definitions";
  list.description =
      "List the functions, variables and macros defined in this Lisp session (by evaluate_lisp, compile, "
      "load or loaded systems; not what the Lisp image came with), each with its lambda list or value. Use "
      "it to recall what exists before defining more, or to check that a definition took. Returns "
      "[Functions], [Variables] and [Macros] sections of `- NAME (LAMBDA-LIST)` / `- *NAME* = VALUE` lines.";
  list.parameters = {{"package", ParamType::String,
                      "Only the definitions of this package (default: every package the session used)."}};
  list.safety_level = SafetyLevel::Safe;
  list.categories = {"execution", "session"};
  list.kind = HandlerKind::Lisp;
  list.handler = lisp_handler(list.name);
  registry.register_tool(std::move(list));

  Tool reset;
  reset.name = "reset_session";
  reset.description =
      "Remove everything this Lisp session defined: functions, macros and variables are unbound, packages "
      "it made are deleted, the current package goes back to CL-USER, and the readtable and printer "
      "settings are made standard again. Use it to start over cleanly, or to recover a session whose "
      "readtable was broken. Definitions the Lisp image came with stay.";
  reset.safety_level = SafetyLevel::Cautious;
  reset.categories = {"execution", "session"};
  reset.kind = HandlerKind::Lisp;
  reset.handler = lisp_handler(reset.name);
  registry.register_tool(std::move(reset));

  // Its time limit is the user's ceiling, as for evaluate_lisp: a first
  // compile of a big system may need more, but an interrupted load keeps
  // the files compiled so far, so calling again goes on from there.
  Tool load;
  load.name = "load_system";
  load.description =
      "Load an ASDF system (a Common Lisp library or project) into this Lisp session, compiling it first "
      "when needed, so that evaluate_lisp can use its packages and functions. Systems are found in ASDF's "
      "standard source registry (Debian cl-* packages in /usr/share/common-lisp/source/, ~/common-lisp/) and "
      "in the directories the user configured. Compiled files are cached outside the sources "
      "(~/.cache/common-lisp/), so loading again is fast. Returns `Loading system: NAME` and `Loaded: NAME "
      "(version V)`, followed by any compiler [warnings]; a system that is not found, or a file that does not "
      "compile, gives an [ERROR] report. Libraries loaded from the system registry stay through "
      "reset_session; systems from the user's directories are session definitions.";
  load.parameters = {{"name", ParamType::String,
                      "The system's name, as in its .asd file, e.g. \"alexandria\" (case does not matter)."}};
  load.required = {"name"};
  load.safety_level = SafetyLevel::Cautious;
  load.categories = {"execution", "session"};
  load.kind = HandlerKind::Lisp;
  load.handler = lisp_handler(load.name);
  registry.register_tool(std::move(load));
}

}  // namespace agentq::ecl
