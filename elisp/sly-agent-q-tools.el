;;; sly-agent-q-tools.el --- Defining tools, their schemas, counters and approvals -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; Tools defined in Elisp, the list and schemas of all tools (whoever
;; defined them: Elisp, Lisp or C++ share one registry), their counters,
;; and the default approval of dangerous tools.

;;; Code:

(require 'sly-agent-q-runtime)

(declare-function sly-agent-q--module-define-tool "sly-agent-q-module"
                  (name description params required safety categories
                        &optional denied-message check-p))
(declare-function sly-agent-q--module-list-tools "sly-agent-q-module" ())
(declare-function sly-agent-q--module-stats "sly-agent-q-module" ())
(declare-function sly-agent-q--module-tools-schema "sly-agent-q-module" (format max-level categories))

(cl-defun sly-agent-q-define-tool (name description params
                                        &key required (safety-level :safe) categories handler
                                        check denied-message)
  "Define the Elisp-handled tool NAME, visible to Lisp, Elisp and MCP.
DESCRIPTION tells the model when to use it.  PARAMS is a list of plists
\(:name \"x\" :type :string :description \"…\") with types :string
:boolean :number :integer :object :array; a plist may also give
:minimum and :maximum (numbers: a value beyond fails the call),
:default (what the handler uses when it is absent, :false for false;
only said in the schema), :aliases (older names still accepted) and,
for a string, :enum (the list of strings it may be; any other fails the
call).
Arguments that are no parameter fail the call.  REQUIRED lists parameter
names, SAFETY-LEVEL is :safe, :cautious or :dangerous, CATEGORIES a list
of keywords.  HANDLER is called with a hash table of the arguments
\(string keys) and returns a string, or any value to be printed.

An error the handler signals fails the call with \"Tool error:
MESSAGE\"; `sly-agent-q-tool-fail' fails it with its message as written.

CHECK, when given, is called with the arguments after they are
validated and before a dangerous tool's approval is asked (and before
the hooks): it returns normally to let the call go on, or signals an
error to fail it, as a handler does, without asking anyone.  It sees
the model's arguments; arguments an approval modified are not checked
again.  DENIED-MESSAGE is the text of a denied call of this tool, in
place of \"User denied tool execution\".

Redefining a tool replaces it.  Returns NAME."
  (unless (functionp handler)
    (signal 'sly-agent-q-error (list (format "Tool %s needs a :handler function" name))))
  (when (and check (not (functionp check)))
    (signal 'sly-agent-q-error (list (format "Tool %s: :check must be a function" name))))
  (when (and denied-message (not (stringp denied-message)))
    (signal 'sly-agent-q-error (list (format "Tool %s: :denied-message must be a string" name))))
  (prog1 (sly-agent-q--module-define-tool name description params required
                                          safety-level categories denied-message (and check t))
    (puthash name handler sly-agent-q--elisp-handlers)
    (if check
        (puthash name check sly-agent-q--elisp-checks)
      (remhash name sly-agent-q--elisp-checks))))

(defun sly-agent-q-tool-fail (format-string &rest args)
  "Fail the running tool call with a message of its own.
Called from a tool's handler or :check: the call fails with
\(format FORMAT-STRING ARGS...) as its content, as written, where any
other error would give \"Tool error: MESSAGE\".  Signals
`sly-agent-q-tool-failure'; does not return."
  (signal 'sly-agent-q-tool-failure (list (apply #'format format-string args))))

(declare-function sly-agent-q-show-tools "sly-agent-q-tool-list" ())

(defun sly-agent-q-list-tools (&optional show)
  "Sorted names of all registered tools.
Interactively (SHOW non-nil), show them in a table instead, with their
safety levels, categories and counters (`sly-agent-q-show-tools')."
  (interactive (list t))
  (if show
      (progn (require 'sly-agent-q-tool-list) (sly-agent-q-show-tools))
    (sly-agent-q--module-list-tools)))

(defun sly-agent-q-tools-schema (&optional format max-safety-level categories)
  "Tool schemas for a provider, as data `json-serialize' accepts.
FORMAT is `openai' (the default), `anthropic' or `mcp'.
MAX-SAFETY-LEVEL (:safe, :cautious, :dangerous) and CATEGORIES (a list of
keywords; a tool needs one of them) filter the tools."
  (sly-agent-q--module-tools-schema (if format (format "%s" format) "openai")
                                    max-safety-level categories))

(defun sly-agent-q-tool-stats ()
  "Return the per-tool counters.
A list of (NAME :calls N :failures N :total-ms MS), with
:not-found K at the end of a row when K of its calls were the front
end's own look-ups of names that exist nowhere (eldoc's arglist of an
unknown operator, say: calls made with `sly-agent-q-ui-origin').  Those
are answers, not failures: :failures does not count them (:calls does)."
  (mapcar (lambda (row)
            (let ((not-found (gethash (car row) sly-agent-q--not-found-lookups 0)))
              (if (= not-found 0)
                  row
                (let ((counters (copy-sequence (cdr row))))
                  (plist-put counters :failures (max 0 (- (or (plist-get counters :failures) 0) not-found)))
                  (cons (car row) (append counters (list :not-found not-found)))))))
          (sly-agent-q--module-stats)))

(declare-function sly-agent-q-approve "sly-agent-q-approval" (tool-name args))
(define-obsolete-function-alias 'sly-agent-q-ask-approval #'sly-agent-q-approve "0.2")

(provide 'sly-agent-q-tools)

;;; sly-agent-q-tools.el ends here
