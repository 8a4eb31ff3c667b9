;;; hot-process.el --- one process's hot round trip -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/hot-process.el
;; Times 4,000 back-to-back `(+ 1 2)' evaluations after 200 warm-up calls
;; and prints "MEDIAN P10 P90" in microseconds.  bench/run.sh runs it in
;; several processes: a process keeps the scheduling it got at its start,
;; so one process alone can hide a slow mode.  SLY_AGENT_Q_BENCH_ORIGIN
;; is the calls' `sly-agent-q-call-origin': "user" (the default), the
;; person's, whose code runs unread; "chat", an agent's, read first.
;; "both" alternates the two in batches of 200 in the one process (the
;; processes' own modes would hide a difference of a microsecond) and
;; prints "AGENT-MEDIAN USER-MEDIAN" instead.

(require 'cl-lib)
(require 'sly-agent-q)

(defun sly-agent-q-bench--median-us (times)
  "The median of TIMES (seconds) in microseconds, and its p10 and p90."
  (let ((sorted (sort (vconcat times) #'<)) (n (length times)))
    (list (* 1e6 (aref sorted (/ n 2))) (* 1e6 (aref sorted (/ n 10)))
          (* 1e6 (aref sorted (/ (* 9 n) 10))))))

(let* ((origin (or (getenv "SLY_AGENT_Q_BENCH_ORIGIN") "user"))
       (call (list (list :id "p" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))
       (times (list (cons "chat" nil) (cons "user" nil))))
  (cl-flet ((timed (origin count)
              (let ((sly-agent-q-call-origin origin) (cell (assoc origin times)))
                (dotimes (_ count)
                  (let ((start (float-time)))
                    (sly-agent-q-execute-tool-calls call)
                    (push (- (float-time) start) (cdr cell)))))))
    (if (equal origin "both")
        (progn
          (dolist (o '("chat" "user")) (let ((sly-agent-q-call-origin o)) (dotimes (_ 200) (sly-agent-q-execute-tool-calls call))))
          (dotimes (_ 20) (timed "chat" 200) (timed "user" 200))
          (princ (format "%.2f %.2f\n" (car (sly-agent-q-bench--median-us (cdr (assoc "chat" times))))
                         (car (sly-agent-q-bench--median-us (cdr (assoc "user" times)))))))
      (let ((sly-agent-q-call-origin origin))
        (dotimes (_ 200) (sly-agent-q-execute-tool-calls call)))
      (unless (assoc origin times) (push (cons origin nil) times))
      (timed origin 4000)
      (princ (apply #'format "%.1f %.1f %.1f\n" (sly-agent-q-bench--median-us (cdr (assoc origin times))))))))

;;; hot-process.el ends here
