;;; sly-agent-q-run-tests-test.el --- run_tests: FiveAM results, per check -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; run_tests with Debian's cl-fiveam (installed by `make test'): a
;; system's tests through ASDF:TEST-SYSTEM and FiveAM tests by name, each
;; failure with its test, reason and form; another framework's output
;; as it printed it.

;;; Code:

(require 'ert)
(require 'sly-agent-q-test-helpers)

(defconst agentq-rt-files
  '(("agentq-rt.asd" . "(defsystem \"agentq-rt\" :components ((:file \"code\"))
  :in-order-to ((test-op (test-op \"agentq-rt/tests\"))))
(defsystem \"agentq-rt/tests\" :depends-on (\"agentq-rt\" \"fiveam\") :components ((:file \"tests\"))
  :perform (test-op (o c) (symbol-call :fiveam :run! (find-symbol \"ALL\" \"AGENTQ-RT-TESTS\"))))
(defsystem \"agentq-rt-plain\" :perform (test-op (o c) (format t \"plain tests: 2 of 2 ok~%\")))")
    ("code.lisp" . "(defpackage :agentq-rt (:use :cl) (:export #:add))
(in-package :agentq-rt)
(defun add (a b) (+ a b))")
    ("tests.lisp" . "(defpackage :agentq-rt-tests (:use :cl :fiveam))
(in-package :agentq-rt-tests)
(def-suite all)
(in-suite all)
(test adds (is (= 3 (agentq-rt:add 1 2))) (is (= 5 (agentq-rt:add 2 2))))
(test errs (is (= 1 (car (list* 5)))))
(test fine (is (equal '(1) (list 1))))"))
  "A system with FiveAM tests (one failing check, one erroring test) and
one whose tests only print.")

(ert-deftest sly-agent-q-run-tests/a-systems-fiveam-tests-and-tests-by-name ()
  (skip-unless (file-directory-p "/usr/share/common-lisp/source/fiveam"))
  (let* ((directory (file-name-as-directory (make-temp-file "agentq-rt" t)))
         (home (expand-file-name "agentq-rt/" directory)))
    (make-directory home)
    (dolist (file agentq-rt-files)
      (with-temp-file (expand-file-name (car file) home) (insert (cdr file))))
    (unwind-protect
        (let ((sly-agent-q-system-directories (list directory))
              (sly-agent-q-call-origin "chat")
              (sly-agent-q-approval-function #'agentq-test-fail-if-asked))
          (let ((text (plist-get (agentq-test-call "run_tests" '(:system "agentq-rt")) :content)))
            (should (string-match-p "^FAILED: 4 checks, 2 passed, 1 failed, 1 errored (FiveAM, via ASDF:TEST-SYSTEM \"agentq-rt\")$" text))
            (should (string-match-p "^FAILED AGENTQ-RT-TESTS::ADDS\n  reason: (AGENTQ-RT:ADD 2 2) evaluated to 4 which is not = to 5\n  form: (= 5 (AGENTQ-RT:ADD 2 2))$" text))
            (should (string-match-p "^ERRORED AGENTQ-RT-TESTS::ERRS\n  reason: .*not of the expected type" text)))
          (should (equal (plist-get (agentq-test-call "run_tests" '(:names ["fine"] :package "agentq-rt-tests")) :content)
                         "PASSED: 1 check, 1 passed, 0 failed, 0 errored (FiveAM)"))
          (should (string-prefix-p "FAILED: 4 checks, 2 passed, 1 failed, 1 errored (FiveAM)"
                                   (plist-get (agentq-test-call "run_tests" '(:names ["all"] :package "agentq-rt-tests")) :content)))
          ;; Over MCP, the results are structured too (run_tests's outputSchema).
          (let* ((response (agentq-test-mcp '(:jsonrpc "2.0" :id 7 :method "tools/call"
                                                        :params (:name "run_tests" :arguments (:system "agentq-rt")))))
                 (structured (agentq-test-get response "result" "structuredContent"))
                 (failures (gethash "failures" structured)))
            (should (eq (gethash "passed" structured) :false))
            (should (equal (list (gethash "checks" structured) (gethash "passed_checks" structured)
                                 (gethash "failed_checks" structured) (gethash "errored_checks" structured))
                           '(4 2 1 1)))
            (should (equal (length failures) 2))
            ;; In the order FiveAM ran them.
            (let ((failed (cl-find "failed" failures :key (lambda (f) (gethash "kind" f)) :test #'equal))
                  (errored (cl-find "errored" failures :key (lambda (f) (gethash "kind" f)) :test #'equal)))
              (should (equal (gethash "test" failed) "AGENTQ-RT-TESTS::ADDS"))
              (should (equal (gethash "reason" failed) "(AGENTQ-RT:ADD 2 2) evaluated to 4 which is not = to 5"))
              (should (equal (gethash "form" failed) "(= 5 (AGENTQ-RT:ADD 2 2))"))
              (should (equal (gethash "test" errored) "AGENTQ-RT-TESTS::ERRS"))))
          (let ((plain (agentq-test-get (agentq-test-mcp '(:jsonrpc "2.0" :id 8 :method "tools/call"
                                                                   :params (:name "run_tests" :arguments (:system "agentq-rt-plain"))))
                                        "result" "structuredContent")))
            (should (eq (gethash "passed" plain) :null))
            (should (string-match-p "plain tests: 2 of 2 ok" (gethash "output" plain))))
          ;; Not FiveAM: what the tests printed, and it says so.
          (should (string-match-p "with a framework this tool does not read (not FiveAM).*\n\nplain tests: 2 of 2 ok\\'"
                                  (plist-get (agentq-test-call "run_tests" '(:system "agentq-rt-plain")) :content)))
          (dolist (case '(((:names ["agentq-rt-tests::nothing-here"]) . "names no FiveAM test or suite\\|not found")
                          ((:system "agentq-rt-no-such-system") . "\\[ERROR\\] .*MISSING-COMPONENT")
                          (() . "Give \"system\"")
                          ((:system "agentq-rt" :framework "rove") . "Invalid argument 'framework': one of \"auto\", \"fiveam\", got \"rove\"")))
            (let ((result (agentq-test-call "run_tests" (car case))))
              (should-not (plist-get result :success))
              (should (string-match-p (cdr case) (plist-get result :content))))))
      (agentq-test-forget-systems '("agentq-rt" "agentq-rt/tests" "agentq-rt-plain") '("AGENTQ-RT-TESTS" "AGENTQ-RT"))
      (delete-directory directory t))))

(ert-deftest sly-agent-q-run-tests/an-agents-tests-that-write-ask ()
  "Tests run for an agent are checked while they run: a test-op that
writes a file asks, and denied, writes nothing."
  (let* ((directory (file-name-as-directory (make-temp-file "agentq-rt-w" t)))
         (home (expand-file-name "agentq-rt-writes/" directory))
         (target (expand-file-name "written.txt" directory))
         (asked 0))
    (make-directory home)
    (with-temp-file (expand-file-name "agentq-rt-writes.asd" home)
      (insert (format "(defsystem \"agentq-rt-writes\" :perform (test-op (o c) (with-open-file (s %S :direction :output) (print 1 s))))"
                      target)))
    (unwind-protect
        (let* ((sly-agent-q-system-directories (list directory))
               (sly-agent-q-call-origin "chat")
               (sly-agent-q-approval-function (lambda (&rest _) (cl-incf asked) nil))
               (result (agentq-test-call "run_tests" '(:system "agentq-rt-writes"))))
          (should (= asked 1))
          (should-not (plist-get result :success))
          (should (string-match-p "OPERATION-REFUSED\\|denied" (plist-get result :content)))
          (should-not (file-exists-p target)))
      (agentq-test-forget-systems '("agentq-rt-writes") '())
      (delete-directory directory t))))

(provide 'sly-agent-q-run-tests-test)

;;; sly-agent-q-run-tests-test.el ends here
