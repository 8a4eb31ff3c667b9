;;; held-after.el --- the hot path before and after held errors -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/held-after.el
;; In one process: 3,000 back-to-back `(+ 1 2)' evaluations (after 200
;; warm-up calls), then ten errors held (evaluate_lisp with debug: true)
;; and let go — three answered with a restart, two aborted, five held at
;; once (the oldest pushed out, the others aborted) — so that none is held
;; any more, then the same 3,000 evaluations again.  Each held error
;; handed the worker's place to a fresh thread: the evaluations after run
;; on it.  Prints "BEFORE-MEDIAN AFTER-MEDIAN" in microseconds; bench/run.sh
;; runs several processes and prints the ratios (target: 1.0, holding
;; costs nothing once nothing is held).

(require 'cl-lib)
(require 'sly-agent-q)

(defun sly-agent-q-bench--held-median-us (count)
  "The median in microseconds of COUNT evaluations of (+ 1 2)."
  (let ((call (list (list :id "p" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))
        (times (make-vector count 0.0)))
    (dotimes (i count)
      (let ((start (float-time)))
        (sly-agent-q-execute-tool-calls call)
        (aset times i (- (float-time) start))))
    (* 1e6 (aref (sort times #'<) (/ count 2)))))

(defun sly-agent-q-bench--call (name arguments)
  "The result plist of the tool NAME called with ARGUMENTS."
  (car (sly-agent-q-execute-tool-calls (list (list :id "h" :name name :arguments arguments)))))

(defun sly-agent-q-bench--hold ()
  "Hold one error; return its condition id (an error when it was not held)."
  (or (plist-get (plist-get (sly-agent-q-bench--call
                             "evaluate_lisp" (list :code "(restart-case (error \"held\") (use-it (v) v))" :debug t))
                            :metadata)
                 :condition_id)
      (error "No error was held")))

(let ((sly-agent-q-call-origin "user"))
  (sly-agent-q-bench--held-median-us 200)
  (let ((before (sly-agent-q-bench--held-median-us 3000)))
    (dotimes (i 3)
      (let ((result (sly-agent-q-bench--call "invoke_restart"
                                             (list :condition_id (sly-agent-q-bench--hold) :restart "USE-IT"
                                                   :values (number-to-string i)))))
        (unless (plist-get result :success) (error "The restart failed: %S" result))))
    (dotimes (_ 2)
      (sly-agent-q-bench--call "invoke_restart" (list :condition_id (sly-agent-q-bench--hold) :restart "ABORT")))
    ;; Five at once: the oldest is pushed out; the rest aborted.
    (dolist (id (cl-loop repeat 5 collect (sly-agent-q-bench--hold)))
      (sly-agent-q-bench--call "invoke_restart" (list :condition_id id :restart "ABORT")))
    (let ((deadline (+ (float-time) 10)))
      (while (and (> (or (plist-get (sly-agent-q-runtime-status) :held-errors) 0) 0)
                  (< (float-time) deadline))
        (sleep-for 0.01)))
    (unless (eql (plist-get (sly-agent-q-runtime-status) :held-errors) 0)
      (error "Errors are still held: %S" (sly-agent-q-runtime-status)))
    (sly-agent-q-bench--held-median-us 200)
    (princ (format "%.2f %.2f\n" before (sly-agent-q-bench--held-median-us 3000)))))

;;; held-after.el ends here
