;;; sly-agent-q-project-tools.el --- Tools that find their way around a project's files -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; The project tools of the agent: list_directory, search_files,
;; find_definitions and get_diagnostics.  They read and never write, so
;; they are safe (no door asks), and they are confined as read_file is:
;; a path is resolved to its true name and must lie inside
;; `sly-agent-q-allowed-directories' (elisp/sly-agent-q-files.el).
;;
;; Walking a directory never follows a symbolic link: a link is listed
;; (list_directory) and skipped otherwise, so no link leads a walk out
;; of the allowed directories or round in a cycle.  Directories named in
;; `sly-agent-q-skipped-directories' (.git, build trees, node_modules)
;; are listed but not entered.  Every answer is bounded: a count of
;; entries or matches, and `sly-agent-q-read-limit' characters, with a
;; marker saying what was left out.
;;
;; Paths in the answers are relative to the first allowed directory,
;; where a relative path given to read_file starts, so that an answer's
;; path can be passed on as it is.
;;
;; Like the buffer tools, these are Elisp-handled tools defined when
;; this file is loaded (which does not boot the Lisp runtime), run on
;; Emacs's main thread whoever calls them.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'seq)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-files)
(require 'lisp-mode)
(require 'sly-agent-q-notes)

(declare-function flymake-diagnostics "flymake" (&optional beg end))
(declare-function flymake-diagnostic-beg "flymake" (diag))
(declare-function flymake-diagnostic-type "flymake" (diag))
(declare-function flymake-diagnostic-text "flymake" (diag))

;;;; Options

(defcustom sly-agent-q-skipped-directories
  '(".git" ".hg" ".svn" "_darcs" ".jj" "node_modules" "build" "build-*" "_build" "__pycache__" ".cache")
  "Directories the project tools do not enter, as wildcards on their names.
list_directory lists them (marked as skipped) but not what they hold;
search_files and find_definitions do not look in them.  A wildcard
matches a directory's own name, as `wildcard-to-regexp' reads it."
  :type '(repeat string)
  :group 'sly-agent-q)

(defcustom sly-agent-q-search-file-size-limit (* 2 1024 1024)
  "Bytes a file may have for search_files and find_definitions to read it.
Larger files are skipped, and the answer counts them."
  :type 'integer
  :group 'sly-agent-q)

(defcustom sly-agent-q-search-file-count-limit 20000
  "Files that search_files and find_definitions look at, at most, per call.
A walk stops there (Emacs waits for it), and the answer says so."
  :type 'integer
  :group 'sly-agent-q)

(defcustom sly-agent-q-list-directory-limit 500
  "Entries that list_directory lists at most.
A longer listing stops there, and its last line says so."
  :type 'integer
  :group 'sly-agent-q)

;;;; Walking a directory

(defun sly-agent-q--relative-name (true &optional base)
  "The true name TRUE as the answers show it.
Relative to BASE, the first allowed directory by default (where a
relative path given to the file tools starts), when inside it; else
absolute."
  (let ((base (or base (car (sly-agent-q--allowed-roots)))))
    (cond ((equal base (file-name-as-directory true)) ".")
          ((string-prefix-p base true) (substring true (length base)))
          (t true))))

(defun sly-agent-q--skipped-directories-regexp ()
  "A regexp matching the names in `sly-agent-q-skipped-directories'."
  (if sly-agent-q-skipped-directories
      (mapconcat #'wildcard-to-regexp sly-agent-q-skipped-directories "\\|")
    "\\`a\\`"))

(defun sly-agent-q--file-glob (glob)
  "GLOB as (REGEXP . PATHP), or nil when GLOB is nil or empty.
A glob without a slash matches a file's name; one with a slash (PATHP
non-nil) matches its path relative to the directory walked."
  (when (and glob (not (string-empty-p glob)))
    (let ((regexp (condition-case nil
                      (let ((regexp (wildcard-to-regexp glob)))
                        (string-match-p regexp "")
                        regexp)
                    (error (sly-agent-q-tool-fail
                            "The glob '%s' is not a wildcard: use * (any characters), ? (one character) and [abc] (one of them), as in *.lisp or src/*.asd."
                            glob)))))
      (cons regexp (string-search "/" glob)))))

(defun sly-agent-q--file-glob-match-p (glob name relative)
  "Non-nil when GLOB (from `sly-agent-q--file-glob', or nil) admits a file.
NAME is the file's name and RELATIVE its path from the walked directory."
  (or (null glob)
      (let ((case-fold-search nil))
        (string-match-p (car glob) (if (cdr glob) relative name)))))

(defun sly-agent-q--resolve-directory (path)
  "PATH (nil: the first allowed directory) as the true name of a directory.
Confined as read_file's path is; fails the call when it is no directory."
  (let ((true (sly-agent-q--resolve-path (if (or (null path) (string-empty-p (string-trim path))) "." path))))
    (sly-agent-q--local-files
      (cond ((not (file-exists-p true))
             (sly-agent-q-tool-fail "%s does not exist. Check the path (relative paths start at %s)."
                                    path (car (sly-agent-q--allowed-roots))))
            ((not (file-directory-p true))
             (sly-agent-q-tool-fail "%s is a file, not a directory. Give the path of a directory." path))
            ((not (file-accessible-directory-p true))
             (sly-agent-q-tool-fail "%s cannot be read: permission denied." path))))
    (file-name-as-directory true)))

(defun sly-agent-q--walk (directory depth visit)
  "Call VISIT on the entries under DIRECTORY, DEPTH levels deep, in order.
VISIT is called with (FILE RELATIVE KIND ATTRIBUTES) for each entry,
sorted by name, a directory's entries right after it: FILE its absolute
name, RELATIVE its path from DIRECTORY, ATTRIBUTES its `file-attributes'
\(of the link itself for a link; nil for `unreadable'), KIND one of
`file', `directory', `skipped' (a directory in
`sly-agent-q-skipped-directories', not entered), `link' (a
symbolic link, never followed), `other' (a pipe, socket or device) or
`unreadable' (a directory that cannot be listed).  VISIT returns nil
to stop the walk.  Returns nil when the walk was stopped, else t."
  (catch 'sly-agent-q--walk-stopped
    ;; No file name handler looks at each name (they would cost more than
    ;; the walk itself).
    (sly-agent-q--local-files
      (sly-agent-q--walk-1 (file-name-as-directory directory) "" (min depth 100) visit
                           (sly-agent-q--skipped-directories-regexp)))
    t))

(defun sly-agent-q--walk-1 (here prefix levels visit skip)
  "Walk HERE, whose entries are named PREFIX and their names, LEVELS deep.
See `sly-agent-q--walk' for VISIT.  SKIP matches the names of the
directories not entered."
  (let ((entries (condition-case nil
                     (sly-agent-q--local-files
                       (directory-files-and-attributes here nil directory-files-no-dot-files-regexp t 'integer))
                   (file-error :unreadable))))
    (if (eq entries :unreadable)
        (unless (funcall visit (directory-file-name here) (directory-file-name prefix) 'unreadable nil)
          (throw 'sly-agent-q--walk-stopped nil))
      (dolist (entry (sort entries (lambda (a b) (string< (car a) (car b)))))
        (let* ((name (car entry))
               (type (file-attribute-type (cdr entry)))
               (modes (file-attribute-modes (cdr entry)))
               (file (concat here name))
               (relative (concat prefix name))
               (kind (cond ((stringp type) 'link)
                           ((eq type t) (if (string-match-p skip name) 'skipped 'directory))
                           ((and modes (eq (aref modes 0) ?-)) 'file)
                           (t 'other))))
          (unless (funcall visit file relative kind (cdr entry))
            (throw 'sly-agent-q--walk-stopped nil))
          (when (and (eq kind 'directory) (> levels 1))
            (sly-agent-q--walk-1 (file-name-as-directory file) (concat relative "/") (1- levels) visit skip)))))))

;;;; list_directory

(defun sly-agent-q--list-directory (args)
  "The list_directory tool: ARGS has maybe path, depth and glob."
  (let* ((directory (sly-agent-q--resolve-directory (gethash "path" args)))
         (depth (sly-agent-q--integer-argument args "depth" 1 1))
         (glob (sly-agent-q--file-glob (gethash "glob" args)))
         (limit (max 1 sly-agent-q-list-directory-limit))
         (cap (max 1 sly-agent-q-read-limit))
         (base (car (sly-agent-q--allowed-roots)))
         (lines nil) (count 0) (size 0) (stopped nil))
    (sly-agent-q--walk
     directory depth
     (lambda (file relative kind attributes)
       (let* ((shown (sly-agent-q--relative-name file base))
              (line
               (pcase kind
                 ('directory (concat shown "/"))
                 ('skipped (concat shown "/ (not entered: version control, build or dependencies)"))
                 ('link (let ((true (sly-agent-q--local-files (file-truename file))))
                          (format "%s@ (symbolic link to %s; not followed)" shown
                                  (if (sly-agent-q--inside-roots-p true)
                                      (sly-agent-q--relative-name true base)
                                    "a place outside the allowed directories"))))
                 ('other (concat shown " (not a regular file)"))
                 ('unreadable (concat shown " (cannot be listed: permission denied)"))
                 (_ (when (sly-agent-q--file-glob-match-p glob (file-name-nondirectory file) relative)
                      (let ((bytes (file-attribute-size attributes)))
                        (format "%s  %s" shown (if bytes (file-size-human-readable bytes) "?"))))))))
         (cond ((null line) t)
               ((or (>= count limit) (> (+ size (length line) 1) cap))
                (setq stopped (if (>= count limit) 'count 'size))
                nil)
               (t (push line lines)
                  (setq count (1+ count) size (+ size (length line) 1))
                  t)))))
    (concat (format "%s (%s, depth %d%s):\n"
                    (sly-agent-q--relative-name (directory-file-name directory))
                    (if (= count 1) "1 entry" (format "%d entries" count))
                    depth (if glob (format ", files matching %s" (gethash "glob" args)) ""))
            (if lines
                (sly-agent-q--clean-text (string-join (nreverse lines) "\n"))
              "[no entries]")
            (pcase stopped
              ('count (format "\n[... more entries not shown: the listing stops at %d entries (sly-agent-q-list-directory-limit). List a subdirectory, or use a smaller depth or a glob ...]" limit))
              ('size (format "\n[... more entries not shown: the listing stops at the read limit of %d characters. List a subdirectory, or use a smaller depth or a glob ...]" cap))
              (_ "")))))

;;;; Reading the files a walk finds

(defun sly-agent-q--walk-files (directory glob visit)
  "Call VISIT with (FILE SHOWN SIZE) on each regular file under DIRECTORY.
Only files GLOB admits (see `sly-agent-q--file-glob'), in walking
order: links are not followed and skipped directories not entered.
SHOWN is the file's name as the answers show it, SIZE its size in
bytes.  VISIT returns nil to stop.  Returns nil when VISIT stopped,
`files' when `sly-agent-q-search-file-count-limit' files were visited
and more were left, else t."
  (let ((base (car (sly-agent-q--allowed-roots)))
        (seen 0)
        (most (max 1 sly-agent-q-search-file-count-limit))
        (over nil))
    (or (sly-agent-q--walk
         directory most-positive-fixnum
         (lambda (file relative kind attributes)
           (cond ((not (eq kind 'file)) t)
                 ((not (sly-agent-q--file-glob-match-p glob (file-name-nondirectory file) relative)) t)
                 ((>= seen most) (setq over t) nil)
                 (t (setq seen (1+ seen))
                    (funcall visit file (sly-agent-q--relative-name file base) (file-attribute-size attributes))))))
        (and over 'files))))

(defun sly-agent-q--file-count-note (stopped &optional hint)
  "Return the note for an answer whose walk STOPPED (`files') at the file limit.
HINT, if any, follows: what the caller can do about it."
  (if (eq stopped 'files)
      (let ((most (max 1 sly-agent-q-search-file-count-limit)))
        (format "; stopped after %d file%s (sly-agent-q-search-file-count-limit)%s"
                most (if (= most 1) "" "s") (or hint "")))
    ""))

(defun sly-agent-q--insert-text-file (file size &optional raw)
  "Replace the current buffer's text with FILE's; nil if FILE is not text.
SIZE is FILE's size in bytes, or nil to look it up.  Not text: larger
than `sly-agent-q-search-file-size-limit' bytes, a NUL byte in its first
8000, or unreadable.  Returns t when inserted.  The text is decoded as
UTF-8 (bytes that are not UTF-8 stay raw bytes, shown as U+FFFD), in a
multibyte buffer; or, RAW non-nil, left as bytes in a unibyte buffer
\(which `sly-agent-q--decoded-line' decodes as UTF-8)."
  (let ((inhibit-read-only t))
    (erase-buffer)
    (set-buffer-multibyte (not raw)))
  (let ((size (or size (file-attribute-size (sly-agent-q--local-files (file-attributes file))))))
    (and size
         (<= size (max 0 sly-agent-q-search-file-size-limit))
         (condition-case nil
             (sly-agent-q--local-files
               (let ((after-insert-file-functions nil)
                     (format-alist nil)
                     (inhibit-read-only t))
                 (if raw
                     (insert-file-contents-literally file)
                   (let ((coding-system-for-read 'utf-8))
                     (insert-file-contents file)))
                 t))
           (file-error nil))
         (progn (goto-char (point-min))
                (not (search-forward "\0" (min (point-max) (+ (point-min) 8000)) t))))))

(defun sly-agent-q--decoded-line (position raw)
  "Return the line at POSITION, trimmed as by `sly-agent-q--match-line'.
RAW non-nil: the buffer is unibyte, its bytes UTF-8, decoded here."
  (if (not raw)
      (sly-agent-q--match-line position)
    (let* ((begin (save-excursion (goto-char position) (line-beginning-position)))
           (end (save-excursion (goto-char position) (line-end-position)))
           (before (decode-coding-string (buffer-substring-no-properties begin position) 'utf-8))
           (line (decode-coding-string (buffer-substring-no-properties begin end) 'utf-8)))
      (with-temp-buffer
        (insert line)
        (sly-agent-q--match-line (+ (point-min) (length before)))))))

(defun sly-agent-q--raw-search-p (regexp)
  "Return non-nil when REGEXP matches the same lines in undecoded bytes.
That is when it is ASCII and asks nothing of syntax or character
classes (\\w, \\b, \\_<, \\s-, [[:alpha:]] and the like), which see
the bytes of a non-ASCII character otherwise than the character: then
the file is decoded first, which is slower."
  (and (string-match-p "\\`[[:ascii:]]*\\'" regexp)
       (not (string-match-p "\\\\[wWsSbB<>_cC]\\|\\[:" regexp))))

;;;; search_files

(defun sly-agent-q--check-regexp (regexp)
  "Fail the call unless REGEXP is a valid, non-empty Emacs regexp."
  (when (string-empty-p regexp)
    (sly-agent-q-tool-fail "The regexp is empty. Give the Emacs regular expression to search for."))
  (condition-case err
      (let ((search-spaces-regexp nil)) (string-match-p regexp ""))
    (invalid-regexp
     (sly-agent-q-tool-fail
      "Invalid regular expression '%s': %s. Patterns use Emacs regexp syntax: \\( \\) group, \\| separates alternatives, [0-9] for a digit (no \\d), \\_< \\_> symbol boundaries, and ( ) | { } match themselves."
      regexp (cadr err))))
  (sly-agent-q--check-regexp-time regexp))

(defun sly-agent-q--search-files (args)
  "The search_files tool: ARGS has regexp, and maybe path and glob."
  (let* ((regexp (gethash "regexp" args))
         (path (gethash "path" args))
         (target (progn (sly-agent-q--check-regexp regexp)
                        (sly-agent-q--resolve-path (if (or (null path) (string-empty-p (string-trim path))) "." path))))
         (glob (sly-agent-q--file-glob (gethash "glob" args)))
         (limit (max 1 sly-agent-q-search-match-limit))
         (cap (max 1 sly-agent-q-read-limit))
         (raw (sly-agent-q--raw-search-p regexp))
         (lines nil) (count 0) (files 0) (skipped 0) (stopped nil) (walked nil))
    (sly-agent-q--local-files
      (unless (file-exists-p target)
        (sly-agent-q-tool-fail "%s does not exist. Check the path (relative paths start at %s)."
                               path (car (sly-agent-q--allowed-roots)))))
    (with-temp-buffer
      (let ((case-fold-search nil)
            (search-spaces-regexp nil)
            (inhibit-field-text-motion t))
        (cl-flet ((search (file shown size)
                    (if (not (sly-agent-q--insert-text-file file size raw))
                        (setq skipped (1+ skipped))
                      (setq files (1+ files))
                      (goto-char (point-min))
                      (let ((line 1) (counted (point-min)))
                        (while (and (not stopped)
                                    (< (point) (point-max))
                                    (re-search-forward regexp nil t)
                                    ;; Not at the end after the last line's newline:
                                    ;; no line is there.
                                    (not (and (= (match-beginning 0) (point-max))
                                              (memq (char-before (point-max)) '(nil ?\n)))))
                          (let ((begin (match-beginning 0)))
                            (goto-char begin)
                            (setq line (+ line (count-lines counted (line-beginning-position)))
                                  counted (line-beginning-position))
                            (if (>= count limit)
                                (setq stopped 'count)
                              (setq count (1+ count))
                              (push (format "%s:%d: %s" shown line (sly-agent-q--decoded-line begin raw)) lines))
                            ;; One line per match: on from the next line.
                            (forward-line 1)))))
                    (not stopped)))
          (if (sly-agent-q--local-files (file-directory-p target))
              (setq walked (sly-agent-q--walk-files target glob #'search))
            (sly-agent-q--check-readable target)
            (search target (sly-agent-q--relative-name target) nil)))))
    (let* ((where (sly-agent-q--relative-name target))
           (searched (format "%d file%s searched%s%s" files (if (= files 1) "" "s")
                             (if (> skipped 0)
                                 (format ", %d skipped as binary or larger than %s" skipped
                                         (file-size-human-readable sly-agent-q-search-file-size-limit))
                               "")
                             (sly-agent-q--file-count-note walked ": give a path or a glob")))
           (text
            (cond ((= count 0)
                   (format "No lines match '%s' in %s (%s)." regexp where searched))
                  (t (concat (if stopped
                                 (format "The first %d lines that match '%s' in %s (the search stopped there; %s):\n"
                                         count regexp where searched)
                               (format "%d line%s match%s '%s' in %s (%s):\n"
                                       count (if (= count 1) "" "s") (if (= count 1) "es" "") regexp where searched))
                             (string-join (nreverse lines) "\n")
                             (if stopped
                                 (format "\n[... more lines not shown: the search stops at %d lines (sly-agent-q-search-match-limit). Use a more specific regexp, a path or a glob ...]" limit)
                               ""))))))
      (setq text (sly-agent-q--clean-text text))
      (if (> (length text) cap)
          (concat (substring text 0 cap)
                  "\n[... truncated at the read limit; use a more specific regexp, a path or a glob ...]")
        text))))

;;;; find_definitions

(defconst sly-agent-q--definition-kinds
  '("defun" "defmacro" "defgeneric" "defmethod" "defclass" "defstruct" "defvar"
    "defparameter" "defconstant" "define-condition" "deftype" "defpackage")
  "The definers find_definitions looks for.")

(defconst sly-agent-q--lisp-file-glob
  (cons (concat "\\." (regexp-opt '("lisp" "lsp" "cl" "asd")) "\\'") nil)
  "The files find_definitions reads, as `sly-agent-q--file-glob' makes them.")

(defun sly-agent-q--symbol-name-part (name)
  "NAME's symbol name: without package prefix, #:, quotes and bars, upcased."
  (let ((bare (string-trim name "[#:'\"|]*" "[\"|]*")))
    (upcase (or (car (last (split-string bare ":" t))) ""))))

(defun sly-agent-q--definition-regexp (name)
  "A regexp for a top-level definition of NAME at the start of a line.
Group 1 is the definer, without its package prefix."
  (concat "^(\\(?:[^ \t\n():]*::?\\)?\\(" (regexp-opt sly-agent-q--definition-kinds) "\\)"
          "[ \t\n]+(?\\(?:setf[ \t\n]+\\)?[#:'\"|]*\\(?:[^ \t\n()\"|:]*::?\\)?"
          (regexp-quote name) "[\"|]?\\(?:[ \t\n()]\\|$\\)"))

(defun sly-agent-q--find-definitions (args)
  "The find_definitions tool: ARGS has name."
  (let* ((given (string-trim (gethash "name" args)))
         (name (if (string-empty-p given) "" (sly-agent-q--symbol-name-part given)))
         (limit (max 1 sly-agent-q-search-match-limit))
         (regexp (sly-agent-q--definition-regexp name))
         (roots (sly-agent-q--allowed-roots))
         (found nil) (count 0) (files 0) (stopped nil) (walked nil))
    (when (or (string-empty-p name) (string-match-p "[ \t\n()\0]" name))
      (sly-agent-q-tool-fail "The name '%s' is not a symbol's name. Give the name a definition defines, such as area or geo:area." given))
    (when (> (length name) 1000)
      (sly-agent-q-tool-fail "The name is %d characters long; no definition's name is looked for past 1000." (length name)))
    (with-temp-buffer
      ;; Lisp's syntax (strings, ; and #| |# comments), without lisp-mode's hooks.
      (set-syntax-table lisp-mode-syntax-table)
      (let ((case-fold-search t))
        (dolist (root roots)
          (unless (or stopped (eq walked 'files))
            (setq walked
             (sly-agent-q--walk-files
             root sly-agent-q--lisp-file-glob
             (lambda (file shown size)
               (when (sly-agent-q--insert-text-file file size)
                 (setq files (1+ files))
                 (goto-char (point-min))
                 (while (and (not stopped) (re-search-forward regexp nil t))
                   (let ((begin (match-beginning 0))
                         (kind (downcase (match-string 1))))
                     ;; Not inside a string or a #| comment |#.
                     (unless (nth 8 (save-excursion (syntax-ppss begin)))
                       (if (>= count limit)
                           (setq stopped t)
                         (setq count (1+ count))
                         (push (format "%s:%d: %s: %s" shown (line-number-at-pos begin) kind
                                       (sly-agent-q--match-line begin))
                               found))))))
               (not stopped))))))))
    (sly-agent-q--clean-text
     (cond ((= count 0)
            (format "No top-level definition of %s in the project's Lisp files (%d .lisp, .lsp, .cl and .asd file%s read%s). find_definitions reads forms that begin at the start of a line; search_files finds other mentions."
                    given files (if (= files 1) "" "s") (sly-agent-q--file-count-note walked)))
           (t (concat (format "%s%d definition%s of %s (%d Lisp file%s read%s):\n"
                              (if stopped "The first " "") count (if (= count 1) "" "s") given
                              files (if (= files 1) "" "s") (sly-agent-q--file-count-note walked))
                      (string-join (nreverse found) "\n")
                      (if stopped
                          (format "\n[... more definitions not shown: the search stops at %d (sly-agent-q-search-match-limit) ...]" limit)
                        "")))))))

;;;; get_diagnostics

(defun sly-agent-q--diagnostics-buffer (args)
  "The buffer get_diagnostics's ARGS name, and its file's true name or nil.
A `path' is confined as read_file's; a `buffer' that visits a file must
visit one inside the allowed directories."
  (let ((path (gethash "path" args))
        (name (gethash "buffer" args)))
    (cond ((and path name)
           (sly-agent-q-tool-fail "Give path or buffer, not both."))
          (path
           (let ((file (sly-agent-q--resolve-path path)))
             (list (or (ignore-errors (sly-agent-q--local-files (find-buffer-visiting file)))
                       (sly-agent-q-tool-fail
                        "No buffer visits %s, so there are no diagnostics for it: compiler notes and flymake's diagnostics live in the buffer of a file open in Emacs (compiler notes come from C-c C-k or C-c C-c there). check_syntax reads a file for reader problems without opening it."
                        file))
                   file)))
          (name
           (let* ((buffer (sly-agent-q--find-buffer name))
                  (file (buffer-file-name buffer)))
             (when file
               (let ((true (sly-agent-q--local-files (file-truename file))))
                 (unless (sly-agent-q--inside-roots-p true)
                   (sly-agent-q-tool-fail
                    "Access denied: buffer %s visits %s, which is outside the allowed directories (%s). Only the diagnostics of buffers that visit files inside them, or of buffers without a file, can be read."
                    (buffer-name buffer) true (string-join (sly-agent-q--allowed-roots) ", ")))
                 (setq file true)))
             (list buffer file)))
          (t (sly-agent-q-tool-fail "Give path (a file open in Emacs) or buffer (a buffer's name).")))))

(defun sly-agent-q--position-text (position)
  "POSITION of the current buffer as \"line L, column C\"."
  (save-excursion
    (goto-char position)
    (format "line %d, column %d" (line-number-at-pos) (1+ (current-column)))))

(defun sly-agent-q--get-diagnostics (args)
  "The get_diagnostics tool: ARGS has path or buffer."
  (pcase-let ((`(,buffer ,file) (sly-agent-q--diagnostics-buffer args)))
    (with-current-buffer buffer
      (save-restriction
        (widen)
        (let* ((notes (sly-agent-q-notes--overlays))
               (compiled sly-agent-q-notes-compiled)
               (flymake (and (bound-and-true-p flymake-mode) (fboundp 'flymake-diagnostics)))
               (diagnostics (when flymake
                              (sort (copy-sequence (flymake-diagnostics))
                                    (lambda (a b) (< (flymake-diagnostic-beg a) (flymake-diagnostic-beg b))))))
               (limit (max 1 sly-agent-q-search-match-limit))
               (what (if file (format "%s (buffer %s)" (sly-agent-q--relative-name file) (buffer-name))
                       (format "buffer %s" (buffer-name)))))
          (sly-agent-q--clean-text
           (concat
            (format "Diagnostics of %s%s:\n" what (if (buffer-modified-p) ", which has unsaved changes" ""))
            (cond (notes
                   (concat (format "Compiler notes (%d, from compilations in Emacs%s):\n"
                                   (length notes)
                                   (if compiled (format-time-string ", the last at %H:%M:%S" compiled) ""))
                           (mapconcat (lambda (overlay)
                                        (format "  %s: %s" (sly-agent-q--position-text (overlay-start overlay))
                                                (overlay-get overlay 'help-echo)))
                                      (seq-take notes limit) "\n")
                           (if (> (length notes) limit) (format "\n  [... %d more not shown ...]" (- (length notes) limit)) "")
                           "\n"))
                  (compiled (format-time-string "Compiler notes: none (compiled in Emacs at %H:%M:%S without findings).\n" compiled))
                  (t "Compiler notes: none (not compiled in Emacs since it was opened: C-c C-k compiles the file, C-c C-c one form).\n"))
            (cond ((not flymake) "Flymake: off in this buffer.")
                  ((null diagnostics) "Flymake: on, no diagnostics.")
                  (t (concat (format "Flymake (%d):\n" (length diagnostics))
                             (mapconcat (lambda (diagnostic)
                                          (format "  %s: %s: %s"
                                                  (sly-agent-q--position-text (flymake-diagnostic-beg diagnostic))
                                                  (let ((type (flymake-diagnostic-type diagnostic)))
                                                    (string-remove-prefix ":" (format "%s" type)))
                                                  (flymake-diagnostic-text diagnostic)))
                                        (seq-take diagnostics limit) "\n")
                             (if (> (length diagnostics) limit)
                                 (format "\n  [... %d more not shown ...]" (- (length diagnostics) limit))
                               "")))))))))))

;;;; The tools

(defun sly-agent-q--define-project-tools ()
  "Define the project tools.
They are list_directory, search_files, find_definitions and
get_diagnostics."
  (sly-agent-q-define-tool
   "list_directory"
   "List the files and directories under a directory of the project, to find your way around it before \
reading files (read_file) or searching them (search_files). Returns a first line `DIR (N entries, depth D):` \
and one entry per line, sorted by name, each directory's entries right after it: `path/` for a directory, \
`path  SIZE` for a file, `path@ (symbolic link to ...; not followed)` for a link, and `path/ (not entered: ...)` \
for version-control and build directories (.git, build, node_modules), whose contents are not listed. \
Paths are relative to the project root, as read_file takes them. At most 500 entries \
(sly-agent-q-list-directory-limit); a last line `[... more entries not shown ...]` then says so. Only \
directories inside the allowed directories (the user's project) can be listed; symbolic links are never \
followed."
   '((:name "path" :type :string
	    :description "The directory to list: relative to the project root, or absolute inside the allowed directories. Default: the project root.")
     (:name "depth" :type :integer :minimum 1 :default 1
	    :description "How many levels to list: 1 (the default) lists the directory's own entries, 2 also those of its subdirectories, and so on.")
     (:name "glob" :type :string
	    :description "Only files whose name matches this wildcard, e.g. \"*.lisp\" (with a slash: matched against the path from the listed directory). Directories are always listed. Default: every file."))
   :safety-level :safe
   :categories '(:files)
   :handler #'sly-agent-q--list-directory)

  (sly-agent-q-define-tool
   "search_files"
   "Search the text files of the project for an Emacs regular expression, case-sensitively, to find where \
something is defined, used or mentioned across files (search_in_buffer searches one open buffer). Returns \
a first line `N lines match 'REGEXP' in PATH (F files searched):` and one line per matching line, \
`path:LINE: text` (the line trimmed, at most 200 characters), paths relative to the project root as read_file \
takes them; or `No lines match ...`. At most 100 lines (sly-agent-q-search-match-limit): the search stops \
at the next and says so. The regexp is Emacs's syntax, not PCRE: \\( \\) group, \\| alternatives, \
[0-9] or [[:digit:]] for a digit (no \\d), \\_< and \\_> symbol boundaries, and ( ) | { } match \
themselves; `.` does not match a newline. Binary files (a NUL byte), files over 2 MB, version-control \
and build directories (.git, build, node_modules) are skipped, and symbolic links are not followed. Only \
files inside the allowed directories (the user's project) are searched."
   '((:name "regexp" :type :string
	    :description "An Emacs regular expression (not PCRE), matched case-sensitively; a match is shown at the line it starts on. E.g. \"(defun area\\_>\" or \"\\(TODO\\|FIXME\\)\".")
     (:name "path" :type :string
	    :description "A directory to search under, or one file: relative to the project root, or absolute inside the allowed directories. Default: the project root.")
     (:name "glob" :type :string
	    :description "Only files whose name matches this wildcard, e.g. \"*.lisp\" (with a slash: matched against the path from the searched directory). Default: every text file."))
   :required '("regexp")
   :safety-level :safe
   :categories '(:files)
   :handler #'sly-agent-q--search-files)

  (sly-agent-q-define-tool
   "find_definitions"
   "Find where a name is defined in the project's Lisp source files, without loading them (the session \
need not know the code; describe_symbol and who_calls ask the session). Looks in every .lisp, .lsp, .cl \
and .asd file under the project root for top-level definitions of the name: defun, defmacro, defgeneric, \
defmethod, defclass, defstruct, defvar, defparameter, defconstant, define-condition, deftype and \
defpackage (also (defun (setf name) ...), and definers written with a package prefix). It reads the text, \
not the forms: a definition is found when its form begins at the start of a line, as top-level forms are \
written; one indented inside another form (a progn, an eval-when, a macro) or made by another macro is \
not, and strings and #| comments |# are left out. Returns `N definitions of NAME (F Lisp files read):` \
and one line per definition, `path:LINE: kind: first line`, paths relative to the project root as read_file \
takes them (read_file with offset=LINE shows it); or `No top-level definition of NAME ...`. Names are \
compared as Lisp reads them, ignoring case and any package prefix. At most 100 definitions. Only files \
inside the allowed directories are read; symbolic links are not followed."
   '((:name "name" :type :string
	    :description "The name defined, e.g. \"area\", \"geo:area\" or \"*default-radius*\"; case and a package prefix are ignored."))
   :required '("name")
   :safety-level :safe
   :categories '(:files)
   :handler #'sly-agent-q--find-definitions)

  (sly-agent-q-define-tool
   "get_diagnostics"
   "Read the diagnostics the user sees on a file open in Emacs: the compiler notes its last compilations \
in Emacs left on its forms (C-c C-k compiles the file, C-c C-c one form: warnings and style warnings such \
as an undefined function or an unused variable), and flymake's diagnostics when flymake is on in its \
buffer. Use it after the user compiled, or to see what the editor marks, before fixing a file; it changes \
nothing and compiles nothing (compile_form compiles). Returns `Diagnostics of PATH (buffer B):`, then \
`Compiler notes (N, ...):` with one `line L, column C: KIND: message` per note (or `none`, saying \
whether the buffer was compiled), then `Flymake (N):` with `line L, column C: type: text` lines, or \
`Flymake: off in this buffer.` A file no buffer visits has none (check_syntax reads a file for reader \
problems). Only files inside the allowed directories, or buffers without a file."
   '((:name "path" :type :string
	    :description "The file whose buffer to read: relative to the project root, or absolute inside the allowed directories. Give path or buffer.")
     (:name "buffer" :type :string
	    :description "The buffer's name as Emacs shows it (e.g. \"geo.lisp\"), instead of path. It must visit a file inside the allowed directories, or no file."))
   :safety-level :safe
   :categories '(:editing)
   :handler #'sly-agent-q--get-diagnostics))

;; Defined when the module loads (at the first call into it, not when
;; this file loads).  Defining Elisp tools does not boot Lisp.
(if (featurep 'sly-agent-q-module)
    (sly-agent-q--define-project-tools)
  (add-hook 'sly-agent-q--module-load-hook #'sly-agent-q--define-project-tools))

(provide 'sly-agent-q-project-tools)

;;; sly-agent-q-project-tools.el ends here
