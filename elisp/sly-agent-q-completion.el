;;; sly-agent-q-completion.el --- Symbol completion and eldoc from the live image -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `sly-agent-q-completion-at-point' completes Common Lisp symbols
;; (package-qualified too) from the live ECL image, annotated with what
;; they name; it goes through the standard `completion-at-point-functions'
;; interface, so company and corfu use it as they are.
;; `sly-agent-q-eldoc-function' shows the arglist of the operator at
;; point, its current argument highlighted.  Both ask the session's
;; tools (apropos_search, function_arglist), which leave the REPL's `*'
;; and `+' alone; neither waits behind a running evaluation: completion
;; offers nothing then, and eldoc answers when the session is free.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-async)
(require 'sly-agent-q-commands)

(defun sly-agent-q-completion--package ()
  "The package completion and eldoc read in: the buffer's, else CL-USER."
  (or (sly-agent-q--buffer-package)
      (and (boundp 'sly-agent-q-repl--package) (derived-mode-p 'comint-mode) sly-agent-q-repl--package)
      "CL-USER"))

(defun sly-agent-q-completion--matches (name package accessible)
  "Symbols of PACKAGE whose names start with NAME: a list of (NAME . KIND).
Those whose home is PACKAGE or, when ACCESSIBLE, those its code can name
unqualified (its own, imported, inherited from the packages it uses).
Each NAME is the symbol's own name, without its package.  One
apropos_search, which searches sorted indexes of the packages' names,
not the packages themselves.  :no-package when PACKAGE does not exist."
  (let ((matches nil))
    (dolist (result (let ((sly-agent-q-call-origin sly-agent-q-ui-origin)) ; the front end's own
                      (sly-agent-q-execute-tool-calls
                       (list (list :id "complete" :name "apropos_search"
                                   :arguments (list :pattern name :prefix t :limit 500 :package package
                                                    :accessible (if accessible t :false)))))))
      (if (not (plist-get result :success))
          (setq matches :no-package)
        (let ((content (or (plist-get result :content) ""))
              (start 0))
          ;; Past the first line, the count: one PKG:NAME [kinds] a line.
          (when (string-match "\n" content)
            (setq start (match-end 0))
            (while (string-match "^[^: \n]*::?\\([^ \n]+\\)\\(?: \\[\\([^]\n]*\\)\\]\\)?$" content start)
              (push (cons (match-string 1 content) (match-string 2 content)) matches)
              (setq start (match-end 0)))))))
    (if (listp matches) (nreverse matches) matches)))

(defun sly-agent-q-completion--candidates (prefix)
  "Completion candidates for PREFIX, each with a `sly-agent-q-kind' property."
  (let* ((case-fold-search t)
         (qualified (string-match "\\`\\([^:]*\\)\\(::?\\)\\(.*\\)\\'" prefix))
         (typed-package (and qualified (match-string 1 prefix)))
         (package (and qualified (upcase typed-package)))
         (written-prefix (and qualified (concat (downcase typed-package) (match-string 2 prefix))))
         (name (if qualified (match-string 3 prefix) prefix))
         (home (upcase (sly-agent-q-completion--package)))
         (candidates nil))
    (when (or qualified (>= (length name) 1))
      ;; Searching only the packages that count is what keeps this fast:
      ;; all of a 40,000-symbol image took 18 ms, the buffer's package and
      ;; those it uses 1-2 ms.
      (dolist (match (if qualified
                         (let ((matches (sly-agent-q-completion--matches
                                         name (if (string-empty-p package) "KEYWORD" package) nil)))
                           (and (listp matches) matches))
                       (let ((matches (sly-agent-q-completion--matches name home t)))
                         ;; A buffer whose package is not made yet: CL's.
                         (if (eq matches :no-package)
                             (let ((cl (sly-agent-q-completion--matches name "COMMON-LISP" t)))
                               (and (listp cl) cl))
                           matches))))
        (let ((symbol-name (car match)))
          (when (string-prefix-p name symbol-name t)
            (push (propertize (if qualified (concat written-prefix (downcase symbol-name)) (downcase symbol-name))
                              'sly-agent-q-kind (cdr match))
                  candidates)))))
    (delete-dups (nreverse candidates))))

;;;###autoload
(defun sly-agent-q-completion-at-point ()
  "Complete the Common Lisp symbol at point from the live image.
For `completion-at-point-functions'.  Offers nothing while Lisp is busy."
  (let ((bounds (bounds-of-thing-at-point 'symbol)))
    (when (and bounds (not (sly-agent-q--lisp-busy-p)))
      (let* ((start (car bounds)) (end (cdr bounds))
             (prefix (string-remove-prefix "#'" (string-remove-prefix "'" (buffer-substring-no-properties start end))))
             (start (- end (length prefix)))
             (candidates (sly-agent-q-completion--candidates prefix)))
        (when candidates
          (list start end candidates
                :exclusive 'no
                :annotation-function
                (lambda (candidate)
                  (let ((kind (get-text-property 0 'sly-agent-q-kind candidate)))
                    (and kind (concat " " kind))))
                :company-kind
                (lambda (candidate)
                  (let ((kind (or (get-text-property 0 'sly-agent-q-kind candidate) "")))
                    (cond ((string-match-p "macro" kind) 'keyword)
                          ((string-match-p "function\\|generic" kind) 'function)
                          ((string-match-p "class\\|type" kind) 'class)
                          ((string-match-p "variable\\|constant" kind) 'variable)
                          (t 'text))))))))))

;;;; eldoc

(defun sly-agent-q-eldoc--context ()
  "The operator of the form around point and the argument point is on, or nil."
  (save-excursion
    (condition-case nil
        (let ((index 0) (origin (point)))
          (backward-up-list 1 t t)
          (when (eq (char-after) ?\()
            (forward-char)
            (let ((operator (thing-at-point 'symbol t)))
              (when operator
                (forward-sexp)
                (while (progn (forward-comment (buffer-size))
                              (and (< (point) origin)
                                   (condition-case nil (progn (forward-sexp) t) (scan-error nil))
                                   (<= (point) origin)))
                  (cl-incf index))
                (cons operator index)))))
      (error nil))))

(defun sly-agent-q-eldoc--highlight (arglist index)
  "Return ARGLIST (text) with one argument highlighted.
That is the required or optional argument at position INDEX."
  (condition-case nil
      (with-temp-buffer
        (set-syntax-table lisp-mode-syntax-table)
        (insert arglist)
        (goto-char (point-min))
        (down-list)
        (forward-sexp)                  ; the operator
        (let ((position 0) (done nil))
          (while (and (not done) (progn (forward-comment (buffer-size)) (not (looking-at-p ")"))))
            (let ((start (point)))
              (forward-sexp)
              (let ((item (buffer-substring start (point))))
                (cond ((member item '("&key" "&rest" "&body" "&aux" "&allow-other-keys")) (setq done t))
                      ((string-prefix-p "&" item))
                      (t (when (= position index)
                           (add-face-text-property start (point) 'eldoc-highlight-function-argument)
                           (setq done t))
                         (cl-incf position))))))
          (buffer-string)))
    (error arglist)))

;;;###autoload
(defun sly-agent-q-eldoc-function (callback &rest _)
  "Show the arglist of the operator at point through CALLBACK (eldoc).
Asked without blocking: the answer comes when the session is free."
  (let ((context (sly-agent-q-eldoc--context)))
    (when (and context (not (sly-agent-q--lisp-busy-p)))
      (let ((package (sly-agent-q-completion--package))
            ;; The front end's own look-up: not logged, and an unknown
            ;; operator is no failed call.
            (sly-agent-q-call-origin sly-agent-q-ui-origin))
        (sly-agent-q-execute-tool-calls-async
         (list (list :id "eldoc" :name "function_arglist"
                     :arguments (list :function (car context) :package package)))
         (lambda (results)
           (let ((result (car results)))
             (when (plist-get result :success)
               (let ((arglist (car (split-string (plist-get result :content) "\n"))))
                 (when (string-prefix-p "(" arglist)
                   (funcall callback (sly-agent-q-eldoc--highlight arglist (cdr context))
                            :thing (car context) :face 'font-lock-function-name-face)))))))
        t))))

(provide 'sly-agent-q-completion)

;;; sly-agent-q-completion.el ends here
