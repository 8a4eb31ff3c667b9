;;; bench-eval.el --- evaluate_lisp for the benches that need its text  -*- lexical-binding: t; -*-

;;; Commentary:
;; Shared by bench/tiering.el and bench/tiering-meanwhile.el.

;;; Code:

(require 'sly-agent-q)
;; The calls measured are the person's own (as from the REPL): an agent's
;; code is read first, which bench/hot-process.el measures apart.
(setq sly-agent-q-call-origin "user")

(defun bench-eval (code)
  "Evaluate CODE through evaluate_lisp; return the content, or signal on failure."
  (let ((result (car (sly-agent-q-execute-tool-calls
                      (list (list :id "b" :name "evaluate_lisp" :arguments (list :code code)))))))
    (unless (plist-get result :success)
      (error "Evaluation of %s failed: %s" code (plist-get result :content)))
    (plist-get result :content)))

(provide 'bench-eval)
;;; bench-eval.el ends here
