;;; sly-agent-q-chat-sessions.el --- The chat's saved conversations -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; Each conversation is saved as JSON in `sly-agent-q-session-directory'
;; (after each answer when `sly-agent-q-chat-autosave' is on, or with
;; C-c C-s), listed in *Agent-Q Sessions* and opened again.  Part of the
;; agent chat (sly-agent-q-chat.el).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-runtime)
(require 'tabulated-list)
(require 'sly-agent-q-chat-buffer)

;;;; Saved conversations

(defun sly-agent-q-chat--file (id)
  "The file of the saved conversation ID."
  (expand-file-name (concat id ".json") sly-agent-q-session-directory))

(defun sly-agent-q-chat--title (messages)
  "A title for MESSAGES: the start of the first thing the person said."
  (let ((first (cl-find "user" messages :key (lambda (m) (plist-get m :role)) :test #'equal)))
    (if first
        (truncate-string-to-width
         (replace-regexp-in-string "[ \t\n]+" " " (plist-get first :content)) 60 nil nil "...")
      "(empty)")))

(defun sly-agent-q-chat--json-message (message)
  "Return MESSAGE as data `json-serialize' writes.
Lists of tool calls become arrays."
  (let ((json nil))
    (cl-loop for (key value) on message by #'cddr
             do (setq json
                      (plist-put json key
                                 (pcase key
                                   (:tool-calls (vconcat value))
                                   (:results (vconcat (mapcar (lambda (result)
                                                                (plist-put (copy-sequence result) :error
                                                                           (if (plist-get result :error) t :false)))
                                                              value)))
                                   (_ (or value :null))))))
    json))

(defun sly-agent-q-chat--save-file ()
  "Write the conversation to its file; return the file name.
Only the backend's name is written, never its key."
  (when sly-agent-q-chat--messages
    (unless sly-agent-q-chat--id (sly-agent-q-chat--start-conversation))
    (make-directory sly-agent-q-session-directory t)
    (let ((file (sly-agent-q-chat--file sly-agent-q-chat--id))
          (json (json-serialize
                 (list :id sly-agent-q-chat--id
                       :title (sly-agent-q-chat--title sly-agent-q-chat--messages)
                       :created (or sly-agent-q-chat--created (format-time-string "%FT%T%z"))
                       :updated (format-time-string "%FT%T%z")
                       :backend (format "%s" sly-agent-q-backend)
                       :usage (list :input (car sly-agent-q-chat--usage) :output (cdr sly-agent-q-chat--usage))
                       :messages (vconcat (mapcar #'sly-agent-q-chat--json-message sly-agent-q-chat--messages))))))
      (with-temp-file file
        (set-buffer-file-coding-system 'utf-8-unix)
        (insert json "\n"))
      file)))

(defun sly-agent-q-chat-save ()
  "Save the conversation in `sly-agent-q-session-directory'."
  (interactive)
  (let ((file (sly-agent-q-chat--save-file)))
    (message (if file "Conversation saved in %s" "Nothing to save yet%s") (or file ""))))

(defun sly-agent-q-chat--read-file (file)
  "The saved conversation in FILE, as a plist."
  (with-temp-buffer
    (insert-file-contents file)
    (json-parse-buffer :object-type 'plist :array-type 'list :null-object nil :false-object nil)))

(defun sly-agent-q-chat--sessions ()
  "The saved conversations, newest first: plists with :file, :id and :title."
  (when (file-directory-p sly-agent-q-session-directory)
    (let ((sessions nil))
      (dolist (file (directory-files sly-agent-q-session-directory t "\\.json\\'"))
        (condition-case nil
            (let ((data (sly-agent-q-chat--read-file file)))
              (push (list :file file :id (file-name-base file)
                          :title (or (plist-get data :title) "")
                          :updated (or (plist-get data :updated) "")
                          :count (length (plist-get data :messages)))
                    sessions))
          (error nil)))
      (sort sessions (lambda (a b) (string> (plist-get a :updated) (plist-get b :updated)))))))

(defun sly-agent-q-chat--read-session (prompt)
  "Ask with PROMPT for a saved conversation; return its id."
  (let* ((sessions (or (sly-agent-q-chat--sessions) (user-error "No saved conversation")))
         (choices (mapcar (lambda (s) (cons (format "%s  %s" (plist-get s :id) (plist-get s :title))
                                            (plist-get s :id)))
                          sessions)))
    (cdr (assoc (completing-read prompt choices nil t) choices))))

(defun sly-agent-q-chat-open (id)
  "Resume the saved conversation ID (asked for with completion)."
  (interactive (list (sly-agent-q-chat--read-session "Resume conversation: ")))
  (let ((data (sly-agent-q-chat--read-file (sly-agent-q-chat--file id))))
    (when (and sly-agent-q-chat--messages sly-agent-q-chat-autosave)
      (ignore-errors (sly-agent-q-chat--save-file)))
    (setq sly-agent-q-chat--id id
          sly-agent-q-chat--created (plist-get data :created)
          sly-agent-q-chat--usage (cons (or (plist-get (plist-get data :usage) :input) 0)
                                        (or (plist-get (plist-get data :usage) :output) 0)))
    (sly-agent-q-chat--reset (plist-get data :messages))
    (setq sly-agent-q-chat--last-response
          (cl-loop for message in (reverse sly-agent-q-chat--messages)
                   when (and (equal (plist-get message :role) "assistant")
                             (not (string-empty-p (or (plist-get message :content) ""))))
                   return (plist-get message :content)))
    (when (called-interactively-p 'interactive) (sly-agent-q-chat--show))
    id))

(defun sly-agent-q-chat-delete-session (id)
  "Delete the saved conversation ID (asked for with completion)."
  (interactive (list (sly-agent-q-chat--read-session "Delete conversation: ")))
  (delete-file (sly-agent-q-chat--file id))
  (when (equal id sly-agent-q-chat--id) (setq sly-agent-q-chat--id nil))
  (when (called-interactively-p 'interactive) (message "Deleted conversation %s" id)))

(defvar sly-agent-q-chat-sessions-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'sly-agent-q-chat-sessions-open)
    (define-key map (kbd "d") #'sly-agent-q-chat-sessions-delete)
    map)
  "Keymap of `sly-agent-q-chat-sessions-mode'.")

(define-derived-mode sly-agent-q-chat-sessions-mode tabulated-list-mode "Agent-Q Sessions"
  "The saved conversations: RET resumes one, d deletes it, g refreshes.
\\{sly-agent-q-chat-sessions-mode-map}"
  :group 'sly-agent-q-chat
  (setq tabulated-list-format [("Updated" 25 t) ("Messages" 9 t) ("Title" 0 t)])
  (add-hook 'tabulated-list-revert-hook #'sly-agent-q-chat--list-entries nil t)
  (tabulated-list-init-header))

(defun sly-agent-q-chat--list-entries ()
  "Fill the session list."
  (setq tabulated-list-entries
        (mapcar (lambda (s)
                  (list (plist-get s :id)
                        (vector (plist-get s :updated) (number-to-string (plist-get s :count))
                                (plist-get s :title))))
                (sly-agent-q-chat--sessions))))

(defun sly-agent-q-chat-list-sessions ()
  "List the saved conversations."
  (interactive)
  (with-current-buffer (get-buffer-create "*Agent-Q Sessions*")
    (sly-agent-q-chat-sessions-mode)
    (sly-agent-q-chat--list-entries)
    (tabulated-list-print)
    (pop-to-buffer (current-buffer))))

(defun sly-agent-q-chat-sessions-open ()
  "Resume the conversation on this line."
  (interactive)
  (when-let ((id (tabulated-list-get-id)))
    (sly-agent-q-chat-open id)
    (sly-agent-q-chat--show)))

(defun sly-agent-q-chat-sessions-delete ()
  "Delete the conversation on this line, after asking."
  (interactive)
  (when-let ((id (tabulated-list-get-id)))
    (when (yes-or-no-p (format "Delete conversation %s? " id))
      (sly-agent-q-chat-delete-session id)
      (revert-buffer))))

(provide 'sly-agent-q-chat-sessions)

;;; sly-agent-q-chat-sessions.el ends here
