;;; sly-agent-q.el --- AI coding agent tools for Common Lisp, in-process -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: lisp, tools
;; URL: https://github.com/sly-agent-q/sly-agent-q

;;; Commentary:

;; sly-agent-q embeds ECL (Embeddable Common Lisp) in Emacs through a C++
;; dynamic module and runs agent "tools" — above all `evaluate_lisp' —
;; through one registry and executor shared by Elisp, Lisp and MCP clients.
;;
;;   (require 'sly-agent-q)
;;   (sly-agent-q-execute-tool-calls
;;    '((:id "c1" :name "evaluate_lisp" :arguments (:code "(+ 1 2)"))))
;;   ⇒ ((:id "c1" :success t :content "=> 3" :error nil :metadata (…)))
;;
;; The Lisp runtime boots lazily on first use, on its own thread; C-g
;; interrupts a running evaluation, and nothing evaluated can exit, hang or
;; crash Emacs.  M-x sly-agent-q-evaluate tries it interactively.

;;; Code:

(require 'sly-agent-q-runtime)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-approval)
(require 'sly-agent-q-commands)
(require 'sly-agent-q-buffer-tools)

(provide 'sly-agent-q)

;;; sly-agent-q.el ends here
