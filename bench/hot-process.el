;;; hot-process.el --- one process's hot round trip -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/hot-process.el
;; Times 4,000 back-to-back `(+ 1 2)' evaluations after 200 warm-up calls
;; and prints "MEDIAN P10 P90" in microseconds.  bench/run.sh runs it in
;; several processes: a process keeps the scheduling it got at its start,
;; so one process alone can hide a slow mode.  SLY_AGENT_Q_BENCH_ORIGIN
;; is the calls' `sly-agent-q-call-origin': "user" (the default), the
;; person's, whose code runs unread; "chat", an agent's, read first.

(require 'sly-agent-q)

(let* ((sly-agent-q-call-origin (or (getenv "SLY_AGENT_Q_BENCH_ORIGIN") "user"))
       (call (list (list :id "p" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))
       (n 4000)
       (times nil))
  (dotimes (_ 200) (sly-agent-q-execute-tool-calls call))
  (dotimes (_ n)
    (let ((start (float-time)))
      (sly-agent-q-execute-tool-calls call)
      (push (- (float-time) start) times)))
  (let ((sorted (sort (vconcat times) #'<)))
    (princ (format "%.1f %.1f %.1f\n" (* 1e6 (aref sorted (/ n 2)))
                   (* 1e6 (aref sorted (/ n 10))) (* 1e6 (aref sorted (/ (* 9 n) 10)))))))

;;; hot-process.el ends here
