;;; sly-agent-q-repl-test.el --- The REPL buffer -*- lexical-binding: t; -*-

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-repl)

(defun agentq-repl-type (text)
  "Type TEXT at the prompt and press RET; wait for the next prompt.
Return what the REPL printed before it."
  (goto-char (point-max))
  (insert text)
  (let ((start (point-max)))
    (sly-agent-q-repl-return)
    (let ((deadline (+ (float-time) 20)))
      (while (and sly-agent-q-repl--job (< (float-time) deadline))
        (accept-process-output nil 0.02)))
    (should-not sly-agent-q-repl--job)
    (string-trim (replace-regexp-in-string "[^ \n>]*> \\'" "" (buffer-substring-no-properties (min start (point-max)) (point-max))))))

(defun agentq-repl-settle ()
  "Wait up to 20 s for the REPL's job to end, aborting its debugger if it shows."
  (let ((deadline (+ (float-time) 20)))
    (while (and sly-agent-q-repl--job (not (sly-agent-q-debugger-waiting-p))
                (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (when (sly-agent-q-debugger-waiting-p)
      (with-current-buffer sly-agent-q-debugger-buffer-name (sly-agent-q-debugger-abort)))
    (while (and sly-agent-q-repl--job (< (float-time) deadline))
      (accept-process-output nil 0.02))))

(ert-deftest sly-agent-q-repl/evaluates-and-shares-the-session ()
  (agentq-test-with-repl
    (should (string-match-p "CL-USER> \\'" (buffer-string)))
    (should (equal (agentq-repl-type "(defun agentq-repl-sq (x) (* x x))") "=> AGENTQ-REPL-SQ"))
    ;; The tools see what the REPL defined, and the other way round.
    (should (equal (agentq-test-content "(agentq-repl-sq 12)") "=> 144"))
    (agentq-test-eval-ok "(defvar *agentq-repl-from-tool* :here)")
    (should (equal (agentq-repl-type "*agentq-repl-from-tool*") "=> :HERE"))
    ;; * and ** are the last values.
    (agentq-repl-type "(+ 40 2)")
    (agentq-repl-type "(list 1)")
    (should (equal (agentq-repl-type "(list * **)") "=> ((1) 42)"))
    ;; The prompt follows the package.
    (agentq-repl-type "(defpackage :agentq-repl-pkg (:use :cl))")
    (agentq-repl-type "(in-package :agentq-repl-pkg)")
    (should (string-match-p "AGENTQ-REPL-PKG> \\'" (buffer-string)))))

(ert-deftest sly-agent-q-repl/incomplete-input-waits ()
  (agentq-test-with-repl
    (goto-char (point-max))
    (insert "(+ 1")
    (sly-agent-q-repl-return)
    ;; Not sent: a new line to keep typing.
    (should-not sly-agent-q-repl--job)
    (should (string-match-p "(\\+ 1\n *\\'" (buffer-string)))
    (should (equal (agentq-repl-type " 2)") "=> 3"))))

(ert-deftest sly-agent-q-repl/unreadable-input-is-reported-not-sent ()
  "Input that cannot be read is checked with check_syntax before it is
sent: not sent, the echo area says what and where (line, column), point
goes there, the input stays; fixed, it is sent; RET again on the same
input sends it as it is.  A stray close parenthesis is unreadable, not
incomplete; incomplete input still only continues the line."
  (agentq-test-with-repl
    (let ((said nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (format &rest args) (when format (push (apply #'format format args) said)))))
        (goto-char (point-max))
        (let ((start (point)))
          ;; An unknown package prefix, on the second line of the input.
          (insert "(list 1\n      (agentq-no-such-pkg::length '(a b)))")
          (sly-agent-q-repl-return)
          (should-not sly-agent-q-repl--job)
          (should (string-match-p "\\`Not sent, it cannot be read: line 2, column [0-9]+: .*AGENTQ-NO-SUCH-PKG"
                                  (car said)))
          (should (string-match-p "(list 1\n      (agentq-no-such-pkg::length '(a b)))\\'" (buffer-string)))
          ;; Point on the problem, in the input's second line.
          (should (= (line-number-at-pos) (1+ (line-number-at-pos start))))
          ;; Fixed, it is sent.
          (goto-char start)
          (search-forward "agentq-no-such-pkg::")
          (replace-match "")
          (should (equal (agentq-repl-type "") "=> (1 2)")))
        ;; A stray close parenthesis: reported, not a new line.
        (setq said nil)
        (goto-char (point-max))
        (let ((start (point)))
          (insert "(+ 1 2))")
          (sly-agent-q-repl-return)
          (should-not sly-agent-q-repl--job)
          (should (string-match-p "\\`Not sent, it cannot be read: line 1, column 8: .*[Uu]nmatched" (car said)))
          (should (= (point) (+ start 7)))
          (should (string-suffix-p "(+ 1 2))" (buffer-string)))
          ;; RET again on the same input: sent as it is, Lisp's reading answers.
          (sly-agent-q-repl-return)
          (should sly-agent-q-repl--job)
          (agentq-repl-settle)
          (should-not sly-agent-q-repl--job))
        ;; Lisp busy with another call: not checked (the check would wait,
        ;; Emacs with it), sent to wait its turn; Lisp's reading answers.
        (setq said nil)
        (let ((other (sly-agent-q-execute-tool-calls-async
                      (list (list :id "busy" :name "evaluate_lisp" :arguments (list :code "(sleep 0.5)")))
                      #'ignore)))
          (should (sly-agent-q--lisp-busy-p))
          (goto-char (point-max))
          (insert "(list 1 agentq-no-such-pkg::x)")
          (sly-agent-q-repl-return)
          (should sly-agent-q-repl--job)
          (should-not (cl-find-if (lambda (text) (string-prefix-p "Not sent" text)) said))
          (agentq-repl-settle)
          (should-not sly-agent-q-repl--job)
          (should (string-match-p "AGENTQ-NO-SUCH-PKG" (buffer-string)))
          (ignore other))
        ;; Incomplete: a new line, nothing said, nothing checked.
        (setq said nil)
        (goto-char (point-max))
        (insert "(list \"open")
        (sly-agent-q-repl-return)
        (should-not sly-agent-q-repl--job)
        (should-not said)
        (should (string-match-p "(list \"open\n\\'" (buffer-string)))
        (should (equal (agentq-repl-type "\")") "=> (\"open\n\")"))))))

(ert-deftest sly-agent-q-repl/errors-interrupt-and-history ()
  (agentq-test-with-repl
    ;; An error stops in the debugger (see sly-agent-q-debugger-test.el):
    ;; q goes back to the prompt.
    (goto-char (point-max))
    (insert "agentq-repl-no-such-variable")
    (sly-agent-q-repl-return)
    (let ((deadline (+ (float-time) 20)))
      (while (and (not (get-buffer sly-agent-q-debugger-buffer-name)) (< (float-time) deadline))
        (accept-process-output nil 0.02)))
    (with-current-buffer sly-agent-q-debugger-buffer-name (sly-agent-q-debugger-abort))
    (let ((deadline (+ (float-time) 20)))
      (while (and sly-agent-q-repl--job (< (float-time) deadline)) (accept-process-output nil 0.02)))
    (should (string-match-p "; Evaluation aborted on UNBOUND-VARIABLE" (buffer-string)))
    ;; C-c C-c interrupts a running evaluation; the session goes on.
    (goto-char (point-max))
    (insert "(loop)")
    (sly-agent-q-repl-return)
    (should sly-agent-q-repl--job)
    (sleep-for 0.2)
    (sly-agent-q-repl-interrupt)
    ;; It stops in the debugger, with CONTINUE and ABORT; ABORT ends it.
    (let ((deadline (+ (float-time) 10)))
      (while (and (not (sly-agent-q-debugger-waiting-p)) (< (float-time) deadline)) (accept-process-output nil 0.02)))
    (with-current-buffer sly-agent-q-debugger-buffer-name
      (should (string-match-p "\\[CONTINUE\\]" (buffer-string)))
      (sly-agent-q-debugger-abort))
    (let ((deadline (+ (float-time) 10)))
      (while (and sly-agent-q-repl--job (< (float-time) deadline)) (accept-process-output nil 0.02)))
    (should (string-match-p "Evaluation aborted on AGENT-Q::REPL-INTERRUPT" (buffer-string)))
    (should (equal (agentq-repl-type "(+ 1 2)") "=> 3"))
    ;; The history is written to its file, and read back by a new REPL.
    (should (string-match-p "(\\+ 1 2)" (with-temp-buffer (insert-file-contents sly-agent-q-repl-history-file) (buffer-string))))
    (let ((kill-buffer-query-functions nil)) (kill-buffer (current-buffer)))
    (with-current-buffer (sly-agent-q-repl)
      (should (equal (ring-ref comint-input-ring 0) "(+ 1 2)")))))

(ert-deftest sly-agent-q-repl/opening-leaves-the-last-value-alone ()
  (agentq-test-eval-ok "(list :before-the-repl)")
  (agentq-test-with-repl
    (should (string-match-p "CL-USER> \\'" (buffer-string)))
    (should (equal (agentq-repl-type "*") "=> (:BEFORE-THE-REPL)"))))

(ert-deftest sly-agent-q-repl/in-package-shortcut-completes-packages ()
  (agentq-test-with-repl
    (should (equal (agentq-repl-type "(defpackage :agentq-repl-inpkg (:use :cl))") "=> #<\"AGENTQ-REPL-INPKG\" package>"))
    ;; `,in-package', as in SLY, next to change-package.
    (should (eq (cdr (assoc "in-package" sly-agent-q-repl-shortcuts)) 'sly-agent-q-repl-in-package))
    (should (assoc "change-package" sly-agent-q-repl-shortcuts))
    ;; Its prompt completes the session's package names, typed in any case.
    (let ((table (sly-agent-q-repl--package-table)))
      (should (equal (all-completions "agentq-repl-inp" table) '("AGENTQ-REPL-INPKG")))
      (should (member "CL-USER" (all-completions "CL-" table))))
    (let ((package nil))
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (_prompt table &rest _)
                   (setq package (car (all-completions "agentq-repl-in" table))))))
        (sly-agent-q-repl-shortcut "in-package"))
      (should (equal package "AGENTQ-REPL-INPKG")))
    (let ((deadline (+ (float-time) 20)))
      (while (and sly-agent-q-repl--job (< (float-time) deadline))
        (accept-process-output nil 0.02)))
    (should (string-match-p "(in-package \"AGENTQ-REPL-INPKG\")\n=> #<\"AGENTQ-REPL-INPKG\" package>\nAGENTQ-REPL-INPKG> \\'"
                            (buffer-string)))
    (should (equal (agentq-repl-type "(package-name *package*)") "=> \"AGENTQ-REPL-INPKG\""))))

(ert-deftest sly-agent-q-repl/c-c-c-z-goes-back-to-the-lisp-buffer ()
  (require 'sly-agent-q-lisp-mode)
  (let ((first (generate-new-buffer "agentq-repl-first.lisp"))
        (second (generate-new-buffer "agentq-repl-second.lisp")))
    (unwind-protect
        (save-window-excursion
          (with-current-buffer first (lisp-mode))
          (with-current-buffer second (lisp-mode))
          ;; C-c C-z from FIRST opens the REPL; C-c C-z there comes back.
          (switch-to-buffer first)
          (call-interactively (key-binding (kbd "C-c C-z")))
          (should (eq (current-buffer) (get-buffer sly-agent-q-repl-buffer-name)))
          (switch-to-buffer second)    ; seen since, but not where C-c C-z was typed
          (switch-to-buffer sly-agent-q-repl-buffer-name)
          (should (eq (key-binding (kbd "C-c C-z")) #'sly-agent-q-repl-switch-to-lisp-buffer))
          (call-interactively (key-binding (kbd "C-c C-z")))
          (should (eq (window-buffer (selected-window)) first))
          ;; That buffer gone: the most recent Lisp buffer.
          (let ((kill-buffer-query-functions nil)) (kill-buffer first))
          (switch-to-buffer second)
          (switch-to-buffer sly-agent-q-repl-buffer-name)
          (sly-agent-q-repl-switch-to-lisp-buffer)
          (should (eq (window-buffer (selected-window)) second)))
      (let ((kill-buffer-query-functions nil))
        (dolist (buffer (list first second (get-buffer sly-agent-q-repl-buffer-name)))
          (when (buffer-live-p buffer) (kill-buffer buffer)))))))

(provide 'sly-agent-q-repl-test)

;;; sly-agent-q-repl-test.el ends here
