;;; sly-agent-q-chat-loop.el --- The chat's agent loop: model replies and tool rounds -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; A message goes to the model with the tools' schemas; the tool calls
;; its reply asks for run through `sly-agent-q-execute-tool-calls-async'
;; and their results go back, round after round, until the model answers
;; without calling a tool or `sly-agent-q-chat-max-rounds' is reached.
;; Part of the agent chat (sly-agent-q-chat.el).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-async)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-approval)
(require 'sly-agent-q-provider)
(require 'sly-agent-q-chat-buffer)
(require 'sly-agent-q-chat-sessions)

(declare-function sly-agent-q--module-json-text "sly-agent-q-module" (value))

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

;;;###autoload (autoload 'sly-agent-q-send "sly-agent-q-chat" nil t)
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

(defun sly-agent-q-chat--run-tools (backend tool-calls)
  "Run TOOL-CALLS, the model's tool requests, then send BACKEND their results."
  (let* ((generation sly-agent-q-chat--generation)
         (records (mapcar #'sly-agent-q-chat--tool-line tool-calls))
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
                   tool-calls)
           (lambda (results)
             (when (= generation sly-agent-q-chat--generation)
               (setq sly-agent-q-chat--job nil)
               (setq results (sly-agent-q-chat--edited-results tool-calls results (reverse edits)))
               (cl-mapc #'sly-agent-q-chat--tool-finished records results)
               (setq sly-agent-q-chat--messages
                     (append sly-agent-q-chat--messages
                             (list (list :role "tool"
                                         :results (cl-mapcar #'sly-agent-q-chat--result-message tool-calls results)))))
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

;;;###autoload (autoload 'sly-agent-q-cancel-chat "sly-agent-q-chat" nil t)
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

(provide 'sly-agent-q-chat-loop)

;;; sly-agent-q-chat-loop.el ends here
