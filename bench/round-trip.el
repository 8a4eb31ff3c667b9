;;; round-trip.el --- the hot round trip, step by step, beside its floors -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/round-trip.el
;; After 2,000 warm-up calls, times 4,000 back-to-back `(+ 1 2)'
;; evaluations with the module's step stamps on
;; (module/core/round_trip_stamps.hpp) and prints the median of each step
;; of the round trip, then, measured in the same process, the floor each
;; step is read against:
;;   elisp_wrapper      sly-agent-q-execute-tool-calls outside the module
;;                      (floor: calling a module function that does nothing
;;                      with the same arguments, module_call)
;;   convert            the options and the origin checked, Elisp values →
;;                      the C++ call
;;   to_enqueue         the executor and the runtime until the job is queued
;;   handoff_to_worker  queued → the worker took it  (floor: handoff, a
;;   handoff_back       finished → the caller saw it  spinning two-thread
;;                      ping-pong on two CPUs, one way)
;;   lisp               the worker's job: read, evaluate, print (floor:
;;                      ecl_eval_print, ECL's READ-FROM-STRING, EVAL and
;;                      PRIN1-TO-STRING of "(+ 1 2)" alone, in a loop)
;;   from_runtime       the result text → a ToolResult
;;   plist              the ToolResult → the result plist (floor: plist,
;;                      the same plist made alone)
;; Stamping costs a few clock reads per call: total_stamped is the
;; median with it; hot-process.el gives the call without.

(require 'cl-lib)
(require 'sly-agent-q)

(defun sly-agent-q-bench--median (values)
  "The median of VALUES (numbers)."
  (let ((sorted (sort (vconcat values) #'<)))
    (aref sorted (/ (length sorted) 2))))

(let* ((sly-agent-q-call-origin "user")
       (call (list (list :id "p" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))
       (n (string-to-number (or (getenv "SLY_AGENT_Q_BENCH_CALLS") "4000")))
       (names '(convert to_enqueue handoff_to_worker lisp handoff_back from_runtime plist))
       (parts (make-vector (length names) nil))
       (wrapper nil) (totals nil))
  (dotimes (_ 2000) (sly-agent-q-execute-tool-calls call))
  (sly-agent-q--module-bench "stamps-on")
  (dotimes (_ n)
    (let ((start (float-time)))
      (sly-agent-q-execute-tool-calls call)
      (let* ((total (* 1e9 (- (float-time) start)))
             (steps (sly-agent-q--module-bench "stamps")))
        (push total totals)
        (push (- total (aref steps 7)) wrapper)
        (dotimes (i (length names))
          (push (- (aref steps (1+ i)) (aref steps i)) (aref parts i))))))
  (sly-agent-q--module-bench "stamps-off")
  (let ((approve sly-agent-q-approval-function)
        (hooks sly-agent-q-tool-execution-functions)
        (noop nil))
    (dotimes (_ n)
      (let ((start (float-time)))
        ;; The arguments `sly-agent-q-execute-tool-calls' gives the module.
        (sly-agent-q--module-bench-noop call approve hooks sly-agent-q-call-origin sly-agent-q-ui-origin
                                        sly-agent-q--progress-detail sly-agent-q--lisp-watched sly-agent-q-eval-timeout
                                        sly-agent-q-output-limit sly-agent-q-heap-limit
                                        sly-agent-q-native-tiering sly-agent-q-ask-before-agent-code)
        (push (* 1e9 (- (float-time) start)) noop)))
    (let* ((us (lambda (ns) (/ ns 1000.0)))
           (ecl (plist-get
                 (car (sly-agent-q-execute-tool-calls
                       (list (list :id "f" :name "evaluate_lisp"
                                   :arguments (list :code "(let ((code \"(+ 1 2)\") (means nil))
  (dotimes (r 11)
    (let ((start (agent-q::%monotonic-us)))
      (dotimes (i 2000) (prin1-to-string (eval (read-from-string code))))
      (push (/ (- (agent-q::%monotonic-us) start) 2000.0) means)))
  (nth 5 (sort means #'<)))")))))
                 :content))
           (ecl-us (and (string-match "=> \\([0-9.e-]+\\)" ecl) (string-to-number (match-string 1 ecl)))))
      (princ (format "bench: round_trip_parts total_stamped_us=%.2f elisp_wrapper_us=%.2f%s calls=%d\n"
                     (funcall us (sly-agent-q-bench--median totals))
                     (funcall us (sly-agent-q-bench--median wrapper))
                     (mapconcat (lambda (i) (format " %s_us=%.2f" (nth i names)
                                                    (funcall us (sly-agent-q-bench--median (aref parts i)))))
                                (number-sequence 0 (1- (length names))) "")
                     n))
      (let* ((call-floor (funcall us (sly-agent-q-bench--median noop)))
             (handoff (funcall us (sly-agent-q--module-bench "pingpong" 20000)))
             (plist-floor (funcall us (sly-agent-q--module-bench "plist" 20000)))
             (lisp (funcall us (sly-agent-q-bench--median (aref parts 3))))
             ;; What no design of ours goes below: an empty module call, two
             ;; hand-offs, Lisp's job (ours where it is under ECL's own eval
             ;; and print) and making the plist.
             (floor-sum (+ call-floor (* 2 handoff) (if ecl-us (min lisp ecl-us) lisp) plist-floor)))
        (princ (format "bench: round_trip_floors module_call_us=%.2f handoff_one_way_us=%.2f ecl_eval_print_us=%.2f plist_us=%.2f sum_of_floors_us=%.2f (the call's floor; target_us=4)\n"
                       call-floor handoff (or ecl-us -1) plist-floor floor-sum))))))

;;; round-trip.el ends here
