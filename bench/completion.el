;;; completion.el --- completion and eldoc from a 10,000-symbol image -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/completion.el
;; Interns 10,000 more symbols in a package of the session, then times
;; `sly-agent-q-completion-at-point' (synchronous) and the eldoc answer
;; (asynchronous: from the request to the callback) in a Lisp buffer.
;; Prints one "bench: completion ..." line, medians over 50-200 runs;
;; for the first completion after an evaluation changed the package (it
;; brings the package's index of names up to date), the median and range
;; of 40.

(require 'sly-agent-q)
;; The calls measured are the person's own (as from the REPL): an agent's
;; code is read first, which bench/hot-process.el measures apart.
(setq sly-agent-q-call-origin "user")

(sly-agent-q-execute-tool-calls
 '((:id "b" :name "evaluate_lisp"
    :arguments (:code "(defpackage :bench-big (:use :cl)) (dotimes (i 10000) (intern (format nil \"BENCH-SYMBOL-~D\" i) :bench-big)) (length (apropos-list \"\" :bench-big))"))))

(defun completion-bench--median (times)
  "The median of TIMES, in ms."
  (* 1000 (aref (sort (vconcat times) #'<) (/ (length times) 2))))

(defun completion-bench--spread (times)
  "The median of TIMES and their range, in ms: \"M (LOW-HIGH)\"."
  (let ((sorted (sort (vconcat times) #'<)))
    (format "%.2f (%.2f-%.2f)" (* 1000 (aref sorted (/ (length sorted) 2)))
            (* 1000 (aref sorted 0)) (* 1000 (aref sorted (1- (length sorted)))))))

(with-temp-buffer
  (insert "(in-package :bench-big)\n(string-up")
  (lisp-mode)
  (let ((capf nil) (capf-many nil) (capf-changed nil) (eldoc nil) (count 0))
    (dotimes (_ 200)
      (let ((start (float-time)))
        (setq count (length (nth 2 (sly-agent-q-completion-at-point))))
        (push (- (float-time) start) capf)))
    (insert "\n(bench-symbol-99")
    (let ((many 0))
      (dotimes (_ 50)
        (let ((start (float-time)))
          (setq many (length (nth 2 (sly-agent-q-completion-at-point))))
          (push (- (float-time) start) capf-many)))
      ;; The first completion after the package changed brings its index
      ;; of names up to date: a new variable, defined untimed, each time.
      ;; (Not a DEFUN: that starts the background native compiler, whose
      ;; garbage collections stop the worker too; see docs/design.md.)
      (dotimes (i 40)
        (sly-agent-q-execute-tool-calls
         `((:id "n" :name "evaluate_lisp"
            :arguments (:code ,(format "(defvar bench-big::*bench-new-%d* %d)" i i)))))
        (let ((start (float-time)))
          (sly-agent-q-completion-at-point)
          (push (- (float-time) start) capf-changed)))
      (insert "\n(subseq x ")
      (dotimes (_ 200)
        (let ((start (float-time)) (done nil))
          (sly-agent-q-eldoc-function (lambda (&rest _) (setq done t)))
          (while (not done) (accept-process-output sly-agent-q--async-process 0.05))
          (push (- (float-time) start) eldoc)))
      (princ (format "bench: completion image_symbols=10000+ capf_string-up_ms=%.2f (%d candidates) capf_bench-symbol-99_ms=%.2f (%d candidates) capf_after_a_change_ms=%s eldoc_round_trip_ms=%.2f target_ms=5\n"
                     (completion-bench--median capf) count
                     (completion-bench--median capf-many) many
                     (completion-bench--spread capf-changed)
                     (completion-bench--median eldoc))))))

;;; completion.el ends here
