// The module functions of asynchronous calls (sly-agent-q--module-submit
// and its kin): queueing calls and MCP messages for the runner, holding
// one while its dangerous calls are asked about, releasing, cancelling,
// and serving what the runner needs of Emacs.  The runner itself is
// async_calls.cpp.
#include "emacs/async_functions.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/services.hpp"
#include "core/json_limits.hpp"
#include "core/mcp_route.hpp"
#include "emacs/async_calls.hpp"
#include "emacs/calls.hpp"
#include "emacs/convert.hpp"

namespace agentq::emacs {

namespace {

using async::McpMessage;

// A call of TOOL-NAME with ARGUMENTS settled now, on the main thread, as
// the runner would reach it: nullopt unless the tool is dangerous and the
// arguments valid; else its check's failure, or the question to ask.
// A check that throws (a quit, say) settles nothing: the runner's call
// checks again.
std::optional<async::AheadCall> settle_call(const Env& env, const std::string& tool_name, const json& arguments) {
  ToolPtr tool = app::services_with_tools().registry.resolve(tool_name);
  if (!tool || tool->safety_level != SafetyLevel::Dangerous) return std::nullopt;
  PreparedCall prepared = app::services_with_tools().executor.prepare(tool->name, arguments);
  if (prepared.error || !prepared.tool) return std::nullopt;
  async::AheadCall ahead;
  ahead.tool = prepared.tool->name;
  if (prepared.tool->check) {
    NullCallContext context;
    try {
      ahead.failure = prepared.tool->check(prepared.arguments, context);
    } catch (...) {
      if (env.exit_pending()) env.raw()->non_local_exit_clear(env.raw());
      return std::nullopt;
    }
    if (env.exit_pending()) {
      env.raw()->non_local_exit_clear(env.raw());
      return std::nullopt;
    }
  }
  ahead.arguments = std::move(prepared.arguments);
  return ahead;
}

// The dangerous calls of MESSAGE (a JSON-RPC request or batch) settled
// now: each tools/call request, well formed as the dispatcher wants it,
// whose tool is dangerous and whose arguments are valid.  What the
// dispatcher would refuse is left to it (it answers the refusal).
std::vector<async::AheadCall> settle_message(const Env& env, const json& message) {
  std::vector<async::AheadCall> settled;
  auto settle = [&](const json& request) {
    if (!request.is_object() || !request.contains("id")) return;
    auto version = request.find("jsonrpc");
    auto method = request.find("method");
    if (version == request.end() || *version != "2.0" || method == request.end() || *method != "tools/call") return;
    auto params = request.find("params");
    if (params == request.end() || !params->is_object()) return;
    auto name = params->find("name");
    if (name == params->end() || !name->is_string()) return;
    auto arguments = params->find("arguments");
    const json none = json::object();
    const json* given = &none;
    if (arguments != params->end() && !arguments->is_null()) {
      if (!arguments->is_object()) return;
      given = &*arguments;
    }
    if (auto ahead = settle_call(env, name->get<std::string>(), *given)) settled.push_back(std::move(*ahead));
  };
  if (value_nesting_exceeds(message)) return settled;
  if (message.is_array())
    for (const json& element : message) settle(element);
  else
    settle(message);
  return settled;
}

// How a job that may hold answers: its id, or (ID . QUESTIONS) when held,
// QUESTIONS ((TOOL ARGUMENTS) …) for the AheadCalls that ask.
emacs_value submitted(const Env& env, std::uint64_t id, bool held, const std::vector<async::AheadCall>& ahead) {
  emacs_value job = env.integer(static_cast<std::intmax_t>(id));
  if (!held) return job;
  std::vector<emacs_value> questions;
  for (const async::AheadCall& call : ahead) {
    if (!call.asks()) continue;
    emacs_value items[] = {env.str(call.tool), from_json(env, call.arguments)};
    questions.push_back(env.call(Env::sym().list, 2, items));
  }
  emacs_value pair[] = {job, env.call(Env::sym().list, static_cast<ptrdiff_t>(questions.size()), questions.data())};
  return env.call(env.intern("cons"), 2, pair);
}

// HOLD, the last argument of the submit functions: nil never holds, t
// always does, anything else holds a job with questions to ask.
bool holds(const Env& env, emacs_value hold, const std::vector<async::AheadCall>& ahead) {
  if (env.is_nil(hold)) return false;
  if (env.eq(hold, Env::sym().t)) return true;
  return std::any_of(ahead.begin(), ahead.end(), [](const async::AheadCall& call) { return call.asks(); });
}

// Queues MESSAGE as sly-agent-q--module-mcp-submit does, with the Elisp
// APPROVAL function and HOOKS; HOLD as for sly-agent-q--module-submit.
emacs_value submit_message(const Env& env, McpMessage message, emacs_value approval_function,
                           emacs_value hook_functions, emacs_value hold, std::uint64_t answer_channel = 0,
                           bool on_worker = false) {
  if (!async::has_channel()) throw std::runtime_error("no channel for asynchronous calls has been opened");
  std::vector<async::AheadCall> ahead;
  if (!env.is_nil(hold) && message.parsed) ahead = settle_message(env, *message.parsed);
  const bool held = holds(env, hold, ahead);
  emacs_value approval = env.raw()->make_global_ref(env.raw(), approval_function);
  emacs_value hooks = env.raw()->make_global_ref(env.raw(), hook_functions);
  std::uint64_t id =
      async::submit_mcp(std::move(message), approval, hooks, !env.is_nil(hook_functions), ahead, held, answer_channel,
                        on_worker);
  return submitted(env, id, held, ahead);
}

}  // namespace

// (sly-agent-q--module-open-channel PIPE-PROCESS): the pipe whose filter
// serves asynchronous calls.
emacs_value open_channel(const Env& env, ptrdiff_t, emacs_value* args) {
  if (env.raw()->size < static_cast<ptrdiff_t>(sizeof(struct emacs_env_28)))
    throw std::runtime_error("asynchronous calls need Emacs 28 or later");
  int fd = env.raw()->open_channel(env.raw(), args[0]);
  env.check();
  async::set_channel(fd);
  return Env::sym().t;
}

// (sly-agent-q--module-submit CALLS APPROVAL-FUNCTION HOOK-FUNCTIONS
// &optional DEBUGGER INTERACTIVE HOLD) → job id, or (ID . QUESTIONS) when
// held (see holds() and submitted()): its dangerous calls are then checked
// now, and wait for their answers (sly-agent-q--module-release).
emacs_value submit(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  if (!async::has_channel()) throw std::runtime_error("no channel for asynchronous calls has been opened");
  std::vector<PendingCall> calls;
  for (emacs_value value : call_values(env, args[0]))
    calls.push_back(read_call(env, [&](std::optional<std::string>& id) { return to_tool_call(env, value, id); }));
  emacs_value hold = nargs > 5 ? args[5] : Env::sym().nil;
  std::vector<async::AheadCall> ahead;
  if (!env.is_nil(hold))
    for (const PendingCall& pending : calls)
      if (pending.call)
        if (auto settled = settle_call(env, pending.call->name, pending.call->arguments))
          ahead.push_back(std::move(*settled));
  const bool held = holds(env, hold, ahead);
  emacs_value approval = env.raw()->make_global_ref(env.raw(), args[1]);
  emacs_value hooks = env.raw()->make_global_ref(env.raw(), args[2]);
  bool debugger = nargs > 3 && !env.is_nil(args[3]);
  bool interactive = nargs > 4 && !env.is_nil(args[4]);
  std::uint64_t id = async::submit(std::move(calls), approval, hooks, !env.is_nil(args[2]), debugger, interactive,
                                   ahead, held, user_call(env));
  return submitted(env, id, held, ahead);
}

// (sly-agent-q--module-answer-later KEY OK TEXT) → t, or nil when nothing
// waits for KEY: the person's answer to a request Emacs answered with
// (later . KEY), the REPL's debugger.
emacs_value answer_later(const Env& env, ptrdiff_t, emacs_value* args) {
  HostAnswer answer{!env.is_nil(args[1]), env.to_string(args[2])};
  return env.boolean(async::answer_later(static_cast<std::uint64_t>(env.to_integer(args[0])), std::move(answer)));
}

emacs_value later_pending(const Env& env, ptrdiff_t, emacs_value* args) {
  return env.boolean(async::later_pending(static_cast<std::uint64_t>(env.to_integer(args[0]))));
}

// (sly-agent-q--module-mcp-submit JSON-STRING APPROVAL-FUNCTION HOOK-FUNCTIONS
// &optional HOLD) → job id, or (ID . QUESTIONS) when held, as for
// sly-agent-q--module-submit: the dangerous calls of the message (one
// request or a batch) are then checked now.
emacs_value mcp_submit(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  std::string text = env.to_string(args[0]);
  std::optional<json> parsed = parse_json_bounded(text);
  McpMessage message;
  if (parsed)
    message.parsed = std::move(*parsed);
  else
    message.text = std::move(text);  // the dispatcher answers what cannot be read
  return submit_message(env, std::move(message), args[1], args[2], nargs > 3 ? args[3] : Env::sym().nil);
}

// (sly-agent-q--module-mcp-line JSON-STRING APPROVAL-FUNCTION HOOK-FUNCTIONS
// HOLD) → how the socket server in Emacs handles one line, in one module
// call that parses it once: (:answer . RESPONSE) answered now (initialize,
// tools/list, notifications, what cannot be read; RESPONSE nil for a
// notification), (:cancel . ID) a cancellation of request ID, or (:queue
// ID . SUBMITTED) a tools/call request or a batch (ID nil) queued as
// sly-agent-q--module-mcp-submit queues it, SUBMITTED its answer.
// ANSWER-CHANNEL (sly-agent-q--module-open-answer-channel, or nil): where
// the runner may write a queued request's answer itself.  ON-WORKER
// non-nil: a plain evaluate_lisp request may run on the Lisp worker
// itself (async::submit_mcp's ON_WORKER).  REFUSAL, a string: what would
// be queued is answered at once with that error instead (a client with as
// many requests waiting as sly-agent-q-mcp-max-queued-requests).
emacs_value mcp_line(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  std::string text = env.to_string(args[0]);
  auto tagged = [&](const char* tag, emacs_value rest) {
    emacs_value pair[] = {env.intern(tag), rest};
    return env.call(env.intern("cons"), 2, pair);
  };
  auto id_value = [&](const json& id) { return id.is_null() ? Env::sym().nil : from_json(env, id); };
  const std::uint64_t channel =
      nargs > 4 && !env.is_nil(args[4]) ? static_cast<std::uint64_t>(env.to_integer(args[4])) : 0;
  const bool on_worker = nargs > 5 && !env.is_nil(args[5]);
  const std::optional<std::string> refusal =
      nargs > 6 && !env.is_nil(args[6]) ? std::optional<std::string>(env.to_string(args[6])) : std::nullopt;
  auto queue = [&](McpMessage message) {
    if (refusal) {
      json error = {{"code", jsonrpc_error::kTooManyRequests}, {"message", *refusal}};
      json response = {{"jsonrpc", "2.0"}, {"id", message.id}, {"error", std::move(error)}};
      return tagged(":answer", env.str(response.dump()));
    }
    emacs_value id = id_value(message.id);
    return tagged(":queue", env.call(env.intern("cons"), {id, submit_message(env, std::move(message), args[1],
                                                                             args[2], args[3], channel, on_worker)}));
  };
  // The usual call, for the Lisp worker, read without a tree of its
  // envelope (nothing of it to settle: evaluate_lisp asks nothing first).
  // Not when its lane holds calls already (HOLD t: it waits behind them).
  if (on_worker && !env.eq(args[3], Env::sym().t))
    if (std::optional<SimpleToolsCall> simple = parse_simple_tools_call(text);
        simple && simple->name == "evaluate_lisp" && simple->progress_token.is_null()) {
      McpMessage message;
      message.id = simple->id;
      message.simple = std::move(*simple);
      return queue(std::move(message));
    }
  mcp::Route route = mcp::route_message(text);
  switch (route.kind) {
    case mcp::Route::Kind::Cancel:
      // A request of the bridge's that the worker read itself: nothing of
      // it is Emacs's to drop.
      if (channel && async::cancel_direct(channel, route.request_id)) return tagged(":answer", Env::sym().nil);
      return tagged(":cancel", id_value(route.request_id));
    case mcp::Route::Kind::Queue: {
      McpMessage message;
      message.parsed = std::move(route.message);
      message.id = route.id;
      return queue(std::move(message));
    }
    case mcp::Route::Kind::Answer:
      break;
  }
  EmacsCallContext context(env);
  ExecutionOptions options = options_for(env, args[1], args[2], context);
  std::optional<std::string> response = app::services_with_tools().server.handle(text, options);
  if (env.exit_pending()) throw NonLocalExit();
  return tagged(":answer", response ? env.str(*response) : Env::sym().nil);
}

// (sly-agent-q--module-open-answer-channel PATH) → the channel's id: the
// FIFO a bridge made for its connection's answers (sys/answer_fifo.hpp).
emacs_value open_answer_channel(const Env& env, ptrdiff_t, emacs_value* args) {
  return env.integer(static_cast<std::intmax_t>(async::open_answer_channel(env.to_string(args[0]))));
}

// (sly-agent-q--module-close-answer-channel ID) → nil.
emacs_value close_answer_channel(const Env& env, ptrdiff_t, emacs_value* args) {
  async::close_answer_channel(static_cast<std::uint64_t>(env.to_integer(args[0])));
  return Env::sym().nil;
}

// (sly-agent-q--module-answer-counts) → (DIRECT . THROUGH-EMACS): answers
// the runner wrote on a channel, and those a channel was given for but
// Emacs sent.
emacs_value answer_counts(const Env& env, ptrdiff_t, emacs_value*) {
  async::AnswerCounts counts = async::answer_counts();
  return env.call(env.intern("cons"), {env.integer(static_cast<std::intmax_t>(counts.direct)),
                                       env.integer(static_cast<std::intmax_t>(counts.through_emacs))});
}

// (sly-agent-q--module-inline-counts) → (ON-WORKER TAKEN-OVER DIRECT
// DECLINED): MCP requests the Lisp worker ran and answered itself, those
// the runner took over (or back); requests it read from a bridge's
// request channel and ran, and those it handed to Emacs's thread.
emacs_value inline_counts(const Env& env, ptrdiff_t, emacs_value*) {
  async::InlineCounts counts = async::inline_counts();
  return env.call(Env::sym().list, {env.integer(static_cast<std::intmax_t>(counts.on_worker)),
                                    env.integer(static_cast<std::intmax_t>(counts.taken_over)),
                                    env.integer(static_cast<std::intmax_t>(counts.direct)),
                                    env.integer(static_cast<std::intmax_t>(counts.declined))});
}

// (sly-agent-q--module-open-request-channel PATH CHANNEL) → t: the
// bridge's request channel beside answer channel CHANNEL
// (async::open_request_channel); signals why it cannot be opened.
emacs_value open_request_channel(const Env& env, ptrdiff_t, emacs_value* args) {
  async::open_request_channel(env.to_string(args[0]), static_cast<std::uint64_t>(env.to_integer(args[1])));
  return Env::sym().t;
}

// (sly-agent-q--module-direct-request-running-p) → t while the Lisp worker
// runs a request it read from a bridge (no Elisp job stands for it).
emacs_value direct_request_running(const Env&, ptrdiff_t, emacs_value*) {
  return async::direct_request_running() ? Env::sym().t : Env::sym().nil;
}

// (sly-agent-q--module-allow-direct-requests FLAG) → nil.
emacs_value allow_direct_requests(const Env& env, ptrdiff_t, emacs_value* args) {
  async::allow_direct_requests(!env.is_nil(args[0]));
  return Env::sym().nil;
}

// (sly-agent-q--module-release JOB DECISIONS) → t, or nil when JOB is not
// held: queues the held JOB with DECISIONS, the answers to its questions
// in order (as an approval function answers them).
emacs_value release(const Env& env, ptrdiff_t, emacs_value* args) {
  std::vector<ApprovalDecision> decisions;
  emacs_value rest = args[1];
  while (!env.is_nil(rest)) {
    ApprovalDecision decision;  // an answer that cannot be read denies
    try {
      decision = approval_decision(env, env.call(Env::sym().car, {rest}));
    } catch (const std::exception&) {
      if (env.exit_pending()) env.raw()->non_local_exit_clear(env.raw());
    }
    decisions.push_back(std::move(decision));
    rest = env.call(Env::sym().cdr, {rest});
  }
  return env.boolean(async::release(static_cast<std::uint64_t>(env.to_integer(args[0])), std::move(decisions)));
}

emacs_value cancel(const Env& env, ptrdiff_t, emacs_value* args) {
  return env.boolean(async::cancel(static_cast<std::uint64_t>(env.to_integer(args[0]))));
}

emacs_value break_into(const Env& env, ptrdiff_t, emacs_value* args) {
  return env.boolean(async::break_into(static_cast<std::uint64_t>(env.to_integer(args[0]))));
}

emacs_value withdraw(const Env& env, ptrdiff_t, emacs_value* args) {
  return env.boolean(async::withdraw(env, static_cast<std::uint64_t>(env.to_integer(args[0]))));
}

emacs_value async_serve(const Env& env, ptrdiff_t nargs, emacs_value* args) {
  return async::serve(env, nargs > 0 && !env.is_nil(args[0]));
}

}  // namespace agentq::emacs
