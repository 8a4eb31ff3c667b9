// The Emacs module: the only code that talks to emacs_env.  It converts
// Emacs values to the core's types, runs the executor on the main thread
// and turns results back into plists.  Each module function catches every
// C++ exception at the boundary and leaves Emacs's own non-local exits
// (errors, quit) pending so they propagate unchanged.

#include <emacs-module.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "core/json_limits.hpp"
#include "core/jsonrpc.hpp"
#include "core/registry.hpp"
#include "core/schema.hpp"
#include "ecl/evaluate_tool.hpp"
#include "ecl/runtime.hpp"
#include "emacs/convert.hpp"
#include "emacs/env.hpp"

namespace agentq::emacs {

namespace {

using Clock = std::chrono::steady_clock;

// Bumped when the Elisp ⇄ module interface changes; the Elisp side refuses
// a module of another version (a stale build).
constexpr const char* kModuleVersion = "sly-agent-q-module 0.1.0 abi 3";

struct Core {
  Registry registry;
  Executor executor{registry};
  McpServer server{executor, ServerInfo{"sly-agent-q", "0.1.0"}};
  Core() { ecl::register_evaluate_lisp(registry); }
};

Core& core() {
  static Core instance;
  return instance;
}

// The Env of the module call running on this thread, for Elisp handlers
// reached through the executor.
thread_local const Env* t_current_env = nullptr;

class CurrentEnv {
 public:
  explicit CurrentEnv(const Env& env) : previous_(t_current_env) { t_current_env = &env; }
  ~CurrentEnv() { t_current_env = previous_; }
  CurrentEnv(const CurrentEnv&) = delete;
  CurrentEnv& operator=(const CurrentEnv&) = delete;

 private:
  const Env* previous_;
};

// Waiting for Lisp on the main thread: C-g is seen through process_input,
// and a progress function (sly-agent-q--waiting) is called every 100 ms
// once the wait is longer than 200 ms.
class EmacsCallContext final : public CallContext {
 public:
  explicit EmacsCallContext(const Env& env) : env_(env), start_(Clock::now()), next_tick_(start_ + kFirstTick) {}

  bool poll() override {
    if (quit_) return true;
    if (env_.raw()->process_input(env_.raw()) == emacs_process_input_quit) {
      quit_ = true;
      return true;
    }
    auto now = Clock::now();
    if (now >= next_tick_) {
      next_tick_ = now + kTick;
      emacs_value elapsed = env_.raw()->make_float(env_.raw(), std::chrono::duration<double>(now - start_).count());
      if (!env_.exit_pending()) env_.raw()->funcall(env_.raw(), Env::sym().waiting, 1, &elapsed);
      // A failing progress function is ignored; a quit from it is a C-g.
      if (env_.exit_pending() && !env_.clear_unless_quit()) quit_ = true;
    }
    return quit_;
  }

  bool cancelled() const override { return quit_ || env_.exit_pending(); }

  // Lisp asks Emacs (agent-q:eval-in-emacs): served here, on the main
  // thread, while this call waits.  A C-g during the form quits the call.
  HostAnswer eval_in_host(const std::string& form) override {
    const Symbols& s = Env::sym();
    if (quit_ || env_.exit_pending()) return {false, "the Emacs call waiting for this evaluation is quitting"};
    try {
      emacs_value answer = env_.call(s.eval_for_lisp, {env_.str(form)});
      bool ok = !env_.is_nil(env_.call(s.car, {answer}));
      return {ok, env_.to_string(env_.call(s.cdr, {answer}))};
    } catch (const NonLocalExit&) {
      if (env_.clear_unless_quit()) return {false, "the Emacs Lisp form made a non-local exit (throw)"};
      quit_ = true;  // left pending: the call quits once the evaluation has unwound
      return {false, "Quit: C-g while Emacs evaluated the form"};
    } catch (const std::exception& e) {
      return {false, e.what()};
    }
  }

 private:
  static constexpr auto kFirstTick = std::chrono::milliseconds(200);
  static constexpr auto kTick = std::chrono::milliseconds(100);
  const Env& env_;
  Clock::time_point start_, next_tick_;
  bool quit_ = false;
};

// ----------------------------------------------------------------------------
// Approval and hooks from Elisp values.

ApprovalFunction elisp_approval(const Env& env, emacs_value function) {
  if (env.is_nil(function)) return {};
  return [&env, function](const Tool& tool, const json& args) {
    const Symbols& s = Env::sym();
    emacs_value answer;
    try {
      answer = env.call(function, {env.str(tool.name), from_json(env, args)});
    } catch (const NonLocalExit&) {
      // An approval function that fails denies; a quit also cancels the batch.
      if (env.clear_unless_quit()) return ApprovalDecision{ApprovalKind::Denied, {}};
      throw;
    }
    if (env.eq(answer, s.approved_kw)) return ApprovalDecision{ApprovalKind::Approved, {}};
    if (env.eq(env.type_of(answer), s.cons_type) && env.eq(env.call(s.car, {answer}), s.modified_kw)) {
      emacs_value rest = env.call(s.cdr, {answer});
      if (!env.is_nil(rest) && !env.eq(env.type_of(rest), s.cons_type))  // (:modified . junk)
        return ApprovalDecision{ApprovalKind::Denied, {}};
      emacs_value new_args = env.is_nil(rest) ? s.nil : env.call(s.car, {rest});
      return ApprovalDecision{ApprovalKind::Modified, object_to_json(env, new_args)};
    }
    return ApprovalDecision{ApprovalKind::Denied, {}};
  };
}

emacs_value result_to_plist(const Env& env, const ToolResult& result);

std::vector<Hook> elisp_hooks(const Env& env, emacs_value functions) {
  std::vector<Hook> hooks;
  const Symbols& s = Env::sym();
  if (env.eq(env.type_of(functions), s.cons_type) && env.is_nil(env.call(s.proper_list_p, {functions})))
    throw ConversionError("sly-agent-q-tool-execution-functions is a circular or dotted list");
  while (!env.is_nil(functions) && env.eq(env.type_of(functions), s.cons_type)) {
    emacs_value function = env.call(s.car, {functions});
    functions = env.call(s.cdr, {functions});
    if (env.eq(function, s.t)) continue;  // the "run the global value too" marker of local hooks
    hooks.push_back([&env, function](HookPhase phase, const std::string& name, const json& args,
                                     const ToolResult* result) {
      const Symbols& s = Env::sym();
      if (env.exit_pending()) return;
      emacs_value phase_value = phase == HookPhase::Before ? s.before : phase == HookPhase::After ? s.after : s.error_phase;
      try {
        env.call(function, {phase_value, env.str(name), from_json(env, args),
                            result ? result_to_plist(env, *result) : s.nil});
      } catch (const NonLocalExit&) {
        env.clear_unless_quit();  // a failing hook changes nothing; a quit still quits
      }
    });
  }
  return hooks;
}

// ----------------------------------------------------------------------------
// Calls and results.

emacs_value result_to_plist(const Env& env, const ToolResult& result) {
  const Symbols& s = Env::sym();
  emacs_value metadata[] = {
      s.execution_time_ms, env.real(result.execution_time_ms),
      s.safety_level,      result.safety_level ? env.str(to_string(*result.safety_level)) : s.nil,
      s.approved,          env.boolean(result.approved),
  };
  emacs_value plist[] = {
      s.id,       result.id ? env.str(*result.id) : s.nil,
      s.success,  env.boolean(result.success),
      s.content,  env.str(result.content),
      s.error_kw, result.error ? env.str(*result.error) : s.nil,
      s.metadata, env.call(s.list, 6, metadata),
  };
  return env.call(s.list, 10, plist);
}

// Emacs refused to hand over a value, e.g. a string with raw bytes.
constexpr const char* kUnreadableValue = "a value could not be read (strings must be valid Unicode text)";

std::optional<std::string> id_string(const json& id) {
  if (id.is_null()) return std::nullopt;
  if (id.is_string()) return id.get<std::string>();
  return id.dump();
}

std::string name_string(const json& name) {
  if (!name.is_string() || name.get_ref<const std::string&>().empty())
    throw ConversionError("the tool call has no :name");
  return name.get<std::string>();
}

// A call's :arguments as converted: absent → {}, a string is JSON text.
json call_arguments(json arguments) {
  if (arguments.is_null()) return json::object();
  if (!arguments.is_string()) return arguments;
  std::optional<json> parsed = parse_json_bounded(arguments.get_ref<const std::string&>());
  if (!parsed) throw ConversionError("the :arguments string is not valid JSON (or nests deeper than 256 levels)");
  return std::move(*parsed);
}

// The id of the call VALUE, if it has a convertible one, for a call whose
// other parts cannot be converted.  `plist-get' first: it also finds the
// :id of a circular or dotted plist.  Then any spelling of the key, in a
// plist, alist or hash table.  Nothing here throws.
std::optional<std::string> call_id(const Env& env, emacs_value value) noexcept {
  const Symbols& s = Env::sym();
  try {
    if (env.eq(env.type_of(value), s.cons_type)) {
      emacs_value id = env.call(s.plist_get, {value, s.id});
      if (!env.is_nil(id)) return id_string(to_json(env, id, 1));
    }
  } catch (const NonLocalExit&) {
    env.clear_unless_quit();
  } catch (...) {
  }
  try {
    if (std::optional<json> id = object_member(env, value, "id")) return id_string(*id);
  } catch (const NonLocalExit&) {
    env.clear_unless_quit();
  } catch (...) {
  }
  return std::nullopt;
}

// A call plist (or alist, hash table, JSON string; also the OpenAI shape
// {id, function: {name, arguments}}) → a ToolCall.  Throws ConversionError.
ToolCall to_tool_call(const Env& env, emacs_value value, std::optional<std::string>& id) {
  json call;
  try {
    call = object_to_json(env, value);
  } catch (const ConversionError&) {
    // Keep the id of a call whose other parts cannot be converted.
    id = call_id(env, value);
    throw;
  } catch (const NonLocalExit&) {
    if (!env.clear_unless_quit()) throw;
    id = call_id(env, value);
    throw ConversionError(kUnreadableValue);
  }
  if (!call.is_object()) throw ConversionError("a tool call must be a plist");
  if (auto it = call.find("id"); it != call.end()) id = id_string(*it);
  const json* source = &call;
  if (auto fn = call.find("function"); fn != call.end() && fn->is_object() && !call.contains("name")) source = &*fn;
  ToolCall tool_call;
  tool_call.id = id;
  auto name = source->find("name");
  tool_call.name = name_string(name == source->end() ? json() : *name);
  auto arguments = source->find("arguments");
  tool_call.arguments = call_arguments(arguments == source->end() ? json() : std::move(*arguments));
  return tool_call;
}

// The fast path's call, already taken apart by Elisp: ID, NAME and the
// arguments either as one value or spread as a plist's keys and values.
// Spreading spares the list walks (each a vconcat through funcall) that
// dominate converting a small call.
ToolCall spread_tool_call(const Env& env, emacs_value id_value, emacs_value name_value, ptrdiff_t count,
                          emacs_value* arguments, std::optional<std::string>& id) {
  // Depths as if converting the whole call: its values are at depth 1.
  id = id_string(to_json(env, id_value, 1));
  ToolCall tool_call;
  tool_call.id = id;
  tool_call.name = name_string(to_json(env, name_value, 1));
  if (count == 1) {
    tool_call.arguments = call_arguments(to_json(env, arguments[0], 1));
  } else if (count % 2 != 0) {
    throw ConversionError("plist with an odd number of elements");
  } else {
    tool_call.arguments = plist_pairs_to_json(env, count, arguments, 1);
  }
  return tool_call;
}

ToolResult invalid_call_result(std::optional<std::string> id, const std::string& message) {
  ToolResult result;
  result.id = std::move(id);
  result.success = false;
  result.content = "Invalid tool call: " + message;
  result.error = result.content;
  return result;
}

// ----------------------------------------------------------------------------
// Module functions.

using Body = emacs_value (*)(const Env&, ptrdiff_t, emacs_value*);

template <Body body>
emacs_value entry(emacs_env* raw, ptrdiff_t nargs, emacs_value* args, void*) noexcept {
  Env env(raw);
  CurrentEnv current(env);
  try {
    return body(env, nargs, args);
  } catch (const NonLocalExit&) {
  } catch (const ecl::RuntimeError& e) {
    env.signal_error(std::string("Lisp runtime: ") + e.what());
  } catch (const std::exception& e) {
    env.signal_error(e.what());
  } catch (...) {
    env.signal_error("unexpected C++ exception in sly-agent-q-module");
  }
  return Env::sym().nil;
}

ExecutionOptions options_for(const Env& env, emacs_value approval, emacs_value hooks, CallContext& context) {
  ExecutionOptions options;
  options.approve = elisp_approval(env, approval);
  options.hooks = elisp_hooks(env, hooks);
  options.context = &context;
  return options;
}

// Runs one call that READ converts; a conversion failure is that call's
// error result.  Throws NonLocalExit when a quit (or throw) is pending: it
// propagates, and a batch's remaining calls do not run.
template <typename Read>
emacs_value run_call(const Env& env, const ExecutionOptions& options, Read read) {
  if (options.context->cancelled()) throw NonLocalExit();
  std::optional<std::string> id;
  ToolResult result;
  try {
    ToolCall call = read(id);
    result = core().executor.execute(call, options);
  } catch (const ConversionError& e) {
    result = invalid_call_result(id, e.what());
  } catch (const NonLocalExit&) {
    // Emacs refused to hand over a value (e.g. a string with raw bytes);
    // only this call fails.  A quit still quits.
    if (!env.clear_unless_quit()) throw;
    result = invalid_call_result(id, kUnreadableValue);
  }
  if (env.exit_pending()) throw NonLocalExit();
  return result_to_plist(env, result);
}

// (sly-agent-q--module-execute CALLS APPROVAL-FUNCTION HOOK-FUNCTIONS)
emacs_value execute(const Env& env, ptrdiff_t, emacs_value* args) {
  const Symbols& s = Env::sym();
  EmacsCallContext context(env);
  ExecutionOptions options = options_for(env, args[1], args[2], context);
  std::vector<emacs_value> calls;
  if (!env.is_nil(args[0])) {
    if (!env.eq(env.type_of(args[0]), s.cons_type))
      throw ConversionError("CALLS must be a proper list of tool-call plists");
    try {
      calls = list_elements(env, args[0]);
    } catch (const ConversionError&) {
      throw ConversionError("CALLS must be a proper list of tool-call plists");
    }
  }
  std::vector<emacs_value> results;
  for (emacs_value value : calls)
    results.push_back(run_call(env, options, [&](std::optional<std::string>& id) {
      return to_tool_call(env, value, id);
    }));
  return env.call(s.list, static_cast<ptrdiff_t>(results.size()), results.data());
}

// (sly-agent-q--module-execute-call APPROVAL-FUNCTION HOOK-FUNCTIONS ID NAME &rest ARGUMENTS)
// ARGUMENTS is one value (JSON string, hash table, alist, nil) or a plist's
// keys and values spread out.
emacs_value execute_call(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  EmacsCallContext context(env);
  ExecutionOptions options = options_for(env, args[0], args[1], context);
  return run_call(env, options, [&](std::optional<std::string>& id) {
    return spread_tool_call(env, args[2], args[3], nargs - 4, args + 4, id);
  });
}

// (sly-agent-q--module-define-tool NAME DESCRIPTION PARAMS REQUIRED SAFETY CATEGORIES)
emacs_value define_tool(const Env& env, ptrdiff_t, emacs_value* args) {
  Tool tool;
  tool.name = env.to_string(args[0]);
  tool.description = env.to_string(args[1]);
  json params = to_json(env, args[2]);
  if (params.is_object()) params = json::array({params});  // a single plist
  if (!params.is_null() && !params.is_array()) throw ToolDefinitionError("PARAMS must be a list of plists");
  for (const json& param : params.is_array() ? params : json::array()) {
    if (!param.is_object()) throw ToolDefinitionError("each parameter must be a plist (:name … :type …)");
    auto text = [&](const char* key, const char* fallback) -> std::string {
      auto it = param.find(key);
      if (it == param.end() || it->is_null()) return fallback;
      if (!it->is_string()) throw ToolDefinitionError(std::string("parameter :") + key + " must be a string or keyword");
      return it->get<std::string>();
    };
    Parameter parameter;
    parameter.name = text("name", "");
    std::string type = text("type", "string");
    auto parsed = parse_param_type(type);
    if (!parsed)
      throw ToolDefinitionError("Tool " + tool.name + ": parameter \"" + parameter.name + "\" has unknown type \"" +
                                type + "\" (string, boolean, number, integer, object or array)");
    parameter.type = *parsed;
    parameter.description = text("description", "");
    tool.parameters.push_back(std::move(parameter));
  }
  auto names = [&](emacs_value value, const char* what) {
    try {
      return names_list(env, value);
    } catch (const ConversionError& e) {
      throw ToolDefinitionError("Tool " + tool.name + ": " + what + " " + e.what());
    }
  };
  tool.required = names(args[3], ":required");
  json safety = to_json(env, args[4]);
  if (!safety.is_null()) {
    auto level = safety.is_string() ? parse_safety_level(safety.get<std::string>()) : std::nullopt;
    if (!level)
      throw ToolDefinitionError("Tool " + tool.name + ": unknown safety level " + safety.dump() +
                                " (:safe, :cautious or :dangerous)");
    tool.safety_level = *level;
  }
  tool.categories = names(args[5], ":categories");
  tool.kind = HandlerKind::Elisp;
  std::string name = tool.name;
  tool.handler = [name](const json& arguments, CallContext&) -> ToolOutput {
    const Env* current = t_current_env;
    if (!current) throw std::runtime_error("the Elisp tool " + name + " can only run on the Emacs main thread");
    const Env& env = *current;
    const Symbols& s = Env::sym();
    emacs_value answer = env.call(s.call_elisp_handler, {env.str(name), from_json(env, arguments)});
    bool success = !env.is_nil(env.call(s.car, {answer}));
    try {
      return {success, env.to_string(env.call(s.cdr, {answer}))};
    } catch (const NonLocalExit&) {
      // Text with raw bytes (decoded from a non-UTF-8 source) fails this
      // call only; a quit still quits.
      if (!env.clear_unless_quit()) throw;
      return {false, "Tool error: the handler of " + name + " returned text that is not valid Unicode"};
    }
  };
  core().registry.register_tool(std::move(tool));
  return env.str(name);
}

emacs_value list_tools(const Env& env, ptrdiff_t, emacs_value*) {
  std::vector<std::string> names = core().registry.names();
  std::vector<emacs_value> values;
  values.reserve(names.size());
  for (const std::string& name : names) values.push_back(env.str(name));
  return env.call(Env::sym().list, static_cast<ptrdiff_t>(values.size()), values.data());
}

// (sly-agent-q--module-tools-schema FORMAT MAX-SAFETY-LEVEL CATEGORIES)
emacs_value tools_schema(const Env& env, ptrdiff_t, emacs_value* args) {
  json format = to_json(env, args[0]);
  auto schema_format = parse_schema_format(format.is_string() ? format.get<std::string>() : "");
  if (!schema_format) throw ConversionError("unknown schema format " + format.dump() + " (openai, anthropic or mcp)");
  std::optional<SafetyLevel> max_level;
  json level = to_json(env, args[1]);
  if (!level.is_null()) {
    max_level = level.is_string() ? parse_safety_level(level.get<std::string>()) : std::nullopt;
    if (!max_level) throw ConversionError("unknown safety level " + level.dump());
  }
  std::vector<std::string> categories = names_list(env, args[2]);
  return from_json(env, tools_to_schema(core().registry.filter(max_level, categories), *schema_format));
}

// (sly-agent-q--module-mcp-request JSON-STRING APPROVAL-FUNCTION HOOK-FUNCTIONS)
emacs_value mcp_request(const Env& env, ptrdiff_t, emacs_value* args) {
  std::string message = env.to_string(args[0]);
  EmacsCallContext context(env);
  ExecutionOptions options = options_for(env, args[1], args[2], context);
  std::optional<std::string> response = core().server.handle(message, options);
  if (env.exit_pending()) throw NonLocalExit();
  return response ? env.str(*response) : Env::sym().nil;
}

// (sly-agent-q--module-configure KEY VALUE)
emacs_value configure(const Env& env, ptrdiff_t, emacs_value* args) {
  std::string key = to_json(env, args[0]).get<std::string>();
  json value = to_json(env, args[1]);
  auto number = [&]() -> double {
    if (value.is_null()) return 0;
    if (!value.is_number()) throw ConversionError("sly-agent-q: " + key + " must be a number or nil");
    return value.get<double>();
  };
  if (key == "eval-timeout") {
    ecl::evaluate_settings().default_timeout_s = number();
  } else if (key == "output-limit") {
    // Lisp keeps at most this many characters per section: at least 1, at
    // most 1 G characters (a fixnum everywhere, no overflow).
    double limit = number();
    constexpr double kMax = 1e9;
    ecl::evaluate_settings().output_limit =
        static_cast<std::size_t>(limit >= 1 ? (limit < kMax ? limit : kMax) : kMax);
  } else if (key == "heap-limit") {
    double limit = number();
    ecl::Runtime::instance().set_heap_limit(limit > 0 ? static_cast<std::size_t>(limit) : 0);
  } else {
    throw ConversionError("unknown setting " + key);
  }
  return Env::sym().t;
}

emacs_value status(const Env& env, ptrdiff_t, emacs_value*) {
  ecl::RuntimeStatus status = ecl::Runtime::instance().status();
  emacs_value plist[] = {
      env.intern(":booted"),     env.boolean(status.booted),
      env.intern(":alive"),      env.boolean(status.alive),
      env.intern(":boot-ms"),    env.real(status.boot_ms),
      env.intern(":cl-boot-ms"), env.real(status.cl_boot_ms),
      env.intern(":jobs"),       env.integer(static_cast<std::intmax_t>(status.jobs)),
      env.intern(":heap-limit"), env.integer(static_cast<std::intmax_t>(status.heap_limit)),
      env.intern(":tools"),      env.integer(static_cast<std::intmax_t>(core().registry.size())),
      env.intern(":replaced-workers"),  env.integer(static_cast<std::intmax_t>(status.replaced_workers)),
      env.intern(":abandoned-threads"), env.integer(static_cast<std::intmax_t>(status.abandoned_threads)),
  };
  return env.call(Env::sym().list, 18, plist);
}

emacs_value boot(const Env& env, ptrdiff_t, emacs_value*) {
  ecl::Runtime::instance().ensure_booted();
  return env.real(ecl::Runtime::instance().status().boot_ms);
}

emacs_value restart_worker(const Env&, ptrdiff_t, emacs_value*) {
  ecl::Runtime::instance().restart_worker();
  return Env::sym().t;
}

emacs_value stats(const Env& env, ptrdiff_t, emacs_value*) {
  std::vector<emacs_value> rows;
  for (const auto& [name, counters] : core().executor.stats()) {
    emacs_value row[] = {env.str(name),
                         env.intern(":calls"),    env.integer(static_cast<std::intmax_t>(counters.calls)),
                         env.intern(":failures"), env.integer(static_cast<std::intmax_t>(counters.failures)),
                         env.intern(":total-ms"), env.real(counters.total_ms)};
    rows.push_back(env.call(Env::sym().list, 7, row));
  }
  return env.call(Env::sym().list, static_cast<ptrdiff_t>(rows.size()), rows.data());
}

emacs_value reset_stats(const Env&, ptrdiff_t, emacs_value*) {
  core().executor.reset_stats();
  return Env::sym().t;
}

emacs_value shutdown(const Env&, ptrdiff_t, emacs_value*) {
  ecl::Runtime::instance().shutdown();
  return Env::sym().t;
}

emacs_value version(const Env& env, ptrdiff_t, emacs_value*) { return env.str(kModuleVersion); }

void defun(emacs_env* raw, const char* name, ptrdiff_t min, ptrdiff_t max,
           emacs_value (*fn)(emacs_env*, ptrdiff_t, emacs_value*, void*) noexcept, const char* doc) {
  emacs_value function = raw->make_function(raw, min, max, fn, doc, nullptr);
  emacs_value args[] = {raw->intern(raw, name), function};
  raw->funcall(raw, raw->intern(raw, "defalias"), 2, args);
}

}  // namespace

}  // namespace agentq::emacs

// Called by the loader (loader.cpp) in place of emacs_module_init.
extern "C" __attribute__((visibility("default"))) int sly_agent_q_core_init(struct emacs_runtime* runtime) noexcept {
  using namespace agentq::emacs;
  if (runtime->size < static_cast<ptrdiff_t>(sizeof(*runtime))) return 1;
  emacs_env* raw = runtime->get_environment(runtime);
  if (raw->size < static_cast<ptrdiff_t>(sizeof(struct emacs_env_27))) return 2;  // needs process_input
  try {
    Env::init_symbols(raw);
    core();
  } catch (...) {
    return 3;
  }
  defun(raw, "sly-agent-q--module-execute", 3, 3, entry<execute>,
        "Run tool CALLS with APPROVAL-FUNCTION and HOOK-FUNCTIONS; return result plists.\n\n"
        "(fn CALLS APPROVAL-FUNCTION HOOK-FUNCTIONS)");
  defun(raw, "sly-agent-q--module-execute-call", 4, emacs_variadic_function, entry<execute_call>,
        "Run one tool call taken apart by the caller; return its result plist.\n"
        "ARGUMENTS is one value or a plist's keys and values, spread.\n\n"
        "(fn APPROVAL-FUNCTION HOOK-FUNCTIONS ID NAME &rest ARGUMENTS)");
  defun(raw, "sly-agent-q--module-define-tool", 6, 6, entry<define_tool>,
        "Register an Elisp-handled tool.\n\n(fn NAME DESCRIPTION PARAMS REQUIRED SAFETY CATEGORIES)");
  defun(raw, "sly-agent-q--module-list-tools", 0, 0, entry<list_tools>, "Sorted names of the registered tools.");
  defun(raw, "sly-agent-q--module-tools-schema", 3, 3, entry<tools_schema>,
        "Tool schemas for a provider.\n\n(fn FORMAT MAX-SAFETY-LEVEL CATEGORIES)");
  defun(raw, "sly-agent-q--module-mcp-request", 3, 3, entry<mcp_request>,
        "Handle one JSON-RPC message; return the response text or nil.\n\n"
        "(fn JSON-STRING APPROVAL-FUNCTION HOOK-FUNCTIONS)");
  defun(raw, "sly-agent-q--module-configure", 2, 2, entry<configure>,
        "Set a runtime setting: eval-timeout, output-limit or heap-limit.\n\n(fn KEY VALUE)");
  defun(raw, "sly-agent-q--module-status", 0, 0, entry<status>, "Plist describing the Lisp runtime.");
  defun(raw, "sly-agent-q--module-boot", 0, 0, entry<boot>, "Boot the Lisp runtime; return the boot time in ms.");
  defun(raw, "sly-agent-q--module-stats", 0, 0, entry<stats>, "Per-tool counters.");
  defun(raw, "sly-agent-q--module-restart-worker", 0, 0, entry<restart_worker>,
        "Replace the Lisp worker thread with a fresh one in the same image.");
  defun(raw, "sly-agent-q--module-reset-stats", 0, 0, entry<reset_stats>, "Reset the per-tool counters.");
  defun(raw, "sly-agent-q--module-shutdown", 0, 0, entry<shutdown>, "Shut the Lisp runtime down.");
  defun(raw, "sly-agent-q--module-version", 0, 0, entry<version>, "The module's interface version.");
  emacs_value feature = raw->intern(raw, "sly-agent-q-module");
  raw->funcall(raw, raw->intern(raw, "provide"), 1, &feature);
  return raw->non_local_exit_check(raw) == emacs_funcall_exit_return ? 0 : 4;
}
