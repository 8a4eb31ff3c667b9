// The HTTP transport's pieces: request heads, the Origin and token checks,
// the session table, the --http options; and the server itself on a real
// 127.0.0.1 socket with a headless session over test tools (no ECL).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/executor.hpp"
#include "core/jsonrpc.hpp"
#include "core/registry.hpp"
#include "mcp/approval.hpp"
#include "mcp/cancellable_call.hpp"
#include "mcp/headless_session.hpp"
#include "mcp/http_request.hpp"
#include "mcp/http_server.hpp"
#include "mcp/http_sessions.hpp"
#include "mcp/options.hpp"
#include "mcp/unique_fd.hpp"

using namespace agentq;
using namespace agentq::mcp;
using namespace std::chrono_literals;

TEST(HttpRequest, ParsesARequestHead) {
  auto request = parse_request_head("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type:  application/json \r\n"
                                    "X-Two: a\r\nx-two: b");
  ASSERT_TRUE(request);
  EXPECT_EQ(request->method, "POST");
  EXPECT_EQ(request->target, "/mcp");
  EXPECT_EQ(request->minor_version, 1);
  EXPECT_EQ(request->header("content-type"), "application/json");
  EXPECT_EQ(request->header("x-two"), "a");
  EXPECT_EQ(request->count("x-two"), 2u);
  EXPECT_FALSE(request->header("origin"));
  // Bare LF line ends are read too.
  EXPECT_TRUE(parse_request_head("GET / HTTP/1.0\nA: b"));
}

TEST(HttpRequest, RefusesMalformedHeads) {
  for (std::string_view head : {"", "GET", "GET /", "GET / HTTP/2.0", "GET / HTTP/1.1 extra", "GET  / HTTP/1.1",
                                "G(T / HTTP/1.1", "GET / HTTP/1.1\r\nno colon", "GET / HTTP/1.1\r\n folded: x",
                                "GET / HTTP/1.1\r\nBad Name: x", "GET / HTTP/1.1\r\nA: b\rc",
                                "GET /\x01 HTTP/1.1", "GET / HTTP/1.1\r\nA: \x7f"})
    EXPECT_FALSE(parse_request_head(head)) << head;
  EXPECT_FALSE(parse_request_head(std::string_view("GET / HTTP/1.1\r\nA: b\0c", 23)));
}

TEST(HttpRequest, FindsTheEndOfTheHead) {
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\r\n\r\nbody"), 24u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\n\nbody"), 16u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\r\n"), std::string::npos);
  EXPECT_EQ(find_head_end(""), std::string::npos);
}

TEST(HttpRequest, ContentLength) {
  auto length = [](std::string_view head) { return content_length(*parse_request_head(head)); };
  EXPECT_FALSE(length("POST / HTTP/1.1"));
  EXPECT_EQ(length("POST / HTTP/1.1\r\nContent-Length: 12"), 12);
  EXPECT_EQ(length("POST / HTTP/1.1\r\nContent-Length: 12\r\ncontent-length: 12"), 12);
  EXPECT_EQ(length("POST / HTTP/1.1\r\nContent-Length: 12\r\ncontent-length: 13"), -1);
  EXPECT_EQ(length("POST / HTTP/1.1\r\nContent-Length: -1"), -1);
  EXPECT_EQ(length("POST / HTTP/1.1\r\nContent-Length: 1e3"), -1);
  EXPECT_EQ(length("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999"), -1);
  EXPECT_EQ(length("POST / HTTP/1.1\r\nContent-Length:"), -1);
}

TEST(HttpRequest, OnlyThisServersOwnOriginsAreAllowed) {
  EXPECT_TRUE(origin_allowed("http://127.0.0.1:8123", 8123));
  EXPECT_TRUE(origin_allowed("http://localhost:8123", 8123));
  EXPECT_TRUE(origin_allowed("HTTP://LOCALHOST:8123", 8123));
  EXPECT_TRUE(origin_allowed("http://[::1]:8123", 8123));
  EXPECT_FALSE(origin_allowed("http://127.0.0.1:8124", 8123));
  EXPECT_FALSE(origin_allowed("http://127.0.0.1", 8123));
  EXPECT_FALSE(origin_allowed("https://127.0.0.1:8123", 8123));
  EXPECT_FALSE(origin_allowed("http://evil.example", 8123));
  EXPECT_FALSE(origin_allowed("http://127.0.0.1:8123.evil.example", 8123));
  EXPECT_FALSE(origin_allowed("null", 8123));
  EXPECT_FALSE(origin_allowed("", 8123));
}

TEST(HttpRequest, BearerToken) {
  const std::string token = "abc123";
  EXPECT_TRUE(bearer_matches("Bearer abc123", token));
  EXPECT_TRUE(bearer_matches("bearer  abc123 ", token));
  EXPECT_FALSE(bearer_matches("Bearer abc124", token));
  EXPECT_FALSE(bearer_matches("Bearer abc1234", token));
  EXPECT_FALSE(bearer_matches("Bearer abc12", token));
  EXPECT_FALSE(bearer_matches("Basic abc123", token));
  EXPECT_FALSE(bearer_matches("abc123", token));
  EXPECT_FALSE(bearer_matches("Bearer ", token));
  EXPECT_FALSE(bearer_matches("Bearer ", ""));  // no token set: nothing passes
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_FALSE(constant_time_equal("a", "b"));
}

TEST(HttpRequest, RandomHex) {
  std::string a = random_hex(32), b = random_hex(32);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

namespace {

class CountingSession final : public McpSession {
 public:
  std::optional<std::string> post(std::string_view, nlohmann::json, Link&) override { return std::nullopt; }
  void end() override { ++ended; }
  int ended = 0;
};

}  // namespace

TEST(SessionTable, AddsFindsRemovesAndMakesRoomByEndingTheOneUsedLongestAgo) {
  SessionTable table(2);
  std::shared_ptr<McpSession> evicted;
  auto one = std::make_shared<CountingSession>();
  auto two = std::make_shared<CountingSession>();
  std::string a = table.add(one, evicted);
  std::string b = table.add(two, evicted);
  EXPECT_EQ(evicted, nullptr);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(table.find(a), one);  // A used after B: B is the oldest now
  std::string c = table.add(std::make_shared<CountingSession>(), evicted);
  EXPECT_EQ(evicted, two);
  EXPECT_EQ(table.find(b), nullptr);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.find("nope"), nullptr);
  EXPECT_EQ(table.remove(a), one);
  EXPECT_EQ(table.find(a), nullptr);
  EXPECT_EQ(table.remove(a), nullptr);
  evicted.reset();
  EXPECT_FALSE(table.add(std::make_shared<CountingSession>(), evicted).empty());
  EXPECT_EQ(evicted, nullptr);
  EXPECT_EQ(table.take_all().size(), 2u);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find(c), nullptr);  // taken out with the rest
}

TEST(HttpOptions, PortAndTokenFile) {
  auto parse = [](std::vector<std::string> args) { return parse_command_line(args); };
  EXPECT_FALSE(parse({}).options.http_port);
  EXPECT_EQ(parse({"--http", "0"}).options.http_port, 0);
  EXPECT_EQ(parse({"--http=8123"}).options.http_port, 8123);
  for (auto args : std::vector<std::vector<std::string>>{
           {"--http"}, {"--http", "x"}, {"--http", "-1"}, {"--http", "65536"}, {"--http", ""}, {"--http-token-file", "f"}})
    EXPECT_EQ(parse(args).action, CommandLine::Action::Fail) << args[0];
  auto both = parse({"--emacs", "/tmp/s", "--http", "0", "--http-token-file", "/tmp/t"});
  EXPECT_TRUE(both.options.emacs);
  EXPECT_EQ(both.options.http_token_file, "/tmp/t");
  EXPECT_TRUE(default_http_token_file().ends_with("/sly-agent-q/http-token"));
}

// ------------------------------------------------------------ the server on a socket

namespace {

class HttpOverSocket : public ::testing::Test {
 protected:
  HttpOverSocket() : executor(registry), server(executor) {
    Tool progress;
    progress.name = "progress";
    progress.description = "Sends two progress notifications, then answers.";
    progress.safety_level = SafetyLevel::Safe;
    progress.handler = [](const json&, CallContext& context) {
      auto* call = dynamic_cast<McpCallContext*>(&context);
      for (int i = 1; i <= 2 && call; ++i)
        call->notify(json{{"jsonrpc", "2.0"}, {"method", "notifications/progress"},
                          {"params", {{"progressToken", "t"}, {"progress", i}}}}.dump());
      return ToolOutput{true, "done"};
    };
    registry.register_tool(progress);
    Tool wait;
    wait.name = "wait";
    wait.description = "Runs until it is cancelled (at most 10 s), then says so.";
    wait.safety_level = SafetyLevel::Safe;
    wait.handler = [this](const json&, CallContext& context) {
      waiting = true;
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!context.cancelled() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
      waiting = false;
      return ToolOutput{false, context.cancelled() ? "interrupted" : "never cancelled"};
    };
    registry.register_tool(wait);
    HttpServerOptions options;
    options.token = "secret";
    options.read_timeout = 60s;
    options.max_head_bytes = 1024;
    options.max_body_bytes = 4096;
    options.max_connections = 4;
    ExecutionOptions execution;
    execution.approve = headless_approval(false);
    http = std::make_unique<HttpServer>(options, [this, execution] {
      return std::make_unique<HeadlessSession>(server, execution, nullptr, false);
    });
    http->start();
  }
  ~HttpOverSocket() override { http->stop(); }

  UniqueFd open() {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(http->port()));
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    return fd;
  }
  static void send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  // Everything until the server closes the connection.
  static std::string read_to_end(int fd) {
    std::string out;
    char buffer[4096];
    for (;;) {
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) return out;
      out.append(buffer, static_cast<std::size_t>(n));
    }
  }
  std::string exchange(const std::string& bytes) {
    UniqueFd fd = open();
    send_all(fd.get(), bytes);
    return read_to_end(fd.get());
  }
  static std::string post(const std::string& body, const std::string& extra = {}) {
    return "POST /mcp HTTP/1.1\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\nConnection: close\r\n" + extra +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  std::string session() {
    std::string answer = exchange(post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})"));
    auto at = answer.find("Mcp-Session-Id: ");
    EXPECT_NE(at, std::string::npos) << answer;
    return answer.substr(at + 16, 32);
  }

  std::atomic<bool> waiting{false};  // the wait tool runs
  Registry registry;
  Executor executor;
  McpServer server;
  std::unique_ptr<HttpServer> http;
};

}  // namespace

TEST_F(HttpOverSocket, ACallWithAProgressTokenStreamsItsNotificationsThenItsResponse) {
  std::string id = session();
  std::string answer = exchange(post(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"t"}}})",
      "Mcp-Session-Id: " + id + "\r\n"));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_NE(answer.find("Content-Type: text/event-stream\r\n"), std::string::npos) << answer;
  auto first = answer.find(R"("progress":1)");
  auto second = answer.find(R"("progress":2)");
  auto response = answer.find(R"("id":2)");
  ASSERT_NE(first, std::string::npos) << answer;
  ASSERT_NE(second, std::string::npos) << answer;
  ASSERT_NE(response, std::string::npos) << answer;
  EXPECT_LT(first, second);
  EXPECT_LT(second, response);
  EXPECT_TRUE(answer.ends_with("0\r\n\r\n")) << answer;  // the chunked stream's end
  // Without a progress token: plain JSON, the notifications dropped.
  std::string plain = exchange(post(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress"}})",
                                    "Mcp-Session-Id: " + id + "\r\n"));
  EXPECT_NE(plain.find("Content-Type: application/json\r\n"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("notifications/progress"), std::string::npos) << plain;
}

// The spec: a cancelled request gets no response.  Its POST ends without
// one: an SSE stream closes empty, a plain one is 202 Accepted.
TEST_F(HttpOverSocket, ACancelledCallIsNotAnsweredOnItsStreamOrItsPost) {
  std::string id = session();
  const std::string header = "Mcp-Session-Id: " + id + "\r\n";
  for (const std::string meta : {R"(,"_meta":{"progressToken":"t"})", ""}) {
    std::string answer;
    std::thread call([&] {
      answer = exchange(post(R"({"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait")" + meta + "}}", header));
    });
    for (int tries = 0; tries < 1000 && !waiting; ++tries) std::this_thread::sleep_for(5ms);
    ASSERT_TRUE(waiting) << meta;
    std::string cancelled = exchange(
        post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"test"}})", header));
    EXPECT_TRUE(cancelled.starts_with("HTTP/1.1 202")) << cancelled;
    call.join();
    EXPECT_EQ(answer.find("interrupted"), std::string::npos) << answer;
    EXPECT_EQ(answer.find(R"("id":"w")"), std::string::npos) << answer;
    if (meta.empty()) {
      EXPECT_TRUE(answer.starts_with("HTTP/1.1 202")) << answer;
    } else {
      EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
      EXPECT_NE(answer.find("Content-Type: text/event-stream\r\n"), std::string::npos) << answer;
      EXPECT_TRUE(answer.ends_with("\r\n\r\n0\r\n\r\n")) << answer;  // no event, the stream's end
    }
  }
  // The session goes on.
  std::string again = exchange(post(R"({"jsonrpc":"2.0","id":3,"method":"ping"})", header));
  EXPECT_TRUE(again.starts_with("HTTP/1.1 200 OK")) << again;
}

TEST_F(HttpOverSocket, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::string id = session();
  UniqueFd fd = open();
  std::string ping = R"({"jsonrpc":"2.0","id":7,"method":"ping"})";
  std::string request = "POST /mcp HTTP/1.1\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\n"
                        "Mcp-Session-Id: " + id + "\r\nContent-Length: " + std::to_string(ping.size()) + "\r\n\r\n" + ping;
  send_all(fd.get(), request + request);  // pipelined
  ::shutdown(fd.get(), SHUT_WR);
  std::string answer = read_to_end(fd.get());
  std::size_t count = 0;
  for (auto at = answer.find("HTTP/1.1 200 OK"); at != std::string::npos; at = answer.find("HTTP/1.1 200 OK", at + 1)) ++count;
  EXPECT_EQ(count, 2u) << answer;
}

TEST_F(HttpOverSocket, HostileRequestsGetAnErrorAndTheServerGoesOn) {
  EXPECT_TRUE(exchange("garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
  EXPECT_TRUE(exchange("GET /mcp HTTP/1.1\r\nX: " + std::string(5000, 'a') + "\r\n\r\n").starts_with("HTTP/1.1 431"));
  EXPECT_TRUE(exchange("GET /mcp HTTP/1.1\r\nX: " + std::string(5000, 'a')).starts_with("HTTP/1.1 431"));
  EXPECT_TRUE(exchange(post(std::string(5000, ' '))).starts_with("HTTP/1.1 413"));
  EXPECT_TRUE(exchange("POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").starts_with("HTTP/1.1 411"));
  EXPECT_TRUE(exchange(post("{}", "Origin: http://evil.example\r\n")).starts_with("HTTP/1.1 403"));
  EXPECT_TRUE(exchange("POST /mcp HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}").starts_with("HTTP/1.1 401"));
  EXPECT_TRUE(exchange(post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "Mcp-Session-Id: x\r\n"))
                  .starts_with("HTTP/1.1 404"));
  EXPECT_TRUE(exchange(post("[1]")).starts_with("HTTP/1.1 400"));
  EXPECT_TRUE(exchange(post("\"text\"")).starts_with("HTTP/1.1 400"));
  // More connections than allowed: the extra one gets 503, the others are
  // served once one closes.
  std::vector<UniqueFd> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(open());
    send_all(held.back().get(), "POST /mcp HTTP/1.1\r\nContent-Le");  // half a request, held open
  }
  // The accept loop counts a connection once its thread runs: wait for it
  // by the 503 answer itself (the fifth is refused at once).
  std::string refused;
  for (int tries = 0; tries < 200 && !refused.starts_with("HTTP/1.1 503"); ++tries) {
    refused = exchange("GET /mcp HTTP/1.1\r\nConnection: close\r\n\r\n");
    if (!refused.starts_with("HTTP/1.1 503")) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  held.clear();
  std::string answer;
  for (int tries = 0; tries < 200 && !answer.starts_with("HTTP/1.1 200"); ++tries) {
    answer = exchange(post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})"));
    if (!answer.starts_with("HTTP/1.1 200")) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
}
