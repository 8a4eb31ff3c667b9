;;; sly-agent-q-debugger.el --- The REPL's debugger: restarts, as SLY's sldb -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; When an evaluation typed in the REPL signals an error nothing handles,
;; the Lisp job stays where the error was signalled and Lisp asks Emacs
;; (`agent-q:eval-in-emacs') to show `*sly-agent-q debugger*': the
;; condition, its restarts and the backtrace.  Emacs answers "later": the
;; filter that showed the buffer returns at once, so Emacs is not blocked,
;; and the person's choice goes back with `sly-agent-q--module-answer-later'.
;; A digit (or RET on a restart) invokes a restart, `q' aborts to the
;; REPL's prompt; USE-VALUE and STORE-VALUE ask for a form in the
;; minibuffer, which Lisp evaluates and hands to the restart.  The job's
;; time limit is paused meanwhile.  A model's evaluate_lisp never gets
;; here: only the REPL submits its evaluations with the debugger on.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-async)
(require 'sly-agent-q-inspector)

(declare-function sly-agent-q--module-answer-later "sly-agent-q-module" (key ok text))
(declare-function sly-agent-q--module-later-pending-p "sly-agent-q-module" (key))

(defgroup sly-agent-q-debugger nil
  "The REPL's debugger of sly-agent-q."
  :group 'sly-agent-q
  :prefix "sly-agent-q-debugger-")

(defcustom sly-agent-q-debugger-buffer-name "*sly-agent-q debugger*"
  "The name of the debugger's buffer."
  :type 'string
  :group 'sly-agent-q-debugger)

(defface sly-agent-q-debugger-condition-face
  '((t :inherit error))
  "Face of the condition's text in the debugger."
  :group 'sly-agent-q-debugger)

(defface sly-agent-q-debugger-restart-face
  '((t :inherit font-lock-function-name-face))
  "Face of a restart's name in the debugger."
  :group 'sly-agent-q-debugger)

(defvar sly-agent-q-debugger--next-key 0
  "The last key given to a question of the debugger.")

(defvar-local sly-agent-q-debugger--key nil
  "The key Lisp's waiting question has, or nil once answered.")

(defvar-local sly-agent-q-debugger--restarts nil
  "The restarts shown: a list of (LINE . WANTS-VALUE).")

(defvar-local sly-agent-q-debugger--condition nil
  "The condition shown, as (TYPE . MESSAGE).")

(defvar-local sly-agent-q-debugger--unwound nil
  "Non-nil when the evaluation shown was already unwound (an interrupt).
Nothing waits for an answer: a restart only closes the debugger.")

(defvar-local sly-agent-q-debugger--held nil
  "The condition id of the held error shown (evaluate_lisp's debug), or nil.
The choices made here go to it through the held-error tools, as the
person's calls, instead of to a REPL evaluation waiting in Emacs.")

(defvar-local sly-agent-q-debugger--inspect-then nil
  "A function waiting for the inspector page the REPL's evaluation sends next.
Set when the inspector drills into a part while the evaluation waits in
the debugger (it holds the worker, so the inspector asks through it).")

(defvar-local sly-agent-q-debugger--return-window nil
  "The window that was selected when the debugger appeared (the REPL's).")

(defvar sly-agent-q-debugger--watch-timer nil
  "The timer that closes the debugger once nothing waits for it.")

(defun sly-agent-q-debugger--watch ()
  "Close the debugger when its evaluation stopped waiting (interrupted).
\\<sly-agent-q-repl-mode-map>\\[sly-agent-q-repl-interrupt] in the REPL, or `sly-agent-q-cancel', ends the wait from outside."
  (let ((buffer (get-buffer sly-agent-q-debugger-buffer-name)))
    (if (not (and buffer (buffer-local-value 'sly-agent-q-debugger--key buffer)))
        (sly-agent-q-debugger--stop-watching)
      (unless (sly-agent-q--module-later-pending-p (buffer-local-value 'sly-agent-q-debugger--key buffer))
        (sly-agent-q-debugger--stop-watching)
        (with-current-buffer buffer
          (setq sly-agent-q-debugger--key nil)
          (let ((window sly-agent-q-debugger--return-window))
            (when (get-buffer-window buffer)
              (quit-window t (get-buffer-window buffer)))
            (when (buffer-live-p buffer) (kill-buffer buffer))
            (when (window-live-p window) (select-window window))))
        (message "The evaluation in the debugger was interrupted")))))

(defun sly-agent-q-debugger--stop-watching ()
  "Stop `sly-agent-q-debugger--watch'."
  (when (timerp sly-agent-q-debugger--watch-timer)
    (cancel-timer sly-agent-q-debugger--watch-timer))
  (setq sly-agent-q-debugger--watch-timer nil))

(defun sly-agent-q-debugger--abort-index ()
  "The index of the REPL's own ABORT restart (the last ABORT), or nil."
  (cl-loop for (line . _) in sly-agent-q-debugger--restarts
           for index from 0
           when (string-prefix-p "[ABORT]" line) maximize index))

(defun sly-agent-q-debugger--buffer ()
  "Return the debugger's buffer, in `sly-agent-q-debugger-mode'.
Made now, it remembers the selected window to go back to."
  (let ((buffer (get-buffer-create sly-agent-q-debugger-buffer-name))
        (window (selected-window)))
    (with-current-buffer buffer
      (unless (derived-mode-p 'sly-agent-q-debugger-mode)
        (sly-agent-q-debugger-mode)
        (setq sly-agent-q-debugger--return-window window)))
    buffer))

(defun sly-agent-q--debugger-enter (type message restarts wants-value frames note
                                          &optional page)
  "Show the condition TYPE with MESSAGE, its RESTARTS and the backtrace FRAMES.
Called by Lisp (debugger.lisp) through `agent-q:eval-in-emacs'.  RESTARTS
are lines \"[NAME] report\", WANTS-VALUE says for each whether it takes
a value.  FRAMES are lines \"N: (NAME)\" or lists (LINE LOCALS SOURCE),
see `sly-agent-q-debugger--insert-frame'.  NOTE, when non-nil, says why
the last choice failed, or the value of an evaluation in a frame.  PAGE,
when non-nil, is an inspector page the person asked for (with
`sly-agent-q-debugger-inspect', or a part the inspector drills into): it
is shown in the inspector, the debugger as it was.  Returns
\(:agent-q-answer-later . KEY): the person's choice is sent later."
  (let ((key (cl-incf sly-agent-q-debugger--next-key))
        (buffer (sly-agent-q-debugger--buffer))
        (then nil))
    (with-current-buffer buffer
      (setq sly-agent-q-debugger--key key
            then (or sly-agent-q-debugger--inspect-then #'sly-agent-q-inspector-show-page)
            sly-agent-q-debugger--inspect-then nil)
      (unless page
        (sly-agent-q-debugger--render type message restarts wants-value frames note)))
    (if page
        ;; Whatever becomes of the inspector, the evaluation keeps waiting.
        (condition-case err
            (funcall then page)
          (error (message "The inspector could not show the object: %s" (error-message-string err))))
      (pop-to-buffer buffer))
    (unless (timerp sly-agent-q-debugger--watch-timer)
      (setq sly-agent-q-debugger--watch-timer (run-with-timer 0.5 0.5 #'sly-agent-q-debugger--watch)))
    (cons :agent-q-answer-later key)))

(defun sly-agent-q-debugger--render (type message restarts wants-value frames note)
  "Fill the current debugger buffer with an error, its restarts and frames.
TYPE, MESSAGE, RESTARTS, WANTS-VALUE, FRAMES and NOTE as for
`sly-agent-q--debugger-enter'."
  (let ((frame (and note (get-text-property (or (sly-agent-q-debugger--frame-start) (point))
                                            'sly-agent-q-frame))))
    (setq sly-agent-q-debugger--restarts (cl-mapcar #'cons restarts wants-value)
          sly-agent-q-debugger--condition (cons type message))
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert (propertize (format "%s: %s" type message) 'face 'sly-agent-q-debugger-condition-face)
              "\n")
      (when sly-agent-q-debugger--held
        (insert (propertize (format "Held for the agent as condition %d: what you choose here is what its next call sees.\n"
                                    sly-agent-q-debugger--held)
                            'face 'shadow)))
      (when note
        (insert "\n" (propertize note 'face 'warning) "\n"))
      (insert "\nRestarts (a digit or RET chooses, q aborts):\n")
      (cl-loop for line in restarts
               for index from 0
               do (insert (format "%2d: " index))
               (insert-text-button line 'action #'sly-agent-q-debugger--button-action
                                   'face 'sly-agent-q-debugger-restart-face
                                   'sly-agent-q-restart index
                                   'help-echo "Invoke this restart")
               (insert "\n"))
      (insert "\nBacktrace:\n")
      (cl-loop for frame in frames
               for index from 0
               do (sly-agent-q-debugger--insert-frame frame index)))
    ;; Point on the first restart, or, after e, on the frame it was on.
    (goto-char (point-min))
    (let ((at (and frame (text-property-any (point-min) (point-max) 'sly-agent-q-frame frame))))
      (if at
          (progn (goto-char at) (back-to-indentation))
        (re-search-forward "^ 0: " nil t)))))

(defun sly-agent-q-debugger--insert-frame (frame index)
  "Insert FRAME, number INDEX: a line \"N: (NAME)\", or (LINE LOCALS SOURCE)
with LOCALS, lines shown by \\[sly-agent-q-debugger-toggle-locals], and
SOURCE, (FILE LINE) or nil."
  (let ((start (point)))
    (insert "  " (if (consp frame) (car frame) frame) "\n")
    (when (consp frame)
      (add-text-properties start (1- (point))
                           (list 'sly-agent-q-frame index
                                 'sly-agent-q-frame-locals (nth 1 frame)
                                 'sly-agent-q-frame-source (nth 2 frame))))))

(defun sly-agent-q-debugger--frame-start ()
  "Return the start of the frame line at point, or nil.
When point is on a frame's locals, the start of that frame's line."
  (save-excursion
    (beginning-of-line)
    (while (and (get-text-property (point) 'sly-agent-q-frame-locals-shown) (not (bobp)))
      (forward-line -1))
    (and (get-text-property (point) 'sly-agent-q-frame) (point))))

(defun sly-agent-q-debugger-next-frame (&optional count)
  "Move to the next frame of the backtrace (COUNT frames, back if negative)."
  (interactive "p")
  (let ((step (if (< (or count 1) 0) -1 1)))
    (dotimes (_ (abs (or count 1)))
      (let ((at (save-excursion
                  (beginning-of-line)
                  (forward-line step)
                  (while (and (not (get-text-property (point) 'sly-agent-q-frame))
                              (zerop (forward-line step)) (not (eobp))))
                  (and (get-text-property (point) 'sly-agent-q-frame) (point)))))
        (if at (goto-char at) (user-error "No %s frame" (if (> step 0) "next" "previous")))))
    (back-to-indentation)))

(defun sly-agent-q-debugger-previous-frame (&optional count)
  "Move to the previous frame of the backtrace (COUNT frames)."
  (interactive "p")
  (sly-agent-q-debugger-next-frame (- (or count 1))))

(defun sly-agent-q-debugger--frame-here ()
  "The start of the frame at point; an error when point is on none."
  (or (sly-agent-q-debugger--frame-start)
      (user-error "Not on a frame of the backtrace (n and p move to one)")))

(defun sly-agent-q-debugger-toggle-locals ()
  "Show or hide the local variables of the frame at point, as SLY's t.
ECL keeps them in the frames of bytecodes functions (what the REPL and
evaluate_lisp define until the native compiler replaces them)."
  (interactive)
  (let ((start (sly-agent-q-debugger--frame-here))
        (inhibit-read-only t))
    (save-excursion
      (goto-char start)
      (forward-line 1)
      (if (get-text-property (point) 'sly-agent-q-frame-locals-shown)
          (let ((from (point)))
            (while (and (get-text-property (point) 'sly-agent-q-frame-locals-shown) (not (eobp)))
              (forward-line 1))
            (delete-region from (point)))
        (let ((from (point)))
          (dolist (line (or (get-text-property start 'sly-agent-q-frame-locals)
                            '("(nothing known of this frame)")))
            (insert "      " line "\n"))
          (add-text-properties from (point) '(sly-agent-q-frame-locals-shown t face shadow)))))))

(defun sly-agent-q-debugger-show-source ()
  "Show the source of the frame at point's function, as SLY's v."
  (interactive)
  (let ((source (get-text-property (sly-agent-q-debugger--frame-here) 'sly-agent-q-frame-source)))
    (unless source
      (user-error "No source known for this frame (defined in the REPL or an evaluation, not from a file)"))
    ;; In another window, never the debugger's own: the default display
    ;; action would reuse the window that last showed the file, which is
    ;; where the debugger popped up in a two-window frame.
    (let ((window (display-buffer (find-file-noselect (car source)) '(nil (inhibit-same-window . t)))))
      (unless window (user-error "No window to show %s in" (car source)))
      (with-selected-window window
        (goto-char (point-min))
        (forward-line (1- (cadr source)))))))

(defun sly-agent-q-debugger-eval-in-frame (code)
  "Evaluate CODE with the frame at point's local variables, as SLY's e.
The value shows at the top of the debugger, which stays open."
  (interactive
   (progn (sly-agent-q-debugger--frame-here)
          (list (read-from-minibuffer "Evaluate in frame: " nil nil nil 'read-expression-history))))
  (sly-agent-q-debugger--answer
   (format "e %d %s" (get-text-property (sly-agent-q-debugger--frame-here) 'sly-agent-q-frame) code)
   t))

(defun sly-agent-q-debugger--local-at-point ()
  "The name of the local variable on the line at point, or the frame's first.
Nil when point is on no frame or the frame shows no variable."
  (let ((line (buffer-substring-no-properties (line-beginning-position) (line-end-position)))
        (locals (get-text-property (or (sly-agent-q-debugger--frame-start) (point))
                                   'sly-agent-q-frame-locals)))
    (cl-loop for text in (if (get-text-property (point) 'sly-agent-q-frame-locals-shown)
                             (list line)
                           locals)
             when (string-match "\\`\\s-*\\([^ \n]+\\) = " text)
             return (match-string 1 text))))

(defun sly-agent-q-debugger-inspect (code)
  "Inspect in the inspector the value of CODE, evaluated in the frame at point.
As SLY's i: CODE sees the frame's local variables, as with
`sly-agent-q-debugger-eval-in-frame'.  Interactively, on a frame, CODE is
read in the minibuffer, the local variable on the line at point (or the
frame's first) offered; elsewhere (on the condition, a restart) CODE is nil and
the condition itself is inspected."
  (interactive
   (list (and (sly-agent-q-debugger--frame-start)
              (read-from-minibuffer "Inspect in frame (evaluated): "
                                    (sly-agent-q-debugger--local-at-point)
                                    nil nil 'read-expression-history))))
  (let ((frame (and code (get-text-property (sly-agent-q-debugger--frame-here) 'sly-agent-q-frame))))
    (cond ((and code (string-blank-p code)) (user-error "Nothing to inspect: give a form"))
          (sly-agent-q-debugger--held (sly-agent-q-debugger--inspect-held frame code))
          (sly-agent-q-debugger--unwound
           (user-error "Nothing to inspect: the interrupt unwound the evaluation"))
          (t (sly-agent-q-debugger--answer (if code (format "i %d %s" frame code) "i c") t)))))

(defun sly-agent-q-debugger--inspect-held (frame code)
  "Inspect CODE's value in FRAME of the held error shown; the condition when nil.
The worker is free while an error is held: the inspector asks it."
  (let ((id sly-agent-q-debugger--held))
    (if (null code)
        (sly-agent-q-inspector-show (format "(agent-q::held-error-condition (agent-q::find-held-error %d))" id))
      (let* ((result (sly-agent-q-debugger--held-call
                      "eval_in_frame" (list :condition_id id :frame frame
                                            :code (format "(agent-q::inspected-id (progn %s\n))" code))))
             (content (or (plist-get result :content) "")))
        (if (and (plist-get result :success)
                 (string-match "=> \\([0-9]+\\)\\'" content))
            (sly-agent-q-inspector-show (format "(agent-q::inspected-object %s)" (match-string 1 content)))
          ;; The note names the person's form, not the call around it.
          (sly-agent-q-debugger-show-held
           id (replace-regexp-in-string
               "\\`\\(Frame [0-9]+: \\)evaluating (agent-q::inspected-id (progn \\(.*?\\) ?)) failed"
               "\\1inspecting \\2 failed" content)))))))

(defun sly-agent-q-debugger--inspect-id (id then)
  "Fetch the inspector's object ID through the REPL's waiting evaluation.
Calls THEN with its page and returns non-nil when an evaluation waits in
the debugger (it holds the worker, which would serve the inspector only
once it ends); nil otherwise, for the inspector to ask the worker."
  (let ((buffer (get-buffer sly-agent-q-debugger-buffer-name)))
    (when (and buffer
               (buffer-local-value 'sly-agent-q-debugger--key buffer)
               (not (buffer-local-value 'sly-agent-q-debugger--held buffer)))
      (with-current-buffer buffer
        (setq sly-agent-q-debugger--inspect-then then)
        (sly-agent-q-debugger--answer (format "i id %d" id) t))
      t)))

(defun sly-agent-q-debugger-restart-frame ()
  "Say that ECL cannot restart the frame at point, as SLY's r would.
ECL has no way to return into a frame and run it again (its frames keep
no re-entry point, its debugger no such command), so this only explains
it in the echo area.  Choose a restart (a digit) instead, evaluate in
the frame (`sly-agent-q-debugger-eval-in-frame'), or abort and evaluate
again."
  (interactive)
  (user-error "%s" (substitute-command-keys
                    "\\<sly-agent-q-debugger-mode-map>ECL cannot restart a frame (it has no way to run one again): \
choose a restart (a digit), evaluate in the frame (\\[sly-agent-q-debugger-eval-in-frame]) or abort (\\[sly-agent-q-debugger-abort]) and evaluate again")))

(defun sly-agent-q-debugger-waiting-p ()
  "Non-nil when an evaluation waits in the debugger for the person's choice."
  (let ((buffer (get-buffer sly-agent-q-debugger-buffer-name)))
    (and buffer (buffer-local-value 'sly-agent-q-debugger--key buffer) t)))

(defun sly-agent-q-debugger--close (buffer window)
  "Close the debugger BUFFER and select WINDOW, the one it came from."
  (when (get-buffer-window buffer)
    (quit-window t (get-buffer-window buffer)))
  (when (buffer-live-p buffer) (kill-buffer buffer))
  (when (and (window-live-p window) (not (eq window (selected-window))))
    (select-window window)))

(defun sly-agent-q-debugger--answer (text &optional stay)
  "Send TEXT, the person's choice, to the waiting Lisp job; close the buffer.
With STAY, the buffer stays: Lisp answers by showing the debugger again."
  (let ((key sly-agent-q-debugger--key)
        (buffer (current-buffer))
        (window sly-agent-q-debugger--return-window))
    (cond (sly-agent-q-debugger--held
           (sly-agent-q-debugger--answer-held text))
          ((and sly-agent-q-debugger--unwound (not stay))
           ;; Nothing waits: the interrupt already returned to the prompt.
           (sly-agent-q-debugger--close buffer window))
          ((null key) (user-error "No evaluation waits in this debugger"))
          (t
           (setq sly-agent-q-debugger--key nil)
           (let ((taken (sly-agent-q--module-answer-later key t text)))
             (unless stay (sly-agent-q-debugger--close buffer window))
             (unless taken (message "The evaluation no longer waits (it was interrupted)")))))))

(defun sly-agent-q-debugger-show-interrupt (message)
  "Show an evaluation the REPL aborted, with MESSAGE, in the debugger.
\\[sly-agent-q-repl-interrupt] aborts instead of stopping in the debugger
when the evaluation already waited in it, or held interrupts off past
an earlier \\[sly-agent-q-repl-interrupt]: by now it has been unwound
and cannot be resumed.  The one restart, ABORT, returns to the prompt,
where the evaluation already is; the session keeps its definitions."
  (let ((buffer (sly-agent-q-debugger--buffer)))
    (with-current-buffer buffer
      (setq sly-agent-q-debugger--key nil
            sly-agent-q-debugger--unwound t
            sly-agent-q-debugger--restarts
            (list (cons "[ABORT] Return to the REPL's prompt (the session keeps its definitions)" nil))
            sly-agent-q-debugger--condition (cons "INTERRUPTED" message))
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (propertize (format "INTERRUPTED: %s" message) 'face 'sly-agent-q-debugger-condition-face)
                "\n\n"
                (propertize "No CONTINUE: the evaluation was aborted (it was in the debugger already,
or held interrupts off), so it has been unwound and cannot be resumed." 'face 'warning)
                "\n\nRestarts (a digit or RET chooses, q aborts):\n")
        (insert " 0: ")
        (insert-text-button (car (car sly-agent-q-debugger--restarts))
                            'action #'sly-agent-q-debugger--button-action
                            'face 'sly-agent-q-debugger-restart-face
                            'sly-agent-q-restart 0
                            'help-echo "Invoke this restart")
        (insert "\n\nBacktrace:\n  (none: the interrupt unwound the evaluation's frames)\n"))
      (goto-char (point-min))
      (re-search-forward "^ 0: " nil t))
    (pop-to-buffer buffer)
    buffer))

(defun sly-agent-q-debugger--restart-on-line ()
  "The index of the restart on the line at point, or nil."
  (or (get-text-property (point) 'sly-agent-q-restart)
      (let ((at (next-single-property-change (line-beginning-position) 'sly-agent-q-restart
                                             nil (line-end-position))))
        (and at (get-text-property at 'sly-agent-q-restart)))))

(defun sly-agent-q-debugger-invoke-restart (index &optional value-form)
  "Invoke the restart number INDEX.
A restart that takes a value (USE-VALUE, STORE-VALUE) gets VALUE-FORM, a
Lisp form as text that Lisp evaluates; interactively it is read in the
minibuffer.  Interactively INDEX is the digit typed, or the restart at
point."
  (interactive
   (let* ((digit (and (characterp last-command-event)
                      (<= ?0 last-command-event ?9)
                      (- last-command-event ?0)))
          (index (or digit (sly-agent-q-debugger--restart-on-line)
                     (user-error "No restart here: type its number")))
          (restart (nth index sly-agent-q-debugger--restarts)))
     (unless restart (user-error "There is no restart %d" index))
     (list index (cond ((cdr restart)
                        (read-from-minibuffer (format "%s value (a Lisp form, evaluated): "
                                                      (car (split-string (car restart))))
                                              nil nil nil 'read-expression-history))
                       ;; A held error's restart may take values (its
                       ;; RESTART-CASE clause's arguments): asked for, maybe none.
                       (sly-agent-q-debugger--held
                        (read-from-minibuffer (format "%s values (Lisp forms, evaluated; empty for none): "
                                                      (car (split-string (car restart))))
                                              nil nil nil 'read-expression-history))))))
  (let ((restart (nth index sly-agent-q-debugger--restarts)))
    (unless restart (user-error "There is no restart %d" index))
    (when (and (cdr restart) (not value-form))
      (user-error "The restart %s needs a value" (car restart)))
    (sly-agent-q-debugger--answer (if (or (cdr restart)
                                          (and value-form (not (string-blank-p value-form))))
                                      (format "%d %s" index value-form)
                                    (format "%d" index)))))

(defun sly-agent-q-debugger--button-action (button)
  "Invoke the restart of BUTTON, as its digit would."
  (goto-char (button-start button))
  (call-interactively #'sly-agent-q-debugger-invoke-restart))

(defun sly-agent-q-debugger-abort ()
  "Leave the evaluation and return to the REPL's prompt; the session is kept."
  (interactive)
  (let ((index (sly-agent-q-debugger--abort-index)))
    (if (or index (not sly-agent-q-debugger--held))
        (if index
            (sly-agent-q-debugger-invoke-restart index)
          (sly-agent-q-debugger--answer "-1"))
      (sly-agent-q-debugger--answer "ABORT"))))

(defun sly-agent-q-debugger--killed ()
  "A debugger buffer killed unanswered aborts its evaluation."
  (when sly-agent-q-debugger--key
    (let ((index (sly-agent-q-debugger--abort-index)))
      (ignore-errors
        (sly-agent-q--module-answer-later sly-agent-q-debugger--key t (format "%d" (or index -1)))))
    (setq sly-agent-q-debugger--key nil)))

;;;; Held errors: a model's evaluate_lisp with debug

(defun sly-agent-q-debugger--held-call (name arguments)
  "Call the tool NAME with ARGUMENTS as the person; return the result plist."
  (let ((sly-agent-q-call-origin "user"))
    (car (sly-agent-q-execute-tool-calls (list (list :id "debugger" :name name :arguments arguments))))))

(defun sly-agent-q-debugger--held-view (id)
  "The held error ID as (TYPE MESSAGE RESTARTS WANTS-VALUE FRAMES), or nil."
  (let* ((result (sly-agent-q-debugger--held-call
                  "evaluate_lisp" (list :code (format "(agent-q::held-error-elisp-text %d)" id))))
         (content (plist-get result :content)))
    (and (plist-get result :success)
         (string-prefix-p "=> " content)
         (car (read-from-string (car (read-from-string (substring content 3))))))))

;;;###autoload
(defun sly-agent-q-debugger-show-held (id &optional note)
  "Show the error held as condition ID in the debugger, to answer it.
A model's evaluate_lisp with debug: true holds an unhandled error live;
here the person picks its restart, looks at its frames or evaluates in
one, as for an error in the REPL, and the model's next call about ID
sees what became of it.  NOTE, when non-nil, is shown at the top."
  (interactive "nCondition id: ")
  (let ((view (sly-agent-q-debugger--held-view id)))
    (unless view
      (user-error "No error is held as condition %d (answered, aborted or pushed out)" id))
    (let ((buffer (if (sly-agent-q-debugger-waiting-p)
                      ;; The REPL's evaluation keeps its own.
                      (get-buffer-create (format "%s<%d>" sly-agent-q-debugger-buffer-name id))
                    (sly-agent-q-debugger--buffer)))
          (window (selected-window)))
      (with-current-buffer buffer
        (unless (derived-mode-p 'sly-agent-q-debugger-mode)
          (sly-agent-q-debugger-mode)
          (setq sly-agent-q-debugger--return-window window))
        (setq sly-agent-q-debugger--held id
              sly-agent-q-debugger--key nil)
        (apply #'sly-agent-q-debugger--render (append view (list note))))
      (pop-to-buffer buffer)
      buffer)))

(defun sly-agent-q-debugger--answer-held (text)
  "Do TEXT, the person's choice, to the held error shown.
TEXT is \"INDEX\" or \"INDEX VALUE-FORM\" (a restart), \"e FRAME CODE\"
\(evaluate in a frame) or \"ABORT\"."
  (let ((id sly-agent-q-debugger--held)
        (buffer (current-buffer))
        (window sly-agent-q-debugger--return-window))
    (if (string-match "\\`e \\([0-9]+\\) \\(\\(?:.\\|\n\\)*\\)" text)
        (let ((result (sly-agent-q-debugger--held-call
                       "eval_in_frame" (list :condition_id id :frame (string-to-number (match-string 1 text))
                                             :code (match-string 2 text)))))
          (sly-agent-q-debugger-show-held id (plist-get result :content)))
      (let ((restart (if (string-match "\\`\\([0-9]+\\)\\(?: \\(\\(?:.\\|\n\\)*\\)\\)?\\'" text)
                         (list :restart (match-string 1 text) :values (match-string 2 text))
                       (list :restart "ABORT"))))
        (sly-agent-q-debugger--close buffer window)
        ;; The evaluation goes on, maybe for long: without blocking Emacs.
        (let ((sly-agent-q-call-origin "user"))
          (sly-agent-q-execute-tool-calls-async
           (list (list :id "debugger" :name "invoke_restart"
                       :arguments (append (list :condition_id id)
                                          (cl-loop for (key value) on restart by #'cddr
                                                   when value append (list key value)))))
           (lambda (results)
             (let* ((result (car results))
                    (next (plist-get (plist-get result :metadata) :condition_id)))
               (if next
                   (sly-agent-q-debugger-show-held next "It stopped again.")
                 (message "Condition %d: %s" id
                          (truncate-string-to-width (or (plist-get result :content) "") 200)))))))))))

(defvar sly-agent-q-debugger-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map special-mode-map)
    (dotimes (digit 10)
      (define-key map (kbd (number-to-string digit)) #'sly-agent-q-debugger-invoke-restart))
    (define-key map (kbd "q") #'sly-agent-q-debugger-abort)
    (define-key map (kbd "a") #'sly-agent-q-debugger-abort)
    (define-key map (kbd "RET") #'sly-agent-q-debugger-invoke-restart)
    (define-key map (kbd "n") #'sly-agent-q-debugger-next-frame)
    (define-key map (kbd "p") #'sly-agent-q-debugger-previous-frame)
    (define-key map (kbd "t") #'sly-agent-q-debugger-toggle-locals)
    (define-key map (kbd "v") #'sly-agent-q-debugger-show-source)
    (define-key map (kbd "e") #'sly-agent-q-debugger-eval-in-frame)
    (define-key map (kbd "i") #'sly-agent-q-debugger-inspect)
    (define-key map (kbd "r") #'sly-agent-q-debugger-restart-frame)
    (define-key map (kbd "TAB") #'forward-button)
    (define-key map (kbd "<backtab>") #'backward-button)
    map)
  "Keymap of `sly-agent-q-debugger-mode'.")

(define-derived-mode sly-agent-q-debugger-mode special-mode "Agent-Q Debugger"
  "The REPL's debugger: an error's condition, restarts and backtrace.
A digit or \\[sly-agent-q-debugger-invoke-restart] on a restart invokes
it, \\[sly-agent-q-debugger-abort] aborts to the REPL's prompt.  In the
backtrace, as in SLY: \\[sly-agent-q-debugger-next-frame] and \\[sly-agent-q-debugger-previous-frame] move between frames,
\\[sly-agent-q-debugger-toggle-locals] shows a frame's local variables, \\[sly-agent-q-debugger-show-source] its function's source
\(when it came from a file), \\[sly-agent-q-debugger-eval-in-frame] evaluates a form with its locals,
\\[sly-agent-q-debugger-inspect] inspects its value (off the frames: the condition) in the inspector.
\\[sly-agent-q-debugger-restart-frame] says why a frame cannot be restarted: ECL has no way to.
\\{sly-agent-q-debugger-mode-map}"
  :group 'sly-agent-q-debugger
  (setq truncate-lines t)
  (add-hook 'kill-buffer-hook #'sly-agent-q-debugger--killed nil t))

(provide 'sly-agent-q-debugger)

;;; sly-agent-q-debugger.el ends here
