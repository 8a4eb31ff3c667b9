// build/sly-agent-q-mcp --http 0, headless, with its real ECL: the Lisp
// worker serves a plain evaluate_lisp POST itself (inline Lisp over HTTP,
// mcp/http_inline.cpp), hands everything else back to the connection's
// thread, and an evaluation that lasts or asks is taken over.  Clients are
// raw keep-alive sockets, so that what the server does with each request
// on one connection is seen.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/child_process.hpp"
#include "common/temp_dir.hpp"
#include "mcp/unique_fd.hpp"

using json = nlohmann::json;
using agentq::fixtures::ChildProcess;
using agentq::fixtures::ChildStderr;
using agentq::fixtures::TempDir;
using agentq::mcp::UniqueFd;
using namespace std::chrono_literals;

namespace {

struct HttpAnswer {
  int status = 0;
  std::string head;
  std::string body;
  json message() const { return json::parse(body, nullptr, false); }
  std::string text() const {
    json m = message();
    if (!m.is_object() || !m.contains("result")) return "<no result: " + body + ">";
    return m["result"]["content"][0]["text"].get<std::string>();
  }
};

// One keep-alive connection to the server.
class Connection {
 public:
  Connection(int port, std::string token) : token_(std::move(token)) {
    fd_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    EXPECT_EQ(::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  }

  std::string request(const std::string& body, const std::string& extra = {}) const {
    return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token_ +
           "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
           (session.empty() ? "" : "Mcp-Session-Id: " + session + "\r\n") + extra +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  void send_raw(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      ASSERT_GT(n, 0);
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  void send(const json& message, const std::string& extra = {}) { send_raw(request(message.dump(), extra)); }

  // The next answer (Content-Length bodies only); status 0 when the
  // connection closed or nothing came within TIMEOUT.
  HttpAnswer answer(std::chrono::milliseconds timeout = 20000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    HttpAnswer out;
    std::size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
      if (!more(deadline)) return out;
    out.head = buffer_.substr(0, head_end + 4);
    std::smatch match;
    if (!std::regex_search(out.head, match, std::regex("^HTTP/1.1 (\\d+)"))) return out;
    std::size_t length = 0;
    if (std::regex_search(out.head, match, std::regex("Content-Length: (\\d+)", std::regex::icase)))
      length = std::stoul(match[1]);
    while (buffer_.size() < head_end + 4 + length)
      if (!more(deadline)) return out;
    out.status = std::stoi(out.head.substr(9, 3));
    out.body = buffer_.substr(head_end + 4, length);
    buffer_.erase(0, head_end + 4 + length);
    return out;
  }
  HttpAnswer call(const json& message, const std::string& extra = {}) {
    send(message, extra);
    return answer();
  }
  // True when the server closed the connection within TIMEOUT.
  bool closed(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (more(deadline)) {
    }
    return closed_;
  }
  void shut() { fd_.reset(); }

  std::string session;

 private:
  bool more(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd ready{fd_.get(), POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[16384];
    ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  UniqueFd fd_;
  std::string token_;
  std::string buffer_;
  bool closed_ = false;
};

json request(const json& id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json eval(const json& id, const std::string& code, json more = json::object()) {
  json arguments = {{"code", code}};
  arguments.update(more);
  return request(id, "tools/call", {{"name", "evaluate_lisp"}, {"arguments", arguments}});
}

json cancel(const json& id) {
  return {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", id}}}};
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// True when the debug log says the worker itself read the call with CODE.
bool read_on_worker(const std::string& log, const std::string& code) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"code\":\"" + code + "\"") != std::string::npos && line.ends_with("(on the worker)")) return true;
  return false;
}

// The server, headless over HTTP, with its log at debug.
class HttpInline : public ::testing::Test {
 protected:
  void start(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--http", "0", "--http-token-file", dir.path + "/token", "--log-level", "debug"};
    args.insert(args.end(), more.begin(), more.end());
    server = std::make_unique<ChildProcess>(AGENTQ_MCP_BINARY, args, ChildStderr::LogFile);
    const std::regex url("http://127\\.0\\.0\\.1:(\\d+)/mcp");
    for (int tries = 0; tries < 400 && port == 0; ++tries) {
      std::smatch match;
      std::string log = server->log();
      if (std::regex_search(log, match, url)) port = std::stoi(match[1]);
      else std::this_thread::sleep_for(25ms);
    }
    ASSERT_NE(port, 0) << server->log();
    std::ifstream file(dir.path + "/token");
    std::getline(file, token);
    ASSERT_FALSE(token.empty());
  }
  ~HttpInline() override {
    if (server) {
      server->close_stdin();
      EXPECT_EQ(server->wait_exit(20000ms), 0) << server->log();
    }
  }

  // A connection with its own session, initialized.
  std::unique_ptr<Connection> client() {
    auto connection = std::make_unique<Connection>(port, token);
    HttpAnswer init = connection->call(request(0, "initialize",
                                               {{"protocolVersion", "2025-11-25"},
                                                {"capabilities", json::object()},
                                                {"clientInfo", {{"name", "test"}, {"version", "1"}}}}));
    std::smatch match;
    EXPECT_TRUE(std::regex_search(init.head, match, std::regex("Mcp-Session-Id: ([0-9a-f]+)"))) << init.head;
    connection->session = match[1];
    return connection;
  }

  std::string log() const { return server->log(); }

  TempDir dir{"agentq-http-inline"};
  std::unique_ptr<ChildProcess> server;
  int port = 0;
  std::string token;
};

}  // namespace

TEST_F(HttpInline, PlainCallsRunOnTheWorkerAndOtherRequestsAreTheConnectionsThreads) {
  start();
  auto c = client();
  EXPECT_EQ(c->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  EXPECT_EQ(c->call(eval(2, "(+ 2 3)")).text(), "=> 5");
  HttpAnswer ping = c->call(request(3, "ping"));
  EXPECT_EQ(ping.status, 200);
  EXPECT_EQ(ping.message()["id"], 3);
  EXPECT_TRUE(c->call(request(4, "tools/list")).message()["result"]["tools"].is_array());
  // With a progressToken: an SSE stream, its thread's.
  c->send(request(5, "tools/call",
                  {{"name", "evaluate_lisp"}, {"arguments", {{"code", "(* 2 3)"}}}, {"_meta", {{"progressToken", 7}}}}),
          "Connection: close\r\n");
  HttpAnswer stream = c->answer();  // its head; the chunks are left
  EXPECT_EQ(stream.status, 200);
  EXPECT_NE(stream.head.find("text/event-stream"), std::string::npos) << stream.head;
  EXPECT_TRUE(c->closed(20000ms));
  auto again = client();
  EXPECT_EQ(again->call(eval(6, "(+ 3 4)")).text(), "=> 7");
  EXPECT_EQ(again->call(eval(7, "(values 1 2)")).text(), "=> 1\n=> 2");
  const std::string text = log();
  EXPECT_TRUE(read_on_worker(text, "(+ 1 2)")) << text;
  EXPECT_TRUE(read_on_worker(text, "(+ 2 3)")) << text;
  EXPECT_TRUE(read_on_worker(text, "(values 1 2)")) << text;
  EXPECT_FALSE(read_on_worker(text, "(* 2 3)")) << text;
}

TEST_F(HttpInline, OffWithNoInlineLispAndTheAnswersAreTheSame) {
  start({"--no-inline-lisp"});
  auto c = client();
  EXPECT_EQ(c->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  EXPECT_EQ(c->call(eval(2, "(values 1 2)")).text(), "=> 1\n=> 2");
  EXPECT_EQ(log().find("(on the worker)"), std::string::npos) << log();
}

// Each check of the connection's thread holds for what the worker reads:
// the worker hands back whatever fails one, and the thread refuses it.
TEST_F(HttpInline, ARefusedRequestOnAParkedConnectionIsRefusedAsEver) {
  start();
  auto c = client();
  EXPECT_EQ(c->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  const std::string body = eval(2, "(+ 1 1)").dump();
  std::string bad_token = c->request(body);
  bad_token.replace(bad_token.find("Bearer ") + 7, 4, "xxxx");
  c->send_raw(bad_token);
  EXPECT_EQ(c->answer().status, 401);
  auto d = client();
  EXPECT_EQ(d->call(eval(3, "(+ 1 2)")).text(), "=> 3");
  d->send(eval(4, "(+ 1 1)"), "Origin: http://evil.example\r\n");
  EXPECT_EQ(d->answer().status, 403);
  auto e = client();
  EXPECT_EQ(e->call(eval(5, "(+ 1 2)")).text(), "=> 3");
  e->session = "00000000000000000000000000000000";
  EXPECT_EQ(e->call(eval(6, "(+ 1 1)")).status, 404);
  e->send(eval(7, "(+ 1 1)"), "MCP-Protocol-Version: 1999-01-01\r\n");
  EXPECT_EQ(e->answer().status, 400);
}

// Pipelined requests in one write, mixed: answered in order.
TEST_F(HttpInline, PipelinedRequestsAreAnsweredInOrder) {
  start();
  auto c = client();
  EXPECT_EQ(c->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  c->send_raw(c->request(eval(2, "(+ 1 1)").dump()) + c->request(eval(3, "(+ 1 2)").dump()) +
              c->request(request(4, "ping").dump()) + c->request(eval(5, "(+ 2 2)").dump()));
  EXPECT_EQ(c->answer().text(), "=> 2");
  EXPECT_EQ(c->answer().text(), "=> 3");
  EXPECT_EQ(c->answer().message()["id"], 4);
  EXPECT_EQ(c->answer().text(), "=> 4");
}

// A request that comes in pieces: the worker hands the connection back,
// and its thread reads the rest.
TEST_F(HttpInline, ARequestInPiecesIsAnsweredWhole) {
  start();
  auto c = client();
  EXPECT_EQ(c->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  const std::string bytes = c->request(eval(2, "(concatenate 'string \"ab\" \"cd\")").dump());
  for (std::size_t at = 0; at < bytes.size(); at += 13) {
    c->send_raw(bytes.substr(at, 13));
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(c->answer().text(), "=> \"abcd\"");
  EXPECT_EQ(c->call(eval(3, "(+ 1 1)")).text(), "=> 2");
}

// A call that lasts is taken over: meanwhile another client is answered,
// and a cancellation from it interrupts the call, which is not answered
// (202, no body).
TEST_F(HttpInline, ALastingCallIsTakenOverAndTheOtherClientsAreServedMeanwhile) {
  start();
  auto a = client();
  auto b = client();
  EXPECT_EQ(b->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  EXPECT_EQ(a->call(eval(2, "(+ 1 2)")).text(), "=> 3");
  // Cancelled from another connection of the same session while taken
  // over; meanwhile the other client is served.
  a->send(eval("loop", "(loop)"));
  std::this_thread::sleep_for(50ms);  // taken over at 2 ms
  EXPECT_EQ(b->call(request(3, "ping")).message()["id"], 3);
  auto a2 = std::make_unique<Connection>(port, token);
  a2->session = a->session;
  b->send(eval(5, "(+ 3 3)"));  // waits for the loop
  EXPECT_EQ(a2->call(cancel("loop")).status, 202);
  HttpAnswer cancelled = a->answer();
  EXPECT_EQ(cancelled.status, 202) << cancelled.head << cancelled.body;
  EXPECT_TRUE(cancelled.body.empty()) << cancelled.body;
  EXPECT_EQ(b->answer().text(), "=> 6");
  // One that lasts and ends.
  EXPECT_EQ(a->call(eval(6, "(progn (sleep 0.1) :slept)")).text(), "=> :SLEPT");
  EXPECT_EQ(a->call(eval(7, "(+ 2 2)")).text(), "=> 4");
  const std::string text = log();
  EXPECT_TRUE(read_on_worker(text, "(loop)")) << text;
  EXPECT_GE(count_of(text, "its owner takes it over"), 1u) << text;
}

// Two clients calling in turns, each on its own connection and session.
TEST_F(HttpInline, TwoClientsInTurns) {
  start();
  auto a = client();
  auto b = client();
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(a->call(eval(i, "(+ 1 " + std::to_string(i) + ")")).text(), "=> " + std::to_string(1 + i));
    EXPECT_EQ(b->call(eval(i, "(+ 2 " + std::to_string(i) + ")")).text(), "=> " + std::to_string(2 + i));
  }
  EXPECT_GE(count_of(log(), "(on the worker)"), 50u);
}

// A limit shorter than the moment of the take-over still stops the loop.
TEST_F(HttpInline, TimeLimitShorterThanTheTakeOverMomentStillStopsTheLoop) {
  start();
  auto c = client();
  for (int id : {1, 2, 3}) {
    HttpAnswer answer = c->call(eval(id, "(loop)", {{"timeout", 0.001}}));
    EXPECT_EQ(answer.text().rfind("[ERROR] TIMEOUT", 0), 0u) << answer.body;
  }
  EXPECT_EQ(c->call(eval(4, "(+ 1 1)")).text(), "=> 2");
  EXPECT_TRUE(read_on_worker(log(), "(loop)")) << log();  // a float: read whole, run inline
}

// Code that touches the world, run by the worker, asks its owner: the
// watcher takes it over to ask, and headless nobody can approve.  However
// the call is spelled, nothing ran.
TEST_F(HttpInline, WorldTouchingCodeRunInlineStillAsksAndIsRefused) {
  start();
  const std::vector<std::string> attempts = {
      "(with-open-file (s \"" + dir.path + "/a\" :direction :output) (write-line \"x\" s))",
      "(funcall (intern \"RUN-PROGRAM\" \"EXT\") \"/bin/sh\" (list \"-c\" \"touch " + dir.path + "/b\"))",
      "(mp:process-join (mp:process-run-function nil (lambda () (ext:run-program \"/bin/sh\" (list \"-c\" "
      "\"touch " + dir.path + "/c\")))))",
  };
  auto c = client();
  int id = 1;
  for (const std::string& code : attempts) {
    HttpAnswer answer = c->call(eval(id++, code));
    EXPECT_EQ(answer.message()["result"]["isError"], true) << answer.body;
    EXPECT_NE(answer.text().find("nobody to approve it"), std::string::npos) << answer.body;
  }
  EXPECT_EQ(c->call(eval(id, "(+ 1 1)")).text(), "=> 2");
  for (const char* name : {"a", "b", "c"})
    EXPECT_NE(access((dir.path + "/" + name).c_str(), F_OK), 0) << name << " was made: the refusal did not hold";
}

// The client hangs up while its call runs: the call is stopped, and the
// next client is served.
TEST_F(HttpInline, AClientGoneMidCallStopsItsCall) {
  start();
  auto a = client();
  EXPECT_EQ(a->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  a->send(eval(2, "(progn (sleep 0.2) (loop))"));
  std::this_thread::sleep_for(50ms);
  a->shut();
  auto b = client();
  HttpAnswer answer = b->call(eval(3, "(+ 1 1)"));
  EXPECT_EQ(answer.text(), "=> 2");
  EXPECT_EQ(b->call(eval(4, "(+ 2 2)")).text(), "=> 4");
}

// An error held for the debugger (debug: true) keeps its thread, and a
// fresh worker serves the next calls, on this connection and on others
// that were parked, once the held call has been taken over (not before:
// the take-over is that call's); the restart chosen later resumes it
// without answering twice.
TEST_F(HttpInline, AHeldErrorsCallIsTakenOverBeforeTheFreshWorkerServesTheOthers) {
  start();
  auto a = client();
  auto b = client();
  EXPECT_EQ(a->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  EXPECT_EQ(b->call(eval(2, "(+ 1 2)")).text(), "=> 3");
  for (int round = 0; round < 2; ++round) {
    const int base = 100 * round;
    // B's request comes at once, while A's error is being held.
    a->send(eval(base + 1, "(restart-case (error \"held\") (use-it () :report \"Use it\" 1))", {{"debug", true}}));
    b->send(eval(base + 2, "(+ 2 2)"));
    HttpAnswer held = a->answer();
    ASSERT_EQ(held.message()["id"], base + 1) << held.body;
    const json condition = held.message()["result"]["structuredContent"]["error"]["condition_id"];
    ASSERT_TRUE(condition.is_number()) << held.body;
    EXPECT_EQ(b->answer().text(), "=> 4");
    for (int id = base + 3; id < base + 6; ++id) EXPECT_EQ(b->call(eval(id, "(* 3 3)")).text(), "=> 9");
    HttpAnswer resumed = a->call(request(
        base + 6, "tools/call", {{"name", "invoke_restart"}, {"arguments", {{"condition_id", condition}, {"restart", "0"}}}}));
    EXPECT_EQ(resumed.text(), "=> 1") << resumed.body;
    for (int id = base + 7; id < base + 9; ++id) EXPECT_EQ(a->call(eval(id, "(+ 5 5)")).text(), "=> 10");
  }
  EXPECT_TRUE(read_on_worker(log(), "(+ 5 5)")) << log();
}

// An evaluation that will not unwind: taken over, abandoned after its
// grace, and a fresh worker serves the next calls.
TEST_F(HttpInline, AnEvaluationThatWillNotUnwindIsAbandonedAndAFreshWorkerServesOn) {
  start();
  auto c = client();
  EXPECT_EQ(c->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  HttpAnswer stuck = c->call(eval(2, "(mp:without-interrupts (loop))", {{"timeout", 0.2}}));
  EXPECT_NE(stuck.text().find("abandoned"), std::string::npos) << stuck.body;
  for (int id : {3, 4, 5, 6}) {
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(c->call(eval(id, "(+ 20 1)")).text(), "=> 21");
  }
  EXPECT_TRUE(read_on_worker(log(), "(+ 20 1)")) << log();
}

// What the worker reads whole (not the fast reader's shape) still goes
// through the envelope's checks: a call without "jsonrpc":"2.0" is an
// Invalid Request, as from the connection's thread, and not evaluated.
TEST_F(HttpInline, AMessageWithoutTheJsonRpcVersionIsRefusedNotEvaluated) {
  start();
  auto c = client();
  EXPECT_EQ(c->call(eval(1, "(+ 1 2)")).text(), "=> 3");
  json bad = eval(2, "(defvar cl-user::*agentq-ran* t)");
  bad.erase("jsonrpc");
  HttpAnswer refused = c->call(bad);
  EXPECT_EQ(refused.message()["error"]["code"], -32600) << refused.body;
  EXPECT_EQ(c->call(eval(3, "(boundp 'cl-user::*agentq-ran*)")).text(), "=> NIL");
}
