;;; sly-agent-q-chat-buffer.el --- The chat's buffer: its options, state, display and input -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; The part of the agent chat (sly-agent-q-chat.el) every other part
;; builds on: the options, the conversation and the request in flight,
;; *Agent-Q Chat* and its mode, the tool lines, the input and its
;; history, code blocks' faces, and showing or starting a conversation.
;; The agent loop is in sly-agent-q-chat-loop.el, saved conversations in
;; sly-agent-q-chat-sessions.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-runtime)
(require 'ring)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-approval)
(require 'sly-agent-q-commands)
(require 'sly-agent-q-provider)

(declare-function sly-agent-q--module-json-text "sly-agent-q-module" (value))
(declare-function sly-agent-q-debugger-show-held "sly-agent-q-debugger" (id &optional note))
;; The other parts of the chat, which require this one (the keys and the
;; commands here reach them once sly-agent-q-chat.el loaded them all).
(declare-function sly-agent-q-send "sly-agent-q-chat-loop" (text))
(declare-function sly-agent-q-cancel-chat "sly-agent-q-chat-loop" ())
(declare-function sly-agent-q-chat-save "sly-agent-q-chat-sessions" ())
(declare-function sly-agent-q-chat-open "sly-agent-q-chat-sessions" (id))
(declare-function sly-agent-q-chat-list-sessions "sly-agent-q-chat-sessions" ())
(declare-function sly-agent-q-chat--save-file "sly-agent-q-chat-sessions" ())
(declare-function sly-agent-q-context-add-region "sly-agent-q-chat" (start end))

;;;; Options

(defgroup sly-agent-q-chat nil
  "The agent chat of sly-agent-q."
  :group 'sly-agent-q
  :prefix "sly-agent-q-chat-")

(defcustom sly-agent-q-chat-max-rounds 25
  "How many model replies one request may take before the chat stops.
Each reply that asks for tool calls starts another round; at the limit
the chat stops with a message, and \"continue\" goes on."
  :type 'natnum
  :group 'sly-agent-q-chat)

(defcustom sly-agent-q-chat-max-safety-level nil
  "The most dangerous tools the model is offered; nil offers them all.
Dangerous tools still ask for approval when they are called."
  :type '(choice (const :tag "All tools" nil)
                 (const :tag "Safe only" :safe)
                 (const :tag "Safe and cautious" :cautious)
                 (const :tag "All, dangerous included" :dangerous))
  :group 'sly-agent-q-chat)

(defcustom sly-agent-q-system-prompt
  "You are Agent-Q, a Common Lisp coding agent.  You work in a live ECL \
\(Embeddable Common Lisp) image that runs inside the user's Emacs: what you \
define with the tools stays defined for the rest of the session, and the \
user sees the same image.  Use the tools to evaluate code, to look things \
up in the image (describe, apropos, who-calls) and to read or change files \
and buffers; check your work by running it.  Tools that change files need \
the user's approval: when a call is denied, read the reason and adjust.  \
Answer concisely; show code in ```lisp blocks."
  "The system prompt of the chat.
The names of the tools offered, and the context items added with
\\[sly-agent-q-context-add-region] and its siblings, are appended to it."
  :type 'string
  :group 'sly-agent-q-chat)

(defcustom sly-agent-q-session-directory
  (locate-user-emacs-file "sly-agent-q/sessions/")
  "Where conversations are saved, one JSON file each.
API keys are never written there."
  :type 'directory
  :group 'sly-agent-q-chat)

(defcustom sly-agent-q-chat-autosave t
  "Non-nil means a conversation is saved whenever a request ends."
  :type 'boolean
  :group 'sly-agent-q-chat)

(defcustom sly-agent-q-chat-buffer-name "*Agent-Q Chat*"
  "The name of the chat buffer."
  :type 'string
  :group 'sly-agent-q-chat)

(defvar sly-agent-q-chat-done-functions nil
  "Functions called with one argument when a request and its tool loop end.
The argument is the final assistant text, or the message that says why
the request ended without one (an error, a cancel, the round limit).")

(defface sly-agent-q-chat-user '((t :inherit font-lock-keyword-face))
  "The person's messages in the chat."
  :group 'sly-agent-q-chat)

(defface sly-agent-q-chat-heading '((t :inherit bold))
  "The \"You:\" and \"Agent:\" headings of the chat."
  :group 'sly-agent-q-chat)

(defface sly-agent-q-chat-tool '((t :inherit font-lock-function-name-face))
  "A tool call's line in the chat."
  :group 'sly-agent-q-chat)

(defface sly-agent-q-chat-tool-failed '((t :inherit error))
  "The status of a failed or denied tool call."
  :group 'sly-agent-q-chat)

(defface sly-agent-q-chat-tool-ok '((t :inherit success))
  "The status of a tool call that succeeded."
  :group 'sly-agent-q-chat)

(defface sly-agent-q-chat-error '((t :inherit error))
  "Errors and notices in the chat."
  :group 'sly-agent-q-chat)

(defface sly-agent-q-chat-details '((t :inherit shadow))
  "A tool call's arguments and result, when shown."
  :group 'sly-agent-q-chat)

;;;; The conversation

(defvar sly-agent-q-chat--messages nil
  "The conversation as provider-neutral messages, oldest first.")

(defvar sly-agent-q-chat--id nil
  "The saved conversation's id (its file name without .json), or nil.")

(defvar sly-agent-q-chat--created nil
  "When the conversation started, as ISO 8601 text.")

(defvar sly-agent-q-chat--usage (cons 0 0)
  "Tokens used by the conversation: (INPUT . OUTPUT).")

(defvar sly-agent-q-chat--context nil
  "Context items added with the context commands: (LABEL . TEXT), newest first.")

(defvar sly-agent-q-chat--last-response nil
  "The last final answer of the model.")

;;;; The request in flight

(defvar sly-agent-q-chat--state nil
  "Nil when idle, else `waiting' for the model or `tools' while they run.")

(defvar sly-agent-q-chat--generation 0
  "Counts requests and cancels; a callback of an older one is ignored.")

(defvar sly-agent-q-chat--request nil
  "The provider request in flight.")

(defvar sly-agent-q-chat--job nil
  "The asynchronous tool job in flight.")

(defvar sly-agent-q-chat--round 0
  "How many model replies the current request has had.")

(defvar sly-agent-q-chat--response-open nil
  "Non-nil once the current reply's text has begun in the buffer.")

(defvar sly-agent-q-chat--response-start nil
  "Marker where the current reply's text begins.")

(defvar sly-agent-q-chat--spinner-timer nil
  "The timer that turns the mode line's spinner.")

(defvar sly-agent-q-chat--spinner-index 0
  "Which frame of the spinner shows.")

(defconst sly-agent-q-chat--spinner-frames ["-" "\\" "|" "/"]
  "The spinner's frames (ASCII: they show on every terminal).")

(defvar sly-agent-q-chat--input-ring (make-ring 100)
  "What the person sent, for \\[sly-agent-q-chat-previous-input].")

(defvar-local sly-agent-q-chat--input-ring-index nil
  "Where \\[sly-agent-q-chat-previous-input] is in the input ring.")

(defvar-local sly-agent-q-chat--output-marker nil
  "Where transcript text is inserted: before the prompt line.")

(defvar-local sly-agent-q-chat--input-marker nil
  "Where the person's input begins.")

;;;###autoload (autoload 'sly-agent-q-chat-busy-p "sly-agent-q-chat" nil nil)
(defun sly-agent-q-chat-busy-p ()
  "Non-nil while a chat request or its tool loop is under way."
  (and sly-agent-q-chat--state t))

;;;; The buffer

(defvar sly-agent-q-chat-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'sly-agent-q-chat-return)
    (define-key map (kbd "C-j") #'newline)
    (define-key map (kbd "S-<return>") #'newline)
    (define-key map (kbd "C-c C-c") #'sly-agent-q-chat-send-input)
    (define-key map (kbd "C-c C-k") #'sly-agent-q-cancel-chat)
    (define-key map (kbd "M-p") #'sly-agent-q-chat-previous-input)
    (define-key map (kbd "M-n") #'sly-agent-q-chat-next-input)
    (define-key map (kbd "TAB") #'sly-agent-q-chat-toggle-tool)
    (define-key map (kbd "C-c C-s") #'sly-agent-q-chat-save)
    (define-key map (kbd "C-c C-f") #'sly-agent-q-chat-open)
    (define-key map (kbd "C-c C-n") #'sly-agent-q-new-conversation)
    (define-key map (kbd "C-c C-l") #'sly-agent-q-chat-list-sessions)
    map)
  "Keymap of `sly-agent-q-chat-mode'.")

(defun sly-agent-q-chat--mode-line ()
  "The chat's state for the mode line: spinner, round and tokens."
  (concat
   (pcase sly-agent-q-chat--state
     ('waiting (format " %s thinking (round %d)"
                       (aref sly-agent-q-chat--spinner-frames sly-agent-q-chat--spinner-index)
                       sly-agent-q-chat--round))
     ('tools (format " %s running tools"
                     (aref sly-agent-q-chat--spinner-frames sly-agent-q-chat--spinner-index)))
     (_ ""))
   (if (> (+ (car sly-agent-q-chat--usage) (cdr sly-agent-q-chat--usage)) 0)
       (format " [tokens in %d out %d]" (car sly-agent-q-chat--usage) (cdr sly-agent-q-chat--usage))
     "")))

(define-derived-mode sly-agent-q-chat-mode text-mode "Agent-Q Chat"
  "A conversation with the agent.
Type at the prompt at the bottom; \\[sly-agent-q-chat-return] sends \
\(\\[newline] for a new line), \\[sly-agent-q-cancel-chat] stops the
request and its tool loop.  The answer streams in as it comes; each tool
call is one line, and \\[sly-agent-q-chat-toggle-tool] on it shows its
arguments and result.
\\{sly-agent-q-chat-mode-map}"
  :group 'sly-agent-q-chat
  (setq-local font-lock-defaults '(nil t))
  (setq-local mode-line-process '(:eval (sly-agent-q-chat--mode-line)))
  (setq-local truncate-lines nil)
  (visual-line-mode 1)
  (font-lock-mode 1)
  (sly-agent-q-chat--layout))

(defun sly-agent-q-chat--layout ()
  "Make the empty chat: a header, the prompt line and its markers."
  (let ((inhibit-read-only t))
    (erase-buffer)
    (insert (propertize (format "Agent-Q chat — model: %s.  RET sends, C-c C-k cancels, TAB on a tool line shows it.\n"
                                (sly-agent-q-chat--backend-label))
                        'font-lock-face 'shadow 'read-only t 'front-sticky '(read-only)))
    (let ((prompt-start (point)))
      (insert (propertize "\n> " 'font-lock-face 'sly-agent-q-chat-heading 'read-only t
                          'rear-nonsticky '(read-only font-lock-face)))
      (setq sly-agent-q-chat--output-marker (copy-marker prompt-start t))
      (setq sly-agent-q-chat--input-marker (point-marker)))))

(defun sly-agent-q-chat--backend-label ()
  "The backend in use and its model, as text."
  (condition-case nil
      (let ((backend (sly-agent-q-provider-backend)))
        (format "%s (%s)" (plist-get backend :name) (plist-get backend :model)))
    (error (format "%s (not configured)" sly-agent-q-backend))))

(defun sly-agent-q-chat--buffer ()
  "The chat buffer, made and laid out if needed."
  (or (get-buffer sly-agent-q-chat-buffer-name)
      (with-current-buffer (get-buffer-create sly-agent-q-chat-buffer-name)
        (sly-agent-q-chat-mode)
        (sly-agent-q-chat--render-messages)
        (current-buffer))))

(defun sly-agent-q-chat--insert (text &rest properties)
  "Insert TEXT with PROPERTIES at the end of the transcript.
Only TEXT is inserted: a streamed reply costs what its new piece costs."
  (with-current-buffer (sly-agent-q-chat--buffer)
    ;; Point at the prompt comes after this text, so a window there keeps
    ;; showing the end as the reply grows.
    (let ((inhibit-read-only t))
      (save-excursion
        (goto-char sly-agent-q-chat--output-marker)
        (insert (apply #'propertize text 'read-only t properties))))))

(defun sly-agent-q-chat--insert-heading (who face)
  "Begin a new block of the transcript headed WHO in FACE."
  (with-current-buffer (sly-agent-q-chat--buffer)
    (let ((bol (save-excursion (goto-char sly-agent-q-chat--output-marker) (bolp))))
      (sly-agent-q-chat--insert (concat (if bol "\n" "\n\n") who "\n") 'font-lock-face face))))

(defun sly-agent-q-chat--notice (text)
  "Put TEXT in the transcript as a notice (an error, a cancel)."
  (sly-agent-q-chat--insert (concat "\n[" text "]\n") 'font-lock-face 'sly-agent-q-chat-error))

(defun sly-agent-q-chat--render-messages ()
  "Show `sly-agent-q-chat--messages' in the chat buffer, from scratch."
  (let ((results (make-hash-table :test #'equal)))
    (dolist (message sly-agent-q-chat--messages)
      (when (equal (plist-get message :role) "tool")
        (dolist (result (plist-get message :results))
          (puthash (plist-get result :id) result results))))
    (dolist (message sly-agent-q-chat--messages)
      (pcase (plist-get message :role)
        ("user"
         (sly-agent-q-chat--insert-heading "You:" 'sly-agent-q-chat-heading)
         (sly-agent-q-chat--insert (plist-get message :content) 'font-lock-face 'sly-agent-q-chat-user))
        ("assistant"
         (let ((text (plist-get message :content)))
           (when (and text (not (string-empty-p text)))
             (sly-agent-q-chat--insert-heading "Agent:" 'sly-agent-q-chat-heading)
             (let ((start (with-current-buffer (sly-agent-q-chat--buffer)
                            (marker-position sly-agent-q-chat--output-marker))))
               (sly-agent-q-chat--insert text)
               (sly-agent-q-chat--fontify-code start))))
         (dolist (call (plist-get message :tool-calls))
           (let ((record (sly-agent-q-chat--tool-line call)))
             (when-let ((result (gethash (plist-get call :id) results)))
               (sly-agent-q-chat--tool-finished
                record (list :success (not (plist-get result :error))
                             :content (plist-get result :content)
                             :edited (plist-get result :edited)))))))))))

;;;; Tool lines

(defun sly-agent-q-chat--short-arguments (arguments)
  "ARGUMENTS (JSON text) as one short line."
  (let ((text (replace-regexp-in-string "[ \t\n]+" " " (or arguments ""))))
    (if (> (length text) 60) (concat (substring text 0 57) "...") text)))

(defun sly-agent-q-chat--tool-line (call)
  "Insert the line of the tool CALL (:id :name :arguments); return its record.
The record is a plist kept on the line's text (property
`sly-agent-q-chat-tool'); `sly-agent-q-chat--tool-finished' fills it."
  (let* ((buffer (sly-agent-q-chat--buffer))
         (record (list :call call :status "running..." :done nil :failed nil :content nil
                       :edited nil :expanded nil)))
    (with-current-buffer buffer
      (unless (save-excursion (goto-char sly-agent-q-chat--output-marker) (bolp))
        (sly-agent-q-chat--insert "\n"))
      (let ((start (copy-marker sly-agent-q-chat--output-marker nil)))
        (sly-agent-q-chat--insert "\n")
        (let ((end (copy-marker (1- sly-agent-q-chat--output-marker) t)))
          ;; START..END holds the record's text; the newline after END stays.
          (setq record (append record (list :begin start :end end)))
          (sly-agent-q-chat--render-tool record))))
    record))

(defun sly-agent-q-chat--render-tool (record)
  "Write RECORD's text between its markers.
A call whose arguments the person edited shows those that ran (RECORD's
:edited), and in its details what the model sent."
  (let* ((call (plist-get record :call))
         (status (plist-get record :status))
         (failed (plist-get record :failed))
         (expanded (plist-get record :expanded))
         (edited (plist-get record :edited))
         (line (concat (if expanded "[-] " "[+] ")
                       (propertize (plist-get call :name) 'font-lock-face 'sly-agent-q-chat-tool)
                       " " (sly-agent-q-chat--short-arguments (or edited (plist-get call :arguments)))
                       "  "
                       (propertize status 'font-lock-face
                                   (cond (failed 'sly-agent-q-chat-tool-failed)
                                         ((plist-get record :done) 'sly-agent-q-chat-tool-ok)
                                         (t 'shadow)))
                       (if (plist-get record :condition-id)
                           (concat "  " (sly-agent-q-chat--held-button (plist-get record :condition-id)))
                         "")))
         (details (and expanded
                       (propertize
                        (concat (if edited
                                    (concat "\n    arguments (edited by you): " edited
                                            "\n    the model sent: " (or (plist-get call :arguments) "{}"))
                                  (concat "\n    arguments: " (or (plist-get call :arguments) "{}")))
                                (if (plist-get record :done)
                                    (concat "\n    result:\n"
                                            (replace-regexp-in-string
                                             "^" "      " (or (plist-get record :content) "")))
                                  ""))
                        'font-lock-face 'sly-agent-q-chat-details))))
    (with-current-buffer (marker-buffer (plist-get record :begin))
      (let ((inhibit-read-only t))
        (save-excursion
          (goto-char (plist-get record :begin))
          (delete-region (point) (plist-get record :end))
          (insert (propertize (concat line details)
                              'read-only t 'sly-agent-q-chat-tool record)))))))

(defconst sly-agent-q-chat--denied-regexp
  "\\`\\(?:Denied\\|User denied tool execution\\|rejected — STOP\\)"
  "How the result of a call the user denied begins.
The usual denials, and propose_file_edit's when its review rejected
every hunk (`sly-agent-q--rejected-text').")

(defun sly-agent-q-chat--held-button (id)
  "Return a button to open the error held as condition ID in the debugger."
  (let ((map (make-sparse-keymap))
        (open (lambda ()
                (interactive)
                (require 'sly-agent-q-debugger)
                (sly-agent-q-debugger-show-held id))))
    (define-key map (kbd "RET") open)
    (define-key map [mouse-1] open)
    (propertize (format "[held: condition %d — RET opens the debugger]" id)
                'keymap map 'mouse-face 'highlight 'font-lock-face 'link
                'help-echo "Answer the held error: pick a restart, look at its frames")))

(defun sly-agent-q-chat--tool-finished (record result)
  "Show in RECORD's line the RESULT plist of its call.
RESULT's :edited, when there, is the arguments the call ran with, as
JSON text, after the person edited the model's."
  (let* ((success (plist-get result :success))
         (ms (plist-get (plist-get result :metadata) :execution_time_ms))
         (edited (plist-get result :edited))
         (content (or (plist-get result :content) (plist-get result :error) "")))
    (setf (plist-get record :done) t
          (plist-get record :condition-id) (plist-get (plist-get result :metadata) :condition_id)
          (plist-get record :failed) (not success)
          (plist-get record :content) content
          (plist-get record :edited) edited
          (plist-get record :status)
          (concat (cond (success "ok")
                        ((string-match-p sly-agent-q-chat--denied-regexp content) "denied")
                        (t "failed"))
                  (if edited " (edited)" "")
                  (cond ((not (numberp ms)) "")
                        ((< ms 10) (format " %.2f ms" ms))
                        (t (format " %.0f ms" ms)))))
    (sly-agent-q-chat--render-tool record)))

(defun sly-agent-q-chat-toggle-tool ()
  "Show or hide the arguments and result of the tool call at point."
  (interactive)
  (let ((record (get-text-property (point) 'sly-agent-q-chat-tool)))
    (if (not record)
        (if (>= (point) sly-agent-q-chat--input-marker)
            (indent-for-tab-command)
          (message "No tool call here"))
      (setf (plist-get record :expanded) (not (plist-get record :expanded)))
      (let ((begin (marker-position (plist-get record :begin))))
        (sly-agent-q-chat--render-tool record)
        (goto-char begin)))))

;;;; Input

(defun sly-agent-q-chat--input ()
  "The text at the prompt."
  (buffer-substring-no-properties sly-agent-q-chat--input-marker (point-max)))

(defun sly-agent-q-chat--set-input (text)
  "Replace the text at the prompt by TEXT."
  (delete-region sly-agent-q-chat--input-marker (point-max))
  (goto-char (point-max))
  (insert text))

(defun sly-agent-q-chat-return ()
  "Send the input at the prompt; on a tool line, show or hide it."
  (interactive)
  (cond ((get-text-property (point) 'sly-agent-q-chat-tool) (sly-agent-q-chat-toggle-tool))
        ((< (point) sly-agent-q-chat--input-marker) (goto-char (point-max)))
        (t (sly-agent-q-chat-send-input))))

(defun sly-agent-q-chat-send-input ()
  "Send the text at the prompt to the agent."
  (interactive)
  (let ((text (string-trim (sly-agent-q-chat--input))))
    (cond ((string-empty-p text) (message "Type a message at the prompt first"))
          ((sly-agent-q-chat-busy-p)
           (user-error "A request is still running: %s cancels it"
                       (substitute-command-keys "\\[sly-agent-q-cancel-chat]")))
          (t (ring-insert sly-agent-q-chat--input-ring text)
             (setq sly-agent-q-chat--input-ring-index nil)
             (sly-agent-q-chat--set-input "")
             (sly-agent-q-send text)))))

(defun sly-agent-q-chat-previous-input (n)
  "Put the Nth previous input at the prompt."
  (interactive "p")
  (if (ring-empty-p sly-agent-q-chat--input-ring)
      (message "No earlier input")
    (setq sly-agent-q-chat--input-ring-index
          (if sly-agent-q-chat--input-ring-index
              (ring-plus1 (+ sly-agent-q-chat--input-ring-index (1- n))
                          (ring-length sly-agent-q-chat--input-ring))
            (1- n)))
    (sly-agent-q-chat--set-input (ring-ref sly-agent-q-chat--input-ring sly-agent-q-chat--input-ring-index))))

(defun sly-agent-q-chat-next-input (n)
  "Put the Nth next input at the prompt."
  (interactive "p")
  (if (or (ring-empty-p sly-agent-q-chat--input-ring) (null sly-agent-q-chat--input-ring-index))
      (message "No later input")
    (setq sly-agent-q-chat--input-ring-index
          (mod (- sly-agent-q-chat--input-ring-index n) (ring-length sly-agent-q-chat--input-ring)))
    (sly-agent-q-chat--set-input (ring-ref sly-agent-q-chat--input-ring sly-agent-q-chat--input-ring-index))))

;;;; Code blocks

(defun sly-agent-q-chat--fontify-code (start)
  "Fontify the fenced code blocks of the transcript after START.
Lisp blocks (no language, `lisp', `common-lisp', `cl', `elisp') get
`lisp-mode''s faces; others the mode named LANGUAGE-mode if there is one."
  (with-current-buffer (sly-agent-q-chat--buffer)
    (save-excursion
      (goto-char start)
      (while (re-search-forward "^```\\([-a-zA-Z0-9+]*\\)[ \t]*\n" sly-agent-q-chat--output-marker t)
        (let* ((language (downcase (match-string 1)))
               (code-start (point))
               (code-end (and (re-search-forward "^```[ \t]*$" sly-agent-q-chat--output-marker t)
                              (match-beginning 0)))
               (mode (cond ((member language '("" "lisp" "common-lisp" "cl")) #'lisp-mode)
                           ((member language '("elisp" "emacs-lisp")) #'emacs-lisp-mode)
                           (t (let ((mode (intern-soft (concat language "-mode"))))
                                (and (fboundp mode) mode))))))
          (when (and code-end mode)
            (sly-agent-q-chat--fontify-region code-start code-end mode)))))))

(defun sly-agent-q-chat--fontify-region (start end mode)
  "Give the text from START to END the faces MODE's font-lock gives it."
  (let ((code (buffer-substring-no-properties start end))
        (faces nil))
    (with-temp-buffer
      (let ((delay-mode-hooks t)) (funcall mode))
      (insert code)
      (condition-case nil
          (progn
            (font-lock-ensure)
            (let ((position (point-min)))
              (while (< position (point-max))
                (let ((next (next-single-property-change position 'face nil (point-max)))
                      (face (get-text-property position 'face)))
                  (when face (push (list (1- position) (1- next) face) faces))
                  (setq position next)))))
        (error nil)))
    (let ((inhibit-read-only t))
      (with-silent-modifications
        (dolist (span faces)
          (put-text-property (+ start (nth 0 span)) (+ start (nth 1 span))
                             'font-lock-face (nth 2 span)))))))

;;;; Showing and starting conversations

(defun sly-agent-q-chat--show ()
  "Show the chat buffer with point at the prompt."
  (let ((buffer (sly-agent-q-chat--buffer)))
    (pop-to-buffer buffer)
    (goto-char (point-max))
    buffer))

;;;###autoload (autoload 'sly-agent-q-chat "sly-agent-q-chat" nil t)
(defun sly-agent-q-chat ()
  "Show the agent chat, *Agent-Q Chat*."
  (interactive)
  (sly-agent-q-chat--show))

;;;###autoload (autoload 'sly-agent-q-show-conversation "sly-agent-q-chat" nil t)
(defun sly-agent-q-show-conversation ()
  "Show the conversation with the agent."
  (interactive)
  (sly-agent-q-chat--show))

(defun sly-agent-q-chat--start-conversation ()
  "Give the conversation an id and a start time."
  (setq sly-agent-q-chat--id (format "%s-%04x" (format-time-string "%Y%m%d-%H%M%S") (random 65536))
        sly-agent-q-chat--created (format-time-string "%FT%T%z")))

(defun sly-agent-q-chat--reset (messages)
  "Make MESSAGES the conversation and show it afresh."
  (when (sly-agent-q-chat-busy-p) (sly-agent-q-cancel-chat))
  (setq sly-agent-q-chat--messages messages
        sly-agent-q-chat--last-response nil)
  ;; "Approve for the rest of the conversation" ends with it.
  (sly-agent-q-forget-approvals)
  (when-let ((buffer (get-buffer sly-agent-q-chat-buffer-name)))
    (with-current-buffer buffer
      (sly-agent-q-chat--layout)
      (sly-agent-q-chat--render-messages))))

;;;###autoload (autoload 'sly-agent-q-new-conversation "sly-agent-q-chat" nil t)
(defun sly-agent-q-new-conversation ()
  "Start a new conversation with the agent; the current one stays saved."
  (interactive)
  (when (and sly-agent-q-chat--messages sly-agent-q-chat-autosave)
    (ignore-errors (sly-agent-q-chat--save-file)))
  (setq sly-agent-q-chat--id nil
        sly-agent-q-chat--usage (cons 0 0))
  (sly-agent-q-chat--reset nil)
  (when (called-interactively-p 'interactive)
    (sly-agent-q-chat--show)
    (message "New conversation")))

(provide 'sly-agent-q-chat-buffer)

;;; sly-agent-q-chat-buffer.el ends here
