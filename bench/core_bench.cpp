// Micro-benchmarks of the core hot paths: a native tool through the
// executor, and MCP tools/list and tools/call through McpServer::handle.
// Plain main + std::chrono; every call is timed on its own and the median
// and 99th percentile of those times are printed.
//
//   core: native_tool_execute median_us=0.41 p99_us=0.80 target_us=2
//
// Usage: core_bench [ITERATIONS]   (default 200000 for the per-call figures;
// tools/list runs ITERATIONS/10 times, the cold tools/list ITERATIONS/100)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "core/jsonrpc.hpp"

using namespace agentq;

namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double median_us;
  double p99_us;
};

template <typename Body>
Figures measure(std::size_t warmup, std::size_t iterations, Body&& body) {
  for (std::size_t i = 0; i < warmup; ++i) body();
  std::vector<double> samples;
  samples.reserve(iterations);
  for (std::size_t i = 0; i < iterations; ++i) {
    const auto start = Clock::now();
    body();
    const auto end = Clock::now();
    samples.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  std::sort(samples.begin(), samples.end());
  const auto at = [&](double q) {
    std::size_t index = static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1));
    return samples[index];
  };
  return {at(0.5), at(0.99)};
}

void report(const char* name, const Figures& f, double target_us) {
  if (target_us > 0) {
    std::printf("core: %s median_us=%.2f p99_us=%.2f target_us=%g\n", name, f.median_us, f.p99_us, target_us);
  } else {
    std::printf("core: %s median_us=%.2f p99_us=%.2f\n", name, f.median_us, f.p99_us);
  }
}

Parameter param(std::string name, ParamType type, std::string description) {
  return Parameter{std::move(name), type, std::move(description)};
}

Handler constant(std::string text) {
  return [text = std::move(text)](const json&, CallContext&) { return ToolOutput{true, text}; };
}

// 22 tools shaped like the Agent-Q and REPL-session tool sets.
void register_tools(Registry& registry) {
  struct Spec {
    const char* name;
    const char* description;
    std::vector<Parameter> parameters;
    std::vector<std::string> required;
    SafetyLevel level;
    std::vector<std::string> categories;
  };
  const std::vector<Spec> specs = {
      {"describe_symbol",
       "Get detailed information about a Lisp symbol including its type, value, function and documentation.",
       {param("symbol", ParamType::String, "Symbol name to describe"),
        param("package", ParamType::String, "Package name (optional, defaults to CL-USER)")},
       {"symbol"}, SafetyLevel::Safe, {"introspection"}},
      {"apropos_search",
       "Search for symbols whose names contain a substring, optionally limited to one package and kind.",
       {param("pattern", ParamType::String, "Substring to look for"),
        param("package", ParamType::String, "Package to search (optional)"),
        param("limit", ParamType::Integer, "Maximum number of results")},
       {"pattern"}, SafetyLevel::Safe, {"introspection"}},
      {"function_arglist",
       "Return the lambda list of a function or macro, with its documentation string when it has one.",
       {param("function", ParamType::String, "Function name"),
        param("package", ParamType::String, "Package name (optional)")},
       {"function"}, SafetyLevel::Safe, {"introspection"}},
      {"who_calls", "List the functions that call the given function, according to the cross-reference index.",
       {param("function", ParamType::String, "Function name"),
        param("package", ParamType::String, "Package name (optional)")},
       {"function"}, SafetyLevel::Safe, {"introspection", "xref"}},
      {"who_references", "List the functions that reference the given global variable in the loaded code base.",
       {param("variable", ParamType::String, "Variable name"),
        param("package", ParamType::String, "Package name (optional)")},
       {"variable"}, SafetyLevel::Safe, {"introspection", "xref"}},
      {"list_package_symbols", "List the external (or all) symbols of a package, grouped by functions, macros, variables.",
       {param("package", ParamType::String, "Package name"),
        param("external_only", ParamType::Boolean, "Only external symbols (default true)")},
       {"package"}, SafetyLevel::Safe, {"introspection", "packages"}},
      {"class_slots", "Describe the slots of a CLOS class: names, initargs, readers, writers, types and defaults.",
       {param("class", ParamType::String, "Class name"), param("package", ParamType::String, "Package name")},
       {"class"}, SafetyLevel::Safe, {"introspection", "clos"}},
      {"class_hierarchy", "Show the superclasses and subclasses of a CLOS class as an indented tree of class names.",
       {param("class", ParamType::String, "Class name"), param("depth", ParamType::Integer, "Tree depth")},
       {"class"}, SafetyLevel::Safe, {"introspection", "clos"}},
      {"macroexpand_form", "Macroexpand a form once or fully and return the expansion pretty-printed as Lisp code.",
       {param("form", ParamType::String, "Form to expand"), param("full", ParamType::Boolean, "Expand fully")},
       {"form"}, SafetyLevel::Safe, {"introspection"}},
      {"find_definition", "Find where a symbol is defined: source file, position and the kind of definition found.",
       {param("symbol", ParamType::String, "Symbol name"), param("package", ParamType::String, "Package name")},
       {"symbol"}, SafetyLevel::Safe, {"introspection"}},
      {"inspect_object", "Inspect the value of an expression: its type, slots or elements, printed with limits.",
       {param("expression", ParamType::String, "Expression to evaluate and inspect"),
        param("max_items", ParamType::Integer, "Maximum items shown")},
       {"expression"}, SafetyLevel::Safe, {"introspection"}},
      {"eval_form", "Evaluate a Lisp form in the running image and return the printed values or the error.",
       {param("form", ParamType::String, "Lisp form to evaluate"),
        param("package", ParamType::String, "Package context (optional)")},
       {"form"}, SafetyLevel::Cautious, {"execution"}},
      {"compile_form", "Compile a form with COMPILE and report the warnings and style warnings the compiler gave.",
       {param("form", ParamType::String, "Form to compile"), param("package", ParamType::String, "Package")},
       {"form"}, SafetyLevel::Cautious, {"execution"}},
      {"get_repl_history", "Return the most recent REPL inputs and their results from the current Lisp session.",
       {param("count", ParamType::Integer, "How many entries"), param("filter", ParamType::String, "Substring")},
       {}, SafetyLevel::Safe, {"execution"}},
      {"read_file", "Read a text file within the allowed directories and return its contents with line numbers.",
       {param("path", ParamType::String, "File path"), param("start_line", ParamType::Integer, "First line"),
        param("end_line", ParamType::Integer, "Last line")},
       {"path"}, SafetyLevel::Safe, {"buffer"}},
      {"read_buffer", "Return the text of an Emacs buffer by name, or of the region between two positions in it.",
       {param("buffer", ParamType::String, "Buffer name"), param("start", ParamType::Integer, "Start position"),
        param("end", ParamType::Integer, "End position")},
       {"buffer"}, SafetyLevel::Safe, {"buffer"}},
      {"write_file", "Write content to a file inside the allowed directories. DESTRUCTIVE - requires approval.",
       {param("path", ParamType::String, "File path to write"), param("content", ParamType::String, "Content")},
       {"path", "content"}, SafetyLevel::Dangerous, {"buffer", "filesystem"}},
      {"propose_file_edit", "Propose an edit to a file as a unified diff that the user reviews hunk by hunk first.",
       {param("path", ParamType::String, "File to edit"), param("diff", ParamType::String, "Unified diff"),
        param("description", ParamType::String, "Why")},
       {"path", "diff"}, SafetyLevel::Dangerous, {"diff"}},
      {"evaluate_lisp", "Evaluate Common Lisp code in a persistent REPL session. Definitions persist across calls.",
       {param("code", ParamType::String, "Common Lisp expression(s) to evaluate"),
        param("package", ParamType::String, "Package context for evaluation"),
        param("capture-time", ParamType::Boolean, "Include timing information")},
       {"code"}, SafetyLevel::Cautious, {"execution"}},
      {"list_definitions", "List the functions, variables and macros defined in the current REPL session so far.",
       {param("type", ParamType::String, "functions, variables, macros or all"),
        param("package", ParamType::String, "Package")},
       {}, SafetyLevel::Safe, {"execution"}},
      {"reset_session", "Reset the REPL session: forget the definitions made in it and return to package CL-USER.",
       {param("confirm", ParamType::Boolean, "Must be true"), param("keep_packages", ParamType::Boolean, "Keep")},
       {}, SafetyLevel::Cautious, {"execution"}},
      {"load_system", "Load an ASDF system (Debian cl-* packages or local projects) and report what was loaded.",
       {param("system", ParamType::String, "System name"), param("verbose", ParamType::Boolean, "Show output")},
       {"system"}, SafetyLevel::Cautious, {"execution"}},
  };
  for (const Spec& s : specs) {
    Tool tool;
    tool.name = s.name;
    tool.description = s.description;
    tool.parameters = s.parameters;
    tool.required = s.required;
    tool.safety_level = s.level;
    tool.categories = s.categories;
    tool.handler = constant(std::string("result of ") + s.name);
    registry.register_tool(std::move(tool));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t iterations = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200000;

  Registry registry;
  register_tools(registry);
  Executor executor(registry);
  McpServer server(executor);
  ExecutionOptions options;

  std::size_t sink = 0;

  // (a) native safe tool through Executor::execute.
  ToolCall call;
  call.id = "call_abc123";
  call.name = "describe_symbol";
  call.arguments = json{{"symbol", "mapcar"}, {"package", "common-lisp"}};
  report("native_tool_execute", measure(20000, iterations, [&] {
           ToolResult r = executor.execute(call, options);
           sink += r.content.size() + (r.success ? 1 : 0);
         }),
         2);

  // (b) tools/list with 22 tools.
  const std::string list_request = R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})";
  report("mcp_tools_list", measure(2000, iterations / 10, [&] {
           auto r = server.handle(list_request, options);
           sink += r ? r->size() : 0;
         }),
         50);

  // (b') the same with nothing prepared: a fresh server each time builds
  // and serialises the 22 schemas (what the first tools/list after a
  // registration costs).  Informational.
  report("mcp_tools_list_cold", measure(200, iterations / 100, [&] {
           McpServer fresh(executor);
           auto r = fresh.handle(list_request, options);
           sink += r ? r->size() : 0;
         }),
         0);

  // (c) tools/call of the native tool.
  const std::string call_request =
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"describe_symbol",)"
      R"("arguments":{"symbol":"mapcar","package":"common-lisp"}}})";
  report("mcp_tools_call_native", measure(20000, iterations, [&] {
           auto r = server.handle(call_request, options);
           sink += r ? r->size() : 0;
         }),
         0);

  if (sink == 0) std::puts("unexpected: empty results");
  return 0;
}
