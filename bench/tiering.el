;;; tiering.el --- Native tiering and the fasl cache: figures -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/tiering.el [fib|cold|cached]
;;
;; fib:    (fib 30) defined through evaluate_lisp and run once at once
;;         (bytecodes), again after the background compile finished (waited
;;         for explicitly), and the same code compiled with (compile 'fib2)
;;         in the same session.  The later figures are the best of 5 runs,
;;         in ms, timed inside Lisp.  Also: an evaluation's time while a batch of
;;         20 definitions compiles in the background, against the same
;;         evaluation alone.
;; cold / cached: load_system of alexandria, timed from Emacs, in a session
;;         whose fasl cache is empty / already filled (run.sh sets
;;         XDG_CACHE_HOME to a fresh directory for both).
;; Prints `bench: NAME key=value …' lines.

(require 'sly-agent-q)

(setq sly-agent-q-eval-timeout 600)

(defun bench-tiering--eval (code)
  "Evaluate CODE; return the content, or signal on failure."
  (let ((result (car (sly-agent-q-execute-tool-calls
                      (list (list :id "b" :name "evaluate_lisp" :arguments (list :code code)))))))
    (unless (plist-get result :success)
      (error "Evaluation of %s failed: %s" code (plist-get result :content)))
    (plist-get result :content)))

(defconst bench-tiering--timer
  "(defun bench-ms (thunk)
     (let ((best nil))
       (dotimes (i 5 best)
         (let ((start (get-internal-real-time)))
           (funcall thunk)
           (let ((ms (/ (* 1000.0 (- (get-internal-real-time) start)) internal-time-units-per-second)))
             (setf best (if best (min best ms) ms)))))))"
  "A Lisp timer: the best of 5 calls of THUNK, in ms.")

(defun bench-tiering--number (content)
  "The number of CONTENT's last => line."
  (if (string-match "=> \\([0-9.]+\\)\\'" content)
      (string-to-number (match-string 1 content))
    (error "No number in %S" content)))

(defun bench-tiering-fib ()
  (bench-tiering--eval bench-tiering--timer)
  (bench-tiering--eval "(agent-q::wait-for-native-compiles 60)")
  ;; Defined and run once in the same call: bytecodes (the background
  ;; compile starts meanwhile).
  (let* ((bytecodes (bench-tiering--number
                     (bench-tiering--eval
                      "(defun fib (n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
                       (let ((start (get-internal-real-time)))
                         (fib 30)
                         (/ (* 1000.0 (- (get-internal-real-time) start)) internal-time-units-per-second))")))
         (start (float-time))
         (waited (bench-tiering--eval "(agent-q::wait-for-native-compiles 60)"))
         (compile-s (- (float-time) start))
         (native (progn
                   (unless (equal (bench-tiering--eval "(if (nth-value 1 (si:bc-split #'fib)) :bytecodes :native)")
                                  "=> :NATIVE")
                     (error "fib is not native after the background compile (%s)" waited))
                   (bench-tiering--number (bench-tiering--eval "(bench-ms (lambda () (fib 30)))"))))
         (explicit (bench-tiering--number
                    (bench-tiering--eval
                     "(defun fib2 (n) (if (< n 2) n (+ (fib2 (- n 1)) (fib2 (- n 2)))))
                      (compile 'fib2)
                      (bench-ms (lambda () (fib2 30)))"))))
    (princ (format "bench: tiering_fib30 bytecodes_ms=%.1f tiered_ms=%.1f explicit_compile_ms=%.1f tiered_over_explicit=%.2f target_ratio=1.3 background_compile_s=%.2f\n"
                   bytecodes native explicit (/ native explicit) compile-s))
    ;; An evaluation while 20 definitions compile, against the same alone.
    (bench-tiering--eval "(defun spin (n) (let ((s 0)) (dotimes (i n s) (setf s (logand (+ s i) #xffff)))))")
    (bench-tiering--eval "(agent-q::wait-for-native-compiles 60)")
    (let ((alone (bench-tiering--number (bench-tiering--eval "(bench-ms (lambda () (fib 27)))")))
          (meanwhile (bench-tiering--number
                      (bench-tiering--eval
                       (concat (mapconcat (lambda (i) (format "(defun bench-def-%d (x) (list x %d))" i i))
                                          (number-sequence 1 20) "\n")
                               "\n(bench-ms (lambda () (fib 27)))")))))
      (bench-tiering--eval "(agent-q::wait-for-native-compiles 60)")
      (princ (format "bench: tiering_meanwhile fib27_alone_ms=%.1f fib27_during_background_compile_ms=%.1f ratio=%.2f\n"
                     alone meanwhile (/ meanwhile alone))))))

(defun bench-tiering-load (label)
  (let* ((start (float-time))
         (result (car (sly-agent-q-execute-tool-calls
                       (list (list :id "b" :name "load_system" :arguments (list :name "alexandria")))))))
    (princ (format "bench: load_system_alexandria_%s ms=%.0f success=%s\n"
                   label (* 1000 (- (float-time) start)) (plist-get result :success)))))

(pcase (car command-line-args-left)
  ("cold" (bench-tiering-load "cold"))
  ("cached" (bench-tiering-load "cached"))
  (_ (bench-tiering-fib)))
(setq command-line-args-left nil)

;;; tiering.el ends here
