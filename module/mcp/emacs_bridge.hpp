// sly-agent-q-mcp --emacs: the client's requests (stdin) go to the Emacs
// that serves MCP on a local socket, and its responses come back (stdout).
// No Lisp runs here.  One thread, poll(): nothing the client or Emacs does
// can make it stop answering.
//
// Exactly one response per request, but for a request the client
// cancelled (notifications/cancelled), as the MCP spec has it: Emacs, as
// the headless server, answers a cancelled call only if it was running
// (INTERRUPTED); the bridge passes that answer on, and answers a
// cancelled request with no error of its own.  While requests are outstanding the
// bridge pings Emacs (ids of its own, never passed on).  A request is
// answered by the bridge itself, with an error, when Emacs is not serving,
// goes away before answering, or has said nothing at all (not even to a
// ping) for the timeout: so a call waiting for the person's approval waits
// as long as Emacs is alive, and a stuck Emacs costs at most the timeout.
// A late answer to a request already answered is dropped.  After an error
// the next request connects again.
//
// The answers of tools/call requests mostly come another way: after it
// connects, the bridge makes a FIFO beside the socket (mode 0600) and asks
// Emacs to open it (sly-agent-q/answer-channel, a method of the bridge's
// own: a client that sends it is told it does not exist); Emacs's runner
// then writes an answer there itself, skipping Emacs's thread, unless
// something about the call went through Emacs first (progress, a log
// message).  Its name is removed once Emacs answered.  Lines from the
// FIFO are read as lines from the socket.
//
// With the answer channel, the bridge asks for a request channel too (a
// second FIFO, "requests" in the same request): when Emacs accepts it,
// a plain evaluate_lisp request sent while nothing else is outstanding
// goes there instead of to the socket, and Emacs's idle Lisp thread reads
// and runs it itself, answering on the answer channel (Emacs's thread is
// not woken at all; if Lisp is not idle, the request is handed on to
// Emacs's thread as if it had come on the socket).  While such a request
// is outstanding, the client's further calls (tools/call, resources/read,
// prompts/get, batches) wait here, so that they reach Emacs after it, in
// the order sent; the rest (cancellations, pings, lists) goes on at once.
// Its cancellation goes both ways: on the socket (to stop it running) and
// after it on the FIFO (so that, not read yet, it never runs).
//
// The bridge answers ping itself (the client asks whether its server
// lives), and initialize when Emacs is not there, so that an agent started
// before Emacs still connects: with the core's dispatcher, over no tools.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/executor.hpp"
#include "core/jsonrpc.hpp"
#include "core/registry.hpp"
#include "mcp/line_splitter.hpp"
#include "mcp/line_writer.hpp"
#include "mcp/unique_fd.hpp"

namespace agentq::mcp {

namespace bridge_error {
inline constexpr int kNotServing = -32000;  // no Emacs at the socket, or it went away
inline constexpr int kTimeout = -32001;     // Emacs said nothing for the timeout
}  // namespace bridge_error

struct BridgeOptions {
  std::string socket;                          // the local socket Emacs listens on
  std::chrono::milliseconds timeout{30000};    // --emacs-timeout
  std::chrono::milliseconds ping_interval{1000};
};

class EmacsBridge {
 public:
  EmacsBridge(BridgeOptions options, int in_fd, LineWriter& out);
  ~EmacsBridge();
  EmacsBridge(const EmacsBridge&) = delete;
  EmacsBridge& operator=(const EmacsBridge&) = delete;

  // Until stdin ends and every request read has been answered.
  void run();

 private:
  using Clock = std::chrono::steady_clock;
  struct Outstanding {
    nlohmann::json id;
    Clock::time_point sent;
  };

  void read_client();
  void read_emacs();
  void read_answers();
  // Reads what FD has, each whole line to on_emacs_line (LINES keeps the
  // rest); read()'s result.
  ssize_t read_emacs_lines(int fd, LineSplitter& lines);
  void open_answer_channel();
  void close_answer_channel();
  void remove_answers_name();
  // LINE sent on the request channel, when it may go there (see above).
  bool send_direct(const Line& line, const std::string& method, const std::vector<std::pair<nlohmann::json, std::string>>& ids);
  // The calls that waited for the direct request, sent on now.
  void release_held_back();
  void flush_emacs();
  void on_client_line(const Line& line);
  void on_emacs_line(const Line& line);
  bool connect();
  void lost(const std::string& why);
  void expire(Clock::time_point now);
  void ping(Clock::time_point now);
  Clock::time_point next_ping() const;
  Clock::time_point next_wakeup(Clock::time_point now) const;
  void respond(std::string_view text);
  void respond_error(const nlohmann::json& id, int code, const std::string& message);
  std::string not_serving(const std::string& why) const;

  BridgeOptions options_;
  Registry local_registry_;  // empty: the local answers need no tool
  Executor local_executor_{local_registry_};
  McpServer local_server_{local_executor_};
  int in_fd_;
  LineWriter& out_;
  bool client_open_ = true;
  LineSplitter from_client_;
  LineSplitter from_emacs_;
  UniqueFd emacs_;
  // The answer channel of this connection: the FIFO's read end, a write
  // end of the bridge's own (its reader never sees an end while Emacs
  // lives: the socket says when it goes), and its name until Emacs
  // answered the request to open it.
  UniqueFd answers_;
  UniqueFd answers_kept_open_;
  std::string answers_path_;
  LineSplitter from_answers_;
  // The request channel: the FIFO Emacs's Lisp thread reads (a write end
  // opened read-write, so that a write never fails for want of a reader),
  // its name until Emacs answered, and whether Emacs accepted it.
  UniqueFd requests_;
  std::string requests_path_;
  bool direct_ = false;
  // The request sent on it, outstanding (its key), and the client's
  // lines that wait for its answer, in order.
  std::optional<std::string> direct_key_;
  std::deque<Line> held_back_;
  std::string to_emacs_;         // bytes for Emacs, the first TO_EMACS_SENT_ of them written
  std::size_t to_emacs_sent_ = 0;
  // The client is not read while this much waits here (its pipe then
  // fills and its writes wait): a client that floods cannot fill this
  // process's memory.  Emacs refuses requests past
  // sly-agent-q-mcp-max-queued-requests itself.
  static constexpr std::size_t kMaxHeldBack = 1024;                     // lines
  static constexpr std::size_t kMaxToEmacsBytes = std::size_t{16} << 20;  // bytes
  bool client_waits() const { return held_back_.size() >= kMaxHeldBack || to_emacs_.size() - to_emacs_sent_ >= kMaxToEmacsBytes; }
  std::string connect_error_;  // why the last connection failed
  std::map<std::string, Outstanding> outstanding_;  // by the id's JSON text
  // Requests the client cancelled before their answer came, newest last
  // (at most kMaxCancelled): an answer from Emacs is still passed on.
  std::deque<std::string> cancelled_;
  Clock::time_point last_heard_{};  // the last line from Emacs
  std::uint64_t pings_ = 0;
  bool ping_pending_ = false;
  Clock::time_point ping_sent_{};
};

}  // namespace agentq::mcp
