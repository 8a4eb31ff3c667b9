// A program run as a child for a test (sly-agent-q-mcp, mostly), its stdin
// and stdout pipes, its stderr where the test wants it: the fixture the
// binary's tests share (tests/mcp/test_binary.cpp,
// tests/mcp/test_emacs_bridge.cpp, tests/hostile/hostile_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/unique_fd.hpp"

extern char** environ;

namespace agentq::fixtures {

// Where the child's stderr goes.
enum class ChildStderr {
  Inherit,  // the test's own
  DevNull,
  LogFile,  // a temporary file, read with log() and removed at the end
};

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Runs PROGRAM with ARGS (PROGRAM is argv[0]).
  ChildProcess(const std::string& program, std::vector<std::string> args, ChildStderr stderr_to) {
    int err_fd = -1;
    if (stderr_to == ChildStderr::LogFile) {
      char log_template[] = "/tmp/agentq-mcp-test-XXXXXX";
      err_fd = ::mkstemp(log_template);
      // Appending, as a terminal or a log would: a child that appends through
      // /proc/PID/fd/2 is not overwritten by the server's later lines.
      ::fcntl(err_fd, F_SETFL, ::fcntl(err_fd, F_GETFL) | O_APPEND);
      log_path_ = log_template;
    } else if (stderr_to == ChildStderr::DevNull) {
      err_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    }
    int in[2], out[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (err_fd >= 0) posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    args.insert(args.begin(), program);
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    EXPECT_GT(pid_, 0) << "cannot run " << program;
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    if (err_fd >= 0) ::close(err_fd);
    in_.reset(in[1]);
    out_.reset(out[0]);
  }

  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!log_path_.empty()) ::unlink(log_path_.c_str());
  }

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Writes all of BYTES to the child's stdin; false when it cannot (the
  // child closed it, or stdin was closed here).
  bool write_all(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::write(in_.get(), bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  void close_stdin() { in_.reset(); }

  // The next stdout line, or nullopt when none comes before DEADLINE or
  // stdout ends.
  std::optional<std::string> line(Clock::time_point deadline) {
    for (;;) {
      if (auto nl = buffer_.find('\n', scanned_); nl != std::string::npos) {
        std::string out = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        scanned_ = 0;
        if (keep_lines_) lines_.push_back(out);
        return out;
      }
      scanned_ = buffer_.size();  // a huge line is not scanned again from its start
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left <= std::chrono::milliseconds(0)) return std::nullopt;
      pollfd fd{out_.get(), POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[1 << 16];
      ssize_t n = ::read(out_.get(), chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  std::optional<std::string> line(std::chrono::milliseconds timeout) { return line(Clock::now() + timeout); }

  // The next stdout line parsed as JSON (null when none came); a line that
  // is not JSON fails the test.
  nlohmann::json response(std::chrono::milliseconds timeout) {
    auto text = line(timeout);
    if (!text) return nullptr;
    nlohmann::json value = nlohmann::json::parse(*text, nullptr, false);
    EXPECT_FALSE(value.is_discarded()) << "not JSON on stdout: " << *text;
    return value;
  }

  // The exit status (128 + the signal for a signal), or -1 when the child
  // has not exited within TIMEOUT.
  int wait_exit(std::chrono::milliseconds timeout) {
    auto until = Clock::now() + timeout;
    while (Clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return -1;
  }

  // True while the child runs.
  bool alive() {
    if (pid_ <= 0) return false;
    int status;
    return ::waitpid(pid_, &status, WNOHANG) == 0;
  }

  // The child's thread count, from /proc (0 when unknown).
  int threads() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string text; std::getline(status, text);)
      if (text.rfind("Threads:", 0) == 0) return std::stoi(text.substr(8));
    return 0;
  }

  // The child's resident memory in kB, from /proc (0 when unknown).
  long long rss_kb() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string text; std::getline(status, text);)
      if (text.rfind("VmRSS:", 0) == 0) return std::stoll(text.substr(6));
    return 0;
  }

  // Every stdout line read so far is kept, for lines().
  void keep_lines() { keep_lines_ = true; }
  const std::vector<std::string>& lines() const { return lines_; }

  // What the child wrote to stderr so far (ChildStderr::LogFile).
  std::string log() const {
    std::ifstream file(log_path_);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

 private:
  pid_t pid_ = -1;
  mcp::UniqueFd in_, out_;
  std::string buffer_;
  std::size_t scanned_ = 0;
  bool keep_lines_ = false;
  std::vector<std::string> lines_;
  std::string log_path_;
};

}  // namespace agentq::fixtures
