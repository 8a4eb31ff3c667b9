// The hostile-input corpus (tests/hostile/cases, and the cases made here)
// against the MCP dispatcher, twice: McpServer::handle in this process, with
// the real registry and ECL (one test per case), and the real
// sly-agent-q-mcp binary over pipes (one process for the whole corpus).
// Each case gets exactly one well-formed response (none for a
// notification) within its bound, and the next good request works.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <thread>

#include "app/services.hpp"
#include "common/child_process.hpp"
#include "generated_cases.hpp"
#include "hostile_case.hpp"
#include "mcp/approval.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/unique_fd.hpp"

using namespace agentq;
using namespace agentq::hostile;
using namespace std::chrono_literals;

namespace {

const std::vector<Case>& corpus() {
  static const std::vector<Case> cases = load_cases(AGENTQ_HOSTILE_CASES);
  return cases;
}

// ------------------------------------------------------------ in process

// The corpus tries the runtime with hostile input, not the approvals: an
// agent's code that touches the world (#. included) runs, as the headless
// server runs it with --allow-dangerous (tests/elisp: agent-code tests).
struct AllowingContext final : CallContext {
  HostAnswer approve_in_host(const std::string&) override { return mcp::headless_code_approval(true); }
};

ExecutionOptions headless_options() {
  static AllowingContext allowing;
  ExecutionOptions options;
  options.approve = mcp::headless_approval(false);
  options.context = &allowing;
  return options;
}

// McpServer::handle on its own thread, waited for at most BOUND.  A call
// that does not return in time ends the test process: nothing else can be
// trusted after it.
std::vector<std::string> handle_bounded(const std::string& message, std::chrono::seconds bound,
                                        const std::string& name) {
  auto task = std::make_shared<std::packaged_task<std::optional<std::string>()>>(
      [message] { return app::services_with_tools().server.handle(message, headless_options()); });
  auto future = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (future.wait_for(bound) != std::future_status::ready) {
    std::fprintf(stderr, "hostile case %s: no answer within %lld s; giving up\n", name.c_str(),
                 static_cast<long long>(bound.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  std::optional<std::string> response = future.get();
  if (!response) return {};
  return {*response};
}

void expect_server_still_good(const std::string& after) {
  auto pong = handle_bounded(R"({"jsonrpc":"2.0","id":"after","method":"ping"})", 15s, after + " (ping after)");
  ASSERT_EQ(pong.size(), 1u);
  EXPECT_EQ(pong[0], R"({"id":"after","jsonrpc":"2.0","result":{}})") << "after " << after;
  auto three = handle_bounded(
      R"json({"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}})json",
      40s, after + " (evaluation after)");
  ASSERT_EQ(three.size(), 1u);
  EXPECT_NE(three[0].find(R"("text":"=> 3")"), std::string::npos) << "after " << after << ": " << head(three[0]);
}

void run_in_process(const Case& c) {
  if (std::getenv("HOSTILE_VERBOSE")) std::fprintf(stderr, "case %s\n", c.name.c_str());
  auto responses = handle_bounded(c.body, c.timeout, c.name);
  std::string problem = check(c, responses);
  EXPECT_EQ(problem, "") << c.name << ": sent " << head(c.body);
  if (!problem.empty()) std::fprintf(stderr, "FAILED %s: %s\n", c.name.c_str(), problem.c_str());
  if (!c.then.empty()) {
    EXPECT_EQ(check_then(handle_bounded(c.then, 30s, c.name + " (undo)")), "") << c.name;
  }
  expect_server_still_good(c.name);
}

// One test for the whole corpus: ECL boots once per test process.
TEST(HostileInProcess, EveryCommittedCase) {
  int ran = 0;
  for (const Case& c : corpus()) {
    if (c.only == Case::Only::Binary) continue;  // a line-level case
    SCOPED_TRACE(c.name);
    run_in_process(c);
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST(HostileCorpusSize, AtLeast200CommittedCases) { EXPECT_GE(corpus().size(), 200u); }

TEST(HostileInProcess, LargeCases) {
  for (const Case& c : large_cases(false, 0)) {
    SCOPED_TRACE(c.name);
    run_in_process(c);
  }
}

json tools_list_in_process() {
  auto list = handle_bounded(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", 30s, "tools/list");
  return json::parse(list.at(0))["result"];
}

TEST(HostileInProcess, WrongTypeForEveryToolArgument) {
  std::vector<Case> cases = wrong_type_cases(tools_list_in_process());
  EXPECT_GT(cases.size(), 50u);
  for (const Case& c : cases) {
    auto responses = handle_bounded(c.body, c.timeout, c.name);
    EXPECT_EQ(check(c, responses), "") << c.name;
  }
  expect_server_still_good("the wrong types");
}

// ------------------------------------------------------------ the binary over pipes

// One sly-agent-q-mcp with pipes for stdin and stdout (stderr to /dev/null).
class Server {
 public:
  Server() : process_(AGENTQ_MCP_BINARY, {"--allow-dangerous"}, fixtures::ChildStderr::DevNull) {}

  bool alive() { return process_.alive(); }

  // Writes BYTES and a newline on a thread of its own (the server may
  // answer, filling its pipe, before it has read all of a huge line).
  std::thread send(std::string bytes) {
    return std::thread([this, bytes = std::move(bytes)]() mutable {
      bytes += '\n';
      process_.write_all(bytes);
    });
  }

  // The next line, or nullopt when none comes before DEADLINE.
  std::optional<std::string> line(std::chrono::steady_clock::time_point deadline) { return process_.line(deadline); }

 private:
  fixtures::ChildProcess process_;
};

// Sends C, then an evaluation of (+ 1 2) with an id of its own: every line
// before that one's answer is C's.  Returns what is wrong, or "".
std::string run_through(Server& server, const Case& c, int n) {
  const std::string check_id = "hostile-check-" + std::to_string(n);
  std::thread writer = server.send(c.body);
  writer.join();
  if (!c.then.empty()) server.send(c.then).join();
  std::thread checker = server.send(
      R"({"jsonrpc":"2.0","id":")" + check_id +
      R"json(","method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}})json");
  checker.join();
  const auto deadline = std::chrono::steady_clock::now() + c.timeout + 30s;
  std::vector<std::string> responses, then_responses;
  for (;;) {
    std::optional<std::string> line = server.line(deadline);
    if (!line) {
      return "no answer to the evaluation after it within the bound (" + std::to_string(responses.size()) +
             " lines before)" + (server.alive() ? "" : "; the server died");
    }
    if (line->find("\"id\":\"" + check_id + "\"") != std::string::npos) {
      if (line->find(R"("text":"=> 3")") == std::string::npos) return "the evaluation after it answered " + head(*line);
      break;
    }
    // Not a response: a call that changed the session's definitions (the
    // reset_session that follows some cases) announces it first.
    if (*line == R"({"jsonrpc":"2.0","method":"notifications/resources/list_changed"})") continue;
    if (line->find("\"id\":\"" + std::string(kThenId) + "\"") != std::string::npos) {
      then_responses.push_back(std::move(*line));
      continue;
    }
    responses.push_back(std::move(*line));
  }
  if (!c.then.empty()) {
    if (std::string problem = check_then(then_responses); !problem.empty()) return problem;
  }
  return check(c, responses);
}

void run_all_through_one_process(const std::vector<Case>& cases) {
  Server server;
  int n = 0, failures = 0;
  for (const Case& c : cases) {
    if (c.only == Case::Only::InProcess) continue;
    std::string problem = run_through(server, c, ++n);
    if (!problem.empty()) {
      ADD_FAILURE() << c.name << ": " << problem << "\n  sent " << head(c.body);
      if (!server.alive()) FAIL() << "the server died after " << c.name;
      if (++failures > 50) FAIL() << "giving up after 50 failures";
    }
  }
  EXPECT_TRUE(server.alive());
  EXPECT_GT(n, 0);
}

TEST(HostileBinary, EveryCommittedCaseThroughOneProcess) { run_all_through_one_process(corpus()); }

TEST(HostileBinary, LargeCasesThroughOneProcess) {
  run_all_through_one_process(large_cases(true, mcp::kMaxLineBytes));
}

TEST(HostileBinary, WrongTypeForEveryToolArgument) {
  Server server;
  std::thread writer = server.send(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  writer.join();
  auto list = server.line(std::chrono::steady_clock::now() + 60s);
  ASSERT_TRUE(list);
  std::vector<Case> cases = wrong_type_cases(json::parse(*list)["result"]);
  int n = 0;
  for (const Case& c : cases) EXPECT_EQ(run_through(server, c, ++n), "") << c.name;
}

}  // namespace
