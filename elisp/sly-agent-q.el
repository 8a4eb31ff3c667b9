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
;;   (require 'sly-agent-q-autoloads)    ; made by `make build'
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
(require 'sly-agent-q-async)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-approval)
(require 'sly-agent-q-commands)
;; The welcome buffer (`make run') and the user's settings file.
(require 'sly-agent-q-welcome)

;; The front end's mode (`sly-agent-q-mode'), which loads transient, the
;; chat and the rest, loads when turned on: its autoload, and every other
;; command's, is in sly-agent-q-autoloads.el, which `make build' generates
;; from the ;;;###autoload cookies.
(require 'sly-agent-q-buffer-tools)
(require 'sly-agent-q-project-tools)
;; edit_form and insert_form: a Lisp file's top-level forms, by structure.
(require 'sly-agent-q-form-edit)
;; M-x sly-agent-q-mcp-server-start: the tools for outside MCP clients.
(require 'sly-agent-q-mcp)
;; SLY's keys in Lisp buffers (not where SLY or SLIME is on).
(require 'sly-agent-q-lisp-mode)

(provide 'sly-agent-q)

;;; sly-agent-q.el ends here
