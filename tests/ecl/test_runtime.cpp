// The ECL runtime without Emacs: evaluation rules of the evaluate-lisp
// contract and the hostile cases, each followed by a working (+ 1 2).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>
#include <vector>

#include "ecl/runtime.hpp"

namespace agentq::ecl {
namespace {

using namespace std::chrono_literals;

EvalOutcome run(const EvalRequest& request) {
  NullCallContext context;
  return Runtime::instance().evaluate(request, context);
}

EvalOutcome eval(const std::string& code, std::chrono::milliseconds timeout = 30s,
                 const std::string& package = "") {
  EvalRequest request;
  request.code = code;
  request.package = package;
  request.timeout = timeout;
  return run(request);
}

void expect_alive() {
  EvalOutcome outcome = eval("(+ 1 2)");
  EXPECT_TRUE(outcome.success);
  EXPECT_EQ(outcome.text, "=> 3");
}

TEST(Runtime, BootsAndEvaluates) {
  Runtime::instance().ensure_booted();
  RuntimeStatus status = Runtime::instance().status();
  EXPECT_TRUE(status.alive);
  EXPECT_GT(status.boot_ms, 0);
  expect_alive();
}

// What an Emacs serving MCP does as its server starts: the boot starts and
// the call returns; the runtime comes up with no call made (each test runs
// in a process of its own: nothing booted it before).
TEST(Runtime, StartBootReturnsAndTheRuntimeComesUpWithoutACall) {
  Runtime::instance().start_boot();
  Runtime::instance().start_boot();  // again, while booting or booted: nothing more
  bool alive = false;
  for (int i = 0; i < 2000 && !alive; ++i) {  // up to 20 s: a stalled machine
    alive = Runtime::instance().status().alive;
    if (!alive) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(alive);
  EXPECT_EQ(Runtime::instance().status().jobs, 0u);
  Runtime::instance().ensure_booted();  // returns: booted
  expect_alive();
}

// A caller whose next call follows at once (Emacs's own synchronous calls).
class BurstCallContext final : public CallContext {
 public:
  bool calls_in_bursts() const override { return true; }
};

// The worker polls for the next job only after a burst caller's: after
// anyone else's (an MCP client's) it sleeps at once.  Either way each next
// job wakes it, whether it comes at once or later.
TEST(Runtime, AWorkerTakesEveryJobWhetherItPollsOrSleeps) {
  for (int i = 0; i < 200; ++i) {
    EvalRequest request;
    request.code = "(+ 1 2)";
    BurstCallContext burst;
    NullCallContext other;
    EvalOutcome outcome = Runtime::instance().evaluate(request, i % 3 == 0 ? static_cast<CallContext&>(burst) : other);
    EXPECT_EQ(outcome.text, "=> 3");
    if (i % 20 == 0) std::this_thread::sleep_for(1ms);
  }
  expect_alive();
}

// After a call that does not come in bursts nothing polls: the process
// uses (almost) no CPU while it waits for the next call.
TEST(Runtime, NoPollAfterACallThatDoesNotComeInBursts) {
  auto cpu = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  };
  expect_alive();  // a NullCallContext's call
  auto before = cpu();
  std::this_thread::sleep_for(50ms);
  auto used = cpu() - before;
  EXPECT_LT(used, std::chrono::microseconds(1500)) << "CPU used while idle: " << std::chrono::duration<double, std::micro>(used).count() << " us";
}

TEST(Runtime, MultipleValuesAndOutputSections) {
  EvalOutcome outcome = eval("(progn (format t \"Hello, World!\") (format *error-output* \"oops\") (values 3 1))");
  ASSERT_TRUE(outcome.success);
  EXPECT_EQ(outcome.text, "[stdout]\nHello, World!\n\n[stderr]\noops\n\n=> 3\n=> 1");
}

TEST(Runtime, TraceOutputGoesToStderr) {
  EvalOutcome outcome = eval("(progn (format *trace-output* \"traced\") 1)");
  EXPECT_EQ(outcome.text, "[stderr]\ntraced\n\n=> 1");
}

TEST(Runtime, UnicodeRoundTrips) {
  EvalOutcome outcome = eval("(list (length \"héllo→λ\") \"héllo→λ\")");
  ASSERT_TRUE(outcome.success);
  EXPECT_EQ(outcome.text, "=> (7 \"héllo→λ\")");
}

TEST(Runtime, ErrorHasTypeMessageAndBacktrace) {
  EvalOutcome outcome = eval("(defun agentq-test-fails (x) (car x)) (agentq-test-fails 5)");
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.text.rfind("[ERROR] SIMPLE-TYPE-ERROR\n", 0), 0u) << outcome.text;
  EXPECT_NE(outcome.text.find("\n\n[Backtrace]\n0: "), std::string::npos) << outcome.text;
  EXPECT_NE(outcome.text.find("AGENTQ-TEST-FAILS"), std::string::npos) << outcome.text;
  expect_alive();
}

TEST(Runtime, ReaderErrorIsAnError) {
  EvalOutcome outcome = eval("(+ 1");
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.text.rfind("[ERROR] ", 0), 0u) << outcome.text;
  expect_alive();
}

TEST(Runtime, PackagePersistsAcrossCalls) {
  EvalOutcome outcome = eval("(defpackage :agentq-p (:use :cl)) (in-package :agentq-p) (defun f () 1)");
  ASSERT_TRUE(outcome.success) << outcome.text;
  EXPECT_EQ(eval("(symbol-package 'f)").text, "=> #<\"AGENTQ-P\" package>");
  EXPECT_EQ(eval("(f)").text, "=> 1");
  EXPECT_TRUE(eval("(in-package :cl-user)").success);
  EXPECT_EQ(eval("(agentq-p::f)").text, "=> 1");
}

TEST(Runtime, ExplicitUnknownPackageIsAnError) {
  EvalOutcome outcome = eval("1", 30s, "no-such-package-xyz");
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.text.rfind("[ERROR] PACKAGE-ERROR\n", 0), 0u) << outcome.text;
}

TEST(Runtime, CircularListPrints) {
  EvalOutcome outcome = eval("(let ((l (list 1 2 3))) (setf (cdr (last l)) l) l)");
  ASSERT_TRUE(outcome.success);
  EXPECT_EQ(outcome.text, "=> #1=(1 2 3 . #1#)");
}

TEST(Runtime, WarningsAreCaptured) {
  EvalOutcome outcome = eval("(progn (warn \"careful ~A\" 1) 2)");
  ASSERT_TRUE(outcome.success);
  EXPECT_EQ(outcome.text, "[warnings]\nSIMPLE-WARNING: careful 1\n\n=> 2");
}

TEST(Hostile, QuitIsIntercepted) {
  for (const char* code : {"(ext:quit)", "(ext:exit 3)", "(si:quit 1)", "(mp:exit-process)"}) {
    EvalOutcome outcome = eval(code);
    EXPECT_FALSE(outcome.success) << code;
    EXPECT_NE(outcome.text.find("EXIT-INTERCEPTED"), std::string::npos) << outcome.text;
    expect_alive();
  }
}

TEST(Hostile, DebuggerEntriesReturnPromptly) {
  for (const char* code : {"(break)", "(invoke-debugger (make-condition 'simple-error :format-control \"x\"))",
                           "(read *query-io*)", "(read)", "(y-or-n-p \"ok?\")"}) {
    EvalOutcome outcome = eval(code, 5s);
    EXPECT_FALSE(outcome.success) << code;
    EXPECT_EQ(outcome.text.rfind("[ERROR] ", 0), 0u) << outcome.text;
    EXPECT_EQ(outcome.text.find("TIMEOUT"), std::string::npos) << outcome.text;
    expect_alive();
  }
}

TEST(Hostile, StackOverflowIsRecoverable) {
  EXPECT_TRUE(eval("(defun agentq-deep (n) (1+ (agentq-deep n)))").success);
  for (int i = 0; i < 3; ++i) {
    EvalOutcome outcome = eval("(agentq-deep 0)");
    EXPECT_FALSE(outcome.success);
    EXPECT_NE(outcome.text.find("STACK-OVERFLOW"), std::string::npos) << outcome.text;
    expect_alive();
  }
}

// ECL's C code (COPY-TREE, EQUAL, SUBST ...) recurses without checking its
// stack: on a list nested a million deep it ran into the thread's guard
// page and the process died.  Now an error, on the first worker, on a
// fresh one that replaced it, and on a thread evaluated code starts.
TEST(Hostile, CStackOverflowInEclsCCodeIsAnError) {
  ASSERT_TRUE(eval("(defparameter cl-user::*deep* (let ((x nil)) (dotimes (i 1000000 x) (setf x (list x))))) "
                   "(defun cl-user::kept () 42)")
                  .success);
  auto expect_overflow = [](const std::string& code) {
    EvalOutcome outcome = eval(code);
    EXPECT_FALSE(outcome.success);
    EXPECT_EQ(outcome.text.rfind("[ERROR] EXT:STACK-OVERFLOW\nC-STACK overflow", 0), 0u) << outcome.text;
    expect_alive();
  };
  for (int i = 0; i < 2; ++i) expect_overflow("(copy-tree cl-user::*deep*)");
  expect_overflow("(subst 1 2 cl-user::*deep*)");
  Runtime::instance().restart_worker();
  for (int i = 0; i < 2; ++i) expect_overflow("(equal cl-user::*deep* (copy-tree cl-user::*deep*))");
  // Lisp code's own check works on the fresh worker too.
  EvalOutcome lisp = eval("(defun cl-user::endless (n) (1+ (cl-user::endless n))) (cl-user::endless 0)");
  EXPECT_EQ(lisp.text.rfind("[ERROR] EXT:STACK-OVERFLOW\nC-STACK overflow", 0), 0u) << lisp.text;
  EvalOutcome threaded = eval(
      "(mp:process-join (mp:process-run-function \"deep\" (lambda () (handler-case (copy-tree cl-user::*deep*) "
      "(storage-condition (c) (type-of c))))))");
  EXPECT_EQ(threaded.text, "=> EXT:STACK-OVERFLOW");
  // Caught and repeated, past the number of guards: each is closed again.
  EXPECT_EQ(eval("(loop repeat 10 count (handler-case (progn (subst 1 2 cl-user::*deep*) nil) "
                 "(ext:stack-overflow () t)))")
                .text,
            "=> 10");
  EXPECT_EQ(eval("(cl-user::kept)").text, "=> 42");
  eval("(makunbound 'cl-user::*deep*)");
}

TEST(Hostile, InfiniteLoopTimesOut) {
  auto start = std::chrono::steady_clock::now();
  EvalOutcome outcome = eval("(defvar *agentq-before* 41) (loop)", 500ms);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.text.rfind("[ERROR] TIMEOUT\n", 0), 0u) << outcome.text;
  EXPECT_LT(elapsed, 3s);
  expect_alive();
  EXPECT_EQ(eval("(1+ *agentq-before*)").text, "=> 42");
}

TEST(Hostile, UnwindProtectCleanupRunsOnTimeout) {
  EvalOutcome outcome = eval("(defvar *agentq-cleaned* nil) (unwind-protect (loop) (setf *agentq-cleaned* t))", 300ms);
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(eval("*agentq-cleaned*").text, "=> T");
}

class QuitAfter final : public CallContext {
 public:
  explicit QuitAfter(std::chrono::milliseconds delay) : at_(std::chrono::steady_clock::now() + delay) {}
  bool poll() override { return std::chrono::steady_clock::now() >= at_; }

 private:
  std::chrono::steady_clock::time_point at_;
};

TEST(Hostile, QuitInterruptsWithinASecond) {
  EvalRequest request;
  request.code = "(loop)";
  QuitAfter context(200ms);
  auto start = std::chrono::steady_clock::now();
  EvalOutcome outcome = Runtime::instance().evaluate(request, context);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.text.rfind("[ERROR] INTERRUPTED\n", 0), 0u) << outcome.text;
  EXPECT_LT(elapsed, 1200ms);
  expect_alive();
}

TEST(Hostile, HeapExhaustionIsAStorageCondition) {
  Runtime::instance().set_heap_limit(std::size_t{256} << 20);
  EvalOutcome outcome = eval("(let ((l nil)) (loop (push (make-array 100000) l)))");
  EXPECT_FALSE(outcome.success);
  EXPECT_NE(outcome.text.find("STORAGE"), std::string::npos) << outcome.text.substr(0, 300);
  expect_alive();
  // And once more: the limit was re-armed.
  outcome = eval("(let ((l nil)) (loop (push (make-array 100000) l)))");
  EXPECT_FALSE(outcome.success);
  expect_alive();
  Runtime::instance().set_heap_limit(std::size_t{1} << 30);
}

TEST(Output, LongOutputIsTruncatedWithAMarker) {
  EvalRequest request;
  request.code = "(dotimes (i 100000) (write-string \"0123456789\"))";
  request.output_limit = 1000;
  NullCallContext context;
  EvalOutcome outcome = Runtime::instance().evaluate(request, context);
  ASSERT_TRUE(outcome.success);
  EXPECT_NE(outcome.text.find("output truncated: 999000 more characters"), std::string::npos) << outcome.text;
  EXPECT_LT(outcome.text.size(), 1400u);
}

TEST(Output, TimingLine) {
  EvalRequest request;
  request.code = "(make-list 1000)";
  request.capture_time = true;
  NullCallContext context;
  EvalOutcome outcome = Runtime::instance().evaluate(request, context);
  ASSERT_TRUE(outcome.success);
  EXPECT_NE(outcome.text.find("\n; Timing: "), std::string::npos) << outcome.text;
  EXPECT_NE(outcome.text.find("ms real, "), std::string::npos);
  EXPECT_NE(outcome.text.find(" bytes consed"), std::string::npos);
}

TEST(Waiting, WorkPostedToTheWaiterRunsOnItsThread) {
  std::atomic<bool> ran{false};
  std::thread::id waiter_id = std::this_thread::get_id();
  std::atomic<bool> same_thread{false};
  std::thread poster([&] {
    while (!Runtime::instance().post_to_waiter([&] {
      same_thread = std::this_thread::get_id() == waiter_id;
      ran = true;
    }))
      std::this_thread::sleep_for(1ms);
  });
  EvalOutcome outcome = eval("(sleep 0.3)");
  poster.join();
  EXPECT_TRUE(outcome.success);
  EXPECT_TRUE(ran);
  EXPECT_TRUE(same_thread);
}

}  // namespace
}  // namespace agentq::ecl

namespace agentq::ecl {
namespace {

TEST(Hostile, UninterruptibleLoopIsAbandonedAndANewWorkerServes) {
  EvalOutcome defined = eval("(defun agentq-abandon-test () :still-defined)");
  ASSERT_TRUE(defined.success) << defined.text;
  std::uint64_t replaced = Runtime::instance().status().replaced_workers;
  // Ends by itself after ~5 s, with interrupts disabled all along.
  EvalOutcome outcome = eval(
      "(mp:without-interrupts (let ((end (+ (get-internal-real-time) (* 5 internal-time-units-per-second)))) "
      "(loop until (> (get-internal-real-time) end))))",
      300ms);
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.text.rfind("[ERROR] TIMEOUT\n", 0), 0u) << outcome.text;
  EXPECT_NE(outcome.text.find("abandoned and the session continues on a new thread"), std::string::npos)
      << outcome.text;
  EXPECT_EQ(Runtime::instance().status().replaced_workers, replaced + 1);
  EXPECT_EQ(Runtime::instance().status().abandoned_threads, 1u);
  // A fresh worker serves at once, with the definitions of the old one.
  auto start = std::chrono::steady_clock::now();
  outcome = eval("(agentq-abandon-test)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(outcome.text, "=> :STILL-DEFINED");
  // Once the abandoned evaluation ends, its thread leaves; the session goes on.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(Runtime::instance().status().abandoned_threads, 0u);
  expect_alive();
}

}  // namespace
}  // namespace agentq::ecl

namespace agentq::ecl {
namespace {

// Interrupts land at random points of bignum arithmetic and printing, which
// allocate through GMP; none may leave malloc's lock held (a deadlock of the
// worker, and then of the host at its next malloc).
TEST(Hostile, InterruptsDuringBignumWorkNeverDeadlock) {
  for (int i = 0; i < 300; ++i) {
    EvalOutcome outcome = eval("(loop (princ-to-string (expt 3 (+ 500 (random 500)))))", 5ms);
    ASSERT_FALSE(outcome.success);
    ASSERT_EQ(outcome.text.rfind("[ERROR] TIMEOUT\n", 0), 0u) << outcome.text;
  }
  expect_alive();
}

}  // namespace
}  // namespace agentq::ecl

namespace agentq::ecl {
namespace {

EvalOutcome run_tool(const std::string& tool, const nlohmann::json& arguments, std::chrono::milliseconds timeout = 30s) {
  EvalRequest request;
  request.tool = tool;
  request.arguments = arguments;
  request.timeout = timeout;
  return run(request);
}

// A job is a tool call dispatched inside ECL through the table of Lisp
// job handlers; evaluate_lisp is its built-in entry.
TEST(Jobs, LispHandlersGetTheArgumentsAsLispData) {
  EvalOutcome registered = eval(
      "(agent-q::register-job-handler \"agentq_test_describe\" "
      "  (lambda (args) (format nil \"~S ~S ~S ~S ~S\" (gethash \"s\" args) (gethash \"n\" args) "
      "     (gethash \"list\" args) (gethash \"flag\" args) (gethash \"inner\" (gethash \"o\" args)))))");
  ASSERT_TRUE(registered.success) << registered.text;
  EvalOutcome outcome = run_tool("agentq_test_describe", {{"s", "héllo"}, {"n", 42}, {"list", {1, 2.5, "x"}},
                                                          {"flag", true}, {"o", {{"inner", nullptr}}}});
  EXPECT_TRUE(outcome.success) << outcome.text;
  EXPECT_EQ(outcome.text, "\"héllo\" 42 (1 2.5d0 \"x\") T NIL");
}

TEST(Jobs, HandlerErrorsOutputAndLimits) {
  ASSERT_TRUE(eval("(agent-q::register-job-handler \"agentq_test_fail\" (lambda (args) (declare (ignore args)) "
                   "  (values nil \"No such thing; try another name.\")))")
                  .success);
  EvalOutcome outcome = run_tool("agentq_test_fail", nlohmann::json::object());
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.text, "No such thing; try another name.");

  ASSERT_TRUE(eval("(agent-q::register-job-handler \"agentq_test_signal\" (lambda (args) (print :working) "
                   "  (car (gethash \"x\" args))))")
                  .success);
  outcome = run_tool("agentq_test_signal", {{"x", 5}});
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.text.rfind("Tool error: In function CAR, the value of the only argument is", 0), 0u)
      << outcome.text;
  EXPECT_NE(outcome.text.find("\n\n[stdout]\n\n:WORKING"), std::string::npos) << outcome.text;

  ASSERT_TRUE(eval("(agent-q::register-job-handler \"agentq_test_loop\" (lambda (args) (declare (ignore args)) (loop)))")
                  .success);
  outcome = run_tool("agentq_test_loop", nlohmann::json::object(), 300ms);
  EXPECT_EQ(outcome.text.rfind("[ERROR] TIMEOUT\n", 0), 0u) << outcome.text;

  outcome = run_tool("agentq_no_such_handler", nlohmann::json::object());
  EXPECT_EQ(outcome.text, "[ERROR] UNKNOWN-TOOL\nNo Lisp handler for the tool \"agentq_no_such_handler\".");
  // The built-in entry cannot be replaced.
  EXPECT_FALSE(eval("(agent-q::register-job-handler \"evaluate_lisp\" (lambda (a) a))").success);
  expect_alive();
}

}  // namespace
}  // namespace agentq::ecl

namespace agentq::ecl {
namespace {

// A context that publishes the id of the job the runtime queued for it.
class IdContext final : public CallContext {
 public:
  void job_queued(std::uint64_t job_id) override { id = job_id; }
  std::atomic<std::uint64_t> id{0};
};

// Runtime::cancel stops a job by its id from another thread, running or
// still queued, the way C-g or a timeout stops it.
TEST(Jobs, CancelByIdFromAnotherThread) {
  EvalRequest loop;
  loop.code = "(loop)";
  loop.timeout = 30s;
  IdContext running_context;
  EvalOutcome running;
  std::thread owner([&] { running = Runtime::instance().evaluate(loop, running_context); });
  while (running_context.id == 0) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);

  // A second job queued behind the loop.
  EvalRequest queued_request;
  queued_request.code = "(+ 1 2)";
  IdContext queued_context;
  EvalOutcome queued;
  std::thread second([&] { queued = Runtime::instance().evaluate(queued_request, queued_context); });
  while (queued_context.id == 0) std::this_thread::sleep_for(1ms);

  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(Runtime::instance().cancel(queued_context.id));
  second.join();
  EXPECT_EQ(queued.text.rfind("[ERROR] INTERRUPTED\nThe evaluation was withdrawn before it started (cancelled)", 0), 0u)
      << queued.text;
  EXPECT_TRUE(Runtime::instance().cancel(running_context.id));
  owner.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(running.text.rfind("[ERROR] INTERRUPTED\nEvaluation was interrupted (cancelled).", 0), 0u) << running.text;
  EXPECT_FALSE(Runtime::instance().cancel(running_context.id));  // done: nothing to cancel
  expect_alive();
}

// An interactive evaluation's output reaches the context while it runs.
struct OutputContext final : CallContext {
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> pieces;
  std::uint64_t interactive_key() const override { return 4242; }
  void output(const std::string& text) override { pieces.emplace_back(text, std::chrono::steady_clock::now()); }
};

TEST(Interactive, OutputComesWhileTheEvaluationRunsAndIsLeftOutOfTheResult) {
  EvalRequest request;
  request.code = "(dotimes (i 3) (print i) (format *error-output* \"e~D\" i) (sleep 0.2)) \"λ\"";
  request.interactive_key = 4242;
  OutputContext context;
  EvalOutcome outcome = Runtime::instance().evaluate(request, context);
  auto returned = std::chrono::steady_clock::now();
  ASSERT_TRUE(outcome.success) << outcome.text;
  EXPECT_EQ(outcome.text, "=> \"λ\"");
  std::string all;
  for (const auto& piece : context.pieces) all += piece.first;
  EXPECT_EQ(all, "\n0 e0\n1 e1\n2 e2");  // both streams, in the order written
  ASSERT_GE(context.pieces.size(), 3u);
  EXPECT_LT(context.pieces.front().second, returned);
  // The values are kept under the key.
  EXPECT_EQ(eval("(agent-q::repl-value 4242 0)").text, "=> \"λ\"");
  // The next, usual evaluation keeps its output in the result again.
  EXPECT_EQ(eval("(progn (princ 1) 2)").text, "[stdout]\n1\n\n=> 2");
}

TEST(Interactive, OutputOfOtherThreadsAndPastTheLimitStaysInTheResult) {
  EvalRequest request;
  request.code =
      "(let ((out *standard-output*)) (mp:process-join (mp:process-run-function \"w\" (lambda () (princ :thread out)))))"
      " (princ \"0123456789abc\") :done";
  request.interactive_key = 4243;
  request.output_limit = 10;
  OutputContext context;
  EvalOutcome outcome = Runtime::instance().evaluate(request, context);
  std::string all;
  for (const auto& piece : context.pieces) all += piece.first;
  EXPECT_EQ(all, "0123456789");
  EXPECT_EQ(outcome.text,
            "[stdout]\nTHREAD\n[... output truncated: 3 more characters not shown (limit 10) ...]\n\n=> :DONE")
      << outcome.text;
  expect_alive();
}

TEST(Interactive, AnInterruptKeepsTheOutputWrittenSoFar) {
  EvalRequest request;
  request.code = "(progn (princ :before) (loop))";
  request.interactive_key = 4244;
  request.timeout = 300ms;
  OutputContext context;
  EvalOutcome outcome = Runtime::instance().evaluate(request, context);
  EXPECT_EQ(outcome.text.rfind("[ERROR] TIMEOUT", 0), 0u) << outcome.text;
  EXPECT_EQ(outcome.text.find("BEFORE"), std::string::npos) << outcome.text;
  std::string all;
  for (const auto& piece : context.pieces) all += piece.first;
  EXPECT_EQ(all, "BEFORE");
  expect_alive();
}


// A (loop) on the current worker times out by being interrupted where it
// runs, not abandoned: no further replacement.
void expect_loop_interrupted_in_place() {
  std::uint64_t replaced = Runtime::instance().status().replaced_workers;
  EvalOutcome outcome = eval("(loop)", 500ms);
  EXPECT_EQ(outcome.text.rfind("[ERROR] TIMEOUT\nEvaluation did not finish within 0.5 seconds and was interrupted.", 0),
            0u)
      << outcome.text;
  EXPECT_EQ(Runtime::instance().status().replaced_workers, replaced);
}

TEST(Jobs, AReplacementWorkerIsInterruptibleAndStartsThreads) {
  Runtime::instance().restart_worker();
  expect_loop_interrupted_in_place();
  EXPECT_EQ(eval("(mp:process-join (mp:process-run-function \"t\" (lambda () (+ 40 2))))", 10s).text, "=> 42");
  expect_alive();
}

TEST(Jobs, TwoRestartsInARowLeaveOneInterruptibleWorker) {
  // The second replacement may start before the first reaches its loop:
  // only the last is the worker, the one the watchdog interrupts.
  Runtime::instance().restart_worker();
  Runtime::instance().restart_worker();
  expect_loop_interrupted_in_place();
  EXPECT_EQ(eval("(+ 40 2)").text, "=> 42");
  expect_alive();
}

}  // namespace
}  // namespace agentq::ecl
