;;; sly-agent-q-notes.el --- Compiler notes as overlays, as SLY shows them -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; After `C-c C-c' (compile defun) or `C-c C-k' (compile and load file)
;; the compiler's findings are shown on the forms they concern: an
;; overlay with a face and the message as help-echo.  `M-n' and `M-p' in
;; the Lisp buffer move between them and show the message, and
;; *sly-agent-q compilation* lists them with `compilation-mode' links.
;; Compiling a form again clears the notes on it first.
;;
;; compile_form's findings read "KIND: message", with "(line N)" (in the
;; compiled text) when ECL's compiler gave a position, or naming the
;; definition ("Undefined function F, called by G", "The variable X is
;; defined but never used (in G)"); each is put on the call, the variable
;; or the line it names, else on the whole form.

;;; Code:

(require 'cl-lib)
(require 'compile)

(defface sly-agent-q-note-warning-face
  '((((supports :underline (:style wave))) :underline (:style wave :color "red"))
    (t :inherit error))
  "Face of a compiler warning's form."
  :group 'sly-agent-q)

(defface sly-agent-q-note-style-warning-face
  '((((supports :underline (:style wave))) :underline (:style wave :color "orange"))
    (t :inherit warning))
  "Face of a compiler style warning's form."
  :group 'sly-agent-q)

(defconst sly-agent-q-notes--finding-regexp
  "^\\(ERROR\\|WARNING\\|STYLE-WARNING\\): \\(.*\\)$"
  "A finding in compile_form's text: its kind and message.")

(defun sly-agent-q-notes-parse (text)
  "The findings in compile_form's TEXT: a list of (KIND MESSAGE LINE).
LINE is the line of the compiled text the compiler named, or nil."
  (let ((findings '()) (start 0))
    (while (string-match sly-agent-q-notes--finding-regexp text start)
      (let ((kind (match-string 1 text))
            (message (match-string 2 text)))
        (setq start (match-end 0))
        (push (if (string-match "\\`\\(.*\\) (line \\([0-9]+\\))\\'" message)
                  (list kind (match-string 1 message) (string-to-number (match-string 2 message)))
                (list kind message nil))
              findings)))
    (nreverse findings)))

(defun sly-agent-q-notes--name-regexp (name)
  "A regexp for the symbol NAME as written, with or without its package."
  (let ((bare (car (last (split-string name ":" t)))))
    (concat "\\(?:[^ \t\n()'#`,:]*::?\\)?" (regexp-quote bare) "\\_>")))

(defun sly-agent-q-notes--definition (name start end)
  "The bounds (BEG . END) of the definition of NAME between START and END."
  (save-excursion
    (goto-char start)
    (let ((case-fold-search t))
      (when (re-search-forward (concat "(def[^ \t\n()]*[ \t\n]+(?\\(?:setf[ \t\n]+\\)?"
                                       (sly-agent-q-notes--name-regexp name))
                               end t)
        (goto-char (match-beginning 0))
        (cons (point) (or (ignore-errors (scan-sexps (point) 1)) end))))))

(defun sly-agent-q-notes--form-at-line (line start end)
  "The bounds of the form that begins on LINE of the text from START to END."
  (save-excursion
    (goto-char start)
    (forward-line (1- line))
    (skip-chars-forward " \t")
    (let ((here (min (point) end)))
      (if (eq (char-after here) ?\()
          (cons here (min end (or (ignore-errors (scan-sexps here 1)) (line-end-position))))
        (cons here (max (1+ here) (min end (line-end-position))))))))

(defun sly-agent-q-notes--locate (message line start end)
  "Where the finding MESSAGE (LINE, or nil) lies in the text from START to END."
  (let ((case-fold-search t))
    (save-excursion
      (cond
       ((string-match "\\`Undefined function \\(.+\\), called by \\(.+\\)\\'" message)
        (let ((callee (match-string 1 message))
              (definition (sly-agent-q-notes--definition (match-string 2 message) start end)))
          (when definition
            (goto-char (car definition))
            (forward-char 1)
            (when (re-search-forward (concat "(" (sly-agent-q-notes--name-regexp callee)) (cdr definition) t)
              (let ((beg (match-beginning 0)))
                (cons beg (or (ignore-errors (scan-sexps beg 1)) (match-end 0))))))))
       ((string-match "\\`The variable \\(.+\\) is defined but never used (in \\(.+\\))\\'" message)
        (let ((variable (match-string 1 message))
              (definition (sly-agent-q-notes--definition (match-string 2 message) start end)))
          (when definition
            (goto-char (car definition))
            (forward-char 1)
            (forward-sexp 2)          ; the definer and its name
            (when (re-search-forward (concat "\\_<" (sly-agent-q-notes--name-regexp variable))
                                     (cdr definition) t)
              (cons (match-beginning 0) (match-end 0))))))
       (line
        (let ((form (sly-agent-q-notes--form-at-line line start end)))
          ;; Within the form the compiler named, the call or the variable
          ;; the message names.
          (or (cond ((string-match "\\`Wrong number of arguments for function \\([^ ]+\\)" message)
                     (goto-char (car form))
                     (when (re-search-forward (concat "(" (sly-agent-q-notes--name-regexp (match-string 1 message)))
                                              (cdr form) t)
                       (let ((beg (match-beginning 0)))
                         (cons beg (or (ignore-errors (scan-sexps beg 1)) (match-end 0))))))
                    ((string-match "\\`Variable \\([^ ]+\\) was undefined" message)
                     (goto-char (car form))
                     (when (re-search-forward (concat "\\_<" (sly-agent-q-notes--name-regexp (match-string 1 message)))
                                              (cdr form) t)
                       (cons (match-beginning 0) (match-end 0)))))
              form)))))))

(defvar-local sly-agent-q-notes-compiled nil
  "When text of this buffer was last compiled with its notes shown, or nil.
A time, set by `sly-agent-q-notes-show' (C-c C-c, C-c C-k); get_diagnostics
says so when there are no notes.")

(defun sly-agent-q-notes-clear (&optional start end)
  "Remove the compiler notes between START and END (the whole buffer by default)."
  (remove-overlays (or start (point-min)) (or end (point-max)) 'sly-agent-q-note t))

(defun sly-agent-q-notes-show (text buffer start end)
  "Show compile_form's findings in TEXT on the forms of BUFFER from START to END.
START and END are markers or positions of the compiled text.  Returns
the list of notes as (KIND MESSAGE BEG END)."
  (with-current-buffer buffer
    (sly-agent-q-notes-clear start end)
    (setq sly-agent-q-notes-compiled (current-time))
    (cl-loop for (kind message line) in (sly-agent-q-notes-parse text)
             for place = (or (sly-agent-q-notes--locate message line start end)
                             (cons (sly-agent-q-notes--position start)
                                   (or (ignore-errors (scan-sexps (sly-agent-q-notes--position start) 1)) end)))
             collect (let ((overlay (make-overlay (car place) (cdr place) nil t nil)))
                       (overlay-put overlay 'sly-agent-q-note t)
                       (overlay-put overlay 'face (if (equal kind "STYLE-WARNING")
                                                      'sly-agent-q-note-style-warning-face
                                                    'sly-agent-q-note-warning-face))
                       (overlay-put overlay 'help-echo (format "%s: %s" kind message))
                       (overlay-put overlay 'evaporate t)
                       (list kind message (car place) (cdr place))))))

(defun sly-agent-q-notes--position (place)
  "PLACE, a marker or a position, as a position."
  (if (markerp place) (marker-position place) place))

(defun sly-agent-q-notes-list (notes buffer)
  "List NOTES of BUFFER in *sly-agent-q compilation*, with links."
  (let ((file (or (buffer-file-name buffer) (buffer-name buffer)))
        (lines (with-current-buffer buffer
                 (mapcar (lambda (note)
                           (save-excursion
                             (goto-char (nth 2 note))
                             (cons (line-number-at-pos) (1+ (current-column)))))
                         notes))))
    (with-current-buffer (get-buffer-create "*sly-agent-q compilation*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "Compiler notes for %s:\n\n" (buffer-name buffer)))
        (cl-loop for (kind message) in notes
                 for (line . column) in lines
                 do (insert (format "%s:%d:%d: %s: %s\n" file line column
                                    (if (equal kind "STYLE-WARNING") "warning" "error")
                                    (format "%s: %s" kind message))))
        (compilation-mode)
        (setq-local compilation-search-path (list (and (buffer-file-name buffer)
                                                       (file-name-directory (buffer-file-name buffer)))))))))

(defun sly-agent-q-notes--overlays ()
  "The compiler notes of this buffer, in buffer order."
  (sort (cl-remove-if-not (lambda (overlay) (overlay-get overlay 'sly-agent-q-note))
                          (overlays-in (point-min) (point-max)))
        (lambda (a b) (< (overlay-start a) (overlay-start b)))))

(defun sly-agent-q-next-note (&optional previous)
  "Move to the next compiler note and show its message (PREVIOUS: the one before)."
  (interactive)
  (let* ((notes (sly-agent-q-notes--overlays))
         (note (if previous
                   (car (last (cl-remove-if-not (lambda (o) (< (overlay-start o) (point))) notes)))
                 (cl-find-if (lambda (o) (> (overlay-start o) (point))) notes))))
    (if (not note)
        (message (if notes "No more compiler notes %s" "No compiler notes%s")
                 (if notes (if previous "before point" "after point") ""))
      (goto-char (overlay-start note))
      (message "%s" (overlay-get note 'help-echo)))))

(defun sly-agent-q-previous-note ()
  "Move to the previous compiler note and show its message."
  (interactive)
  (sly-agent-q-next-note t))

(provide 'sly-agent-q-notes)

;;; sly-agent-q-notes.el ends here
