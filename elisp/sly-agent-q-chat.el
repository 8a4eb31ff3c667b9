;;; sly-agent-q-chat.el --- The agent chat: a conversation whose model calls our tools -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `M-x sly-agent-q-chat' shows *Agent-Q Chat*.  What the person types at
;; the prompt goes to the model of `sly-agent-q-backend' (see
;; sly-agent-q-provider.el) with the tools' schemas; when the reply asks
;; for tool calls they run through `sly-agent-q-execute-tool-calls-async'
;; (dangerous ones ask in the minibuffer before the round takes the Lisp
;; runner, so that MCP clients and other callers are not held up while
;; the person answers), their results go
;; back with the same ids, and so on until the model answers without
;; calling a tool, or `sly-agent-q-chat-max-rounds' is reached.  Nothing
;; here blocks Emacs: the reply streams in from curl's process filter and
;; the tools run on the Lisp thread.
;;
;; The conversation is kept as provider-neutral messages (see
;; `sly-agent-q-provider-start'): that list is what is sent, saved as JSON
;; in `sly-agent-q-session-directory' and rendered again on resume.  The
;; buffer only shows it.
;;
;; Public entry points: `sly-agent-q-chat', `sly-agent-q-send',
;; `sly-agent-q-chat-busy-p', `sly-agent-q-cancel-chat' and the hook
;; `sly-agent-q-chat-done-functions'.
;;
;; The parts: sly-agent-q-chat-buffer.el (options, state, the buffer),
;; sly-agent-q-chat-loop.el (the agent loop), sly-agent-q-chat-sessions.el
;; (saved conversations); this file adds the context and the commands
;; under `sly-agent-q-keymap-prefix' and loads them all.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-async)
(require 'sly-agent-q-chat-buffer)
(require 'sly-agent-q-chat-sessions)
(require 'sly-agent-q-chat-loop)

;;;; Context and the commands under C-c ?

(defun sly-agent-q-chat--add-context (label text)
  "Add TEXT, described by LABEL, to the context of the next requests."
  (push (cons label text) sly-agent-q-chat--context)
  (message "Context: %d item%s (added %s)" (length sly-agent-q-chat--context)
           (if (cdr sly-agent-q-chat--context) "s" "") label))

;;;###autoload
(defun sly-agent-q-context-add-region (start end)
  "Add the region from START to END to the context the agent sees."
  (interactive "r")
  (sly-agent-q-chat--add-context
   (format "%s, lines %d-%d" (buffer-name) (line-number-at-pos start) (line-number-at-pos end))
   (buffer-substring-no-properties start end)))

;;;###autoload
(defun sly-agent-q-context-add-buffer ()
  "Add the whole buffer to the context the agent sees."
  (interactive)
  (sly-agent-q-chat--add-context
   (format "buffer %s%s" (buffer-name) (if buffer-file-name (format " (%s)" buffer-file-name) ""))
   (buffer-substring-no-properties (point-min) (point-max))))

;;;###autoload
(defun sly-agent-q-context-add-defun ()
  "Add the top-level form at point to the context the agent sees."
  (interactive)
  (let ((bounds (sly-agent-q--defun-bounds)))
    (sly-agent-q-chat--add-context
     (format "%s, the form at line %d" (buffer-name) (line-number-at-pos (car bounds)))
     (buffer-substring-no-properties (car bounds) (cdr bounds)))))

;;;###autoload
(defun sly-agent-q-context-clear ()
  "Forget the context items."
  (interactive)
  (setq sly-agent-q-chat--context nil)
  (message "Context cleared"))

;;;###autoload
(defun sly-agent-q-context-show ()
  "Show the context items the agent sees."
  (interactive)
  (with-help-window "*Agent-Q Context*"
    (if (null sly-agent-q-chat--context)
        (princ "The context is empty.  C-c ? c r/b/d adds the region, buffer or defun.\n")
      (dolist (item (reverse sly-agent-q-chat--context))
        (princ (format "--- %s\n%s\n\n" (car item) (cdr item)))))))

;;;###autoload
(defun sly-agent-q-send-with-context (text)
  "Send TEXT to the agent, saying which context items go with it.
The context items go with every request, in the system prompt; this
command names them in the message too."
  (interactive (list (read-string "Ask the agent (with context): " nil 'sly-agent-q-chat--history)))
  (sly-agent-q-chat--show)
  (sly-agent-q-send
   (if sly-agent-q-chat--context
       (format "%s\n\n(See the context: %s.)" text
               (mapconcat #'car (reverse sly-agent-q-chat--context) "; "))
     text)))

(defun sly-agent-q-chat--code-message (instruction start end)
  "INSTRUCTION followed by the text from START to END as a Lisp block."
  (format "%s\n\n```lisp\n%s\n```" instruction
          (string-trim-right (buffer-substring-no-properties start end))))

;;;###autoload
(defun sly-agent-q-send-region (start end instruction)
  "Send the region from START to END with an INSTRUCTION."
  (interactive (list (region-beginning) (region-end) (read-string "Instruction: ")))
  (let ((text (sly-agent-q-chat--code-message instruction start end)))
    (sly-agent-q-chat--show)
    (sly-agent-q-send text)))

;;;###autoload
(defun sly-agent-q-document-defun ()
  "Ask the agent to write a docstring for the top-level form at point."
  (interactive)
  (let* ((bounds (sly-agent-q--defun-bounds))
         (text (sly-agent-q-chat--code-message
                (format "Write a docstring for this definition%s; propose the edit with propose_file_edit if it is in a file."
                        (if buffer-file-name (format " from %s" buffer-file-name) ""))
                (car bounds) (cdr bounds))))
    (sly-agent-q-chat--show)
    (sly-agent-q-send text)))

;;;###autoload
(defun sly-agent-q-explain-region (start end)
  "Ask the agent to explain the code from START to END."
  (interactive "r")
  (let ((text (sly-agent-q-chat--code-message "Explain what this Common Lisp code does." start end)))
    (sly-agent-q-chat--show)
    (sly-agent-q-send text)))

;;;###autoload
(defun sly-agent-q-fix-last-error ()
  "Ask the agent to find and fix the last error of the Lisp session."
  (interactive)
  (sly-agent-q-chat--show)
  (sly-agent-q-send "Look at the last error in the Lisp session with get_last_error, find its cause and fix it."))

(defun sly-agent-q-chat--last-response ()
  "The last final answer, or a `user-error'."
  (or sly-agent-q-chat--last-response (user-error "The agent has not answered yet")))

;;;###autoload
(defun sly-agent-q-insert-last-response ()
  "Insert the agent's last answer at point."
  (interactive)
  (insert (sly-agent-q-chat--last-response)))

;;;###autoload
(defun sly-agent-q-copy-last-response ()
  "Copy the agent's last answer to the kill ring."
  (interactive)
  (kill-new (sly-agent-q-chat--last-response))
  (message "Copied the last answer (%d characters)" (length sly-agent-q-chat--last-response)))

(provide 'sly-agent-q-chat)

;;; sly-agent-q-chat.el ends here
