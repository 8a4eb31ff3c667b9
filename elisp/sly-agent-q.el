;;; sly-agent-q.el --- AI coding agent tools for Common Lisp, in-process -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; Author: The sly-agent-q authors
;; Maintainer: The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: lisp, tools
;; URL: https://github.com/sly-agent-q/sly-agent-q

;; This program is free software: you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or (at
;; your option) any later version.  It is distributed WITHOUT ANY
;; WARRANTY; see the GNU General Public License (LICENSE in this
;; repository, or <https://www.gnu.org/licenses/>) for more details.

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
;; The welcome buffer (`make run') and the user's settings file.
(require 'sly-agent-q-welcome)

;; The front end's mode loads transient and the rest only when turned on.
(autoload 'sly-agent-q-mode "sly-agent-q-mode"
  "The sly-agent-q commands under `sly-agent-q-keymap-prefix' (C-c q)." t)
(autoload 'sly-agent-q-show-log "sly-agent-q-log" "Show the audit log." t)
(autoload 'sly-agent-q-show-tools "sly-agent-q-tool-list" "Show the tools in a table." t)
(autoload 'sly-agent-q-chat "sly-agent-q-chat" "Show the agent chat, *Agent-Q Chat*." t)
(autoload 'sly-agent-q-send "sly-agent-q-chat" "Send TEXT to the agent as if typed in the chat." t)
(autoload 'sly-agent-q-select-backend "sly-agent-q-provider" "Choose the LLM backend the chat uses." t)
(require 'sly-agent-q-buffer-tools)
;; edit_form and insert_form: a Lisp file's top-level forms, by structure.
(require 'sly-agent-q-form-edit)
;; M-x sly-agent-q-mcp-server-start: the tools for outside MCP clients.
(require 'sly-agent-q-mcp)
;; SLY's keys in Lisp buffers (not where SLY or SLIME is on).
(require 'sly-agent-q-lisp-mode)

(provide 'sly-agent-q)

;;; sly-agent-q.el ends here
