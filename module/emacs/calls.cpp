#include "emacs/calls.hpp"

#include "core/json_limits.hpp"
#include "emacs/async_calls.hpp"
#include "emacs/convert.hpp"

namespace agentq::emacs {

const char* const kUnreadableValue = "a value could not be read (strings must be valid Unicode text)";

namespace {
thread_local const Env* t_current_env = nullptr;
}  // namespace

const Env* current_env() { return t_current_env; }

CurrentEnv::CurrentEnv(const Env& env) : previous_(t_current_env) { t_current_env = &env; }
CurrentEnv::~CurrentEnv() { t_current_env = previous_; }

EmacsCallContext::EmacsCallContext(const Env& env, bool structured)
    : EmacsCallContext(env, structured, user_call(env)) {}

EmacsCallContext::EmacsCallContext(const Env& env, bool structured, bool user)
    : env_(env), start_(Clock::now()), next_tick_(start_ + kFirstTick), user_(user), structured_(structured) {}

namespace {

// VALUE's text when it is a string of valid text, else nullopt.
std::optional<std::string> text_of(const Env& env, emacs_value value) {
  if (!env.eq(env.type_of(value), Env::sym().string)) return std::nullopt;
  try {
    return env.to_string(value);
  } catch (const NonLocalExit&) {
    env.clear_unless_quit();  // raw bytes: no origin we know
    return std::nullopt;
  }
}

}  // namespace

CallOrigin call_origin(const Env& env, emacs_value origin, emacs_value ui_origin) {
  std::optional<std::string> text = text_of(env, origin);
  CallOrigin result;
  result.ui = text && text == text_of(env, ui_origin);
  result.user = result.ui || text == "user";
  return result;
}

bool user_call(const Env& env) {
  const Symbols& s = Env::sym();
  try {
    return call_origin(env, env.call(s.symbol_value, {s.call_origin}), env.call(s.symbol_value, {s.ui_origin})).user;
  } catch (const NonLocalExit&) {
    env.clear_unless_quit();  // a quit stays pending for the call to see
    return false;
  }
}

bool EmacsCallContext::poll() {
  if (quit_) return true;
  // An asynchronous job that holds the worker may be waiting for Emacs.
  async::serve_work_while_waiting(env_);
  if (env_.exit_pending() && !env_.clear_unless_quit()) quit_ = true;
  if (env_.raw()->process_input(env_.raw()) == emacs_process_input_quit) {
    quit_ = true;
    return true;
  }
  auto now = Clock::now();
  if (now >= next_tick_) {
    next_tick_ = now + kTick;
    emacs_value elapsed = env_.raw()->make_float(env_.raw(), std::chrono::duration<double>(now - start_).count());
    ran_elisp_ = true;
    if (!env_.exit_pending()) env_.raw()->funcall(env_.raw(), Env::sym().waiting, 1, &elapsed);
    // A failing progress function is ignored; a quit from it is a C-g.
    if (env_.exit_pending() && !env_.clear_unless_quit()) quit_ = true;
  }
  return quit_;
}

HostAnswer EmacsCallContext::eval_in_host(const std::string& form) {
  if (quit_ || env_.exit_pending()) return {false, "the Emacs call waiting for this evaluation is quitting"};
  ran_elisp_ = true;
  HostAnswer answer = eval_elisp_for_lisp(env_, form, quit_);
  // Nothing here could wait for a later answer: the main thread waits.
  if (answer.later) return {false, "the answer would come later, which only an asynchronous call can wait for"};
  return answer;
}

HostAnswer eval_elisp_for_lisp(const Env& env, const std::string& form, bool& quit) {
  const Symbols& s = Env::sym();
  try {
    emacs_value answer = env.call(s.eval_for_lisp, {env.str(form)});
    // (later . KEY): the person answers later (sly-agent-q--module-answer-later).
    if (env.eq(env.call(s.car, {answer}), env.intern("later"))) {
      HostAnswer later{false, {}};
      later.later = static_cast<std::uint64_t>(env.to_integer(env.call(s.cdr, {answer})));
      return later;
    }
    bool ok = !env.is_nil(env.call(s.car, {answer}));
    return {ok, env.to_string(env.call(s.cdr, {answer}))};
  } catch (const NonLocalExit&) {
    if (env.clear_unless_quit()) return {false, "the Emacs Lisp form made a non-local exit (throw)"};
    quit = true;  // left pending: the call quits once the evaluation has unwound
    return {false, "Quit: C-g while Emacs evaluated the form"};
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
}

// ----------------------------------------------------------------------------
// Approval and hooks from Elisp values.

ApprovalDecision approval_decision(const Env& env, emacs_value answer) {
  const Symbols& s = Env::sym();
  if (env.eq(answer, s.approved_kw)) return ApprovalDecision{ApprovalKind::Approved, {}};
  // (:denied "what the person said")
  if (env.eq(env.type_of(answer), s.cons_type) && env.eq(env.call(s.car, {answer}), s.denied_kw)) {
    ApprovalDecision denied{ApprovalKind::Denied, {}};
    emacs_value rest = env.call(s.cdr, {answer});
    if (env.eq(env.type_of(rest), s.cons_type)) {
      emacs_value reason = env.call(s.car, {rest});
      if (env.eq(env.type_of(reason), s.string)) denied.reason = env.to_string(reason);
    }
    return denied;
  }
  if (env.eq(env.type_of(answer), s.cons_type) && env.eq(env.call(s.car, {answer}), s.modified_kw)) {
    emacs_value rest = env.call(s.cdr, {answer});
    if (!env.is_nil(rest) && !env.eq(env.type_of(rest), s.cons_type))  // (:modified . junk)
      return ApprovalDecision{ApprovalKind::Denied, {}};
    emacs_value new_args = env.is_nil(rest) ? s.nil : env.call(s.car, {rest});
    return ApprovalDecision{ApprovalKind::Modified, object_to_json(env, new_args)};
  }
  return ApprovalDecision{ApprovalKind::Denied, {}};
}

ApprovalFunction elisp_approval(const Env& env, emacs_value function) {
  if (env.is_nil(function)) return {};
  return [&env, function](const Tool& tool, const json& args) {
    emacs_value answer;
    try {
      answer = env.call(function, {env.str(tool.name), from_json(env, args)});
    } catch (const NonLocalExit&) {
      // An approval function that fails denies; a quit also cancels the batch.
      if (env.clear_unless_quit()) return ApprovalDecision{ApprovalKind::Denied, {}};
      throw;
    }
    return approval_decision(env, answer);
  };
}

std::vector<Hook> elisp_hooks(const Env& env, emacs_value functions) {
  std::vector<Hook> hooks;
  const Symbols& s = Env::sym();
  if (env.eq(env.type_of(functions), s.cons_type) && env.is_nil(env.call(s.proper_list_p, {functions})))
    throw ConversionError("sly-agent-q-tool-execution-functions is a circular or dotted list");
  while (!env.is_nil(functions) && env.eq(env.type_of(functions), s.cons_type)) {
    emacs_value function = env.call(s.car, {functions});
    functions = env.call(s.cdr, {functions});
    if (env.eq(function, s.t)) continue;  // the "run the global value too" marker of local hooks
    hooks.push_back(elisp_hook(env, function));
  }
  return hooks;
}

Hook elisp_hook(const Env& env, emacs_value function) {
  return [&env, function](HookPhase phase, const std::string& name, const json& args, const ToolResult* result) {
    const Symbols& s = Env::sym();
    if (env.exit_pending()) return;
    emacs_value phase_value = phase == HookPhase::Before ? s.before : phase == HookPhase::After ? s.after : s.error_phase;
    try {
      env.call(function, {phase_value, env.str(name), from_json(env, args),
                          result ? result_to_plist(env, *result) : s.nil});
    } catch (const NonLocalExit&) {
      env.clear_unless_quit();  // a failing hook changes nothing; a quit still quits
    }
  };
}

// ----------------------------------------------------------------------------
// Calls and results.

emacs_value result_to_plist(const Env& env, const ToolResult& result) {
  const Symbols& s = Env::sym();
  emacs_value metadata[] = {
      s.execution_time_ms, env.real(result.execution_time_ms),
      s.safety_level,      result.safety_level ? env.str(to_string(*result.safety_level)) : s.nil,
      s.approved,          env.boolean(result.approved),
      result.condition_id ? env.intern(":condition_id") : s.nil,
      result.condition_id ? env.integer(*result.condition_id) : s.nil,
  };
  emacs_value plist[] = {
      s.id,       result.id ? env.str(*result.id) : s.nil,
      s.success,  env.boolean(result.success),
      s.content,  env.str(result.content),
      s.error_kw, result.error ? env.str(*result.error) : s.nil,
      s.metadata, env.call(s.list, result.condition_id ? 8 : 6, metadata),
  };
  return env.call(s.list, 10, plist);
}


namespace {

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

// The usual call, (:id ID :name NAME :arguments ARGS) with no other keys
// and a name, taken apart here: a third of the cost of converting the whole
// plist to JSON first.  nullopt for every other shape, and for a call whose
// parts do not convert: the general path converts those and says why.
std::optional<ToolCall> usual_tool_call(const Env& env, emacs_value value) {
  const Symbols& s = Env::sym();
  if (!env.eq(env.type_of(value), s.cons_type)) return std::nullopt;
  std::vector<emacs_value> items;
  try {
    items = list_elements(env, value);
  } catch (const ConversionError&) {
    return std::nullopt;
  }
  if (items.size() % 2 != 0) return std::nullopt;
  emacs_value parts[3] = {nullptr, nullptr, nullptr};  // the first :id, :name and :arguments
  for (std::size_t i = 0; i < items.size(); i += 2) {
    int part = env.eq(items[i], s.id) ? 0 : env.eq(items[i], s.name) ? 1 : env.eq(items[i], s.arguments) ? 2 : -1;
    if (part < 0) return std::nullopt;
    if (!parts[part]) parts[part] = items[i + 1];
  }
  if (!parts[1] || env.is_nil(parts[1])) return std::nullopt;
  try {
    ToolCall tool_call;
    tool_call.id = parts[0] ? id_string(to_json(env, parts[0], 1)) : std::nullopt;
    tool_call.name = name_string(to_json(env, parts[1], 1));
    tool_call.arguments = call_arguments(parts[2] ? to_json(env, parts[2], 1) : json());
    return tool_call;
  } catch (const ConversionError&) {
    return std::nullopt;
  } catch (const NonLocalExit&) {
    if (!env.clear_unless_quit()) throw;
    return std::nullopt;
  }
}

}  // namespace

// A call plist (or alist, hash table, JSON string; also the OpenAI shape
// {id, function: {name, arguments}}) → a ToolCall.  Throws ConversionError.
ToolCall to_tool_call(const Env& env, emacs_value value, std::optional<std::string>& id) {
  if (std::optional<ToolCall> usual = usual_tool_call(env, value)) {
    id = usual->id;
    return std::move(*usual);
  }
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
ToolResult invalid_call_result(std::optional<std::string> id, const std::string& message) {
  ToolResult result;
  result.id = std::move(id);
  result.success = false;
  result.content = "Invalid tool call: " + message;
  result.error = result.content;
  return result;
}

ExecutionOptions options_for(const Env& env, emacs_value approval, emacs_value hooks, CallContext& context) {
  ExecutionOptions options;
  options.approve = elisp_approval(env, approval);
  options.hooks = elisp_hooks(env, hooks);
  options.context = &context;
  return options;
}

std::vector<emacs_value> call_values(const Env& env, emacs_value calls) {
  if (env.is_nil(calls)) return {};
  try {
    const Symbols& s = Env::sym();
    if (!env.eq(env.type_of(calls), s.cons_type)) throw ConversionError("");
    // One call, the usual batch: two of the cheapest funcalls, not a vconcat.
    if (env.is_nil(env.call(s.cdr, {calls}))) return {env.call(s.car, {calls})};
    return list_elements(env, calls);
  } catch (const ConversionError&) {
    throw ConversionError("CALLS must be a proper list of tool-call plists");
  }
}

}  // namespace agentq::emacs
