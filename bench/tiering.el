;;; tiering.el --- Native tiering and the fasl cache: figures -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/tiering.el [fib|methods|cold|cached]
;;
;; fib:    (fib 30) defined through evaluate_lisp and run once at once
;;         (bytecodes), again after the background compile finished (waited
;;         for explicitly), and the same code compiled with (compile 'fib2)
;;         in the same session.  Tiered and explicit are timed in turns,
;;         the best of 21 runs each, in ms, inside Lisp.  (Evaluations
;;         beside a background compile: bench/tiering-meanwhile.el.)
;; methods: two DEFMETHODs defined through evaluate_lisp, timed as bytecodes
;;         (the background compile held back meanwhile) and after it: a
;;         body-heavy method (a sum of squares to 10^6), and a generic
;;         Fibonacci (25) whose time is mostly dispatch.  The best of 7
;;         rounds of the best of 3 calls, in ms, inside Lisp.
;; cold / cached: load_system of alexandria, timed from Emacs, in a session
;;         whose fasl cache is empty / already filled (run.sh sets
;;         XDG_CACHE_HOME to a fresh directory for both).
;; Prints `bench: NAME key=value …' lines.

(require 'sly-agent-q)
;; The calls measured are the person's own (as from the REPL): an agent's
;; code is read first, which bench/hot-process.el measures apart.
(setq sly-agent-q-call-origin "user")

(setq sly-agent-q-eval-timeout 600)

(require 'bench-eval (expand-file-name "bench-eval.el" (file-name-directory load-file-name)))

(defconst bench-tiering--timer
  "(defun bench-ms (thunk)
     (let ((best nil))
       (dotimes (i 3 best)
         (let ((start (get-internal-real-time)))
           (funcall thunk)
           (let ((ms (/ (* 1000.0 (- (get-internal-real-time) start)) internal-time-units-per-second)))
             (setf best (if best (min best ms) ms)))))))"
  "A Lisp timer: the best of 3 calls of THUNK, in ms.")

(defun bench-tiering--number (content)
  "The number of CONTENT's last => line."
  (if (string-match "=> \\([0-9.]+\\)\\'" content)
      (string-to-number (match-string 1 content))
    (error "No number in %S" content)))

(defun bench-tiering-fib ()
  (bench-eval bench-tiering--timer)
  (bench-eval "(agent-q::wait-for-native-compiles 60)")
  ;; Defined and run once in the same call: bytecodes (the background
  ;; compile starts meanwhile).
  (let* ((bytecodes (bench-tiering--number
                     (bench-eval
                      "(defun fib (n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
                       (let ((start (get-internal-real-time)))
                         (fib 30)
                         (/ (* 1000.0 (- (get-internal-real-time) start)) internal-time-units-per-second))")))
         (start (float-time))
         (waited (bench-eval "(agent-q::wait-for-native-compiles 60)"))
         (compile-s (- (float-time) start))
         (native (progn
                   (unless (equal (bench-eval "(if (nth-value 1 (si:bc-split #'fib)) :bytecodes :native)")
                                  "=> :NATIVE")
                     (error "fib is not native after the background compile (%s)" waited))
                   (bench-eval
                    "(defun fib2 (n) (if (< n 2) n (+ (fib2 (- n 1)) (fib2 (- n 2)))))
                     (compile 'fib2)")
                   ;; Taken in turns, 7 rounds, the best of each: the VM's
                   ;; speed drifts more than the difference.
                   (bench-eval
                    "(defvar *bench-best* nil)
                     (setf *bench-best* (list nil nil))
                     (dotimes (round 7)
                       (loop for f in (list #'fib #'fib2) for i from 0
                             do (let ((ms (bench-ms (lambda () (funcall f 30)))))
                                  (setf (nth i *bench-best*) (if (nth i *bench-best*) (min ms (nth i *bench-best*)) ms)))))")
                   (bench-tiering--number (bench-eval "(first *bench-best*)"))))
         (explicit (bench-tiering--number (bench-eval "(second *bench-best*)"))))
    (princ (format "bench: tiering_fib30 bytecodes_ms=%.1f tiered_ms=%.1f explicit_compile_ms=%.1f tiered_over_explicit=%.2f target_ratio=1.3 background_compile_s=%.2f\n"
                   bytecodes native explicit (/ native explicit) compile-s))))

(defun bench-tiering-methods ()
  (bench-eval bench-tiering--timer)
  (bench-eval "(agent-q::wait-for-native-compiles 60)")
  ;; The compile waits for the evaluation that defines the methods and
  ;; times their bytecodes to end.
  (bench-eval "(setf agent-q::*tiering-busy-grace-ms* 600000)")
  (bench-eval "(defgeneric bench-sum (n))
(defmethod bench-sum ((n integer)) (let ((s 0)) (dotimes (i n) (setf s (+ s (* i i)))) s))
(defgeneric bench-gfib (n))
(defmethod bench-gfib ((n integer)) (if (< n 2) n (+ (bench-gfib (- n 1)) (bench-gfib (- n 2)))))
(defun bench-best-of-rounds ()
  (let ((best (list nil nil)))
    (dotimes (round 7 best)
      (loop for thunk in (list (lambda () (bench-sum 1000000)) (lambda () (bench-gfib 25))) for i from 0
            do (let ((ms (bench-ms thunk)))
                 (setf (nth i best) (if (nth i best) (min ms (nth i best)) ms)))))))
(defvar *bench-bytecodes* (bench-best-of-rounds))")
  (bench-eval "(setf agent-q::*tiering-busy-grace-ms* 1000)")
  (bench-eval "(agent-q::wait-for-native-compiles 60)")
  (let ((state (bench-eval "(agent-q::tiering-state-text 'bench-sum)")))
    (unless (string-match-p "1 native (compiled in the background), 0 bytecodes" state)
      (error "bench-sum's method is not native after the background compile: %s" state)))
  (bench-eval "(defvar *bench-native* (bench-best-of-rounds))")
  (let ((values (mapcar (lambda (code) (bench-tiering--number (bench-eval code)))
                        '("(first *bench-bytecodes*)" "(first *bench-native*)"
                          "(second *bench-bytecodes*)" "(second *bench-native*)"))))
    (princ (format "bench: tiering_method_sum bytecodes_ms=%.1f tiered_ms=%.1f speedup=%.1f\n"
                   (nth 0 values) (nth 1 values) (/ (nth 0 values) (nth 1 values))))
    (princ (format "bench: tiering_method_gfib25 bytecodes_ms=%.1f tiered_ms=%.1f speedup=%.1f\n"
                   (nth 2 values) (nth 3 values) (/ (nth 2 values) (nth 3 values))))))

(defun bench-tiering-load (label)
  (let* ((start (float-time))
         (result (car (sly-agent-q-execute-tool-calls
                       (list (list :id "b" :name "load_system" :arguments (list :name "alexandria")))))))
    (princ (format "bench: load_system_alexandria_%s ms=%.0f success=%s\n"
                   label (* 1000 (- (float-time) start)) (plist-get result :success)))))

(pcase (car command-line-args-left)
  ("cold" (bench-tiering-load "cold"))
  ("cached" (bench-tiering-load "cached"))
  ("methods" (bench-tiering-methods))
  (_ (bench-tiering-fib)))
(setq command-line-args-left nil)

;;; tiering.el ends here
