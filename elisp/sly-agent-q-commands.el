;;; sly-agent-q-commands.el --- Interactive commands -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; M-x sly-agent-q-evaluate and friends, and the runtime's description.

;;; Code:

(require 'cl-lib)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-async)

(declare-function sly-agent-q--module-restart-worker "sly-agent-q-module" ())
(require 'sly-agent-q-tools)
(require 'sly-agent-q-log)

(defvar sly-agent-q-evaluate-history nil
  "Minibuffer history of `sly-agent-q-evaluate'.")

(defun sly-agent-q--evaluate (code &optional package)
  "Evaluate CODE, in PACKAGE if non-nil, with the evaluate_lisp tool.
Return its result plist.  The call is the person's (`sly-agent-q--as-user')."
  (sly-agent-q--as-user
    (car (sly-agent-q-execute-tool-calls (list (sly-agent-q--evaluate-call code package))))))

(defun sly-agent-q--evaluate-call (code package)
  "The evaluate_lisp call of CODE, in PACKAGE if non-nil."
  (list :id "interactive" :name "evaluate_lisp"
        :arguments (if package (list :code code :package package) (list :code code))))

(defun sly-agent-q--buffer-package (&optional position)
  "The package of a Common Lisp buffer at POSITION (point if nil), or nil.
As in SLY, it is the one the last `in-package' form before POSITION, at
the start of a line, names.  Only in buffers in `lisp-mode'."
  (when (derived-mode-p 'lisp-mode)
    (save-excursion
      (save-match-data
        (goto-char (or position (point)))
        (let ((case-fold-search t))
          (when (re-search-backward
                 (concat "^[ \t]*(\\(?:cl:\\|common-lisp:\\)?in-package\\_>[ \t\n]*'?"
                         "\\(?:\"\\([^\"]*\\)\"\\|#?:?|?\\([^ \t\n()|]+\\)\\)")
                 nil t)
            (or (match-string-no-properties 1) (match-string-no-properties 2))))))))

(defun sly-agent-q--complete-forms-p (text)
  "Non-nil if TEXT is only whole Lisp forms (no open list or string).
What is not whole is not sent to Lisp, as SLY does."
  (with-temp-buffer
    (set-syntax-table lisp-mode-syntax-table)
    (insert text)
    (goto-char (point-min))
    (condition-case nil
        (progn (while (progn (forward-comment (buffer-size)) (not (eobp)))
                 (forward-sexp))
               t)
      (scan-error nil))))

(defvar sly-agent-q-evaluation-functions nil
  "Abnormal hook run when an evaluation a command started ends.
Each function gets the CODE, the RESULT plist and a SOURCE text (the
buffer the code came from, or \"minibuffer\").  The REPL, once opened,
writes them there: one history of what was evaluated.")

(defvar sly-agent-q--result-ticket 0
  "The number of the last evaluation a command started.
See `sly-agent-q--show-result'.")

(defvar sly-agent-q--shown-ticket 0
  "The number of the evaluation whose result is shown now.")

(defun sly-agent-q--take-ticket ()
  "Number a command's evaluation, in the order they are started."
  (cl-incf sly-agent-q--result-ticket))

(defun sly-agent-q--show-result (result)
  "Show RESULT of an evaluation in the echo area or a buffer."
  (let ((text (or (plist-get result :content) (plist-get result :error) "")))
    (if (and (not (string-search "\n" text)) (< (length text) (frame-width)))
        (message "%s" text)
      (with-current-buffer (get-buffer-create "*sly-agent-q result*")
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert text)
          (goto-char (point-min))
          (special-mode))
        (display-buffer (current-buffer))))
    text))

(defun sly-agent-q--show-evaluation (result ticket code source)
  "Show RESULT of the evaluation of CODE, from SOURCE, numbered TICKET.
CODE and RESULT go to `sly-agent-q-evaluation-functions' (the REPL).
RESULT is shown (`sly-agent-q--show-result') unless the result of an
evaluation started later already is: TICKET, from
`sly-agent-q--take-ticket' when the evaluation started, is older than
the one shown (this one waited behind a slower one and ended after it)."
  (run-hook-with-args 'sly-agent-q-evaluation-functions code result source)
  (if (< ticket sly-agent-q--shown-ticket)
      (or (plist-get result :content) (plist-get result :error) "")
    (setq sly-agent-q--shown-ticket ticket)
    (sly-agent-q--show-result result)))

(defun sly-agent-q--evaluate-showing (code package source)
  "Evaluate CODE in PACKAGE, waiting, and show the result as SOURCE's.
\\[keyboard-quit] interrupts it; the REPL then gets a line saying so."
  (let ((ticket (sly-agent-q--take-ticket)))
    (condition-case nil
        (sly-agent-q--show-evaluation (sly-agent-q--evaluate code package) ticket code source)
      (quit
       (run-hook-with-args 'sly-agent-q-evaluation-functions code
                           (list :success nil :content "; Interrupted (C-g): the session is still alive.")
                           source)
       (signal 'quit nil)))))

(defvar sly-agent-q--last-async-job nil
  "The job of the last background evaluation started by a command.")

;;;###autoload
(defun sly-agent-q-evaluate (code &optional package async)
  "Evaluate the Common Lisp CODE in the embedded ECL and show the result.
CODE may hold several forms; they are read and evaluated one after the
other.  PACKAGE is where CODE is read and evaluated: interactively, in a
`lisp-mode' buffer, the one its last `in-package' form before point
names, as in SLY; nil means the session's package, which `in-package' in
CODE changes.  A one-line result is shown in the echo area, a longer one
in the buffer *sly-agent-q result*.  \\[keyboard-quit] interrupts the
evaluation.

With a prefix argument (ASYNC non-nil), Emacs is not blocked: the
result is shown when the evaluation is done, and
\\[sly-agent-q-cancel-last] interrupts it.  Returns the job id then."
  (interactive
   (let* ((package (sly-agent-q--buffer-package))
          (code (read-string (format "Evaluate Lisp (ECL)%s%s: " (if package (format " in %s" package) "")
                                     (if current-prefix-arg ", in the background" ""))
                             nil 'sly-agent-q-evaluate-history)))
     ;; Typed, a form cut short is a slip: say so rather than send it.
     (unless (sly-agent-q--complete-forms-p code)
       (user-error "The form is not complete (unbalanced parentheses or string): nothing was sent"))
     (list code package current-prefix-arg)))
  (if (not async)
      (sly-agent-q--evaluate-showing code package "the minibuffer")
    (setq sly-agent-q--last-async-job
          (let ((ticket (sly-agent-q--take-ticket)))
            (sly-agent-q--as-user
              (sly-agent-q-execute-tool-calls-async
               (list (sly-agent-q--evaluate-call code package))
               (lambda (results) (sly-agent-q--show-evaluation (car results) ticket code "the minibuffer"))))))
    (message "sly-agent-q: evaluating in the background (M-x sly-agent-q-cancel-last to stop)")
    sly-agent-q--last-async-job))

(defun sly-agent-q-cancel-last ()
  "Interrupt the last background evaluation started with \\[universal-argument] \\[sly-agent-q-evaluate]."
  (interactive)
  (if (and sly-agent-q--last-async-job (sly-agent-q-cancel sly-agent-q--last-async-job))
      (message "sly-agent-q: background evaluation cancelled")
    (message "sly-agent-q: no background evaluation is running")))

;;;###autoload
(defun sly-agent-q-evaluate-region (start end)
  "Evaluate the Common Lisp forms between START and END in ECL.
They are read and evaluated in the buffer's package at START, as
`sly-agent-q-evaluate' says."
  (interactive "r")
  (sly-agent-q--evaluate-showing (buffer-substring-no-properties start end)
                                 (sly-agent-q--buffer-package start)
                                 (buffer-name)))

(defun sly-agent-q--defun-bounds ()
  "The start and end of the top-level form around point, as (START . END)."
  (save-excursion
    (end-of-defun)
    (let ((end (point)))
      (beginning-of-defun)
      (cons (point) end))))

(defun sly-agent-q-evaluate-defun ()
  "Evaluate the top-level Common Lisp form around point in ECL.
It is read and evaluated in the buffer's package, as
`sly-agent-q-evaluate' says."
  (interactive)
  (let ((bounds (sly-agent-q--defun-bounds)))
    (sly-agent-q-evaluate-region (car bounds) (cdr bounds))))

;;;###autoload
(defun sly-agent-q-restart-worker ()
  "Give the Lisp session a fresh worker thread, keeping every definition.
For an evaluation that cannot be stopped: its thread is abandoned and
runs on at the lowest priority.  Evaluations that ignore \\[keyboard-quit] and their
time limit are replaced this way by themselves, after a grace of 3 s."
  (interactive)
  (sly-agent-q--module-restart-worker)
  (when (called-interactively-p 'interactive)
    (message "sly-agent-q: the Lisp session continues on a fresh worker thread")))

;;;###autoload
(defun sly-agent-q-describe-runtime ()
  "Show the state of the embedded Lisp, the registered tools and their counters."
  (interactive)
  (with-help-window "*sly-agent-q runtime*"
    (let ((status (sly-agent-q-runtime-status)))
      (princ (format "Lisp runtime: %s (booted in %.1f ms), %d evaluations\n"
                     (cond ((plist-get status :alive) "running")
                           ((plist-get status :booted) "stopped")
                           (t "not booted yet (boots on first use)"))
                     (plist-get status :boot-ms) (plist-get status :jobs)))
      (princ (format "Heap limit: %s bytes\n" (plist-get status :heap-limit)))
      (princ (format "Worker threads replaced: %d (%d abandoned ones still running)\n"
                     (or (plist-get status :replaced-workers) 0)
                     (or (plist-get status :abandoned-threads) 0)))
      (let ((held (or (plist-get status :held-errors) 0)))
        (when (> held 0)
          (princ (format "Errors held for an agent (evaluate_lisp's debug): %d (M-x sly-agent-q-debugger-show-held)\n"
                         held))))
      (sly-agent-q-log-runtime-notes)
      (princ (format "Native tiering: %s; definitions waiting %d, compiled %d, left as bytecodes %d\n"
                     (cond ((not (plist-get status :native-tiering)) "off")
                           ((not (executable-find "gcc")) "off (no gcc on PATH)")
                           (t "on"))
                     (or (plist-get status :tiering-waiting) 0)
                     (or (plist-get status :tiering-native) 0)
                     (or (plist-get status :tiering-bytecodes) 0)))
      (princ (format "  batches compiled in a child process %d, in the session %d\n"
                     (or (plist-get status :tiering-in-child) 0)
                     (or (plist-get status :tiering-in-session) 0)))
      (let ((cache (sly-agent-q--fasl-cache-directory)))
        (princ (format "Fasl cache: %s, %s\n\nTools:\n" cache
                       (if (file-directory-p cache)
                           (file-size-human-readable (sly-agent-q--directory-size cache))
                           "empty"))))
      (let ((stats (sly-agent-q-tool-stats)))
        (dolist (name (sly-agent-q-list-tools))
          (let ((row (cdr (assoc name stats))))
            (princ (format "  %-24s %s\n" name
                           (if row
                               (format "%d calls, %d failed, %.2f ms total%s"
                                       (plist-get row :calls) (plist-get row :failures)
                                       (plist-get row :total-ms)
                                       (if (plist-get row :not-found)
                                           (format " (%d look-ups of eldoc, completion or M-. found no such name)"
                                                   (plist-get row :not-found))
                                         ""))
                             "not called yet")))))))))

(defun sly-agent-q--fasl-cache-directory ()
  "Return the directory of load_system's compiled files.
That is $XDG_CACHE_HOME/sly-agent-q/fasl/."
  (let ((xdg (getenv "XDG_CACHE_HOME")))
    (expand-file-name "sly-agent-q/fasl/"
                      (if (and xdg (file-name-absolute-p xdg)) xdg "~/.cache"))))

(defun sly-agent-q--directory-size (directory)
  "Bytes of the files under DIRECTORY."
  (let ((total 0))
    (dolist (file (directory-files-recursively directory "" nil) total)
      (setq total (+ total (or (file-attribute-size (file-attributes file)) 0))))))

;;;###autoload
(defun sly-agent-q-clear-fasl-cache ()
  "Delete the compiled files load_system kept between sessions.
The next load_system of each system compiles it again.  Systems already
loaded in the session stay loaded."
  (interactive)
  (let ((cache (sly-agent-q--fasl-cache-directory)))
    (if (not (file-directory-p cache))
        (message "sly-agent-q: the fasl cache is empty")
      (let ((size (sly-agent-q--directory-size cache)))
        (delete-directory cache t)
        (message "sly-agent-q: deleted the fasl cache (%s)" (file-size-human-readable size))))))

(provide 'sly-agent-q-commands)

;;; sly-agent-q-commands.el ends here
