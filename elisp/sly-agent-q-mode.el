;;; sly-agent-q-mode.el --- The global minor mode, its keys and menu -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `sly-agent-q-mode' puts the agent's commands under one prefix (C-c ?
;; by default, `sly-agent-q-keymap-prefix'), with the original Agent-Q's
;; bindings, a transient menu on C-c ? ?, the audit log, and a mode-line
;; indicator for a waiting approval or a running auto-approval.  The
;; chat's commands are in sly-agent-q-chat.el.

;;; Code:

(require 'transient)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-approval)
(require 'sly-agent-q-log)
(require 'sly-agent-q-tool-list)
(require 'sly-agent-q-chat)

(declare-function sly-agent-q-evaluate-region "sly-agent-q-commands" (start end))
(declare-function sly-agent-q-evaluate-defun "sly-agent-q-commands" ())

(defun sly-agent-q-jump-to-approval ()
  "Go to the approval question that waits, if any."
  (interactive)
  (cond ((null sly-agent-q-approval-pending)
         (message "sly-agent-q: no approval is waiting"))
        ((active-minibuffer-window)
         (select-window (active-minibuffer-window)))
        (t (message "sly-agent-q: the approval of %s waits in the minibuffer"
                    (car sly-agent-q-approval-pending)))))

(defvar sly-agent-q-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "c r") #'sly-agent-q-context-add-region)
    (define-key map (kbd "c b") #'sly-agent-q-context-add-buffer)
    (define-key map (kbd "c d") #'sly-agent-q-context-add-defun)
    (define-key map (kbd "c c") #'sly-agent-q-context-clear)
    (define-key map (kbd "c s") #'sly-agent-q-context-show)
    (define-key map (kbd "s") #'sly-agent-q-send)
    (define-key map (kbd "S") #'sly-agent-q-send-with-context)
    (define-key map (kbd "r") #'sly-agent-q-send-region)
    (define-key map (kbd "n") #'sly-agent-q-new-conversation)
    (define-key map (kbd "v") #'sly-agent-q-show-conversation)
    (define-key map (kbd "i") #'sly-agent-q-insert-last-response)
    (define-key map (kbd "w") #'sly-agent-q-copy-last-response)
    (define-key map (kbd "q d") #'sly-agent-q-document-defun)
    (define-key map (kbd "q e") #'sly-agent-q-explain-region)
    (define-key map (kbd "q f") #'sly-agent-q-fix-last-error)
    (define-key map (kbd "a") #'sly-agent-q-jump-to-approval)
    (define-key map (kbd "!") #'sly-agent-q-auto-approve)
    (define-key map (kbd "l") #'sly-agent-q-show-log)
    (define-key map (kbd "t") #'sly-agent-q-show-tools)
    (define-key map (kbd "?") #'sly-agent-q-menu)
    map)
  "The commands of sly-agent-q, under `sly-agent-q-keymap-prefix'.")

(defvar sly-agent-q-mode-map (make-sparse-keymap)
  "Keymap of `sly-agent-q-mode': `sly-agent-q-command-map' under the prefix.")

(defun sly-agent-q--set-prefix (symbol value)
  "Set SYMBOL (the prefix option) to VALUE and move the commands there."
  (when (boundp symbol)
    (define-key sly-agent-q-mode-map (kbd (symbol-value symbol)) nil))
  (set-default symbol value)
  (define-key sly-agent-q-mode-map (kbd value) sly-agent-q-command-map))

(defcustom sly-agent-q-keymap-prefix "C-c ?"
  "The key, as `kbd' reads it, in front of every sly-agent-q command.
Control-c and a punctuation character, as Emacs's key binding
conventions give minor modes: Control-c and a letter are the user's."
  :type 'string
  :set #'sly-agent-q--set-prefix
  :group 'sly-agent-q)

(transient-define-prefix sly-agent-q-menu ()
  "The commands of sly-agent-q."
  [["Context"
    ("c r" "add region" sly-agent-q-context-add-region)
    ("c b" "add buffer" sly-agent-q-context-add-buffer)
    ("c d" "add defun" sly-agent-q-context-add-defun)
    ("c c" "clear" sly-agent-q-context-clear)
    ("c s" "show" sly-agent-q-context-show)]
   ["Conversation"
    ("s" "send" sly-agent-q-send)
    ("S" "send with context" sly-agent-q-send-with-context)
    ("r" "send region" sly-agent-q-send-region)
    ("n" "new" sly-agent-q-new-conversation)
    ("v" "show" sly-agent-q-show-conversation)
    ("i" "insert last response" sly-agent-q-insert-last-response)
    ("w" "copy last response" sly-agent-q-copy-last-response)]
   ["Ask"
    ("q d" "document defun" sly-agent-q-document-defun)
    ("q e" "explain region" sly-agent-q-explain-region)
    ("q f" "fix last error" sly-agent-q-fix-last-error)]
   ["Tools"
    ("a" "pending approval" sly-agent-q-jump-to-approval)
    ("!" "auto-approve toggle" sly-agent-q-auto-approve)
    ("l" "audit log" sly-agent-q-show-log)
    ("t" "tool list" sly-agent-q-show-tools)]])

(defun sly-agent-q--mode-line ()
  "The mode-line text of `sly-agent-q-mode'."
  (cond (sly-agent-q-approval-pending
         (propertize (format " AgentQ:APPROVE %s?" (car sly-agent-q-approval-pending))
                     'face 'warning
                     'help-echo "An approval waits: C-c ? a goes to it"))
        ((and sly-agent-q--auto-approve-until (< (float-time) sly-agent-q--auto-approve-until))
         (propertize (format " AgentQ:AUTO %dm"
                             (ceiling (/ (- sly-agent-q--auto-approve-until (float-time)) 60)))
                     'face 'warning
                     'help-echo "Dangerous tools are approved without asking: C-c ? ! stops it"))
        (t " AgentQ")))

;;;###autoload
(define-minor-mode sly-agent-q-mode
  "The sly-agent-q commands under `sly-agent-q-keymap-prefix' (C-c ?).
\\{sly-agent-q-command-map}
While on, cautious and dangerous tool calls are written to the audit log
\(`sly-agent-q-show-log'), and the mode line shows a waiting approval or a
running auto-approval."
  :global t
  :lighter (:eval (sly-agent-q--mode-line))
  :keymap sly-agent-q-mode-map
  :group 'sly-agent-q
  (if sly-agent-q-mode
      (add-hook 'sly-agent-q-tool-execution-functions #'sly-agent-q-log-call)
    (remove-hook 'sly-agent-q-tool-execution-functions #'sly-agent-q-log-call)))

(provide 'sly-agent-q-mode)

;;; sly-agent-q-mode.el ends here
