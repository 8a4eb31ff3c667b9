;;; sly-agent-q-files.el --- Confinement to the allowed directories; reading and writing files -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; What the file tools (elisp/sly-agent-q-buffer-tools.el and
;; elisp/sly-agent-q-project-tools.el) rest on: the target buffer, the
;; allowed directories and the resolving of a path into them, the
;; tools' argument helpers, and reading and writing files.
;;
;; "The current buffer" of the tools is `sly-agent-q-target-buffer':
;; the buffer the user worked in when the agent's request started, which
;; a chat front end binds, not the chat buffer.
;;
;; The file tools only touch files inside `sly-agent-q-allowed-directories'
;; (by default the target buffer's project root, or its
;; `default-directory').  Paths are resolved with `file-truename', so
;; neither ".." nor a symbolic link leads outside.  The standing approval
;; rules match the same true name, and the true name a call had when it
;; was checked (before the approval) must still be its true name when it
;; writes, and again right before the rename: a symbolic link swapped
;; meanwhile fails the call, writing nothing.
;;
;; Files are replaced atomically (`sly-agent-q--write-atomically'): a
;; temporary file in the same directory is written and renamed over the
;; old one, so a failure leaves the old file as it was.  The temporary
;; file starts as a copy of the old one, which keeps its mode, owner and
;; group (as far as the process may set them); a read-only file is
;; refused.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'project)
(require 'sly-agent-q-tools)

;;;; Options

(defcustom sly-agent-q-read-limit 20000
  "Characters that read_file and read_buffer return at most.
A longer text is cut, and a marker at its end says how to ask for the
rest (read_file's `offset' and `limit' in lines, read_buffer's `start'
and `end' positions).  It also bounds search_in_buffer's answer."
  :type 'integer
  :group 'sly-agent-q)

(defcustom sly-agent-q-search-match-limit 100
  "Matches that search_in_buffer and search_files list at most.
search_in_buffer's first line always gives the full count; search_files
stops at the next match and says that more were left.  It also bounds
what find_definitions and get_diagnostics list."
  :type 'integer
  :group 'sly-agent-q)

(defcustom sly-agent-q-allowed-directories nil
  "Directories whose files the file tools may touch.
The file tools are read_file, write_file and propose_file_edit, and
the project tools (list_directory and the others of
elisp/sly-agent-q-project-tools.el).
A list of directory names; a file must be inside one of them (at any
depth).  nil means one directory: the root of the current project of
`sly-agent-q-target-buffer' (per project.el's `project-current'), or,
outside any project, that buffer's `default-directory'.

Paths are resolved with `file-truename', so \"..\" and symbolic links
cannot lead outside; a relative path is taken from the first of these
directories."
  :type '(choice (const :tag "The target buffer's project, or its directory" nil)
                 (repeat directory))
  :group 'sly-agent-q)

(defvar sly-agent-q-target-buffer nil
  "The buffer that the buffer tools take as \"the current buffer\".
The buffer the user was working in when the agent's request started:
search_in_buffer searches it when no `buffer' is given, and its project
\(or `default-directory') is where files are allowed and relative paths
start when `sly-agent-q-allowed-directories' is nil.

nil means the buffer of the selected window.  Otherwise a buffer or a
buffer's name.  A chat front end binds it with `let' around a
synchronous call (an asynchronous call sees the value in force when it
runs), so that its own chat buffer is never taken for the user's.")

;;;; Helpers

(defmacro sly-agent-q--local-files (&rest body)
  "Run BODY with file names taken as local files, without file name handlers.
No remote access (TRAMP), decompression or decryption happens behind
the tools' backs: a name like /ssh:host:/etc is just a local name."
  (declare (indent 0) (debug t))
  `(let ((file-name-handler-alist nil))
     ,@body))

(defun sly-agent-q--target-buffer ()
  "The buffer `sly-agent-q-target-buffer' names, or the selected window's."
  (let ((target sly-agent-q-target-buffer))
    (cond ((null target) (window-buffer (selected-window)))
          ((buffer-live-p target) target)
          ((and (stringp target) (get-buffer target)))
          (t (sly-agent-q-tool-fail
              "The buffer the request started in (%s) no longer exists. Name a buffer with the `buffer' argument."
              (if (bufferp target) "a killed buffer" target))))))

(defun sly-agent-q--default-root ()
  "The target buffer's project root, or its `default-directory'."
  (with-current-buffer (sly-agent-q--target-buffer)
    (let ((project (ignore-errors (project-current nil))))
      (expand-file-name (if project (project-root project) default-directory)))))

(defun sly-agent-q--allowed-roots ()
  "The allowed directories, as true absolute directory names."
  (let ((directories (cl-remove-if-not #'stringp sly-agent-q-allowed-directories)))
    (sly-agent-q--local-files
      (mapcar (lambda (directory)
                (file-name-as-directory (file-truename (expand-file-name directory))))
              (or directories (list (sly-agent-q--default-root)))))))

(defvar sly-agent-q--resolved-paths (make-hash-table :test 'equal)
  "The true names that calls' paths had when they were checked or approved.
Keys are paths made absolute (`expand-file-name' from the first allowed
directory), values their true names at the time.  A tool's check and
the standing rules (`sly-agent-q-approval-rules') record them before the
approval is asked; the tool, once approved, refuses to write when the
path's true name has changed since (a symbolic link swapped meanwhile).")

(defun sly-agent-q--path-base ()
  "The directory a relative path is taken from: the first allowed directory.
The file tools write there, and the standing rules match from there."
  (car (sly-agent-q--allowed-roots)))

(defun sly-agent-q--true-path (path &optional base)
  "PATH as (ABSOLUTE . TRUE): made absolute from BASE, then its true name.
BASE defaults to `sly-agent-q--path-base'.  TRUE has every symbolic link
and \"..\" resolved; for a file that does not exist yet, those of its
nearest existing parent directory, with the rest of the path after it.
No file name handler (TRAMP and the like) takes part."
  (sly-agent-q--local-files
    (let ((absolute (expand-file-name path (or base (sly-agent-q--path-base)))))
      (cons absolute (file-truename absolute)))))

(defun sly-agent-q--record-true-path (absolute true)
  "Remember that the path ABSOLUTE resolved to TRUE before the approval."
  (when (> (hash-table-count sly-agent-q--resolved-paths) 1000)
    (clrhash sly-agent-q--resolved-paths))
  (puthash absolute true sly-agent-q--resolved-paths))

(defun sly-agent-q--inside-roots-p (true &optional roots)
  "Non-nil when the true name TRUE lies in one of ROOTS (the allowed directories)."
  (cl-some (lambda (root) (string-prefix-p root (file-name-as-directory true)))
           (or roots (sly-agent-q--allowed-roots))))

(defun sly-agent-q--resolve-path (path &optional approved)
  "PATH as the true name of a file inside the allowed directories.
A relative PATH is taken from the first allowed directory.  Fails the
call when the file is outside them.

APPROVED nil: the call is being checked, before its approval; the true
name is recorded.  APPROVED non-nil: the call has been approved and is
about to write; it fails when the true name differs from the one
recorded before the approval (a symbolic link changed in between), so
that nothing is written where the approval did not look."
  (when (string-empty-p (string-trim path))
    (sly-agent-q-tool-fail "The path is empty. Give a file name, absolute or relative to %s."
                           (car (sly-agent-q--allowed-roots))))
  (when (string-search "\0" path)
    (sly-agent-q-tool-fail "The path %S contains a NUL character, which no file name can hold." path))
  (let* ((roots (sly-agent-q--allowed-roots))
         (resolved (sly-agent-q--true-path path (car roots)))
         (absolute (car resolved))
         (true (cdr resolved)))
    (unless (sly-agent-q--inside-roots-p true roots)
      (sly-agent-q-tool-fail
       "Access denied: %s resolves to %s, which is outside the allowed directories (%s). Only files inside them can be read or changed; use a path inside one of them."
       path true (string-join roots ", ")))
    (if (not approved)
        (sly-agent-q--record-true-path absolute true)
      (let ((before (gethash absolute sly-agent-q--resolved-paths)))
        (remhash absolute sly-agent-q--resolved-paths)
        (when (and before (not (equal before true)))
          (sly-agent-q-tool-fail
           "Nothing was written: %s resolved to %s when the call was checked and approved, but now resolves to %s (a symbolic link changed in between). The approval was for the old file; check the path and call again if the new one is meant."
           path before true))))
    true))

(defun sly-agent-q--integer-argument (args key default minimum)
  "The integer argument KEY of ARGS, DEFAULT when absent; at least MINIMUM.
The executor has checked the type; an integral float is accepted."
  (let ((value (gethash key args)))
    (if (null value)
        default
      (setq value (truncate value))
      (when (< value minimum)
        (sly-agent-q-tool-fail "%s must be at least %d, not %d." key minimum value))
      value)))

(defun sly-agent-q--boolean-argument (args key default)
  "The boolean argument KEY of ARGS (t or :false), DEFAULT when absent."
  (let ((value (gethash key args 'absent)))
    (if (eq value 'absent) default (eq value t))))

(defun sly-agent-q--clean-text (text)
  "TEXT with U+FFFD in place of raw bytes, which are no Unicode text."
  (if (not (multibyte-string-p text))
      (if (string-match-p "[^\0-\177]" text)
          (decode-coding-string text 'utf-8)
        text)
    (let ((index 0) (length (length text)) (clean text))
      (while (< index length)
        (when (> (aref clean index) #x3FFF7F)
          (when (eq clean text) (setq clean (copy-sequence text)))
          (aset clean index #xFFFD))
        (setq index (1+ index)))
      clean)))

(defun sly-agent-q--match-line (position)
  "The text of the line at POSITION, trimmed, at most 200 characters around it."
  (let* ((begin (save-excursion (goto-char position) (line-beginning-position)))
         (end (save-excursion (goto-char position) (line-end-position)))
         (from (if (> (- end begin) 200) (max begin (- position 80)) begin))
         (to (min end (+ from 200)))
         (text (string-trim (buffer-substring-no-properties from to))))
    (concat (if (> from begin) "…" "") text (if (< to end) "…" ""))))

(defun sly-agent-q--bracket-end (regexp start)
  "The index after the bracket expression of REGEXP that opens at START."
  (let ((i (1+ start)) (n (length regexp)))
    (when (and (< i n) (eq (aref regexp i) ?^)) (setq i (1+ i)))
    (when (and (< i n) (eq (aref regexp i) ?\])) (setq i (1+ i)))
    (while (and (< i n) (not (eq (aref regexp i) ?\])))
      (if (and (eq (aref regexp i) ?\[) (< (1+ i) n) (eq (aref regexp (1+ i)) ?:)
               (string-search ":]" regexp (+ i 2)))
          (setq i (+ 2 (string-search ":]" regexp (+ i 2))))
        (setq i (1+ i))))
    (min n (1+ i))))

(defun sly-agent-q--nested-repetition-p (regexp)
  "Non-nil when REGEXP repeats a group that repeats something or has \\|.
Such as \\(a*\\)* or \\(a\\|a\\)*, whose matching can take time
exponential in the length of the text (Emacs's matcher backtracks, and
nothing interrupts it): a search with it could hang Emacs on one line."
  (let ((i 0) (n (length regexp)) (stack nil) (found nil))
    ;; Each entry of STACK: whether the open group repeats something or
    ;; has alternatives.
    (cl-flet ((repetition-at (j)
                (and (< j n)
                     (or (memq (aref regexp j) '(?* ?+))
                         (and (eq (aref regexp j) ?\\) (< (1+ j) n) (eq (aref regexp (1+ j)) ?{))))))
      (while (and (< i n) (not found))
        (let ((c (aref regexp i)))
          (cond ((eq c ?\[) (setq i (sly-agent-q--bracket-end regexp i)))
                ((and (eq c ?\\) (< (1+ i) n))
                 (pcase (aref regexp (1+ i))
                   (?\( (push nil stack) (setq i (+ i 2)))
                   (?\) (let ((inner (pop stack)))
                          (setq i (+ i 2))
                          (let ((repeated (repetition-at i)))
                            (when (and repeated inner) (setq found t))
                            (when (and stack (or repeated inner)) (setcar stack t)))))
                   ((or ?{ ?|) (when stack (setcar stack t)) (setq i (+ i 2)))
                   (_ (setq i (+ i 2)))))
                ((memq c '(?* ?+)) (when stack (setcar stack t)) (setq i (1+ i)))
                (t (setq i (1+ i)))))))
    found))

(defun sly-agent-q--check-regexp-time (regexp)
  "Fail the call when matching REGEXP may take exponential time.
See `sly-agent-q--nested-repetition-p'."
  (when (sly-agent-q--nested-repetition-p regexp)
    (sly-agent-q-tool-fail
     "The regexp '%s' repeats a group that itself repeats something or has alternatives (like \\(a*\\)* or \\(a\\|b\\)*): Emacs's matcher can take exponential time with it, and nothing could interrupt the search. Write it without repeating such a group: \\(a*\\)* matches what a* matches, and a line with \\(a\\|b\\)+ in it has \\(a\\|b\\) in it."
     regexp)))

(defun sly-agent-q--buffer-names ()
  "The names of the buffers a person works with, for error messages."
  (let ((names (cl-loop for buffer in (buffer-list)
                        for name = (buffer-name buffer)
                        unless (string-prefix-p " " name) collect name)))
    (if (> (length names) 30)
        (concat (string-join (cl-subseq names 0 30) ", ") ", …")
      (string-join names ", "))))

(defun sly-agent-q--find-buffer (name)
  "The live buffer called NAME, or visiting the file NAME.
Fails the call when there is none."
  (when (string-empty-p name)
    (sly-agent-q-tool-fail "The buffer name is empty. Open buffers: %s." (sly-agent-q--buffer-names)))
  (or (get-buffer name)
      (let ((file (ignore-errors
                    (sly-agent-q--local-files
                      (expand-file-name name (with-current-buffer (sly-agent-q--target-buffer)
                                               default-directory))))))
        ;; A name too long for a file is no file's.
        (and file (ignore-errors (find-buffer-visiting file))))
      (sly-agent-q-tool-fail
       "No buffer named '%s'. Open buffers: %s. Use one of these names, or read_file for a file that is not open."
       name (sly-agent-q--buffer-names))))

(defun sly-agent-q--unmodified-visitor (file)
  "Return the buffer visiting FILE, or nil.
Fail the call if that buffer has unsaved changes."
  (let ((buffer (find-buffer-visiting file)))
    (when (and buffer (buffer-modified-p buffer))
      (sly-agent-q-tool-fail
       "Buffer %s visits %s and has unsaved changes, which the user would lose or save over the new file; nothing was written. Ask the user to save or revert that buffer first, or use propose_file_edit, which edits the buffer's text."
       (buffer-name buffer) file))
    buffer))

;;;; Reading and writing files

(defun sly-agent-q--check-readable (file)
  "Fail the call unless FILE is an existing, readable regular file."
  (sly-agent-q--local-files
    (cond ((file-directory-p file)
           (sly-agent-q-tool-fail "%s is a directory, not a file. Give the path of a file in it." file))
          ((not (file-exists-p file))
           (sly-agent-q-tool-fail "%s does not exist. Check the path (relative paths start at %s)."
                                  file (car (sly-agent-q--allowed-roots))))
          ((not (file-regular-p file))
           (sly-agent-q-tool-fail "%s is not a regular file (it is a pipe, a socket or a device); only regular files can be read." file))
          ((not (file-readable-p file))
           (sly-agent-q-tool-fail "%s cannot be read: permission denied." file)))))

(defun sly-agent-q--usable-coding (coding)
  "Return CODING, as Emacs detected it, made definite.
That is utf-8 for no coding in particular, and a definite end of
line: unix when it was not known."
  (when (or (null coding)
            (memq (coding-system-base coding) '(undecided prefer-utf-8 no-conversion raw-text)))
    (setq coding (coding-system-change-text-conversion (or coding 'utf-8-unix) 'utf-8)))
  (when (vectorp (coding-system-eol-type coding))
    (setq coding (coding-system-change-eol-conversion coding 'unix)))
  coding)

(defun sly-agent-q--insert-file (file)
  "Insert FILE, a readable regular file, decoded; return its coding system.
The coding system is the one Emacs detected, with a definite end of
line; text that decodes as nothing in particular gives utf-8."
  (sly-agent-q--check-readable file)
  (sly-agent-q--local-files
    (condition-case err
        (insert-file-contents file)
      (file-error (sly-agent-q-tool-fail "%s cannot be read: %s." file (error-message-string err)))))
  (sly-agent-q--usable-coding last-coding-system-used))

(defun sly-agent-q--file-coding (file)
  "Return the coding system to write FILE with.
That is the one Emacs reads it with, or utf-8-unix."
  (if (sly-agent-q--local-files (file-regular-p file))
      (with-temp-buffer
        (condition-case nil
            (sly-agent-q--insert-file file)
          (error 'utf-8-unix)))
    'utf-8-unix))

(defun sly-agent-q--check-writable (file)
  "Fail the call when FILE exists and may not be written.
That is when `file-writable-p' says so, and also when FILE's mode has
no write bit for its owner (a mode-0444 file): the user made it
read-only, even if this process (root) could write it anyway."
  (sly-agent-q--local-files
    (when (file-exists-p file)
      (let ((modes (file-modes file)))
        (when (or (not (file-writable-p file))
                  (and modes (zerop (logand modes #o200))))
          (sly-agent-q-tool-fail
           "%s is read-only (mode %04o); nothing was written. Ask the user to make it writable if it should change."
           file (or modes 0)))))))

(defun sly-agent-q--write-atomically (file text coding)
  "Replace FILE with TEXT encoded with CODING, atomically.
TEXT goes to a temporary file in FILE's directory, which is then renamed
over FILE: FILE is either as it was or wholly new.  An existing FILE's
permissions are kept, and its owner and group when this process may
set them (the temporary file starts as a copy made with `copy-file''s
PRESERVE-UID-GID and PRESERVE-PERMISSIONS).  A read-only FILE is
refused (`sly-agent-q--check-writable').  FILE is a true name: right
before the rename its true name is checked again, and the call fails,
writing nothing, when a symbolic link now leads elsewhere.  Fails the
call, saying why, when it cannot."
  (sly-agent-q--check-writable file)
  (when (unencodable-char-position 0 (length text) coding nil text)
    (let ((position (unencodable-char-position 0 (length text) coding nil text)))
      (sly-agent-q-tool-fail
       "%s is stored as %s, which cannot hold the character %s at position %d of the new text; nothing was written."
       file coding (string (aref text position)) (1+ position))))
  (sly-agent-q--local-files
    (let* ((directory (file-name-directory file))
           (create-lockfiles nil)
           (existed (file-exists-p file))
           (modes (if existed
                      (file-modes file)
                    (logand #o666 (default-file-modes))))
           (temporary nil))
      (unless (file-directory-p directory)
        (condition-case err
            (make-directory directory t)
          (file-error
           (sly-agent-q-tool-fail "Could not write %s: its directory %s cannot be created (%s)."
                                  file directory (error-message-string err)))))
      (condition-case err
          (setq temporary (make-temp-file (expand-file-name
                                           (concat "." (file-name-nondirectory file) ".agent-q-")
                                           directory)))
        (file-error
         (sly-agent-q-tool-fail
          "Could not write %s: no temporary file can be made in %s (%s). The file was not changed."
          file directory (error-message-string err))))
      (unwind-protect
          (condition-case err
              (progn
                ;; A copy first, for the old file's owner, group, mode
                ;; (and ACL); the text then replaces its content in place.
                (when existed
                  (ignore-errors (copy-file file temporary t nil t t)))
                (let ((coding-system-for-write coding)
                      (write-region-annotate-functions nil)
                      (write-region-post-annotation-function nil))
                  (with-temp-buffer
                    (insert text)
                    (write-region nil nil temporary nil 'silent)))
                (when modes (set-file-modes temporary modes))
                (let ((now (file-truename file)))
                  (unless (equal now file)
                    (sly-agent-q-tool-fail
                     "Nothing was written: %s now resolves to %s (a symbolic link changed while the call ran). The file was not changed; check the path and call again."
                     file now)))
                (rename-file temporary file t)
                (setq temporary nil))
            (file-error
             (sly-agent-q-tool-fail "Could not write %s: %s. The file was not changed."
                                    file (error-message-string err))))
        (when temporary
          (ignore-errors (delete-file temporary)))))))

(provide 'sly-agent-q-files)

;;; sly-agent-q-files.el ends here
