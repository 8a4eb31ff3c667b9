;;; sly-agent-q-lisp-mode.el --- SLY's keys in Lisp buffers, on the embedded ECL -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `sly-agent-q-lisp-mode', a buffer-local minor mode for `lisp-mode'
;; buffers, gives the keys a SLY user's fingers know: C-x C-e, C-M-x,
;; C-c C-r, C-c C-c, C-c C-k, C-c C-l, M-, and M-., C-c C-d d/a/h,
;; C-c RET, C-c M-m, C-c C-w c/r (in *xref*), C-c M-q and C-c C-v i.
;; Each runs the same tools the agent uses (evaluate_lisp,
;; compile_form, describe_symbol, ...), in the buffer's package,
;; without blocking Emacs: the result shows in the echo area (or
;; *sly-agent-q result*) when it comes.
;;
;; `global-sly-agent-q-lisp-mode', which the user turns on (in the init
;; file: (global-sly-agent-q-lisp-mode 1); the welcome buffer does too),
;; turns the mode on in every `lisp-mode' buffer unless SLY or SLIME
;; already is there: their users keep their keys and reach ours through
;; C-c ?.  Loading this file turns nothing on.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'xref)
(require 'sly-agent-q-notes)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-async)
(require 'sly-agent-q-inspector)
(require 'sly-agent-q-commands)
(require 'sly-agent-q-repl)
(require 'sly-agent-q-completion)

(defgroup sly-agent-q-lisp nil
  "SLY-like keys in Lisp buffers, on the embedded ECL."
  :group 'sly-agent-q
  :prefix "sly-agent-q-lisp-")

(defcustom sly-agent-q-lisp-mode-in-lisp-buffers t
  "Non-nil means `sly-agent-q-lisp-mode' turns on in `lisp-mode' buffers.
That is, while `global-sly-agent-q-lisp-mode' is on.  It stays off where
`sly-mode' or `slime-mode' is on."
  :type 'boolean
  :group 'sly-agent-q-lisp)

(defcustom sly-agent-q-hyperspec-url "https://l1sp.org/cl/%s"
  "The HyperSpec page of a symbol, with %s for its name.
Used when no local HyperSpec is found (Debian's package `hyperspec'
puts one under /usr/share/doc/hyperspec)."
  :type 'string
  :group 'sly-agent-q-lisp)

(defvar sly-agent-q-lisp--running 0
  "How many evaluations started from Lisp buffers are running.")

;;;; Asking the session

(defvar sly-agent-q-lisp--jobs nil
  "The jobs started from Lisp buffers that have not finished, newest first.")

(defun sly-agent-q-lisp--call (tool arguments callback)
  "Run TOOL with ARGUMENTS without blocking; call CALLBACK with its result.
The call is the person's (`sly-agent-q--as-user').  Returns the job id."
  (cl-incf sly-agent-q-lisp--running)
  (force-mode-line-update t)
  (let ((job nil))
    (setq job (sly-agent-q--as-user
                (sly-agent-q-execute-tool-calls-async
                 (list (list :id "lisp-mode" :name tool :arguments arguments))
                 (lambda (results)
                   (setq sly-agent-q-lisp--running (max 0 (1- sly-agent-q-lisp--running))
                         sly-agent-q-lisp--jobs (delq job sly-agent-q-lisp--jobs))
                   (force-mode-line-update t)
                   (funcall callback (car results))))))
    (push job sly-agent-q-lisp--jobs)
    job))

(defun sly-agent-q-interrupt ()
  "Interrupt the evaluations started from Lisp buffers, as in SLY.
Each ends with an [ERROR] INTERRUPTED result (in the REPL too, when it is
open); the session keeps its definitions."
  (interactive)
  (let ((cancelled (cl-count-if #'sly-agent-q-cancel sly-agent-q-lisp--jobs)))
    (message (if (> cancelled 0) "Interrupting..." "Nothing is being evaluated from Lisp buffers"))))

(defun sly-agent-q-lisp--package-arguments (arguments &optional position)
  "ARGUMENTS with the buffer's package at POSITION, when it has one."
  (let ((package (sly-agent-q--buffer-package position)))
    (if package (append arguments (list :package package)) arguments)))

(defun sly-agent-q-lisp--check-balanced (text)
  "Signal a `user-error' unless TEXT is balanced Lisp."
  (unless (sly-agent-q--complete-forms-p text)
    (user-error "The form is not complete (unbalanced parentheses or string): nothing was sent")))

(defun sly-agent-q-lisp--evaluate (text position)
  "Evaluate TEXT, from the buffer at POSITION, and show the result.
It is shown unless a later evaluation's result already is, and written in
the REPL when that is open."
  (sly-agent-q-lisp--check-balanced text)
  (sly-agent-q-lisp--remember-definitions text position)
  (let ((ticket (sly-agent-q--take-ticket))
        (source (buffer-name)))
    (sly-agent-q-lisp--call "evaluate_lisp"
                            (sly-agent-q-lisp--package-arguments (list :code text) position)
                            (lambda (result) (sly-agent-q--show-evaluation result ticket text source)))))

;;;; Evaluating and compiling

(defun sly-agent-q-eval-last-sexp ()
  "Evaluate the form before point in ECL, as SLY's \\[sly-eval-last-expression]."
  (interactive)
  (let* ((end (point))
         (start (save-excursion (backward-sexp) (point))))
    (sly-agent-q-lisp--evaluate (buffer-substring-no-properties start end) start)))

(defun sly-agent-q-eval-defun ()
  "Evaluate the top-level form around point in ECL."
  (interactive)
  (let ((bounds (sly-agent-q--defun-bounds)))
    (sly-agent-q-lisp--evaluate (buffer-substring-no-properties (car bounds) (cdr bounds)) (car bounds))))

(defun sly-agent-q-eval-region (start end)
  "Evaluate the forms from START to END in ECL."
  (interactive "r")
  (sly-agent-q-lisp--evaluate (buffer-substring-no-properties start end) start))

(defun sly-agent-q-compile-defun ()
  "Compile the top-level form around point (compile_form) and show the notes.
Warnings and style warnings (undefined function, unused variable, wrong
argument count) are shown on the forms they concern (\\[sly-agent-q-next-note]
and \\[sly-agent-q-previous-note] move between them) and listed in
*sly-agent-q compilation*."
  (interactive)
  (let* ((bounds (sly-agent-q--defun-bounds))
         (text (buffer-substring-no-properties (car bounds) (cdr bounds))))
    (sly-agent-q-lisp--check-balanced text)
    (sly-agent-q-lisp--remember-definitions text (car bounds))
    (sly-agent-q-lisp--compile (car bounds) (cdr bounds)
                               (sly-agent-q-lisp--package-arguments (list :form text) (car bounds)))))

(defun sly-agent-q-lisp--compile (start end arguments &optional then)
  "Compile the buffer's text from START to END: compile_form with ARGUMENTS.
Its notes go on the forms; THEN, if non-nil, is called with the result."
  (let ((buffer (current-buffer))
        (start (copy-marker start))
        (end (copy-marker end t)))
    (sly-agent-q-notes-clear start end)
    (sly-agent-q-lisp--call "compile_form" arguments
                            (lambda (result)
                              (when (buffer-live-p buffer)
                                (sly-agent-q-lisp--show-compilation result buffer start end))
                              (when then (funcall then result))))))

(defun sly-agent-q-lisp--show-compilation (result buffer start end)
  "Show compile_form's RESULT for the text of BUFFER from START to END."
  (let* ((text (or (plist-get result :content) (plist-get result :error) ""))
         (notes (sly-agent-q-notes-show text buffer start end))
         (summary (car (last (split-string (string-trim text) "\n")))))
    (cond (notes
           (sly-agent-q-notes-list notes buffer)
           (display-buffer "*sly-agent-q compilation*")
           (message "%d compiler note%s (%s): %s" (length notes) (if (cdr notes) "s" "")
                    (substitute-command-keys "\\<sly-agent-q-lisp-mode-map>\\[sly-agent-q-next-note] goes to the next")
                    (nth 1 (car notes))))
          ((plist-get result :success) (message "Compiled: %s" summary))
          (t (message "%s" (car (split-string text "\n")))))))

(defun sly-agent-q-load-file (file)
  "Load the Lisp FILE into ECL (saving its buffer first).
It is loaded as source, form by form as `load' does; its `defun's and
`defmethod's then go to the background native compiler, as evaluated
ones do (see `sly-agent-q-native-tiering')."
  (interactive (list (or buffer-file-name (read-file-name "Load Lisp file: "))))
  (when-let ((buffer (find-buffer-visiting file)))
    (with-current-buffer buffer (when (buffer-modified-p) (save-buffer))))
  (message "Loading %s..." file)
  (sly-agent-q-lisp--call "evaluate_lisp"
                          ;; Indexed after loading, for M-. and who-calls.
                          (list :code (format "(progn (agent-q::load-source %S) (agent-q::xref-index-file %S t) %S)"
                                              (expand-file-name file) (expand-file-name file)
                                              (expand-file-name file)))
                          (lambda (result)
                            (if (plist-get result :success)
                                (message "Loaded %s" file)
                              (sly-agent-q--show-result result)))))

(defun sly-agent-q-compile-and-load-file (file)
  "Save FILE, compile it with ECL's compiler and load it, showing the notes.
The compiler's warnings go on the forms they concern, as with
`sly-agent-q-compile-defun'; the file's definitions are indexed for
\\[xref-find-definitions]."
  (interactive (list (or buffer-file-name (user-error "This buffer visits no file"))))
  (let ((buffer (or (find-buffer-visiting file) (find-file-noselect file))))
    (with-current-buffer buffer
      (when (buffer-modified-p) (save-buffer))
      (let ((text (buffer-substring-no-properties (point-min) (point-max)))
            (file (expand-file-name file)))
        (message "Compiling %s..." file)
        (sly-agent-q-lisp--compile
         (point-min) (point-max) (list :form text :package "CL-USER")
         (lambda (result)
           (when (plist-get result :success)
             ;; Indexed for M-. and who-calls, as C-c C-l does: the
             ;; front end's own call, not in the audit log.
             (let ((sly-agent-q-call-origin sly-agent-q-ui-origin))
               (sly-agent-q-lisp--call "evaluate_lisp"
                                       (list :code (format "(agent-q::xref-index-file %S t)" file))
                                       #'ignore)))))))))

;;;; Documentation

(defun sly-agent-q-lisp--symbol-at-point ()
  "The symbol at point, as text, or nil."
  (when-let ((symbol (thing-at-point 'symbol t)))
    (string-remove-prefix "#'" (string-remove-prefix "'" symbol))))

(defun sly-agent-q-lisp--read-symbol (prompt)
  "Read a symbol name with PROMPT, defaulting to the one at point."
  (let ((default (sly-agent-q-lisp--symbol-at-point)))
    (read-string (if default (format "%s (default %s): " prompt default) (format "%s: " prompt))
                 nil nil default)))

(defun sly-agent-q-lisp--show-in (buffer-name result &optional lisp)
  "Show RESULT's text in a help window named BUFFER-NAME.
LISP non-nil: the text is Lisp code, fontified as such."
  (let ((text (or (plist-get result :content) (plist-get result :error) "")))
    (with-help-window buffer-name
      (princ text))
    (when lisp
      (with-current-buffer buffer-name
        (let ((inhibit-read-only t))
          (delay-mode-hooks (lisp-mode))
          (font-lock-ensure)
          (setq buffer-read-only t))))
    text))

(defun sly-agent-q-describe-symbol (symbol)
  "Describe the Lisp SYMBOL (describe_symbol), in the buffer's package."
  (interactive (list (sly-agent-q-lisp--read-symbol "Describe symbol")))
  (sly-agent-q-lisp--call "describe_symbol" (sly-agent-q-lisp--package-arguments (list :symbol symbol))
                          (lambda (result) (sly-agent-q-lisp--show-in "*sly-agent-q describe*" result))))

(defun sly-agent-q-apropos (pattern)
  "List the Lisp symbols whose names contain PATTERN (apropos_search)."
  (interactive (list (sly-agent-q-lisp--read-symbol "Apropos")))
  (sly-agent-q-lisp--call "apropos_search" (list :pattern pattern)
                          (lambda (result) (sly-agent-q-lisp--show-in "*sly-agent-q apropos*" result))))

(defun sly-agent-q-hyperspec-lookup (symbol)
  "Show the HyperSpec's page of SYMBOL: a local copy if any, else online."
  (interactive (list (sly-agent-q-lisp--read-symbol "HyperSpec")))
  (let ((name (downcase (car (last (split-string symbol ":" t))))))
    (if (and (fboundp 'hyperspec-lookup) (file-directory-p "/usr/share/doc/hyperspec"))
        (funcall 'hyperspec-lookup name)
      (browse-url (format sly-agent-q-hyperspec-url (url-hexify-string name))))))

(defun sly-agent-q-lisp--macroexpand (full)
  "Expand the form at point once, or fully when FULL."
  (let* ((start (save-excursion
                  (unless (eq (char-after) ?\() (backward-up-list 1 t t))
                  (point)))
         (text (buffer-substring-no-properties start (save-excursion (goto-char start) (forward-sexp) (point)))))
    (sly-agent-q-lisp--call "macroexpand_form"
                            (sly-agent-q-lisp--package-arguments (list :form text :full (if full t :false)) start)
                            (lambda (result)
                              (sly-agent-q-lisp--show-in "*sly-agent-q macroexpansion*" result t)))))

(defun sly-agent-q-macroexpand-1 ()
  "Show the form at point expanded once (macroexpand_form)."
  (interactive)
  (sly-agent-q-lisp--macroexpand nil))

(defun sly-agent-q-macroexpand-all ()
  "Show the form at point with every macro in it expanded."
  (interactive)
  (sly-agent-q-lisp--macroexpand t))

(defvar sly-agent-q-lisp--definitions)   ; M-. below

(defun sly-agent-q-lisp--xref-location (summary where)
  "The xref location of a definition SUMMARY (\"function NAME\") found WHERE.
WHERE is what who_calls and who_references say in parentheses: FILE:LINE,
FILE, or \"evaluated in the session\", for which the buffer and place it
was evaluated from are used when this Emacs knows them."
  (cond ((string-match "\\`\\(.+\\):\\([0-9]+\\)\\'" where)
         (xref-make-file-location (match-string 1 where) (string-to-number (match-string 2 where)) 0))
        ((file-name-absolute-p where)
         (xref-make-file-location where 1 0))
        (t
         (let* ((name (nth 1 (split-string summary " " t)))
                (key (and name (upcase (car (last (split-string name ":" t))))))
                (marker (and key (cl-find-if #'marker-buffer
                                             (gethash key sly-agent-q-lisp--definitions)))))
           (if marker
               (xref-make-buffer-location (marker-buffer marker) (marker-position marker))
             (xref-make-bogus-location
              (format "%s was %s, from no buffer this Emacs knows: no place to go" summary where)))))))

(defun sly-agent-q-lisp--xref-items (text)
  "Return the xref items of the definitions listed in TEXT.
TEXT is the answer of who_calls.
Its lines \"- KIND NAME [QUALIFIER] (WHERE)\" each become an item."
  (let ((items nil))
    (dolist (line (split-string text "\n" t))
      (when (string-match "\\`- \\(.+\\) (\\([^()]+\\))\\'" line)
        (let ((summary (match-string 1 line))
              (where (match-string 2 line)))
          (push (xref-make summary (sly-agent-q-lisp--xref-location summary where)) items))))
    (nreverse items)))

(defun sly-agent-q-lisp--show-xrefs (result from)
  "Show RESULT, a cross-reference answer, with xref, asked FROM a marker.
RESULT comes from the tool who_calls or who_references.
FROM goes on xref's marker stack, so \\[xref-pop-marker-stack] comes back.
In *xref*, RET, \\<xref--xref-buffer-mode-map>\\[xref-next-line] and \\[xref-prev-line] go to
the definitions; an answer that lists none is a message."
  (let* ((text (or (plist-get result :content) (plist-get result :error) ""))
         (items (and (plist-get result :success) (sly-agent-q-lisp--xref-items text))))
    (if (null items)
        (message "%s" (string-trim text))
      (when (marker-buffer from) (xref-push-marker-stack from))
      (if (fboundp 'xref-show-xrefs)    ; Emacs 29
          (xref-show-xrefs (lambda () items) nil)
        (funcall xref-show-xrefs-function (lambda () items) `((window . ,(selected-window)))))
      (message "%s" (car (split-string text "\n"))))))

(defun sly-agent-q-who-calls (function)
  "List the functions that call FUNCTION, as SLY's xref.
The answer comes from the who_calls tool.
They are shown in *xref*, where RET goes to each one's definition: its
file and line, or the buffer it was evaluated from."
  (interactive (list (sly-agent-q-lisp--read-symbol "Who calls")))
  (let ((from (point-marker)))
    (sly-agent-q-lisp--call "who_calls" (sly-agent-q-lisp--package-arguments (list :function function))
                            (lambda (result) (sly-agent-q-lisp--show-xrefs result from)))))

(defun sly-agent-q-who-references (symbol)
  "List the functions that refer to the global variable SYMBOL (who_references).
They are shown in *xref*, as `sly-agent-q-who-calls' shows callers."
  (interactive (list (sly-agent-q-lisp--read-symbol "Who references")))
  (let ((from (point-marker)))
    (sly-agent-q-lisp--call "who_references" (sly-agent-q-lisp--package-arguments (list :symbol symbol))
                            (lambda (result) (sly-agent-q-lisp--show-xrefs result from)))))

(defun sly-agent-q-inspect (form)
  "Evaluate FORM and inspect its value in *sly-agent-q inspector*.
FORM is read in the buffer's package.  Each part of the value is a
button that inspects it (see `sly-agent-q-inspector-mode')."
  (interactive (list (read-string "Inspect value of: " (sly-agent-q-lisp--symbol-at-point))))
  (sly-agent-q-lisp--check-balanced form)
  (sly-agent-q-inspector-show (format "(progn %s)" form)
                              (plist-get (sly-agent-q-lisp--package-arguments nil) :package)))

(defun sly-agent-q-switch-to-repl ()
  "Switch to the REPL on the same Lisp session, starting it if needed.
The REPL's \\<sly-agent-q-repl-mode-map>\\[sly-agent-q-repl-switch-to-lisp-buffer] comes back to this buffer."
  (interactive)
  (setq sly-agent-q-repl--last-lisp-buffer (current-buffer))
  (sly-agent-q-repl))

(defun sly-agent-q-reindent-defun (&optional fill)
  "Reindent the top-level form at point, as SLY's `sly-reindent-defun'.
In a comment or a string, or with a prefix argument FILL, fill the
paragraph instead."
  (interactive "P")
  (if (or fill (nth 8 (syntax-ppss)))
      (fill-paragraph)
    (save-excursion
      (let ((bounds (sly-agent-q--defun-bounds)))
        (indent-region (car bounds) (cdr bounds))))))

;;;; M-. : definitions

(defvar sly-agent-q-lisp--definitions (make-hash-table :test #'equal)
  "Definitions evaluated from buffers: upcased name -> list of markers.")

(defun sly-agent-q-lisp--remember-definitions (text position)
  "Remember where the definitions in TEXT, from POSITION on, are."
  (when (and position (not (string-empty-p text)))
    (let ((buffer (current-buffer))
          (case-fold-search t))
      (with-temp-buffer
        (insert text)
        (goto-char (point-min))
        (while (re-search-forward "^[ \t]*(\\(?:cl:\\)?def[a-z-]*[ \t\n]+(?\\(?:setf[ \t]+\\)?\\([^ \t\n()]+\\)" nil t)
          (let ((name (upcase (car (last (split-string (match-string 1) ":" t)))))
                (offset (1- (match-beginning 0))))
            (with-current-buffer buffer
              (let ((marker (copy-marker (+ position offset))))
                (puthash name (cons marker (cl-remove-if (lambda (m) (or (null (marker-buffer m))
                                                                          (and (eq (marker-buffer m) buffer)
                                                                               (= m marker))))
                                                         (gethash name sly-agent-q-lisp--definitions)))
                         sly-agent-q-lisp--definitions)))))))))

(defun sly-agent-q-lisp--file-definitions (name package)
  "Return where the session has NAME (read in PACKAGE) defined in files.
A list of (KIND FILE LINE) from the session's index, else the source
file ECL recorded for the function (with LINE nil and a character
POSITION as fourth element), else (:ecl PACKAGE) for a function of ECL's
own of which ECL recorded no source, or nil.  PACKAGE is the name an
`in-package' form gives (\"bb\" for (in-package :bb)), nil for CL-USER.
The symbol is looked up with FIND-SYMBOL in PACKAGE
\(`agent-q::definition-locations'): looking a name up never interns it."
  (let* ((code (format "(agent-q::definition-locations %S %S)"
                       (substring-no-properties name) (and package (substring-no-properties package))))
         (result (car (let ((sly-agent-q-call-origin sly-agent-q-ui-origin)) ; not the person's evaluation
                        (sly-agent-q-execute-tool-calls
                         (list (list :id "xref" :name "evaluate_lisp" :arguments (list :code code :timeout 2)))))))
         (content (plist-get result :content)))
    (when (and (plist-get result :success) (string-prefix-p "=> " content))
      (condition-case nil
          (let ((data (car (read-from-string (substring content 3)))))
            (and (listp data) data))
        (error nil)))))

(defun sly-agent-q-lisp--xref-backend ()
  "The xref backend of `sly-agent-q-lisp-mode'."
  'sly-agent-q)

(cl-defmethod xref-backend-identifier-at-point ((_backend (eql sly-agent-q)))
  "The Lisp symbol at point, as typed (package prefix included)."
  (sly-agent-q-lisp--symbol-at-point))

(defun sly-agent-q-lisp--file-location (entry)
  "The xref location of ENTRY, (KIND FILE LINE [POSITION])."
  (if (nth 2 entry)
      (xref-make-file-location (nth 1 entry) (nth 2 entry) 0)
    (let ((buffer (find-file-noselect (nth 1 entry))))
      (xref-make-buffer-location buffer (with-current-buffer buffer
                                          (min (point-max) (1+ (nth 3 entry))))))))

(cl-defmethod xref-backend-definitions ((_backend (eql sly-agent-q)) identifier)
  "Return where IDENTIFIER is defined.
The buffers it was evaluated from, else the files the session loaded it from."
  (let* ((name (upcase (car (last (split-string identifier ":" t)))))
         (package (sly-agent-q--buffer-package))
         (here (delq nil (mapcar (lambda (marker)
                                   (when (marker-buffer marker)
                                     (xref-make (format "%s (evaluated from %s)" identifier (buffer-name (marker-buffer marker)))
                                                (xref-make-buffer-location (marker-buffer marker) (marker-position marker)))))
                                 (gethash name sly-agent-q-lisp--definitions))))
         (found (and (null here)
                     (if (sly-agent-q--lisp-busy-p)
                         ;; Asking would wait behind the running evaluation.
                         (user-error "Lisp is busy (an evaluation is running): xref (M-.) can look %s up when it is done"
                                     identifier)
                       (sly-agent-q-lisp--file-definitions identifier package))))
         (files (and (consp (car found))
                     (mapcar (lambda (entry)
                               (xref-make (format "(%s %s)" (nth 0 entry) identifier)
                                          (sly-agent-q-lisp--file-location entry)))
                             found))))
    (cond ((or here files) (append here files))
          ((and (symbolp (car found)) (string= (upcase (symbol-name (car found))) ":ECL"))
           (user-error "%s is part of ECL itself (package %s): ECL records no source location for its built-in functions, and the Debian ecl package ships no Lisp sources; C-c C-d d describes it"
                       identifier (cadr found)))
          (t (user-error "No source known for %s: it was not loaded from a file or evaluated from a buffer in this session"
                         identifier)))))

(cl-defmethod xref-backend-identifier-completion-table ((_backend (eql sly-agent-q)))
  "Return symbols of the live image, for `completion-at-point'.
Read in the package of the buffer `M-.' was typed in; nothing while Lisp
is busy (the prompt then takes what is typed)."
  (completion-table-dynamic
   (lambda (prefix)
     (unless (sly-agent-q--lisp-busy-p)
       (sly-agent-q-completion--candidates prefix)))
   t))

;;;; The mode

(defvar sly-agent-q-lisp-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-x C-e") #'sly-agent-q-eval-last-sexp)
    (define-key map (kbd "C-M-x") #'sly-agent-q-eval-defun)
    (define-key map (kbd "C-c C-r") #'sly-agent-q-eval-region)
    (define-key map (kbd "C-c C-c") #'sly-agent-q-compile-defun)
    (define-key map (kbd "C-c C-k") #'sly-agent-q-compile-and-load-file)
    (define-key map (kbd "C-c C-l") #'sly-agent-q-load-file)
    (define-key map (kbd "C-c C-z") #'sly-agent-q-switch-to-repl)
    (define-key map (kbd "C-c M-q") #'sly-agent-q-reindent-defun)
    (define-key map (kbd "C-c C-b") #'sly-agent-q-interrupt)
    (define-key map (kbd "C-c C-d d") #'sly-agent-q-describe-symbol)
    (define-key map (kbd "C-c C-d a") #'sly-agent-q-apropos)
    (define-key map (kbd "C-c C-d h") #'sly-agent-q-hyperspec-lookup)
    (define-key map (kbd "C-c RET") #'sly-agent-q-macroexpand-1)
    (define-key map (kbd "C-c M-m") #'sly-agent-q-macroexpand-all)
    (define-key map (kbd "C-c C-w c") #'sly-agent-q-who-calls)
    (define-key map (kbd "C-c C-w r") #'sly-agent-q-who-references)
    (define-key map (kbd "C-c C-v i") #'sly-agent-q-inspect)
    (define-key map (kbd "M-n") #'sly-agent-q-next-note)
    (define-key map (kbd "M-p") #'sly-agent-q-previous-note)
    map)
  "Keymap of `sly-agent-q-lisp-mode': SLY's keys.")

(defun sly-agent-q-lisp--lighter ()
  "The mode line text: the buffer's package and the session's state."
  (format " AQ[%s%s]" (or (sly-agent-q--buffer-package) "CL-USER")
          (if (> sly-agent-q-lisp--running 0) " running" "")))

;;;###autoload
(define-minor-mode sly-agent-q-lisp-mode
  "SLY's keys in a Lisp buffer, on the ECL inside this Emacs.
Evaluation and compilation do not block Emacs; results show in the echo
area.  \\[xref-find-definitions] finds definitions loaded from files or
evaluated from buffers.
\\{sly-agent-q-lisp-mode-map}"
  :lighter (:eval (sly-agent-q-lisp--lighter))
  :keymap sly-agent-q-lisp-mode-map
  :group 'sly-agent-q-lisp
  (if sly-agent-q-lisp-mode
      (progn
        (add-hook 'xref-backend-functions #'sly-agent-q-lisp--xref-backend nil t)
        (add-hook 'completion-at-point-functions #'sly-agent-q-completion-at-point nil t)
        (add-hook 'eldoc-documentation-functions #'sly-agent-q-eldoc-function nil t)
        (eldoc-mode 1))
    (remove-hook 'xref-backend-functions #'sly-agent-q-lisp--xref-backend t)
    (remove-hook 'completion-at-point-functions #'sly-agent-q-completion-at-point t)
    (remove-hook 'eldoc-documentation-functions #'sly-agent-q-eldoc-function t)))

;;;###autoload
(defun sly-agent-q-lisp-mode-maybe ()
  "Turn on `sly-agent-q-lisp-mode' unless SLY or SLIME serves this buffer.
Only in `lisp-mode' buffers, for `global-sly-agent-q-lisp-mode' (or
`lisp-mode-hook'); `sly-agent-q-lisp-mode-in-lisp-buffers' nil stops it."
  (when (and sly-agent-q-lisp-mode-in-lisp-buffers
             (derived-mode-p 'lisp-mode)
             (not (bound-and-true-p sly-mode))
             (not (bound-and-true-p slime-mode)))
    (sly-agent-q-lisp-mode 1)))

;;;###autoload
(define-globalized-minor-mode global-sly-agent-q-lisp-mode sly-agent-q-lisp-mode
  sly-agent-q-lisp-mode-maybe
  :group 'sly-agent-q-lisp)

(provide 'sly-agent-q-lisp-mode)

;;; sly-agent-q-lisp-mode.el ends here
