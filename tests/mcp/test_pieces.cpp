// The pieces of sly-agent-q-mcp without ECL: reading lines, routing
// messages, the command line, the headless approval, cancellation, the
// stdio server over pipes with tools that wait, and the HTTP connections'
// hang-up watch.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/executor.hpp"
#include "core/jsonrpc.hpp"
#include "core/registry.hpp"
#include "mcp/approval.hpp"
#include "mcp/cancellable_call.hpp"
#include "mcp/hangup_watch.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/line_writer.hpp"
#include "mcp/options.hpp"
#include "core/mcp_route.hpp"
#include "mcp/stdio_server.hpp"
#include "mcp/unique_fd.hpp"

using namespace agentq;
using namespace agentq::mcp;
using namespace std::chrono_literals;

namespace {

struct Pipe {
  UniqueFd read, write;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read.reset(fds[0]);
    write.reset(fds[1]);
  }
};

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    ASSERT_GT(n, 0);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The lines of TEXT as a LineReader with limit LIMIT reads them.
std::vector<Line> read_lines(const std::string& text, std::size_t limit) {
  Pipe pipe;
  std::thread writer([&] {
    write_all(pipe.write.get(), text);
    pipe.write.reset();
  });
  LineReader reader(pipe.read.get(), limit);
  std::vector<Line> lines;
  while (auto line = reader.next()) lines.push_back(std::move(*line));
  writer.join();
  return lines;
}

}  // namespace

// ------------------------------------------------------------ LineReader

TEST(LineReader, SplitsOnNewlinesAndDropsCarriageReturns) {
  auto lines = read_lines("one\r\ntwo\n\nlast without newline", 100);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].text, "one");
  EXPECT_EQ(lines[1].text, "two");
  EXPECT_EQ(lines[2].text, "");
  EXPECT_EQ(lines[3].text, "last without newline");
  for (const Line& line : lines) EXPECT_FALSE(line.too_long);
}

TEST(LineReader, EmptyInputHasNoLines) { EXPECT_TRUE(read_lines("", 100).empty()); }

TEST(LineReader, ALineOverTheLimitIsSkippedAndReported) {
  std::string huge(300000, 'x');  // spans several reads
  auto lines = read_lines("short\n" + huge + "\nafter\n" + std::string(10, 'y') + "\n", 10);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].text, "short");
  EXPECT_TRUE(lines[1].too_long);
  EXPECT_TRUE(lines[1].text.empty());
  EXPECT_EQ(lines[1].bytes, huge.size());
  EXPECT_EQ(lines[2].text, "after");
  EXPECT_FALSE(lines[3].too_long);  // exactly the limit is fine
  EXPECT_EQ(lines[3].text, std::string(10, 'y'));
}

TEST(LineReader, AnUnfinishedHugeLineAtTheEndIsReported) {
  auto lines = read_lines(std::string(100, 'z'), 10);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].too_long);
}

TEST(LineReader, ANonBlockingDescriptorIsWaitedOn) {
  Pipe pipe;
  ::fcntl(pipe.read.get(), F_SETFL, ::fcntl(pipe.read.get(), F_GETFL) | O_NONBLOCK);
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    write_all(pipe.write.get(), "late\n");
    pipe.write.reset();
  });
  LineReader reader(pipe.read.get(), 100);
  auto line = reader.next();
  ASSERT_TRUE(line);
  EXPECT_EQ(line->text, "late");
  EXPECT_FALSE(reader.next());
  writer.join();
}

TEST(LineWriter, LinesFromManyThreadsNeverMix) {
  Pipe pipe;
  LineWriter out(pipe.write.get());
  const std::string a(100000, 'a'), b(100000, 'b');  // longer than a pipe holds
  std::thread reader_thread;
  std::vector<Line> lines;
  reader_thread = std::thread([&] {
    LineReader reader(pipe.read.get(), 1000000);
    while (auto line = reader.next()) lines.push_back(std::move(*line));
  });
  {
    std::vector<std::thread> writers;
    for (int i = 0; i < 4; ++i)
      writers.emplace_back([&, i] {
        for (int n = 0; n < 10; ++n) EXPECT_TRUE(out.write_line(i % 2 ? a : b));
      });
    for (auto& t : writers) t.join();
  }
  pipe.write.reset();
  reader_thread.join();
  ASSERT_EQ(lines.size(), 40u);
  for (const Line& line : lines) EXPECT_TRUE(line.text == a || line.text == b);
}

TEST(LineWriter, AGoneReaderIsAFailureNotADeath) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &set, &old);
  {
    Pipe pipe;
    pipe.read.reset();
    LineWriter out(pipe.write.get());
    EXPECT_FALSE(out.write_line("nobody reads this"));
    EXPECT_TRUE(out.broken());
    EXPECT_FALSE(out.write_line("nor this"));
  }
  const timespec now{};
  while (sigtimedwait(&set, nullptr, &now) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// ------------------------------------------------------------ route_message

TEST(Route, ToolsCallRequestsAndBatchesAreQueued) {
  Route call = route_message(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}})");
  EXPECT_EQ(call.kind, Route::Kind::Queue);
  EXPECT_EQ(call.id, 7);
  Route named = route_message(R"({"jsonrpc":"2.0","id":"a","method":"tools/call"})");
  EXPECT_EQ(named.kind, Route::Kind::Queue);
  EXPECT_EQ(named.id, "a");
  Route batch = route_message(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  EXPECT_EQ(batch.kind, Route::Kind::Queue);
  EXPECT_TRUE(batch.id.is_null());
}

TEST(Route, QuickAndMalformedMessagesAreAnsweredAtOnce) {
  for (const char* text : {R"({"jsonrpc":"2.0","id":1,"method":"ping"})",
                           R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})",
                           R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})",
                           R"({"jsonrpc":"2.0","method":"tools/call","params":{}})",  // a notification
                           R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                           R"({"jsonrpc":"2.0","method":"notifications/cancelled"})",
                           R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}})",
                           "{not json", "\"\xff\"", "42", ""}) {
    EXPECT_EQ(route_message(text).kind, Route::Kind::Answer) << text;
  }
  EXPECT_EQ(route_message(std::string(1000, '[') + std::string(1000, ']')).kind, Route::Kind::Answer);
}

TEST(Route, CancelledNotificationsNameTheirRequest) {
  Route number = route_message(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})");
  EXPECT_EQ(number.kind, Route::Kind::Cancel);
  EXPECT_EQ(number.request_id, 3);
  Route text = route_message(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x","reason":"user"}})");
  EXPECT_EQ(text.kind, Route::Kind::Cancel);
  EXPECT_EQ(text.request_id, "x");
}

TEST(Route, PlainEvaluationsAreReadByEitherReader) {
  // The fast reader's shape: only the id and the arguments are built.
  std::optional<PlainEvaluation> fast = read_plain_evaluation(
      R"j({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}})j");
  ASSERT_TRUE(fast);
  EXPECT_TRUE(fast->simple);
  EXPECT_EQ(fast->id, 4);
  EXPECT_EQ(fast->message["code"], "(+ 1 2)");
  // What the fast reader leaves (a \u escape, a fraction): parsed whole,
  // the whole message kept (the dispatcher then checks its envelope).
  std::optional<PlainEvaluation> whole = read_plain_evaluation(
      R"({"params":{"name":"evaluate_lisp","arguments":{"code":"\u0031"}},"method":"tools/call","id":"k","jsonrpc":"2.0","x":[1.5,{}]})");
  ASSERT_TRUE(whole);
  EXPECT_FALSE(whole->simple);
  EXPECT_EQ(whole->id, "k");
  EXPECT_EQ(whole->message["method"], "tools/call");
  EXPECT_EQ(whole->message["params"]["arguments"]["code"], "1");
  // A message without "jsonrpc" is still read (the dispatcher refuses it).
  std::optional<PlainEvaluation> bare =
      read_plain_evaluation(R"({"id":5,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{}}})");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->id, 5);
}

TEST(Route, OtherMessagesAreNotPlainEvaluations) {
  for (const char* text : {
           R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_symbol","arguments":{}}})",
           R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{},"_meta":{"progressToken":"p"}}})",
           R"({"_meta":{"progressToken":2},"name":"evaluate_lisp"})",
           R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"evaluate_lisp","arguments":{}}})",  // no id
           R"({"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"evaluate_lisp"}})",
           R"({"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{"name":"evaluate_lisp"}})",
           R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":"evaluate_lisp"})",
           R"([{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{}}}])",
           R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "{not json", "\"\xff\"", ""}) {
    EXPECT_FALSE(read_plain_evaluation(text)) << text;
  }
  EXPECT_FALSE(read_plain_evaluation(std::string(100000, '[') + std::string(100000, ']')));
}

// ------------------------------------------------------------ command line

TEST(CommandLine, Defaults) {
  CommandLine command = parse_command_line({});
  EXPECT_EQ(command.action, CommandLine::Action::Serve);
  EXPECT_FALSE(command.options.allow_dangerous);
  EXPECT_TRUE(command.options.roots.empty());
  EXPECT_EQ(command.options.log_level, LogLevel::Warn);
}

TEST(CommandLine, EveryOption) {
  std::vector<std::string> args = {"--allow-dangerous", "--root", "/tmp", "--root=/", "--log-level", "debug"};
  CommandLine command = parse_command_line(args);
  ASSERT_EQ(command.action, CommandLine::Action::Serve) << command.error;
  EXPECT_TRUE(command.options.allow_dangerous);
  EXPECT_EQ(command.options.roots, (std::vector<std::string>{"/tmp", "/"}));
  EXPECT_EQ(command.options.log_level, LogLevel::Debug);
  EXPECT_EQ(parse_command_line(std::vector<std::string>{"--log-level=error"}).options.log_level, LogLevel::Error);
}

TEST(CommandLine, HelpAndVersion) {
  EXPECT_EQ(parse_command_line(std::vector<std::string>{"--help"}).action, CommandLine::Action::Help);
  EXPECT_EQ(parse_command_line(std::vector<std::string>{"-h"}).action, CommandLine::Action::Help);
  EXPECT_EQ(parse_command_line(std::vector<std::string>{"--version"}).action, CommandLine::Action::Version);
  EXPECT_NE(usage().find("--allow-dangerous"), std::string::npos);
}

TEST(CommandLine, ProblemsAreNamed) {
  auto error = [](std::vector<std::string> args) {
    CommandLine command = parse_command_line(args);
    EXPECT_EQ(command.action, CommandLine::Action::Fail);
    return command.error;
  };
  EXPECT_NE(error({"--frobnicate"}).find("--frobnicate"), std::string::npos);
  EXPECT_NE(error({"--root"}).find("--root"), std::string::npos);
  EXPECT_NE(error({"--root", "/no/such/dir/at/all"}).find("not a directory"), std::string::npos);
  EXPECT_NE(error({"--log-level", "loud"}).find("loud"), std::string::npos);
  EXPECT_NE(error({"--log-level"}).find("--log-level"), std::string::npos);
}

// ------------------------------------------------------------ approval and cancellation

TEST(HeadlessApproval, DeniesDangerousToolsSayingHowToAllowThem) {
  Tool tool;
  tool.name = "write_file";
  ApprovalDecision denied = headless_approval(false)(tool, json::object());
  EXPECT_EQ(denied.kind, ApprovalKind::Denied);
  EXPECT_NE(denied.message.find("write_file"), std::string::npos);
  EXPECT_NE(denied.message.find("run sly-agent-q-mcp with --allow-dangerous to allow it"), std::string::npos);
  EXPECT_EQ(headless_approval(true)(tool, json::object()).kind, ApprovalKind::Approved);
}

TEST(McpCallContext, CancelStopsTheQueuedJobAndPolls) {
  std::vector<std::uint64_t> cancelled;
  McpCallContext context([&](std::uint64_t job) { cancelled.push_back(job); });
  EXPECT_FALSE(context.poll());
  EXPECT_TRUE(context.interrupt_is_cancel());
  context.job_queued(41);
  context.job_queued(42);
  context.cancel();
  EXPECT_TRUE(context.poll());
  EXPECT_TRUE(context.cancelled());
  EXPECT_EQ(cancelled, (std::vector<std::uint64_t>{42}));
  // A job queued after the cancellation is stopped as soon as it is named.
  context.job_queued(43);
  EXPECT_EQ(cancelled, (std::vector<std::uint64_t>{42, 43}));
}

// The worker's run of an inline call that another thread took over is
// marked superseded on the worker's thread alone: the executor leaves it
// out of the tool's counts there, and counts the taker's run.
TEST(McpCallContext, ASupersededRunIsNotCountedAndOnlyOnTheThreadThatWasSuperseded) {
  Registry registry;
  Executor executor(registry);
  Tool tool;
  tool.name = "taken_over";
  tool.description = "Marks its run superseded when asked.";
  tool.parameters = {{"supersede", ParamType::Boolean, "Mark it."}};
  tool.safety_level = SafetyLevel::Safe;
  tool.handler = [](const json& args, CallContext& context) {
    if (args.value("supersede", false)) context.mark_superseded();
    return ToolOutput{true, "ran"};
  };
  registry.register_tool(tool);
  McpCallContext context(nullptr);
  ExecutionOptions options;
  options.context = &context;
  std::thread worker([&] {
    EXPECT_TRUE(executor.execute(ToolCall{"1", "taken_over", json{{"supersede", true}}}, options).success);
    EXPECT_TRUE(context.superseded());
  });
  worker.join();
  EXPECT_FALSE(context.superseded());  // another thread: the taker
  EXPECT_EQ(executor.stats()["taken_over"].calls, 0u);
  EXPECT_TRUE(executor.execute(ToolCall{"1", "taken_over", json{{"supersede", false}}}, options).success);
  EXPECT_EQ(executor.stats()["taken_over"].calls, 1u);
}

// ------------------------------------------------------------ the server over pipes

namespace {

// A StdioServer over two pipes, with tools that wait for a cancellation.
class ServerOverPipes : public ::testing::Test {
 protected:
  ServerOverPipes() : executor(registry), server(executor) {
    Tool wait;
    wait.name = "wait";
    wait.description = "Waits until cancelled, or for ms milliseconds.";
    wait.parameters = {{"ms", ParamType::Integer, "How long."}};
    wait.safety_level = SafetyLevel::Cautious;
    wait.handler = [this](const json& args, CallContext& context) {
      context.job_queued(++jobs);
      auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(args.value("ms", 60000));
      while (std::chrono::steady_clock::now() < until) {
        if (context.poll()) return ToolOutput{false, "[ERROR] INTERRUPTED"};
        std::this_thread::sleep_for(1ms);
      }
      return ToolOutput{true, "waited"};
    };
    registry.register_tool(wait);
    Tool progress;
    progress.name = "progress";
    progress.description = "Sends two progress notifications, then answers.";
    progress.safety_level = SafetyLevel::Safe;
    progress.handler = [](const json&, CallContext& context) {
      auto* call = dynamic_cast<McpCallContext*>(&context);
      bool sent = call != nullptr;
      for (int i = 1; i <= 2 && call; ++i)
        sent = call->notify(json{{"jsonrpc", "2.0"}, {"method", "notifications/progress"},
                                 {"params", {{"progressToken", "t"}, {"progress", i}}}}.dump()) && sent;
      return ToolOutput{true, sent ? "notified" : "not notified"};
    };
    registry.register_tool(progress);
    Tool danger;
    danger.name = "danger";
    danger.description = "Dangerous.";
    danger.safety_level = SafetyLevel::Dangerous;
    danger.handler = [](const json&, CallContext&) { return ToolOutput{true, "done"}; };
    registry.register_tool(danger);

    ExecutionOptions options;
    options.approve = headless_approval(false);
    writer = std::make_unique<LineWriter>(out.write.get());
    stdio = std::make_unique<StdioServer>(
        server, options,
        [this](std::uint64_t job) {
          std::lock_guard lock(mutex);
          cancelled_jobs.push_back(job);
        },
        *writer);
    reader = std::make_unique<LineReader>(in.read.get(), 1000);
    runner = std::thread([this] { stdio->run(*reader); });
  }
  ~ServerOverPipes() override {
    in.write.reset();
    if (runner.joinable()) runner.join();
  }

  void send(const std::string& line) { write_all(in.write.get(), line + "\n"); }

  // The next response, or null after TIMEOUT.
  json receive(std::chrono::milliseconds timeout = 5000ms) {
    auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto nl = pending.find('\n'); nl != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        return json::parse(line);
      }
      if (std::chrono::steady_clock::now() >= until) return nullptr;
      char buffer[4096];
      int flags = ::fcntl(out.read.get(), F_GETFL);
      ::fcntl(out.read.get(), F_SETFL, flags | O_NONBLOCK);
      ssize_t n = ::read(out.read.get(), buffer, sizeof buffer);
      if (n > 0)
        pending.append(buffer, static_cast<std::size_t>(n));
      else
        std::this_thread::sleep_for(1ms);
    }
  }

  static std::string call(int id, const std::string& tool, json args = json::object()) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", tool}, {"arguments", args}}}}
        .dump();
  }
  static std::string cancel(int id) {
    return json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", id}}}}.dump();
  }

  Registry registry;
  Executor executor;
  McpServer server;
  std::atomic<std::uint64_t> jobs{0};
  std::mutex mutex;
  std::vector<std::uint64_t> cancelled_jobs;
  Pipe in, out;
  std::unique_ptr<LineWriter> writer;
  std::unique_ptr<StdioServer> stdio;
  std::unique_ptr<LineReader> reader;
  std::thread runner;
  std::string pending;
};

}  // namespace

TEST_F(ServerOverPipes, PingIsAnsweredWhileACallRuns) {
  send(call(1, "wait", {{"ms", 1500}}));
  send(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  json first = receive();
  EXPECT_EQ(first["id"], 2) << first.dump();
  json second = receive();
  EXPECT_EQ(second["id"], 1) << second.dump();
  EXPECT_EQ(second["result"]["content"][0]["text"], "waited");
}

TEST_F(ServerOverPipes, CancellingTheRunningCallInterruptsItAndItIsNotAnswered) {
  send(call(1, "wait"));
  std::this_thread::sleep_for(100ms);  // running
  send(cancel(1));
  // The next call is answered first and alone: the interrupted call ended
  // (else the next would wait behind it) and its answer was not sent.
  send(call(2, "wait", {{"ms", 1}}));
  json next = receive();
  EXPECT_EQ(next["id"], 2) << "the cancelled call was answered: " << next.dump();
  EXPECT_EQ(next["result"]["content"][0]["text"], "waited");
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(cancelled_jobs, (std::vector<std::uint64_t>{1}));  // the job it had named
  }
}

TEST_F(ServerOverPipes, CancellingAQueuedCallDropsItUnanswered) {
  send(call(1, "wait", {{"ms", 300}}));
  send(call(2, "wait", {{"ms", 1}}));
  send(cancel(2));
  send(call(3, "wait", {{"ms", 1}}));
  json first = receive();
  json second = receive();
  EXPECT_EQ(first["id"], 1) << first.dump();
  EXPECT_EQ(second["id"], 3) << second.dump();
  EXPECT_TRUE(receive(300ms).is_null());  // nothing for request 2
}

TEST_F(ServerOverPipes, CancellingAnUnknownOrFinishedRequestChangesNothing) {
  send(cancel(99));
  send(call(1, "wait", {{"ms", 1}}));
  EXPECT_EQ(receive()["id"], 1);
  send(cancel(1));
  send(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  EXPECT_EQ(receive()["id"], 2);
}

TEST_F(ServerOverPipes, ACallsNotificationsAreLinesBeforeItsResponse) {
  send(call(1, "progress"));
  json first = receive();
  json second = receive();
  json third = receive();
  EXPECT_EQ(first["method"], "notifications/progress") << first.dump();
  EXPECT_EQ(first["params"]["progress"], 1);
  EXPECT_EQ(second["params"]["progress"], 2) << second.dump();
  EXPECT_EQ(third["id"], 1) << third.dump();
  EXPECT_EQ(third["result"]["content"][0]["text"], "notified");
}

TEST(McpCallContext, NotifyWithoutATransportSendsNothing) {
  McpCallContext context(nullptr);
  EXPECT_FALSE(context.notify("{}"));
  std::vector<std::string> sent;
  context.set_notifier([&](std::string_view text) {
    sent.emplace_back(text);
    return true;
  });
  EXPECT_TRUE(context.notify(R"({"jsonrpc":"2.0","method":"notifications/progress"})"));
  EXPECT_EQ(sent, (std::vector<std::string>{R"({"jsonrpc":"2.0","method":"notifications/progress"})"}));
}

TEST_F(ServerOverPipes, DangerousToolsAreDeniedWithTheWayToAllowThem) {
  send(call(1, "danger"));
  json response = receive();
  EXPECT_EQ(response["result"]["isError"], true);
  std::string text = response["result"]["content"][0]["text"];
  EXPECT_NE(text.find("--allow-dangerous"), std::string::npos) << text;
}

TEST_F(ServerOverPipes, BadLinesGetOneErrorEachAndTheServerGoesOn) {
  send("{not json");
  send(std::string(5000, 'x'));  // longer than this server's 1000 bytes
  send("");
  send("   ");
  send(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  json parse = receive();
  EXPECT_EQ(parse["error"]["code"], jsonrpc_error::kParseError);
  EXPECT_TRUE(parse["id"].is_null());
  json too_long = receive();
  EXPECT_EQ(too_long["error"]["code"], jsonrpc_error::kParseError);
  EXPECT_TRUE(too_long["id"].is_null());
  EXPECT_NE(too_long["error"]["message"].get<std::string>().find("5000 bytes"), std::string::npos);
  EXPECT_EQ(receive()["id"], 1);  // blank lines are not messages
}

TEST_F(ServerOverPipes, EndOfInputAnswersTheCallsReadThenReturns) {
  send(call(1, "wait", {{"ms", 200}}));
  send(call(2, "wait", {{"ms", 1}}));
  in.write.reset();
  runner.join();
  EXPECT_EQ(receive()["id"], 1);
  EXPECT_EQ(receive()["id"], 2);
}

// ---- HangupWatch: one watching thread per HTTP connection

namespace {

// Waits (up to 20 s: a stalled machine, not a timing check) for FLAG.
bool eventually(const std::atomic<bool>& flag) {
  for (int i = 0; i < 2000 && !flag.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return flag.load();
}

struct WatchedConnection {
  int fds[2] = {-1, -1};  // [0] the server's end, [1] the client's
  WatchedConnection() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~WatchedConnection() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

}  // namespace

TEST(HangupWatch, AHangUpDuringACallStopsIt) {
  WatchedConnection connection;
  std::atomic<bool> stopped{false};
  McpSession::Link link([](std::string_view) { return false; });
  link.set_canceller([&] { stopped = true; });
  {
    HangupWatch watch(connection.fds[0]);
    HangupWatch::Watching watching(watch, link);
    ::shutdown(connection.fds[1], SHUT_WR);
    EXPECT_TRUE(eventually(stopped));
  }
}

TEST(HangupWatch, ACallAfterTheHangUpIsStoppedAtOnce) {
  WatchedConnection connection;
  HangupWatch watch(connection.fds[0]);
  McpSession::Link first([](std::string_view) { return false; });
  { HangupWatch::Watching watching(watch, first); }  // starts the thread; no hang-up yet
  ::close(connection.fds[1]);
  connection.fds[1] = -1;
  // Each later call is stopped as it starts, once the thread has seen it.
  std::atomic<bool> stopped{false};
  for (int i = 0; i < 2000 && !stopped; ++i) {
    McpSession::Link later([](std::string_view) { return false; });
    later.set_canceller([&] { stopped = true; });
    HangupWatch::Watching watching(watch, later);
    if (!stopped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(stopped);
}

TEST(HangupWatch, DataIsNotAHangUpAndCallsBetweenAreNotStopped) {
  WatchedConnection connection;
  std::atomic<int> stops{0};
  {
    HangupWatch watch(connection.fds[0]);
    for (int call = 0; call < 50; ++call) {
      McpSession::Link link([](std::string_view) { return false; });
      link.set_canceller([&] { ++stops; });
      HangupWatch::Watching watching(watch, link);
      // A pipelined next request arrives while this call runs.
      ASSERT_EQ(::write(connection.fds[1], "x", 1), 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }  // the watch ends with the connection: its thread stops
  EXPECT_EQ(stops.load(), 0);
}
