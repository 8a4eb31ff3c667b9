;;; sly-agent-q-log.el --- The audit log of tool calls -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; While `sly-agent-q-mode' is on, every cautious and dangerous tool call
;; (and so every approval decision) is written to the buffer
;; *Agent-Q Log*: time, the door it came through (`user', `chat', `MCP',
;; `Lisp', `Elisp' for a call nobody marked: `sly-agent-q-call-origin'),
;; tool, decision, duration, outcome
;; and short arguments; optionally also to a file.  Safe calls are not
;; logged, nor the calls the front end makes for itself (eldoc,
;; completion, M-., the REPL's prompt and inspector: `sly-agent-q-ui-origin').
;; The Lisp runtime's own notes go there too, such as a definition the
;; background native compiler could not compile (it stays bytecodes).

;;; Code:

(require 'subr-x)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-async)

(defcustom sly-agent-q-log-file nil
  "File the audit log is also appended to, or nil for the buffer only.
The log holds tool names, arguments cut short and outcomes; never the
API keys of providers."
  :type '(choice (const :tag "Buffer only" nil) file)
  :group 'sly-agent-q)

(defcustom sly-agent-q-log-max-lines 5000
  "Lines the *Agent-Q Log* buffer keeps; older ones are dropped."
  :type 'integer
  :group 'sly-agent-q)

(defconst sly-agent-q--log-buffer-name "*Agent-Q Log*")

(defun sly-agent-q--log-arguments (args)
  "ARGS (a hash table) as one short line."
  (let ((parts '()))
    (when (hash-table-p args)
      (maphash (lambda (key value)
                 (let ((text (replace-regexp-in-string
                              "[\n\t ]+" " " (if (stringp value) value (format "%S" value)))))
                   (push (format "%s=%s" key (truncate-string-to-width text 60 nil nil "…")) parts)))
               args))
    (string-join (nreverse parts) " ")))

(defun sly-agent-q--log-origin ()
  "The door of the running call as the log writes it.
\"Elisp\" for nil: a call Elisp made that nobody marked (the person's
commands mark theirs \"user\"), which is an agent's."
  (replace-regexp-in-string "[\n\t ]+" " " (or sly-agent-q-call-origin "Elisp")))

(defun sly-agent-q--log-line (tool-name args result)
  "The log line of a finished call of TOOL-NAME with ARGS and its RESULT plist.
The call's door is `sly-agent-q-call-origin', bound where it runs."
  (let* ((metadata (plist-get result :metadata))
         (level (plist-get metadata :safety_level))
         (decision (cond ((not (equal level "dangerous")) "-")
                         ((plist-get metadata :approved) "approved")
                         (t "denied"))))
    (format "%s %-6s %-18s %-9s %-8s %7.1fms %s  %s%s"
            (format-time-string "%F %T")
            (sly-agent-q--log-origin)
            tool-name level decision
            (or (plist-get metadata :execution_time_ms) 0)
            (if (plist-get result :success) "ok    " "FAILED")
            (sly-agent-q--log-arguments args)
            (if (plist-get result :success) ""
              (format "  → %s" (truncate-string-to-width
                                (replace-regexp-in-string "\n" " " (or (plist-get result :error) ""))
                                120 nil nil "…"))))))

(defun sly-agent-q-log-call (phase tool-name args result)
  "Log a finished cautious or dangerous call, with the door it came through.
A function of `sly-agent-q-tool-execution-functions': PHASE, TOOL-NAME,
ARGS and RESULT are as that hook gives them.  The calls the front end
makes for itself (`sly-agent-q-ui-origin') are not logged."
  (when (and (memq phase '(:after :error)) result
             (not (equal sly-agent-q-call-origin sly-agent-q-ui-origin))
             (member (plist-get (plist-get result :metadata) :safety_level) '("cautious" "dangerous")))
    (sly-agent-q--log-insert (sly-agent-q--log-line tool-name args result))))

(defun sly-agent-q--log-insert (line)
  "Append LINE to the log buffer, and to `sly-agent-q-log-file' if set."
  (with-current-buffer (get-buffer-create sly-agent-q--log-buffer-name)
    (unless (derived-mode-p 'special-mode) (special-mode))
    (let ((inhibit-read-only t))
      (save-excursion
        (goto-char (point-max))
        (insert line "\n")
        (when (> (count-lines (point-min) (point-max)) sly-agent-q-log-max-lines)
          (goto-char (point-min))
          (forward-line (- (count-lines (point-min) (point-max)) sly-agent-q-log-max-lines))
          (delete-region (point-min) (point))))))
  (when sly-agent-q-log-file
    (condition-case err
        (write-region (concat line "\n") nil sly-agent-q-log-file t 'silent)
      (error (message "sly-agent-q: cannot write the log file: %s" (error-message-string err))))))

(declare-function sly-agent-q--module-take-notes "sly-agent-q-module" ())

(defun sly-agent-q-log-runtime-notes ()
  "Move the Lisp runtime's notes into the log; return how many there were.
The runtime leaves them for Emacs as they happen (a definition the
background native compiler failed on, say); a timer collects them every
few seconds while Lisp works (`sly-agent-q--watch-notes'), and
`sly-agent-q-describe-runtime' does too."
  (let ((notes (and (featurep 'sly-agent-q-module) (sly-agent-q--module-take-notes))))
    (dolist (note notes)
      (sly-agent-q--log-insert (format "%s %-18s %s" (format-time-string "%F %T") "runtime" note)))
    (length notes)))

(declare-function sly-agent-q--module-status "sly-agent-q-module" ())

(defvar sly-agent-q--notes-timer nil
  "The timer that runs `sly-agent-q--collect-notes' while Lisp works, or nil.")

(defvar sly-agent-q--notes-idle-ticks 0
  "How many of the timer's last collections in a row found Lisp idle.")

(defvar sly-agent-q--notes-jobs-seen nil
  "The runtime's count of jobs at the timer's last collection.")

;; The timer is not running: the next call into Lisp starts it.
(setq sly-agent-q--lisp-watched nil)

(defun sly-agent-q--watch-notes ()
  "Collect the runtime's notes every 3 seconds until Lisp is idle.
Called at a call into Lisp while the timer is not running
\(`sly-agent-q--lisp-used', `sly-agent-q--lisp-watched'): a definition
it makes may be compiled in the background, which notes a failure."
  (setq sly-agent-q--notes-idle-ticks 0
        sly-agent-q--lisp-watched t)
  (unless sly-agent-q--notes-timer
    (setq sly-agent-q--notes-timer (run-with-timer 3 3 #'sly-agent-q--collect-notes))))

(defun sly-agent-q--collect-notes ()
  "Move the runtime's notes into the log; stop the timer once Lisp is idle.
Idle: no notes, no job run since the last collection, no asynchronous
job and nothing waiting for the background compiler, at two collections
in a row."
  (let* ((status (sly-agent-q--module-status))
         (jobs (plist-get status :jobs)))
    (if (or (> (sly-agent-q-log-runtime-notes) 0)
            (not (eql jobs sly-agent-q--notes-jobs-seen))
            (sly-agent-q--lisp-busy-p)
            (> (or (plist-get status :tiering-waiting) 0) 0))
        (setq sly-agent-q--notes-idle-ticks 0)
      (setq sly-agent-q--notes-idle-ticks (1+ sly-agent-q--notes-idle-ticks))
      (when (>= sly-agent-q--notes-idle-ticks 2)
        (when (timerp sly-agent-q--notes-timer)
          (cancel-timer sly-agent-q--notes-timer))
        (setq sly-agent-q--notes-timer nil
              sly-agent-q--lisp-watched nil)))
    (setq sly-agent-q--notes-jobs-seen jobs)))

;;;###autoload
(defun sly-agent-q-show-log ()
  "Show the audit log: the cautious and dangerous tools used."
  (interactive)
  (let ((buffer (get-buffer-create sly-agent-q--log-buffer-name)))
    (with-current-buffer buffer
      (unless (derived-mode-p 'special-mode) (special-mode)))
    (pop-to-buffer buffer)
    (goto-char (point-max))))

(provide 'sly-agent-q-log)

;;; sly-agent-q-log.el ends here
