#include "generated_cases.hpp"

namespace agentq::hostile {

namespace {

constexpr std::size_t kDeep = 100000;
constexpr std::size_t kHuge = std::size_t{50} << 20;  // 50 MB

Case make(std::string name, std::string body, Case::Expect expect, json id = nullptr, int code = 0,
          std::vector<std::string> contains = {}, int timeout_s = 60) {
  Case c;
  c.name = std::move(name);
  c.body = std::move(body);
  c.expect = expect;
  c.id = std::move(id);
  c.code = code;
  c.contains = std::move(contains);
  c.timeout = std::chrono::seconds(timeout_s);
  return c;
}

std::string repeat(std::string_view piece, std::size_t times) {
  std::string out;
  out.reserve(piece.size() * times);
  for (std::size_t i = 0; i < times; ++i) out += piece;
  return out;
}

std::string eval_body(int id, const std::string& code_json, const std::string& extra = "") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":)" + code_json + extra + "}}}";
}

std::string json_quoted(const std::string& text) { return json(text).dump(); }

}  // namespace

std::vector<Case> large_cases(bool binary, std::size_t max_line) {
  using E = Case::Expect;
  std::vector<Case> cases;
  const std::string ping_head = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":)";

  // 100,000-deep nesting: the dispatcher refuses it before parsing.
  cases.push_back(make("deep-arrays-open", repeat("[", kDeep), E::Error, nullptr, -32700, {"nested deeper"}));
  cases.push_back(make("deep-arrays-closed", repeat("[", kDeep) + repeat("]", kDeep), E::Error, nullptr, -32700));
  cases.push_back(make("deep-objects", repeat(R"({"a":)", kDeep) + "1" + repeat("}", kDeep), E::Error, nullptr,
                       -32700));
  cases.push_back(make("deep-in-params", ping_head + repeat("[", kDeep) + repeat("]", kDeep) + "}}", E::Error,
                       nullptr, -32700));
  cases.push_back(make("deep-in-id", R"({"jsonrpc":"2.0","method":"ping","id":)" + repeat("[", kDeep) +
                                         repeat("]", kDeep) + "}",
                       E::Error, nullptr, -32700));
  cases.push_back(make("deep-in-arguments",
                       eval_body(1, "\"1\"", R"(,"x":)" + repeat(R"({"a":)", kDeep) + "1" + repeat("}", kDeep)),
                       E::Error, nullptr, -32700));
  cases.push_back(make("deep-batch", repeat("[", kDeep) + R"({"jsonrpc":"2.0","id":1,"method":"ping"})" +
                                         repeat("]", kDeep),
                       E::Error, nullptr, -32700));
  // Brackets inside strings are not nesting.
  cases.push_back(make("brackets-in-string", ping_head + json_quoted(repeat("[{", kDeep)) + "}}", E::Result, 1));
  // 100,000-deep Lisp: ECL's reader recurses in C without a stack check;
  // such code is refused before it is read.  9,000 deep is read.
  for (auto [name, code] : std::vector<std::pair<std::string, std::string>>{
           {"list", "'" + repeat("(", kDeep) + repeat(")", kDeep)},
           {"unclosed", repeat("(", kDeep)},
           {"quotes", repeat("'", kDeep) + "x"},
           {"vectors", repeat("#(", kDeep) + repeat(")", kDeep)},
           {"sharp-plus", repeat("#+ecl ", kDeep) + "7"},
           {"sharp-dot", repeat("#.", kDeep) + "7"}}) {
    cases.push_back(make("deep-lisp-" + name, eval_body(2, json_quoted(code), R"(,"timeout":5)"), E::ToolError, 2, 0,
                         {"READER-ERROR", "not read"}));
  }
  cases.push_back(make("deep-lisp-9000",
                       eval_body(3, json_quoted("(length '" + repeat("(", 9000) + repeat(")", 9000) + ")"),
                                 R"(,"timeout":10)"),
                       E::ToolOk, 3, 0, {"=> 1"}));
  cases.push_back(make("deep-macroexpand-form",
                       R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"macroexpand_form","arguments":{"form":)" +
                           json_quoted(repeat("(", kDeep)) + "}}}",
                       E::ToolError, 4, 0, {"READER-ERROR"}));

  // Huge strings: 50 MB in process; over the pipe, more than a line may
  // hold (answered unread), and 15 MB, which it reads.
  const std::size_t big = binary ? std::min<std::size_t>(15 << 20, max_line - 4096) : kHuge;
  const std::string tag = binary ? "15mb" : "50mb";
  const std::string pad(big, 'a');
  cases.push_back(make("string-" + tag + "-param", ping_head + json_quoted(pad) + "}}", E::Result, 1));
  cases.push_back(make("string-" + tag + "-method", R"({"jsonrpc":"2.0","id":1,"method":)" + json_quoted(pad) + "}",
                       E::Error, 1, -32601, {"Method not found"}));
  cases.push_back(make("string-" + tag + "-id", R"({"jsonrpc":"2.0","method":"ping","id":)" + json_quoted(pad) + "}",
                       E::Result, pad));
  cases.push_back(make("string-" + tag + "-key", R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{)" +
                                                     json_quoted(pad) + ":1}}",
                       E::Result, 1));
  cases.push_back(make("string-" + tag + "-tool-name",
                       R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":)" + json_quoted(pad) + "}}",
                       E::Error, 1, -32602, {"Unknown tool"}));
  cases.push_back(make("string-" + tag + "-lisp-comment", eval_body(7, json_quoted(";" + pad + "\n(+ 1 2)")), E::ToolOk,
                       7, 0, {"=> 3"}));
  cases.push_back(make("string-" + tag + "-lisp-string", eval_body(8, json_quoted("(length \"" + pad + "\")")),
                       E::ToolOk, 8, 0, {"=> " + std::to_string(big)}));
  cases.push_back(make("string-" + tag + "-package", eval_body(9, "\"1\"", R"(,"package":)" + json_quoted(pad)),
                       E::Result, 9));
  cases.push_back(make("string-" + tag + "-escaped-nuls", ping_head + json_quoted(std::string(big / 6, '\0')) + "}}",
                       E::Result, 1));
  cases.push_back(make("whitespace-" + tag, std::string(big, ' ') + R"({"jsonrpc":"2.0","id":1,"method":"ping"})",
                       E::Result, 1));
  if (binary) {
    cases.push_back(make("line-over-limit", ping_head + json_quoted(std::string(max_line + 1000, 'b')) + "}}", E::Error,
                         nullptr, -32700, {"bytes long"}));
    cases.push_back(make("line-50mb", R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":)" +
                                          json_quoted(std::string(kHuge, 'c')) + "}}",
                         E::Error, nullptr, -32700, {"bytes long"}));
  }

  // Huge argument objects, arrays and batches.
  {
    std::string keys;
    for (int i = 0; i < 200000; ++i) keys += ",\"k" + std::to_string(i) + "\":" + std::to_string(i);
    // Names evaluate_lisp does not take: refused, in a short message.
    cases.push_back(make("arguments-200k-keys", eval_body(10, "\"(+ 1 2)\"", keys), E::ToolError, 10, 0,
                         {"Unknown argument 'k0', 'k1', 'k10', 'k100', 'k1000' and 199995 more for evaluate_lisp"}));
    std::string array = "[";
    for (int i = 0; i < 1000000; ++i) array += (i ? ",1" : "1");
    array += "]";
    cases.push_back(make("arguments-1m-array", eval_body(11, "\"(+ 1 2)\"", ",\"x\":" + array), E::ToolError, 11,
                         0, {"Unknown argument 'x'"}));
    cases.push_back(make("code-is-1m-array", eval_body(12, array), E::ToolError, 12, 0, {"'code'"}));
  }
  {
    std::string batch = "[";
    std::size_t answered = 0;
    for (int i = 0; i < 10000; ++i) {
      if (i) batch += ',';
      switch (i % 5) {
        case 0: batch += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"ping"})"; ++answered; break;
        case 1: batch += R"({"jsonrpc":"2.0","method":"notifications/initialized"})"; break;
        case 2: batch += std::to_string(i); ++answered; break;
        case 3: batch += R"({"jsonrpc":"2.0","id":"x","method":"no/such"})"; ++answered; break;
        case 4: batch += R"({"jsonrpc":"2.0","id":null,"method":"tools/list"})"; ++answered; break;
      }
    }
    batch += "]";
    Case c = make("batch-10k-mixed", batch, E::Batch);
    c.batch = answered;
    cases.push_back(std::move(c));
    std::string evals = "[";
    for (int i = 0; i < 1000; ++i) evals += (i ? "," : "") + eval_body(i, "\"(+ 1 2)\"");
    evals += "]";
    Case e = make("batch-1000-evaluations", evals, E::Batch);
    e.batch = 1000;
    cases.push_back(std::move(e));
  }
  return cases;
}

std::vector<Case> wrong_type_cases(const json& tools_list_result) {
  std::vector<Case> cases;
  const std::vector<std::pair<std::string, json>> samples = {
      {"string", "s"}, {"integer", 2}, {"number", 1.5}, {"boolean", true},
      {"array", json::array({1})}, {"object", json::object({{"k", 1}})}};
  auto good_value = [](const std::string& type) -> json {
    if (type == "string") return "CAR";
    if (type == "integer") return 1;
    if (type == "number") return 1.0;
    if (type == "boolean") return false;
    if (type == "array") return json::array();
    return json::object();
  };
  auto accepts = [](const std::string& type, const std::string& sample) {
    return type == sample || (type == "number" && sample == "integer");
  };
  int id = 1000;
  for (const json& tool : tools_list_result.at("tools")) {
    const std::string name = tool.at("name");
    const json& schema = tool.at("inputSchema");
    const json properties = schema.value("properties", json::object());
    const json required = schema.value("required", json::array());
    json base = json::object();
    for (const json& r : required) base[r.get<std::string>()] = good_value(properties.at(r.get<std::string>()).at("type"));
    for (auto& [property, spec] : properties.items()) {
      const std::string type = spec.at("type");
      for (const auto& [sample_type, sample] : samples) {
        if (accepts(type, sample_type)) continue;
        json arguments = base;
        arguments[property] = sample;
        json message = {{"jsonrpc", "2.0"}, {"id", ++id}, {"method", "tools/call"},
                        {"params", {{"name", name}, {"arguments", arguments}}}};
        // Invalid arguments are the tool's error (MCP 2025-11-25, SEP-1303).
        Case c = make("wrong-type-" + name + "-" + property + "-" + sample_type, message.dump(),
                      Case::Expect::ToolError, id, 0, {"'" + property + "'"}, 15);
        cases.push_back(std::move(c));
      }
      // Beyond a bound the schema says.
      for (const char* bound : {"minimum", "maximum"}) {
        if (!spec.contains(bound)) continue;
        json arguments = base;
        const double edge = spec.at(bound).get<double>();
        const double beyond = std::string(bound) == "minimum" ? edge - 1 : edge + 1;
        if (type == "integer") arguments[property] = static_cast<std::int64_t>(beyond);
        else arguments[property] = beyond;
        json message = {{"jsonrpc", "2.0"}, {"id", ++id}, {"method", "tools/call"},
                        {"params", {{"name", name}, {"arguments", arguments}}}};
        cases.push_back(make("beyond-" + std::string(bound) + "-" + name + "-" + property, message.dump(),
                             Case::Expect::ToolError, id, 0,
                             {"'" + property + "': at " + (std::string(bound) == "minimum" ? "least" : "most")}, 15));
      }
    }
    // A name the tool does not take (additionalProperties: false).
    {
      json arguments = base;
      arguments["no_such_argument"] = 1;
      json message = {{"jsonrpc", "2.0"}, {"id", ++id}, {"method", "tools/call"},
                      {"params", {{"name", name}, {"arguments", arguments}}}};
      cases.push_back(make("unknown-argument-" + name, message.dump(), Case::Expect::ToolError, id, 0,
                           {"Unknown argument 'no_such_argument' for " + name}, 15));
    }
    for (const json& r : required) {
      json arguments = base;
      arguments.erase(r.get<std::string>());
      json message = {{"jsonrpc", "2.0"}, {"id", ++id}, {"method", "tools/call"},
                      {"params", {{"name", name}, {"arguments", arguments}}}};
      cases.push_back(make("missing-" + name + "-" + r.get<std::string>(), message.dump(), Case::Expect::ToolError,
                           id, 0, {"Missing required argument: " + r.get<std::string>()}, 15));
    }
  }
  return cases;
}

}  // namespace agentq::hostile
