// The compile child's primitives (module/ecl/compile_child.*), without
// Emacs: a forked copy of the runtime computes, tells old objects from new
// ones, exits with a code the parent reads, and one that does not end is
// killed and reaped.  The background compiler's use of them is tested in
// tests/elisp/sly-agent-q-compile-child-test.el.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "ecl/runtime.hpp"

namespace agentq::ecl {
namespace {

using namespace std::chrono_literals;

std::string eval_text(const std::string& code) {
  EvalRequest request;
  request.code = code;
  request.timeout = 30s;
  NullCallContext context;
  EvalOutcome outcome = Runtime::instance().evaluate(request, context);
  EXPECT_TRUE(outcome.success) << outcome.text;
  return outcome.text;
}

// Forks (from the worker, in a job: nothing else runs Lisp here), runs
// CHILD-FORM in the child, whose value (a fixnum) is its exit code, and
// answers the parent's view: (%WAIT-CHILD pid timeout).
std::string in_child(const std::string& child_form, int timeout_ms = 10000) {
  return eval_text(
      "(let ((pid (agent-q::%fork-compile-child)))"
      "  (if (eql pid 0)"
      "      (agent-q::%child-exit (or (ignore-errors " + child_form + ") 99))"
      "      (agent-q::%wait-child pid " + std::to_string(timeout_ms) + " 0)))");
}

TEST(CompileChild, TheChildComputesAndItsExitCodeComesBack) {
  EXPECT_EQ(in_child("(+ 40 2)"), "=> 42");
  // The child has the session's definitions.
  eval_text("(defun cl-user::compile-child-answer () 7)");
  EXPECT_EQ(in_child("(cl-user::compile-child-answer)"), "=> 7");
  EXPECT_EQ(eval_text("(+ 1 2)"), "=> 3");
}

TEST(CompileChild, AfterTheMarkOldObjectsAreTellingNewOnes) {
  eval_text("(defparameter cl-user::*compile-child-old* (list 1 2 3))");
  // Bits: 1 the old list is old, 2 a new cons is new, 4 a new string is
  // new, 8 an immediate is neither, 16 an interned symbol is old.
  EXPECT_EQ(in_child("(progn (agent-q::%mark-live-objects)"
                     "  (let ((new (list 4 5)) (string (make-string 3)))"
                     "    (+ (if (agent-q::%preexisting-object-p cl-user::*compile-child-old*) 1 0)"
                     "       (if (agent-q::%preexisting-object-p new) 0 2)"
                     "       (if (agent-q::%preexisting-object-p string) 0 4)"
                     "       (if (agent-q::%preexisting-object-p 12) 0 8)"
                     "       (if (agent-q::%preexisting-object-p 'car) 16 0))))"),
            "=> 31");
}

TEST(CompileChild, AChildThatDoesNotEndIsKilledAndReaped) {
  // Killed at the timeout, then reaped: waiting for it again finds no
  // such child (NIL), where a zombie would still be waited for.
  EXPECT_EQ(eval_text("(let ((pid (agent-q::%fork-compile-child)))"
                      "  (if (eql pid 0)"
                      "      (loop)"
                      "      (list (agent-q::%wait-child pid 200 0) (agent-q::%wait-child pid 0 0))))"),
            "=> (:TIMEOUT NIL)");
  EXPECT_EQ(eval_text("(+ 1 2)"), "=> 3");
}

TEST(CompileChild, AChildThatStopsUsingTheCpuIsKilledBeforeTheTimeout) {
  // Waiting for a lock held at the fork looks like this: no CPU time.  A
  // child that computes is not stalled, however long it takes.
  EXPECT_EQ(eval_text("(let ((pid (agent-q::%fork-compile-child)))"
                      "  (if (eql pid 0)"
                      "      (sleep 60)"
                      "      (let ((start (get-internal-real-time)))"
                      "        (list (agent-q::%wait-child pid 20000 500)"
                      "              (< (- (get-internal-real-time) start) (* 5 internal-time-units-per-second))))))"),
            "=> (:STALLED T)");
  EXPECT_EQ(eval_text("(let ((pid (agent-q::%fork-compile-child)))"
                      "  (if (eql pid 0)"
                      "      (loop)"
                      "      (agent-q::%wait-child pid 1500 500)))"),
            "=> :TIMEOUT");
}

TEST(CompileChild, PrivateDirectoriesAreTheUsersOnly) {
  std::string text = eval_text("(agent-q::%make-private-directory)");
  ASSERT_EQ(text.rfind("=> \"", 0), 0u) << text;
  std::string path = text.substr(4, text.size() - 5);
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0) << path;
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  std::ofstream(path + "ecl001x.c") << "int x;";
  // Removed with its files; a second time, or any other path: NIL.
  EXPECT_EQ(eval_text("(agent-q::%remove-private-directory \"" + path + "\")"), "=> T");
  EXPECT_NE(stat(path.c_str(), &info), 0);
  EXPECT_EQ(eval_text("(agent-q::%remove-private-directory \"" + path + "\")"), "=> NIL");
  EXPECT_EQ(eval_text("(agent-q::%remove-private-directory \"/tmp\")"), "=> NIL");
}

}  // namespace
}  // namespace agentq::ecl
