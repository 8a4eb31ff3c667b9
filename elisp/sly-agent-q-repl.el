;;; sly-agent-q-repl.el --- A REPL buffer on the embedded ECL -*- lexical-binding: t; -*-

;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `M-x sly-agent-q-repl' (C-c C-z in a Lisp buffer) opens
;; *sly-agent-q-repl*, a `comint' buffer whose input goes to the Lisp
;; session the tools use: a `defun' typed here is what `evaluate_lisp'
;; sees, and the other way round.  As in ielm, the comint process is a
;; stand-in (a pipe process that runs nothing): input is evaluated with
;; `sly-agent-q-execute-tool-calls-async', so Emacs stays responsive, and
;; the value comes back at the process mark followed by the next prompt,
;; "PACKAGE> ".  RET on an incomplete form inserts a newline instead of
;; sending it; C-c C-c interrupts the evaluation, keeping the session.

;;; Code:

(require 'comint)
(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-runtime)
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

(defvar-local sly-agent-q-repl--job nil
  "The evaluation the REPL waits for, or nil.")

(defvar-local sly-agent-q-repl--package "CL-USER"
  "The session's package, as the prompt shows it.")

(defun sly-agent-q-repl--session-package ()
  "The name of the session's current package.
Asked of describe_symbol, which leaves `*' and `+' alone (an evaluation
would make itself the last one)."
  (let* ((result (car (sly-agent-q-execute-tool-calls
                       (list (list :id "repl" :name "describe_symbol"
                                   :arguments (list :symbol "cl:*package*"))))))
         (content (or (plist-get result :content) "")))
    (if (and (plist-get result :success) (string-match "^Value: #<\"\\(.*\\)\" package>" content))
        (pcase (match-string 1 content)
          ("COMMON-LISP-USER" "CL-USER")
          ("COMMON-LISP" "CL")
          (name name))
      sly-agent-q-repl--package)))

(defun sly-agent-q-repl--output (text)
  "Insert TEXT at the REPL's process mark, then a fresh prompt."
  (let ((process (get-buffer-process (current-buffer))))
    (setq sly-agent-q-repl--package (sly-agent-q-repl--session-package))
    (comint-output-filter process (concat text (if (string-suffix-p "\n" text) "" "\n")
                                          sly-agent-q-repl--package "> "))))

(defun sly-agent-q-repl--send (_process input)
  "Evaluate INPUT in the session; its value comes back at the process mark."
  (let ((buffer (current-buffer))
        (code (string-trim input)))
    (if (string-empty-p code)
        (sly-agent-q-repl--output "")
      (setq sly-agent-q-repl--job
            (sly-agent-q-execute-tool-calls-async
             (list (list :id "repl" :name "evaluate_lisp" :arguments (list :code code)))
             (lambda (results)
               (when (buffer-live-p buffer)
                 (with-current-buffer buffer
                   (setq sly-agent-q-repl--job nil)
                   (let ((result (car results)))
                     (sly-agent-q-repl--output
                      (or (plist-get result :content) (plist-get result :error) ""))))))
             ;; An error stops in the debugger (sly-agent-q-debugger.el).
             t))
      (when sly-agent-q-repl-history-file
        (ignore-errors
          (make-directory (file-name-directory sly-agent-q-repl-history-file) t)
          (comint-write-input-ring))))))

(defun sly-agent-q-repl-return ()
  "Send the input if it holds whole forms; else start a new line."
  (interactive)
  (let* ((process (get-buffer-process (current-buffer)))
         (input (buffer-substring-no-properties (process-mark process) (point-max))))
    (cond ((< (point) (process-mark process)) (comint-send-input))
          (sly-agent-q-repl--job (message "The REPL is still evaluating: C-c C-c interrupts it"))
          ((sly-agent-q--complete-forms-p input)
           (goto-char (point-max))
           (comint-send-input))
          (t (newline-and-indent)))))

(defun sly-agent-q-repl-interrupt ()
  "Interrupt the REPL's evaluation; the session keeps its definitions."
  (interactive)
  (if (and sly-agent-q-repl--job (sly-agent-q-cancel sly-agent-q-repl--job))
      (message "Interrupting...")
    (message "Nothing is being evaluated")))

(defvar sly-agent-q-repl-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map comint-mode-map)
    (define-key map (kbd "RET") #'sly-agent-q-repl-return)
    (define-key map (kbd "C-j") #'newline-and-indent)
    (define-key map (kbd "C-c C-c") #'sly-agent-q-repl-interrupt)
    (define-key map (kbd "TAB") #'completion-at-point)
    map)
  "Keymap of `sly-agent-q-repl-mode'.")

(define-derived-mode sly-agent-q-repl-mode comint-mode "Agent-Q REPL"
  "A Common Lisp REPL on the ECL inside this Emacs.
\\[sly-agent-q-repl-return] evaluates a whole form (and opens a new line
in an incomplete one), \\[sly-agent-q-repl-interrupt] interrupts,
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
