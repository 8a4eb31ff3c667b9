// build/sly-agent-q-mcp driven through its stdin and stdout with raw lines:
// malformed input, stdout kept for the protocol, exits intercepted,
// cancellation, end of input.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/child_process.hpp"
#include "common/flood_writer.hpp"
#include "core/jsonrpc.hpp"
#include "mcp/unique_fd.hpp"

using json = nlohmann::json;
using agentq::mcp::UniqueFd;
using agentq::fixtures::ChildProcess;
using agentq::fixtures::ChildStderr;
using namespace std::chrono_literals;

namespace {

// One sly-agent-q-mcp process: its stdin and stdout are pipes, its stderr
// a file.
class McpProcess {
 public:
  explicit McpProcess(std::vector<std::string> args = {})
      : process_(AGENTQ_MCP_BINARY, std::move(args), ChildStderr::LogFile) {
    process_.keep_lines();
  }

  void send_raw(std::string_view bytes) { ASSERT_TRUE(process_.write_all(bytes)); }
  void send(const std::string& line) { send_raw(line + "\n"); }
  void send(const char* line) { send(std::string(line)); }
  void send(const json& message) { send(message.dump()); }
  void close_stdin() { process_.close_stdin(); }
  long long rss_kb() const { return process_.rss_kb(); }
  ChildProcess& child() { return process_; }

  // The next stdout line, or nullopt after TIMEOUT or at the end.
  std::optional<std::string> line(std::chrono::milliseconds timeout = 20000ms) { return process_.line(timeout); }

  // The next response, parsed (null when none came).
  json response(std::chrono::milliseconds timeout = 20000ms) { return process_.response(timeout); }

  // The exit status after stdin is closed, or -1 when it has not exited in TIMEOUT.
  int wait_exit(std::chrono::milliseconds timeout = 20000ms) { return process_.wait_exit(timeout); }

  std::string log() const { return process_.log(); }

  const std::vector<std::string>& lines() const { return process_.lines(); }

 private:
  ChildProcess process_;
};

json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json eval(int id, const std::string& code) {
  return request(id, "tools/call", {{"name", "evaluate_lisp"}, {"arguments", {{"code", code}}}});
}

std::string text_of(const json& response) {
  if (!response.is_object() || !response.contains("result")) return "<no result: " + response.dump() + ">";
  return response["result"]["content"][0]["text"].get<std::string>();
}

void expect_ping_works(McpProcess& server, int id) {
  server.send(request(id, "ping"));
  json pong = server.response();
  EXPECT_EQ(pong["id"], id) << pong.dump();
  EXPECT_EQ(pong["result"], json::object()) << pong.dump();
}

}  // namespace

TEST(McpBinary, MalformedJsonGetsAParseErrorWithNullIdThenAGoodRequestWorks) {
  McpProcess server;
  server.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":");
  json error = server.response();
  EXPECT_EQ(error["jsonrpc"], "2.0");
  EXPECT_EQ(error["error"]["code"], agentq::jsonrpc_error::kParseError) << error.dump();
  EXPECT_TRUE(error.contains("id") && error["id"].is_null()) << error.dump();
  expect_ping_works(server, 2);
  server.send(eval(3, "(+ 1 2)"));
  EXPECT_EQ(text_of(server.response()), "=> 3");
}

TEST(McpBinary, InvalidUtf8AndHugeLinesGetOneErrorEach) {
  McpProcess server;
  server.send_raw("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}\n");
  json utf8 = server.response();
  EXPECT_EQ(utf8["error"]["code"], agentq::jsonrpc_error::kParseError) << utf8.dump();
  EXPECT_TRUE(utf8["id"].is_null());
  // 17 MiB in one line: over the 16 MiB the server reads.
  std::string huge = R"({"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":")" + std::string(17 << 20, 'a') + "\"}}";
  std::thread writer([&] { server.send(huge); });
  json too_long = server.response();
  writer.join();
  EXPECT_EQ(too_long["error"]["code"], agentq::jsonrpc_error::kParseError) << too_long.dump().substr(0, 300);
  EXPECT_TRUE(too_long["id"].is_null());
  expect_ping_works(server, 3);
  EXPECT_EQ(server.lines().size(), 3u);
}

TEST(McpBinary, StdoutCarriesOnlyProtocolEvenWhenLispWritesToTheProcesssStdout) {
  // The code runs programs and opens a descriptor: an agent's code the
  // headless server runs only with --allow-dangerous.
  McpProcess server({"--allow-dangerous"});
  // ECL's stream on the process's fd 1, a new stream on fd 1, a child
  // process writing to its parent's fd 1 through /proc (>>: the log is a
  // file here), all of which must reach stderr; and what the evaluation's
  // own streams and a child started with :output t write, which the result
  // captures.
  server.send(eval(1, R"((progn
    (write-line "LEAK-ECL-STREAM" ext:+process-standard-output+)
    (finish-output ext:+process-standard-output+)
    (let ((s (ext:make-stream-from-fd 1 :output :element-type (quote character))))
      (write-line "LEAK-NEW-FD-STREAM" s)
      (finish-output s))
    (ext:run-program "/bin/sh" (list "-c" "echo LEAK-CHILD >> /proc/$PPID/fd/1") :output nil :error nil)
    (ext:run-program "/bin/echo" (list "CAPTURED-CHILD") :output t)
    (print 'captured-print)
    :done))"));
  json result = server.response();
  std::string text = text_of(result);
  EXPECT_NE(text.find("=> :DONE"), std::string::npos) << text;
  EXPECT_NE(text.find("CAPTURED-CHILD"), std::string::npos) << text;
  EXPECT_NE(text.find("CAPTURED-PRINT"), std::string::npos) << text;
  expect_ping_works(server, 2);
  server.close_stdin();
  EXPECT_EQ(server.wait_exit(), 0);
  for (const std::string& line : server.lines()) {
    json value = json::parse(line, nullptr, false);
    ASSERT_TRUE(value.is_object()) << line;
    EXPECT_EQ(value["jsonrpc"], "2.0") << line;
    EXPECT_EQ(line.find("LEAK-"), std::string::npos) << line;
  }
  EXPECT_EQ(server.lines().size(), 2u);
  std::string log = server.log();
  for (const char* leak : {"LEAK-ECL-STREAM", "LEAK-NEW-FD-STREAM", "LEAK-CHILD"})
    EXPECT_NE(log.find(leak), std::string::npos) << leak << " did not reach stderr:\n" << log;
}

TEST(McpBinary, ExitingLispIsInterceptedAndTheServerGoesOn) {
  McpProcess server;
  for (int id : {1, 2, 3}) {
    const char* code = id == 1 ? "(ext:quit 3)" : id == 2 ? "(ext:exit 4)" : "(mp:exit-process)";
    server.send(eval(id, code));
    json response = server.response();
    EXPECT_EQ(response["result"]["isError"], true) << response.dump();
    EXPECT_NE(text_of(response).find("EXIT-INTERCEPTED"), std::string::npos) << text_of(response);
  }
  server.send(eval(4, "(error \"boom\")"));
  EXPECT_NE(text_of(server.response()).find("[ERROR] SIMPLE-ERROR"), std::string::npos);
  server.send(eval(5, "(* 6 7)"));
  EXPECT_EQ(text_of(server.response()), "=> 42");
}

// ECL's C code recursing past the stack (COPY-TREE of a list nested a
// million deep) killed the server with SIGSEGV; now an error, each time.
TEST(McpBinary, CStackOverflowInEclsCCodeIsAnErrorAndTheServerGoesOn) {
  McpProcess server;
  server.send(eval(1, "(defparameter *deep* (let ((x nil)) (dotimes (i 1000000 x) (setf x (list x))))) "
                      "(defun kept () 42)"));
  // The definitions changed: the client hears it before the answer.
  EXPECT_EQ(server.response()["method"], "notifications/resources/list_changed");
  EXPECT_EQ(text_of(server.response()), "=> KEPT");
  for (int id : {2, 3}) {
    server.send(eval(id, "(copy-tree *deep*)"));
    json response = server.response();
    EXPECT_EQ(response["result"]["isError"], true) << response.dump();
    EXPECT_EQ(text_of(response).rfind("[ERROR] EXT:STACK-OVERFLOW\nC-STACK overflow", 0), 0u) << text_of(response);
  }
  server.send(eval(4, "(+ 1 2)"));
  EXPECT_EQ(text_of(server.response()), "=> 3");
  server.send(eval(5, "(kept)"));
  EXPECT_EQ(text_of(server.response()), "=> 42");
}

TEST(McpBinary, PingIsAnsweredWhileAnEvaluationRuns) {
  McpProcess server;
  server.send(eval(1, "(progn (sleep 1.5) :slept)"));
  std::this_thread::sleep_for(200ms);
  server.send(request(2, "ping"));
  // The order says it, not a clock (a loaded machine may be slow): the
  // pong comes while the evaluation still sleeps, before its answer.
  json pong = server.response();
  EXPECT_EQ(pong["id"], 2) << "ping waited for the evaluation: " << pong.dump();
  EXPECT_EQ(text_of(server.response()), "=> :SLEPT");
}

TEST(McpBinary, CancelledNotificationInterruptsTheRunningEvaluationWhichIsNotAnswered) {
  McpProcess server;
  server.send(eval(1, "(loop)"));
  std::this_thread::sleep_for(300ms);
  server.send(json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}});
  // The spec: a cancelled request gets no response.  The (loop) was
  // interrupted all the same: the next call is served, not queued behind it
  // (the loop's own limit is 30 s).
  server.send(eval(2, "(+ 1 1)"));
  json next = server.response();
  EXPECT_EQ(next["id"], 2) << "request 1 was answered after its cancellation: " << next.dump();
  EXPECT_EQ(text_of(next), "=> 2");
  EXPECT_FALSE(server.line(300ms));
}

TEST(McpBinary, CancellingAQueuedCallDropsIt) {
  McpProcess server;
  server.send(eval(1, "(progn (sleep 0.5) :first)"));
  server.send(eval(2, "(defparameter *ran* :second)"));
  server.send(json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 2}}}});
  server.send(eval(3, "(boundp '*ran*)"));
  json first = server.response();
  json third = server.response();
  EXPECT_EQ(first["id"], 1);
  EXPECT_EQ(third["id"], 3);
  EXPECT_EQ(text_of(third), "=> NIL");  // request 2 never ran
  EXPECT_FALSE(server.line(300ms));     // and is not answered
}

// A client that floods the server while a call runs: once 256 calls (or
// 64 MB) wait in the queue, the server reads no more and the client's
// writes wait, instead of the server keeping all it is sent; every call is
// answered, in order, when the running one ends.
TEST(McpBinary, AFloodWaitsInTheClientsPipeNotInTheServersMemory) {
  McpProcess server;
  server.send(eval(1, "(+ 1 2)"));
  EXPECT_EQ(text_of(server.response()), "=> 3");
  const long long rss_before = server.rss_kb();
  server.send(eval(2, "(progn (sleep 4) :slept)"));
  // 2,000 calls of 100 KB each (200 MB), each refused when it runs (an
  // unknown argument), so that running them costs little.
  constexpr int kCalls = 2000;
  const std::string padding(100000, 'x');
  agentq::fixtures::FloodWriter flood(server.child(), kCalls, [&](int i) {
    return request(100 + i, "tools/call",
                   {{"name", "evaluate_lisp"}, {"arguments", {{"code", "1"}, {"padding", padding}}}})
               .dump() +
           "\n";
  });
  const int sent = flood.wait_until_stalled();
  const long long grown_kb = server.rss_kb() - rss_before;
  // 256 calls queued, one being read, what the pipe holds.
  EXPECT_LT(sent, 270) << "the server read on while its queue was full";
  EXPECT_GT(sent, 200) << "the server stopped reading well before its limit (256 calls)";
  EXPECT_LT(grown_kb, 96 * 1024) << "the server's resident memory grew this much, kB";
  EXPECT_EQ(text_of(server.response()), "=> :SLEPT");
  for (int i = 0; i < kCalls; ++i) {
    json answer = server.response();
    ASSERT_EQ(answer["id"], 100 + i) << answer.dump().substr(0, 300);
    EXPECT_EQ(answer["result"]["isError"], true) << answer.dump().substr(0, 300);
  }
  flood.join();
  EXPECT_EQ(flood.lines(), kCalls);
  expect_ping_works(server, 3);
}

TEST(McpBinary, EndOfInputAnswersWhatWasReadThenExitsZero) {
  McpProcess server;
  server.send(eval(1, "(progn (sleep 0.3) :one)"));
  server.send(eval(2, ":two"));
  server.close_stdin();
  EXPECT_EQ(text_of(server.response()), "=> :ONE");
  EXPECT_EQ(text_of(server.response()), "=> :TWO");
  EXPECT_EQ(server.wait_exit(), 0);
}

TEST(McpBinary, DangerousToolsAreDeniedUnlessAllowed) {
  const std::string define = R"((agent-q:register-tool agent-q:*agent-q-registry*
    (agent-q:define-tool "agentq_mcp_danger" "Dangerous test tool." nil
      :safety-level :dangerous :handler (lambda (args) (declare (ignore args)) "it ran"))))";
  const json call = request(2, "tools/call", {{"name", "agentq_mcp_danger"}, {"arguments", json::object()}});
  {
    McpProcess server;
    server.send(eval(1, define));
    EXPECT_EQ(server.response()["result"]["isError"], false);
    server.send(call);
    json denied = server.response();
    EXPECT_EQ(denied["result"]["isError"], true) << denied.dump();
    EXPECT_NE(text_of(denied).find("run sly-agent-q-mcp with --allow-dangerous to allow it"), std::string::npos)
        << text_of(denied);
  }
  {
    McpProcess server({"--allow-dangerous"});
    server.send(eval(1, define));
    server.response();
    server.send(call);
    EXPECT_EQ(text_of(server.response()), "it ran");
  }
}

TEST(McpBinary, HelpVersionAndBadArguments) {
  auto run = [](std::vector<std::string> args) {
    McpProcess process(std::move(args));
    std::string out;
    while (auto line = process.line(10000ms)) out += *line + "\n";
    return std::pair{process.wait_exit(), out};
  };
  auto [help_status, help] = run({"--help"});
  EXPECT_EQ(help_status, 0);
  EXPECT_NE(help.find("--allow-dangerous"), std::string::npos);
  auto [version_status, version] = run({"--version"});
  EXPECT_EQ(version_status, 0);
  EXPECT_EQ(version, "sly-agent-q-mcp " + std::string(agentq::kVersion) + "\n");
  EXPECT_EQ(run({"--no-such-option"}).first, 2);
}

// --- Inline Lisp: the idle worker reads stdin itself and runs a plain
// evaluate_lisp call there (mcp/stdio_server.hpp).  The tests above run
// through it too; these are about the hand-overs.

namespace {

json cancel_request(int id) {
  return json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", id}}}};
}

json eval_with(int id, const std::string& code, json more) {
  json arguments = std::move(more);
  arguments["code"] = code;
  return request(id, "tools/call", {{"name", "evaluate_lisp"}, {"arguments", std::move(arguments)}});
}

// True when the debug log says the worker itself read the call with CODE.
bool read_on_worker(const std::string& log, const std::string& code) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"code\":\"" + code + "\"") != std::string::npos && line.ends_with("(on the worker)")) return true;
  return false;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

}  // namespace

TEST(McpInline, PlainCallsRunOnTheWorkerAndOtherMessagesHandTheReadingBack) {
  McpProcess server({"--log-level", "debug"});
  server.send(eval(1, "(+ 1 2)"));
  EXPECT_EQ(text_of(server.response()), "=> 3");
  expect_ping_works(server, 2);  // read by the worker, handed to the reading thread
  server.send(request(3, "tools/list"));
  EXPECT_TRUE(server.response()["result"]["tools"].is_array());
  // With a progressToken: followed by the reading thread, not run inline.
  server.send(request(4, "tools/call",
                      {{"name", "evaluate_lisp"}, {"arguments", {{"code", "(* 2 3)"}}}, {"_meta", {{"progressToken", 7}}}}));
  EXPECT_EQ(text_of(server.response()), "=> 6");
  server.send(eval(5, "(+ 2 3)"));
  EXPECT_EQ(text_of(server.response()), "=> 5");
  server.close_stdin();
  EXPECT_EQ(server.wait_exit(), 0);
  const std::string log = server.log();
  EXPECT_EQ(count_of(log, "(on the worker)"), 2u) << log;  // calls 1 and 5
  EXPECT_TRUE(read_on_worker(log, "(+ 1 2)")) << log;
  EXPECT_TRUE(read_on_worker(log, "(+ 2 3)")) << log;
}

TEST(McpInline, OffWithNoInlineLispAndTheAnswersAreTheSame) {
  McpProcess server({"--log-level", "debug", "--no-inline-lisp"});
  server.send(eval(1, "(+ 1 2)"));
  EXPECT_EQ(text_of(server.response()), "=> 3");
  server.send(eval(2, "(values 1 2)"));
  EXPECT_EQ(text_of(server.response()), "=> 1\n=> 2");
  server.close_stdin();
  EXPECT_EQ(server.wait_exit(), 0);
  EXPECT_EQ(server.log().find("(on the worker)"), std::string::npos) << server.log();
}

// A cancellation sent at once, before the owner has taken the call over:
// read once it has (within its first moment), and the call is interrupted
// and not answered.
TEST(McpInline, CancelSentAtOnceStillInterruptsAndIsNotAnswered) {
  McpProcess server;
  for (int round = 0; round < 5; ++round) {
    const int id = 10 * round + 1;
    server.send(eval(id, "(loop)"));
    server.send(cancel_request(id));
    server.send(eval(id + 1, "(+ 1 1)"));
    json next = server.response();
    EXPECT_EQ(next["id"], id + 1) << "request " << id << " was answered after its cancellation: " << next.dump();
    EXPECT_EQ(text_of(next), "=> 2");
  }
  EXPECT_FALSE(server.line(300ms));
}

// A limit shorter than the moment before the owner takes over: the
// owner's deadline counts from when the evaluation started.
TEST(McpInline, TimeLimitShorterThanTheTakeOverMomentStillStopsTheLoop) {
  McpProcess server({"--log-level", "debug"});
  for (int id : {1, 2, 3}) {
    server.send(eval_with(id, "(loop)", {{"timeout", 0.001}}));
    json answer = server.response();
    EXPECT_EQ(answer["id"], id);
    EXPECT_EQ(text_of(answer).rfind("[ERROR] TIMEOUT", 0), 0u) << text_of(answer);
  }
  server.send(eval(4, "(+ 1 1)"));
  EXPECT_EQ(text_of(server.response()), "=> 2");
  server.close_stdin();
  EXPECT_EQ(server.wait_exit(), 0);
  EXPECT_TRUE(read_on_worker(server.log(), "(loop)")) << server.log();  // a float: read whole, run inline
}

// Code that touches the world asks its owner; run inline, its owner takes
// it over to ask, and headless nobody can approve: refused, however the
// call is spelled (computed, in another thread), and nothing ran.
TEST(McpInline, WorldTouchingCodeRunInlineStillAsksAndIsRefusedHeadless) {
  char dir_template[] = "/tmp/agentq-inline-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::vector<std::string> attempts = {
      "(with-open-file (s \"" + dir + "/a\" :direction :output) (write-line \"x\" s))",
      "(funcall (intern \"RUN-PROGRAM\" \"EXT\") \"/bin/sh\" (list \"-c\" \"touch " + dir + "/b\"))",
      "(mp:process-join (mp:process-run-function nil (lambda () (ext:run-program \"/bin/sh\" (list \"-c\" "
      "\"touch " + dir + "/c\")))))",
  };
  {
    McpProcess server;
    int id = 1;
    for (const std::string& code : attempts) {
      server.send(eval(id, code));
      json answer = server.response();
      EXPECT_EQ(answer["id"], id);
      EXPECT_EQ(answer["result"]["isError"], true) << answer.dump();
      EXPECT_NE(text_of(answer).find("nobody to approve it"), std::string::npos) << text_of(answer);
      ++id;
    }
    server.send(eval(id, "(+ 1 1)"));
    EXPECT_EQ(text_of(server.response()), "=> 2");
  }
  for (const char* name : {"a", "b", "c"})
    EXPECT_NE(access((dir + "/" + name).c_str(), F_OK), 0) << name << " was made: the refusal did not hold";
  {
    McpProcess server({"--allow-dangerous"});
    server.send(eval(1, attempts[1]));
    EXPECT_EQ(server.response()["result"]["isError"], false);
  }
  EXPECT_EQ(access((dir + "/b").c_str(), F_OK), 0) << "--allow-dangerous did not let it run";
  std::system(("rm -rf " + dir).c_str());
}

// An evaluation that will not unwind: its owner takes it over, gives up on
// it after its grace, and a fresh worker reads and runs the next calls.
TEST(McpInline, AnEvaluationThatWillNotUnwindIsAbandonedAndAFreshWorkerReadsOn) {
  McpProcess server({"--log-level", "debug"});
  server.send(eval(1, "(defun kept () 42)"));
  server.response();  // resources/list_changed
  EXPECT_EQ(text_of(server.response()), "=> KEPT");
  server.send(eval_with(2, "(mp:without-interrupts (loop))", {{"timeout", 0.2}}));
  json stuck = server.response(30000ms);
  EXPECT_EQ(stuck["id"], 2);
  EXPECT_NE(text_of(stuck).find("abandoned"), std::string::npos) << text_of(stuck);
  // The reading goes back to the worker once it is idle, between calls:
  // a pause before each (under load the hand-back may come after the next
  // line was read by the server's thread).
  for (int id : {3, 4, 5, 6, 7, 8}) {
    std::this_thread::sleep_for(20ms);
    server.send(eval(id, "(kept)"));
    EXPECT_EQ(text_of(server.response()), "=> 42");
  }
  server.close_stdin();
  EXPECT_EQ(server.wait_exit(), 0);
  // The fresh worker read some of them itself.
  EXPECT_TRUE(read_on_worker(server.log(), "(kept)")) << server.log();
}

// A line that comes in pieces: the worker keeps what came and waits for
// the rest, and answers it whole.
TEST(McpInline, ALineInPiecesIsAnsweredWhole) {
  McpProcess server;
  const std::string line = eval(1, "(concatenate 'string \"ab\" \"cd\")").dump() + "\n";
  for (std::size_t at = 0; at < line.size(); at += 7) {
    server.send_raw(line.substr(at, 7));
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(text_of(server.response()), "=> \"abcd\"");
  server.send(eval(2, "(+ 1 1)"));
  EXPECT_EQ(text_of(server.response()), "=> 2");
}

// An error held (debug: true) in a call run inline: its thread stops being
// the worker and holds it; a fresh worker reads and runs the next calls;
// when the restart is chosen, the held thread finishes its evaluation and
// leaves, without answering again or disturbing the calls since.
TEST(McpInline, AHeldErrorsThreadResumesAndLeavesWithoutDisturbingTheNextCalls) {
  McpProcess server({"--log-level", "debug"});
  for (int round = 0; round < 2; ++round) {
    const int base = 100 * round;
    server.send(eval_with(base + 1, "(restart-case (error \"held\") (use-it () :report \"Use it\" 1))", {{"debug", true}}));
    json held = server.response();
    ASSERT_EQ(held["id"], base + 1) << held.dump();
    const json condition = held["result"]["structuredContent"]["error"]["condition_id"];
    ASSERT_TRUE(condition.is_number()) << held.dump();
    for (int id = base + 2; id < base + 5; ++id) {
      server.send(eval(id, "(+ 1 1)"));
      EXPECT_EQ(text_of(server.response()), "=> 2");
    }
    server.send(request(base + 5, "tools/call",
                        {{"name", "invoke_restart"}, {"arguments", {{"condition_id", condition}, {"restart", "0"}}}}));
    json resumed = server.response();
    EXPECT_EQ(resumed["id"], base + 5) << resumed.dump();
    EXPECT_EQ(text_of(resumed), "=> 1");
    for (int id = base + 6; id < base + 9; ++id) {
      server.send(eval(id, "(* 3 3)"));
      json answer = server.response();
      EXPECT_EQ(answer["id"], id) << answer.dump();
      EXPECT_EQ(text_of(answer), "=> 9");
    }
  }
  EXPECT_FALSE(server.line(300ms));  // nothing answered twice
  server.close_stdin();
  EXPECT_EQ(server.wait_exit(), 0);
  EXPECT_TRUE(read_on_worker(server.log(), "(* 3 3)")) << server.log();
}

// A call that will not unwind, cancelled while its time-out's grace runs
// (so left unwinding, not yet abandoned): the reading is not given back to
// the busy worker, so the next call is read and answered once that job is
// settled; and closing stdin then still ends the process.
TEST(McpInline, AJobLeftUnwindingKeepsTheReadingAndTheNextCallIsAnswered) {
  for (bool next_call : {true, false}) {
    McpProcess server;
    server.send(eval(1, "(+ 1 1)"));
    EXPECT_EQ(text_of(server.response()), "=> 2");
    server.send(eval_with(2, "(mp:without-interrupts (loop))", {{"timeout", 0.2}}));
    std::this_thread::sleep_for(800ms);  // timed out; its grace runs
    server.send(cancel_request(2));
    std::this_thread::sleep_for(300ms);
    if (next_call) {
      expect_ping_works(server, 3);
      server.send(eval(4, "(+ 2 2)"));
      json answer = server.response(30000ms);
      EXPECT_EQ(answer["id"], 4) << answer.dump();
      EXPECT_EQ(text_of(answer), "=> 4");
    }
    server.close_stdin();
    EXPECT_EQ(server.wait_exit(30000ms), 0) << (next_call ? "after the next call" : "with the job unwinding");
  }
}
