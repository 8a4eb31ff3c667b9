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
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-files)

;;;; Options

(defcustom sly-agent-q-skipped-directories
  '(".git" ".hg" ".svn" "_darcs" ".jj" "node_modules" "build" "build-*" "_build" "__pycache__" ".cache")
  "Directories the project tools do not enter, as wildcards on their names.
list_directory lists them (marked as skipped) but not what they hold;
search_files and find_definitions do not look in them.  A wildcard
matches a directory's own name, as `wildcard-to-regexp' reads it."
  :type '(repeat string)
  :group 'sly-agent-q)

(defcustom sly-agent-q-list-directory-limit 500
  "Entries that list_directory lists at most.
A longer listing stops there, and its last line says so."
  :type 'integer
  :group 'sly-agent-q)

;;;; Walking a directory

(defun sly-agent-q--relative-name (true)
  "The true name TRUE as the answers show it.
Relative to the first allowed directory when inside it (where a
relative path given to the file tools starts), else absolute."
  (let ((base (car (sly-agent-q--allowed-roots))))
    (cond ((equal base (file-name-as-directory true)) ".")
          ((string-prefix-p base true) (string-remove-prefix base true))
          (t true))))

(defun sly-agent-q--skipped-directory-p (name)
  "Non-nil when a directory called NAME is not entered by the walks."
  (cl-some (lambda (wildcard) (string-match-p (wildcard-to-regexp wildcard) name))
           sly-agent-q-skipped-directories))

(defun sly-agent-q--file-glob (glob)
  "GLOB as (REGEXP . PATHP), or nil when GLOB is nil or empty.
A glob without a slash matches a file's name; one with a slash (PATHP
non-nil) matches its path relative to the directory walked."
  (when (and glob (not (string-empty-p glob)))
    (cons (wildcard-to-regexp glob) (string-search "/" glob))))

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
VISIT is called with (FILE RELATIVE KIND) for each entry, sorted by name,
a directory's entries right after it: FILE its absolute name, RELATIVE
its path from DIRECTORY, KIND one of `file', `directory', `skipped' (a
directory in `sly-agent-q-skipped-directories', not entered), `link' (a
symbolic link, never followed), `other' (a pipe, socket or device) or
`unreadable' (a directory that cannot be listed).  VISIT returns nil
to stop the walk.  Returns nil when the walk was stopped, else t."
  (catch 'sly-agent-q--walk-stopped
    (sly-agent-q--walk-1 (file-name-as-directory directory) "" (min depth 100) visit)
    t))

(defun sly-agent-q--walk-1 (here prefix levels visit)
  "Walk HERE, whose entries are named PREFIX and their names, LEVELS deep.
See `sly-agent-q--walk' for VISIT."
  (let ((entries (condition-case nil
                     (sly-agent-q--local-files
                       (directory-files-and-attributes here nil directory-files-no-dot-files-regexp t 'integer))
                   (file-error :unreadable))))
    (if (eq entries :unreadable)
        (unless (funcall visit (directory-file-name here) (directory-file-name prefix) 'unreadable)
          (throw 'sly-agent-q--walk-stopped nil))
      (dolist (entry (sort entries (lambda (a b) (string< (car a) (car b)))))
        (let* ((name (car entry))
               (type (file-attribute-type (cdr entry)))
               (modes (file-attribute-modes (cdr entry)))
               (file (concat here name))
               (relative (concat prefix name))
               (kind (cond ((stringp type) 'link)
                           ((eq type t) (if (sly-agent-q--skipped-directory-p name) 'skipped 'directory))
                           ((and modes (eq (aref modes 0) ?-)) 'file)
                           (t 'other))))
          (unless (funcall visit file relative kind)
            (throw 'sly-agent-q--walk-stopped nil))
          (when (and (eq kind 'directory) (> levels 1))
            (sly-agent-q--walk-1 (file-name-as-directory file) (concat relative "/") (1- levels) visit)))))))

;;;; list_directory

(defun sly-agent-q--list-directory (args)
  "The list_directory tool: ARGS has maybe path, depth and glob."
  (let* ((directory (sly-agent-q--resolve-directory (gethash "path" args)))
         (depth (sly-agent-q--integer-argument args "depth" 1 1))
         (glob (sly-agent-q--file-glob (gethash "glob" args)))
         (limit (max 1 sly-agent-q-list-directory-limit))
         (cap (max 1 sly-agent-q-read-limit))
         (lines nil) (count 0) (size 0) (stopped nil))
    (sly-agent-q--walk
     directory depth
     (lambda (file relative kind)
       (let* ((shown (sly-agent-q--relative-name file))
              (line
               (pcase kind
                 ('directory (concat shown "/"))
                 ('skipped (concat shown "/ (not entered: version control, build or dependencies)"))
                 ('link (let ((true (sly-agent-q--local-files (file-truename file))))
                          (format "%s@ (symbolic link to %s; not followed)" shown
                                  (if (sly-agent-q--inside-roots-p true)
                                      (sly-agent-q--relative-name true)
                                    "a place outside the allowed directories"))))
                 ('other (concat shown " (not a regular file)"))
                 ('unreadable (concat shown " (cannot be listed: permission denied)"))
                 (_ (when (sly-agent-q--file-glob-match-p glob (file-name-nondirectory file) relative)
                      (let ((bytes (file-attribute-size (sly-agent-q--local-files (file-attributes file)))))
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
     (:name "depth" :type :integer
	    :description "How many levels to list: 1 (the default) lists the directory's own entries, 2 also those of its subdirectories, and so on.")
     (:name "glob" :type :string
	    :description "Only files whose name matches this wildcard, e.g. \"*.lisp\" (with a slash: matched against the path from the listed directory). Directories are always listed. Default: every file."))
   :safety-level :safe
   :categories '(:files)
   :handler #'sly-agent-q--list-directory))

;; Defined when loaded, with the module (which is not loaded while this
;; file is byte-compiled).  Defining Elisp tools does not boot Lisp.
(when (featurep 'sly-agent-q-module)
  (sly-agent-q--define-project-tools))

(provide 'sly-agent-q-project-tools)

;;; sly-agent-q-project-tools.el ends here
