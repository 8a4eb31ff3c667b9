;;; run-tests.el --- run_tests against FiveAM called directly -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/run-tests.el
;; One FiveAM suite of 20 tests (50 checks each) defined in the session,
;; run alternately by the run_tests tool (by name: per-test results
;; collected) and by evaluate_lisp calling FIVEAM:RUN directly (its
;; report printed to nowhere), both as tool calls through
;; `sly-agent-q-execute-tool-calls', so that the call's own cost is in
;; both.  40 rounds after 5 of warm-up; prints the medians and the
;; overhead, target at most 10%:
;;   bench: run_tests_overhead pct=… run_tests_ms=… fiveam_ms=… loadavg=… target_pct=10

(require 'sly-agent-q)

(defun run-tests-bench--call (name arguments)
  "The content of one call of tool NAME with ARGUMENTS."
  (plist-get (car (sly-agent-q-execute-tool-calls
                   (list (list :id "b" :name name :arguments arguments))))
             :content))

(defun run-tests-bench--ms (name arguments)
  "Milliseconds one call of tool NAME with ARGUMENTS takes."
  (let ((start (float-time)))
    (run-tests-bench--call name arguments)
    (* 1000 (- (float-time) start))))

(let ((sly-agent-q-call-origin "user"))
  ;; FiveAM loaded the way run_tests loads it, then the suite.
  (run-tests-bench--call "load_system" '(:name "fiveam"))
  (run-tests-bench--call
   "evaluate_lisp"
   '(:code "(progn (fiveam:def-suite agentq-bench-suite)
                   (fiveam:in-suite agentq-bench-suite)
                   (dotimes (i 20)
                     (eval `(fiveam:test ,(intern (format nil \"AGENTQ-BENCH-T~D\" i))
                              (dotimes (j 50) (fiveam:is (= (* j 2) (+ j j)))))))
                   t)"))
  (let ((direct '(:code "(let ((fiveam:*test-dribble* (make-broadcast-stream))) (fiveam:run 'agentq-bench-suite) t)"))
        (tool (list :names (vector "agentq-bench-suite")))
        (tool-times nil) (direct-times nil))
    (let ((check (run-tests-bench--call "run_tests" tool)))
      (unless (string-match-p "^PASSED: 1000 checks" check)
        (princ (format "bench: run_tests_overhead failed: %s\n" check))
        (kill-emacs 1)))
    (dotimes (_ 5)
      (run-tests-bench--ms "run_tests" tool)
      (run-tests-bench--ms "evaluate_lisp" direct))
    (dotimes (_ 40)
      (push (run-tests-bench--ms "run_tests" tool) tool-times)
      (push (run-tests-bench--ms "evaluate_lisp" direct) direct-times))
    (let ((tool-ms (aref (sort (vconcat tool-times) #'<) 20))
          (direct-ms (aref (sort (vconcat direct-times) #'<) 20)))
      (princ (format "bench: run_tests_overhead pct=%.1f run_tests_ms=%.2f fiveam_ms=%.2f loadavg=%s target_pct=10\n"
                     (* 100 (/ (- tool-ms direct-ms) direct-ms)) tool-ms direct-ms
                     (with-temp-buffer
                       (insert-file-contents "/proc/loadavg")
                       (car (split-string (buffer-string)))))))))

;;; run-tests.el ends here
