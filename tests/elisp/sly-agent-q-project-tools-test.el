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
(require 'sly-agent-q-lisp-mode)
(require 'flymake)

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
    (should (equal (agentq-bt-fails "list_directory" '(:depth 0)) "Invalid argument 'depth': at least 1, got 0"))
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

;;;; search_files

(ert-deftest sly-agent-q-project-tools/search-files ()
  (agentq-pt-with-project (dir outside)
    (agentq-bt-write (expand-file-name "src/geo.lisp" dir)
                     "(in-package :geo)\n\n(defun area (r)\n  (* pi r r))\n\n(defun area-of (shape)\n  (area (radius shape)))\n")
    (agentq-bt-write (expand-file-name "src/notes.txt" dir) "the area — “area” of a circle\nπ r²\n")
    (agentq-bt-write (expand-file-name "README.md" dir) "Computes the area.\n")
    (agentq-bt-write (expand-file-name ".git/objects/x" dir) "(defun area (r) in git)\n")
    (agentq-bt-write (expand-file-name "build/geo.lisp" dir) "(defun area (r) built)\n")
    (agentq-bt-write (expand-file-name "node_modules/m.js" dir) "area\n")
    (let ((coding-system-for-write 'no-conversion))
      (write-region "area\0binary" nil (expand-file-name "src/geo.fasl" dir) nil 'silent))
    ;; A link out of the root, to a file and a directory, is not followed.
    (agentq-pt-escapes dir outside)
    (agentq-bt-write (expand-file-name "secret-area.txt" outside) "area secret text\n")
    ;; Every matching line, path:line: text, paths from the root; .git,
    ;; build, node_modules, binary files and links left out.
    (should (equal (agentq-bt-ok "search_files" '(:regexp "area"))
                   (concat "5 lines match 'area' in . (3 files searched, 1 skipped as binary or larger than 2M):\n"
                           "README.md:1: Computes the area.\n"
                           "src/geo.lisp:3: (defun area (r)\n"
                           "src/geo.lisp:6: (defun area-of (shape)\n"
                           "src/geo.lisp:7: (area (radius shape)))\n"
                           "src/notes.txt:1: the area — “area” of a circle")))
    ;; An Emacs regexp; syntax classes see non-ASCII characters as they are.
    (should (equal (agentq-bt-ok "search_files" '(:regexp "(defun \\(area\\|perimeter\\)\\_>" :glob "*.lisp"))
                   "1 line matches '(defun \\(area\\|perimeter\\)\\_>' in . (1 file searched):\nsrc/geo.lisp:3: (defun area (r)"))
    (should (equal (agentq-bt-ok "search_files" '(:regexp "“\\_<area\\_>”"))
                   "1 line matches '“\\_<area\\_>”' in . (3 files searched, 1 skipped as binary or larger than 2M):\nsrc/notes.txt:1: the area — “area” of a circle"))
    (should (equal (agentq-bt-ok "search_files" '(:regexp "π r[²³]" :path "src"))
                   "1 line matches 'π r[²³]' in src (2 files searched, 1 skipped as binary or larger than 2M):\nsrc/notes.txt:2: π r²"))
    (should (equal (agentq-bt-ok "search_files" '(:regexp "^$" :path "src/geo.lisp"))
                   "2 lines match '^$' in src/geo.lisp (1 file searched):\nsrc/geo.lisp:2: \nsrc/geo.lisp:5: "))
    (should (equal (agentq-bt-ok "search_files" '(:regexp "AREA"))
                   "No lines match 'AREA' in . (3 files searched, 1 skipped as binary or larger than 2M)."))
    ;; Bounded, with a marker.
    (let ((sly-agent-q-search-match-limit 2))
      (should (equal (agentq-bt-ok "search_files" '(:regexp "area" :path "src"))
                     (concat "The first 2 lines that match 'area' in src (the search stopped there; 1 file searched, 1 skipped as binary or larger than 2M):\n"
                             "src/geo.lisp:3: (defun area (r)\n"
                             "src/geo.lisp:6: (defun area-of (shape)\n"
                             "[... more lines not shown: the search stops at 2 lines (sly-agent-q-search-match-limit). Use a more specific regexp, a path or a glob ...]"))))
    (let ((sly-agent-q-search-file-size-limit 20))
      (should (string-prefix-p "1 line matches 'area' in . (1 file searched, 3 skipped as binary or larger than 20)"
                               (agentq-bt-ok "search_files" '(:regexp "area")))))
    ;; A bounded number of files.
    (let ((sly-agent-q-search-file-count-limit 1))
      (should (equal (agentq-bt-ok "search_files" '(:regexp "area"))
                     "1 line matches 'area' in . (1 file searched; stopped after 1 file (sly-agent-q-search-file-count-limit): give a path or a glob):\nREADME.md:1: Computes the area.")))
    ;; Bad regexps and paths.
    (should (string-prefix-p "Invalid regular expression '\\(': Unmatched ( or \\(. Patterns use Emacs regexp syntax"
                             (agentq-bt-fails "search_files" '(:regexp "\\("))))
    ;; Regexps whose matching can take exponential time are refused (a
    ;; line of 40 a's would hang Emacs with the first two).
    (agentq-bt-write (expand-file-name "src/aaa.txt" dir) (concat (make-string 40 ?a) "\n"))
    (dolist (regexp '("\\(a*\\)*b" "\\(a\\|a\\)*b" "x\\(y\\(a+\\)\\)\\{2,\\}"))
      (should (string-prefix-p (format "The regexp '%s' repeats a group that itself repeats something or has alternatives" regexp)
                               (agentq-bt-fails "search_files" `(:regexp ,regexp)))))
    (should (equal (agentq-bt-ok "search_files" '(:regexp "\\(?:a\\|b\\)a*$" :path "src/aaa.txt"))
                   (format "1 line matches '\\(?:a\\|b\\)a*$' in src/aaa.txt (1 file searched):\nsrc/aaa.txt:1: %s" (make-string 40 ?a))))
    (should (equal (agentq-bt-fails "search_files" '(:regexp ""))
                   "The regexp is empty. Give the Emacs regular expression to search for."))
    (should (string-prefix-p "nope does not exist." (agentq-bt-fails "search_files" '(:regexp "a" :path "nope"))))
    ;; Confined: no path leads out, and nothing outside is read.
    (dolist (path (agentq-pt-escapes dir outside))
      (ert-info ((format "path %s" path))
        (let ((text (agentq-bt-fails "search_files" `(:regexp "secret" :path ,path))))
          (should (agentq-pt-denied-p text))
          (should-not (string-match-p "secret text" text)))))
    (should (string-prefix-p "No lines match 'secret text'" (agentq-bt-ok "search_files" '(:regexp "secret text"))))))

;;;; find_definitions

(defconst agentq-pt--geo
  "(defpackage #:geo
  (:use :cl)
  (:export #:area))

(in-package :geo)

(defun area (r)
  \"The area.
(defun area (in a docstring)\"
  (* pi r r))

(defun (setf area) (value r)
  (list value r))

#|
(defun area (commented out)
|#
;(defun area (a line comment)

(defgeneric area-of (shape))

(defmethod area-of ((c circle))
  (area (c-r c)))

(defstruct (circle (:conc-name c-))
  r)

(CL:DEFMACRO Area-Macro (x) x)

(progn
  (defun area (indented: not found)))

(defvar *area* 1)
"
  "A Lisp file with definitions of AREA found and not found.")

(ert-deftest sly-agent-q-project-tools/find-definitions ()
  (agentq-pt-with-project (dir outside)
    (agentq-bt-write (expand-file-name "src/geo.lisp" dir) agentq-pt--geo)
    (agentq-bt-write (expand-file-name "geo.asd" dir) "(defsystem \"geo\" :components ((:file \"src/geo\")))\n(defpackage :geo-system (:use :cl :asdf))\n")
    (agentq-bt-write (expand-file-name "notes.txt" dir) "(defun area (in a text file))\n")
    (agentq-bt-write (expand-file-name ".git/x.lisp" dir) "(defun area (in git))\n")
    (agentq-bt-write (expand-file-name "build/geo.lisp" dir) "(defun area (built))\n")
    (agentq-pt-escapes dir outside)
    (make-symbolic-link (expand-file-name "secret.lisp" outside) (expand-file-name "src/secret-link.lisp" dir))
    ;; The top-level defun and (setf area); not the docstring, the
    ;; comments, the indented one, the text file, .git or build.
    (should (equal (agentq-bt-ok "find_definitions" '(:name "area"))
                   (concat "2 definitions of area (2 Lisp files read):\n"
                           "src/geo.lisp:7: defun: (defun area (r)\n"
                           "src/geo.lisp:12: defun: (defun (setf area) (value r)")))
    ;; Case and package prefixes do not matter; each kind.
    (should (equal (agentq-bt-ok "find_definitions" '(:name "GEO::AREA-OF"))
                   (concat "2 definitions of GEO::AREA-OF (2 Lisp files read):\n"
                           "src/geo.lisp:20: defgeneric: (defgeneric area-of (shape))\n"
                           "src/geo.lisp:22: defmethod: (defmethod area-of ((c circle))")))
    (dolist (case '(("circle" "src/geo.lisp:25: defstruct: (defstruct (circle (:conc-name c-))")
                    ("area-macro" "src/geo.lisp:28: defmacro: (CL:DEFMACRO Area-Macro (x) x)")
                    ("*area*" "src/geo.lisp:33: defvar: (defvar *area* 1)")
                    (":geo" "src/geo.lisp:1: defpackage: (defpackage #:geo")
                    ("geo-system" "geo.asd:2: defpackage: (defpackage :geo-system (:use :cl :asdf))")))
      (should (equal (agentq-bt-ok "find_definitions" `(:name ,(car case)))
                     (format "1 definition of %s (2 Lisp files read):\n%s" (car case) (cadr case)))))
    (should (equal (agentq-bt-ok "find_definitions" '(:name "perimeter"))
                   "No top-level definition of perimeter in the project's Lisp files (2 .lisp, .lsp, .cl and .asd files read). find_definitions reads forms that begin at the start of a line; search_files finds other mentions."))
    ;; Nothing outside is read: not through a link to a file or a directory.
    (should (string-prefix-p "No top-level definition of secret-fn " (agentq-bt-ok "find_definitions" '(:name "secret-fn"))))
    (should (equal (agentq-bt-fails "find_definitions" '(:name "(area"))
                   "The name '(area' is not a symbol's name. Give the name a definition defines, such as area or geo:area."))
    (should (string-prefix-p "The name '' is not" (agentq-bt-fails "find_definitions" '(:name " "))))
    ;; Bounded: files, and definitions.
    (let ((sly-agent-q-search-file-count-limit 1))
      (should (equal (agentq-bt-ok "find_definitions" '(:name "area"))
                     "No top-level definition of area in the project's Lisp files (1 .lisp, .lsp, .cl and .asd file read; stopped after 1 file (sly-agent-q-search-file-count-limit)). find_definitions reads forms that begin at the start of a line; search_files finds other mentions.")))
    (let ((sly-agent-q-search-match-limit 1))
      (should (equal (agentq-bt-ok "find_definitions" '(:name "area"))
                     (concat "The first 1 definition of area (2 Lisp files read):\n"
                             "src/geo.lisp:7: defun: (defun area (r)\n"
                             "[... more definitions not shown: the search stops at 1 (sly-agent-q-search-match-limit) ...]"))))))

;;;; get_diagnostics

(defconst agentq-pt--noted
  "(in-package :cl-user)

(defun agentq-pt-fine (a)
  (* a 2))

(defun agentq-pt-calls-nothing (x)
  (agentq-pt-undefined-fn x 1))
"
  "A Lisp file whose compilation leaves one note: an undefined function.")

(defun agentq-pt--flymake-backend (report-fn &rest _)
  "A flymake backend: one error on line 3 of the buffer, reported at once."
  (funcall report-fn
           (list (flymake-make-diagnostic (current-buffer)
                                          (save-excursion (goto-char (point-min)) (forward-line 2) (point))
                                          (save-excursion (goto-char (point-min)) (forward-line 2) (line-end-position))
                                          :error "the test's backend marks this line"))))

(ert-deftest sly-agent-q-project-tools/get-diagnostics ()
  (agentq-pt-with-project (dir outside)
    (let* ((file (agentq-bt-write (expand-file-name "src/noted.lisp" dir) agentq-pt--noted))
           (buffer (find-file-noselect file))
           (plain (get-buffer-create "agentq-pt plain"))
           (secret (find-file-noselect (expand-file-name "secret.lisp" outside))))
      (agentq-bt-write (expand-file-name "src/closed.lisp" dir) "(defun closed ())\n")
      (agentq-pt-escapes dir outside)
      (unwind-protect
          (progn
            ;; Not compiled yet: no notes, and flymake off.
            (should (equal (agentq-bt-ok "get_diagnostics" '(:path "src/noted.lisp"))
                           (concat "Diagnostics of src/noted.lisp (buffer noted.lisp):\n"
                                   "Compiler notes: none (not compiled in Emacs since it was opened: C-c C-k compiles the file, C-c C-c one form).\n"
                                   "Flymake: off in this buffer.")))
            ;; C-c C-k, as the user compiles: the note it leaves is read.
            ;; (A first compilation in a fresh session also reports ECL's
            ;; "Duplicate proclamation" warnings, hundreds of them, on
            ;; line 1: compile once before, so that this one is alone.)
            (agentq-test-call "compile_form" '(:form "(defun agentq-pt-warm-up () 1)"))
            (with-current-buffer buffer
              (should sly-agent-q-lisp-mode)
              (save-window-excursion (sly-agent-q-compile-and-load-file file))
              (let ((deadline (+ (float-time) 60)))
                (while (and (null sly-agent-q-notes-compiled) (< (float-time) deadline))
                  (accept-process-output nil 0.05)))
              (should sly-agent-q-notes-compiled))
            (let ((text (agentq-bt-ok "get_diagnostics" '(:path "src/noted.lisp"))))
              (should (string-match-p
                       (concat "\\`Diagnostics of src/noted.lisp (buffer noted.lisp):\n"
                               "Compiler notes (1, from compilations in Emacs, the last at [0-9:]+):\n"
                               "  line 7, column 3: STYLE-WARNING: Undefined function \\(COMMON-LISP-USER::\\)?AGENTQ-PT-UNDEFINED-FN.*\n"
                               "Flymake: off in this buffer.\\'")
                       text))
              ;; The same by the buffer's name.
              (should (equal (agentq-bt-ok "get_diagnostics" '(:buffer "noted.lisp")) text)))
            ;; Flymake's diagnostics too, when it is on.
            (with-current-buffer buffer
              (add-hook 'flymake-diagnostic-functions #'agentq-pt--flymake-backend nil t)
              (flymake-mode 1)
              (flymake-start nil t)
              (let ((deadline (+ (float-time) 10)))
                (while (and (null (flymake-diagnostics)) (< (float-time) deadline))
                  (accept-process-output nil 0.05))))
            (should (string-suffix-p
                     "Flymake (1):\n  line 3, column 1: error: the test's backend marks this line"
                     (agentq-bt-ok "get_diagnostics" '(:buffer "noted.lisp"))))
            ;; A buffer without a file; unsaved changes are said.
            (with-current-buffer plain (insert "x"))
            (should (equal (agentq-bt-ok "get_diagnostics" '(:buffer "agentq-pt plain"))
                           (concat "Diagnostics of buffer agentq-pt plain, which has unsaved changes:\n"
                                   "Compiler notes: none (not compiled in Emacs since it was opened: C-c C-k compiles the file, C-c C-c one form).\n"
                                   "Flymake: off in this buffer.")))
            ;; A file no buffer visits; bad arguments.
            (should (string-prefix-p (format "No buffer visits %ssrc/closed.lisp, so there are no diagnostics for it" dir)
                                     (agentq-bt-fails "get_diagnostics" '(:path "src/closed.lisp"))))
            (should (equal (agentq-bt-fails "get_diagnostics" '(:path "src/noted.lisp" :buffer "noted.lisp"))
                           "Give path or buffer, not both."))
            (should (equal (agentq-bt-fails "get_diagnostics" nil)
                           "Give path (a file open in Emacs) or buffer (a buffer's name)."))
            ;; Confined: a buffer visiting a file outside, by its name or
            ;; by any path that leads there.
            (should (string-prefix-p (format "Access denied: buffer %s visits %ssecret.lisp, which is outside the allowed directories"
                                             (buffer-name secret) outside)
                                     (agentq-bt-fails "get_diagnostics" `(:buffer ,(buffer-name secret)))))
            (dolist (path (append (list "out-link/secret.lisp" (expand-file-name "secret.lisp" outside)
                                        (concat "../" (file-name-nondirectory (directory-file-name outside)) "/secret.lisp"))
                                  (agentq-pt-escapes dir outside)))
              (ert-info ((format "path %s" path))
                (should (agentq-pt-denied-p (agentq-bt-fails "get_diagnostics" `(:path ,path)))))))
        (kill-buffer plain)
        (kill-buffer secret)))))

;;;; Hostile arguments

(ert-deftest sly-agent-q-project-tools/hostile-arguments ()
  "NULs, control characters, huge and odd strings in every argument of
the four tools, over MCP (from Elisp with a NUL): each call is answered (a result, failed or
not, or the executor's argument error), nothing outside is read, and
Emacs goes on answering.  (tests/hostile/make-cases.py's corpus runs
against the headless server and the in-process C++ one, which do not
have these Emacs tools; this is their share of it.)"
  (agentq-pt-with-project (dir outside)
    (agentq-bt-write (expand-file-name "src/a.lisp" dir) "(defun a () 1)\n")
    (agentq-pt-escapes dir outside)
    (let ((values (list "\0" "a\0b" "src\0/../../" "\n" "\t\r" (make-string 100000 ?x) "💥"
                        "~" "~root" "$HOME" "//" "/proc/self/root/etc" "/dev/null" "src/a.lisp/.."
                        "[" "*" "**/*" "\\" "\\(" "#.(ext:quit)" ":" "::" "|" "(setf" ""))
          (answered 0))
      (dolist (call '(("list_directory" "path") ("list_directory" "glob")
                      ("search_files" "regexp") ("search_files" "path") ("search_files" "glob")
                      ("find_definitions" "name")
                      ("get_diagnostics" "path") ("get_diagnostics" "buffer")))
        (dolist (value values)
          (ert-info ((format "%s %s %S" (car call) (cadr call) (truncate-string-to-width value 40)))
            (let* ((arguments (let ((table (make-hash-table :test 'equal)))
                                (puthash (cadr call) value table)
                                (when (and (equal (car call) "search_files") (not (equal (cadr call) "regexp")))
                                  (puthash "regexp" "defun" table))
                                table))
                   ;; Emacs's JSON parser (the test's, not the server's)
                   ;; refuses \u0000 in an answer: those from Elisp.
                   (answer (if (string-search "\0" value)
                               (let ((result (agentq-test-call (car call) arguments)))
                                 (cons (plist-get result :success) (plist-get result :content)))
                             (agentq-bt-mcp (car call) arguments))))
              (setq answered (1+ answered))
              (should (stringp (cdr answer)))
              (should-not (string-match-p "secret text" (cdr answer)))
              (should-not (string-match-p "\\`Tool error: " (cdr answer)))))))
      (should (= answered (* 8 (length values))))
      ;; Depths from 1 to huge, and wrong types, are answered too.
      (dolist (depth '(1 100 1000000 -1 0))
        (should (stringp (cdr (agentq-bt-mcp "list_directory" `(:depth ,depth))))))
      (should (string-prefix-p "." (agentq-bt-ok "list_directory" '(:depth 1000000))))
      (should (equal (agentq-test-content "(+ 1 2)") "=> 3")))))

;;; sly-agent-q-project-tools-test.el ends here
