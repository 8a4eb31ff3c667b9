#include "hostile_case.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace agentq::hostile {

namespace {

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.pop_back();
  std::size_t start = text.find_first_not_of(' ');
  return start == std::string::npos ? std::string() : text.substr(start);
}

// A JSON-RPC 2.0 response object: what is wrong with it, or "".
std::string malformed_response(const json& response) {
  if (!response.is_object()) return "a response that is not an object";
  if (response.value("jsonrpc", json()) != "2.0") return "jsonrpc is not \"2.0\"";
  if (!response.contains("id")) return "no id";
  const json& id = response["id"];
  if (!(id.is_string() || id.is_number() || id.is_null())) return "an id that is neither string, number nor null";
  const bool result = response.contains("result"), error = response.contains("error");
  if (result == error) return "not exactly one of result and error";
  for (auto& [key, value] : response.items()) {
    if (key != "jsonrpc" && key != "id" && key != "result" && key != "error") return "an extra member " + key;
  }
  if (error) {
    const json& e = response["error"];
    if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer() || !e.contains("message") ||
        !e["message"].is_string())
      return "an error without an integer code and a string message";
    if (e["message"].get_ref<const std::string&>().size() > 4096) return "an error message over 4 KB";
  } else {
    const json& r = response["result"];
    if (!r.is_object()) return "a result that is not an object";
    if (r.contains("content")) {
      const json& content = r["content"];
      if (!content.is_array() || content.empty()) return "tools/call content is not a non-empty array";
      for (const json& item : content) {
        if (!item.is_object() || item.value("type", json()) != "text" || !item.contains("text") ||
            !item["text"].is_string())
          return "tools/call content item is not {type:text, text:string}";
      }
      if (!r.contains("isError") || !r["isError"].is_boolean()) return "tools/call result without boolean isError";
    }
  }
  return "";
}

std::string text_of(const json& response) {
  if (response.contains("error")) return response["error"]["message"].get<std::string>();
  const json& r = response["result"];
  if (r.contains("content")) return r["content"][0]["text"].get<std::string>();
  return r.dump();
}

}  // namespace

std::string head(const std::string& text, std::size_t max) {
  if (text.size() <= max) return text;
  return text.substr(0, max) + "... (" + std::to_string(text.size()) + " bytes)";
}

Case parse_case(const std::string& name, const std::string& text) {
  Case c;
  c.name = name;
  const std::string separator = "\n---\n";
  std::size_t split = text.find(separator);
  std::string header;
  if (text.rfind("---\n", 0) == 0) {
    split = 0;
    c.body = text.substr(4);
  } else {
    if (split == std::string::npos) throw std::runtime_error(name + ": no --- line");
    header = text.substr(0, split);
    c.body = text.substr(split + separator.size());
  }
  if (!c.body.empty() && c.body.back() == '\n') c.body.pop_back();
  std::istringstream lines(header);
  std::string line;
  bool has_expect = false;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t colon = line.find(':');
    if (colon == std::string::npos) throw std::runtime_error(name + ": bad header line " + line);
    std::string key = line.substr(0, colon), value = trim(line.substr(colon + 1));
    if (key == "expect") {
      has_expect = true;
      std::istringstream words(value);
      std::string kind;
      words >> kind;
      if (kind == "error") {
        c.expect = Case::Expect::Error;
        words >> c.code;
      } else if (kind == "result") {
        c.expect = Case::Expect::Result;
      } else if (kind == "tool-ok") {
        c.expect = Case::Expect::ToolOk;
      } else if (kind == "tool-error") {
        c.expect = Case::Expect::ToolError;
      } else if (kind == "none") {
        c.expect = Case::Expect::None;
      } else if (kind == "batch") {
        c.expect = Case::Expect::Batch;
        words >> c.batch;
      } else {
        throw std::runtime_error(name + ": unknown expectation " + value);
      }
    } else if (key == "id") {
      c.id = json::parse(value);
    } else if (key == "contains") {
      c.contains.push_back(value);
    } else if (key == "timeout") {
      c.timeout = std::chrono::seconds(std::stoi(value));
    } else if (key == "then") {
      c.then = value;
    } else if (key == "only") {
      if (value == "inprocess") c.only = Case::Only::InProcess;
      else if (value == "binary") c.only = Case::Only::Binary;
      else throw std::runtime_error(name + ": bad only: " + value);
    } else {
      throw std::runtime_error(name + ": unknown header " + key);
    }
  }
  if (!has_expect) throw std::runtime_error(name + ": no expect header");
  return c;
}

std::vector<Case> load_cases(const std::string& directory) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().extension() == ".case") files.push_back(entry.path());
  }
  // By name, without the extension: "a" before "a-z" (cases may rely on order).
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.stem() < b.stem(); });
  std::vector<Case> cases;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    cases.push_back(parse_case(file.stem().string(), text.str()));
  }
  return cases;
}

std::string check_then(const std::vector<std::string>& responses) {
  if (responses.size() != 1) return "expected one answer to the undo, got " + std::to_string(responses.size());
  json response = json::parse(responses[0], nullptr, false);
  if (response.is_discarded() || !response.contains("result") || response["result"].value("isError", true))
    return "the undo failed: " + head(responses[0], 600);
  return "";
}

std::string check(const Case& c, const std::vector<std::string>& responses) {
  if (c.expect == Case::Expect::None) {
    if (responses.empty()) return "";
    return "expected no response, got " + std::to_string(responses.size()) + ": " + head(responses[0]);
  }
  if (responses.size() != 1) {
    return "expected exactly one response, got " + std::to_string(responses.size()) +
           (responses.empty() ? "" : ": " + head(responses[0]) + (responses.size() > 1 ? " / " + head(responses[1]) : ""));
  }
  const std::string& text = responses[0];
  if (text.find('\n') != std::string::npos) return "a response holding a newline";
  json response = json::parse(text, nullptr, false);
  if (response.is_discarded()) return "a response that is not JSON: " + head(text);
  if (c.expect == Case::Expect::Batch) {
    if (!response.is_array()) return "expected a batch of responses, got " + head(text);
    if (response.size() != c.batch)
      return "expected " + std::to_string(c.batch) + " responses in the batch, got " + std::to_string(response.size());
    for (const json& element : response) {
      if (std::string problem = malformed_response(element); !problem.empty())
        return "in the batch, " + problem + ": " + head(element.dump());
    }
    return "";
  }
  if (std::string problem = malformed_response(response); !problem.empty()) return problem + ": " + head(text);
  if (response["id"] != c.id) return "id " + head(response["id"].dump()) + ", expected " + head(c.id.dump());
  switch (c.expect) {
    case Case::Expect::Error:
      if (!response.contains("error") || response["error"]["code"] != c.code)
        return "expected error " + std::to_string(c.code) + ", got " + head(text);
      break;
    case Case::Expect::Result:
      if (!response.contains("result")) return "expected a result, got " + head(text);
      break;
    case Case::Expect::ToolOk:
    case Case::Expect::ToolError: {
      const bool want_error = c.expect == Case::Expect::ToolError;
      if (!response.contains("result") || !response["result"].contains("content"))
        return "expected a tools/call result, got " + head(text);
      if (response["result"]["isError"] != want_error)
        return std::string("expected isError ") + (want_error ? "true" : "false") + ", got " + head(text, 800);
      break;
    }
    default:
      break;
  }
  const std::string said = text_of(response);
  for (const std::string& piece : c.contains) {
    if (said.find(piece) == std::string::npos) return "no \"" + piece + "\" in " + head(said, 800);
  }
  return "";
}

}  // namespace agentq::hostile
