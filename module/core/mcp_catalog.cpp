#include "core/mcp_catalog.hpp"

#include <array>
#include <string_view>

namespace agentq::mcp {

namespace {

using json = nlohmann::json;

struct Fixed {
  std::string_view uri, name, title, description, tool;
};

// Every one is read by a safe tool (McpServer checks it again).
constexpr std::array<Fixed, 4> kResources = {{
    {"lisp://session/definitions", "definitions", "Session definitions",
     "The functions, macros, variables and classes defined in the session, by package.", "list_definitions"},
    {"lisp://session/last-error", "last-error", "Last error",
     "The session's last error: what was called, the condition and its backtrace.", "get_last_error"},
    {"lisp://session/history", "history", "Recent evaluations",
     "The latest eval_form and compile_form calls with their results.", "get_repl_history"},
    {"lisp://session/systems", "systems", "Loaded ASDF systems",
     "The ASDF systems loaded in the session, each with its version and directory (from memory: no file is read).",
     "list_systems"},
}};

struct Template {
  std::string_view prefix;  // the URI up to the first variable
  std::string_view uri_template, name, title, description;
};

constexpr std::array<Template, 2> kTemplates = {{
    {"lisp://symbol/", "lisp://symbol/{package}/{name}", "symbol", "A symbol's documentation",
     "What a symbol names in the session: its function's lambda list and documentation, its value, its class."},
    {"lisp://package/", "lisp://package/{package}", "package", "A package's symbols",
     "The exported symbols of a package, with what each names."},
}};

// %XX escapes decoded (a symbol's name may hold '/', '*', spaces); nullopt
// for a malformed escape.
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size() || hex(text[i + 1]) < 0 || hex(text[i + 2]) < 0) return std::nullopt;
    out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
    i += 2;
  }
  return out;
}

ToolCall call_of(std::string_view tool, json arguments) {
  ToolCall call;
  call.name = std::string(tool);
  call.arguments = std::move(arguments);
  return call;
}

}  // namespace

json resources_list() {
  json resources = json::array();
  for (const Fixed& r : kResources) {
    resources.push_back({{"uri", r.uri},
                         {"name", r.name},
                         {"title", r.title},
                         {"description", r.description},
                         {"mimeType", "text/plain"}});
  }
  return {{"resources", std::move(resources)}};
}

json resource_templates_list() {
  json templates = json::array();
  for (const Template& t : kTemplates) {
    templates.push_back({{"uriTemplate", t.uri_template},
                         {"name", t.name},
                         {"title", t.title},
                         {"description", t.description},
                         {"mimeType", "text/plain"}});
  }
  return {{"resourceTemplates", std::move(templates)}};
}

std::optional<ToolCall> resource_call(const std::string& uri) {
  for (const Fixed& r : kResources) {
    if (uri == r.uri) return call_of(r.tool, json::object());
  }
  std::string_view rest = uri;
  if (rest.starts_with(kTemplates[0].prefix)) {
    rest.remove_prefix(kTemplates[0].prefix.size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) return std::nullopt;
    auto package = percent_decoded(rest.substr(0, slash));
    auto name = percent_decoded(rest.substr(slash + 1));
    if (!package || !name) return std::nullopt;
    return call_of("describe_symbol", {{"symbol", *name}, {"package", *package}});
  }
  if (rest.starts_with(kTemplates[1].prefix)) {
    rest.remove_prefix(kTemplates[1].prefix.size());
    auto package = percent_decoded(rest);
    if (!package || package->empty() || package->find('/') != std::string::npos) return std::nullopt;
    return call_of("list_package_symbols", {{"package", *package}});
  }
  return std::nullopt;
}

json prompts_list() {
  json prompts = json::array();
  prompts.push_back({{"name", "explain-error"},
                     {"title", "Explain the last error"},
                     {"description",
                      "Explain the session's last error with its backtrace, and how to fix its cause."},
                     {"arguments", json::array()}});
  prompts.push_back({{"name", "explain-symbol"},
                     {"title", "Explain a symbol"},
                     {"description", "Explain what a symbol names in the live session, and how to use it."},
                     {"arguments", json::array({{{"name", "symbol"}, {"description", "The symbol's name."}, {"required", true}},
                                                {{"name", "package"},
                                                 {"description", "Its package (default CL-USER)."},
                                                 {"required", false}}})}});
  prompts.push_back({{"name", "fix-failing-tests"},
                     {"title", "Fix a system's failing tests"},
                     {"description", "Run an ASDF system's tests, fix what fails with edit_form, and run them again."},
                     {"arguments", json::array({{{"name", "system"}, {"description", "The ASDF system."}, {"required", true}}})}});
  return {{"prompts", std::move(prompts)}};
}

std::optional<PromptPlan> prompt_plan(const std::string& name, const json& arguments, std::string& error) {
  auto argument = [&](const char* key) -> std::optional<std::string> {
    if (!arguments.is_object()) return std::nullopt;
    auto it = arguments.find(key);
    if (it == arguments.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) return std::nullopt;
    return it->get<std::string>();
  };
  PromptPlan plan;
  if (name == "explain-error") {
    plan.description = "The session's last error, to explain";
    plan.call = call_of("get_last_error", json::object());
    plan.before = "This is the last error in my live Common Lisp session (ECL), with its backtrace:\n\n";
    plan.after =
        "\n\nExplain what went wrong and why, in terms of my code, and how to fix its cause. Use the session's "
        "tools (describe_symbol, who_calls, evaluate_lisp) to check your explanation before you answer.";
    return plan;
  }
  if (name == "explain-symbol") {
    auto symbol = argument("symbol");
    if (!symbol) {
      error = "Missing required argument: symbol";
      return std::nullopt;
    }
    json call_arguments = {{"symbol", *symbol}};
    if (auto package = argument("package")) call_arguments["package"] = *package;
    plan.description = "What " + *symbol + " names in the session";
    plan.call = call_of("describe_symbol", std::move(call_arguments));
    plan.before = "This is what the symbol " + *symbol + " names in my live Common Lisp session:\n\n";
    plan.after = "\n\nExplain what it does and how to use it, with a short example I can evaluate.";
    return plan;
  }
  if (name == "fix-failing-tests") {
    auto system = argument("system");
    if (!system) {
      error = "Missing required argument: system";
      return std::nullopt;
    }
    plan.description = "Fix the failing tests of " + *system;
    plan.before = "Run the tests of the ASDF system " + *system +
                  " with run_tests. For each failure, read the function under test (find_definitions, read_file), "
                  "fix it with edit_form (the user reviews each edit), and run the tests again until they pass. "
                  "Do not change the tests unless they are wrong; say so when you think one is.";
    return plan;
  }
  error = "Unknown prompt: " + name.substr(0, 200);
  return std::nullopt;
}

}  // namespace agentq::mcp
