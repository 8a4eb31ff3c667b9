;;; sly-agent-q-form-edit.el --- edit_form and insert_form: top-level forms edited by structure -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; edit_form replaces one top-level form of a Lisp file, found by its
;; kind and name (`defun foo', `defmethod foo :around (integer t)'), not
;; by its text; insert_form puts new forms after a named one, or at the
;; end.  Both are Elisp-handled and dangerous, as propose_file_edit is,
;; and go through the same per-hunk review (sly-agent-q-review.el).
;;
;; The file's top-level forms are found with the syntax of
;; `lisp-mode-syntax-table': #| |# comments, #\( characters, strings and
;; |names| with parentheses in them, package prefixes and #+/#- feature
;; expressions (which stay with the form after them) are what they are in
;; Common Lisp.  Only each form's head is looked at (its operator, name,
;; a method's qualifiers and specializers), as text: the file is never
;; read by a Lisp reader on the Emacs side.
;;
;; Before anyone is asked (the tool's check), the new source is read by
;; the session as the compiler reads it and compiled for the compiler's
;; notes without being loaded (`agent-q::form-edit-check',
;; lisp/form-edit.lisp): text that does not read fails the call; the
;; notes are shown under the hunk in the review, and come back in the
;; result.  Accepted, the edit is applied by position, in the buffer
;; visiting the file as one undo step (saved when it had no unsaved
;; changes), and the forms written are evaluated in the session, in the
;; file's package, as an agent's code is (evaluate_lisp from the call's
;; door).
;;
;; The approval's answer (the review's) adds keys the model may not send:
;; `reviewed_lines' (the accepted text of the lines under review),
;; `original_lines' (those lines as reviewed) and propose_file_edit's
;; `hunks_total' / `hunks_applied'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'lisp-mode)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-buffer-tools)
(require 'sly-agent-q-review)

(defconst sly-agent-q--form-edit-answer-keys
  '("hunks_total" "hunks_applied" "reviewed_lines" "original_lines")
  "Keys the review's answer adds to a call of edit_form or insert_form.")

;;;; A file's top-level forms

(cl-defstruct (sly-agent-q--form (:constructor sly-agent-q--form-create)
                                 (:copier nil))
  "A top-level form of a file: where it is and what its head says."
  start        ; where it begins, its #+/#- feature expressions included
  form-start   ; where the form itself begins
  end          ; after its last character
  kind name    ; the operator and the second element, as written
  qualifiers   ; a method's qualifiers, as written
  specializers ; a method's specializers, as written (t for none), or nil
  package)     ; the package of the last in-package before it, or nil

(defun sly-agent-q--form-edit-sexps (from limit)
  "The (START . END) of the sexps from FROM to the end of the list, at most LIMIT."
  (save-excursion
    (goto-char from)
    (let ((sexps '()))
      (while (and (< (length sexps) limit)
                  (progn (forward-comment (buffer-size))
                         (not (or (eobp) (eq (char-after) ?\))))))
        (let ((start (point)) (end (scan-sexps (point) 1)))
          (unless end (setq limit 0))
          (when end
            (push (cons start end) sexps)
            (goto-char end))))
      (nreverse sexps))))

(defun sly-agent-q--form-edit-text-of (bounds)
  "The text between BOUNDS, (START . END), without properties."
  (buffer-substring-no-properties (car bounds) (cdr bounds)))

(defun sly-agent-q--form-edit-list-p (bounds)
  "Non-nil when the sexp at BOUNDS is a list."
  (eq (char-after (car bounds)) ?\())

(defun sly-agent-q--form-edit-package-name (text)
  "The package name the designator TEXT of an in-package form names."
  (cond ((string-match "\\`\"\\(.*\\)\"\\'" text) (match-string 1 text))
        ((string-match "\\`\\(?:#:\\|:\\|'\\)?|\\(.*\\)|\\'" text) (match-string 1 text))
        (t (upcase (replace-regexp-in-string "\\`\\(?:#:\\|:\\|'\\)" "" text)))))

(defun sly-agent-q--form-edit-head (form-start)
  "The head of the list form at FORM-START: (KIND NAME QUALIFIERS SPECIALIZERS).
Texts as written; SPECIALIZERS only for a method."
  (let* ((items (sly-agent-q--form-edit-sexps (1+ form-start) 64))
         (kind (and items (not (sly-agent-q--form-edit-list-p (car items)))
                    (sly-agent-q--form-edit-text-of (car items))))
         (name-bounds (cadr items))
         (name (and name-bounds (sly-agent-q--form-edit-text-of name-bounds)))
         (qualifiers '()) (specializers nil))
    ;; (defstruct (point (:conc-name p-)) …): the name is the list's first.
    (when (and name-bounds (sly-agent-q--form-edit-list-p name-bounds) kind
               (member (sly-agent-q--form-edit-normal kind) '("defstruct" "define-condition")))
      (let ((first (car (sly-agent-q--form-edit-sexps (1+ (car name-bounds)) 1))))
        (when first (setq name (sly-agent-q--form-edit-text-of first)))))
    (when (and kind (equal (sly-agent-q--form-edit-normal kind) "defmethod"))
      (let ((rest (cddr items)))
        (while (and rest (not (sly-agent-q--form-edit-list-p (car rest))))
          (push (sly-agent-q--form-edit-text-of (pop rest)) qualifiers))
        (setq qualifiers (nreverse qualifiers))
        (when rest
          (setq specializers
                (cl-loop for parameter in (sly-agent-q--form-edit-sexps (1+ (car (car rest))) 256)
                         for text = (sly-agent-q--form-edit-text-of parameter)
                         until (string-prefix-p "&" text)
                         collect (if (sly-agent-q--form-edit-list-p parameter)
                                     (let ((parts (sly-agent-q--form-edit-sexps (1+ (car parameter)) 2)))
                                       (if (cadr parts) (sly-agent-q--form-edit-text-of (cadr parts)) "t"))
                                   "t"))))))
    (list kind name qualifiers specializers)))

(defun sly-agent-q--form-edit-forms ()
  "The top-level forms of the current buffer, in order.
The buffer's syntax table must be Lisp's.  Fails the call, saying
where, when a form does not end."
  (save-excursion
    (goto-char (point-min))
    (let ((forms '()) (package nil))
      (while (progn (forward-comment (buffer-size)) (not (eobp)))
        (let ((start (point)))
          (condition-case nil
              (progn
                ;; #+feature and #-feature belong to the form after them.
                (while (looking-at "#[+-]")
                  (goto-char (scan-sexps (+ (point) 2) 1))
                  (forward-comment (buffer-size)))
                (let* ((form-start (point))
                       (end (or (scan-sexps form-start 1) (point-max)))
                       (head (and (eq (char-after form-start) ?\() (sly-agent-q--form-edit-head form-start))))
                  (push (sly-agent-q--form-create
                         :start start :form-start form-start :end end
                         :kind (nth 0 head) :name (nth 1 head) :qualifiers (nth 2 head)
                         :specializers (nth 3 head) :package package)
                        forms)
                  (when (and (nth 0 head) (nth 1 head)
                             (equal (sly-agent-q--form-edit-normal (nth 0 head)) "in-package"))
                    (setq package (sly-agent-q--form-edit-package-name (nth 1 head))))
                  (goto-char end)))
            (scan-error
             (sly-agent-q-tool-fail
              "The file does not read as whole forms: the form that begins at line %d does not end (unbalanced parentheses or an unclosed string or #| comment). Fix the file first; check_syntax with its path says where."
              (line-number-at-pos start))))))
      (nreverse forms))))

(defun sly-agent-q--form-edit-normal (text)
  "TEXT, a symbol or list as written, normalized for comparing names.
Case folded (except inside |…|), package prefixes and #: dropped, spaces
made one."
  (let ((text (string-trim text)))
    (unless (string-search "|" text)
      (setq text (downcase text)))
    (setq text (replace-regexp-in-string "\\(?:#:\\|[^ \t\n()|:]*::?\\)\\([^ \t\n():]\\)" "\\1" text))
    (setq text (replace-regexp-in-string "[ \t\n]+" " " text))
    (setq text (replace-regexp-in-string "( " "(" (replace-regexp-in-string " )" ")" text)))
    (string-replace "|" "" text)))

;;;; What a call names

(defun sly-agent-q--form-edit-spec (kind name)
  "The form KIND and NAME (texts) designate: (KIND NAME QUALIFIERS SPECIALIZERS).
NAME is the name, then, for a method, its qualifiers and a list of
specializers (t for an unspecialized parameter), as in
\"foo :around (integer t)\"; QUALIFIERS is nil and SPECIALIZERS
`any' when the name gives none."
  (with-temp-buffer
    (set-syntax-table lisp-mode-syntax-table)
    (insert name)
    (let* ((items (condition-case nil
                      (sly-agent-q--form-edit-sexps (point-min) 64)
                    (scan-error (sly-agent-q-tool-fail "name %S does not read: unbalanced parentheses or quotes." name))))
           (rest (cdr items))
           (qualifiers '()) (specializers 'any))
      (unless items
        (sly-agent-q-tool-fail "name is empty: give the name of the definition, e.g. \"foo\" (for a method \"foo :around (integer t)\")."))
      (while (and rest (not (sly-agent-q--form-edit-list-p (car rest))))
        (push (sly-agent-q--form-edit-text-of (pop rest)) qualifiers))
      (when rest
        (setq specializers
              (mapcar #'sly-agent-q--form-edit-text-of
                      (sly-agent-q--form-edit-sexps (1+ (car (pop rest))) 256))))
      (when rest
        (sly-agent-q-tool-fail "name %S has text after its specializer list; write it as NAME [QUALIFIERS] [(SPECIALIZER …)]." name))
      (when (and (or qualifiers (listp specializers))
                 (not (equal (sly-agent-q--form-edit-normal kind) "defmethod")))
        (sly-agent-q-tool-fail "name %S has qualifiers or specializers, which only a defmethod has; give kind \"defmethod\" or the bare name." name))
      (list (sly-agent-q--form-edit-normal kind)
            (sly-agent-q--form-edit-normal (sly-agent-q--form-edit-text-of (car items)))
            (mapcar #'sly-agent-q--form-edit-normal (nreverse qualifiers))
            (if (listp specializers) (mapcar #'sly-agent-q--form-edit-normal specializers) 'any)))))

(defun sly-agent-q--form-edit-matches-p (form spec)
  "Non-nil when FORM is the definition SPEC describes.
SPEC as `sly-agent-q--form-edit-spec' makes it."
  (pcase-let ((`(,kind ,name ,qualifiers ,specializers) spec))
    (and (sly-agent-q--form-kind form) (sly-agent-q--form-name form)
         (equal (sly-agent-q--form-edit-normal (sly-agent-q--form-kind form)) kind)
         (equal (sly-agent-q--form-edit-normal (sly-agent-q--form-name form)) name)
         (let ((own (mapcar #'sly-agent-q--form-edit-normal (sly-agent-q--form-qualifiers form))))
           (if (eq specializers 'any)
               (or (null qualifiers) (equal own qualifiers))
             ;; With specializers: exactly these qualifiers (none: the primary method).
             (and (equal own qualifiers)
                  (equal (mapcar #'sly-agent-q--form-edit-normal (sly-agent-q--form-specializers form))
                         specializers)))))))

(defun sly-agent-q--form-edit-describe (form)
  "FORM as a candidate is listed: its head and its line."
  (let ((kind (sly-agent-q--form-kind form)))
    (format "line %d: (%s %s%s%s)%s"
            (line-number-at-pos (sly-agent-q--form-form-start form))
            (or kind "?") (or (sly-agent-q--form-name form) "")
            (mapconcat (lambda (q) (concat " " q)) (sly-agent-q--form-qualifiers form) "")
            (if (and kind (equal (sly-agent-q--form-edit-normal kind) "defmethod"))
                (format " (%s)" (string-join (sly-agent-q--form-specializers form) " "))
              "")
            (if (< (sly-agent-q--form-start form) (sly-agent-q--form-form-start form))
                (format " under %s" (string-trim (buffer-substring-no-properties
                                                  (sly-agent-q--form-start form)
                                                  (sly-agent-q--form-form-start form))))
              ""))))

(defun sly-agent-q--form-edit-head-text (form)
  "Return FORM's head as `sly-agent-q--form-edit-describe' writes it, no line."
  (let ((text (sly-agent-q--form-edit-describe form)))
    (substring text (+ 2 (string-search ":" text)))))

(defun sly-agent-q--form-edit-find (forms kind name file)
  "The one form of FORMS (of FILE) that KIND and NAME designate.
Fails the call, listing the candidates, when none or several do."
  (let* ((spec (sly-agent-q--form-edit-spec kind name))
         (found (cl-remove-if-not (lambda (form) (sly-agent-q--form-edit-matches-p form spec)) forms))
         (list-them (lambda (candidates)
                      (let ((shown (seq-take candidates 30)))
                        (concat (mapconcat (lambda (form) (concat "\n  " (sly-agent-q--form-edit-describe form)))
                                           shown "")
                                (if (> (length candidates) 30)
                                    (format "\n  … and %d more" (- (length candidates) 30))
                                  ""))))))
    (cond
     ((= (length found) 1) (car found))
     (found
      (sly-agent-q-tool-fail
       "%d top-level forms of %s match %s %s; nothing was proposed. Say which: for a method add its qualifiers and specializers to name (\"%s :around (integer t)\"; none written is the primary method). The candidates:%s"
       (length found) file kind name (nth 1 spec) (funcall list-them found)))
     (t
      (let* ((same-name (cl-remove-if-not (lambda (form)
                                            (and (sly-agent-q--form-name form)
                                                 (equal (sly-agent-q--form-edit-normal (sly-agent-q--form-name form))
                                                        (nth 1 spec))))
                                          forms))
             (same-kind (cl-remove-if-not (lambda (form)
                                            (and (sly-agent-q--form-kind form)
                                                 (equal (sly-agent-q--form-edit-normal (sly-agent-q--form-kind form))
                                                        (nth 0 spec))))
                                          forms)))
        (sly-agent-q-tool-fail
         "No top-level (%s %s) in %s; nothing was proposed.%s"
         kind name file
         (cond (same-name (concat " The forms named so:" (funcall list-them same-name)))
               (same-kind (format " Its %s forms:%s" kind (funcall list-them same-kind)))
               (t (format " It has no %s form; use insert_form to add one." kind)))))))))

;;;; The plan of an edit

(cl-defstruct (sly-agent-q--form-plan (:constructor sly-agent-q--form-plan-create)
                                      (:copier nil))
  "Where an edit_form or insert_form call changes its file, and to what."
  file buffer  ; the true file name, and the buffer whose text counts (or nil)
  start end    ; the whole lines under review, in that text
  original     ; their text
  modified     ; their text with the edit
  line prefix suffix form-original form-modified ; the review's view
  eval-start   ; where the forms to evaluate start, relative to START
  package      ; the package the new forms are read in, or nil (CL-USER)
  description)

(defun sly-agent-q--form-edit-source (args)
  "The new_source of ARGS, trimmed; fails the call when it is empty."
  (let ((source (string-trim (or (gethash "new_source" args) "") "[ \t\n\r]+" "[ \t\n\r]+")))
    (when (string-empty-p source)
      (sly-agent-q-tool-fail "new_source is empty: give the whole new top-level form, e.g. \"(defun foo (x) (1+ x))\"."))
    source))

(defun sly-agent-q--form-edit-plan (tool args &optional approved)
  "The plan of the call of TOOL (edit_form or insert_form) with ARGS.
APPROVED non-nil: the call was approved (see `sly-agent-q--resolve-path')."
  (let* ((file (sly-agent-q--resolve-path (gethash "path" args) approved))
         (visitor (find-buffer-visiting file))
         (buffer (and visitor (buffer-modified-p visitor) visitor))
         (source (sly-agent-q--form-edit-source args)))
    (sly-agent-q--check-readable file)
    (sly-agent-q--check-writable file)
    (with-temp-buffer
      (if buffer
          (insert-buffer-substring-no-properties buffer)
        (sly-agent-q--insert-file file))
      (set-syntax-table lisp-mode-syntax-table)
      (let ((forms (sly-agent-q--form-edit-forms))
            (after (gethash "after" args)))
        (cl-flet ((whole-line-end (position)
                    (save-excursion (goto-char position)
                                    (if (search-forward "\n" nil t) (point) (point-max))))
                  (line-start (position)
                    (save-excursion (goto-char position) (line-beginning-position))))
          (if (equal tool "edit_form")
              (let* ((kind (or (gethash "kind" args) ""))
                     (form (progn
                             (when (string-empty-p (string-trim kind))
                               (sly-agent-q-tool-fail "kind is empty: give the definition's operator, e.g. \"defun\", \"defmethod\", \"defclass\"."))
                             (sly-agent-q--form-edit-find forms kind (or (gethash "name" args) "") file)))
                     (start (line-start (sly-agent-q--form-start form)))
                     (end (whole-line-end (sly-agent-q--form-end form)))
                     (prefix (buffer-substring-no-properties start (sly-agent-q--form-form-start form)))
                     (suffix (buffer-substring-no-properties (sly-agent-q--form-end form) end))
                     (old (buffer-substring-no-properties (sly-agent-q--form-form-start form)
                                                          (sly-agent-q--form-end form))))
                (when (equal old source)
                  (sly-agent-q-tool-fail "new_source is the form as it is (%s): there is nothing to change."
                                         (sly-agent-q--form-edit-describe form)))
                (sly-agent-q--form-plan-create
                 :file file :buffer buffer :start start :end end
                 :original (concat prefix old suffix) :modified (concat prefix source suffix)
                 :line (line-number-at-pos start) :prefix prefix :suffix suffix
                 :form-original old :form-modified source
                 :eval-start (- (sly-agent-q--form-start form) start)
                 :package (sly-agent-q--form-package form)
                 :description (format "edit_form: %s" (sly-agent-q--form-edit-head-text form))))
            (let* ((anchor (and after (not (string-empty-p (string-trim after)))
                                (with-temp-buffer
                                  (set-syntax-table lisp-mode-syntax-table)
                                  (insert after)
                                  (let ((first (car (sly-agent-q--form-edit-sexps (point-min) 1))))
                                    (unless first
                                      (sly-agent-q-tool-fail "after is empty: give \"KIND NAME\", e.g. \"defun foo\", or leave it out to insert at the end."))
                                    (cons (sly-agent-q--form-edit-text-of first)
                                          (string-trim (buffer-substring-no-properties (cdr first) (point-max))))))))
                   (form (and anchor
                              (progn
                                (when (string-empty-p (cdr anchor))
                                  (sly-agent-q-tool-fail "after %S names no form: give \"KIND NAME\", e.g. \"defun foo\" or \"defmethod foo :around (integer)\"." after))
                                (sly-agent-q--form-edit-find forms (car anchor) (cdr anchor) file))))
                   (position (if form (sly-agent-q--form-end form) (point-max)))
                   (start (cond ((= (point-min) (point-max)) (point-min))
                                ((and (= position (point-max)) (eq (char-before position) ?\n))
                                 (line-start (1- position)))
                                (t (line-start position))))
                   (end (whole-line-end position))
                   (old (buffer-substring-no-properties start end))
                   (new (concat old
                                (cond ((string-empty-p old) "")
                                      ((string-suffix-p "\n" old) "\n")
                                      (t "\n\n"))
                                source "\n"))
                   (last-package (and (not form) forms (car (last forms))))
                   (package (cond (form (sly-agent-q--form-package form))
                                  ((null last-package) nil)
                                  ((equal (sly-agent-q--form-edit-normal (or (sly-agent-q--form-kind last-package) ""))
                                          "in-package")
                                   (sly-agent-q--form-edit-package-name (sly-agent-q--form-name last-package)))
                                  (t (sly-agent-q--form-package last-package)))))
              (sly-agent-q--form-plan-create
               :file file :buffer buffer :start start :end end
               :original old :modified new
               :line (if (= start (point-min)) 1 (line-number-at-pos start)) :prefix "" :suffix ""
               :form-original old :form-modified new
               :eval-start (length old)
               :package package
               :description (if form
                                (format "insert_form after %s" (sly-agent-q--form-edit-head-text form))
                              "insert_form at the end")))))))))

;;;; The session reads and compiles the new source

(defvar sly-agent-q--form-edit-checked (make-hash-table :test 'equal)
  "What the session said of new source: (PACKAGE . TEXT) → its answer plist.
Filled by the tools' check, read by the review and the tool.")

(defun sly-agent-q--form-edit-session-check (text package &optional accepted)
  "Return the session's answer for TEXT in PACKAGE: (:forms N :kind K :notes L).
Fails the call when TEXT does not read.  Asked once per text and package.
ACCEPTED non-nil: TEXT is what the review accepted, about to be applied."
  (let ((key (cons package text)))
    (or (gethash key sly-agent-q--form-edit-checked)
        (let* ((code (let ((print-escape-newlines nil) (print-escape-control-characters nil)
                           (print-escape-nonascii nil) (print-escape-multibyte nil))
                       (format "(agent-q::form-edit-check %S %S)" (substring-no-properties text) package)))
               ;; The front end's own call: its code is ours, not the agent's.
               (result (car (let ((sly-agent-q-call-origin sly-agent-q-ui-origin))
                              (sly-agent-q-execute-tool-calls
                               (list (list :id "form-edit" :name "evaluate_lisp" :arguments (list :code code)))))))
               (content (or (plist-get result :content) ""))
               (answer (and (plist-get result :success)
                            (string-match "^=> " content)
                            (condition-case nil
                                (car (read-from-string content (match-end 0)))
                              (error nil)))))
          (unless (consp answer)
            (sly-agent-q-tool-fail "The Lisp session could not read the new source: %s" (car (split-string content "\n"))))
          (when (consp (plist-get answer :PROBLEMS))
            (sly-agent-q-tool-fail (if accepted
                                       "Nothing was applied: the hunks accepted in the review make text that does not read:\n%s"
                                     "The new source does not read (nothing was proposed):\n%s")
                                   (mapconcat (lambda (p) (concat "  " p)) (plist-get answer :PROBLEMS) "\n")))
          (let ((answer (cl-flet ((value (key) (let ((value (plist-get answer key)))
                                                 ;; Lisp's empty list reads as the symbol NIL.
                                                 (if (eq value 'NIL) nil value))))
                          (list :forms (value :FORMS) :kind (value :KIND) :notes (value :NOTES)))))
            (when (> (hash-table-count sly-agent-q--form-edit-checked) 100)
              (clrhash sly-agent-q--form-edit-checked))
            (puthash key answer sly-agent-q--form-edit-checked))))))

(defun sly-agent-q--form-edit-check (tool args)
  "The check of TOOL (edit_form or insert_form) with ARGS, run before any approval."
  (dolist (key sly-agent-q--form-edit-answer-keys)
    (when (gethash key args)
      (sly-agent-q-tool-fail "%s is set by the review of the edit, not by the caller; leave it out." key)))
  (let* ((plan (sly-agent-q--form-edit-plan tool args))
         (answer (sly-agent-q--form-edit-session-check (sly-agent-q--form-edit-source args)
                                                       (sly-agent-q--form-plan-package plan))))
    (when (and (equal tool "edit_form") (/= (plist-get answer :forms) 1))
      (sly-agent-q-tool-fail "new_source holds %d top-level forms; edit_form replaces one form with one. Put other new forms in with insert_form."
                             (plist-get answer :forms))))
  nil)

;;;; The review

(defvar-local sly-agent-q--form-edit-review nil
  "In a review of edit_form or insert_form: (REVIEW-ARGS . PLAN).")

(defun sly-agent-q--form-edit-review-buffer (tool args)
  "The review buffer of the call of TOOL with ARGS, every hunk unmarked.
Its compiler notes are shown under the first hunk."
  (let* ((plan (sly-agent-q--form-edit-plan tool args))
         (notes (plist-get (sly-agent-q--form-edit-session-check (sly-agent-q--form-edit-source args)
                                                                 (sly-agent-q--form-plan-package plan))
                           :notes))
         (review (make-hash-table :test 'equal)))
    (puthash "path" (sly-agent-q--form-plan-file plan) review)
    (puthash "original" (sly-agent-q--form-plan-form-original plan) review)
    (puthash "modified" (sly-agent-q--form-plan-form-modified plan) review)
    (puthash "description" (sly-agent-q--form-plan-description plan) review)
    (let ((buffer (sly-agent-q--review-buffer review
                                              (list (sly-agent-q--form-plan-line plan)
                                                    (sly-agent-q--form-plan-prefix plan)
                                                    (sly-agent-q--form-plan-suffix plan))
                                              notes)))
      (with-current-buffer buffer
        (setq-local sly-agent-q--form-edit-review (cons review plan)))
      buffer)))

(defun sly-agent-q--form-edit-review-answer (args buffer)
  "The approval answer for ARGS from the review in BUFFER, as it is marked."
  (with-current-buffer buffer
    (pcase-let* ((`(,review . ,plan) sly-agent-q--form-edit-review)
                 (decision (sly-agent-q--review-decision review)))
      (if (not (eq (car-safe decision) :modified))
          :denied
        (let* ((answer (cadr decision))
               (prefix (sly-agent-q--form-plan-prefix plan))
               (suffix (sly-agent-q--form-plan-suffix plan))
               (lines (if (equal (gethash "original" answer) (gethash "original" review))
                          (concat prefix (gethash "modified" answer) suffix)
                        ;; An edit changed the rest of the first or last line.
                        (gethash "modified" answer)))
               (new (copy-hash-table args)))
          (puthash "reviewed_lines" lines new)
          (puthash "original_lines" (sly-agent-q--form-plan-original plan) new)
          (puthash "hunks_total" (gethash "hunks_total" answer) new)
          (puthash "hunks_applied" (gethash "hunks_applied" answer) new)
          (list :modified new))))))

(defun sly-agent-q-form-edit-review (tool args)
  "Let the person review the edit the call of TOOL with ARGS proposes.
TOOL is edit_form or insert_form.  The per-hunk review of
propose_file_edit (`sly-agent-q-diff-mode'), with the compiler's notes
on the new source under the first hunk.  Returns the approval answer."
  (let ((buffer (condition-case err
                    (sly-agent-q--form-edit-review-buffer tool args)
                  (sly-agent-q-tool-failure
                   (message "sly-agent-q: %s" (cadr err))
                   nil))))
    (if (null buffer)
        :denied
      (sly-agent-q--run-review buffer (lambda () (sly-agent-q--form-edit-review-answer args buffer))))))

;;;; Applying it

(defun sly-agent-q--form-edit-replace (start end text)
  "Replace START..END of the current buffer (widened) with TEXT."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char start)
      (delete-region start end)
      (insert text))))

(defun sly-agent-q--form-edit-write (plan text reviewed)
  "Put TEXT in place of PLAN's lines; return what was done, as a sentence.
As propose_file_edit does: into the buffer visiting the file when
there is one (opened when REVIEWED, so that one undo takes it back),
saved when it had no unsaved changes; else the file is rewritten."
  (let* ((file (sly-agent-q--form-plan-file plan))
         (start (sly-agent-q--form-plan-start plan))
         (end (sly-agent-q--form-plan-end plan))
         (visitor (find-buffer-visiting file))
         (buffer (or visitor (and reviewed (find-file-noselect file)))))
    (cond
     ((null buffer)
      (let ((coding nil) (new nil))
        (with-temp-buffer
          (setq coding (sly-agent-q--insert-file file))
          (sly-agent-q--form-edit-replace start end text)
          (setq new (buffer-string)))
        (sly-agent-q--write-atomically file new coding)
        (format "The edit is applied to %s." file)))
     ((buffer-modified-p buffer)
      (with-current-buffer buffer
        (when buffer-read-only
          (sly-agent-q-tool-fail "Buffer %s, which visits %s, is read-only; nothing was applied." (buffer-name) file))
        (sly-agent-q--form-edit-replace start end text))
      (format "The edit is applied in buffer %s, which visits %s; it is not saved, because the buffer already had unsaved changes of the user's."
              (buffer-name buffer) file))
     (t
      (with-current-buffer buffer
        (unless (verify-visited-file-modtime buffer)
          (revert-buffer t t t))
        (let ((new (with-temp-buffer
                     (insert-buffer-substring-no-properties buffer)
                     (sly-agent-q--form-edit-replace start end text)
                     (buffer-string)))
              (coding (or buffer-file-coding-system 'utf-8-unix))
              (old-time (visited-file-modtime)))
          (when (vectorp (coding-system-eol-type coding))
            (setq coding (coding-system-change-eol-conversion coding 'unix)))
          ;; The file first: should that fail, the buffer is untouched.
          (sly-agent-q--write-atomically file new coding)
          (set-visited-file-modtime)
          (let ((inhibit-read-only t) (create-lockfiles nil))
            (sly-agent-q--form-edit-replace start end text))
          ;; Undoing it marks the old text unmodified at the old file's time
          ;; (see `sly-agent-q--propose-file-edit').
          (when (listp buffer-undo-list)
            (let ((time (if (equal old-time (visited-file-modtime)) -1 old-time)))
              (cl-loop for entry in buffer-undo-list
                       while entry
                       when (eq (car-safe entry) t) do (setcdr entry time))))
          (set-buffer-modified-p nil)))
      (format "The edit is applied to %s and saved; buffer %s shows it." file (buffer-name buffer))))))

(defun sly-agent-q--form-edit-reload (text package)
  "Evaluate TEXT, the forms written, in PACKAGE; a sentence saying how it went.
As an agent's code is evaluated: evaluate_lisp from the call's door."
  (let* ((result (car (sly-agent-q-execute-tool-calls
                       (list (list :id "form-edit-reload" :name "evaluate_lisp"
                                   :arguments (if package (list :code text :package package) (list :code text)))))))
         (content (string-trim (or (plist-get result :content) ""))))
    (if (plist-get result :success)
        (format "Reloaded in the session:\n%s" content)
      (format "Not reloaded in the session (the file is changed):\n%s" content))))

(defun sly-agent-q--form-edit-apply (tool args)
  "The handler of TOOL (edit_form or insert_form), run once ARGS are approved."
  (let* ((hunks (sly-agent-q--hunks args))
         (reviewed (gethash "reviewed_lines" args)))
    (when (and hunks (= (car hunks) 0))
      (sly-agent-q-tool-fail "%s" sly-agent-q--rejected-text))
    (let* ((plan (sly-agent-q--form-edit-plan tool args t))
           (text (or reviewed (sly-agent-q--form-plan-modified plan)))
           (original (gethash "original_lines" args))
           (eval-start (min (sly-agent-q--form-plan-eval-start plan) (length text)))
           (new-forms (if (string-prefix-p (substring (sly-agent-q--form-plan-original plan) 0
                                                      (min eval-start (length (sly-agent-q--form-plan-original plan))))
                                           text)
                          (substring text eval-start)
                        text))
           (package (sly-agent-q--form-plan-package plan)))
      (when (and original (not (equal original (sly-agent-q--form-plan-original plan))))
        (sly-agent-q-tool-fail
         "Nothing was applied: %s changed while the edit was being reviewed (the lines under review are not as they were). Read the file again before editing it again."
         (sly-agent-q--form-plan-file plan)))
      ;; What the review accepted must still read, as what was proposed did.
      (let ((answer (sly-agent-q--form-edit-session-check (string-trim new-forms) package t)))
        (let ((detail (sly-agent-q--form-edit-write plan text (and hunks t)))
              (notes (plist-get answer :notes)))
          (concat (if (and hunks (< (car hunks) (cdr hunks)))
                      (format "partially accepted: %d of %d hunks applied\n" (car hunks) (cdr hunks))
                    "accepted\n")
                  detail
                  (if (and hunks (< (car hunks) (cdr hunks)))
                      " The other hunks were rejected: do not propose them again."
                    "")
                  (if notes
                      (concat "\nCompiler notes on the new form:\n"
                              (mapconcat (lambda (note) (concat "  " note)) notes "\n"))
                    "")
                  "\n"
                  (sly-agent-q--form-edit-reload (string-trim new-forms) package)))))))

;;;; The tools

(defconst sly-agent-q--form-edit-name-syntax
  "NAME is the symbol as written in the file (package prefix optional, case ignored), or (setf NAME); \
for a method add its qualifiers and then its specializers in parentheses, one per required parameter, \
t for an unspecialized one: \"area\", \"area (circle)\", \"area :around (shape)\", \"(setf x) (t point)\", \
\"describe ((eql :foo) t)\". Without specializers every method of that name (with those qualifiers) matches."
  "How edit_form and insert_form name a form, for their descriptions.")

(defun sly-agent-q--define-form-edit-tools ()
  "Define the tools edit_form and insert_form."
  (sly-agent-q-define-tool
   "edit_form"
   (concat
    "Replace one top-level form of a Lisp file, found by its kind and name rather than by its text, \
for the user to review as a diff and accept or reject (as propose_file_edit). Use it to change a \
definition: give the whole new form. The new form is first read and compiled by the session (not \
loaded): text that does not read fails before the user is asked, and the compiler's notes are shown \
to the user with the diff and come back in the result. Accepted, the file is saved (one undo in its \
buffer takes the edit back) and the new definition is evaluated in the session, in the file's package. "
    sly-agent-q--form-edit-name-syntax
    " No match, or several, fails listing the candidates with their lines. Returns `accepted` or \
`partially accepted: K of N hunks applied`, then the notes and the evaluation's result, or fails with \
`rejected — STOP: do not retry this edit.`: do not propose the same change again. Only files inside \
the allowed directories.")
   '((:name "path" :type :string
            :description "The Lisp file: relative to the project root, or absolute inside the allowed directories.")
     (:name "kind" :type :string
            :description "The form's operator: \"defun\", \"defmethod\", \"defmacro\", \"defclass\", \"defvar\", \"defparameter\", \"defgeneric\", \"defstruct\", any definer.")
     (:name "name" :type :string
            :description "Which definition: \"foo\", \"(setf foo)\", for a method \"foo :around (integer t)\" (qualifiers, then one specializer per required parameter).")
     (:name "new_source" :type :string
            :description "The whole new top-level form that replaces it, exactly one form."))
   :required '("path" "kind" "name" "new_source")
   :safety-level :dangerous
   :categories '(:diff)
   :handler (lambda (args) (sly-agent-q--form-edit-apply "edit_form" args))
   :check (lambda (args) (sly-agent-q--form-edit-check "edit_form" args))
   :denied-message sly-agent-q--rejected-text)

  (sly-agent-q-define-tool
   "insert_form"
   (concat
    "Insert new top-level forms into a Lisp file, after a named form or at the end, for the user to \
review as a diff and accept or reject (as propose_file_edit). The new source is first read and \
compiled by the session (not loaded): text that does not read fails before the user is asked, and the \
compiler's notes are shown with the diff and come back in the result. Accepted, the file is saved \
(one undo in its buffer takes it back) and the new forms are evaluated in the session, in the file's \
package. `after` is \"KIND NAME\", e.g. \"defun foo\" or \"defmethod foo :around (integer)\"; "
    sly-agent-q--form-edit-name-syntax
    " Returns as edit_form does. Only files inside the allowed directories.")
   '((:name "path" :type :string
            :description "The Lisp file: relative to the project root, or absolute inside the allowed directories.")
     (:name "new_source" :type :string
            :description "The new top-level forms, e.g. \"(defun bar (x) (* 2 x))\".")
     (:name "after" :type :string
            :description "The form to insert after, as \"KIND NAME\" (\"defun foo\", \"defmethod foo (integer)\"). Default: at the end of the file."))
   :required '("path" "new_source")
   :safety-level :dangerous
   :categories '(:diff)
   :handler (lambda (args) (sly-agent-q--form-edit-apply "insert_form" args))
   :check (lambda (args) (sly-agent-q--form-edit-check "insert_form" args))
   :denied-message sly-agent-q--rejected-text))

;; Defined when the module loads (at the first call into it, not when
;; this file loads).  Defining Elisp tools does not boot Lisp.
(if (featurep 'sly-agent-q-module)
    (sly-agent-q--define-form-edit-tools)
  (add-hook 'sly-agent-q--module-load-hook #'sly-agent-q--define-form-edit-tools))

(provide 'sly-agent-q-form-edit)

;;; sly-agent-q-form-edit.el ends here
