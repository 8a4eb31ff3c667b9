// The Emacs module: the only code that talks to emacs_env.  It converts
// Emacs values to the core's types, runs the executor on the main thread
// and turns results back into plists.  Each module function catches every
// C++ exception at the boundary and leaves Emacs's own non-local exits
// (errors, quit) pending so they propagate unchanged.

#include <emacs-module.h>

#include <algorithm>
#include <iterator>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "app/services.hpp"
#include "core/json_limits.hpp"
#include "core/round_trip_stamps.hpp"
#include "core/schema.hpp"
#include "emacs/async_calls.hpp"
#include "emacs/async_functions.hpp"
#include "emacs/bench_functions.hpp"
#include "emacs/calls.hpp"
#include "emacs/convert.hpp"
#include "emacs/env.hpp"
#include "emacs/given_options.hpp"

namespace agentq::emacs {

namespace {

// The abi is bumped when the Elisp ⇄ module interface changes; the Elisp
// side refuses a module of another version (a stale build).  The version
// is the package's (CMake reads it from sly-agent-q.el).
constexpr const char* kModuleVersion = "sly-agent-q-module " AGENTQ_VERSION " abi 16";

// The composition root (app/services.hpp): the registry, the executor, the
// MCP dispatcher and the session's Lisp (app/lisp.hpp).
app::Services& root() { return app::services(); }
// For what looks tools up, lists them or runs them: the Lisp-defined tools
// are there (the runtime is booted first).
app::Services& root_with_tools() { return app::services_with_tools(); }

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
  } catch (const app::LispError& e) {
    env.signal_error(std::string("Lisp runtime: ") + e.what());
  } catch (const std::exception& e) {
    env.signal_error(e.what());
  } catch (...) {
    env.signal_error("unexpected C++ exception in sly-agent-q-module");
  }
  return Env::sym().nil;
}

// Runs one call that READ converts; a conversion failure is that call's
// error result.  Throws NonLocalExit when a quit (or throw) is pending: it
// propagates, and a batch's remaining calls do not run.
template <typename Read>
emacs_value run_call(const Env& env, const ExecutionOptions& options, Read read) {
  if (options.context->cancelled()) throw NonLocalExit();
  RoundTripStamps& stamps = round_trip_stamps();
  PendingCall pending = read_call(env, read);
  stamps.stamp(RoundTripStep::Converted);
  ToolResult result =
      pending.call ? root_with_tools().executor.execute(*pending.call, options) : std::move(pending.invalid);
  stamps.stamp(RoundTripStep::Executed);
  if (env.exit_pending()) throw NonLocalExit();
  emacs_value plist = result_to_plist(env, result);
  stamps.stamp(RoundTripStep::Returned);
  return plist;
}

// Runs the tool CALLS (an Elisp list of calls) with OPTIONS; their result
// plists, as a list.
emacs_value run_calls(const Env& env, emacs_value calls, const ExecutionOptions& options) {
  std::vector<emacs_value> values = call_values(env, calls);
  std::vector<emacs_value> results;
  results.reserve(values.size());
  for (emacs_value value : values)
    results.push_back(run_call(env, options, [&](std::optional<std::string>& id) {
      return to_tool_call(env, value, id);
    }));
  return env.call(Env::sym().list, static_cast<ptrdiff_t>(results.size()), results.data());
}

// (sly-agent-q--module-execute CALLS APPROVAL-FUNCTION HOOK-FUNCTIONS)
emacs_value execute(const Env& env, ptrdiff_t, emacs_value* args) {
  EmacsCallContext context(env);
  return run_calls(env, args[0], options_for(env, args[1], args[2], context));
}

// (sly-agent-q--module-run-tool-calls CALLS APPROVAL-FUNCTION HOOK-FUNCTIONS
//                                     ORIGIN UI-ORIGIN PROGRESS-DETAIL WATCHED &rest OPTIONS)
// All of sly-agent-q-execute-tool-calls, whose Elisp only names the
// variables: the same cost byte-compiled or not.  OPTIONS are the values of
// sly-agent-q--module-options; ORIGIN, sly-agent-q-call-origin, is the
// person's own for "user" and UI-ORIGIN (the front end's calls, whose
// hooks count look-ups of names that exist nowhere); PROGRESS-DETAIL non-nil
// was left by an asynchronous load and goes first; WATCHED nil: the log's
// watch must hear that Lisp is used (sly-agent-q--lisp-watched).
emacs_value run_tool_calls(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  round_trip_stamps().stamp(RoundTripStep::Entered);
  const Symbols& s = Env::sym();
  sync_options(env, args + 7, static_cast<std::size_t>(nargs - 7));
  if (!env.is_nil(args[5])) env.call(s.module_call_ended, {});
  if (env.is_nil(args[6])) env.call(s.lisp_used, {});
  const CallOrigin origin = call_origin(env, args[3], args[4]);
  EmacsCallContext context(env, false, origin.user);
  try {
    ExecutionOptions options = options_for(env, args[1], args[2], context);
    if (origin.ui) options.hooks.insert(options.hooks.begin(), elisp_hook(env, s.count_not_found));
    emacs_value list = run_calls(env, args[0], options);
    if (context.ran_elisp()) env.call(s.module_call_ended, {});
    return list;
  } catch (...) {
    // The progress a quit or an error interrupted goes too.
    if (context.ran_elisp()) env.with_exit_set_aside([&] { env.call(s.module_call_ended, {}); });
    throw;
  }
}

// (sly-agent-q--module-define-tool NAME DESCRIPTION PARAMS REQUIRED SAFETY CATEGORIES
//                                  &optional DENIED-MESSAGE CHECK-P)
// CHECK-P non-nil: the tool has a check, sly-agent-q--call-elisp-check runs it.
emacs_value define_tool(const Env& env, ptrdiff_t nargs, emacs_value* args) {
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
    for (const char* key : {"minimum", "maximum"}) {
      auto it = param.find(key);
      if (it == param.end() || it->is_null()) continue;
      if (!it->is_number()) throw ToolDefinitionError(std::string("parameter :") + key + " must be a number");
      (std::string_view(key) == "minimum" ? parameter.minimum : parameter.maximum) = it->get<double>();
    }
    // :default VALUE (nil: none; :false for false); :aliases ("old-name" …);
    // :enum ("a" "b" …).
    if (auto it = param.find("default"); it != param.end() && !it->is_null())
      parameter.default_value = it->is_string() && *it == "false" ? json(false) : *it;
    auto strings = [](const json& list, const char* key, std::vector<std::string>& out) {
      if (list.is_null()) return;
      const std::string error = std::string("parameter :") + key + " must be a list of strings";
      if (!list.is_array()) throw ToolDefinitionError(error);
      for (const json& item : list) {
        if (!item.is_string()) throw ToolDefinitionError(error);
        out.push_back(item.get<std::string>());
      }
    };
    if (auto it = param.find("aliases"); it != param.end()) strings(*it, "aliases", parameter.aliases);
    if (auto it = param.find("enum"); it != param.end()) strings(*it, "enum", parameter.choices);
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
  if (nargs > 6 && !env.is_nil(args[6])) tool.denied_message = env.to_string(args[6]);
  const bool has_check = nargs > 7 && !env.is_nil(args[7]);
  tool.kind = HandlerKind::Elisp;
  std::string name = tool.name;
  if (has_check)
    tool.check = [name](const json& arguments, CallContext&) -> std::optional<std::string> {
      std::optional<std::string> problem = "Tool error: the call was cancelled";
      async::run_on_main([&](const Env& env) {
        emacs_value answer = env.call(Env::sym().call_elisp_check, {env.str(name), from_json(env, arguments)});
        try {
          problem = env.is_nil(answer) ? std::nullopt : std::optional<std::string>(env.to_string(answer));
        } catch (const NonLocalExit&) {
          if (!env.clear_unless_quit()) throw;
          problem = "Tool error: the check of " + name + " returned text that is not valid Unicode";
        }
      });
      return problem;
    };
  // Runs on the main thread: at once from a synchronous call, through the
  // main thread's queue from an asynchronous one.
  tool.handler = [name](const json& arguments, CallContext&) -> ToolOutput {
    ToolOutput output{false, "Tool error: the call was cancelled"};
    async::run_on_main([&](const Env& env) {
      const Symbols& s = Env::sym();
      emacs_value answer = env.call(s.call_elisp_handler, {env.str(name), from_json(env, arguments)});
      bool success = !env.is_nil(env.call(s.car, {answer}));
      try {
        output = {success, env.to_string(env.call(s.cdr, {answer}))};
      } catch (const NonLocalExit&) {
        // Text with raw bytes (decoded from a non-UTF-8 source) fails this
        // call only; a quit still quits.
        if (!env.clear_unless_quit()) throw;
        output = {false, "Tool error: the handler of " + name + " returned text that is not valid Unicode"};
      }
    });
    return output;
  };
  // Does not boot Lisp (Elisp tools are defined at load time); the boot
  // leaves an Elisp tool that has a built-in tool's name in place.
  root().registry.register_tool(std::move(tool));
  return env.str(name);
}

// (sly-agent-q--module-run-handler NAME ARGUMENTS-JSON) → (SUCCESS . TEXT):
// only the handler of NAME, a tool handled in Emacs or C++, for Lisp's
// EXECUTE-TOOL-CALLS, which did the lookup, validation, approval and hooks.
emacs_value run_handler(const Env& env, ptrdiff_t, emacs_value* args) {
  std::string name = env.to_string(args[0]);
  std::optional<json> arguments = parse_json_bounded(env.to_string(args[1]));
  ToolPtr tool = root_with_tools().registry.resolve(name);
  ToolOutput output;
  if (!tool || tool->kind == HandlerKind::Lisp || !arguments || !arguments->is_object()) {
    output = {false, "Tool error: " + name + " is not a tool handled in Emacs, or its arguments are not an object"};
  } else {
    EmacsCallContext context(env);
    try {
      output = tool->handler(*arguments, context);
    } catch (const std::exception& e) {
      output = {false, std::string("Tool error: ") + e.what()};
    }
    if (env.exit_pending()) throw NonLocalExit();
    if (!output.success && output.text.empty()) output.text = "Tool failed";
  }
  return env.call(env.intern("cons"), {env.boolean(output.success), env.str(output.text)});
}

// (sly-agent-q--module-run-check NAME ARGUMENTS-JSON) → nil or the message
// of a failed check: only the check of NAME (nil when it has none), for
// Lisp's EXECUTE-TOOL-CALLS, which runs it before asking for approval.
emacs_value run_check(const Env& env, ptrdiff_t, emacs_value* args) {
  std::string name = env.to_string(args[0]);
  std::optional<json> arguments = parse_json_bounded(env.to_string(args[1]));
  ToolPtr tool = root_with_tools().registry.resolve(name);
  std::optional<std::string> problem;
  if (!tool || !arguments || !arguments->is_object()) {
    problem = "Tool error: " + name + " is not a registered tool, or its arguments are not an object";
  } else if (tool->check) {
    EmacsCallContext context(env);
    try {
      problem = tool->check(*arguments, context);
    } catch (const std::exception& e) {
      problem = std::string("Tool error: ") + e.what();
    }
    if (env.exit_pending()) throw NonLocalExit();
    if (problem && problem->empty()) problem = "Tool failed";
  }
  return problem ? env.str(*problem) : Env::sym().nil;
}

// (sly-agent-q--module-parse-json TEXT): JSON text as the Emacs value a
// handler, an approval or a hook function gets.
emacs_value parse_json(const Env& env, ptrdiff_t, emacs_value* args) {
  std::optional<json> value = parse_json_bounded(env.to_string(args[0]));
  if (!value) throw ConversionError("not valid JSON (or nested deeper than 256 levels)");
  return from_json(env, *value);
}

// (sly-agent-q--module-json-text VALUE): VALUE (plist, alist, hash table…)
// as JSON text, converted as tool-call arguments are.
emacs_value json_text(const Env& env, ptrdiff_t, emacs_value* args) {
  return env.str(object_to_json(env, args[0]).dump());
}

emacs_value list_tools(const Env& env, ptrdiff_t, emacs_value*) {
  std::vector<std::string> names = root_with_tools().registry.names();
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
  return from_json(env, tools_to_schema(root_with_tools().registry.filter(max_level, categories), *schema_format));
}

// (sly-agent-q--module-mcp-request JSON-STRING APPROVAL-FUNCTION HOOK-FUNCTIONS)
emacs_value mcp_request(const Env& env, ptrdiff_t, emacs_value* args) {
  std::string message = env.to_string(args[0]);
  EmacsCallContext context(env, true);
  ExecutionOptions options = options_for(env, args[1], args[2], context);
  std::optional<std::string> response = root_with_tools().server.handle(message, options);
  if (env.exit_pending()) throw NonLocalExit();
  return response ? env.str(*response) : Env::sym().nil;
}

// (sly-agent-q--module-configure KEY VALUE)
emacs_value configure(const Env& env, ptrdiff_t, emacs_value* args) {
  json key = to_json(env, args[0]);
  if (!key.is_string()) throw ConversionError("sly-agent-q: a setting's name must be a string");
  configure_option(env, key.get<std::string>(), args[1]);
  return Env::sym().t;
}

// (sly-agent-q--module-sync-options &rest VALUES)
emacs_value sync(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  sync_options(env, args, static_cast<std::size_t>(nargs));
  return Env::sym().nil;
}

// (sly-agent-q--module-global-options &rest VALUES)
emacs_value global_options(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  set_global_options(env, args, static_cast<std::size_t>(nargs));
  return Env::sym().nil;
}

emacs_value option_keys(const Env& env, ptrdiff_t, emacs_value*) {
  std::vector<emacs_value> keys;
  for (std::string_view key : kOptionKeys) keys.push_back(env.str(key));
  return env.call(Env::sym().list, static_cast<ptrdiff_t>(keys.size()), keys.data());
}

emacs_value status(const Env& env, ptrdiff_t, emacs_value*) {
  app::LispStatus status = root().lisp.status();
  emacs_value plist[] = {
      env.intern(":booted"),     env.boolean(status.booted),
      env.intern(":alive"),      env.boolean(status.alive),
      env.intern(":boot-ms"),    env.real(status.boot_ms),
      env.intern(":cl-boot-ms"), env.real(status.cl_boot_ms),
      env.intern(":jobs"),       env.integer(static_cast<std::intmax_t>(status.jobs)),
      env.intern(":heap-limit"), env.integer(static_cast<std::intmax_t>(status.heap_limit)),
      env.intern(":tools"),      env.integer(static_cast<std::intmax_t>(root().registry.size())),
      env.intern(":replaced-workers"),  env.integer(static_cast<std::intmax_t>(status.replaced_workers)),
      env.intern(":abandoned-threads"), env.integer(static_cast<std::intmax_t>(status.abandoned_threads)),
      env.intern(":held-errors"), env.integer(static_cast<std::intmax_t>(status.held_errors)),
      env.intern(":native-tiering"), env.boolean(status.native_tiering),
      env.intern(":tiering-waiting"), env.integer(static_cast<std::intmax_t>(status.tiering_waiting)),
      env.intern(":tiering-native"), env.integer(static_cast<std::intmax_t>(status.tiering_native)),
      env.intern(":tiering-bytecodes"), env.integer(static_cast<std::intmax_t>(status.tiering_bytecodes)),
      env.intern(":tiering-in-child"), env.integer(static_cast<std::intmax_t>(status.tiering_in_child)),
      env.intern(":tiering-in-session"), env.integer(static_cast<std::intmax_t>(status.tiering_in_session)),
  };
  return env.call(Env::sym().list, static_cast<ptrdiff_t>(std::size(plist)), plist);
}

// (sly-agent-q--module-take-notes) → the background compiler's lines for
// the log since the last call, oldest first.
emacs_value take_notes(const Env& env, ptrdiff_t, emacs_value*) {
  std::vector<emacs_value> notes;
  for (const std::string& note : root().lisp.take_notes()) notes.push_back(env.str(note));
  return env.call(Env::sym().list, static_cast<ptrdiff_t>(notes.size()), notes.data());
}

emacs_value boot(const Env& env, ptrdiff_t, emacs_value*) {
  root().lisp.boot();
  return env.real(root().lisp.status().boot_ms);
}

emacs_value start_boot(const Env&, ptrdiff_t, emacs_value*) {
  root().lisp.start_boot();
  return Env::sym().t;
}

emacs_value restart_worker(const Env&, ptrdiff_t, emacs_value*) {
  root().lisp.restart_worker();
  return Env::sym().t;
}

// This thread's part of a call, done once with nothing run: a call plist
// read, its tool looked up, a result plist made.  After idle time the
// caches are cold for Emacs's thread too (every step of a call took 5-15
// times its hot time), and the worker's warm-up does not warm this one.
void warm_main_thread(const Env& env) {
  const Symbols& s = Env::sym();
  emacs_value arguments[] = {env.intern(":code"), env.str("'agent-q::warm-up")};
  emacs_value call[] = {s.id, env.str("warm"), s.name, env.str("evaluate_lisp"), s.arguments,
                        env.call(s.list, 2, arguments)};
  std::optional<std::string> id;
  ToolCall tool_call = to_tool_call(env, env.call(s.list, 6, call), id);
  ToolResult result;
  result.id = tool_call.id;
  result.success = root_with_tools().registry.resolve(tool_call.name) != nullptr;
  result.content = "=> AGENT-Q::WARM-UP";
  result.safety_level = SafetyLevel::Cautious;
  result_to_plist(env, result);
}

// (sly-agent-q--module-wake-ahead WINDOW-MS WARM) → t when the idle worker was told.
emacs_value wake_ahead(const Env& env, ptrdiff_t, emacs_value* args) {
  const std::intmax_t ms = env.to_integer(args[0]);
  const bool warm = !env.is_nil(args[1]);
  const bool told = root().lisp.wake_ahead(std::chrono::milliseconds(std::clamp<std::intmax_t>(ms, 0, 10000)), warm);
  if (told && warm) warm_main_thread(env);
  return env.boolean(told);
}

emacs_value stats(const Env& env, ptrdiff_t, emacs_value*) {
  std::vector<emacs_value> rows;
  for (const auto& [name, counters] : root().executor.stats()) {
    emacs_value row[] = {env.str(name),
                         env.intern(":calls"),    env.integer(static_cast<std::intmax_t>(counters.calls)),
                         env.intern(":failures"), env.integer(static_cast<std::intmax_t>(counters.failures)),
                         env.intern(":total-ms"), env.real(counters.total_ms)};
    rows.push_back(env.call(Env::sym().list, 7, row));
  }
  return env.call(Env::sym().list, static_cast<ptrdiff_t>(rows.size()), rows.data());
}

emacs_value reset_stats(const Env&, ptrdiff_t, emacs_value*) {
  root().executor.reset_stats();
  return Env::sym().t;
}

emacs_value shutdown(const Env&, ptrdiff_t, emacs_value*) {
  root().lisp.shutdown();
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
    root();
  } catch (...) {
    return 3;
  }
  defun(raw, "sly-agent-q--module-execute", 3, 3, entry<execute>,
        "Run tool CALLS with APPROVAL-FUNCTION and HOOK-FUNCTIONS; return result plists.\n\n"
        "(fn CALLS APPROVAL-FUNCTION HOOK-FUNCTIONS)");
  defun(raw, "sly-agent-q--module-run-tool-calls", 7, emacs_variadic_function, entry<run_tool_calls>,
        "All of `sly-agent-q-execute-tool-calls': run CALLS with the variables' values given.\n"
        "OPTIONS are the values of `sly-agent-q--module-options', in order.\n\n"
        "(fn CALLS APPROVAL-FUNCTION HOOK-FUNCTIONS ORIGIN UI-ORIGIN PROGRESS-DETAIL WATCHED &rest OPTIONS)");
  defun(raw, "sly-agent-q--module-sync-options", 0, emacs_variadic_function, entry<sync>,
        "Give the runtime the VALUES of `sly-agent-q--module-options' (in order) that changed.\n\n"
        "(fn &rest VALUES)");
  defun(raw, "sly-agent-q--module-global-options", 0, emacs_variadic_function, entry<global_options>,
        "The global VALUES of `sly-agent-q--module-options' (in order): a request the Lisp thread\n"
        "reads from a bridge runs only while the runtime was last given these.\n\n"
        "(fn &rest VALUES)");
  defun(raw, "sly-agent-q--module-option-keys", 0, 0, entry<option_keys>,
        "The module's names of `sly-agent-q--module-options', in the order it takes their values.");
  defun(raw, "sly-agent-q--module-wake-ahead", 2, 2, entry<wake_ahead>,
        "A call is on its way: an idle worker polls for WINDOW-MS; WARM: after a throwaway evaluation,\n"
        "and this thread's part of a call is done once with nothing run.\n"
        "Never boots Lisp, never waits; t when the worker was told.\n\n(fn WINDOW-MS WARM)");
  defun(raw, "sly-agent-q--module-bench", 1, 2, entry<bench>,
        "For benchmarks: WHAT is \"stamps-on\", \"stamps-off\", \"stamps\" (the last call's steps, ns),\n"
        "\"pingpong\" or \"plist\" (floors: median ns of N).\n\n(fn WHAT &optional N)");
  defun(raw, "sly-agent-q--module-bench-noop", 0, emacs_variadic_function, entry<bench_noop>,
        "For benchmarks: a module call that does nothing with the ARGUMENTS it is given.\n\n"
        "(fn &rest ARGUMENTS)");
  defun(raw, "sly-agent-q--module-define-tool", 6, 8, entry<define_tool>,
        "Register an Elisp-handled tool.\n\n"
        "(fn NAME DESCRIPTION PARAMS REQUIRED SAFETY CATEGORIES &optional DENIED-MESSAGE CHECK-P)");
  defun(raw, "sly-agent-q--module-run-handler", 2, 2, entry<run_handler>,
        "Run only the handler of the Emacs-handled tool NAME; return (SUCCESS . TEXT).\n\n"
        "(fn NAME ARGUMENTS-JSON)");
  defun(raw, "sly-agent-q--module-run-check", 2, 2, entry<run_check>,
        "Run only the check of tool NAME; return nil or the message of a failed check.\n\n"
        "(fn NAME ARGUMENTS-JSON)");
  defun(raw, "sly-agent-q--module-parse-json", 1, 1, entry<parse_json>,
        "JSON TEXT as the value a tool handler gets.\n\n(fn TEXT)");
  defun(raw, "sly-agent-q--module-json-text", 1, 1, entry<json_text>,
        "VALUE as JSON text, converted as tool-call arguments are.\n\n(fn VALUE)");
  defun(raw, "sly-agent-q--module-list-tools", 0, 0, entry<list_tools>, "Sorted names of the registered tools.");
  defun(raw, "sly-agent-q--module-open-channel", 1, 1, entry<open_channel>,
        "Serve asynchronous calls through PIPE-PROCESS's filter.\n\n(fn PIPE-PROCESS)");
  defun(raw, "sly-agent-q--module-submit", 3, 6, entry<submit>,
        "Queue tool CALLS to run without blocking Emacs; return the job id.\n"
        "DEBUGGER non-nil: an error in its evaluations stops in the REPL's debugger.\n"
        "INTERACTIVE non-nil: evaluations hand their output over as it comes.\n"
        "HOLD t: the job waits for `sly-agent-q--module-release'; other non-nil: it does\n"
        "when a dangerous call is to be asked about.  A held job returns (ID . QUESTIONS),\n"
        "QUESTIONS ((TOOL ARGS) ...), its dangerous calls already checked.\n\n"
        "(fn CALLS APPROVAL-FUNCTION HOOK-FUNCTIONS &optional DEBUGGER INTERACTIVE HOLD)");
  defun(raw, "sly-agent-q--module-release", 2, 2, entry<release>,
        "Queue the held JOB with DECISIONS, the answers to its questions in order.\n"
        "Return nil when JOB is not held.\n\n(fn JOB DECISIONS)");
  defun(raw, "sly-agent-q--module-answer-later", 3, 3, entry<answer_later>,
        "Give Lisp the answer to its request that Emacs answered with (later . KEY).\n"
        "Return nil when nothing waits for KEY.\n\n(fn KEY OK TEXT)");
  defun(raw, "sly-agent-q--module-later-pending-p", 1, 1, entry<later_pending>,
        "Non-nil while Lisp waits for the later answer KEY.\n\n(fn KEY)");
  defun(raw, "sly-agent-q--module-mcp-submit", 3, 4, entry<mcp_submit>,
        "Queue one JSON-RPC message to run without blocking Emacs; return the job id.\n"
        "The job's result is the response text, or nil.  HOLD as for\n"
        "`sly-agent-q--module-submit'.\n\n"
        "(fn JSON-STRING APPROVAL-FUNCTION HOOK-FUNCTIONS &optional HOLD)");
  defun(raw, "sly-agent-q--module-cancel", 1, 1, entry<cancel>, "Cancel the asynchronous job JOB.\n\n(fn JOB)");
  defun(raw, "sly-agent-q--module-break", 1, 1, entry<break_into>,
        "Stop the REPL's running job JOB in its debugger, with a CONTINUE restart.\n"
        "Return nil when JOB does not run, was not submitted with the debugger, or its last\n"
        "break is still waiting to be taken (the evaluation holds interrupts off).\n\n(fn JOB)");
  defun(raw, "sly-agent-q--module-withdraw", 1, 1, entry<withdraw>,
        "Take the asynchronous job JOB off the queue if it has not started: it never runs\n"
        "and is never handed back.  Return nil when it runs, has finished or is unknown.\n\n(fn JOB)");
  defun(raw, "sly-agent-q--module-async-serve", 0, 1, entry<async_serve>,
        "Run what asynchronous calls need of Emacs; return finished jobs as ((ID . RESULTS) ...),\n"
        "with (ID :output TEXT) for output of interactive jobs.  NO-QUESTIONS non-nil:\n"
        "approval questions stay queued (the person answers another one).\n\n(fn &optional NO-QUESTIONS)");
  defun(raw, "sly-agent-q--module-tools-schema", 3, 3, entry<tools_schema>,
        "Tool schemas for a provider.\n\n(fn FORMAT MAX-SAFETY-LEVEL CATEGORIES)");
  defun(raw, "sly-agent-q--module-mcp-request", 3, 3, entry<mcp_request>,
        "Handle one JSON-RPC message; return the response text or nil.\n\n"
        "(fn JSON-STRING APPROVAL-FUNCTION HOOK-FUNCTIONS)");
  defun(raw, "sly-agent-q--module-mcp-line", 4, 7, entry<mcp_line>,
        "Handle one JSON-RPC line of the socket server: (:answer . RESPONSE) answered now,\n"
        "(:cancel . ID), or (:queue ID . SUBMITTED) queued as `sly-agent-q--module-mcp-submit'\n"
        "queues it (ID nil for a batch).  ANSWER-CHANNEL: where the answer may be written\n"
        "straight to the bridge (then the callback gets nil).  ON-WORKER: a plain evaluate_lisp\n"
        "request may run on the Lisp worker itself.  REFUSAL, a string: what would be queued\n"
        "is answered at once with error -32029 and this message instead (the client has\n"
        "as many requests waiting as it may).\n\n"
        "(fn JSON-STRING APPROVAL-FUNCTION HOOK-FUNCTIONS HOLD &optional ANSWER-CHANNEL ON-WORKER REFUSAL)");
  defun(raw, "sly-agent-q--module-open-answer-channel", 1, 1, entry<open_answer_channel>,
        "Open the FIFO at PATH, a bridge's answer channel, for the runner to write answers on.\n"
        "Return its id.  Signal an error unless PATH is a FIFO of the user's own, not a symbolic\n"
        "link, that only the user may open, with a reader.\n\n(fn PATH)");
  defun(raw, "sly-agent-q--module-close-answer-channel", 1, 1, entry<close_answer_channel>,
        "Close the answer channel ID.\n\n(fn ID)");
  defun(raw, "sly-agent-q--module-answer-counts", 0, 0, entry<answer_counts>,
        "(DIRECT . THROUGH-EMACS): MCP answers written on an answer channel, and those that\n"
        "had one but went through Emacs.");
  defun(raw, "sly-agent-q--module-inline-counts", 0, 0, entry<inline_counts>,
        "(ON-WORKER TAKEN-OVER DIRECT DECLINED): MCP requests the Lisp worker ran and answered\n"
        "itself, those the runner took over (or back); requests it read from a bridge's request\n"
        "channel and ran, and those it handed to Emacs's thread instead.");
  defun(raw, "sly-agent-q--module-open-request-channel", 2, 2, entry<open_request_channel>,
        "Open the FIFO at PATH, a bridge's request channel beside answer channel CHANNEL, for\n"
        "the idle Lisp thread to read plain evaluations from.  Signal an error unless PATH is a\n"
        "FIFO of the user's own, not a symbolic link, that only the user may open.\n\n"
        "(fn PATH CHANNEL)");
  defun(raw, "sly-agent-q--module-direct-request-running-p", 0, 0, entry<direct_request_running>,
        "Non-nil while the Lisp thread runs a request it read from a bridge's request channel.");
  defun(raw, "sly-agent-q--module-allow-direct-requests", 1, 1, entry<allow_direct_requests>,
        "Whether requests read from a bridge's request channel may run without Emacs's thread.\n\n"
        "(fn FLAG)");
  defun(raw, "sly-agent-q--module-configure", 2, 2, entry<configure>,
        "Set a runtime setting: eval-timeout, output-limit, heap-limit or native-tiering.\n\n(fn KEY VALUE)");
  defun(raw, "sly-agent-q--module-take-notes", 0, 0, entry<take_notes>,
        "The Lisp runtime's notes for the log since the last call, oldest first.");
  defun(raw, "sly-agent-q--module-status", 0, 0, entry<status>, "Plist describing the Lisp runtime.");
  defun(raw, "sly-agent-q--module-boot", 0, 0, entry<boot>, "Boot the Lisp runtime; return the boot time in ms.");
  defun(raw, "sly-agent-q--module-start-boot", 0, 0, entry<start_boot>,
        "Start booting the Lisp runtime in the background; return t at once.");
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
