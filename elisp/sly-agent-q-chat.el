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

;;; Code:

(require 'cl-lib)
(require 'ring)
(require 'subr-x)
(require 'tabulated-list)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-approval)
(require 'sly-agent-q-commands)
(require 'sly-agent-q-provider)

(declare-function sly-agent-q--module-json-text "sly-agent-q-module" (value))

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

;;;###autoload
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
                                         (t 'shadow)))))
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

(defun sly-agent-q-chat--tool-finished (record result)
  "Show in RECORD's line the RESULT plist of its call.
RESULT's :edited, when there, is the arguments the call ran with, as
JSON text, after the person edited the model's."
  (let* ((success (plist-get result :success))
         (ms (plist-get (plist-get result :metadata) :execution_time_ms))
         (edited (plist-get result :edited))
         (content (or (plist-get result :content) (plist-get result :error) "")))
    (setf (plist-get record :done) t
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

;;;; The agent loop

(defun sly-agent-q-chat--system-prompt (tools)
  "The system prompt, with the names of TOOLS and the context items."
  (concat sly-agent-q-system-prompt
          (when tools
            (concat "\n\nTools you can call: "
                    (mapconcat #'identity (sly-agent-q-chat--tool-names tools) ", ") "."))
          (when sly-agent-q-chat--context
            (concat "\n\nContext the user added:\n"
                    (mapconcat (lambda (item) (format "--- %s\n%s" (car item) (cdr item)))
                               (reverse sly-agent-q-chat--context) "\n")))))

(defun sly-agent-q-chat--tool-names (tools)
  "The names of the tool schemas TOOLS (OpenAI or Anthropic format)."
  (delq nil (mapcar (lambda (tool)
                      (and (hash-table-p tool)
                           (or (gethash "name" tool)
                               (let ((function (gethash "function" tool)))
                                 (and (hash-table-p function) (gethash "name" function))))))
                    (append tools nil))))

(defun sly-agent-q-chat--tools (backend)
  "The tool schemas for BACKEND's provider."
  (append (sly-agent-q-tools-schema (if (eq (plist-get backend :type) 'anthropic) 'anthropic 'openai)
                                    sly-agent-q-chat-max-safety-level)
          nil))

;;;###autoload
(defun sly-agent-q-send (text)
  "Send TEXT to the agent as if typed in the chat, and return at once.
The answer, and the tool calls it makes, show in the chat buffer;
`sly-agent-q-chat-done-functions' run when the whole exchange ends."
  (interactive (list (read-string "Ask the agent: " nil 'sly-agent-q-chat--history)))
  (when (sly-agent-q-chat-busy-p)
    (user-error "A request is still running: %s cancels it"
                (substitute-command-keys "\\[sly-agent-q-cancel-chat]")))
  (let ((backend (sly-agent-q-provider-backend)))
    (unless sly-agent-q-chat--id (sly-agent-q-chat--start-conversation))
    ;; The buffer first: made now, it shows the conversation so far.
    (if (called-interactively-p 'interactive)
        (sly-agent-q-chat--show)
      (sly-agent-q-chat--buffer))
    (setq sly-agent-q-chat--messages
          (append sly-agent-q-chat--messages (list (list :role "user" :content text))))
    (sly-agent-q-chat--insert-heading "You:" 'sly-agent-q-chat-heading)
    (sly-agent-q-chat--insert text 'font-lock-face 'sly-agent-q-chat-user)
    (setq sly-agent-q-chat--round 0)
    (cl-incf sly-agent-q-chat--generation)
    (sly-agent-q-chat--start-spinner)
    (sly-agent-q-chat--next-round backend)
    nil))

(defvar sly-agent-q-chat--history nil
  "Minibuffer history of `sly-agent-q-send'.")

(defun sly-agent-q-chat--next-round (backend)
  "Ask BACKEND's model for its next reply to the conversation."
  (cl-incf sly-agent-q-chat--round)
  (if (> sly-agent-q-chat--round sly-agent-q-chat-max-rounds)
      (sly-agent-q-chat--finish
       (format "Stopped after %d rounds of tool calls (sly-agent-q-chat-max-rounds); send \"continue\" to go on."
               sly-agent-q-chat-max-rounds)
       t)
    (let* ((generation sly-agent-q-chat--generation)
           (tools (sly-agent-q-chat--tools backend))
           (live (lambda () (= generation sly-agent-q-chat--generation))))
      (setq sly-agent-q-chat--state 'waiting
            sly-agent-q-chat--response-open nil)
      (setq sly-agent-q-chat--request
            (sly-agent-q-provider-start
             backend
             :messages sly-agent-q-chat--messages
             :system (sly-agent-q-chat--system-prompt tools)
             :tools tools
             :on-text (lambda (delta) (when (funcall live) (sly-agent-q-chat--text delta)))
             :on-status (lambda (status) (when (funcall live) (sly-agent-q-chat--notice status)))
             :on-done (lambda (reply) (when (funcall live) (sly-agent-q-chat--reply backend reply)))
             :on-error (lambda (message) (when (funcall live) (sly-agent-q-chat--finish message t))))))))

(defun sly-agent-q-chat--text (delta)
  "Append DELTA to the reply being streamed."
  (unless sly-agent-q-chat--response-open
    (sly-agent-q-chat--insert-heading "Agent:" 'sly-agent-q-chat-heading)
    (setq sly-agent-q-chat--response-open t)
    (setq sly-agent-q-chat--response-start
          (with-current-buffer (sly-agent-q-chat--buffer)
            (copy-marker sly-agent-q-chat--output-marker nil))))
  (sly-agent-q-chat--insert delta))

(defun sly-agent-q-chat--add-usage (usage)
  "Count USAGE, (:input-tokens N :output-tokens N), into the conversation's."
  (setq sly-agent-q-chat--usage
        (cons (+ (car sly-agent-q-chat--usage) (or (plist-get usage :input-tokens) 0))
              (+ (cdr sly-agent-q-chat--usage) (or (plist-get usage :output-tokens) 0)))))

(defun sly-agent-q-chat--reply (backend reply)
  "Handle the model's REPLY from BACKEND.
Run the tool calls it asks for, or finish."
  (setq sly-agent-q-chat--request nil)
  (sly-agent-q-chat--add-usage (plist-get reply :usage))
  (let ((text (or (plist-get reply :text) ""))
        (calls (plist-get reply :tool-calls)))
    (when (and sly-agent-q-chat--response-open sly-agent-q-chat--response-start)
      (sly-agent-q-chat--fontify-code sly-agent-q-chat--response-start))
    (setq sly-agent-q-chat--messages
          (append sly-agent-q-chat--messages
                  (list (append (list :role "assistant" :content text)
                                (and calls (list :tool-calls calls))))))
    (if (null calls)
        (progn (setq sly-agent-q-chat--last-response text)
               (sly-agent-q-chat--finish text nil))
      (sly-agent-q-chat--run-tools backend calls))))

(defun sly-agent-q-chat--approve-from-chat (approve &optional on-edit)
  "APPROVE, the approval function, with the prompt saying the chat asks.
ON-EDIT non-nil is called with the list (NAME ARGUMENTS NEW-ARGUMENTS)
for each answer (:modified NEW-ARGUMENTS) to the question about tool
NAME with ARGUMENTS (a copy of what the person saw)."
  (and approve
       (lambda (name arguments)
         (let* ((sly-agent-q-call-origin (or sly-agent-q-call-origin "chat"))
                (asked (if (hash-table-p arguments) (copy-hash-table arguments) arguments))
                (decision (funcall approve name arguments)))
           (when (and on-edit (eq (car-safe decision) :modified))
             (funcall on-edit (list name asked (cadr decision))))
           decision))))

(defun sly-agent-q-chat--call-arguments (call)
  "The arguments of the model's CALL as JSON text, \"{}\" when it sent none."
  (let ((arguments (plist-get call :arguments)))
    (if (or (null arguments) (string-empty-p (string-trim arguments)))
        "{}"
      arguments)))

(defun sly-agent-q-chat--run-tools (backend calls)
  "Run CALLS, the model's tool requests, then send BACKEND their results."
  (let* ((generation sly-agent-q-chat--generation)
         (records (mapcar #'sly-agent-q-chat--tool-line calls))
         ;; The chat is one caller, whatever buffer is current: its
         ;; dangerous calls are asked about before the job takes the
         ;; runner, as all jobs' are.
         (sly-agent-q-caller (sly-agent-q-chat--buffer))
         (sly-agent-q-call-origin (or sly-agent-q-call-origin "chat")) ; the audit log's door
         (edits nil)                    ; the answers that edited arguments, newest first
         (sly-agent-q-approval-function
          (sly-agent-q-chat--approve-from-chat sly-agent-q-approval-function
                                               (lambda (edit) (push edit edits)))))
    (setq sly-agent-q-chat--state 'tools)
    (setq sly-agent-q-chat--job
          (sly-agent-q-execute-tool-calls-async
           (mapcar (lambda (call)
                     (list :id (plist-get call :id) :name (plist-get call :name)
                           :arguments (sly-agent-q-chat--call-arguments call)))
                   calls)
           (lambda (results)
             (when (= generation sly-agent-q-chat--generation)
               (setq sly-agent-q-chat--job nil)
               (setq results (sly-agent-q-chat--edited-results calls results (reverse edits)))
               (cl-mapc #'sly-agent-q-chat--tool-finished records results)
               (setq sly-agent-q-chat--messages
                     (append sly-agent-q-chat--messages
                             (list (list :role "tool"
                                         :results (cl-mapcar #'sly-agent-q-chat--result-message calls results)))))
               (sly-agent-q-chat--next-round backend)))))))

(defun sly-agent-q-chat--result-message (call result)
  "The neutral tool result of CALL for the executor's RESULT plist.
When the person edited the call's arguments (RESULT's :edited), the
content begins with a note saying so, and the message keeps :edited."
  (let ((success (plist-get result :success))
        (edited (plist-get result :edited)))
    (append
     (list :id (plist-get call :id) :name (plist-get call :name)
           :content (concat
                     (and edited (sly-agent-q-chat--edit-note call edited))
                     (let ((content (plist-get result :content))
                           (error (plist-get result :error)))
                       (cond ((and content (not (string-empty-p content))) content)
                             (error error)
                             (t ""))))
           :error (not success))
     (and edited (list :edited edited)))))

;;;; Arguments the person edited

(defconst sly-agent-q-chat--answer-keys '("hunks_total" "hunks_applied" "reviewed_lines" "original_lines")
  "Keys an approval answer adds that the model never sends.
The review of propose_file_edit adds the first two
\(`sly-agent-q--propose-file-edit'), that of edit_form and insert_form
all (`sly-agent-q-form-edit-review').")

(defconst sly-agent-q-chat--while-running-regexp " while it runs\\'"
  "How each thing a question says an agent's running code does ends.
Such a question is asked while the code runs (CHECK-WORLD-OPERATION in
agent-code.lisp): an edit cannot change that code, and denies.")

(defun sly-agent-q-chat--json-table (text)
  "The JSON object TEXT as a hash table, without its null members.
The executor leaves those out too.  nil when TEXT is no JSON object."
  (let ((object (ignore-errors (json-parse-string text))))
    (when (hash-table-p object)
      (let ((table (make-hash-table :test #'equal)))
        (maphash (lambda (key value) (unless (eq value :null) (puthash key value table)))
                 object)
        table))))

(defun sly-agent-q-chat--same-json-p (a b)
  "Non-nil when A and B are the same JSON value (`json-parse-string' data)."
  (cond ((and (hash-table-p a) (hash-table-p b))
         (and (= (hash-table-count a) (hash-table-count b))
              (catch 'differ
                (maphash (lambda (key value)
                           (unless (sly-agent-q-chat--same-json-p value (gethash key b 'absent))
                             (throw 'differ nil)))
                         a)
                t)))
        ((and (vectorp a) (vectorp b))
         (and (= (length a) (length b))
              (cl-every #'sly-agent-q-chat--same-json-p a b)))
        (t (equal a b))))

(defun sly-agent-q-chat--ran-with (sent edit)
  "The arguments a call ran with, if EDIT answered the question about it.
SENT is what the model sent, from `sly-agent-q-chat--json-table'; EDIT
is (NAME ASKED NEW): the question's arguments and the answer's.  nil
when EDIT is about another call.  A question about an agent's code has
\"touches\", which the model did not send: only the code the model sent
as \"code\" (evaluate_lisp) or \"form\" changes, to NEW's."
  (pcase-let ((`(,_ ,asked ,new) edit))
    (setq new (and new (sly-agent-q-chat--json-table
                        (or (ignore-errors (sly-agent-q--module-json-text new)) ""))))
    (cond
     ((or (not (hash-table-p asked)) (not new)) nil)
     ((and (gethash "touches" asked) (not (gethash "touches" sent)))
      (let ((key (if (gethash "code" sent) "code" "form"))
            (code (or (gethash "code" new) (gethash "form" new)))
            (touches (append (gethash "touches" asked) nil)))
        (when (and (stringp code)
                   (equal (gethash "code" asked) (gethash key sent))
                   (member (gethash "package" asked) (list nil (gethash "package" sent)))
                   (not (and touches
                             (cl-every (lambda (touch)
                                         (and (stringp touch)
                                              (string-match-p sly-agent-q-chat--while-running-regexp touch)))
                                       touches))))
          (let ((ran (copy-hash-table sent)))
            (puthash key code ran)
            ran))))
     ((sly-agent-q-chat--same-json-p asked sent)
      (dolist (key sly-agent-q-chat--answer-keys new)
        (unless (gethash key sent) (remhash key new)))))))

(defun sly-agent-q-chat--edited-results (calls results edits)
  "Mark with :edited each of RESULTS whose call ran with edited arguments.
CALLS are the model's, in the order of RESULTS.  EDITS are the approval
answers that edited arguments, oldest first, as
`sly-agent-q-chat--approve-from-chat' gives them; each goes to the first
call of its tool it is about.  :edited is the arguments the call ran
with, as JSON text, when they are not those the model sent."
  (cl-mapcar
   (lambda (call result)
     (let* ((name (plist-get call :name))
            (sent (sly-agent-q-chat--json-table (sly-agent-q-chat--call-arguments call)))
            (ran (and sent
                      (cl-loop for edit in edits
                               for found = (and (equal (car edit) name)
                                                (sly-agent-q-chat--ran-with sent edit))
                               when found
                               do (setq edits (delq edit edits))
                               and return found))))
       (if (and ran (not (sly-agent-q-chat--same-json-p ran sent)))
           (append (list :edited (json-serialize ran)) result)
         result)))
   calls results))

(defun sly-agent-q-chat--edit-note (call edited)
  "The line telling the model that the arguments of its CALL were EDITED.
EDITED is the arguments the call ran with, as JSON text."
  (let* ((sent (sly-agent-q-chat--call-arguments call))
         (table (sly-agent-q-chat--json-table sent)))
    (format "Note: the user edited the arguments of this call before it ran. It ran with: %s (you sent: %s).\n"
            edited (if table (json-serialize table) sent))))

(defun sly-agent-q-chat--finish (text errorp)
  "End the request: TEXT is the final answer, or when ERRORP why it ended."
  (setq sly-agent-q-chat--state nil
        sly-agent-q-chat--request nil
        sly-agent-q-chat--job nil)
  (cl-incf sly-agent-q-chat--generation)
  (sly-agent-q-chat--stop-spinner)
  (when errorp (sly-agent-q-chat--notice text))
  (when sly-agent-q-chat-autosave
    (condition-case err
        (sly-agent-q-chat--save-file)
      (error (message "sly-agent-q: the conversation could not be saved: %s" (error-message-string err)))))
  (run-hook-with-args 'sly-agent-q-chat-done-functions text))

;;;###autoload
(defun sly-agent-q-cancel-chat ()
  "Stop the chat's request and its tool loop at once.
A running tool call is interrupted; the conversation so far is kept."
  (interactive)
  (if (not (sly-agent-q-chat-busy-p))
      (when (called-interactively-p 'interactive) (message "No chat request is running"))
    (when sly-agent-q-chat--request (sly-agent-q-provider-cancel sly-agent-q-chat--request))
    (when sly-agent-q-chat--job (sly-agent-q-cancel sly-agent-q-chat--job))
    (sly-agent-q-chat--finish "Cancelled." t)))

(defun sly-agent-q-chat--start-spinner ()
  "Turn the mode line's spinner while a request is under way."
  (sly-agent-q-chat--stop-spinner)
  (setq sly-agent-q-chat--spinner-timer
        (run-with-timer 0.2 0.2
                        (lambda ()
                          (setq sly-agent-q-chat--spinner-index
                                (% (1+ sly-agent-q-chat--spinner-index)
                                   (length sly-agent-q-chat--spinner-frames)))
                          (when-let ((buffer (get-buffer sly-agent-q-chat-buffer-name)))
                            (when (get-buffer-window buffer t)
                              (with-current-buffer buffer (force-mode-line-update))))))))

(defun sly-agent-q-chat--stop-spinner ()
  "Stop the spinner."
  (when (timerp sly-agent-q-chat--spinner-timer)
    (cancel-timer sly-agent-q-chat--spinner-timer))
  (setq sly-agent-q-chat--spinner-timer nil)
  (when-let ((buffer (get-buffer sly-agent-q-chat-buffer-name)))
    (with-current-buffer buffer (force-mode-line-update))))

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

;;;###autoload
(defun sly-agent-q-chat ()
  "Show the agent chat, *Agent-Q Chat*."
  (interactive)
  (sly-agent-q-chat--show))

;;;###autoload
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

;;;###autoload
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

;;;; Context and the commands under C-c q

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
        (princ "The context is empty.  C-c q c r/b/d adds the region, buffer or defun.\n")
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
