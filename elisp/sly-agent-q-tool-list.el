;;; sly-agent-q-tool-list.el --- The tools, as a table -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; M-x sly-agent-q-list-tools: every registered tool (whoever defined it)
;; with its safety level, categories and the executor's counters; RET
;; shows the tool's description and parameter schema.

;;; Code:

(require 'tabulated-list)
(require 'json)
(require 'sly-agent-q-runtime)

(declare-function sly-agent-q--module-list-tools "sly-agent-q-module" ())
(declare-function sly-agent-q-tools-schema "sly-agent-q-tools" (&optional format max-safety-level categories))
(declare-function sly-agent-q-tool-stats "sly-agent-q-tools" ())

(defvar sly-agent-q-tool-list-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'sly-agent-q-tool-list-describe)
    map)
  "Keys of `sly-agent-q-tool-list-mode'.")

(define-derived-mode sly-agent-q-tool-list-mode tabulated-list-mode "Agent-Q Tools"
  "The registered tools of sly-agent-q with their counters.
\\<sly-agent-q-tool-list-mode-map>\\[sly-agent-q-tool-list-describe] describes the tool at point; \\[revert-buffer] refreshes."
  (setq tabulated-list-format
        [("Tool" 22 t) ("Safety" 10 t) ("Categories" 24 t)
         ("Calls" 7 sly-agent-q--tool-list-by-calls :right-align t)
         ("Failures" 9 nil :right-align t) ("Mean ms" 9 nil :right-align t)])
  (setq tabulated-list-sort-key '("Tool" . nil))
  (add-hook 'tabulated-list-revert-hook #'sly-agent-q--tool-list-entries nil t)
  (tabulated-list-init-header))

(defun sly-agent-q--tool-list-by-calls (a b)
  "Non-nil when row A has a smaller count than row B.
This is the sort of the Calls column."
  (< (string-to-number (aref (cadr a) 3)) (string-to-number (aref (cadr b) 3))))

(defun sly-agent-q--tools-by-name ()
  "The MCP schemas of the tools, by name."
  (let ((table (make-hash-table :test 'equal)))
    (seq-doseq (tool (sly-agent-q-tools-schema 'mcp))
      (puthash (gethash "name" tool) tool table))
    table))

(defun sly-agent-q--tool-list-entries ()
  "Fill `tabulated-list-entries' from the registry and the counters."
  (let ((stats (sly-agent-q-tool-stats))
        (levels (make-hash-table :test 'equal))
        (categories (sly-agent-q--tool-categories)))
    (dolist (level '(:safe :cautious :dangerous))
      (seq-doseq (tool (sly-agent-q-tools-schema 'mcp level))
        (unless (gethash (gethash "name" tool) levels)
          (puthash (gethash "name" tool) (substring (symbol-name level) 1) levels))))
    (setq tabulated-list-entries
          (mapcar (lambda (name)
                    (let* ((counters (cdr (assoc name stats)))
                           (calls (or (plist-get counters :calls) 0))
                           (failures (or (plist-get counters :failures) 0))
                           (total (or (plist-get counters :total-ms) 0)))
                      (list name
                            (vector name (gethash name levels "?")
                                    (mapconcat #'identity (reverse (gethash name categories)) " ")
                                    (number-to-string calls) (number-to-string failures)
                                    (if (> calls 0) (format "%.2f" (/ total calls)) "-")))))
                  (sly-agent-q--module-list-tools)))))

(defun sly-agent-q--tool-categories ()
  "Return a table of every tool's name → its category names, last first.
One schema per category, not one per tool and category."
  (let ((table (make-hash-table :test 'equal)))
    (dolist (category '(introspection execution buffer diff xref clos packages session) table)
      (seq-doseq (tool (sly-agent-q-tools-schema 'mcp nil (list (intern (format ":%s" category)))))
        (push (symbol-name category) (gethash (gethash "name" tool) table))))))

;;;###autoload
(defun sly-agent-q-show-tools ()
  "Show every registered tool with its safety level, categories and counters."
  (interactive)
  (let ((buffer (get-buffer-create "*Agent-Q Tools*")))
    (with-current-buffer buffer
      (sly-agent-q-tool-list-mode)
      (sly-agent-q--tool-list-entries)
      (tabulated-list-print))
    (pop-to-buffer buffer)))

(defun sly-agent-q-tool-list-describe (name)
  "Show the description and parameter schema of the tool NAME (at point)."
  (interactive (list (tabulated-list-get-id)))
  (unless name (user-error "No tool on this line"))
  (let ((tool (gethash name (sly-agent-q--tools-by-name))))
    (with-help-window (get-buffer-create "*Agent-Q Tool*")
      (princ (format "%s\n\n%s\n\nParameters (JSON schema):\n\n" name (gethash "description" tool)))
      (princ (with-temp-buffer
               (insert (json-serialize (gethash "inputSchema" tool)))
               (json-pretty-print-buffer)
               (buffer-string))))))

(provide 'sly-agent-q-tool-list)

;;; sly-agent-q-tool-list.el ends here
