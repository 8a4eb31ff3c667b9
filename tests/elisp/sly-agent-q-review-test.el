;;; sly-agent-q-review-test.el --- Regressions found by review -*- lexical-binding: t; -*-

;;; Commentary:

;; Each test reproduces a hang, crash or broken session found by a review
;; and checks it stays fixed.  The destructive ones run in a fresh
;; `emacs -Q --batch' so the rest of the suite keeps a healthy session.

;;; Code:

(require 'sly-agent-q-test-helpers)

(ert-deftest sly-agent-q-review/killing-the-watchdog-does-not-freeze-timeouts ()
  "Evaluated code cannot kill the watchdog, so timeouts and C-g keep working."
  (pcase-let ((`(,code ,stdout ,_stderr ,seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (sly-agent-q--evaluate
                   "(mp:process-kill (find \"agent-q watchdog\" (mp:all-processes) :key #'mp:process-name :test #'equal))")
                  (let ((r (car (sly-agent-q-execute-tool-calls
                                 '((:id "l" :name "evaluate_lisp" :arguments (:code "(loop)" :timeout 1)))))))
                    (princ (car (split-string (plist-get r :content) "\n"))))
                  (terpri)
                  (princ (plist-get (sly-agent-q--evaluate "(+ 1 2)") :content))
                  (kill-emacs 0))
                :timeout 30)))
    (should (equal code 0))
    (should (equal stdout "[ERROR] TIMEOUT\n=> 3"))
    (should (< seconds 10))))

(ert-deftest sly-agent-q-review/exit-after-an-unresponsive-evaluation ()
  "Emacs exits, with its exit code, even when an evaluation ignores interrupts."
  (pcase-let ((`(,code ,stdout ,_stderr ,seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (let ((r (car (sly-agent-q-execute-tool-calls
                                 '((:id "w" :name "evaluate_lisp"
                                    :arguments (:code "(mp:without-interrupts (loop))" :timeout 1)))))))
                    (princ (car (split-string (plist-get r :content) "\n"))))
                  (terpri)
                  (princ (car (split-string (plist-get (sly-agent-q--evaluate "(+ 1 2)") :content) "\n")))
                  (kill-emacs 7))
                :timeout 40)))
    (should (equal code 7))
    ;; Abandoned after its grace; a fresh worker answers the next call.
    (should (equal stdout "[ERROR] TIMEOUT\n=> 3"))
    (should (< seconds 15))))

(ert-deftest sly-agent-q-review/deeply-nested-json-arguments-are-an-error ()
  "A JSON argument string nested 100000 deep is refused, not a crash."
  (let* ((deep (format "{\"code\":\"(+ 1 2)\",\"x\":%s1%s}"
                       (make-string 100000 ?\[) (make-string 100000 ?\])))
         (sly-agent-q-tool-execution-functions (list #'ignore))
         (result (car (sly-agent-q-execute-tool-calls
                       (list (list :id "d" :name "evaluate_lisp" :arguments deep))))))
    (should (eq (plist-get result :success) nil))
    (should (string-match-p "nest" (plist-get result :content))))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-review/deleting-cl-user-keeps-the-session-usable ()
  "After (delete-package :cl-user), values and errors still come back at once."
  (pcase-let ((`(,code ,stdout ,_stderr ,seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (sly-agent-q--evaluate "(delete-package :cl-user)")
                  (princ (car (last (split-string (plist-get (sly-agent-q--evaluate "(+ 1 2)") :content) "\n"))))
                  (terpri)
                  (princ (car (split-string (plist-get (sly-agent-q--evaluate "(car 5)") :content) "\n")))
                  (kill-emacs 0))
                :timeout 30)))
    (should (equal code 0))
    (should (equal stdout "=> 3\n[ERROR] SIMPLE-TYPE-ERROR"))
    (should (< seconds 10))))

(ert-deftest sly-agent-q-review/a-non-package-never-becomes-the-session-package ()
  "(setf *package* 42) fails that call only; the next call works."
  (agentq-test-eval "(setf *package* 42)")
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-review/a-deleted-session-package-is-replaced ()
  "Deleting the session's own package falls back to CL-USER, with a warning."
  (agentq-test-eval-ok "(defpackage :agentq-doomed (:use :cl)) (in-package :agentq-doomed)")
  (agentq-test-eval "(cl:delete-package :agentq-doomed)")
  (let ((content (agentq-test-eval-ok "(+ 1 2)")))
    (should (string-match-p "package was deleted" content))
    (should (string-suffix-p "=> 3" content)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-review/huge-timeouts-do-not-overflow ()
  "Timeouts far beyond a year behave as a long timeout, not as an instant one."
  (dolist (timeout '(1e10 1e300 1.0e+INF))
    (should (equal (agentq-test-eval-ok "(+ 1 2)" :timeout timeout) "=> 3"))))

(ert-deftest sly-agent-q-review/raw-bytes-fail-only-their-call ()
  "A code string with a raw byte gives that call an error result; the batch survives."
  (let* ((bad (concat "(+ 1 2)" (string (unibyte-char-to-multibyte 200))))
         (results (sly-agent-q-execute-tool-calls
                   (list (list :id "bad" :name "evaluate_lisp" :arguments (list :code bad))
                         (list :id "good" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))))
    (should (equal (mapcar (lambda (r) (plist-get r :success)) results) '(nil t)))
    (should (string-match-p "Invalid tool call" (plist-get (car results) :content)))))

(ert-deftest sly-agent-q-review/raw-bytes-in-ids-and-names-do-not-abort-the-batch ()
  "Unibyte ids and tool names with raw bytes still give every call a result."
  (let ((results (sly-agent-q-execute-tool-calls
                  (list (list :id "\377" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))
                        (list :id "n" :name "tool\377" :arguments nil)
                        (list :id "good" :name "evaluate_lisp" :arguments (list :code "(+ 2 2)"))))))
    (should (= (length results) 3))
    (mapc #'agentq-test-check-result results)
    (should (equal (plist-get (nth 0 results) :id) "\uFFFD"))
    (should (equal (plist-get (nth 0 results) :content) "=> 3"))
    (should (equal (plist-get (nth 1 results) :content) "Unknown tool: tool\uFFFD"))
    (should (equal (plist-get (nth 2 results) :content) "=> 4"))))

(ert-deftest sly-agent-q-review/raw-bytes-are-repaired-not-flattened ()
  "Only the ill-formed bytes become U+FFFD; valid characters around them stay."
  (let ((result (car (sly-agent-q-execute-tool-calls
                      (list (list :id (string-to-unibyte "\303\251\300\200\364\220\200\200 ok")
                                  :name "evaluate_lisp" :arguments (list :code "(+ 1 2)")))))))
    (should (equal (plist-get result :id) "\u00e9\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD ok"))
    (should (equal (plist-get result :content) "=> 3"))))

(ert-deftest sly-agent-q-review/elisp-tool-returning-raw-bytes-fails-only-its-call ()
  "An Elisp handler's text with raw bytes is that call's error, not the batch's."
  (sly-agent-q-define-tool "raw_text_tool" "Returns text with a raw byte." nil
                           :handler (lambda (_) (decode-coding-string "caf\303\251 \377" 'utf-8)))
  (let ((results (sly-agent-q-execute-tool-calls
                  '((:id "a" :name "evaluate_lisp" :arguments (:code "(+ 1 2)"))
                    (:id "b" :name "raw_text_tool")
                    (:id "c" :name "evaluate_lisp" :arguments (:code "(+ 2 2)"))))))
    (mapc #'agentq-test-check-result results)
    (should (equal (mapcar (lambda (r) (plist-get r :success)) results) '(t nil t)))
    (should (string-match-p "not valid Unicode" (plist-get (nth 1 results) :error)))
    (should (equal (plist-get (nth 2 results) :content) "=> 4"))))

(ert-deftest sly-agent-q-review/undefined-function-names-itself-in-the-backtrace ()
  "The contract's example: [ERROR] UNDEFINED-FUNCTION … [Backtrace] 0: (NONEXISTENT-FUNCTION)."
  (let ((content (agentq-test-eval-fails "(nonexistent-function 1 2)")))
    (should (string-prefix-p "[ERROR] UNDEFINED-FUNCTION\n" content))
    (should (string-match-p "\\[Backtrace\\]\n0: (NONEXISTENT-FUNCTION)" content))))

(ert-deftest sly-agent-q-review/an-enormous-output-limit-is-clamped ()
  "A huge sly-agent-q-output-limit does not wrap around to 0."
  (agentq-test-with-custom ((sly-agent-q-output-limit (expt 2 62)))
    (should (equal (agentq-test-eval-ok "(+ 1 2)") "=> 3"))))

(ert-deftest sly-agent-q-review/background-thread-output-does-not-leak ()
  "A thread that keeps writing to a captured *standard-output* does not show up in later results."
  (agentq-test-eval-ok
   "(defvar *agentq-leaker-stop* nil)
    (let ((s *standard-output*))
      (mp:process-run-function \"agentq-leaker\"
        (lambda () (loop until *agentq-leaker-stop* do (write-string \"x\" s) (sleep 0.001)))))")
  (unwind-protect
      (dotimes (_ 5)
        (sleep-for 0.01)
        (should (equal (agentq-test-eval-ok "(+ 1 2)") "=> 3")))
    (agentq-test-eval "(setf *agentq-leaker-stop* t)")))

(ert-deftest sly-agent-q-review/clearing-current-job-does-not-defeat-the-timeout ()
  "Lisp state cannot make an evaluation uninterruptible."
  (should (string-prefix-p "[ERROR] TIMEOUT\n"
                           (agentq-test-eval-fails "(setf agent-q::*current-job* nil) (loop)" :timeout 1)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-review/quit-while-a-timeout-unwinds-returns-at-once ()
  "C-g during the grace after a timeout does not wait for the evaluation to unwind."
  (let* ((start (float-time))
         (sly-agent-q-wait-functions (list (lambda (seconds) (when (> seconds 1.0) (setq quit-flag t)))))
         (outcome (condition-case nil
                      (agentq-test-eval "(unwind-protect (loop) (mp:without-interrupts (sleep 2)))" :timeout 0.5)
                    (quit 'quitted))))
    (should (eq outcome 'quitted))
    (should (< (- (float-time) start) 2.0)))
  ;; The cleanup still runs for a while; once it is done the session works.
  (sleep-for 2.5)
  (agentq-test-should-be-alive))

;;; sly-agent-q-review-test.el ends here
