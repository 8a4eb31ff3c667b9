// One case of the hostile-input corpus (tests/hostile/cases/*.case, see
// make-cases.py) and the check of what the server answered to it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentq::hostile {

using json = nlohmann::json;

struct Case {
  enum class Expect { Error, Result, ToolOk, ToolError, None, Batch };
  enum class Only { Both, InProcess, Binary };

  std::string name;
  std::string body;  // the message, exactly as sent (no newline)
  Expect expect = Expect::Result;
  int code = 0;         // Error: the JSON-RPC error code
  std::size_t batch = 0;  // Batch: how many responses
  json id;              // the response's id
  std::vector<std::string> contains;
  std::chrono::seconds timeout{15};
  Only only = Only::Both;
  std::string then;  // a tools/call (id "hostile-then") sent next, which must succeed: an undo
};

inline constexpr std::string_view kThenId = "hostile-then";

// What is wrong with the answer to a case's THEN message, or "".
std::string check_then(const std::vector<std::string>& responses);

// Every *.case file of DIRECTORY, in name order.  Throws on a file it cannot read.
std::vector<Case> load_cases(const std::string& directory);

// Reads one case file's text (header, "---", body).
Case parse_case(const std::string& name, const std::string& text);

// What is wrong with RESPONSE (the lines the server wrote for the case:
// none, or one) as an answer to CASE; empty when nothing is.
std::string check(const Case& c, const std::vector<std::string>& responses);

// A readable head of TEXT for failure messages.
std::string head(const std::string& text, std::size_t max = 300);

}  // namespace agentq::hostile
