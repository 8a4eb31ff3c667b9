// libFuzzer target over the MCP server's entry points, without ECL: the
// input as one message to McpServer::handle (a registry of core tools with
// every argument type, one of them dangerous and denied), the stdio router,
// and the same bytes read as lines by LineReader (a small line limit, so
// the too-long path runs) and repaired as UTF-8.  Built by
// -DAGENTQ_FUZZ=ON with clang (make fuzz).
//
// Beyond the sanitizers, it traps when an invariant breaks: every answer
// is one line of valid JSON and UTF-8, a JSON-RPC response (or a batch of
// them), and repaired text is well-formed UTF-8.  The fast parser for simple
// JSON is checked against nlohmann's: whatever it parses must be what
// nlohmann parses, value and number type alike; and so is the envelope
// scan of the --emacs bridge (the id, method and params.requestId it reads).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/executor.hpp"
#include "core/json_envelope.hpp"
#include "core/json_fast.hpp"
#include "core/json_limits.hpp"
#include "core/jsonrpc.hpp"
#include "core/registry.hpp"
#include "core/utf8.hpp"
#include "mcp/approval.hpp"
#include "mcp/line_reader.hpp"
#include "core/mcp_route.hpp"

namespace {

using namespace agentq;

struct World {
  Registry registry;
  Executor executor{registry};
  McpServer server{executor};
  ExecutionOptions options;

  World() {
    auto tool = [&](std::string name, std::vector<Parameter> parameters, std::vector<std::string> required,
                    SafetyLevel level) {
      Tool t;
      t.name = std::move(name);
      t.description = "A tool for the fuzzer: answers its arguments as JSON.";
      t.parameters = std::move(parameters);
      t.required = std::move(required);
      t.safety_level = level;
      t.handler = [](const json& args, CallContext&) { return ToolOutput{true, args.dump()}; };
      registry.register_tool(std::move(t));
    };
    tool("echo", {{"text", ParamType::String, "Text."}, {"count", ParamType::Integer, "Count."},
                  {"ratio", ParamType::Number, "Ratio."}, {"flag", ParamType::Boolean, "Flag."},
                  {"items", ParamType::Array, "Items."}, {"options", ParamType::Object, "Options."}},
         {"text"}, SafetyLevel::Safe);
    tool("evaluate_lisp", {{"code", ParamType::String, "Code."}, {"package", ParamType::String, "Package."},
                           {"timeout", ParamType::Number, "Seconds."}},
         {"code"}, SafetyLevel::Cautious);
    tool("delete_everything", {{"path", ParamType::String, "Path."}}, {}, SafetyLevel::Dangerous);
    // A tool that fails, and one that throws.
    Tool fails;
    fails.name = "fails";
    fails.description = "A tool for the fuzzer that always fails.";
    fails.handler = [](const json&, CallContext&) { return ToolOutput{false, "[ERROR] FAILED\n\xff"}; };
    registry.register_tool(std::move(fails));
    Tool throws;
    throws.name = "throws";
    throws.description = "A tool for the fuzzer that always throws.";
    throws.handler = [](const json& args, CallContext&) -> ToolOutput { throw std::runtime_error(args.dump()); };
    registry.register_tool(std::move(throws));
    options.approve = mcp::headless_approval(false);
  }
};

[[noreturn]] void broken(const char* what, std::string_view text) {
  std::fprintf(stderr, "invariant broken: %s: %.*s\n", what, static_cast<int>(std::min<std::size_t>(text.size(), 500)),
               text.data());
  __builtin_trap();
}

bool response_object(const json& value) {
  if (!value.is_object() || value.value("jsonrpc", json()) != "2.0" || !value.contains("id")) return false;
  const json& id = value["id"];
  if (!(id.is_string() || id.is_number() || id.is_null())) return false;
  return value.contains("result") != value.contains("error");
}

void check_response(const std::string& text) {
  if (text.find('\n') != std::string::npos) broken("a newline in a response", text);
  if (!utf8::well_formed(text)) broken("a response that is not UTF-8", text);
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded()) broken("a response that is not JSON", text);
  if (value.is_array()) {
    if (value.empty()) broken("an empty batch response", text);
    for (const json& element : value)
      if (!response_object(element)) broken("a malformed response in a batch", text);
  } else if (!response_object(value)) {
    broken("a malformed response", text);
  }
}

// Same value, same JSON types all the way down (== alone takes 1 and 1u,
// or 1 and 1.0, for equal).
bool same_json(const json& a, const json& b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
      if (ia.key() != ib.key() || !same_json(ia.value(), ib.value())) return false;
    return true;
  }
  if (a.is_array()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_json(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

void check_fast_parser(std::string_view text) {
  std::optional<json> fast = parse_simple_json(text);
  if (!fast) return;
  json reference = json::parse(text, nullptr, false);
  if (reference.is_discarded()) broken("the fast parser took text nlohmann rejects", text);
  if (!same_json(*fast, reference)) broken("the fast parser and nlohmann disagree", text);
}

// What scan_message_envelope reads, parse_json_bounded reads as an object
// with the same id, method and params.requestId, whose dump() it gives.
void check_envelope(std::string_view text) {
  std::optional<MessageEnvelope> envelope = scan_message_envelope(text);
  if (!envelope) return;
  std::optional<json> reference = parse_json_bounded(text);
  if (!reference || !reference->is_object()) broken("the envelope scan read what is no JSON object", text);
  auto member = [&](const json& object, const char* key) -> const json* {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  };
  auto agrees = [&](bool has, const json& value, const std::string& dump, const json* expected) {
    if (has != (expected != nullptr)) return false;
    return !has || (same_json(value, *expected) && dump == expected->dump());
  };
  if (!agrees(envelope->has_id, envelope->id, envelope->id_text, member(*reference, "id")))
    broken("the envelope scan read another id", text);
  const json* method = member(*reference, "method");
  if (envelope->has_method != (method != nullptr) ||
      (method && (!method->is_string() || envelope->method != method->get<std::string>())))
    broken("the envelope scan read another method", text);
  const json* params = member(*reference, "params");
  const json* request = params && params->is_object() ? member(*params, "requestId") : nullptr;
  if (!agrees(envelope->has_request_id, envelope->request_id, envelope->request_id_text, request))
    broken("the envelope scan read another params.requestId", text);
}

// What parse_simple_tools_call takes, the whole dispatcher answers with
// the same bytes.
void check_simple_tools_call(World& world, std::string_view text) {
  std::optional<SimpleToolsCall> call = parse_simple_tools_call(text);
  if (!call) return;
  std::optional<std::string> reference = world.server.handle(text, world.options);
  if (!reference) broken("a simple tools/call the dispatcher does not answer", text);
  std::string answer = world.server.tools_call_text(call->id, call->name, std::move(call->arguments), world.options);
  if (answer != *reference) broken("a simple tools/call answered unlike the dispatcher", text);
}

void read_lines(std::string_view data) {
  int fd = ::memfd_create("fuzz-lines", MFD_CLOEXEC);
  if (fd < 0) return;
  for (std::string_view rest = data; !rest.empty();) {
    ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n <= 0) break;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ::lseek(fd, 0, SEEK_SET);
  mcp::LineReader reader(fd, 64);
  std::size_t total = 0;
  while (std::optional<mcp::Line> line = reader.next()) {
    if (line->too_long != (line->bytes > 64)) broken("a line's too_long flag", line->text);
    if (line->too_long && !line->text.empty()) broken("text kept for a line too long", line->text);
    if (!line->too_long && line->text.size() != line->bytes) broken("a line's byte count", line->text);
    total += line->bytes + 1;
    if (total > data.size() + 1) broken("lines longer than the input", line->text);
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World& world = *new World;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (std::optional<std::string> response = world.server.handle(text, world.options)) check_response(*response);
  (void)mcp::route_message(text);
  if (std::optional<mcp::PlainEvaluation> call = mcp::read_plain_evaluation(text)) {
    if (!(call->id.is_string() || call->id.is_number())) broken("a plain evaluation without a usable id", text);
  }
  check_fast_parser(text);
  check_envelope(text);
  check_simple_tools_call(world, text);

  std::string repaired = utf8::repaired(text);
  if (!utf8::well_formed(repaired)) broken("repaired text that is not UTF-8", repaired);
  if (utf8::well_formed(text) && repaired != text) broken("repair changed well-formed text", text);
  (void)utf8::complete_prefix(text);

  read_lines(text);
  return 0;
}
