;;; sly-agent-q-emacs-test.el --- Lisp asks Emacs, and calls made while Emacs waits -*- lexical-binding: t; -*-

;;; Commentary:

;; `agent-q:eval-in-emacs' from evaluated code is served by the Emacs call
;; that waits for it; calls made while Emacs waits for Lisp (a wait
;; function, a timer, Elisp that Lisp asked for) are refused at once with
;; a clear error and never stretch the outer call.

;;; Code:

(require 'sly-agent-q-test-helpers)

(ert-deftest sly-agent-q-emacs/eval-in-emacs-returns-the-printed-value ()
  (should (equal (agentq-test-eval-ok "(agent-q:eval-in-emacs \"(+ 1 2)\")") "=> \"3\""))
  (should (equal (agentq-test-eval-ok "(agent-q:eval-in-emacs '(concat \"a\" \"b\" (string ?c)))")
                 "=> \"\\\"abc\\\"\""))
  (should (equal (agentq-test-eval-ok "(agent-q:eval-in-emacs '(list :a 1.5 [1 2] nil))")
                 "=> \"(:a 1.5 [1 2] nil)\""))
  ;; Emacs's own state, from Lisp.
  (with-temp-buffer
    (rename-buffer "agentq eval-in-emacs test" t)
    (let ((name (buffer-name)))
      (should (equal (agentq-test-eval-ok "(read-from-string (agent-q:eval-in-emacs \"(buffer-name)\"))")
                     (format "=> %S\n=> %d" name (+ 2 (length name))))))))

(ert-deftest sly-agent-q-emacs/an-elisp-error-is-an-emacs-error ()
  (should (equal (agentq-test-eval-ok
                  "(handler-case (agent-q:eval-in-emacs \"(car 5)\")
                     (agent-q:emacs-error (e) (agent-q:emacs-error-message e)))")
                 "=> \"Wrong type argument: listp, 5\""))
  (let ((content (agentq-test-eval-fails "(agent-q:eval-in-emacs \"(error \\\"boom\\\")\")")))
    (should (string-prefix-p "[ERROR] AGENT-Q:EMACS-ERROR\nEmacs: boom" content)))
  (should (string-match-p "Only one form"
                          (agentq-test-eval-fails "(agent-q:eval-in-emacs \"1 2\")")))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-emacs/quit-in-the-middle-of-a-request ()
  "C-g while Emacs evaluates the form quits the call; the session goes on."
  (should (eq (condition-case nil
                  (progn (agentq-test-eval "(progn (agent-q:eval-in-emacs \"(signal 'quit nil)\") (loop))"
                                           :timeout 10)
                         'returned)
                (quit 'quitted))
              'quitted))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-emacs/the-time-limit-pauses-while-emacs-works ()
  (should (equal (agentq-test-eval-ok "(agent-q:eval-in-emacs \"(progn (sleep-for 1.5) 'done)\")" :timeout 1)
                 "=> \"done\"")))

(ert-deftest sly-agent-q-emacs/lisp-elisp-lisp-reentry-is-refused ()
  (let ((content (agentq-test-eval-ok
                  "(agent-q:eval-in-emacs \"(plist-get (car (sly-agent-q-execute-tool-calls
                     '((:id \\\"r\\\" :name \\\"evaluate_lisp\\\" :arguments (:code \\\"(+ 1 2)\\\"))))) :content)\")")))
    (should (string-match-p "\\[ERROR\\] BUSY" content)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-emacs/only-the-evaluation-thread-may-ask ()
  (should (string-match-p
           "no Emacs caller is waiting"
           (agentq-test-eval-ok
            "(mp:process-join (mp:process-run-function \"asker\"
               (lambda () (handler-case (agent-q:eval-in-emacs \"1\")
                            (agent-q:emacs-error (e) (agent-q:emacs-error-message e))))))"))))

(ert-deftest sly-agent-q-emacs/calls-from-a-wait-function-are-refused-at-once ()
  "A wait function calling evaluate_lisp while (loop) runs: BUSY at once, and the
outer call still times out on time."
  (let* ((inner nil)
         (sly-agent-q-wait-functions
          (list (lambda (_seconds)
                  (unless inner
                    (setq inner (plist-get (car (sly-agent-q-execute-tool-calls
                                                 '((:id "i" :name "evaluate_lisp" :arguments (:code "(+ 40 2)")))))
                                           :content))))))
         (start (float-time))
         (outer (agentq-test-eval-fails "(loop)" :timeout 1.5)))
    (should (string-prefix-p "[ERROR] BUSY\n" inner))
    (should (string-prefix-p "[ERROR] TIMEOUT\n" outer))
    (should (< (- (float-time) start) 4)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-emacs/calls-from-a-timer-run-while-waiting-are-refused ()
  (let* ((inner nil)
         (timer (run-at-time 0.3 nil (lambda ()
                                       (setq inner (plist-get (car (sly-agent-q-execute-tool-calls
                                                                    '((:id "i" :name "evaluate_lisp"
                                                                       :arguments (:code "(+ 40 2)")))))
                                                              :content)))))
         ;; A wait function that lets timers run, as a spinner might.
         (sly-agent-q-wait-functions (list (lambda (_seconds) (sit-for 0.05))))
         (start (float-time)))
    (unwind-protect
        (should (string-prefix-p "[ERROR] TIMEOUT\n" (agentq-test-eval-fails "(loop)" :timeout 1.5)))
      (cancel-timer timer))
    (should (string-prefix-p "[ERROR] BUSY\n" inner))
    (should (< (- (float-time) start) 4)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-emacs/calls-from-an-execution-hook-are-answered ()
  "A hook runs before and after the evaluation, not while Emacs waits for it:
a call it makes is answered, and the outer call goes on."
  (let* ((inner nil)
         (sly-agent-q-tool-execution-functions
          (list (lambda (phase _name args _result)
                  (when (and (eq phase :before) (equal (gethash "code" args) "(+ 1 2)") (not inner))
                    (setq inner (plist-get (car (sly-agent-q-execute-tool-calls
                                                 '((:id "i" :name "evaluate_lisp" :arguments (:code "(+ 40 2)")))))
                                           :content)))))))
    (should (equal (agentq-test-eval-ok "(+ 1 2)") "=> 3"))
    (should (equal inner "=> 42"))))

;;; sly-agent-q-emacs-test.el ends here
