#include "ecl/evaluate_tool.hpp"

#include <cctype>
#include <cmath>
#include <optional>
#include <string_view>

#include "ecl/runtime.hpp"

namespace agentq::ecl {

// Seconds → milliseconds; ≤ 0 means no timeout, and anything above a year
// is a year (no overflow, no undefined conversion).
std::chrono::milliseconds to_timeout(double seconds) {
  constexpr double kYear = 365.0 * 24 * 3600;
  if (!(seconds > 0)) return std::chrono::milliseconds(0);
  if (!(seconds < kYear)) seconds = kYear;
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
}

namespace {

// The id in a held error's text (lisp/held-errors.lisp: its first line is
// "[ERROR] TYPE (held: condition N)"), or nullopt.
std::optional<std::int64_t> held_condition_id(const std::string& text) {
  constexpr std::string_view kMarker = "(held: condition ";
  const std::size_t line_end = text.find('\n');
  const std::size_t at = text.find(kMarker);
  if (at == std::string::npos || at > line_end) return std::nullopt;
  std::int64_t id = 0;
  std::size_t i = at + kMarker.size();
  if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && id < (std::int64_t{1} << 40); ++i)
    id = id * 10 + (text[i] - '0');
  return id;
}

bool flag(const json& args, const char* name) {
  auto it = args.find(name);
  return it != args.end() && it->is_boolean() && it->get<bool>();
}

ToolOutput evaluate_lisp(Runtime& runtime, const EvaluateSettings& settings, const json& args,
                         CallContext& context) {
  EvalRequest request;
  request.code = args.at("code").get<std::string>();
  if (auto it = args.find("package"); it != args.end() && it->is_string()) request.package = it->get<std::string>();
  request.capture_time = flag(args, "capture_time") || flag(args, "capture-time");  // the older name
  request.debugger = context.wants_debugger();
  request.hold_errors = flag(args, "debug");
  request.agent = !context.user_origin();
  // The user's setting is a ceiling that a model or an MCP client cannot
  // lift: a per-call timeout may only lower it (0 or less, or NaN: the
  // ceiling itself).
  double timeout = settings.default_timeout_s.load();
  if (auto it = args.find("timeout"); it != args.end() && it->is_number()) {
    double asked = it->get<double>();
    if (asked > 0 && (!(timeout > 0) || asked < timeout)) timeout = asked;
  }
  request.timeout = to_timeout(timeout);
  request.output_limit = settings.output_limit.load();
  request.interactive_key = context.interactive_key();
  EvalOutcome outcome = runtime.evaluate(std::move(request), context);
  ToolOutput output{outcome.success, std::move(outcome.text), std::nullopt};
  if (!output.success) output.condition_id = held_condition_id(output.text);
  return output;
}

}  // namespace

void register_evaluate_lisp(Registry& registry, Runtime& runtime, const EvaluateSettings& settings) {
  Tool tool;
  tool.name = "evaluate_lisp";
  tool.description =
      "Evaluate Common Lisp code in a persistent REPL session. Definitions and variables persist "
      "across calls. Returns captured [stdout]/[stderr]/[warnings] sections and one `=> value` line "
      "per returned value, or an [ERROR] report with a backtrace.";
  tool.parameters = {
      {"code", ParamType::String,
       "Common Lisp expression(s) to evaluate. Can be a single form or multiple forms; they are read "
       "and evaluated one at a time, and the values of the last one are returned."},
      {"package", ParamType::String,
       "Package context for evaluation. Defaults to CL-USER or the last-used package."},
      {"capture_time", ParamType::Boolean,
       "If true, include timing information (real time, run time, GC time, bytes consed) in the result. "
       "Default false. (The older name capture-time is accepted too.)"},
      {"timeout", ParamType::Number,
       "Seconds after which the evaluation is interrupted. It may only lower the session's limit (30 s "
       "unless the user changed it); a larger value, or 0 or less, means the session's limit."},
      {"debug", ParamType::Boolean,
       "If true, an unhandled error does not unwind: the evaluation is held live, and the [ERROR] "
       "report's first line says `(held: condition N)` and lists the [Restarts]. Then call "
       "invoke_restart (e.g. USE-VALUE with a value) to go on from where it stopped, backtrace to see "
       "the frames and their local variables, or eval_in_frame, with condition_id N. A held error "
       "nobody answers is aborted after a few minutes; a few are held at most."},
  };
  tool.required = {"code"};
  tool.safety_level = SafetyLevel::Cautious;
  tool.categories = {"execution"};
  tool.kind = HandlerKind::Lisp;
  tool.handler = [&runtime, &settings](const json& args, CallContext& context) {
    return evaluate_lisp(runtime, settings, args, context);
  };
  registry.register_tool(std::move(tool));
}

}  // namespace agentq::ecl
