;;; soak.el --- 100,000 evaluate_lisp calls from Elisp: memory and rate -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/soak.el
;; After 2,000 warm-up calls, makes `sly-agent-q-soak-calls' (default
;; 100,000) `evaluate_lisp' calls through the module, each a fresh
;; (+ 1 I) whose answer is checked, and prints one line:
;;   bench: soak calls=N calls_per_s=… rss_before_kb=… rss_after_kb=… rss_growth_kb=… target_growth_kb=5120
;; RSS is the process's (Emacs, the module and ECL are one process),
;; read after a full Emacs GC and an ECL GC at both ends; the quarter
;; marks show whether growth is steady or a one-off.

(require 'sly-agent-q)
;; The calls measured are the person's own (as from the REPL): an agent's
;; code is read first, which bench/hot-process.el measures apart.
(setq sly-agent-q-call-origin "user")

(defvar sly-agent-q-soak-calls
  (let ((env (getenv "SLY_AGENT_Q_SOAK_CALLS"))) (if env (string-to-number env) 100000))
  "How many evaluate_lisp calls the soak makes.")

(defun sly-agent-q-soak--rss-kb ()
  "The process's resident set size in KB, after collecting garbage."
  (garbage-collect)
  (sly-agent-q-execute-tool-calls
   (list (list :id "gc" :name "evaluate_lisp" :arguments (list :code "(ext:gc t)"))))
  (with-temp-buffer
    (insert-file-contents "/proc/self/status")
    (re-search-forward "^VmRSS:[ \t]*\\([0-9]+\\)")
    (string-to-number (match-string 1))))

(defun sly-agent-q-soak--call (i)
  "Evaluate (+ 1 I) through the module and check the answer."
  (let* ((result (car (sly-agent-q-execute-tool-calls
                       (list (list :id "s" :name "evaluate_lisp"
                                   :arguments (list :code (format "(+ 1 %d)" i)))))))
         (content (plist-get result :content)))
    (unless (equal content (format "=> %d" (1+ i)))
      (error "Call %d answered %S" i result))))

(let ((n sly-agent-q-soak-calls)
      (marks nil))
  (dotimes (i 2000) (sly-agent-q-soak--call i))
  (let ((before (sly-agent-q-soak--rss-kb))
        (start (float-time))
        (elapsed 0.0))
    (dotimes (i n)
      (sly-agent-q-soak--call i)
      (when (and (> i 0) (zerop (% i (/ n 4))))
        (let ((pause (float-time)))
          (push (sly-agent-q-soak--rss-kb) marks)
          (setq start (+ start (- (float-time) pause))))))
    (setq elapsed (- (float-time) start))
    (let ((after (sly-agent-q-soak--rss-kb)))
      (princ (format "bench: soak calls=%d calls_per_s=%.0f rss_before_kb=%d rss_quarters_kb=%s rss_after_kb=%d rss_growth_kb=%d target_growth_kb=5120\n"
                     n (/ n elapsed) before
                     (mapconcat #'number-to-string (nreverse marks) ",")
                     after (- after before))))))

;;; soak.el ends here
