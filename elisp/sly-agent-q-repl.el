;;; sly-agent-q-repl.el --- A REPL buffer on the embedded ECL -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `M-x sly-agent-q-repl' (C-c C-z in a Lisp buffer) opens
;; *sly-agent-q-repl*, a `comint' buffer whose input goes to the Lisp
;; session the tools use: a `defun' typed here is what `evaluate_lisp'
;; sees, and the other way round.  As in ielm, the comint process is a
;; stand-in (a pipe process that runs nothing): input is evaluated with
;; `sly-agent-q-execute-tool-calls-async', so Emacs stays responsive, and
;; the value comes back at the process mark followed by the next prompt,
;; "PACKAGE> ".  What the evaluation prints comes into the buffer as it
;; prints it (the job is interactive: see
;; `sly-agent-q-execute-tool-calls-async'), before the value; each value
;; is a button that inspects it.  RET on an incomplete form inserts a
;; newline instead of sending it; input that cannot be read (an unknown
;; package prefix, a stray close parenthesis, a reader error) is checked
;; with check_syntax and not sent: the echo area says what and where,
;; point goes there, and RET again sends it as it is.  C-c C-c
;; interrupts the evaluation, keeping the session; C-c C-o clears the
;; last output; `,' at an empty prompt offers the REPL's shortcuts.
;; Evaluations made from Lisp buffers and the minibuffer are written here
;; too, with their results.

;;; Code:

(require 'comint)
(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-async)
(require 'sly-agent-q-commands)
(require 'sly-agent-q-completion)
(require 'sly-agent-q-debugger)

(defgroup sly-agent-q-repl nil
  "The REPL buffer of sly-agent-q."
  :group 'sly-agent-q
  :prefix "sly-agent-q-repl-")

(defcustom sly-agent-q-repl-history-file
  (locate-user-emacs-file "sly-agent-q/repl-history")
  "Where the REPL's input history is kept between sessions; nil keeps none."
  :type '(choice (const :tag "None" nil) file)
  :group 'sly-agent-q-repl)

(defcustom sly-agent-q-repl-buffer-name "*sly-agent-q-repl*"
  "The name of the REPL buffer."
  :type 'string
  :group 'sly-agent-q-repl)

(defface sly-agent-q-repl-output '((t :inherit font-lock-string-face))
  "Face of what evaluations print in the REPL."
  :group 'sly-agent-q-repl)

(defface sly-agent-q-repl-note '((t :inherit font-lock-comment-face))
  "Face of the REPL's own lines (an evaluation from a Lisp buffer, output cleared)."
  :group 'sly-agent-q-repl)

(defvar-local sly-agent-q-repl--job nil
  "The evaluation the REPL waits for, or nil.")

(defvar-local sly-agent-q-repl--package "CL-USER"
  "The session's package, as the prompt shows it.")

(defvar-local sly-agent-q-repl--interrupted nil
  "The evaluation \\[sly-agent-q-repl-interrupt] interrupted, or nil.
Its end shows the interrupt in the debugger.")

(defvar sly-agent-q-repl--last-lisp-buffer nil
  "The Lisp buffer \\[sly-agent-q-switch-to-repl] was last typed in.")

(defun sly-agent-q-repl--session-package ()
  "The name of the session's current package.
Asked of describe_symbol, which leaves `*' and `+' alone (an evaluation
would make itself the last one)."
  (let* ((result (car (let ((sly-agent-q-call-origin sly-agent-q-ui-origin))
                        (sly-agent-q-execute-tool-calls
                         (list (list :id "repl" :name "describe_symbol"
                                     :arguments (list :symbol "cl:*package*")))))))
         (content (or (plist-get result :content) "")))
    (if (and (plist-get result :success) (string-match "^Value: #<\"\\(.*\\)\" package>" content))
        (pcase (match-string 1 content)
          ("COMMON-LISP-USER" "CL-USER")
          ("COMMON-LISP" "CL")
          (name name))
      sly-agent-q-repl--package)))

(defun sly-agent-q-repl--fresh-line ()
  "\"\n\" unless the process mark is at the start of a line, else \"\"."
  (let ((pmark (process-mark (get-buffer-process (current-buffer)))))
    (if (or (= pmark (point-min)) (eq (char-before pmark) ?\n)) "" "\n")))

(defun sly-agent-q-repl--output (text)
  "Insert TEXT at the REPL's process mark on a line of its own, then a prompt."
  (let ((process (get-buffer-process (current-buffer))))
    (setq sly-agent-q-repl--package (sly-agent-q-repl--session-package))
    (comint-output-filter process (concat (sly-agent-q-repl--fresh-line)
                                          text (if (or (string-empty-p text) (string-suffix-p "\n" text)) "" "\n")
                                          sly-agent-q-repl--package "> "))))

(defun sly-agent-q-repl--insert-output (text &optional face)
  "Insert TEXT, output of the running evaluation, at the process mark.
It goes before anything typed after the mark; a point at the mark stays
after it.  FACE defaults to `sly-agent-q-repl-output'."
  (let* ((process (get-buffer-process (current-buffer)))
         (pmark (process-mark process))
         (inhibit-read-only t)
         (moving (= (point) pmark)))
    (save-excursion
      (goto-char pmark)
      (insert (propertize text
                          'font-lock-face (or face 'sly-agent-q-repl-output)
                          'field 'output 'inhibit-line-move-field-capture t
                          'front-sticky '(field inhibit-line-move-field-capture) 'rear-nonsticky t))
      (set-marker pmark (point)))
    (when moving (goto-char pmark))))

(defun sly-agent-q-repl--value-buttons (start end job)
  "Make each value printed between START and END a button inspecting it.
The values are the \"=> \" lines (with their continuation lines) of the
evaluation JOB, whose values the session keeps (`agent-q::repl-value')."
  (save-excursion
    (goto-char start)
    (let ((index 0) (starts nil))
      (while (re-search-forward "^=> " end t)
        (push (point) starts))
      (setq starts (nreverse starts))
      (while starts
        (let* ((from (car starts))
               (to (save-excursion
                     (goto-char (if (cadr starts) (- (cadr starts) 3) end))
                     (skip-chars-backward "\n")
                     (point))))
          (when (< from to)
            (make-text-button from to
                              'action #'sly-agent-q-repl--inspect-button
                              'sly-agent-q-repl-value (cons job index)
                              'follow-link t
                              'help-echo "mouse-2, RET: inspect this value")))
        (setq index (1+ index) starts (cdr starts))))))

(declare-function sly-agent-q-inspector-show "sly-agent-q-inspector" (code &optional package))

(defun sly-agent-q-repl-inspect-value (job index)
  "Inspect the INDEXth value (from 0) of the REPL evaluation JOB.
The session keeps the values of the REPL's last 100 evaluations; the
value opens in *sly-agent-q inspector* (see `sly-agent-q-inspector-mode')."
  (require 'sly-agent-q-inspector)
  ;; The REPL's own call, not one the person typed: not in the audit log.
  (let ((sly-agent-q-call-origin sly-agent-q-ui-origin))
    (sly-agent-q-inspector-show (format "(agent-q::repl-value %d %d)" job index))))

(defun sly-agent-q-repl--inspect-button (button)
  "Inspect the value BUTTON stands for."
  (let ((value (button-get button 'sly-agent-q-repl-value)))
    (sly-agent-q-repl-inspect-value (car value) (cdr value))))

(defun sly-agent-q-repl--prompt-start ()
  "Return the start of the line of the process mark (the prompt, when idle)."
  (save-excursion
    (goto-char (process-mark (get-buffer-process (current-buffer))))
    (forward-line 0)                    ; not `line-beginning-position': fields
    (point)))

(defconst sly-agent-q-repl--no-continue
  "; The evaluation was unwound (it was in the debugger already, or held
; interrupts off): it cannot be continued; the debugger shows the
; interrupt with ABORT only.
"
  "What the REPL says after \\[sly-agent-q-repl-interrupt] aborted an evaluation.")

(defun sly-agent-q-repl--result (result job)
  "Insert RESULT of the REPL evaluation JOB, then a fresh prompt.
When \\[sly-agent-q-repl-interrupt] interrupted JOB, say that it cannot be
continued and show the interrupt in the debugger."
  (let* ((process (get-buffer-process (current-buffer)))
         (start (copy-marker (process-mark process)))
         (text (or (plist-get result :content) (plist-get result :error) ""))
         (interrupted (and (eql job sly-agent-q-repl--interrupted)
                           (not (plist-get result :success))
                           (string-prefix-p "[ERROR] INTERRUPTED" text))))
    (setq sly-agent-q-repl--interrupted nil)
    (sly-agent-q-repl--output
     (if interrupted
         (concat text (if (string-suffix-p "\n" text) "" "\n")
                 (propertize sly-agent-q-repl--no-continue 'font-lock-face 'sly-agent-q-repl-note))
       text))
    (when (plist-get result :success)
      (let ((end (sly-agent-q-repl--prompt-start)))
        (let ((inhibit-read-only t))
          (sly-agent-q-repl--value-buttons start end job))))
    (set-marker start nil)
    (when interrupted
      (sly-agent-q-debugger-show-interrupt
       (if (string-match "^Evaluation was interrupted[^\n]*" text)
           (match-string 0 text)
         "Evaluation was interrupted.")))))

(defun sly-agent-q-repl--send (_process input)
  "Evaluate INPUT in the session; its value comes back at the process mark.
What it prints comes as it prints it."
  (let ((buffer (current-buffer))
        (code (string-trim input))
        (job nil))
    (if (string-empty-p code)
        (sly-agent-q-repl--output "")
      (setq job (sly-agent-q--as-user   ; the person's own code
                  (sly-agent-q-execute-tool-calls-async
                 (list (list :id "repl" :name "evaluate_lisp" :arguments (list :code code)))
                 (lambda (results)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (setq sly-agent-q-repl--job nil)
                       (sly-agent-q-repl--result (car results) job))))
                 ;; An error stops in the debugger (sly-agent-q-debugger.el).
                 t
                 (lambda (text)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (sly-agent-q-repl--insert-output text))))))
            sly-agent-q-repl--job job)
      (when sly-agent-q-repl-history-file
        (ignore-errors
          (make-directory (file-name-directory sly-agent-q-repl-history-file) t)
          (comint-write-input-ring))))))

(defvar-local sly-agent-q-repl--unreadable-input nil
  "The input last kept back because it cannot be read: RET on it again sends it.")

(defun sly-agent-q-repl--stray-close-p (text)
  "Non-nil if TEXT has a close parenthesis that closes no list.
Such input is not incomplete: no line added would make it read."
  (with-temp-buffer
    (set-syntax-table lisp-mode-syntax-table)
    (insert text)
    (goto-char (point-min))
    (condition-case nil
        (catch 'stray
          (while (progn (forward-comment (buffer-size)) (not (eobp)))
            (when (eq (char-after) ?\))
              (throw 'stray t))
            (forward-sexp))
          nil)
      (scan-error nil))))

(defun sly-agent-q-repl--reading-problems (input)
  "Return check_syntax's problems in INPUT, which Lisp's reading would fail on.
Lines \"line L, column C: …\"; nil when it reads.  `#.' is left to the
REPL, which reads the person's input with read-time evaluation on."
  (cl-remove-if (lambda (line) (string-match-p ": Cannot evaluate the form #\\." line))
                (sly-agent-q--syntax-problems input)))

(defun sly-agent-q-repl--report-unreadable (problems start)
  "Say PROBLEMS of the input at START in the echo area; point to the first."
  (when (string-match "\\`line \\([0-9]+\\), column \\([0-9]+\\): " (car problems))
    (let ((line (string-to-number (match-string 1 (car problems))))
          (column (string-to-number (match-string 2 (car problems)))))
      (goto-char start)
      (forward-line (1- line))
      (unless (= line 1) (setq start (point)))
      (goto-char (min (point-max) (+ start (max 0 (1- column)))))))
  (message "Not sent, it cannot be read: %s  (RET again sends it as it is)"
           (mapconcat #'identity problems "; ")))

(defun sly-agent-q-repl-return ()
  "Send the input if it is whole forms; else start a new line.
Whole forms are checked first with check_syntax, read but not evaluated:
input that cannot be read (an unknown package prefix, a stray close
parenthesis, a reader error) is kept, not sent, and the echo area says
what and where, point on it.  RET again on the same input sends it as
it is, for Lisp's own reading to answer; so does RET while Lisp is busy
with another call (the check would wait for it, Emacs with it)."
  (interactive)
  (let* ((process (get-buffer-process (current-buffer)))
         (start (marker-position (process-mark process)))
         (input (buffer-substring-no-properties start (point-max))))
    (cond ((< (point) start) (comint-send-input))
          (sly-agent-q-repl--job (message "The REPL is still evaluating: C-c C-c interrupts it"))
          ((not (or (sly-agent-q--complete-forms-p input) (sly-agent-q-repl--stray-close-p input)))
           (newline-and-indent))
          ((and (not (equal input sly-agent-q-repl--unreadable-input))
                ;; Lisp busy with another call: the check would wait for
                ;; it, Emacs blocked; the input waits its turn unchecked.
                (not (sly-agent-q--lisp-busy-p))
                (let ((problems (sly-agent-q-repl--reading-problems input)))
                  (when problems
                    (setq sly-agent-q-repl--unreadable-input input)
                    (sly-agent-q-repl--report-unreadable problems start)
                    t))))
          (t
           (setq sly-agent-q-repl--unreadable-input nil)
           (goto-char (point-max))
           (comint-send-input)))))

(declare-function sly-agent-q--module-break "sly-agent-q-module" (job))

(defun sly-agent-q-repl-interrupt ()
  "Interrupt the REPL's evaluation, as SLY's `sly-interrupt' does.
The evaluation stops where it is and shows in the debugger, with
CONTINUE (it goes on from there) and ABORT (back to the prompt; the
session keeps its definitions).  When it already waits in the debugger,
or an earlier \\[sly-agent-q-repl-interrupt] found no place to stop it (the
evaluation holds interrupts off), the interrupt aborts it."
  (interactive)
  (let ((job sly-agent-q-repl--job)
        (in-debugger (sly-agent-q-debugger-waiting-p)))
    (cond ((null job) (message "Nothing is being evaluated"))
          ((and (not in-debugger) (sly-agent-q--module-break job))
           (message "Interrupting: the debugger shows where"))
          ((sly-agent-q-cancel job)
           (unless in-debugger (setq sly-agent-q-repl--interrupted job))
           (message "Interrupting..."))
          (t (message "Nothing is being evaluated")))))

(defun sly-agent-q-repl-switch-to-lisp-buffer ()
  "Go back to the Lisp buffer \\[sly-agent-q-switch-to-repl] came from, as in SLY.
If it is gone, go to the most recently used `lisp-mode' buffer."
  (interactive)
  (let ((buffer (if (buffer-live-p sly-agent-q-repl--last-lisp-buffer)
                    sly-agent-q-repl--last-lisp-buffer
                  (cl-find-if (lambda (buffer)
                                (with-current-buffer buffer (derived-mode-p 'lisp-mode)))
                              (buffer-list)))))
    (unless buffer (user-error "No Lisp buffer to go back to"))
    (pop-to-buffer buffer)))

(defun sly-agent-q-repl-clear-output ()
  "Delete what the last evaluation printed and returned, as SLY does.
A line says that it was cleared; the prompt and what is typed after it stay."
  (interactive)
  (let ((start (marker-position comint-last-input-end))
        (end (sly-agent-q-repl--prompt-start)))
    (cond (sly-agent-q-repl--job (user-error "The REPL is still evaluating: C-c C-c interrupts it"))
          ((or (null start) (>= start end)) (message "No output to clear"))
          (t (let ((inhibit-read-only t))
               (delete-region start end)
               (save-excursion
                 (goto-char start)
                 (insert (propertize "; output cleared\n"
                                     'font-lock-face 'sly-agent-q-repl-note 'field 'output
                                     'rear-nonsticky t))))))))

(defun sly-agent-q-repl--note (text)
  "Write TEXT (lines ending with a newline) in the REPL above the prompt.
While an evaluation runs, it goes with its output instead.  What is
typed at the prompt stays."
  (if sly-agent-q-repl--job
      (sly-agent-q-repl--insert-output (concat (sly-agent-q-repl--fresh-line) text) 'default)
    (let ((inhibit-read-only t)
          (start (sly-agent-q-repl--prompt-start))
          (moving (= (point) (process-mark (get-buffer-process (current-buffer))))))
      (save-excursion
        (goto-char start)
        (insert (propertize text 'field 'output 'rear-nonsticky t)))
      (when moving (goto-char (process-mark (get-buffer-process (current-buffer))))))))

(defun sly-agent-q-repl--record-evaluation (code result source)
  "Write CODE, evaluated from SOURCE, and its RESULT in the REPL.
On `sly-agent-q-evaluation-functions': one history of what was
evaluated.  The code also goes into the REPL's input history."
  (let ((buffer (get-buffer sly-agent-q-repl-buffer-name)))
    (when (and (buffer-live-p buffer) (comint-check-proc buffer))
      (with-current-buffer buffer
        (let ((text (string-trim-right (or (plist-get result :content) (plist-get result :error) ""))))
          (sly-agent-q-repl--note
           (concat (propertize (format "; From %s:\n" (or source "Emacs")) 'font-lock-face 'sly-agent-q-repl-note)
                   (string-trim code) "\n" text "\n"))
          (comint-add-to-input-history (string-trim code)))))))

;;;; Shortcuts: `,' at an empty prompt

(defcustom sly-agent-q-repl-shortcuts
  '(("in-package" . sly-agent-q-repl-in-package)
    ("change-package" . sly-agent-q-repl-change-package)
    ("clear-output" . sly-agent-q-repl-clear-output)
    ("clear" . comint-clear-buffer)
    ("interrupt" . sly-agent-q-repl-interrupt)
    ("restart-worker" . sly-agent-q-repl-restart-worker)
    ("quit" . sly-agent-q-repl-quit))
  "The REPL's shortcuts, offered by `,' at an empty prompt: (NAME . COMMAND)."
  :type '(alist :key-type string :value-type function)
  :group 'sly-agent-q-repl)

(defun sly-agent-q-repl-shortcut (name)
  "Run the REPL shortcut NAME (see `sly-agent-q-repl-shortcuts')."
  (interactive (list (completing-read "REPL command: " sly-agent-q-repl-shortcuts nil t)))
  (let ((command (cdr (assoc name sly-agent-q-repl-shortcuts))))
    (unless command (user-error "No REPL shortcut named %s" name))
    (call-interactively command)))

(defun sly-agent-q-repl-comma ()
  "At an empty prompt offer the REPL's shortcuts; elsewhere insert a comma."
  (interactive)
  (let ((pmark (process-mark (get-buffer-process (current-buffer)))))
    ;; A comma cannot start a form: at an empty prompt it means a shortcut
    ;; (while an evaluation runs too: `interrupt').
    (if (and (= (point) pmark) (string-blank-p (buffer-substring-no-properties pmark (point-max))))
        (call-interactively #'sly-agent-q-repl-shortcut)
      (call-interactively #'self-insert-command))))

(defun sly-agent-q-repl--package-names ()
  "The names and nicknames of the session's packages, sorted, or nil.
Asking is an evaluation of the front end's own, so afterwards `*' is
the list; nil while Lisp is busy (the prompt then takes what is typed)."
  (unless (sly-agent-q--lisp-busy-p)
    (let* ((code "(sort (loop for p in (list-all-packages) append (cons (package-name p) (copy-list (package-nicknames p)))) #'string<)")
           (result (car (let ((sly-agent-q-call-origin sly-agent-q-ui-origin))
                          (sly-agent-q-execute-tool-calls
                           (list (list :id "repl" :name "evaluate_lisp" :arguments (list :code code :timeout 2)))))))
           (content (or (plist-get result :content) "")))
      (when (and (plist-get result :success) (string-prefix-p "=> " content))
        (condition-case nil
            (let ((names (car (read-from-string (substring content 3)))))
              (and (listp names) (cl-every #'stringp names) names))
          (error nil))))))

(defun sly-agent-q-repl--package-table ()
  "A completion table of the session's package names, asked for when needed.
Typing a name and RET asks nothing; completing asks the session once."
  (let ((names :unknown))
    (lambda (string predicate action)
      (when (eq names :unknown) (setq names (sly-agent-q-repl--package-names)))
      (let ((completion-ignore-case t))
        (complete-with-action action names string predicate)))))

(defun sly-agent-q-repl--read-package (prompt)
  "Read a package name with PROMPT, completing the session's packages."
  (let ((completion-ignore-case t))
    (completing-read (format "%s (default %s): " prompt sly-agent-q-repl--package)
                     (sly-agent-q-repl--package-table) nil nil nil nil sly-agent-q-repl--package)))

(defun sly-agent-q-repl-in-package (package)
  "Make PACKAGE the session's package: type (in-package PACKAGE) and send it.
Interactively the name is read with completion of the session's
packages, as SLY's `,in-package'."
  (interactive (list (sly-agent-q-repl--read-package "Package")))
  (goto-char (point-max))
  (delete-region (process-mark (get-buffer-process (current-buffer))) (point-max))
  (insert (format "(in-package %S)" (upcase package)))
  (sly-agent-q-repl-return))

(defun sly-agent-q-repl-change-package (package)
  "Make PACKAGE the session's package, as `sly-agent-q-repl-in-package'."
  (interactive (list (sly-agent-q-repl--read-package "Package")))
  (sly-agent-q-repl-in-package package))

(defun sly-agent-q-repl-restart-worker ()
  "Give the session a fresh worker thread, saying so in the REPL.
See `sly-agent-q-restart-worker'."
  (interactive)
  (sly-agent-q-restart-worker)
  (sly-agent-q-repl--note
   (propertize "; The Lisp session continues on a fresh worker thread, every definition kept.\n"
               'font-lock-face 'sly-agent-q-repl-note)))

(defun sly-agent-q-repl-quit ()
  "Close the REPL buffer; the Lisp session and its definitions stay."
  (interactive)
  (when sly-agent-q-repl--job (sly-agent-q-cancel sly-agent-q-repl--job))
  (let ((kill-buffer-query-functions nil))
    (kill-buffer (current-buffer))))

(defvar sly-agent-q-repl-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map comint-mode-map)
    (define-key map (kbd "RET") #'sly-agent-q-repl-return)
    (define-key map (kbd "C-j") #'newline-and-indent)
    (define-key map (kbd "C-c C-c") #'sly-agent-q-repl-interrupt)
    (define-key map (kbd "C-c C-o") #'sly-agent-q-repl-clear-output)
    (define-key map (kbd "C-c C-z") #'sly-agent-q-repl-switch-to-lisp-buffer)
    (define-key map "," #'sly-agent-q-repl-comma)
    (define-key map (kbd "TAB") #'completion-at-point)
    map)
  "Keymap of `sly-agent-q-repl-mode'.")

(define-derived-mode sly-agent-q-repl-mode comint-mode "Agent-Q REPL"
  "A Common Lisp REPL on the ECL inside this Emacs.
\\[sly-agent-q-repl-return] evaluates a whole form (and opens a new line
in an incomplete one); what it prints shows as it prints it, and each
value is a button that inspects it.  \\[sly-agent-q-repl-interrupt] interrupts,
\\[sly-agent-q-repl-clear-output] clears the last output,
\\[sly-agent-q-repl-switch-to-lisp-buffer] goes back to the Lisp buffer, `,' at an empty
prompt offers shortcuts (`sly-agent-q-repl-shortcuts'),
\\[comint-previous-input] and \\[comint-next-input] walk the history,
which is kept in `sly-agent-q-repl-history-file'.  `*', `**', `***',
`+' and `/' are bound as in any Common Lisp REPL.
\\{sly-agent-q-repl-mode-map}"
  :group 'sly-agent-q-repl
  (setq-local comint-prompt-regexp "^[^> \n]*> ")
  (setq-local comint-input-sender #'sly-agent-q-repl--send)
  (setq-local comint-process-echoes nil)
  (setq-local comint-input-ignoredups t)
  (setq-local comint-input-ring-file-name sly-agent-q-repl-history-file)
  (set-syntax-table lisp-mode-syntax-table)
  (setq-local indent-line-function #'lisp-indent-line)
  (setq-local comment-start ";")
  (setq-local indent-tabs-mode nil)
  (setq-local font-lock-defaults '(lisp-cl-font-lock-keywords nil t))
  (add-hook 'completion-at-point-functions #'sly-agent-q-completion-at-point nil t)
  (add-hook 'eldoc-documentation-functions #'sly-agent-q-eldoc-function nil t)
  (eldoc-mode 1)
  (setq mode-line-process '(:eval (if sly-agent-q-repl--job " evaluating" " idle"))))

;;;###autoload
(defun sly-agent-q-repl ()
  "Show the REPL on the embedded ECL, starting it if needed."
  (interactive)
  (let ((buffer (get-buffer-create sly-agent-q-repl-buffer-name)))
    (add-hook 'sly-agent-q-evaluation-functions #'sly-agent-q-repl--record-evaluation)
    (with-current-buffer buffer
      (unless (comint-check-proc buffer)
        (sly-agent-q-repl-mode)
        (let ((process (make-pipe-process :name "sly-agent-q-repl" :buffer buffer :noquery t)))
          (set-marker (process-mark process) (point-max))
          (when sly-agent-q-repl-history-file (comint-read-input-ring t))
          ;; No evaluation here: it would become the session's `*'.
          (sly-agent-q-repl--output "; sly-agent-q REPL on ECL, inside this Emacs.  C-c C-c interrupts."))))
    (pop-to-buffer buffer)
    buffer))

(provide 'sly-agent-q-repl)

;;; sly-agent-q-repl.el ends here
