;;; sly-agent-q-async-test.el --- Calls that do not block Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; `sly-agent-q-execute-tool-calls-async' with the real module and ECL:
;; the id comes back at once, the callback runs later from the event
;; loop with the results the synchronous function gives, jobs run in
;; order, `sly-agent-q-cancel' interrupts, and approvals, hooks, Elisp
;; tools and eval-in-emacs are served on the main thread.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defun agentq-async-test-wait (jobs-done &optional seconds)
  "Run the event loop until (funcall JOBS-DONE) or SECONDS (default 20) pass."
  (let ((end (+ (float-time) (or seconds 20))))
    (while (and (not (funcall jobs-done)) (< (float-time) end))
      (accept-process-output nil 0.01))
    (should (funcall jobs-done))))

(defun agentq-async-test-run (calls &optional seconds)
  "Run CALLS asynchronously, as the person's (see `agentq-test-call'), and wait.
Return their results."
  (let* ((results 'pending)
         (job (let ((sly-agent-q-call-origin (or sly-agent-q-call-origin "user")))
                (sly-agent-q-execute-tool-calls-async calls (lambda (r) (setq results r))))))
    (should (integerp job))
    (agentq-async-test-wait (lambda () (not (eq results 'pending))) seconds)
    (mapc #'agentq-test-check-result results)
    results))

(ert-deftest sly-agent-q-async/results-as-the-synchronous-function-gives ()
  (let* ((calls '((:id "a" :name "evaluate_lisp" :arguments (:code "(values 1 2)"))
                  (:id "b" :name "no_such_tool" :arguments (:x 1))
                  (:id "c" :name "evaluate_lisp" :arguments "not json")))
         (async (agentq-async-test-run calls))
         (sync (sly-agent-q-execute-tool-calls calls))
         (strip (lambda (results)
                  (mapcar (lambda (r) (plist-put (copy-sequence r) :metadata nil)) results))))
    (should (equal (funcall strip async) (funcall strip sync)))
    (should (equal (plist-get (car async) :content) "=> 1\n=> 2"))))

(ert-deftest sly-agent-q-async/emacs-is-not-blocked ()
  (let* ((results 'pending)
         (ticks 0)
         (timer (run-at-time 0.05 0.05 (lambda () (cl-incf ticks)))))
    (unwind-protect
        (progn
          (sly-agent-q-execute-tool-calls-async
           '((:id "s" :name "evaluate_lisp" :arguments (:code "(progn (sleep 1) :slept)")))
           (lambda (r) (setq results r)))
          ;; Back before the evaluation's end (no clock: a loaded machine is slow).
          (should (eq results 'pending))
          (agentq-async-test-wait (lambda () (not (eq results 'pending)))))
      (cancel-timer timer))
    (should (equal (plist-get (car results) :content) "=> :SLEPT"))
    ;; Timers ran while Lisp worked.
    (should (> ticks 10))))

(ert-deftest sly-agent-q-async/wake-ahead-readies-an-idle-worker-and-never-waits ()
  ;; Idle: the worker is told, runs its throwaway evaluation, polls; the
  ;; calls that follow, at once, during its window and after it, are
  ;; answered as ever.
  (agentq-test-eval-ok "(defvar *agentq-wake-ahead-n* 0)")
  (let ((jobs (plist-get (sly-agent-q-runtime-status) :jobs)))
    (should (sly-agent-q-runtime-wake-ahead))
    (should (equal (agentq-test-eval-ok "(incf *agentq-wake-ahead-n*)") "=> 1"))
    (should (sly-agent-q-runtime-wake-ahead))
    (sleep-for 0.02)
    (should (equal (agentq-test-eval-ok "(incf *agentq-wake-ahead-n*)") "=> 2"))
    (sleep-for 0.1)                     ; past the window: the worker sleeps
    (should (equal (agentq-test-eval-ok "(incf *agentq-wake-ahead-n*)") "=> 3"))
    ;; Each throwaway evaluation is a job of its own, and only that: the
    ;; REPL's history (*, +) is the last real evaluation's.
    (should (>= (plist-get (sly-agent-q-runtime-status) :jobs) (+ jobs 3)))
    (agentq-test-eval-ok "(+ 40 2)")
    ;; Emacs's side of a call, warmed too, is no call: not counted, no hook.
    (let* ((calls (lambda () (plist-get (cdr (assoc "evaluate_lisp" (sly-agent-q-tool-stats))) :calls)))
           (before (funcall calls))
           (hooked nil)
           (sly-agent-q-tool-execution-functions (list (lambda (&rest _) (setq hooked t)))))
      (should (sly-agent-q-runtime-wake-ahead))
      (should (= (funcall calls) before))
      (should-not hooked))
    (sleep-for 0.02)
    (should (equal (agentq-test-eval-ok "(list * +)") "=> (42 (+ 40 2))")))
  ;; Off: nothing is told.
  (let ((sly-agent-q-wake-ahead-window nil))
    (should-not (sly-agent-q-runtime-wake-ahead)))
  ;; Busy: it returns at once, queues nothing, and the running job and the
  ;; next call are untouched.
  (let ((results 'pending))
    (sly-agent-q-execute-tool-calls-async
     '((:id "s" :name "evaluate_lisp" :arguments (:code "(progn (sleep 0.5) :slept)")))
     (lambda (r) (setq results r)))
    (sleep-for 0.1)
    (should-not (sly-agent-q-runtime-wake-ahead))
    (should (eq results 'pending))
    (agentq-async-test-wait (lambda () (not (eq results 'pending))))
    (should (equal (plist-get (car results) :content) "=> :SLEPT")))
  (should (equal (agentq-test-eval-ok "(incf *agentq-wake-ahead-n*)") "=> 4")))

(ert-deftest sly-agent-q-async/jobs-run-in-order ()
  (let ((order nil))
    (dolist (n '(1 2 3))
      (sly-agent-q-execute-tool-calls-async
       `((:id ,(format "%d" n) :name "evaluate_lisp" :arguments (:code ,(format "(progn (sleep 0.0%d) %d)" (- 4 n) n))))
       (lambda (r) (push (plist-get (car r) :content) order))))
    (agentq-async-test-wait (lambda () (= (length order) 3)))
    (should (equal (reverse order) '("=> 1" "=> 2" "=> 3")))))

(ert-deftest sly-agent-q-async/cancel-interrupts-and-keeps-the-session ()
  (agentq-test-eval-ok "(defun agentq-async-kept () :kept)")
  (let* ((first 'pending) (second 'pending)
         (running (sly-agent-q-execute-tool-calls-async
                   '((:id "l" :name "evaluate_lisp" :arguments (:code "(loop)" :timeout 30))
                     (:id "m" :name "evaluate_lisp" :arguments (:code "(+ 1 2)")))
                   (lambda (r) (setq first r))))
         (queued (sly-agent-q-execute-tool-calls-async
                  '((:id "q" :name "evaluate_lisp" :arguments (:code "(+ 1 2)")))
                  (lambda (r) (setq second r))))
         (start (float-time)))
    (should (sly-agent-q-cancel queued))
    (sleep-for 0.2)
    (should (sly-agent-q-cancel running))
    (agentq-async-test-wait (lambda () (not (or (eq first 'pending) (eq second 'pending)))))
    (should (< (- (float-time) start) 5))
    (should (string-prefix-p "[ERROR] INTERRUPTED\n" (plist-get (nth 0 first) :content)))
    (should (string-match-p "cancelled" (plist-get (nth 0 first) :content)))
    ;; The rest of a cancelled job, and a cancelled queued job, never run.
    (should (string-match-p "cancelled (sly-agent-q-cancel) before it ran" (plist-get (nth 1 first) :content)))
    (should (string-match-p "before it ran" (plist-get (car second) :content)))
    (should-not (sly-agent-q-cancel running)))
  (should (equal (agentq-test-eval-ok "(agentq-async-kept)") "=> :KEPT")))

(ert-deftest sly-agent-q-async/approvals-hooks-and-elisp-tools-on-the-main-thread ()
  (let* ((main main-thread)
         (asked nil) (hooked nil) (handled nil)
         (sly-agent-q-approval-function
          (lambda (name args)
            (push (list name (gethash "x" args) (eq (current-thread) main)) asked)
            (if (equal (gethash "x" args) "yes") :approved :denied)))
         (sly-agent-q-tool-execution-functions
          (list (lambda (phase name _args _result) (push (list phase name) hooked)))))
    (sly-agent-q-define-tool "agentq_async_danger" "A dangerous test tool." '((:name "x" :type :string))
                             :required '("x") :safety-level :dangerous
                             :handler (lambda (args)
                                        (setq handled (eq (current-thread) main))
                                        (concat "did " (gethash "x" args))))
    (let ((results (agentq-async-test-run '((:id "1" :name "agentq_async_danger" :arguments (:x "yes"))
                                            (:id "2" :name "agentq_async_danger" :arguments (:x "no"))))))
      (should (equal (plist-get (nth 0 results) :content) "did yes"))
      (should (equal (plist-get (nth 1 results) :content) "User denied tool execution")))
    (should (equal (reverse asked) '(("agentq_async_danger" "yes" t) ("agentq_async_danger" "no" t))))
    (should handled)
    (should (equal (reverse hooked) '((:before "agentq_async_danger") (:after "agentq_async_danger")
                                      (:error "agentq_async_danger"))))))

(ert-deftest sly-agent-q-async/eval-in-emacs-from-an-async-job ()
  (let ((results (agentq-async-test-run
                  '((:id "e" :name "evaluate_lisp"
                     :arguments (:code "(agent-q:eval-in-emacs \"(format \\\"%s\\\" (+ 1 2))\")"))))))
    (should (equal (plist-get (car results) :content) "=> \"\\\"3\\\"\""))))

(ert-deftest sly-agent-q-async/a-failing-callback-is-reported-not-raised ()
  (let ((after 'pending))
    (sly-agent-q-execute-tool-calls-async '((:id "x" :name "evaluate_lisp" :arguments (:code "1")))
                                          (lambda (_) (error "Callback bug")))
    (sly-agent-q-execute-tool-calls-async '((:id "y" :name "evaluate_lisp" :arguments (:code "2")))
                                          (lambda (r) (setq after r)))
    (agentq-async-test-wait (lambda () (not (eq after 'pending))))
    (should (equal (plist-get (car after) :content) "=> 2"))))

(ert-deftest sly-agent-q-async/sync-calls-still-work-while-a-job-is-queued ()
  (let ((results 'pending))
    (sly-agent-q-execute-tool-calls-async '((:id "s" :name "evaluate_lisp" :arguments (:code "(sleep 0.3)")))
                                          (lambda (r) (setq results r)))
    ;; Waits for the async evaluation, then runs.
    (should (equal (agentq-test-eval-ok "(+ 1 2)") "=> 3"))
    (agentq-async-test-wait (lambda () (not (eq results 'pending))))))

(ert-deftest sly-agent-q-async/evaluate-command-with-a-prefix-argument ()
  "C-u M-x sly-agent-q-evaluate runs in the background and shows the result when done."
  (let* ((shown nil)
         (job (cl-letf (((symbol-function 'sly-agent-q--show-result)
                         (lambda (result) (setq shown (plist-get result :content)))))
                (prog1 (sly-agent-q-evaluate "(progn (sleep 0.3) (+ 1 2))" nil t)
                  (should-not shown)
                  (agentq-async-test-wait (lambda () shown))))))
    (should (integerp job))
    (should (equal shown "=> 3"))))

(ert-deftest sly-agent-q-async/a-sync-call-serves-the-async-job-it-waits-behind ()
  "An async job waiting for Emacs holds the worker; a synchronous call queued
behind it serves that request instead of waiting out its time limit."
  (let ((results 'pending)
        (start (float-time))
        (sly-agent-q-call-origin "user"))
    (sly-agent-q-execute-tool-calls-async
     '((:id "w" :name "evaluate_lisp" :arguments (:code "(agent-q:eval-in-emacs \"(progn (sleep-for 0.2) 'served)\")")))
     (lambda (r) (setq results r)))
    ;; The job runs and asks; no event loop (no filter) serves it meanwhile.
    (let ((end (+ (float-time) 0.1))) (while (< (float-time) end)))
    (should (equal (agentq-test-eval-ok "(+ 1 2)" :timeout 20) "=> 3"))
    (should (< (- (float-time) start) 5))
    (agentq-async-test-wait (lambda () (not (eq results 'pending))))
    (should (equal (plist-get (car results) :content) "=> \"served\""))))

;;; sly-agent-q-async-test.el ends here
