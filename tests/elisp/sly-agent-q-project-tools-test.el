;;; sly-agent-q-project-tools-test.el --- list_directory, search_files, find_definitions, get_diagnostics -*- lexical-binding: t; -*-

;;; Commentary:

;; The project tools of elisp/sly-agent-q-project-tools.el, called from
;; Elisp and over MCP tools/call (the two must agree) on real files in
;; fresh temporary directories.  Each tool is tried against its
;; confinement: "..", absolute paths outside, a symbolic link out of
;; the allowed directory (as the path given, and met during a walk).
;; The approval function fails the test if anything asks: these tools
;; are safe.

;;; Code:

(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-buffer-tools-test)

(defmacro agentq-pt-with-project (vars &rest body)
  "Run BODY with VARS bound to a fresh allowed directory and one outside it.
VARS is (DIR OUTSIDE): true names ending in a slash.  DIR is the one
allowed directory; OUTSIDE holds secret.txt and secret.lisp.  Nothing
may ask for approval."
  (declare (indent 1) (debug ((symbolp symbolp) body)))
  (let ((dir (nth 0 vars)) (outside (nth 1 vars)))
    `(agentq-bt-with-directory ,dir
       (let ((,outside (file-name-as-directory (file-truename (make-temp-file "agentq-pt-outside-" t))))
             (sly-agent-q-approval-function #'agentq-test-fail-if-asked))
         (unwind-protect
             (progn
               (agentq-bt-write (expand-file-name "secret.txt" ,outside) "secret text\n")
               (agentq-bt-write (expand-file-name "secret.lisp" ,outside) "(defun secret-fn () :secret)\n")
               ,@body)
           (delete-directory ,outside t))))))

(defun agentq-pt-escapes (dir outside)
  "Paths that try to leave DIR for OUTSIDE; links to OUTSIDE are made in DIR."
  (make-symbolic-link (directory-file-name outside) (expand-file-name "out-link" dir) t)
  (make-symbolic-link (expand-file-name "secret.txt" outside) (expand-file-name "out-file.txt" dir) t)
  (list "out-link" "out-link/" "out-file.txt" ".." "../" (file-relative-name outside dir)
        outside (directory-file-name outside) "/etc" "/"
        (concat dir "sub/../../" (file-name-nondirectory (directory-file-name outside)))
        "/ssh:host:/etc"))

(defun agentq-pt-denied-p (text)
  "Non-nil when TEXT is the confinement's refusal."
  (string-match-p "\\`Access denied: .* which is outside the allowed directories" text))

;;;; list_directory

(ert-deftest sly-agent-q-project-tools/list-directory ()
  (agentq-pt-with-project (dir outside)
    (agentq-bt-write (expand-file-name "README.md" dir) "read me\n")
    (agentq-bt-write (expand-file-name "src/a.lisp" dir) "(a)\n")
    (agentq-bt-write (expand-file-name "src/deep/b.lisp" dir) "(b)\n")
    (agentq-bt-write (expand-file-name "src/notes.txt" dir) "n\n")
    (agentq-bt-write (expand-file-name ".git/HEAD" dir) "ref\n")
    (agentq-bt-write (expand-file-name "build/x.o" dir) "o\n")
    (make-symbolic-link "src/a.lisp" (expand-file-name "a-link.lisp" dir))
    (make-symbolic-link (directory-file-name outside) (expand-file-name "out-link" dir))
    ;; Depth 1 by default: the root's own entries, sorted; directories
    ;; marked, links not followed, .git and build not entered.
    (should (equal (agentq-bt-ok "list_directory" nil)
                   (concat ". (6 entries, depth 1):\n"
                           ".git/ (not entered: version control, build or dependencies)\n"
                           "README.md  8\n"
                           "a-link.lisp@ (symbolic link to src/a.lisp; not followed)\n"
                           "build/ (not entered: version control, build or dependencies)\n"
                           "out-link@ (symbolic link to a place outside the allowed directories; not followed)\n"
                           "src/")))
    ;; Deeper: a directory's entries right after it, paths from the root.
    (should (equal (agentq-bt-ok "list_directory" '(:path "src" :depth 2))
                   (concat "src (4 entries, depth 2):\n"
                           "src/a.lisp  4\n"
                           "src/deep/\n"
                           "src/deep/b.lisp  4\n"
                           "src/notes.txt  2")))
    ;; A glob keeps the files it matches, and the directories.
    (should (equal (agentq-bt-ok "list_directory" `(:path ,(concat dir "src/") :depth 5 :glob "*.lisp"))
                   "src (3 entries, depth 5, files matching *.lisp):\nsrc/a.lisp  4\nsrc/deep/\nsrc/deep/b.lisp  4"))
    (should (equal (agentq-bt-ok "list_directory" '(:path "src" :depth 3 :glob "deep/*"))
                   "src (2 entries, depth 3, files matching deep/*):\nsrc/deep/\nsrc/deep/b.lisp  4"))
    (should (equal (agentq-bt-ok "list_directory" '(:path "src/deep" :glob "*.c"))
                   "src/deep (0 entries, depth 1, files matching *.c):\n[no entries]"))
    ;; Bounded: a count of entries, with a marker.
    (let ((sly-agent-q-list-directory-limit 2))
      (should (equal (agentq-bt-ok "list_directory" '(:path "src" :depth 2))
                     (concat "src (2 entries, depth 2):\nsrc/a.lisp  4\nsrc/deep/\n"
                             "[... more entries not shown: the listing stops at 2 entries (sly-agent-q-list-directory-limit). List a subdirectory, or use a smaller depth or a glob ...]"))))
    (let ((sly-agent-q-read-limit 30))
      (should (string-suffix-p "[... more entries not shown: the listing stops at the read limit of 30 characters. List a subdirectory, or use a smaller depth or a glob ...]"
                               (agentq-bt-ok "list_directory" '(:path "src" :depth 2)))))
    ;; Not a directory, not there, a bad depth.
    (should (equal (agentq-bt-fails "list_directory" '(:path "README.md"))
                   "README.md is a file, not a directory. Give the path of a directory."))
    (should (string-prefix-p "nope does not exist." (agentq-bt-fails "list_directory" '(:path "nope"))))
    (should (equal (agentq-bt-fails "list_directory" '(:depth 0)) "depth must be at least 1, not 0."))
    ;; Confined: nothing outside is listed, however the path gets there.
    (dolist (path (agentq-pt-escapes dir outside))
      (ert-info ((format "path %s" path))
        (let ((text (agentq-bt-fails "list_directory" `(:path ,path))))
          (should (agentq-pt-denied-p text))
          (should-not (string-match-p "secret text" text)))))
    ;; A link out met on the way is listed, never entered.
    (let ((text (agentq-bt-ok "list_directory" '(:depth 10))))
      (should (string-match-p "^out-link@ (symbolic link to a place outside the allowed directories; not followed)$" text))
      (should-not (string-match-p "secret" text)))))

;;; sly-agent-q-project-tools-test.el ends here
