;;; sly-agent-q-repl-output-test.el --- Output as it happens, one history, values to inspect -*- lexical-binding: t; -*-

;;; Commentary:

;; Through the real module: interactive evaluations hand their output over
;; while they run; the REPL shows it before the value, keeps it when
;; interrupted, clears it with C-c C-o; evaluations made from Lisp
;; buffers and the minibuffer are written in the REPL; an older result
;; never replaces a newer one; `,' offers shortcuts; values are buttons
;; that inspect them.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-repl)
(require 'sly-agent-q-lisp-mode)

(defun agentq-output-wait (predicate &optional seconds)
  "Serve asynchronous calls until PREDICATE is true (at most SECONDS, 20 by default)."
  (let ((deadline (+ (float-time) (or seconds 20))))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (funcall predicate)))

(defun agentq-output-send (text)
  "Type TEXT at the REPL's prompt and press RET, without waiting.
Return where the answer starts."
  (goto-char (point-max))
  (insert text)
  (sly-agent-q-repl-return)
  (marker-position (process-mark (get-buffer-process (current-buffer)))))

(defun agentq-output-type (text)
  "Type TEXT at the prompt, press RET and wait for the next prompt."
  (agentq-output-send text)
  (should (agentq-output-wait (lambda () (null sly-agent-q-repl--job)))))

(ert-deftest sly-agent-q-repl-output/chunks-come-before-the-value ()
  ;; The API under the REPL: several pieces while the loop sleeps, in
  ;; order, all before the callback; the output is not repeated in the
  ;; result.
  (let ((events nil) (done nil))
    (sly-agent-q-execute-tool-calls-async
     (list (list :id "o" :name "evaluate_lisp"
                 :arguments (list :code "(dotimes (i 3) (print i) (sleep 0.3)) :done")))
     (lambda (results) (push (cons :result (car results)) events) (setq done t))
     nil
     (lambda (text) (push (cons :output text) events)))
    (should (agentq-output-wait (lambda () done)))
    (setq events (nreverse events))
    (let ((outputs (cl-remove-if-not (lambda (e) (eq (car e) :output)) events)))
      (should (>= (length outputs) 3))
      (should (equal (mapconcat #'cdr outputs "") "\n0 \n1 \n2 ")))
    ;; The result comes last, and holds only the value.
    (should (eq (car (car (last events))) :result))
    (should (equal (plist-get (cdr (car (last events))) :content) "=> :DONE")))
  ;; Without ON-OUTPUT the contract is unchanged: the output is in the result.
  (should (equal (agentq-test-content "(dotimes (i 2) (print i)) :done")
                 "[stdout]\n\n0 \n1 \n\n=> :DONE")))

(ert-deftest sly-agent-q-repl-output/streamed-output-is-bounded ()
  (agentq-test-with-custom ((sly-agent-q-output-limit 100))
    (let ((text "") (result nil))
      (sly-agent-q-execute-tool-calls-async
       (list (list :id "o" :name "evaluate_lisp"
                   :arguments (list :code "(dotimes (i 100) (write-string \"0123456789\")) (values)")))
       (lambda (results) (setq result (car results)))
       nil
       (lambda (chunk) (setq text (concat text chunk))))
      (should (agentq-output-wait (lambda () result)))
      (should (= (length text) 100))
      (should (string-match-p "\\[stdout\\]\n\\[\\.\\.\\. output truncated: 900 more characters not shown (limit 100)"
                              (plist-get result :content))))))

(ert-deftest sly-agent-q-repl-output/repl-shows-output-as-it-comes ()
  (agentq-test-with-repl
    (let ((start (agentq-output-send "(dotimes (i 3) (print i) (sleep 0.3))")))
      ;; 0 and 1 are in the buffer while the evaluation still runs.
      (should (agentq-output-wait (lambda () (string-match-p "^1 " (buffer-substring start (point-max))))))
      (should sly-agent-q-repl--job)
      (should-not (string-match-p "=> " (buffer-substring start (point-max))))
      (should (agentq-output-wait (lambda () (null sly-agent-q-repl--job))))
      (should (equal (buffer-substring-no-properties start (point-max))
                     "\n0 \n1 \n2 \n=> NIL\nCL-USER> "))
      ;; Output is shown in its face, the value after it on a line of its own.
      (should (eq (get-text-property (1+ start) 'font-lock-face) 'sly-agent-q-repl-output)))))

(ert-deftest sly-agent-q-repl-output/interrupt-keeps-partial-output ()
  (agentq-test-with-repl
    (let ((start (agentq-output-send "(progn (print :before-the-loop) (loop))")))
      (should (agentq-output-wait (lambda () (string-match-p ":BEFORE-THE-LOOP" (buffer-substring start (point-max))))))
      ;; C-c C-c stops it in the debugger; ABORT there ends it.
      (sly-agent-q-repl-interrupt)
      (should (agentq-output-wait (lambda () (sly-agent-q-debugger-waiting-p))))
      (with-current-buffer sly-agent-q-debugger-buffer-name (sly-agent-q-debugger-abort))
      (should (agentq-output-wait (lambda () (null sly-agent-q-repl--job))))
      (let ((text (buffer-substring-no-properties start (point-max))))
        ;; Once, before the abort, which is on a line of its own.
        (should (string-match-p "\\`\n:BEFORE-THE-LOOP \n; Evaluation aborted on AGENT-Q::REPL-INTERRUPT" text))
        (should (= 1 (cl-count-if (lambda (_) t) (split-string text ":BEFORE-THE-LOOP") :start 1))))
      (should (string-match-p "=> 3\nCL-USER> \\'" (progn (agentq-output-type "(+ 1 2)") (buffer-string)))))))

(ert-deftest sly-agent-q-repl-output/clear-last-output ()
  (agentq-test-with-repl
    (agentq-output-type "(progn (print :first) 1)")
    (agentq-output-type "(progn (print :second) 2)")
    (insert "(+ 4")                         ; typed, not sent
    (sly-agent-q-repl-clear-output)
    (let ((text (buffer-substring-no-properties (point-min) (point-max))))
      (should (string-match-p ":FIRST" text))
      (should (string-match-p "=> 1" text))
      (should-not (string-match-p "\n:SECOND" text))
      (should-not (string-match-p "=> 2" text))
      (should (string-match-p "(progn (print :second) 2)\n; output cleared\n[^ ]*> (\\+ 4\\'" text)))
    (should (eq (key-binding (kbd "C-c C-o")) #'sly-agent-q-repl-clear-output))
    ;; The prompt still works.
    (insert " 5)")
    (goto-char (point-max))
    (sly-agent-q-repl-return)
    (should (agentq-output-wait (lambda () (null sly-agent-q-repl--job))))
    (should (string-match-p "=> 9\nCL-USER> \\'" (buffer-string)))))

(ert-deftest sly-agent-q-repl-output/minibuffer-and-lisp-buffer-results-go-to-the-repl ()
  (agentq-test-with-repl
    (let ((repl (current-buffer)))
      (insert "(list :typed")                 ; what the person is typing stays
      ;; M-x sly-agent-q-evaluate
      (with-temp-buffer
        (should (equal (sly-agent-q-evaluate "(+ 20 1)") "=> 21")))
      ;; C-x C-e in a Lisp buffer (asynchronous)
      (with-temp-buffer
        (rename-buffer "agentq-output-source.lisp" t)
        (lisp-mode)
        (insert "(progn (princ :printed) (* 6 7))")
        (sly-agent-q-eval-last-sexp)
        (should (agentq-output-wait (lambda () (zerop sly-agent-q-lisp--running)))))
      (with-current-buffer repl
        (let ((text (buffer-substring-no-properties (point-min) (point-max))))
          (should (string-match-p "; From the minibuffer:\n(\\+ 20 1)\n=> 21\n; From agentq-output-source.lisp[^:]*:\n(progn (princ :printed) (\\* 6 7))\n\\[stdout\\]\nPRINTED\n\n=> 42\nCL-USER> (list :typed\\'" text)))
        ;; In the REPL's history too.
        (should (equal (ring-ref comint-input-ring 0) "(progn (princ :printed) (* 6 7))"))
        ;; The prompt is still the prompt: finishing the form sends it.
        (insert ")")
        (sly-agent-q-repl-return)
        (should (agentq-output-wait (lambda () (null sly-agent-q-repl--job))))
        (should (string-match-p "=> (:TYPED)\nCL-USER> \\'" (buffer-string)))))))

(ert-deftest sly-agent-q-repl-output/an-older-result-never-replaces-a-newer-one ()
  (let ((sly-agent-q-evaluation-functions nil))
    (when (get-buffer "*sly-agent-q result*") (kill-buffer "*sly-agent-q result*"))
    (with-temp-buffer
      (lisp-mode)
      ;; The slow one starts first (in the background), the quick one
      ;; waits behind it and is shown; the slow one's result, coming
      ;; after, does not replace it.
      (insert "(progn (sleep 0.5) (values :slow :one))")
      (sly-agent-q-eval-last-sexp)
      (should (equal (sly-agent-q-evaluate "(values :quick :two)") "=> :QUICK\n=> :TWO"))
      (should (agentq-output-wait (lambda () (zerop sly-agent-q-lisp--running))))
      (with-current-buffer "*sly-agent-q result*"
        (should (equal (buffer-string) "=> :QUICK\n=> :TWO")))
      ;; Two in the background, the first slower: the last is shown.
      (erase-buffer)
      (insert "(progn (sleep 0.3) (values :first 1))")
      (sly-agent-q-eval-last-sexp)
      (erase-buffer)
      (insert "(values :second 2)")
      (sly-agent-q-eval-last-sexp)
      (should (agentq-output-wait (lambda () (zerop sly-agent-q-lisp--running))))
      (with-current-buffer "*sly-agent-q result*"
        (should (equal (buffer-string) "=> :SECOND\n=> 2"))))))

(ert-deftest sly-agent-q-repl-output/interrupted-evaluations-leave-a-line ()
  (agentq-test-with-repl
    (let ((repl (current-buffer)))
      ;; C-g in the minibuffer command (a quit from a wait function is one).
      (let ((sly-agent-q-wait-functions (list (lambda (seconds) (when (> seconds 0.2) (signal 'quit nil))))))
        (should (eq :quit (condition-case nil
                              (progn (sly-agent-q-evaluate "(loop)") :returned)
                            (quit :quit)))))
      ;; C-c C-b in a Lisp buffer.
      (with-temp-buffer
        (rename-buffer "agentq-output-loop.lisp" t)
        (lisp-mode)
        (insert "(loop)")
        (sly-agent-q-eval-last-sexp)
        (sleep-for 0.2)
        (sly-agent-q-interrupt)
        (should (agentq-output-wait (lambda () (zerop sly-agent-q-lisp--running)))))
      (with-current-buffer repl
        (let ((text (buffer-substring-no-properties (point-min) (point-max))))
          (should (string-match-p "; From the minibuffer:\n(loop)\n; Interrupted (C-g)" text))
          (should (string-match-p "; From agentq-output-loop.lisp[^:]*:\n(loop)\n\\[ERROR\\] INTERRUPTED" text))))
      (should (equal (agentq-test-content "(+ 1 2)") "=> 3")))))

(ert-deftest sly-agent-q-repl-output/comma-shortcuts ()
  (agentq-test-with-repl
    (should (eq (key-binding ",") #'sly-agent-q-repl-comma))
    ;; Inside a form, `,' is a comma.
    (insert "`(a ")
    (let ((last-command-event ?,)) (sly-agent-q-repl-comma))
    (should (string-match-p "`(a ,\\'" (buffer-string)))
    (delete-region (process-mark (get-buffer-process (current-buffer))) (point-max))
    ;; At an empty prompt, it asks which shortcut (completing-read).
    (let ((asked nil))
      ;; The command, then the package (which completes the session's
      ;; packages since ,in-package came).
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (prompt collection &rest _)
                   (if (equal prompt "REPL command: ")
                       (progn (setq asked (cons prompt (all-completions "" collection)))
                              "change-package")
                     "agentq-output-pkg"))))
        (agentq-test-eval-ok "(defpackage :agentq-output-pkg (:use :cl))")
        (sly-agent-q-repl-comma)
        (should (equal (car asked) "REPL command: "))
        (should (equal (sort (cdr asked) #'string<)
                       '("change-package" "clear" "clear-output" "in-package" "interrupt" "quit" "restart-worker")))
        (should (agentq-output-wait (lambda () (null sly-agent-q-repl--job))))
        (should (string-match-p "AGENTQ-OUTPUT-PKG> \\'" (buffer-string)))))
    (agentq-output-type "(in-package :cl-user)")
    (agentq-output-type "(defvar *agentq-output-kept* 12)")
    ;; clear empties the buffer but for the prompt.
    (sly-agent-q-repl-shortcut "clear")
    (should (equal (buffer-substring-no-properties (point-min) (point-max)) "CL-USER> "))
    ;; quit closes the REPL; the session stays.
    (let ((buffer (current-buffer)))
      (sly-agent-q-repl-shortcut "quit")
      (should-not (buffer-live-p buffer)))
    (should (equal (agentq-test-content "*agentq-output-kept*") "=> 12"))))

(ert-deftest sly-agent-q-repl-output/restart-worker-shortcut ()
  ;; In a child Emacs: the session of this one keeps its worker.
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q-repl)
                  (setq sly-agent-q-repl-history-file nil)
                  (with-current-buffer (sly-agent-q-repl)
                    (sly-agent-q--evaluate "(defvar *agentq-output-kept* 12)")
                    (sly-agent-q-repl-shortcut "restart-worker")
                    (princ (buffer-substring-no-properties (point-min) (point-max)))
                    (terpri)
                    (princ (plist-get (sly-agent-q--evaluate "*agentq-output-kept*") :content))
                    (kill-emacs 0)))
                :timeout 40)))
    (should (equal code 0))
    ;; Said above the prompt; the definitions are kept.
    (should (string-match-p "; The Lisp session continues on a fresh worker thread, every definition kept.\nCL-USER> \n=> 12\\'" stdout))))

(ert-deftest sly-agent-q-repl-output/values-are-buttons-that-inspect ()
  (agentq-test-with-repl
    (let ((start (point-max)))
      (agentq-output-type "(values (list 1 2) \"two\")")
      (let ((buttons nil))
        (save-excursion
          (goto-char start)
          (while (let ((b (next-button (point)))) (when b (push b buttons) (goto-char (button-end b))))))
        (setq buttons (nreverse buttons))
        (should (equal (mapcar (lambda (b) (buffer-substring-no-properties (button-start b) (button-end b))) buttons)
                       '("(1 2)" "\"two\"")))
        ;; `*' is the first value; clicking the second inspects it.
        (when (get-buffer "*sly-agent-q inspector*") (kill-buffer "*sly-agent-q inspector*"))
        (push-button (button-start (cadr buttons)))
        (should (agentq-output-wait (lambda () (get-buffer "*sly-agent-q inspector*"))))
        (with-current-buffer "*sly-agent-q inspector*"
          (should (string-match-p "\"two\"" (buffer-string)))
          (should-not (string-match-p "ERROR" (buffer-string))))
        ;; The first value, a list.
        (kill-buffer "*sly-agent-q inspector*")
        (push-button (button-start (car buttons)))
        (should (agentq-output-wait (lambda () (get-buffer "*sly-agent-q inspector*"))))
        (with-current-buffer "*sly-agent-q inspector*"
          (should (string-match-p "(1 2)" (buffer-string)))
          (should-not (string-match-p "ERROR" (buffer-string))))))
    ;; Values the session no longer keeps say so.
    (should (string-match-p "no longer kept" (agentq-test-content "(agent-q::repl-value 0)")))
    ;; An error, or no values, has no button.
    (let ((start (point-max)))
      (agentq-output-type "(values)")
      (should-not (next-button start)))))

(provide 'sly-agent-q-repl-output-test)

;;; sly-agent-q-repl-output-test.el ends here
