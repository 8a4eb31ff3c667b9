// sly-agent-q-mcp --emacs: its pieces, and the binary against a real local
// socket peer standing in for Emacs (a thread that accepts, reads lines and
// answers as the test says), or against nothing at all.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/emacs_bridge.hpp"
#include "mcp/emacs_socket.hpp"
#include "mcp/line_splitter.hpp"
#include "mcp/options.hpp"
#include "mcp/unique_fd.hpp"
#include "common/child_process.hpp"
#include "common/flood_writer.hpp"
#include "common/temp_dir.hpp"

using json = nlohmann::json;
using namespace agentq::mcp;
using namespace std::chrono_literals;

namespace {

std::vector<Line> split(LineSplitter& splitter, std::initializer_list<std::string_view> pieces) {
  std::vector<Line> lines;
  for (std::string_view piece : pieces) splitter.feed(piece, [&](Line& line) { lines.push_back(line); });
  return lines;
}

using agentq::fixtures::TempDir;

// A stand-in for Emacs serving MCP on a local socket: answers pings by
// itself (unless told not to) and queues every other line for the test.
class FakeEmacs {
 public:
  explicit FakeEmacs(std::string path) : path_(std::move(path)) { listen(); }
  ~FakeEmacs() { stop(); }

  void listen() {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    ::unlink(path_.c_str());
    listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(listener_.get(), 4), 0);
    stopping_ = false;
    thread_ = std::thread([this] { serve(); });
  }

  // Closes the connection and the socket, as an Emacs that is killed.
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    connection_.reset();
    listener_.reset();
    ::unlink(path_.c_str());
  }

  std::optional<json> next(std::chrono::milliseconds timeout = 10000ms) {
    std::unique_lock lock(mutex_);
    if (!arrived_.wait_for(lock, timeout, [&] { return !lines_.empty(); })) return std::nullopt;
    json message = std::move(lines_.front());
    lines_.pop_front();
    return message;
  }

  void send(const json& message) { send_text(message.dump()); }

  // A line as it is, written by hand.
  void send_text(const std::string& line) {
    std::lock_guard lock(mutex_);
    std::string text = line + "\n";
    ASSERT_EQ(::send(connection_.get(), text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
  }

  void answer(const json& request, json result = json::object()) {
    send({{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", std::move(result)}});
  }

  // Writes an answer on the bridge's answer channel, as Emacs's runner does.
  void answer_on_channel(const json& request, json result = json::object()) {
    std::string text =
        json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", std::move(result)}}.dump() + "\n";
    std::lock_guard lock(mutex_);
    ASSERT_TRUE(channel_) << "no answer channel was opened";
    ASSERT_EQ(::write(channel_.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }

  std::string channel_path() {
    std::lock_guard lock(mutex_);
    return channel_path_;
  }

  std::atomic<bool> answer_pings{true};
  // false: reads nothing from the bridge (an Emacs busy for long).
  std::atomic<bool> reading{true};
  // Opens the answer channel the bridge asks for, as Emacs does; else
  // answers as an Emacs that does not know the method.
  std::atomic<bool> open_channels{false};
  std::atomic<int> pings{0};
  std::atomic<int> connections{0};

 private:
  void serve() {
    std::string buffer;
    while (!stopping_) {
      pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {-1, POLLIN, 0}};
      {
        std::lock_guard lock(mutex_);
        fds[1].fd = connection_ && reading ? connection_.get() : -1;
      }
      if (::poll(fds, 2, 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        std::lock_guard lock(mutex_);
        connection_.reset(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        buffer.clear();
        ++connections;
      }
      if (fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) {
        char chunk[4096];
        ssize_t n = ::recv(fds[1].fd, chunk, sizeof chunk, 0);
        if (n <= 0) {
          std::lock_guard lock(mutex_);
          connection_.reset();
          continue;
        }
        buffer.append(chunk, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
          json message = json::parse(buffer.substr(0, nl), nullptr, false);
          buffer.erase(0, nl + 1);
          if (message.is_object() && message.value("method", "") == "ping") {
            ++pings;
            if (answer_pings) answer(message);
            continue;
          }
          if (message.is_object() && message.value("method", "") == "sly-agent-q/answer-channel") {
            open_channel(message);
            continue;
          }
          std::lock_guard lock(mutex_);
          lines_.push_back(std::move(message));
          arrived_.notify_all();
        }
      }
    }
  }

  void open_channel(const json& request) {
    std::string path = request["params"].value("path", "");
    {
      std::lock_guard lock(mutex_);
      channel_path_ = path;
      if (open_channels) channel_.reset(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    }
    if (open_channels)
      answer(request);
    else
      send({{"jsonrpc", "2.0"}, {"id", request["id"]}, {"error", {{"code", -32601}, {"message", "Method not found"}}}});
  }

  std::string path_;
  UniqueFd listener_, connection_, channel_;
  std::string channel_path_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<json> lines_;
};

// sly-agent-q-mcp --emacs SOCKET …, with pipes for stdin and stdout.
class Bridge {
 public:
  explicit Bridge(std::vector<std::string> args)
      : process_(AGENTQ_MCP_BINARY, std::move(args), agentq::fixtures::ChildStderr::Inherit) {}

  void send(const json& message) { ASSERT_TRUE(process_.write_all(message.dump() + "\n")); }
  void send_text(const std::string& line) { ASSERT_TRUE(process_.write_all(line + "\n")); }
  long long rss_kb() const { return process_.rss_kb(); }
  agentq::fixtures::ChildProcess& child() { return process_; }
  void close_stdin() { process_.close_stdin(); }

  // The next response, or null after TIMEOUT.
  json response(std::chrono::milliseconds timeout = 10000ms) { return process_.response(timeout); }
  // The next response as it came (nullopt after TIMEOUT).
  std::optional<std::string> line(std::chrono::milliseconds timeout = 10000ms) { return process_.line(timeout); }

  // The process's thread count, from /proc (0 when unknown).
  int threads() const { return process_.threads(); }
  pid_t pid() const { return process_.pid(); }

  int wait_exit(std::chrono::milliseconds timeout = 10000ms) { return process_.wait_exit(timeout); }

 private:
  agentq::fixtures::ChildProcess process_;
};

json request(const json& id, const std::string& method) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", json::object()}};
}

json call(const json& id) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
          {"params", {{"name", "evaluate_lisp"}, {"arguments", {{"code", "(+ 1 2)"}}}}}};
}

}  // namespace

TEST(LineSplitter, LinesArriveInPieces) {
  LineSplitter splitter(100);
  auto lines = split(splitter, {"ab", "c\r\nde", "f\n\ng"});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, "abc");
  EXPECT_EQ(lines[1].text, "def");
  EXPECT_EQ(lines[2].text, "");
  auto last = splitter.finish();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->text, "g");
  EXPECT_FALSE(splitter.finish());
}

TEST(LineSplitter, ALineOverTheLimitIsReportedNotKept) {
  LineSplitter splitter(4);
  auto lines = split(splitter, {"abc", "defgh", "ij\nok\n"});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0].too_long);
  EXPECT_EQ(lines[0].bytes, 10u);
  EXPECT_TRUE(lines[0].text.empty());
  EXPECT_EQ(lines[1].text, "ok");
}

TEST(EmacsSocket, TheDefaultIsUnderTheRuntimeDirectoryAsInEmacs) {
  const char* saved_xdg = std::getenv("XDG_RUNTIME_DIR");
  std::string xdg = saved_xdg ? saved_xdg : "";
  ::setenv("XDG_RUNTIME_DIR", "/run/user/4242/", 1);
  EXPECT_EQ(default_emacs_socket(), "/run/user/4242/sly-agent-q/mcp.sock");
  ::unsetenv("XDG_RUNTIME_DIR");
  ::setenv("TMPDIR", "/var/tmp/", 1);
  EXPECT_EQ(default_emacs_socket(), "/var/tmp/sly-agent-q-" + std::to_string(::getuid()) + "/sly-agent-q/mcp.sock");
  ::unsetenv("TMPDIR");
  EXPECT_EQ(default_emacs_socket(), "/tmp/sly-agent-q-" + std::to_string(::getuid()) + "/sly-agent-q/mcp.sock");
  if (saved_xdg) ::setenv("XDG_RUNTIME_DIR", xdg.c_str(), 1);
}

TEST(EmacsSocket, NobodyListeningIsAnErrorWithTheReason) {
  TempDir dir;
  std::string error;
  UniqueFd fd = connect_emacs_socket(dir.path + "/none.sock", error);
  EXPECT_FALSE(fd);
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
  EXPECT_FALSE(connect_emacs_socket("/" + std::string(200, 'x'), error));
  EXPECT_NE(error.find("longer than"), std::string::npos) << error;
}

TEST(CommandLine, EmacsModeAndItsOptions) {
  std::vector<std::string> plain{"--emacs"};
  CommandLine line = parse_command_line(plain);
  EXPECT_EQ(line.action, CommandLine::Action::Serve);
  EXPECT_TRUE(line.options.emacs);
  EXPECT_EQ(line.options.emacs_socket, default_emacs_socket());
  EXPECT_EQ(line.options.emacs_timeout_s, 30);

  std::vector<std::string> named{"--emacs", "/tmp/x.sock", "--emacs-timeout", "2.5", "--log-level", "debug"};
  line = parse_command_line(named);
  EXPECT_EQ(line.options.emacs_socket, "/tmp/x.sock");
  EXPECT_EQ(line.options.emacs_timeout_s, 2.5);
  EXPECT_EQ(line.options.log_level, LogLevel::Debug);

  std::vector<std::string> option_after{"--emacs", "--log-level", "info"};
  line = parse_command_line(option_after);
  EXPECT_EQ(line.options.emacs_socket, default_emacs_socket());

  for (std::string bad : {"0", "-1", "soon", "", "1e9"}) {
    std::vector<std::string> args{"--emacs", "--emacs-timeout", bad};
    line = parse_command_line(args);
    EXPECT_EQ(line.action, CommandLine::Action::Fail) << bad;
    EXPECT_NE(line.error.find("--emacs-timeout"), std::string::npos) << line.error;
  }
}

TEST(CommandLine, TheSchedulerSlice) {
  EXPECT_EQ(parse_command_line(std::vector<std::string>{}).options.sched_slice_us, 0);
  EXPECT_EQ(parse_command_line(std::vector<std::string>{"--sched-slice", "100"}).options.sched_slice_us, 100);
  EXPECT_EQ(parse_command_line(std::vector<std::string>{"--sched-slice=250"}).options.sched_slice_us, 250);
  for (std::string bad : {"-1", "50", "fast", "", "100001"}) {
    CommandLine line = parse_command_line(std::vector<std::string>{"--sched-slice", bad});
    EXPECT_EQ(line.action, CommandLine::Action::Fail) << bad;
    EXPECT_NE(line.error.find("--sched-slice"), std::string::npos) << line.error;
  }
}

// Each thread of the binary has the slice it asked for (where the kernel
// takes one: /proc shows se.slice), unless told to leave the kernel's.
TEST(EmacsBridgeBinary, EveryThreadHasTheSchedulerSliceAskedFor) {
  auto slices = [](pid_t pid) {
    std::vector<long long> found;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
      std::ifstream in(task.path() / "sched");
      std::string line;
      while (std::getline(in, line))
        if (line.rfind("se.slice", 0) == 0) found.push_back(std::stoll(line.substr(line.find(':') + 1)));
    }
    return found;
  };
  if (slices(::getpid()).empty()) GTEST_SKIP() << "no se.slice in /proc: this kernel has no slice to ask for";
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  for (auto [arg, want] : {std::pair{"250", 250000LL}, std::pair{"0", 0LL}}) {
    // Over HTTP: a thread per connection besides the main one.
    Bridge bridge({"--emacs", socket, "--http", "0", "--http-token-file", dir.path + "/token", "--sched-slice", arg});
    auto until = std::chrono::steady_clock::now() + 10s;
    while (!std::filesystem::exists(dir.path + "/token") && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(10ms);
    std::vector<long long> found = slices(bridge.pid());
    ASSERT_FALSE(found.empty());
    for (long long slice : found) {
      if (want)
        EXPECT_EQ(slice, want);
      else
        EXPECT_NE(slice, 250000LL);
    }
    bridge.close_stdin();
    bridge.wait_exit();
    std::filesystem::remove(dir.path + "/token");
  }
}

TEST(EmacsBridgeBinary, NoEmacsListeningEveryRequestGetsAClearErrorAndTheBinaryGoesOn) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  Bridge bridge({"--emacs", socket});
  // The client connects (initialize, ping), and hears why no tool is there.
  bridge.send(request(0, "initialize"));
  json initialized = bridge.response();
  EXPECT_EQ(initialized["result"]["serverInfo"]["name"], "sly-agent-q") << initialized.dump();
  // No Lisp was booted: ECL would have started threads of its own.
  EXPECT_EQ(bridge.threads(), 1);
  bridge.send(request(1, "tools/list"));
  json error = bridge.response();
  EXPECT_EQ(error["id"], 1) << error.dump();
  EXPECT_EQ(error["error"]["code"], bridge_error::kNotServing);
  const std::string message = error["error"]["message"];
  EXPECT_NE(message.find("Emacs is not serving MCP at " + socket), std::string::npos) << message;
  EXPECT_NE(message.find("M-x sly-agent-q-mcp-server-start"), std::string::npos) << message;
  // A notification is not answered; the next request is.
  bridge.send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  bridge.send(request("two", "ping"));
  json pong = bridge.response();
  EXPECT_EQ(pong["id"], "two");
  EXPECT_EQ(pong["result"], json::object());
  bridge.send(call(3));
  EXPECT_EQ(bridge.response()["error"]["code"], bridge_error::kNotServing);
  bridge.close_stdin();
  EXPECT_EQ(bridge.wait_exit(), 0);
}

TEST(EmacsBridgeBinary, RequestsAndAnswersAreForwardedAndAReconnectFollowsALostEmacs) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  Bridge bridge({"--emacs", socket});
  bridge.send(call(7));
  auto forwarded = emacs.next();
  ASSERT_TRUE(forwarded);
  EXPECT_EQ((*forwarded)["params"]["name"], "evaluate_lisp");
  emacs.answer(*forwarded, {{"content", json::array({{{"type", "text"}, {"text", "=> 3"}}})}, {"isError", false}});
  json answer = bridge.response();
  EXPECT_EQ(answer["id"], 7);
  EXPECT_EQ(answer["result"]["content"][0]["text"], "=> 3");

  // Emacs goes away mid-call: the call gets the error, not silence.
  bridge.send(call(8));
  ASSERT_TRUE(emacs.next());
  emacs.stop();
  json lost = bridge.response();
  EXPECT_EQ(lost["id"], 8) << lost.dump();
  EXPECT_EQ(lost["error"]["code"], bridge_error::kNotServing);
  EXPECT_NE(lost["error"]["message"].get<std::string>().find("went away"), std::string::npos) << lost.dump();

  // Emacs back: the next request connects again.
  emacs.listen();
  bridge.send(request(9, "tools/list"));
  auto list = emacs.next();
  ASSERT_TRUE(list);
  emacs.answer(*list, {{"tools", json::array()}});
  EXPECT_EQ(bridge.response()["id"], 9);
  EXPECT_EQ(emacs.connections.load(), 2);
}

// A client that floods an Emacs that reads nothing for a while: the
// bridge stops reading the client once 16 MB wait for Emacs (the client's
// writes then wait), instead of keeping all it is sent; every request
// arrives when Emacs reads again.
TEST(EmacsBridgeBinary, AFloodWaitsInTheClientsPipeNotInTheBridgesMemory) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  Bridge bridge({"--emacs", socket});
  bridge.send(request(0, "tools/list"));
  auto first = emacs.next();
  ASSERT_TRUE(first);
  emacs.answer(*first, {{"tools", json::array()}});
  EXPECT_EQ(bridge.response()["id"], 0);
  emacs.reading = false;
  // 4,000 calls of 20 KB each: 80 MB.
  constexpr int kCalls = 4000;
  const std::string code = "\"" + std::string(20000, 'x') + "\"";
  agentq::fixtures::FloodWriter flood(bridge.child(), kCalls, [&](int i) {
    json message = call(i + 1);
    message["params"]["arguments"]["code"] = code;
    return message.dump() + "\n";
  });
  flood.wait_until_stalled();
  const long long stalled_at = flood.bytes();
  const long long rss_kb = bridge.rss_kb();
  EXPECT_LT(stalled_at, 24LL << 20) << "the bridge read on while nothing went to Emacs";
  EXPECT_GT(stalled_at, 8LL << 20) << "the bridge stopped reading well before its limit";
  EXPECT_LT(rss_kb, 64 * 1024) << "the bridge's resident memory, kB";
  // Emacs reads again: every call reaches it, in order.
  emacs.reading = true;
  for (int i = 1; i <= kCalls; ++i) {
    auto forwarded = emacs.next();
    ASSERT_TRUE(forwarded) << "call " << i << " never reached Emacs";
    ASSERT_EQ((*forwarded)["id"], i);
  }
  flood.join();
  EXPECT_EQ(flood.lines(), kCalls);
}

TEST(EmacsBridgeBinary, ACallWaitsPastTheTimeoutWhileEmacsAnswersPings) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  Bridge bridge({"--emacs", socket, "--emacs-timeout", "1"});
  bridge.send(call("approval"));
  auto forwarded = emacs.next();
  ASSERT_TRUE(forwarded);
  // An approval the person takes 2.5 s over: Emacs answers the bridge's pings.
  EXPECT_TRUE(bridge.response(2500ms).is_null()) << "answered before Emacs did";
  EXPECT_GE(emacs.pings.load(), 2);
  emacs.answer(*forwarded, {{"content", json::array()}, {"isError", false}});
  json answer = bridge.response();
  EXPECT_EQ(answer["id"], "approval") << answer.dump();
  EXPECT_TRUE(answer.contains("result"));
  // The pings' answers never reached the client.
  EXPECT_TRUE(bridge.response(300ms).is_null());
}

TEST(EmacsBridgeBinary, AStuckEmacsCostsTheTimeoutThenALateAnswerIsDropped) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  emacs.answer_pings = false;
  Bridge bridge({"--emacs", socket, "--emacs-timeout", "0.5"});
  auto start = std::chrono::steady_clock::now();
  bridge.send(call(1));
  auto forwarded = emacs.next();
  ASSERT_TRUE(forwarded);
  json timeout = bridge.response(5000ms);
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(timeout["id"], 1) << timeout.dump();
  EXPECT_EQ(timeout["error"]["code"], bridge_error::kTimeout);
  EXPECT_NE(timeout["error"]["message"].get<std::string>().find("did not answer within 0.5 s"), std::string::npos);
  EXPECT_GE(waited, 450ms);
  // Emacs wakes up and answers: the client already has its one answer.
  emacs.answer(*forwarded);
  emacs.answer_pings = true;
  bridge.send(request(2, "tools/list"));
  auto list = emacs.next();
  ASSERT_TRUE(list);
  emacs.answer(*list, {{"tools", json::array()}});
  json next = bridge.response();
  EXPECT_EQ(next["id"], 2) << next.dump();
}

TEST(EmacsBridgeBinary, EndOfInputWaitsForTheAnswersThenExits) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  Bridge bridge({"--emacs", socket});
  bridge.send(call(1));
  auto forwarded = emacs.next();
  ASSERT_TRUE(forwarded);
  bridge.close_stdin();
  std::this_thread::sleep_for(200ms);
  emacs.answer(*forwarded);
  EXPECT_EQ(bridge.response()["id"], 1);
  EXPECT_EQ(bridge.wait_exit(), 0);
}

TEST(EmacsBridgeBinary, ACancelledRequestIsNeverAnswered) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  emacs.answer_pings = false;  // as stuck: the bridge would time requests out
  Bridge bridge({"--emacs", socket, "--emacs-timeout", "0.5"});
  auto cancel = [](const json& id) {
    return json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", id}}}};
  };
  // Dropped by Emacs (it was queued): nobody answers it, the bridge neither.
  bridge.send(call(1));
  ASSERT_TRUE(emacs.next());
  bridge.send(cancel(1));
  auto forwarded = emacs.next();
  ASSERT_TRUE(forwarded);
  EXPECT_EQ((*forwarded)["method"], "notifications/cancelled");  // Emacs is told
  EXPECT_TRUE(bridge.response(1500ms).is_null()) << "the bridge answered a cancelled request";
  // Interrupted by Emacs (it was running): an Emacs that still answers it
  // (an older one) is not passed on, for a cancelled request gets no response.
  bridge.send(call(2));
  auto running = emacs.next();
  ASSERT_TRUE(running);
  bridge.send(cancel(2));
  ASSERT_TRUE(emacs.next());
  emacs.answer(*running, {{"content", json::array({{{"type", "text"}, {"text", "[ERROR] INTERRUPTED"}}})},
                          {"isError", true}});
  EXPECT_TRUE(bridge.response(800ms).is_null()) << "the bridge passed on the answer to a cancelled request";
  // The bridge still serves: a later call's answer is passed on.
  bridge.send(call(3));
  auto third = emacs.next();
  ASSERT_TRUE(third);
  emacs.answer(*third, {{"content", json::array({{{"type", "text"}, {"text", "=> 3"}}})}, {"isError", false}});
  EXPECT_EQ(bridge.response()["id"], 3);
  // Nothing is outstanding: the end of input ends the bridge at once.
  bridge.close_stdin();
  EXPECT_EQ(bridge.wait_exit(2000ms), 0);
}

// The bridge reads ids and methods from the lines as they come (a light
// scan for the usual message, the full parser for the rest): by their
// JSON value, whatever their text, and never from nested objects.
TEST(EmacsBridgeBinary, AnswersArePairedByTheTopLevelIdsValue) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  emacs.answer_pings = false;  // only the test's lines from "Emacs"
  Bridge bridge({"--emacs", socket});
  // "id" and "method" nested in params; the id written with an escape.
  bridge.send_text(R"({"params":{"name":"evaluate_lisp","arguments":{"id":"x","method":"m"},"requestId":"x"},)"
                   R"("id":"a\/b","method":"tools/call","jsonrpc":"2.0"})");
  auto call = emacs.next();
  ASSERT_TRUE(call);
  EXPECT_EQ((*call)["id"], "a/b");
  // An answer to no request (its result has an id that is not one either),
  // then a notification whose params name it: dropped, passed on.
  emacs.send_text(R"({"jsonrpc":"2.0","result":{"id":"a/b"},"id":"x"})");
  const std::string progress = R"({"params":{"id":"a/b","progressToken":1},"jsonrpc":"2.0","method":"notifications/progress"})";
  emacs.send_text(progress);
  EXPECT_EQ(bridge.line(), progress);
  // The answer, its id written otherwise, method-like members nested.
  const std::string answer = R"({"result":{"method":"tools/call","content":[]},"jsonrpc":"2.0","id":"a/b"})";
  emacs.send_text(answer);
  EXPECT_EQ(bridge.line(), answer);

  // -0 is 0; a string id with \u escapes (left to the full parser) is the
  // same id as the one written plainly.
  bridge.send_text(R"({"jsonrpc":"2.0","id":-0,"method":"tools/list"})");
  ASSERT_TRUE(emacs.next());
  bridge.send_text(R"({"jsonrpc":"2.0","method":"tools/call","id":"\u00e9\"","params":{}})");
  ASSERT_TRUE(emacs.next());
  const std::string zero = R"({"jsonrpc":"2.0","id":0,"result":{"tools":[]}})";
  emacs.send_text(zero);
  EXPECT_EQ(bridge.line(), zero);
  const std::string accented = "{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\xa9\\\"\",\"result\":{}}";
  emacs.send_text(accented);
  EXPECT_EQ(bridge.line(), accented);

  // A cancellation naming the request with an escape: its answer is not passed on.
  bridge.send_text(R"({"jsonrpc":"2.0","id":"c/1","method":"tools/call","params":{}})");
  ASSERT_TRUE(emacs.next());
  bridge.send_text(R"({"method":"notifications/cancelled","params":{"reason":"r","requestId":"c\/1"},"jsonrpc":"2.0"})");
  ASSERT_TRUE(emacs.next());
  emacs.send_text(R"({"jsonrpc":"2.0","id":"c/1","result":{}})");
  // A batch, both ways.
  bridge.send_text(R"([{"jsonrpc":"2.0","id":5,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}])");
  auto batch = emacs.next();
  ASSERT_TRUE(batch);
  EXPECT_TRUE(batch->is_array());
  const std::string batch_answer = R"([{"jsonrpc":"2.0","id":5,"result":{"tools":[]}}])";
  emacs.send_text(batch_answer);
  EXPECT_EQ(bridge.line(), batch_answer);  // not the cancelled request's answer before it
  bridge.close_stdin();
  EXPECT_EQ(bridge.wait_exit(2000ms), 0);  // nothing left outstanding
}

// The answer channel: the bridge makes a FIFO beside the socket (0600) and
// asks Emacs to open it; answers written there reach the client as those
// on the socket do; the FIFO's name is gone once Emacs answered; a client
// may not ask for one itself; an Emacs that does not know the method
// leaves the answers on the socket.
TEST(EmacsBridgeBinary, AnswersMayComeOnTheAnswerChannelEmacsOpened) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);
  emacs.open_channels = true;
  Bridge bridge({"--emacs", socket});
  bridge.send(call(1));
  auto first = emacs.next();
  ASSERT_TRUE(first);
  const std::string path = emacs.channel_path();
  ASSERT_EQ(path.rfind(dir.path + "/answers-", 0), 0u) << path;
  emacs.answer_on_channel(*first, {{"content", json::array({{{"type", "text"}, {"text", "=> 3"}}})}});
  json answer = bridge.response();
  EXPECT_EQ(answer["id"], 1) << answer.dump();
  EXPECT_EQ(answer["result"]["content"][0]["text"], "=> 3");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(path))) << "the FIFO's name was left behind";
  // Both ways at once: the socket's answers still count.
  bridge.send(call(2));
  bridge.send(call(3));
  auto second = emacs.next(), third = emacs.next();
  ASSERT_TRUE(second && third);
  emacs.answer(*third);
  emacs.answer_on_channel(*second);
  json a = bridge.response(), b = bridge.response();
  EXPECT_EQ(json::array({a["id"], b["id"]}), json::array({3, 2}));
  // A late answer on the channel (its request was cancelled) is dropped.
  bridge.send(call(4));
  auto fourth = emacs.next();
  ASSERT_TRUE(fourth);
  bridge.send({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 4}}}});
  ASSERT_TRUE(emacs.next());
  emacs.answer_on_channel(*fourth);
  EXPECT_TRUE(bridge.response(500ms).is_null()) << "a cancelled request was answered";
  // The client may not name a FIFO for Emacs to open.
  bridge.send({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "sly-agent-q/answer-channel"},
               {"params", {{"path", dir.path + "/elsewhere"}}}});
  json refused = bridge.response();
  EXPECT_EQ(refused["id"], 5);
  EXPECT_EQ(refused["error"]["code"], -32601) << refused.dump();
  bridge.close_stdin();
  EXPECT_EQ(bridge.wait_exit(2000ms), 0);
}

TEST(EmacsBridgeBinary, AnEmacsWithoutAnswerChannelsAnswersOnTheSocket) {
  TempDir dir;
  const std::string socket = dir.path + "/mcp.sock";
  FakeEmacs emacs(socket);  // answers the request with Method not found
  Bridge bridge({"--emacs", socket});
  bridge.send(call(1));
  auto first = emacs.next();
  ASSERT_TRUE(first);
  emacs.answer(*first);
  EXPECT_EQ(bridge.response()["id"], 1);
  const std::string path = emacs.channel_path();
  ASSERT_FALSE(path.empty());
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(path))) << "the FIFO's name was left behind";
  bridge.close_stdin();
  EXPECT_EQ(bridge.wait_exit(2000ms), 0);
}
