;;; sly-agent-q-tools.el --- Defining tools, their schemas, counters and approvals -*- lexical-binding: t; -*-

;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; Tools defined in Elisp, the list and schemas of all tools (whoever
;; defined them: Elisp, Lisp or C++ share one registry), their counters,
;; and the default approval of dangerous tools.

;;; Code:

(require 'sly-agent-q-runtime)

(declare-function sly-agent-q--module-define-tool "sly-agent-q-module"
                  (name description params required safety categories))
(declare-function sly-agent-q--module-list-tools "sly-agent-q-module" ())
(declare-function sly-agent-q--module-stats "sly-agent-q-module" ())
(declare-function sly-agent-q--module-tools-schema "sly-agent-q-module" (format max-level categories))

(cl-defun sly-agent-q-define-tool (name description params
                                        &key required (safety-level :safe) categories handler)
  "Define the Elisp-handled tool NAME, visible to Lisp, Elisp and MCP.
DESCRIPTION tells the model when to use it.  PARAMS is a list of plists
\(:name \"x\" :type :string :description \"…\") with types :string
:boolean :number :integer :object :array.  REQUIRED lists parameter
names, SAFETY-LEVEL is :safe, :cautious or :dangerous, CATEGORIES a list
of keywords.  HANDLER is called with a hash table of the arguments
\(string keys) and returns a string, or any value to be printed.
Redefining a tool replaces it.  Returns NAME."
  (unless (functionp handler)
    (signal 'sly-agent-q-error (list (format "Tool %s needs a :handler function" name))))
  (prog1 (sly-agent-q--module-define-tool name description params required
                                          safety-level categories)
    (puthash name handler sly-agent-q--elisp-handlers)))

(defun sly-agent-q-list-tools ()
  "Sorted names of all registered tools."
  (sly-agent-q--module-list-tools))

(defun sly-agent-q-tools-schema (&optional format max-safety-level categories)
  "Tool schemas for a provider, as data `json-serialize' accepts.
FORMAT is `openai' (the default), `anthropic' or `mcp'.
MAX-SAFETY-LEVEL (:safe, :cautious, :dangerous) and CATEGORIES (a list of
keywords; a tool needs one of them) filter the tools."
  (sly-agent-q--module-tools-schema (if format (format "%s" format) "openai")
                                    max-safety-level categories))

(defun sly-agent-q-tool-stats ()
  "Return the per-tool counters.
A list of (NAME :calls N :failures N :total-ms MS)."
  (sly-agent-q--module-stats))

(declare-function sly-agent-q-approve "sly-agent-q-approval" (tool-name args))
(define-obsolete-function-alias 'sly-agent-q-ask-approval #'sly-agent-q-approve "0.2")

(provide 'sly-agent-q-tools)

;;; sly-agent-q-tools.el ends here
