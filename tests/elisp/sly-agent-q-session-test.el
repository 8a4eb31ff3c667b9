;;; sly-agent-q-session-test.el --- The session cannot be wedged or broken from inside -*- lexical-binding: t; -*-

;;; Commentary:

;; Evaluated code that cancels every unwind, or that tampers with the
;; runtime's own state, must end in an error result and a session that
;; still works, with its definitions.  Each case runs in a fresh
;; `emacs -Q --batch' (they are destructive), defines a function first,
;; and ends with a call of it.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defun agentq-session-test-run (forms &optional seconds)
  "In a fresh Emacs, define SQ, evaluate each of FORMS (code or (code . timeout)).
Print the first line of each result, then the result of (sq 12).  Return
the lines printed; fail when that Emacs did not exit 0 within SECONDS."
  (pcase-let ((`(,code ,stdout ,stderr ,_seconds)
               (agentq-test-run-emacs
                `((require 'sly-agent-q)
                  (sly-agent-q--evaluate "(defun sq (x) (* x x))")
                  (dolist (form ',forms)
                    (let* ((code (if (consp form) (car form) form))
                           (timeout (if (consp form) (cdr form) 5))
                           (r (car (sly-agent-q-execute-tool-calls
                                    (list (list :id "t" :name "evaluate_lisp"
                                                :arguments (list :code code :timeout timeout)))))))
                      (princ (car (split-string (plist-get r :content) "\n")))
                      (terpri)))
                  (princ (plist-get (sly-agent-q--evaluate "(sq 12)") :content))
                  (terpri)
                  (kill-emacs 0))
                :timeout (or seconds 40))))
    (unless (equal code 0)
      (ert-fail (list :exit code :stdout stdout :stderr stderr)))
    (split-string stdout "\n" t)))

(ert-deftest sly-agent-q-session/cleanup-that-restarts-the-loop-is-abandoned ()
  "A cleanup that goes back into the loop: TIMEOUT, then a new worker with the definitions."
  (let ((lines (agentq-session-test-run '(("(tagbody top (unwind-protect (loop) (go top)))" . 1)
                                          "(+ 1 2)"))))
    (should (equal lines '("[ERROR] TIMEOUT" "=> 3" "=> 144")))))

(ert-deftest sly-agent-q-session/catch-in-a-loop-is-abandoned ()
  (let ((lines (agentq-session-test-run '(("(loop (catch 'x (loop)))" . 1) "(+ 1 2)"))))
    (should (equal lines '("[ERROR] TIMEOUT" "=> 3" "=> 144")))))

(ert-deftest sly-agent-q-session/interrupts-disabled-forever-is-abandoned ()
  (let ((lines (agentq-session-test-run '(("(mp:without-interrupts (loop))" . 1) "(+ 1 2)"))))
    (should (equal lines '("[ERROR] TIMEOUT" "=> 3" "=> 144")))))

(ert-deftest sly-agent-q-session/clearing-the-worker-variable ()
  (let ((lines (agentq-session-test-run '("(setf agent-q::*worker* nil)" ("(loop)" . 2)))))
    (should (equal (cdr lines) '("[ERROR] TIMEOUT" "=> 144")))))

(ert-deftest sly-agent-q-session/killing-the-watchdog-through-its-variable ()
  (let ((lines (agentq-session-test-run
                '("(let ((w agent-q::*watchdog*)) (setf agent-q::*watchdog* nil) (mp:process-kill w))"
                  ("(loop)" . 2)))))
    (should (string-prefix-p "[ERROR]" (car lines)))
    (should (equal (cdr lines) '("[ERROR] TIMEOUT" "=> 144")))))

(ert-deftest sly-agent-q-session/deleting-or-renaming-our-package ()
  (dolist (tamper '("(delete-package \"AGENT-Q\")" "(rename-package \"AGENT-Q\" \"X\")"))
    (let ((lines (agentq-session-test-run
                  (list tamper '("(labels ((r (n) (catch n (r (1+ n))))) (r 0))" . 5) '("(loop)" . 1)))))
      (should (string-prefix-p "[ERROR]" (nth 1 lines)))
      (should (equal (nthcdr 2 lines) '("[ERROR] TIMEOUT" "=> 144"))))))

(ert-deftest sly-agent-q-session/methods-on-our-stream-class ()
  (dolist (method '("(defmethod initialize-instance :after ((s agent-q::capture-stream) &key) (loop))"
                    "(defmethod initialize-instance :after ((s agent-q::capture-stream) &key) (error \"nope\"))"))
    (let ((lines (agentq-session-test-run
                  ;; A thread of the evaluation's own holds its streams, so
                  ;; the next call gets fresh ones.
                  (list method "(mp:process-run-function \"t\" (lambda () (sleep 1)))" "(+ 1 2)" "(+ 1 2)"))))
      (should (equal (nthcdr 2 lines) '("=> 3" "=> 3" "=> 144"))))))

(ert-deftest sly-agent-q-session/shrinking-the-frame-stack ()
  (let ((lines (agentq-session-test-run '("(ext:set-limit 'ext:frame-stack 4)" "(+ 1 2)"))))
    (should (equal (cdr lines) '("=> 3" "=> 144")))))

(ert-deftest sly-agent-q-session/finalizers-that-signal ()
  "A finalizer's error is a warning of the call during which it ran, never a later call's result."
  (let ((lines (agentq-session-test-run
                '("(dotimes (i 200) (ext:set-finalizer (make-array 1000) (lambda (x) (declare (ignore x)) (error \"finalizer ~D\" 1))))"
                  "(progn (ext:gc t) (ext:gc t) (+ 1 2))" "(ext:gc t)" "(+ 1 2)" "(+ 1 2)"))))
    (should (equal (last lines 3) '("=> 3" "=> 3" "=> 144")))
    (should-not (cl-some (lambda (line) (string-match-p "\\[ERROR\\]" line)) lines))))

(ert-deftest sly-agent-q-session/finalizers-that-loop ()
  "Finalizers run under a budget (0.2 s a call) and are interrupted like an
evaluation: each looping one is dropped and reported as a warning of the
call it ran in, and later calls still answer (200 finalizers that each
loop made every later call time out)."
  (let ((lines (agentq-session-test-run
                (append '("(dotimes (i 200) (ext:set-finalizer (make-array 1000) (lambda (x) (declare (ignore x)) (loop))))"
                          "(progn (ext:gc t) (ext:gc t) (+ 1 2))")
                        (make-list 6 "(+ 1 2)"))
                60)))
    (should-not (cl-some (lambda (line) (string-match-p "\\[ERROR\\]" line)) lines))
    ;; Each call after the collection dropped one finalizer: a warning.
    (should (equal (seq-take (cdr lines) 7) (make-list 7 "[warnings]")))
    (should (equal (car (last lines)) "=> 144"))))

(ert-deftest sly-agent-q-session/restart-worker-keeps-definitions ()
  "`sly-agent-q-restart-worker' gives a fresh worker in the same image."
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (sly-agent-q--evaluate "(defun sq (x) (* x x))")
                  (sly-agent-q-restart-worker)
                  (princ (plist-get (sly-agent-q--evaluate "(sq 12)") :content))
                  (terpri)
                  (princ (plist-get (sly-agent-q-runtime-status) :replaced-workers))
                  (kill-emacs 0))
                :timeout 30)))
    (should (equal code 0))
    (should (equal stdout "=> 144\n1"))))

(ert-deftest sly-agent-q-session/per-call-timeout-cannot-lift-the-ceiling ()
  "`sly-agent-q-eval-timeout' is a ceiling: a larger or zero per-call timeout is the ceiling."
  (let ((sly-agent-q-eval-timeout 1))
    (dolist (timeout '(100 0 -1))
      (let ((start (float-time)))
        (should (string-prefix-p "[ERROR] TIMEOUT\n" (agentq-test-eval-fails "(loop)" :timeout timeout)))
        (should (< (- (float-time) start) 5))))
    (should (string-prefix-p "[ERROR] TIMEOUT\n" (agentq-test-eval-fails "(sleep 10)" :timeout 0.2))))
  (agentq-test-should-be-alive))

;;; sly-agent-q-session-test.el ends here
