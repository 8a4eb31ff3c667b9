#include "ecl/lisp_tools.hpp"

#include <atomic>
#include <chrono>
#include <cctype>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json_limits.hpp"
#include "core/session_changes.hpp"
#include "ecl/evaluate_tool.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/lisp_json.hpp"
#include "ecl/lisp_string.hpp"
#include "ecl/runtime.hpp"

namespace agentq::ecl {

namespace {

// What Lisp's tool functions reach: the executor (and its registry) every
// front door uses, and the runtime and settings the jobs of Lisp-defined
// tools run with.  The functions are C functions Lisp calls, with no
// closure to carry them: set once by the composition root (app/services,
// attach_tool_services) before Lisp boots.
struct ToolServices {
  Executor& executor;
  Runtime& runtime;
  const EvaluateSettings& settings;
};
std::atomic<const ToolServices*> g_services{nullptr};
// Lisp's *TOOL-EXECUTION-HOOKS* is non-empty (the worker says so after each
// job): calls from Emacs and MCP then run them.
std::atomic<bool> g_lisp_hooks{false};

// The name of the jobs that run Lisp's hooks (not a tool: never listed).
constexpr const char* kHooksJob = "%tool_hooks";

const ToolServices& services() {
  const ToolServices* services = g_services.load(std::memory_order_acquire);
  if (!services) throw std::runtime_error("no tool registry is attached to this Lisp runtime");
  return *services;
}

Executor& executor() { return services().executor; }

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

// A parameter's :minimum or :maximum: a real number.
double bound_number(cl_object value, const std::string& tool, const std::string& key) {
  if (!ECL_FIXNUMP(value) && !ECL_SINGLE_FLOAT_P(value) && !ECL_DOUBLE_FLOAT_P(value))
    throw ToolDefinitionError("Tool " + tool + ": a parameter's :" + key + " must be a number");
  return ecl_to_double(value);
}

// A parameter's :default as JSON: a number, a string, T (true) or :FALSE
// (false); NIL says none.
json default_value(cl_object value, const std::string& tool) {
  if (value == ECL_NIL) return nullptr;
  if (value == ECL_T) return true;
  if (ECL_FIXNUMP(value)) return static_cast<std::int64_t>(ecl_fixnum(value));
  if (ECL_SINGLE_FLOAT_P(value) || ECL_DOUBLE_FLOAT_P(value)) return ecl_to_double(value);
  if (ecl_stringp(value)) return lisp_string_to_utf8(value);
  if (ECL_SYMBOLP(value) && designator_text(value, "a :default") == "false") return false;
  throw ToolDefinitionError("Tool " + tool + ": a parameter's :default must be a number, a string, T or :FALSE");
}

// (:name "x" :type :string :description "…" [:minimum N :maximum N
// :default VALUE :aliases ("old-name") :enum ("a" "b")]) → a Parameter.
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
    else if (key == "minimum" || key == "maximum")
      (key == "minimum" ? out.minimum : out.maximum) = bound_number(items[i + 1], tool, key);
    else if (key == "default")
      out.default_value = default_value(items[i + 1], tool);
    else if (key == "aliases")
      out.aliases = names(items[i + 1], "a parameter's :aliases");
    else if (key == "enum")
      out.choices = names(items[i + 1], "a parameter's :enum");
  }
  auto parsed = parse_param_type(type);
  if (!parsed)
    throw ToolDefinitionError("Tool " + tool + ": parameter \"" + out.name + "\" has unknown type \"" + type +
                              "\" (string, boolean, number, integer, object or array)");
  out.type = *parsed;
  return out;
}

// Runs a job of TOOL on RUNTIME, with SETTINGS' timeout and output limit.
ToolOutput run_lisp_job(Runtime& runtime, const EvaluateSettings& settings, const std::string& tool,
                        const json& arguments, CallContext& context, bool dangerous = false) {
  EvalRequest request;
  request.tool = tool;
  // Lisp's hooks are the person's code (installed by them), whoever called.
  request.agent = tool != kHooksJob && !context.user_origin();
  // A dangerous tool runs only once approved (the executor asked): what
  // its handler does is what the person said yes to.
  request.approved = dangerous;
  request.arguments = arguments;
  request.timeout = to_timeout(settings.default_timeout_s.load());
  request.output_limit = settings.output_limit.load();
  request.structured = context.wants_structured();
  EvalOutcome outcome = runtime.evaluate(std::move(request), context);
  ToolOutput output{outcome.success, std::move(outcome.text)};
  output.structured = std::move(outcome.structure);
  return output;
}

// The handler of a Lisp-handled tool: each call is a job named TOOL, run on
// RUNTIME with SETTINGS.
Handler lisp_job_handler(Runtime& runtime, const EvaluateSettings& settings, std::string tool,
                         bool dangerous = false) {
  return [&runtime, &settings, tool = std::move(tool), dangerous](const json& arguments, CallContext& context) {
    return run_lisp_job(runtime, settings, tool, arguments, context, dangerous);
  };
}

// The runtime's own tools, which Lisp may not replace: evaluate_lisp, and
// those Lisp registers as its own at boot (the session tools, declared in
// lisp/ beside their handlers).  After boot (sealed) Lisp may register
// again only the ones it registered then.
std::mutex g_own_mutex;
std::set<std::string> g_lisp_own_tools;
bool g_own_tools_sealed = false;
constexpr const char* kEvaluateTool = "evaluate_lisp";

std::string canonical_tool_name(const std::string& name) {
  std::string canonical = name;
  for (char& c : canonical)
    if (c == '-') c = '_';
  return canonical;
}

// NAME's spelling with '_' for '-', when it names one of the runtime's own
// tools; else empty.
std::string runtime_tool_name(const std::string& name) {
  std::string canonical = canonical_tool_name(name);
  std::lock_guard<std::mutex> lock(g_own_mutex);
  return canonical == kEvaluateTool || g_lisp_own_tools.count(canonical) ? canonical : std::string();
}

// Whether Lisp may register NAME as one of the runtime's own tools.
bool may_register_own(const std::string& name) {
  std::string canonical = canonical_tool_name(name);
  std::lock_guard<std::mutex> lock(g_own_mutex);
  return canonical != kEvaluateTool && (!g_own_tools_sealed || g_lisp_own_tools.count(canonical));
}

// (%SEAL-OWN-TOOLS): no tool becomes the runtime's own from now on.
cl_object seal_own_tools() {
  std::lock_guard<std::mutex> lock(g_own_mutex);
  g_own_tools_sealed = true;
  return one_value(ECL_T);
}

// (%DEFINE-TOOL name description parameters required safety categories register
//               output-schema)
// → NIL, or a string saying what is wrong with the definition.  REGISTER
// NIL only checks the definition; :OWN registers one of the runtime's own
// tools (at boot), which later definitions may not replace.  OUTPUT-SCHEMA:
// NIL, or the JSON text of the tool's output schema (Tool::output_schema).
cl_object define_tool(cl_object name, cl_object description, cl_object parameters, cl_object required,
                      cl_object safety, cl_object categories, cl_object register_it, cl_object output_schema) {
  std::string failure;
  bool failed = !outside_lisp([&] {
    try {
      Tool tool;
      tool.name = designator_text(name, "the tool's name");
      const bool own_tool = register_it == ecl_make_keyword("OWN");
      if (own_tool && !may_register_own(tool.name))
        throw ToolDefinitionError(tool.name + " cannot become one of the runtime's own tools after boot");
      if (std::string own = runtime_tool_name(tool.name); !own.empty() && !own_tool)
        throw ToolDefinitionError(own + " is the runtime's own tool; choose another name");
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
      if (output_schema != ECL_NIL) {
        if (!ecl_stringp(output_schema)) throw ToolDefinitionError("Tool " + tool.name + ": :output-schema must be JSON text");
        tool.output_schema = json::parse(lisp_string_to_utf8(output_schema), nullptr, false);
        if (!tool.output_schema.is_object())
          throw ToolDefinitionError("Tool " + tool.name + ": :output-schema must be a JSON object's text");
      }
      tool.kind = HandlerKind::Lisp;
      tool.handler = lisp_job_handler(services().runtime, services().settings, tool.name,
                                      tool.safety_level == SafetyLevel::Dangerous);
      if (register_it == ECL_NIL) {
        validate_tool_definition(tool);
      } else {
        std::string registered = tool.name;
        executor().registry().register_tool(std::move(tool));
        if (own_tool) {
          std::lock_guard<std::mutex> lock(g_own_mutex);
          g_lisp_own_tools.insert(canonical_tool_name(registered));
        }
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  if (failed && failure.empty()) failure = "the tool could not be defined (out of memory)";
  return one_value(failure.empty() ? ECL_NIL : make_lisp_string(failure));
}

cl_object keyword(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return ecl_make_keyword(upper.c_str());
}

cl_object string_list(const std::vector<std::string>& strings, bool as_keywords) {
  cl_object list = ECL_NIL;
  for (auto it = strings.rbegin(); it != strings.rend(); ++it)
    list = ecl_cons(as_keywords ? keyword(*it) : make_lisp_string(*it), list);
  return list;
}

// (%TOOLS) → the registered tools, sorted by name, each as
// (NAME DESCRIPTION PARAMETERS REQUIRED SAFETY CATEGORIES KIND), PARAMETERS
// a list of (:name "x" :type :string :description "…").
cl_object tools() {
  std::vector<ToolPtr> found;
  outside_lisp([&] { found = executor().registry().filter(); });
  cl_object list = ECL_NIL;
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    const Tool& tool = **it;
    cl_object parameters = ECL_NIL;
    for (auto p = tool.parameters.rbegin(); p != tool.parameters.rend(); ++p)
      parameters = ecl_cons(cl_list(6, keyword("name"), make_lisp_string(p->name), keyword("type"),
                                    keyword(to_string(p->type)), keyword("description"),
                                    make_lisp_string(p->description)),
                            parameters);
    list = ecl_cons(cl_list(7, make_lisp_string(tool.name), make_lisp_string(tool.description), parameters,
                            string_list(tool.required, false), keyword(to_string(tool.safety_level)),
                            string_list(tool.categories, true), keyword(to_string(tool.kind))),
                    list);
  }
  return one_value(list);
}

// (%TOOLS-ATTACHED): whether a registry is attached (not in the runtime's
// own tests, which have no executor).
cl_object tools_attached() { return one_value(g_services.load() ? ECL_T : ECL_NIL); }

// (%NOTE-DEFINITIONS-CHANGED): the session's definitions changed (see
// core/session_changes.hpp).
cl_object note_definitions_changed() {
  session_changes().note();
  return one_value(ECL_NIL);
}

cl_object registry_generation() {
  std::uint64_t generation = 0;
  outside_lisp([&] { generation = executor().registry().generation(); });
  return one_value(ecl_make_unsigned_integer(generation));
}

// (%PREPARE-TOOL-CALL name arguments-json) → ERROR NAME SAFETY KIND
// ARGUMENTS ARGUMENTS-JSON DENIED CHECK-P: lookup and validation as the
// executor does them.  ERROR is NIL or the call's error text; NAME the
// tool's name (the given one when unknown); ARGUMENTS the normalized
// arguments as a hash table, and as JSON text for Emacs; DENIED the text
// of a denial of this tool; CHECK-P true when the tool has a check, which
// the caller runs before asking for approval.
cl_object prepare_tool_call(cl_object name, cl_object arguments_json) {
  std::string given = ecl_stringp(name) ? lisp_string_to_utf8(name) : std::string();
  std::string text = ecl_stringp(arguments_json) ? lisp_string_to_utf8(arguments_json) : std::string("{}");
  PreparedCall prepared;
  std::string normalized;
  bool ok = outside_lisp([&] {
    std::optional<json> arguments = parse_json_bounded(text);
    if (!arguments || !(arguments->is_object() || arguments->is_null())) {
      prepared.tool = executor().registry().resolve(given);
      prepared.error = prepared.tool ? "Invalid tool call: the arguments must be an object"
                                     : "Unknown tool: " + given;
      return;
    }
    if (arguments->is_null()) *arguments = json::object();
    prepared = executor().prepare(given, *arguments);
    if (!prepared.error) normalized = prepared.arguments.dump();
  });
  if (!ok) prepared.error = "Tool error: the call could not be prepared (out of memory)";
  cl_env_ptr env = ecl_process_env();
  const Tool* tool = prepared.tool.get();
  env->values[1] = make_lisp_string(tool ? tool->name : given);
  env->values[2] = tool ? keyword(to_string(tool->safety_level)) : ECL_NIL;
  env->values[3] = tool ? keyword(to_string(tool->kind)) : ECL_NIL;
  env->values[4] = prepared.error ? ECL_NIL : json_to_lisp(prepared.arguments);
  env->values[5] = prepared.error ? ECL_NIL : make_lisp_string(normalized);
  env->values[6] = tool ? make_lisp_string(denied_text(*tool)) : ECL_NIL;
  env->values[7] = tool && tool->check ? ECL_T : ECL_NIL;
  env->values[0] = prepared.error ? make_lisp_string(*prepared.error) : ECL_NIL;
  env->nvalues = 8;
  return env->values[0];
}

// (%RECORD-TOOL-CALL name success ms): the executor's counters.
cl_object record_tool_call(cl_object name, cl_object success, cl_object ms) {
  std::string tool = ecl_stringp(name) ? lisp_string_to_utf8(name) : std::string();
  double milliseconds = ecl_realp(ms) ? ecl_to_double(ms) : 0.0;
  outside_lisp([&] { executor().record_call(tool, success != ECL_NIL, milliseconds); });
  return one_value(ECL_NIL);
}

// (%MONOTONIC-MS): a steady clock in milliseconds, finer than ECL's
// internal time (1 ms units), for the calls' execution_time_ms.
cl_object monotonic_ms() {
  auto now = std::chrono::steady_clock::now().time_since_epoch();
  return one_value(ecl_make_double_float(std::chrono::duration<double, std::milli>(now).count()));
}

cl_object set_lisp_hooks(cl_object present) {
  g_lisp_hooks.store(present != ECL_NIL, std::memory_order_release);
  return one_value(present);
}

// The standing hook: Lisp's hooks, in a job of their own, for a call made
// from Emacs or MCP (Lisp's own calls run them in Lisp).
void lisp_hooks(const ToolServices& services, HookPhase phase, const std::string& tool, const json& args,
                const ToolResult* result, CallContext& context) {
  if (!g_lisp_hooks.load(std::memory_order_acquire)) return;
  json arguments = {{"phase", std::string(to_string(phase))},
                    {"tool", tool},
                    {"arguments", args},
                    {"result", result ? result->to_json() : json(nullptr)}};
  run_lisp_job(services.runtime, services.settings, kHooksJob, arguments, context);
}

}  // namespace

void attach_tool_services(Executor& executor, Runtime& runtime, const EvaluateSettings& settings) {
  // Never freed: Lisp's threads may call the tool functions at exit.
  const ToolServices* services = new ToolServices{executor, runtime, settings};
  g_services.store(services, std::memory_order_release);
  executor.add_standing_hook([services](HookPhase phase, const std::string& tool, const json& args,
                                        const ToolResult* result, CallContext& context) {
    lisp_hooks(*services, phase, tool, args, result, context);
  });
}

void define_lisp_tool_functions() {
  define_lisp_function("%DEFINE-TOOL", define_tool);
  define_lisp_function("%TOOLS", tools);
  define_lisp_function("%REGISTRY-GENERATION", registry_generation);
  define_lisp_function("%NOTE-DEFINITIONS-CHANGED", note_definitions_changed);
  define_lisp_function("%TOOLS-ATTACHED", tools_attached);
  define_lisp_function("%PREPARE-TOOL-CALL", prepare_tool_call);
  define_lisp_function("%RECORD-TOOL-CALL", record_tool_call);
  define_lisp_function("%SET-LISP-HOOKS", set_lisp_hooks);
  define_lisp_function("%MONOTONIC-MS", monotonic_ms);
  define_lisp_function("%SEAL-OWN-TOOLS", seal_own_tools);
}

}  // namespace agentq::ecl
