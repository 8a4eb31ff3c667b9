#include "emacs/async_calls.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "app/services.hpp"
#include "core/idle_reader.hpp"
#include "core/json_fast.hpp"
#include "core/mcp_logging.hpp"
#include "core/mcp_route.hpp"
#include "core/progress_reporter.hpp"
#include "core/session_changes.hpp"
#include "sys/answer_fifo.hpp"
#include "sys/take_over_alarm.hpp"
#include "sys/thread_signals.hpp"
#include "emacs/calls.hpp"

namespace agentq::emacs::async {

namespace {

struct Batch {
  std::uint64_t id = 0;
  std::vector<PendingCall> calls;
  emacs_value approval = nullptr;  // global refs, freed by serve()
  emacs_value hooks = nullptr;
  bool has_hooks = false;
  bool debugger = false;
  bool user = false;         // the person's own calls (CallContext::user_origin)
  bool interactive = false;  // its evaluations' output is handed over as it comes
  std::string output;        // guarded by State::mutex: not handed over yet
  std::atomic<bool> cancelled{false};
  std::atomic<std::uint64_t> lisp_job{0};  // the runtime's job of the call running now, or 0
  std::vector<ToolResult> results;
  // An MCP message instead of CALLS (submit_mcp), and its response.
  std::optional<McpMessage> mcp_message;
  // Its notifications/progress (a progressToken was sent): their lines go
  // out as OUTPUT does, which the connection sends (the runner's alone).
  ProgressReporter progress;
  std::optional<std::string> mcp_response;
  // The bridge's answer channel its response may go on (0: none), and
  // whether anything about it went through Emacs (progress, a log
  // message): then its answer goes that way too, after them.
  std::uint64_t answer_channel = 0;
  std::atomic<bool> spoke_through_emacs{false};
  std::uint64_t definitions = 0;  // session_changes()'s generation when it started
  // Read by the worker from a bridge's request channel (answer_channel's
  // twin): no Elisp job stands for it; its answer goes on the channel, or
  // to the client's connection through sly-agent-q--mcp-direct-answer.
  bool direct = false;
  // Its dangerous calls settled when it was submitted (used by the runner only).
  std::vector<AheadCall> ahead;
};

struct MainWork {
  std::function<void(const Env&)> work;
  std::shared_ptr<Batch> batch;  // may be null
  bool question = false;         // an approval: it asks the person
  // Not inside a synchronous call's wait (serve_work_while_waiting), whose
  // caller's let-bindings are not its own: a request line handed on.
  bool not_while_waiting = false;
  bool started = false;          // guarded by State::mutex
  bool done = false;             // guarded by State::mutex
};

// Where the batch the worker was handed (submit_mcp's INLINE) is.
enum class InlineStep {
  Handed,  // waiting for the idle worker to read it
  Worker,  // the worker runs it
  Owner,   // the runner took it over (or back, unread)
};

struct State {
  std::mutex mutex;
  std::condition_variable runner_cv;  // a batch was queued
  std::condition_variable done_cv;    // main-thread work was done, or a batch cancelled
  std::deque<std::shared_ptr<Batch>> queue;
  std::map<std::uint64_t, std::shared_ptr<Batch>> held;  // waiting for release()
  std::shared_ptr<Batch> running;
  std::deque<std::shared_ptr<MainWork>> main_work;
  std::deque<std::shared_ptr<Batch>> finished;
  // Requests Emacs answered with (later . KEY): the answer once given.
  std::map<std::uint64_t, std::optional<HostAnswer>> later;
  std::atomic<int> fd{-1};
  std::atomic<bool> work_queued{false};  // main_work is not empty
  bool runner_started = false;
  std::uint64_t next_id = 1;
  // The batch handed to the Lisp worker to run itself (null: none).  While
  // there is one it is also `running', and the runner starts nothing else:
  // the runner's own batch, whose first moments run on the worker.
  std::shared_ptr<Batch> inline_batch;
  InlineStep inline_step = InlineStep::Handed;
  bool take_inline = false;  // the runner is to take inline_batch over
  std::uint64_t inline_runs = 0;  // batches the worker answered itself
  std::uint64_t taken_over = 0;   // and those the runner took over or back
  std::uint64_t direct_runs = 0;  // requests the worker read from a bridge itself
  std::uint64_t declined = 0;     // and those it handed to Emacs's thread instead
  // Elisp allows requests read from a bridge to run without Emacs's thread
  // (sly-agent-q-mcp-lisp-on-worker, and no hook for the calls).
  std::atomic<bool> direct_allowed{false};
  std::atomic<bool> options_global{false};  // set_options_global
};

// Never destroyed: the runner thread may still wait on it at exit.
State& state() {
  static State& instance = *new State;
  return instance;
}

// The batch the runner runs (null on other threads).
thread_local std::shared_ptr<Batch> t_batch;

void notify_main() {
  int fd = state().fd.load();
  if (fd < 0) return;
  char byte = '!';
  // Nonblocking: a full pipe already has bytes the filter will read.
  ssize_t written = write(fd, &byte, 1);
  (void)written;
}

ToolResult interrupted_result(const ToolCall& call) {
  ToolResult result;
  result.id = call.id;
  result.success = false;
  result.content = "[ERROR] INTERRUPTED\nThe call was cancelled (sly-agent-q-cancel) before it ran.";
  result.error = result.content;
  if (ToolPtr tool = app::services().registry.resolve(call.name)) result.safety_level = tool->safety_level;
  return result;
}

// What a call of an asynchronous batch may ask of whoever started it.
class AsyncCallContext final : public CallContext {
 public:
  // ADOPTS: this run waits for the evaluation the worker started for the
  // batch (taken over), instead of starting one.
  explicit AsyncCallContext(Batch& batch, bool adopts = false) : batch_(batch), adopts_(adopts) {}
  bool adopts_running_job() const override { return adopts_; }
  // The worker's run of a batch the runner took over: the runner reports it.
  void mark_superseded() override { superseded_ = true; }
  bool superseded() const override { return superseded_; }
  bool poll() override {
    if (batch_.progress.following()) hand_over(batch_.progress.tick());
    return batch_.cancelled.load();
  }
  // An MCP call with a progressToken follows its output (progress).
  bool streams_output() const override { return batch_.progress.following(); }
  bool cancelled() const override { return batch_.cancelled.load(); }
  bool interrupt_is_cancel() const override { return true; }
  void job_queued(std::uint64_t job_id) override { batch_.lisp_job = job_id; }
  bool wants_debugger() const override { return batch_.debugger; }
  bool user_origin() const override { return batch_.user; }
  // An MCP client takes structuredContent; Emacs's own callers take text.
  bool wants_structured() const override { return batch_.mcp_message.has_value(); }
  std::uint64_t interactive_key() const override { return batch_.interactive ? batch_.id : 0; }
  void output(const std::string& text) override {
    if (batch_.progress.following()) {
      hand_over(batch_.progress.output(text));
      return;
    }
    bool first;
    {
      std::lock_guard lock(state().mutex);
      first = batch_.output.empty();
      batch_.output += text;
    }
    // One byte while output waits: the filter takes all there is.
    if (first) notify_main();
  }
  // An MCP client's log message goes out on its connection when the
  // client's level admits it (sly-agent-q--mcp-job-log).  Bounded per
  // call; never fails the call.
  void log_to_client(McpLogLevel level, const std::string& message, const std::string& tool) override {
    if (!batch_.mcp_message || logged_ >= kMaxLogMessagesPerCall) return;
    ++logged_;
    batch_.spoke_through_emacs = true;
    const std::string text = mcp_log_notification(level, message, batch_.mcp_message->id, tool);
    try {
      run_on_main([&](const Env& env) {
        try {
          // A direct request's client is found by its channel.
          env.call(env.intern(batch_.direct ? "sly-agent-q--mcp-direct-log" : "sly-agent-q--mcp-job-log"),
                   {env.integer(static_cast<std::intmax_t>(batch_.direct ? batch_.answer_channel : batch_.id)),
                    env.str(mcp_log_level_name(level)), env.str(text)});
        } catch (const NonLocalExit&) {
          env.raw()->non_local_exit_clear(env.raw());  // a log message never stops the call
        }
      });
    } catch (const NotServed&) {
    }
  }
  // An agent's code question is asked with the job's own approval
  // function and door, as its dangerous calls were
  // (sly-agent-q--approve-agent-code-of-job).
  // An MCP client that chose a log level hears of the question and of a
  // denial, as of its dangerous tools' (and as headless says its refusal).
  HostAnswer approve_in_host(const std::string& form) override {
    static const std::string head = "(sly-agent-q--approve-agent-code ";
    if (form.rfind(head, 0) != 0) return eval_in_host(form);
    static const std::string what = "code that touches the world outside the Lisp session";
    log_to_client(McpLogLevel::Info, what + " waits for the person's approval in Emacs", std::string());
    HostAnswer answer = eval_in_host((batch_.direct ? std::string("(sly-agent-q--mcp-direct-approve-agent-code ")
                                                    : "(sly-agent-q--approve-agent-code-of-job " +
                                                          std::to_string(batch_.id) + " ") +
                                     form.substr(head.size()));
    if (std::optional<std::string> reason = denial_reason(answer))
      log_to_client(McpLogLevel::Notice, what + " was denied in Emacs" + (reason->empty() ? "" : ": " + *reason),
                    std::string());
    return answer;
  }
  HostAnswer eval_in_host(const std::string& form) override {
    HostAnswer answer{false, "the call was cancelled"};
    try {
      run_on_main([&](const Env& env) {
        bool quit = false;
        answer = eval_elisp_for_lisp(env, form, quit);
        if (answer.later) {
          // Registered before the filter returns, so before any command
          // of the person can answer.
          std::lock_guard lock(state().mutex);
          state().later[answer.later].reset();
        }
        if (quit) throw NonLocalExit();  // serve() cancels the batch
      });
    } catch (const NotServed& e) {
      answer = {false, e.what()};
    }
    if (answer.later) answer = wait_later(answer.later);
    return answer;
  }

 private:
  // ANSWER, sly-agent-q--approve-agent-code's value as Elisp printed it:
  // "denied" or ("denied" . "REASON") give the reason (empty for none);
  // anything else (approved, modified, an error) nullopt.
  static std::optional<std::string> denial_reason(const HostAnswer& answer) {
    if (!answer.ok) return std::nullopt;
    if (answer.text == "\"denied\"") return std::string();
    static const std::string head = "(\"denied\" . \"";
    if (answer.text.rfind(head, 0) != 0 || !answer.text.ends_with("\")")) return std::nullopt;
    std::string reason;
    const std::string_view quoted(answer.text.data() + head.size(), answer.text.size() - head.size() - 2);
    for (std::size_t i = 0; i < quoted.size(); ++i) reason += quoted[i] == '\\' && i + 1 < quoted.size() ? quoted[++i] : quoted[i];
    return reason;
  }

  // The person answers through a command (answer_later), so Emacs is free
  // meanwhile.  This thread is the job's owner serving its request: the
  // job's time limit stays paused; a cancellation ends the wait.
  HostAnswer wait_later(std::uint64_t key) {
    State& s = state();
    std::unique_lock lock(s.mutex);
    s.done_cv.wait(lock, [&] { return s.later[key].has_value() || batch_.cancelled.load(); });
    HostAnswer given = s.later[key].value_or(HostAnswer{false, "the call was cancelled"});
    s.later.erase(key);
    return given;
  }

  // LINE, a notification of an MCP call, handed back as its output
  // (sly-agent-q-mcp.el sends it on the client's connection).
  void hand_over(const std::string& line) {
    if (line.empty()) return;
    batch_.spoke_through_emacs = true;
    bool first;
    {
      std::lock_guard lock(state().mutex);
      first = batch_.output.empty();
      batch_.output += line;
      batch_.output += '\n';
    }
    if (first) notify_main();
  }

  Batch& batch_;
  const bool adopts_;
  bool superseded_ = false;
  int logged_ = 0;  // log messages sent
};

// A bridge's request channel (open_request_channel): what the worker has
// read of it and not yet run, up to the next newline.
struct RequestChannel {
  int fd = -1;
  std::string pending;
  bool ended = false;  // its bridge is gone: not waited on any more
};

// The answer channels of MCP connections (open_answer_channel), and the
// request channels beside some of them, under the same ids.
struct Channels {
  std::mutex mutex;  // also held while writing or reading: a channel is not closed under it
  std::map<std::uint64_t, int> fds;
  std::map<std::uint64_t, RequestChannel> requests;
  std::uint64_t next_id = 1;
  std::atomic<std::uint64_t> direct{0};
  std::atomic<std::uint64_t> through_emacs{0};
};

// Never destroyed: the runner may write at exit.
Channels& channels() {
  static Channels& instance = *new Channels;
  return instance;
}

// Writes TEXT on channel ID; false when it could not (it is closed, the
// text is too long for one atomic write, the FIFO is full or its reader
// gone: Emacs sends it then).
bool write_on_channel(std::uint64_t id, const std::string& text) {
  Channels& c = channels();
  std::lock_guard lock(c.mutex);
  auto it = c.fds.find(id);
  if (it == c.fds.end() || !write_answer_line(it->second, text)) return false;
  ++c.direct;
  return true;
}

// The worker has run BATCH, handed to it, to its end (not taken over):
// it is the runner's no more, so that the next request may be handed to
// the worker again, or the runner start the next queued one.  Before its
// answer goes out, since the client's next request may follow at once.
void release_inline(const std::shared_ptr<Batch>& batch) {
  State& s = state();
  bool queued;
  {
    std::lock_guard lock(s.mutex);
    if (s.inline_batch != batch) return;
    s.inline_batch.reset();
    s.running.reset();
    s.take_inline = false;  // an alarm that lost the race: nothing to take
    ++s.inline_runs;
    queued = !s.queue.empty();
  }
  if (queued) s.runner_cv.notify_one();
}

// Who runs a batch: the runner; the Lisp worker itself (a plain
// evaluation handed to it, submit_mcp's INLINE); or the runner taking the
// worker's run over (its evaluation lasted, or asks Emacs something).
enum class RunBy { Runner, Worker, Taker };

// Runs BATCH's calls.  False when this run was superseded (the worker's,
// taken over): the taker's run reports the batch, and this one left it
// untouched.
bool run_batch(const std::shared_ptr<Batch>& batch, RunBy by = RunBy::Runner) {
  AsyncCallContext context(*batch, by == RunBy::Taker);
  ExecutionOptions options;
  options.context = &context;
  if (!batch->ahead.empty())
    options.settled = [batch](const Tool& tool, const json& args) -> std::optional<SettledCall> {
      for (AheadCall& ahead : batch->ahead) {
        if (ahead.used || ahead.tool != tool.name || ahead.arguments != args) continue;
        ahead.used = true;
        if (ahead.failure) return SettledCall{ahead.failure, {}};
        if (ahead.decision) return SettledCall{std::nullopt, *ahead.decision};
        return std::nullopt;  // never asked (a job queued without holding): asked now
      }
      return std::nullopt;
    };
  options.approve = [batch](const Tool& tool, const json& args) {
    ApprovalDecision decision{ApprovalKind::Denied, {}};
    try {
      run_on_main(
          [&](const Env& env) {
            // A direct request has no job's function: the connection's.
            emacs_value approve = batch->approval ? batch->approval : env.intern("sly-agent-q--mcp-direct-approve");
            decision = elisp_approval(env, approve)(tool, args);
          },
          true);
    } catch (const NotServed&) {
    }
    return decision;
  };
  if (batch->has_hooks)
    options.hooks.push_back(
        [batch](HookPhase phase, const std::string& name, const json& args, const ToolResult* result) {
          run_on_main([&](const Env& env) {
            for (const Hook& hook : elisp_hooks(env, batch->hooks)) hook(phase, name, args, result);
          });
        });
  if (batch->mcp_message) {
    // A cancelled message still runs: its calls fail as interrupted, and
    // the client gets its one response.
    McpMessage& message = *batch->mcp_message;
    McpServer& server = app::services_with_tools().server;
    // Counted from the first run's start: a taker's comes later.
    if (by != RunBy::Taker) batch->definitions = session_changes().generation();
    const std::uint64_t definitions = batch->definitions;
    // The worker's run leaves the message for a taker.
    std::optional<std::string> response;
    if (message.simple)
      response = server.tools_call_text(message.simple->id, message.simple->name,
                                        by == RunBy::Worker ? json(message.simple->arguments)
                                                            : std::move(message.simple->arguments),
                                        options);
    else if (!message.parsed)
      response = server.handle(message.text, options);
    else
      response = server.handle_json_text(by == RunBy::Worker ? json(*message.parsed) : std::move(*message.parsed),
                                         options);
    if (context.superseded()) return false;
    batch->mcp_response = std::move(response);
    // The definitions changed: notifications/resources/list_changed, a
    // line of its own before the answer (the connection sends the lines).
    if (batch->mcp_response && session_changes().generation() != definitions)
      batch->mcp_response = std::string(kResourcesListChanged) + "\n" + *batch->mcp_response;
    if (by == RunBy::Worker) release_inline(batch);
    // Straight to the bridge when nothing of it went through Emacs (which
    // would send it later) and it was not cancelled (never answered).
    if (batch->answer_channel && batch->mcp_response) {
      if (!batch->cancelled.load() && !batch->spoke_through_emacs.load() &&
          write_on_channel(batch->answer_channel, *batch->mcp_response))
        batch->mcp_response.reset();  // answered: Emacs only forgets the request
      else
        ++channels().through_emacs;
    }
    return true;
  }
  for (PendingCall& pending : batch->calls) {
    if (!pending.call)
      batch->results.push_back(pending.invalid);
    else if (batch->cancelled.load())
      batch->results.push_back(interrupted_result(*pending.call));
    else
      batch->results.push_back(app::services_with_tools().executor.execute(*pending.call, options));
  }
  return true;
}

// WORK for the main thread, run by serve() later; nobody waits for it.
// NOT_WHILE_WAITING: see MainWork.
void post_to_main(std::function<void(const Env&)> work, bool not_while_waiting = false) {
  State& s = state();
  auto item = std::make_shared<MainWork>();
  item->work = std::move(work);
  item->not_while_waiting = not_while_waiting;
  {
    std::lock_guard lock(s.mutex);
    s.main_work.push_back(std::move(item));
    s.work_queued = true;
  }
  notify_main();
}

// Emacs's side of a batch that has run: its callback, through serve()'s
// finished batches; for a direct request (no Elisp job), only its answer,
// when it could not go on the channel and was not cancelled.
void hand_back(std::shared_ptr<Batch> batch) {
  if (!batch->direct) {
    {
      std::lock_guard lock(state().mutex);
      state().finished.push_back(std::move(batch));
    }
    notify_main();
    return;
  }
  // It defined something: the log collects the runtime's notes meanwhile
  // (a background compile's), as after any call of Emacs's into Lisp.
  if (session_changes().generation() != batch->definitions)
    post_to_main([](const Env& env) { env.call(env.intern("sly-agent-q--lisp-used"), {}); });
  if (!batch->mcp_response || batch->cancelled.load()) return;
  post_to_main([channel = batch->answer_channel, text = std::move(*batch->mcp_response)](const Env& env) {
    env.call(env.intern("sly-agent-q--mcp-direct-answer"),
             {env.integer(static_cast<std::intmax_t>(channel)), env.str(text)});
  });
}

// The batch handed to the worker, when the runner is to take it: back,
// while the worker has not read it; over, by claiming its evaluation
// (Runtime::claim_inline_job).  Null when the worker keeps it (its
// evaluation is not running yet, or has finished: the worker answers it).
// Called with State::mutex held (LOCK), which it may release.
std::shared_ptr<Batch> take_inline_batch(State& s, std::unique_lock<std::mutex>& lock, RunBy& by) {
  s.take_inline = false;
  std::shared_ptr<Batch> batch = s.inline_batch;
  if (!batch) return nullptr;
  if (s.inline_step == InlineStep::Handed) {
    by = RunBy::Runner;  // not read yet: the runner runs it as any batch
  } else {
    if (s.inline_step != InlineStep::Worker) return nullptr;
    lock.unlock();
    const bool claimed = app::services().lisp.claim_inline_job();
    lock.lock();
    if (!claimed || s.inline_batch != batch) return nullptr;
    by = RunBy::Taker;
  }
  s.inline_step = InlineStep::Owner;
  ++s.taken_over;
  return batch;
}

void runner_main() {
  State& s = state();
  for (;;) {
    std::shared_ptr<Batch> batch;
    RunBy by = RunBy::Runner;
    {
      std::unique_lock lock(s.mutex);
      // While the worker runs a batch handed to it, that batch is the
      // runner's: nothing else starts before it ends, here or there.
      s.runner_cv.wait(lock, [&] { return s.take_inline || (!s.inline_batch && !s.queue.empty()); });
      if (s.take_inline) {
        batch = take_inline_batch(s, lock, by);
        if (!batch) continue;
      } else {
        batch = std::move(s.queue.front());
        s.queue.pop_front();
        s.running = batch;
      }
    }
    t_batch = batch;
    try {
      run_batch(batch, by);
    } catch (...) {
      // The executor reports every failure as a result; nothing may end the runner.
    }
    t_batch.reset();
    {
      std::lock_guard lock(s.mutex);
      if (s.inline_batch == batch) s.inline_batch.reset();
      s.running.reset();
    }
    hand_back(std::move(batch));
  }
}

// --- The usual MCP call on the Lisp worker itself (core/idle_reader.hpp)
//
// A plain evaluate_lisp request that finds the runner and the worker idle
// is handed to the worker, which runs the whole call on its own thread
// and writes the answer on the bridge's channel: the runner's wake-up and
// the hand-off back to it are saved.  If its evaluation lasts (2 ms, or
// its time limit if sooner) or asks its owner for something (an approval,
// Emacs), the watcher thread tells the runner, which claims it and waits
// for it as its owner: time limits, cancellation, questions as for any
// batch.  A batch the worker has not read by then the runner takes back.
void start_runner_locked(State& s);

// The Lisp tool of evaluate_lisp is the one registered (not an Elisp
// tool of that name), and asks nothing before it runs.
bool lisp_tool_runs_here() {
  ToolPtr tool = app::services_with_tools().registry.resolve("evaluate_lisp");
  return tool && tool->kind == HandlerKind::Lisp && tool->safety_level != SafetyLevel::Dangerous;
}

class WorkerLane final : public IdleReader {
 public:
  // On the main thread: the descriptors, the watcher, and the runtime's
  // reader set.  False when any is missing (inline calls are then off).
  bool start() {
    if (started_) return ok_;
    started_ = true;
    hand_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    // What the worker waits on: the hand-over (key 0) and each bridge's
    // request channel (key: its id).
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (hand_fd_ < 0 || !alarm_.ok() || epoll_fd_ < 0) return false;
    epoll_event hand{};
    hand.events = EPOLLIN;
    hand.data.u64 = 0;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, hand_fd_, &hand) < 0) return false;
    {
      ThreadStartMask mask;
      std::thread([this] { watch(); }).detach();
    }
    app::services().lisp.set_idle_reader(this);
    ok_ = true;
    return true;
  }

  // On the main thread, with State::mutex held: BATCH to the worker.
  void hand(State& s, std::shared_ptr<Batch> batch) {
    s.running = batch;
    s.inline_batch = std::move(batch);
    s.inline_step = InlineStep::Handed;
    // Unread by then (a worker still polling after another caller's job,
    // or held), the runner takes it back.
    alarm_.arm(std::chrono::steady_clock::now() + kUnreadTakeBack);
    signal(hand_fd_);
  }

  int fd() const override { return epoll_fd_; }

  // The request channel ID (its descriptor FD) is waited on too; with
  // Channels::mutex held.
  bool watch_requests(std::uint64_t id, int fd) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = id;
    return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) == 0;
  }
  void unwatch_requests(int fd) { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

  void read() override {
    epoll_event events[16];
    const int ready = epoll_wait(epoll_fd_, events, 16, 0);
    bool handed = false;
    // A bridge's requests first: one sent before a request that was handed
    // (read from the socket after it) runs first.
    for (int i = 0; i < ready; ++i) {
      // A worker retired inside a call (taken over, then abandoned) reads
      // no more: its successor does.
      if (!app::services().lisp.on_worker_thread()) return;
      if (events[i].data.u64 == 0)
        handed = true;
      else
        read_requests(events[i].data.u64);
    }
    if (handed && app::services().lisp.on_worker_thread()) run_handed();
  }

 private:
  void run_handed() {
    drain(hand_fd_);
    State& s = state();
    std::shared_ptr<Batch> batch;
    {
      std::lock_guard lock(s.mutex);
      if (!s.inline_batch || s.inline_step != InlineStep::Handed) return;
      if (s.inline_batch->cancelled.load()) {
        // Cancelled before it started: the runner has it answered as
        // interrupted, without starting its evaluation.
        s.take_inline = true;
        s.runner_cv.notify_one();
        return;
      }
      s.inline_step = InlineStep::Worker;
      batch = s.inline_batch;
    }
    run_here(std::move(batch));
  }

  // BATCH, the runner's now, run on this thread (the worker); handed back
  // unless the runner took it over (then the runner does).
  static void run_here(std::shared_ptr<Batch> batch) {
    t_batch = batch;
    bool answered = false;
    try {
      answered = run_batch(batch, RunBy::Worker);
    } catch (...) {
      // As on the runner: the executor reports failures as results.  Ours
      // to answer unless the runner took it over meanwhile.
      std::lock_guard lock(state().mutex);
      answered = state().inline_step != InlineStep::Owner || state().inline_batch != batch;
    }
    t_batch.reset();
    if (!answered) return;  // taken over: the runner answers it
    release_inline(batch);  // if run_batch has not (a call that threw)
    hand_back(std::move(batch));
  }

  // Request channel ID with what its FIFO has now appended to its unread
  // text, or null when it is closed; with Channels::mutex held.
  RequestChannel* filled(Channels& c, std::uint64_t id) {
    auto it = c.requests.find(id);
    if (it == c.requests.end()) return nullptr;
    fill(it->second);
    return &it->second;
  }

  // Appends what CHANNEL's FIFO has now to its unread text; with
  // Channels::mutex held.
  void fill(RequestChannel& channel) {
    char chunk[8192];
    for (;;) {
      ssize_t n = ::read(channel.fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 && !channel.ended) {
        // No writer left (the bridge went away; Emacs closes the channel
        // when it sees the connection end): an end stays readable, so it
        // is not waited on.
        channel.ended = true;
        unwatch_requests(channel.fd);
      }
      if (n <= 0) return;
      channel.pending.append(chunk, static_cast<std::size_t>(n));
    }
  }

  // Reads what the request channel ID has; runs each whole line, until
  // no whole line is left (running one may read the next: cancel_waiting).
  void read_requests(std::uint64_t id) {
    while (read_lines(id)) {
    }
  }

  // One pass of read_requests; false when it found no whole line.
  bool read_lines(std::uint64_t id) {
    std::vector<std::string> lines;
    {
      Channels& c = channels();
      std::lock_guard lock(c.mutex);
      RequestChannel* channel = filled(c, id);
      if (!channel) return false;
      std::size_t start = 0;
      for (std::size_t newline; (newline = channel->pending.find('\n', start)) != std::string::npos;
           start = newline + 1)
        lines.emplace_back(channel->pending, start, newline - start);
      channel->pending.erase(0, start);
      // The bridge writes lines of at most PIPE_BUF bytes: more is not its.
      if (channel->pending.size() > kMaxPendingRequest) channel->pending.clear();
    }
    if (lines.empty()) return false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (!app::services().lisp.on_worker_thread()) {
        // Retired inside a call: what is left goes to Emacs's thread.
        for (std::size_t j = i; j < lines.size(); ++j) decline(id, std::move(lines[j]));
        return false;
      }
      // The bridge's copy of a cancellation (the socket has the other):
      // its request, read with it, never runs; one already running was
      // stopped through the socket.
      if (cancelled_request(lines[i])) continue;
      bool cancelled_later = false;
      if (std::optional<json> request_id = request_id_of(lines[i]))
        for (std::size_t j = i + 1; j < lines.size() && !cancelled_later; ++j)
          cancelled_later = cancelled_request(lines[j]) == request_id;
      if (!cancelled_later) run_direct(id, std::move(lines[i]));
    }
    return true;
  }

  // LINE's params.requestId when it is a notifications/cancelled.
  static std::optional<json> cancelled_request(const std::string& line) {
    if (line.find("notifications/cancelled") == std::string::npos) return std::nullopt;
    mcp::Route route = mcp::route_message(line);
    if (route.kind != mcp::Route::Kind::Cancel) return std::nullopt;
    return route.request_id;
  }

  // LINE's id when it is a tools/call the fast reader reads.
  static std::optional<json> request_id_of(const std::string& line) {
    std::optional<SimpleToolsCall> call = parse_simple_tools_call(line);
    if (!call) return std::nullopt;
    return std::move(call->id);
  }

  // Whether the bridge's copy of a cancellation of request ID has come on
  // channel CHANNEL (read now, kept unread): the socket's copy may have
  // come before this request ran, and found nothing to stop.
  bool cancel_waiting(std::uint64_t channel, const json& id) {
    Channels& c = channels();
    std::lock_guard lock(c.mutex);
    RequestChannel* waiting = filled(c, channel);
    if (!waiting) return false;
    for (std::size_t start = 0, newline; (newline = waiting->pending.find('\n', start)) != std::string::npos;
         start = newline + 1)
      if (cancelled_request(waiting->pending.substr(start, newline - start)) == id) return true;
    return false;
  }

  // LINE, read from the bridge of request channel CHANNEL: run here as a
  // batch handed over would be, when the call is plain and nothing else
  // runs or waits; else handed to Emacs's thread as if it had come on the
  // socket (sly-agent-q--mcp-direct-line), which queues it as usual.
  void run_direct(std::uint64_t channel, std::string line) {
    State& s = state();
    std::shared_ptr<Batch> batch;
    std::optional<SimpleToolsCall> call = parse_simple_tools_call(line);
    if (call && call->name == "evaluate_lisp" && call->progress_token.is_null() && lisp_tool_runs_here()) {
      std::lock_guard lock(s.mutex);
      if (s.direct_allowed.load() && s.options_global.load() && !s.running && s.queue.empty() && s.held.empty() && !s.inline_batch &&
          !s.take_inline && has_channel()) {
        batch = std::make_shared<Batch>();
        batch->id = s.next_id++;
        batch->direct = true;
        batch->answer_channel = channel;
        McpMessage message;
        message.id = call->id;
        message.simple = std::move(*call);
        batch->mcp_message = std::move(message);
        s.running = batch;
        s.inline_batch = batch;
        s.inline_step = InlineStep::Worker;
        ++s.direct_runs;
        start_runner_locked(s);  // the batch's taker, should it last
      }
    }
    if (batch && cancel_waiting(channel, batch->mcp_message->id)) {
      // Cancelled before it started: never run, never answered.
      batch->cancelled = true;
      release_inline(batch);
      return;
    }
    if (!batch) return decline(channel, std::move(line));
    run_here(std::move(batch));
  }

  // LINE, read on CHANNEL, to Emacs's thread as if it came on the socket.
  static void decline(std::uint64_t channel, std::string line) {
    {
      std::lock_guard lock(state().mutex);
      ++state().declined;
    }
    post_to_main(
        [channel, text = std::move(line)](const Env& env) {
          env.call(env.intern("sly-agent-q--mcp-direct-line"),
                   {env.integer(static_cast<std::intmax_t>(channel)), env.str(text)});
        },
        true);
  }

 public:
  void job_started(std::chrono::steady_clock::time_point take_over_at) override { alarm_.arm(take_over_at); }

  void owner_needed() override { alarm_.ask(); }

 private:
  static constexpr std::size_t kMaxPendingRequest = 1 << 16;
  static constexpr auto kUnreadTakeBack = std::chrono::milliseconds(5);

  static void signal(int fd) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(fd, &one, sizeof one);
  }
  static void drain(int fd) {
    std::uint64_t count;
    [[maybe_unused]] ssize_t got = ::read(fd, &count, sizeof count);
  }
  // The moment the runner is to take the inline batch (alarm_): a hand
  // that was not read, or an evaluation that lasts or asks its owner.
  void watch() {
    // Never stopped: the lane lives as long as Emacs.
    alarm_.watch([this](bool asked) {
      State& s = state();
      {
        std::lock_guard lock(s.mutex);
        if (!s.inline_batch || s.inline_step == InlineStep::Owner || s.take_inline) return;
        if (!asked && !alarm_.due_now()) return;
        s.take_inline = true;
      }
      s.runner_cv.notify_one();
    });
  }

  bool started_ = false;  // main thread only
  bool ok_ = false;
  int hand_fd_ = -1;
  int epoll_fd_ = -1;
  sys::TakeOverAlarm alarm_;
};

// Never destroyed: the worker and the watcher may use it at exit.
WorkerLane& worker_lane() {
  static WorkerLane& instance = *new WorkerLane;
  return instance;
}

}  // namespace

void set_channel(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  state().fd.store(fd);
}

bool has_channel() { return state().fd.load() >= 0; }

namespace {

// Starts the runner the first time.  Called with State::mutex held.
void start_runner_locked(State& s) {
  if (!s.runner_started) {
    // Async signals stay with Emacs's own threads; its faults are its own.
    ThreadStartMask mask;
    std::thread(runner_main).detach();
    s.runner_started = true;
  }
}

// Puts BATCH on the queue, starting the runner the first time.  Called
// with State::mutex held.
void enqueue_locked(State& s, std::shared_ptr<Batch> batch) {
  s.queue.push_back(std::move(batch));
  start_runner_locked(s);
}

std::uint64_t queue_batch(std::shared_ptr<Batch> batch, emacs_value approval, emacs_value hooks, bool has_hooks,
                          std::vector<AheadCall> ahead, bool hold) {
  State& s = state();
  batch->approval = approval;
  batch->hooks = hooks;
  batch->has_hooks = has_hooks;
  batch->ahead = std::move(ahead);
  std::uint64_t id;
  {
    std::lock_guard lock(s.mutex);
    id = batch->id = s.next_id++;
    if (hold)
      s.held.emplace(id, std::move(batch));
    else
      enqueue_locked(s, std::move(batch));
  }
  if (!hold) s.runner_cv.notify_one();
  return id;
}

}  // namespace

std::uint64_t submit(std::vector<PendingCall> calls, emacs_value approval, emacs_value hooks, bool has_hooks,
                     bool debugger, bool interactive, std::vector<AheadCall> ahead, bool hold, bool user) {
  auto batch = std::make_shared<Batch>();
  batch->debugger = debugger;
  batch->user = user;
  batch->interactive = interactive;
  batch->calls = std::move(calls);
  return queue_batch(std::move(batch), approval, hooks, has_hooks, std::move(ahead), hold);
}

namespace {

// BATCH (a message, parsed) may run on the worker itself: a plain
// evaluation of the Lisp tool, with nothing for Emacs's thread to do
// first (no hook, no question).
bool worker_may_run(const Batch& batch) {
  if (batch.has_hooks || !batch.ahead.empty() || !batch.mcp_message) return false;
  const McpMessage& message = *batch.mcp_message;
  const bool plain = message.simple ? message.simple->name == "evaluate_lisp" && message.simple->progress_token.is_null()
                                    : message.parsed && mcp::is_plain_evaluation(*message.parsed);
  return plain && lisp_tool_runs_here();
}

// Hands BATCH to the worker when it and the runner are idle; false when
// it must be queued.
bool hand_to_worker(const std::shared_ptr<Batch>& batch) {
  if (!app::services().lisp.worker_idle() || !worker_lane().start()) return false;
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.running || !s.queue.empty() || s.inline_batch || s.take_inline) return false;
  start_runner_locked(s);  // the batch's taker, should it last
  batch->id = s.next_id++;
  worker_lane().hand(s, batch);
  return true;
}

}  // namespace

std::uint64_t submit_mcp(McpMessage message, emacs_value approval, emacs_value hooks, bool has_hooks,
                         std::vector<AheadCall> ahead, bool hold, std::uint64_t answer_channel, bool on_worker) {
  auto batch = std::make_shared<Batch>();
  batch->answer_channel = answer_channel;
  if (message.parsed && message.parsed->is_object())
    batch->progress = ProgressReporter(request_progress_token(*message.parsed));
  batch->mcp_message = std::move(message);
  if (on_worker && !hold) {
    batch->approval = approval;
    batch->hooks = hooks;
    batch->has_hooks = has_hooks;
    batch->ahead = std::move(ahead);
    if (worker_may_run(*batch) && hand_to_worker(batch)) return batch->id;
    ahead = std::move(batch->ahead);
  }
  return queue_batch(std::move(batch), approval, hooks, has_hooks, std::move(ahead), hold);
}

InlineCounts inline_counts() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return {s.inline_runs, s.taken_over, s.direct_runs, s.declined};
}

std::uint64_t open_answer_channel(const std::string& path) {
  std::string why;
  int fd = open_answer_fifo(path, why);
  if (fd < 0) throw std::runtime_error(why);
  Channels& c = channels();
  std::lock_guard lock(c.mutex);
  std::uint64_t id = c.next_id++;
  c.fds.emplace(id, fd);
  return id;
}

namespace {

// Cancels the direct request of channel CHANNEL running now (ID, or any
// when null), as cancel() does a job; false when there is none.
bool cancel_direct_locked(State& s, std::uint64_t channel, const json* id) {
  const std::shared_ptr<Batch>& batch = s.running;
  if (!batch || !batch->direct || batch->answer_channel != channel || (id && batch->mcp_message->id != *id))
    return false;
  batch->cancelled = true;
  if (std::uint64_t job = batch->lisp_job.load()) app::services().lisp.cancel(job);
  if (s.inline_batch == batch && s.inline_step != InlineStep::Owner) s.take_inline = true;
  return true;
}

}  // namespace

void close_answer_channel(std::uint64_t id) {
  {
    Channels& c = channels();
    std::lock_guard lock(c.mutex);
    if (auto it = c.requests.find(id); it != c.requests.end()) {
      worker_lane().unwatch_requests(it->second.fd);
      ::close(it->second.fd);
      c.requests.erase(it);
    }
    auto it = c.fds.find(id);
    if (it == c.fds.end()) return;
    ::close(it->second);
    c.fds.erase(it);
  }
  // Its client is gone: so is the request it was running.
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (!cancel_direct_locked(s, id, nullptr)) return;
  }
  s.runner_cv.notify_one();
}

void open_request_channel(const std::string& path, std::uint64_t channel) {
  std::string why;
  // Nobody else would read what comes there: no request channel without
  // a Lisp to read it.
  if (!app::services_with_tools().lisp.status().alive) throw std::runtime_error("the Lisp session is not running");
  if (!worker_lane().start()) throw std::runtime_error("the Lisp thread cannot wait on a request channel here");
  int fd = open_request_fifo(path, why);
  if (fd < 0) throw std::runtime_error(why);
  Channels& c = channels();
  std::lock_guard lock(c.mutex);
  if (!c.fds.contains(channel) || c.requests.contains(channel)) {
    ::close(fd);
    throw std::runtime_error("no answer channel " + std::to_string(channel) + " to read requests beside");
  }
  if (!worker_lane().watch_requests(channel, fd)) {
    ::close(fd);
    throw std::runtime_error(std::string("the Lisp thread cannot wait on ") + path);
  }
  c.requests.emplace(channel, RequestChannel{fd, {}});
}

void allow_direct_requests(bool allowed) { state().direct_allowed.store(allowed); }

bool direct_request_running() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.running && s.running->direct;
}

void set_options_global(bool global) { state().options_global.store(global); }

bool cancel_direct(std::uint64_t channel, const json& id) {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (!cancel_direct_locked(s, channel, &id)) return false;
  }
  s.runner_cv.notify_one();
  return true;
}

AnswerCounts answer_counts() { return {channels().direct.load(), channels().through_emacs.load()}; }

bool release(std::uint64_t id, std::vector<ApprovalDecision> decisions) {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    auto it = s.held.find(id);
    if (it == s.held.end()) return false;
    std::shared_ptr<Batch> batch = std::move(it->second);
    s.held.erase(it);
    std::size_t next = 0;
    for (AheadCall& ahead : batch->ahead) {
      if (!ahead.asks()) continue;
      ahead.decision = next < decisions.size() ? std::move(decisions[next]) : ApprovalDecision{};
      ++next;
    }
    enqueue_locked(s, std::move(batch));
  }
  s.runner_cv.notify_one();
  return true;
}

bool withdraw(const Env& env, std::uint64_t id) {
  State& s = state();
  std::shared_ptr<Batch> batch;
  {
    std::lock_guard lock(s.mutex);
    auto it = std::find_if(s.queue.begin(), s.queue.end(), [&](const auto& queued) { return queued->id == id; });
    if (it != s.queue.end()) {
      batch = std::move(*it);
      s.queue.erase(it);
    } else if (auto held = s.held.find(id); held != s.held.end()) {
      batch = std::move(held->second);
      s.held.erase(held);
    } else {
      return false;
    }
  }
  env.raw()->free_global_ref(env.raw(), batch->approval);
  env.raw()->free_global_ref(env.raw(), batch->hooks);
  return true;
}

bool cancel(std::uint64_t id) {
  State& s = state();
  bool found = false;
  {
    std::lock_guard lock(s.mutex);
    for (const auto& batch : s.queue)
      if (batch->id == id) found = true, batch->cancelled = true;
    if (auto held = s.held.find(id); held != s.held.end()) found = true, held->second->cancelled = true;
    if (s.running && s.running->id == id) {
      found = true;
      s.running->cancelled = true;
      // The runtime stops its job as it stops one for C-g or a timeout.
      if (std::uint64_t job = s.running->lisp_job.load()) app::services().lisp.cancel(job);
      // Handed to the worker: the runner takes it, to stop it as its owner.
      if (s.inline_batch == s.running && s.inline_step != InlineStep::Owner) s.take_inline = true;
    }
  }
  s.runner_cv.notify_one();
  s.done_cv.notify_all();  // the runner may be waiting for the main thread
  return found;
}

bool break_into(std::uint64_t id) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.running || s.running->id != id || !s.running->debugger) return false;
  std::uint64_t job = s.running->lisp_job.load();
  return job != 0 && app::services().lisp.break_job(job);
}

bool answer_later(std::uint64_t key, HostAnswer answer) {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    auto it = s.later.find(key);
    if (it == s.later.end() || it->second) return false;
    answer.later = 0;
    it->second = std::move(answer);
  }
  s.done_cv.notify_all();
  return true;
}

bool later_pending(std::uint64_t key) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.later.find(key);
  return it != s.later.end() && !it->second;
}

void run_on_main(const std::function<void(const Env&)>& work, bool question) {
  if (const Env* env = current_env()) {
    work(*env);
    return;
  }
  State& s = state();
  if (!has_channel()) throw NotServed("no Emacs main thread serves this thread's requests");
  auto item = std::make_shared<MainWork>();
  item->work = work;
  item->batch = t_batch;
  item->question = question;
  {
    std::lock_guard lock(s.mutex);
    s.main_work.push_back(item);
    s.work_queued = true;
  }
  notify_main();
  // Once started, WORK runs to its end (it uses this frame's captures);
  // before that, a cancelled batch stops waiting.
  std::unique_lock lock(s.mutex);
  s.done_cv.wait(lock, [&] {
    return item->done || (!item->started && item->batch && item->batch->cancelled.load());
  });
  if (!item->done) {
    item->work = nullptr;  // never to run: its captures die with this frame
    throw NotServed("the call was cancelled");
  }
}

namespace {

// Not re-entered, but for the work that asks nothing: an approval prompt
// reads events, which may run the filter again.  The outer call goes on
// until the queues are empty.
bool g_serving = false;

struct Serving {
  Serving() : outer(g_serving) { g_serving = true; }
  ~Serving() { g_serving = outer; }
  bool outer;
};

// Runs the main thread's queued work and, when FINISHED_TOO, hands back
// the finished batches as ((ID . RESULTS) …).  NO_QUESTIONS: the approval
// questions are left queued.
emacs_value serve_queues(const Env& env, bool finished_too, bool no_questions = false);

}  // namespace

void serve_work_while_waiting(const Env& env) {
  if (!state().work_queued.load(std::memory_order_relaxed) || g_serving) return;
  Serving serving;
  serve_queues(env, false);
}

emacs_value serve(const Env& env, bool no_questions) {
  if (g_serving && !no_questions) return Env::sym().nil;
  Serving serving;
  return serve_queues(env, true, no_questions);
}

namespace {

// (ID :output TEXT), for the output of batch ID.
emacs_value output_entry(const Env& env, std::uint64_t id, const std::string& text) {
  emacs_value entry[] = {env.integer(static_cast<std::intmax_t>(id)), env.intern(":output"), env.str(text)};
  return env.call(Env::sym().list, 3, entry);
}

emacs_value serve_queues(const Env& env, bool finished_too, bool no_questions) {
  State& s = state();
  std::vector<emacs_value> done;
  std::string output;  // of the batch popped from the finished ones
  for (;;) {
    std::shared_ptr<MainWork> item;
    std::shared_ptr<Batch> batch;
    {
      std::lock_guard lock(s.mutex);
      // Inside a synchronous call's wait (FINISHED_TOO false), not the
      // lines handed on: they run as the socket's do, from the filter.
      auto next = std::find_if(s.main_work.begin(), s.main_work.end(), [&](const auto& work) {
        return !(no_questions && work->question) && !(!finished_too && work->not_while_waiting);
      });
      if (next != s.main_work.end()) {
        item = std::move(*next);
        s.main_work.erase(next);
        s.work_queued = !s.main_work.empty();
      } else if (finished_too && !s.finished.empty()) {
        batch = std::move(s.finished.front());
        s.finished.pop_front();
        output.swap(batch->output);
      } else {
        break;
      }
    }
    if (item) {
      std::function<void(const Env&)> work;
      {
        std::lock_guard lock(s.mutex);
        work = item->work;  // empty once its waiter gave up
        item->started = true;
      }
      if (work) {
        try {
          work(env);
        } catch (const NonLocalExit&) {
          // C-g at an approval prompt (or in a hook, a handler, a form for
          // Lisp) cancels that batch; the quit is taken as said to it.
          if (!env.clear_unless_quit()) env.raw()->non_local_exit_clear(env.raw());
          if (item->batch) item->batch->cancelled = true;
        } catch (...) {
          // The work reports its own failures.
        }
      }
      {
        std::lock_guard lock(s.mutex);
        item->done = true;
      }
      s.done_cv.notify_all();
      continue;
    }
    // Its output came before its results.
    if (!output.empty()) done.push_back(output_entry(env, batch->id, output));
    output.clear();
    emacs_value list;
    if (batch->mcp_message) {
      list = batch->mcp_response ? env.str(*batch->mcp_response) : Env::sym().nil;
    } else {
      std::vector<emacs_value> results;
      for (const ToolResult& result : batch->results) results.push_back(result_to_plist(env, result));
      list = env.call(Env::sym().list, static_cast<ptrdiff_t>(results.size()), results.data());
    }
    emacs_value pair[] = {env.integer(static_cast<std::intmax_t>(batch->id)), list};
    done.push_back(env.call(env.intern("cons"), 2, pair));
    env.raw()->free_global_ref(env.raw(), batch->approval);
    env.raw()->free_global_ref(env.raw(), batch->hooks);
  }
  if (finished_too) {
    // The running batch's output so far.  Taken after the finished ones:
    // a batch that finished meanwhile hands its output over with its results.
    std::shared_ptr<Batch> running;
    {
      std::lock_guard lock(s.mutex);
      running = s.running;
      if (running) output.swap(running->output);
    }
    if (!output.empty()) done.push_back(output_entry(env, running->id, output));
  }
  return env.call(Env::sym().list, static_cast<ptrdiff_t>(done.size()), done.data());
}

}  // namespace

}  // namespace agentq::emacs::async
