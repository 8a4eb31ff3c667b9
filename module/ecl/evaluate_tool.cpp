#include "ecl/evaluate_tool.hpp"

#include <algorithm>
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

// The structured form of an [ERROR] text (lisp/errors.lisp's ERROR-TEXT-1:
// "[ERROR] TYPE[ (held: condition N)]\nMESSAGE…\n\n[Restarts]\nI: [NAME]
// report…\n\n[Backtrace]…", the output sections after a blank line), as
// evaluate_lisp's outputSchema says: {"error": {type, message, restarts,
// condition_id}}.  Every part but TYPE may be missing.
std::string error_structure(const std::string& text, std::optional<std::int64_t> condition_id) {
  json error = json::object();
  std::string_view rest = text;
  constexpr std::string_view kHead = "[ERROR] ";
  if (rest.starts_with(kHead)) rest.remove_prefix(kHead.size());
  const std::size_t line_end = std::min(rest.find('\n'), rest.size());
  std::string_view type = rest.substr(0, line_end);
  if (std::size_t held = type.find(" (held: "); held != std::string_view::npos) type = type.substr(0, held);
  error["type"] = std::string(type);
  rest.remove_prefix(std::min(line_end + 1, rest.size()));
  // The message runs to the first blank line before a section.
  error["message"] = std::string(rest.substr(0, std::min(rest.find("\n\n["), rest.size())));
  json restarts = json::array();
  if (std::size_t at = text.find("\n[Restarts]\n"); at != std::string::npos) {
    std::string_view lines = std::string_view(text).substr(at + 12);
    while (!lines.empty() && lines.front() != '\n') {
      const std::size_t end = std::min(lines.find('\n'), lines.size());
      std::string_view line = lines.substr(0, end);
      lines.remove_prefix(std::min(end + 1, lines.size()));
      // "I: [NAME] report"
      const std::size_t colon = line.find(": [");
      const std::size_t close = line.find("] ", colon == std::string_view::npos ? 0 : colon);
      if (colon == std::string_view::npos || close == std::string_view::npos) continue;
      std::int64_t index = 0;
      for (char c : line.substr(0, colon)) index = std::isdigit(static_cast<unsigned char>(c)) ? index * 10 + (c - '0') : index;
      json restart = json::object();
      restart["index"] = index;
      restart["name"] = std::string(line.substr(colon + 3, close - colon - 3));
      restart["report"] = std::string(line.substr(close + 2));
      restarts.push_back(std::move(restart));
    }
  }
  error["restarts"] = std::move(restarts);
  if (condition_id) error["condition_id"] = *condition_id;
  json structure = json::object();
  structure["error"] = std::move(error);
  return structure.dump(-1, ' ', false, json::error_handler_t::replace);
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
  const bool structured = context.wants_structured();
  request.structured = structured;
  request.stream_output = context.streams_output();
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
  if (structured) {
    // A failure's structure comes from Lisp when it made the [ERROR] text
    // from the condition (lisp/errors.lisp), else from the text.
    output.structured = output.success || !outcome.structure.empty()
                            ? std::move(outcome.structure)
                            : error_structure(output.text, output.condition_id);
  }
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
  tool.parameters[2].default_value = false;
  tool.parameters[2].aliases = {"capture-time"};
  tool.parameters[4].default_value = false;
  tool.required = {"code"};
  tool.output_schema = json::parse(R"({
    "type": "object",
    "properties": {
      "values": {"type": "array", "items": {"type": "string"},
                 "description": "Each value of the last form, printed as on its => line."},
      "stdout": {"type": "string"},
      "stderr": {"type": "string"},
      "warnings": {"type": "array", "items": {"type": "string"}},
      "package": {"type": "string", "description": "The session's package after the evaluation."},
      "error": {
        "type": "object",
        "description": "Present when the evaluation failed: the condition, and the restarts that were in force.",
        "properties": {
          "type": {"type": "string"},
          "message": {"type": "string"},
          "restarts": {"type": "array", "items": {"type": "object", "properties": {
            "index": {"type": "integer"}, "name": {"type": "string"}, "report": {"type": "string"}},
            "required": ["index", "name", "report"]}},
          "condition_id": {"type": "integer", "description": "Held (debug: true): the id for invoke_restart, backtrace and eval_in_frame."}
        },
        "required": ["type", "message", "restarts"]
      }
    }
  })");
  tool.safety_level = SafetyLevel::Cautious;
  tool.categories = {"execution"};
  tool.kind = HandlerKind::Lisp;
  tool.handler = [&runtime, &settings](const json& args, CallContext& context) {
    return evaluate_lisp(runtime, settings, args, context);
  };
  registry.register_tool(std::move(tool));
}

}  // namespace agentq::ecl
