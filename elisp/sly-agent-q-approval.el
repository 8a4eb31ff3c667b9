;;; sly-agent-q-approval.el --- Asking the person before a dangerous tool runs -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; The default `sly-agent-q-approval-function': standing rules first
;; (`sly-agent-q-approval-rules'), then a temporary auto-approval, then
;; tools approved for the rest of the conversation, and only then a
;; question in the minibuffer:
;;
;;   y approve   n deny   r deny and tell the model why   e edit the arguments
;;   ! approve this tool for the rest of the conversation   v view the arguments
;;
;; There is no default answer (RET alone never approves) and C-g denies.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'rmc)
(require 'json)
(require 'js)
(require 'sly-agent-q-runtime)

(declare-function sly-agent-q--module-json-text "sly-agent-q-module" (value))
(declare-function sly-agent-q-review-edit-proposal "sly-agent-q-review" (args))
(declare-function sly-agent-q-form-edit-review "sly-agent-q-form-edit" (tool args))
(declare-function sly-agent-q--path-base "sly-agent-q-files" ())
(declare-function sly-agent-q--true-path "sly-agent-q-files" (path &optional base))
(declare-function sly-agent-q--record-true-path "sly-agent-q-files" (absolute true))
(declare-function sly-agent-q--inside-roots-p "sly-agent-q-files" (true &optional roots))

(defgroup sly-agent-q-approval nil
  "Approving the dangerous tools of sly-agent-q."
  :group 'sly-agent-q
  :prefix "sly-agent-q-")

(defcustom sly-agent-q-approval-rules nil
  "Standing decisions for dangerous tools, checked before asking.
Each rule is (TOOL GLOB DECISION): TOOL is a tool name or \"*\"; GLOB is
matched against the true name of the call's `path' argument (a shell
glob where `**' crosses directories; \"*\" matches any call, also one
without a path; see `sly-agent-q--rule-path' for the true name),
or is the symbol `outside-project', which matches a path outside the
current project (as `sly-agent-q-allowed-directories' would have it);
or is (touches REGEXP), which matches an agent's code (evaluate_lisp,
eval_form, compile_form) when everything reading it found it would do
matches REGEXP, as in
  (\"evaluate_lisp\" (touches \"RUN-PROGRAM on \\\"make\\\"\") allow)
DECISION is `allow', `deny' or `ask'.  The first matching rule decides;
with none, the person is asked.  Example: allow writing Lisp files under
src/, ask for everything else:

  ((\"write_file\" \"**/src/**/*.lisp\" allow))"
  :type '(repeat (list (string :tag "Tool name (or *)")
                       (choice (string :tag "Path glob")
                               (const :tag "Outside the project" outside-project)
                               (list :tag "What an agent's code touches"
                                     (const touches) (regexp :tag "Each finding matches")))
                       (choice (const :tag "Allow" allow)
                               (const :tag "Deny" deny)
                               (const :tag "Ask" ask))))
  :group 'sly-agent-q-approval)

(defcustom sly-agent-q-approval-no-session-tools '("write_file")
  "Dangerous tools for which `!' is not offered.
\(`!' approves a tool for the rest of the conversation.)"
  :type '(repeat string)
  :group 'sly-agent-q-approval)

(defcustom sly-agent-q-approval-argument-width 300
  "Characters of a string argument shown in the approval prompt.
The `v' answer shows all of it."
  :type 'integer
  :group 'sly-agent-q-approval)

(defvar sly-agent-q--session-approved-tools nil
  "Names of the tools approved for the rest of the conversation with `!'.")

(defvar sly-agent-q--auto-approve-until nil
  "When non-nil, dangerous tools are approved until this `float-time'.")

(defvar sly-agent-q-approval-pending nil
  "Non-nil while an approval question waits: (TOOL-NAME . TIME).")

(defun sly-agent-q-forget-approvals ()
  "Make every dangerous tool ask again.
Forgets the tools approved for the rest of the conversation and stops an
auto-approval."
  (interactive)
  (setq sly-agent-q--session-approved-tools nil
        sly-agent-q--auto-approve-until nil)
  (force-mode-line-update t)
  (when (called-interactively-p 'interactive)
    (message "sly-agent-q: every dangerous tool asks again")))

(defun sly-agent-q-auto-approve (minutes)
  "Approve every dangerous tool for the next MINUTES minutes (0: stop).
Interactively, toggles: off when on, else asks for the minutes (default 10)."
  (interactive
   (list (if (sly-agent-q--auto-approving-p)
             0
           (read-number "Auto-approve dangerous tools for how many minutes? " 10))))
  (setq sly-agent-q--auto-approve-until
        (and (> minutes 0) (+ (float-time) (* 60 minutes))))
  (force-mode-line-update t)
  (message (if sly-agent-q--auto-approve-until
               "sly-agent-q: dangerous tools are approved for %s minutes (toggle off with the same command)"
             "sly-agent-q: dangerous tools ask again%s")
           (if sly-agent-q--auto-approve-until minutes "")))

(defun sly-agent-q--auto-approving-p ()
  "Non-nil while the auto-approval window is open."
  (and sly-agent-q--auto-approve-until (< (float-time) sly-agent-q--auto-approve-until)))

(defun sly-agent-q--glob-regexp (glob)
  "GLOB as an anchored regexp.
`**' is any text, `*' any text without /, `?' one character."
  (let ((regexp "") (i 0))
    (while (< i (length glob))
      (let ((char (aref glob i)))
        (setq regexp
              (concat regexp
                      (cond ((and (eq char ?*) (< (1+ i) (length glob)) (eq (aref glob (1+ i)) ?*))
                             (setq i (1+ i))
                             ;; "**/" also matches no directory at all.
                             (if (and (< (1+ i) (length glob)) (eq (aref glob (1+ i)) ?/))
                                 (progn (setq i (1+ i)) "\\(?:.*/\\)?")
                               ".*"))
                            ((eq char ?*) "[^/]*")
                            ((eq char ??) "[^/]")
                            (t (regexp-quote (string char))))))
        (setq i (1+ i))))
    (concat "\\`" regexp "\\'")))

(defun sly-agent-q--rule-path (path)
  "PATH as the standing rules see it: its true name, or nil.
A relative PATH is taken from the same directory as the file tools take
it (the first allowed directory), once; symbolic links and \"..\" are
resolved (for a file that does not exist yet, those of its nearest
existing parent directory).  The true name is recorded, so that the
file tool, once approved, refuses to write when it has changed since."
  (when (and (stringp path) (not (string-empty-p (string-trim path))))
    (require 'sly-agent-q-files)
    (let* ((base (condition-case nil (sly-agent-q--path-base) (error default-directory)))
           (resolved (sly-agent-q--true-path path base)))
      (sly-agent-q--record-true-path (car resolved) (cdr resolved))
      (cdr resolved))))

(defun sly-agent-q--rule-glob (glob)
  "GLOB with the directories before its first wildcard made true names.
So that a rule on /tmp/x/** still matches when /tmp is a symbolic link:
the paths it is matched against are true names too."
  (if (not (or (string-prefix-p "/" glob) (string-prefix-p "~" glob)))
      glob
    (let* ((parts (split-string glob "/"))
           (fixed '()))
      (while (and (cdr parts) (not (string-match-p "[*?[]" (car parts))))
        (push (pop parts) fixed))
      (if (null fixed)
          glob
        (let ((directory (let ((file-name-handler-alist nil))
                           (file-name-as-directory
                            (file-truename (expand-file-name
                                            (concat (string-join (nreverse fixed) "/") "/")))))))
          (concat directory (string-join parts "/")))))))

(defun sly-agent-q--rule-decision (tool-name args)
  "The decision of the first rule matching a call of TOOL-NAME with ARGS, or nil.
The rules are `sly-agent-q-approval-rules'.  Globs are matched against
the true name of the call's path (see `sly-agent-q--rule-path'), which
is where the file tools write: neither a symbolic link nor \"..\" nor
a relative path gets a file past a rule meant for another."
  (let* ((path (and (hash-table-p args) (gethash "path" args)))
         (true (and sly-agent-q-approval-rules (sly-agent-q--rule-path path))))
    (cl-loop for (tool glob decision) in sly-agent-q-approval-rules
             when (and (or (equal tool "*") (equal tool tool-name))
                       (cond ((equal glob "*"))
                             ((eq glob 'outside-project)
                              (and true (not (sly-agent-q--inside-roots-p true))))
                             ((eq (car-safe glob) 'touches)
                              (sly-agent-q--touches-match-p (cadr glob) args))
                             ((stringp glob)
                              (and true
                                   (string-match-p (sly-agent-q--glob-regexp (sly-agent-q--rule-glob glob))
                                                   true)))))
             return decision)))

(defun sly-agent-q--touches-match-p (regexp args)
  "True when ARGS, an agent's code call, touches the world only as REGEXP permits.
ARGS's \"touches\" are what reading the code found (\"deletes a file
\(DELETE-FILE on \\\"x\\\")\", \"runs a program (EXT:RUN-PROGRAM …)\"); every
one of them must match REGEXP (case-insensitively)."
  (let ((touches (and (hash-table-p args) (gethash "touches" args))))
    (and (stringp regexp) (> (length touches) 0)
         (let ((case-fold-search t))
           (cl-every (lambda (finding) (and (stringp finding) (string-match-p regexp finding)))
                        touches)))))

(defun sly-agent-q--inside-project-p (path)
  "True when PATH lies in the allowed directories (the project).
PATH is resolved as the file tools resolve it (`sly-agent-q--rule-path')."
  (let ((true (sly-agent-q--rule-path path)))
    (and true (sly-agent-q--inside-roots-p true))))

(defun sly-agent-q--short (value width)
  "VALUE as text, strings cut to WIDTH characters with a note."
  (let ((text (if (stringp value) value (format "%S" value))))
    (if (> (length text) width)
        (format "%s… [%d more characters: v shows all]" (substring text 0 width) (- (length text) width))
      text)))

(defun sly-agent-q--arguments-text (args &optional width)
  "ARGS (a hash table) as `key: value' lines, values cut to WIDTH."
  (let ((lines '()))
    (when (hash-table-p args)
      (maphash (lambda (key value)
                 (push (format "  %s: %s" key (if width (sly-agent-q--short value width)
                                                (if (stringp value) value (format "%S" value))))
                       lines))
               args))
    (mapconcat #'identity (nreverse lines) "\n")))

(defun sly-agent-q--view-arguments (tool-name args)
  "Show the whole ARGS of TOOL-NAME in a help window."
  (with-help-window (get-buffer-create "*Agent-Q Arguments*")
    (princ (format "Dangerous tool %s wants to run with:\n\n%s\n"
                   tool-name (sly-agent-q--arguments-text args)))))

(defvar sly-agent-q-approval-edit-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'exit-recursive-edit)
    (define-key map (kbd "C-c C-k") #'abort-recursive-edit)
    map)
  "Keys of the buffer where the arguments of a tool call are edited.")

(define-derived-mode sly-agent-q-approval-edit-mode js-mode "Agent-Q Args"
  "Edit the arguments of a dangerous tool call as JSON.
\\<sly-agent-q-approval-edit-mode-map>\\[exit-recursive-edit] runs the tool with the edited arguments, \
\\[abort-recursive-edit] goes back to the question."
  (setq header-line-format
        (substitute-command-keys
         "Edit the arguments, then \\<sly-agent-q-approval-edit-mode-map>\\[exit-recursive-edit] to run with them, \\[abort-recursive-edit] to go back")))

(defun sly-agent-q--parse-arguments (text)
  "TEXT parsed as a JSON object (a hash table).
A string saying what is wrong when it is not one."
  (condition-case err
      (let ((value (json-parse-string text :object-type 'hash-table :null-object nil :false-object :false)))
        (if (hash-table-p value) value "the arguments must be a JSON object {…}"))
    (error (format "not valid JSON: %s" (error-message-string err)))))

(defun sly-agent-q--edit-arguments (tool-name args)
  "Let the person edit ARGS of TOOL-NAME as JSON.
The new arguments (a hash table), or nil when they gave up."
  (let ((buffer (get-buffer-create "*Agent-Q Edit Arguments*"))
        (text (condition-case nil
                  (with-temp-buffer
                    (insert (sly-agent-q--module-json-text args))
                    (json-pretty-print-buffer)
                    (buffer-string))
                (error "{}")))
        (problem nil)
        (result nil))
    (unwind-protect
        (save-window-excursion
          (pop-to-buffer buffer)
          (erase-buffer)
          (insert text)
          (sly-agent-q-approval-edit-mode)
          (goto-char (point-min))
          (while (not result)
            (when problem
              (message "sly-agent-q: %s: fix it and press C-c C-c, or C-c C-k to go back" problem))
            (if (condition-case nil (progn (recursive-edit) t) (quit nil))
                (let ((parsed (sly-agent-q--parse-arguments (buffer-string))))
                  (if (hash-table-p parsed)
                      (setq result parsed)
                    (setq problem (format "%s: %s" tool-name parsed))))
              (setq result 'gave-up))))
      (kill-buffer buffer))
    (and (hash-table-p result) result)))

(defun sly-agent-q--approval-prompt (tool-name args)
  "The question about TOOL-NAME with ARGS, saying which door the call came through."
  (format "%sRun dangerous tool %s with\n%s\n?"
          (if sly-agent-q-call-origin (format "[%s] " sly-agent-q-call-origin) "")
          tool-name
          (sly-agent-q--arguments-text args sly-agent-q-approval-argument-width)))

(defun sly-agent-q--ask (tool-name args)
  "Ask in the minibuffer whether TOOL-NAME may run with ARGS; the decision."
  (let ((choices `((?y "yes" "run the tool")
                   (?n "no" "do not run it")
                   (?r "reply" "do not run it, and tell the model why")
                   (?e "edit" "edit the arguments, then run it")
                   ,@(unless (member tool-name sly-agent-q-approval-no-session-tools)
                       '((?! "always" "run it, and this tool, without asking for the rest of the conversation")))
                   (?v "view" "show the whole arguments")))
        (decision nil))
    (while (not decision)
      (let ((key (car (read-multiple-choice (sly-agent-q--approval-prompt tool-name args) choices))))
        (setq decision
              (pcase key
                (?y :approved)
                (?n :denied)
                (?r (let ((reason (string-trim (read-string "Why not (sent to the model)? "))))
                      (if (string-empty-p reason) :denied (list :denied reason))))
                (?e (let ((edited (sly-agent-q--edit-arguments tool-name args)))
                      (and edited (list :modified edited))))
                (?! (push tool-name sly-agent-q--session-approved-tools)
                    :approved)
                (?v (sly-agent-q--view-arguments tool-name args) nil)))))
    decision))

(defun sly-agent-q-approve (tool-name args)
  "Decide whether the dangerous tool TOOL-NAME may run with ARGS (a hash table).
The default `sly-agent-q-approval-function'.  In order: the standing
rules of `sly-agent-q-approval-rules', a running auto-approval
\(`sly-agent-q-auto-approve'), the tools approved for the rest of the
conversation, else a question in the minibuffer (see the file's
commentary).  \\[keyboard-quit] denies.  In batch Emacs, with nobody to ask, the answer
is no.  Returns `:approved', `:denied', (:denied REASON) or
\(:modified NEW-ARGS)."
  (let ((rule (sly-agent-q--rule-decision tool-name args)))
    (cond ((eq rule 'allow) :approved)
          ((eq rule 'deny) :denied)
          ((sly-agent-q--auto-approving-p) :approved)
          ((member tool-name sly-agent-q--session-approved-tools) :approved)
          (noninteractive :denied)
          (t
           ;; A question waits for the person: the mode line says so.
           (setq sly-agent-q-approval-pending (cons tool-name (float-time)))
           (force-mode-line-update t)
           (unwind-protect
               (condition-case nil
                   (cond ((equal tool-name "propose_file_edit")
                          ;; The per-hunk review (sly-agent-q-review.el) in place of the question.
                          (require 'sly-agent-q-review)
                          (sly-agent-q-review-edit-proposal args))
                         ((member tool-name '("edit_form" "insert_form"))
                          ;; The same review, with the compiler's notes on the new form.
                          (require 'sly-agent-q-form-edit)
                          (sly-agent-q-form-edit-review tool-name args))
                         (t (sly-agent-q--ask tool-name args)))
                 (quit :denied))
             (setq sly-agent-q-approval-pending nil)
             (force-mode-line-update t))))))

(provide 'sly-agent-q-approval)

;;; sly-agent-q-approval.el ends here
