;;; sly-agent-q-syntax-test.el --- check_syntax: read, never evaluate -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; check_syntax reports each reader problem of a text or a file with its
;; line and column, goes on after a broken form, evaluates nothing,
;; interns nothing in the session's packages and asks no question of
;; any door.

;;; Code:

(require 'ert)
(require 'sly-agent-q-test-helpers)

(defun agentq-syntax-check (&rest arguments)
  "check_syntax with ARGUMENTS, as the chat's agent calls it; its result plist."
  (let ((sly-agent-q-call-origin "chat")
        (sly-agent-q-approval-function #'agentq-test-fail-if-asked))
    (agentq-test-call "check_syntax" arguments)))

(ert-deftest sly-agent-q-syntax/clean-text-and-each-problem-with-its-place ()
  (should (equal (plist-get (agentq-syntax-check :code "(defun f (x)\n  (+ x 1))\n#| a (( comment |#\n(g #\\( \"a ) b\") ; )\n")
                            :content)
                 "No problems: 2 forms read (nothing was evaluated)."))
  (let ((text (plist-get (agentq-syntax-check
                          :code (concat "(defun f (x) (agentq-no-pkg:foo x))\n"
                                        "(defun g () \"abc\")\n"
                                        ") (defun h () 1)\n"
                                        "#.(delete-file \"agentq-syntax-never\")\n"
                                        "(a #<b>)\n"
                                        "(defun k (y)\n  (let ((z y))\n    (* z 2))\n"))
                         :content)))
    (should (string-prefix-p "5 problems (2 forms read, nothing evaluated):\n" text))
    (should (string-match-p "^line 1, column [0-9]+: There is no package with the name AGENTQ-NO-PKG\\.$" text))
    (should (string-match-p "^line 3, column 1: Unmatched right parenthesis" text))
    (should (string-match-p "^line 4, column [0-9]+: Cannot evaluate the form #\\.(DELETE-FILE" text))
    (should (string-match-p "^line 5, column [0-9]+: .*dispatch macro character" text))
    ;; Where the unclosed parenthesis opens, not where the text ends.
    (should (string-match-p "^line 6, column 1: this ( is never closed$" text)))
  (should (string-match-p "^line 2, column 2: this ( is never closed (the form begins at line 1, column 1)$"
                          (plist-get (agentq-syntax-check :code "(progn\n (let ((a 1))\n  a") :content)))
  (should (string-match-p "^line 1, column 6: a string opened here is never closed$"
                          (plist-get (agentq-syntax-check :code "(foo \"bar\n baz") :content)))
  ;; Nothing ran: #. was not evaluated.
  (should-not (file-exists-p "agentq-syntax-never")))

(ert-deftest sly-agent-q-syntax/packages-files-and-bad-calls ()
  ;; A DEFPACKAGE and IN-PACKAGE in the text are honoured; checking
  ;; interns nothing and leaves no package behind.
  (should (equal (plist-get (agentq-syntax-check
                             :code "(defpackage :agentq-syntax-pkg (:use :cl))\n(in-package :agentq-syntax-pkg)\n(agentq-syntax-pkg::f (agentq-syntax-fresh 1))")
                            :content)
                 "No problems: 3 forms read (nothing was evaluated)."))
  (should (string-match-p "^line 1, column 1: (in-package AGENTQ-SYNTAX-NOWHERE): no such package"
                          (plist-get (agentq-syntax-check :code "(in-package :agentq-syntax-nowhere) (a)") :content)))
  (should (equal (agentq-test-eval-ok "(list (find-package \"AGENTQ-SYNTAX-PKG\") (find-symbol \"AGENTQ-SYNTAX-FRESH\" \"CL-USER\")
                                             (remove-if-not (lambda (p) (search \"AGENT-Q-SYNTAX\" (package-name p))) (list-all-packages)))")
                 "=> (NIL NIL NIL)"))
  ;; A file.
  (let ((file (make-temp-file "agentq-syntax" nil ".lisp" "(defun ok () 1)\n\n(defun broken ()\n  (list 1 2)\n")))
    (unwind-protect
        (should (equal (plist-get (agentq-syntax-check :path file) :content)
                       "1 problem (1 form read, nothing evaluated):\nline 3, column 1: this ( is never closed"))
      (delete-file file)))
  (dolist (case '(((:path "/agentq/no/such/file.lisp") . "\\`Cannot read /agentq/no/such/file.lisp")
                  (() . "\\`Give \"code\"")
                  ((:code "(a)" :package "agentq-no-such-package") . "\\`Package AGENTQ-NO-SUCH-PACKAGE not found")))
    (let ((result (apply #'agentq-syntax-check (car case))))
      (should-not (plist-get result :success))
      (should (string-match-p (cdr case) (plist-get result :content))))))

(provide 'sly-agent-q-syntax-test)

;;; sly-agent-q-syntax-test.el ends here
