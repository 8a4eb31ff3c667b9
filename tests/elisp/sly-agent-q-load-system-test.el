;;; sly-agent-q-load-system-test.el --- The load_system tool -*- lexical-binding: t; -*-

;;; Commentary:

;; load_system with the real module, ECL's own ASDF and real files:
;; Debian's cl-alexandria (installed by `make test'), and systems each
;; test writes into a temporary directory that it names in
;; `sly-agent-q-system-directories'.  The tests that reset the session or
;; need a session without ASDF yet run in a fresh Emacs.  Compiled files
;; go to ASDF's cache (~/.cache/common-lisp/); a test's own systems are
;; removed from there afterwards.

;;; Code:

(require 'sly-agent-q-test-helpers)

(cl-defun agentq-load-test-write-system (directory name files &key version depends-on)
  "Write the ASDF system NAME into DIRECTORY/NAME/: FILES is ((BASE . TEXT) …),
its components in order.  VERSION and DEPENDS-ON (a list of system
names), if given, go into the .asd."
  (let ((home (file-name-as-directory (expand-file-name name directory))))
    (make-directory home t)
    (with-temp-file (expand-file-name (concat name ".asd") home)
      (insert (format "(defsystem %S%s%s :serial t :components (%s))\n" name
                      (if version (format " :version %S" version) "")
                      (if depends-on (format " :depends-on %S" depends-on) "")
                      (mapconcat (lambda (file) (format "(:file %S)" (car file))) files " "))))
    (dolist (file files)
      (with-temp-file (expand-file-name (concat (car file) ".lisp") home)
        (insert (cdr file))))
    home))

(defun agentq-load-test-cache-directory (directory)
  "Where load_system's fasl cache puts the fasls of DIRECTORY's files."
  (let ((cache (expand-file-name "sly-agent-q/fasl/" (or (getenv "XDG_CACHE_HOME") "~/.cache"))))
    (file-expand-wildcards (concat cache "ecl-*" (directory-file-name (expand-file-name directory))))))

(defmacro agentq-load-test-with-directory (variable &rest body)
  "Run BODY with VARIABLE a new temporary directory; delete it, and its
compiled files in ASDF's cache, afterwards."
  (declare (indent 1))
  `(let ((,variable (file-name-as-directory (make-temp-file "agentq-systems" t))))
     (unwind-protect (progn ,@body)
       (dolist (cached (agentq-load-test-cache-directory ,variable))
         (delete-directory cached t))
       (delete-directory ,variable t))))

(defun agentq-load-test-load (name)
  "Call load_system for NAME; return the result plist."
  (agentq-test-call "load_system" (list :name name)))

(defun agentq-load-test-files (directory)
  "The files under DIRECTORY, relative to it, sorted."
  (sort (mapcar (lambda (file) (file-relative-name file directory))
                (directory-files-recursively directory ""))
        #'string<))

(cl-defun agentq-load-test-fresh (steps &key (timeout 300) environment)
  "In a fresh Emacs, evaluate STEPS in order; return their values.
A step may call (agentq-load-test-call NAME ARG…), which runs the tool
NAME and gives (SUCCESS CONTENT).  ENVIRONMENT: more \"VAR=value\"
entries for the child's environment."
  (let ((process-environment (append environment process-environment)))
    (pcase-let ((`(,code ,stdout ,stderr ,_seconds)
                 (agentq-test-run-emacs
                  `((require 'sly-agent-q)
                    ;; A first compile of alexandria takes 10-20 s on a slow machine.
                    (setq sly-agent-q-eval-timeout 600)
                    (defun agentq-load-test-call (name &rest arguments)
                      (let ((result (car (sly-agent-q-execute-tool-calls
                                          (list (list :id "t" :name name :arguments arguments))))))
                        (list (plist-get result :success) (plist-get result :content))))
                    (princ "\nagentq-results:\n")
                    (prin1 (list ,@steps))
                    (kill-emacs 0))
                  :timeout timeout)))
      (unless (and (equal code 0) (string-search "agentq-results:\n" stdout))
        (ert-fail (list :exit code :stdout stdout :stderr stderr)))
      (car (read-from-string stdout (+ (string-search "agentq-results:\n" stdout)
                                       (length "agentq-results:\n")))))))

(defconst agentq-load-test-alexandria-loaded
  "\\`Loading system: alexandria\nLoaded: alexandria (version [0-9][0-9.]*)\\(\\'\\|\n\n\\[\\)"
  "The success text of loading alexandria (warnings, if any, after it).")

;;;; Debian's alexandria

(ert-deftest sly-agent-q-load-system/alexandria-loads-and-survives-reset ()
  (let ((out (agentq-load-test-fresh
              '((agentq-load-test-call "evaluate_lisp" :code "(find-package \"ASDF\")")
                (agentq-load-test-call "load_system" :name "alexandria")
                (agentq-load-test-call "evaluate_lisp" :code "(alexandria:flatten '((1) 2))")
                (agentq-load-test-call "list_definitions")
                (agentq-load-test-call "reset_session")
                (agentq-load-test-call "evaluate_lisp"
                                       :code "(list (alexandria:flatten '((1) 2)) (and (find-package \"ASDF\") t))")
                (agentq-load-test-call "load_system" :name "alexandria")))))
    ;; Boot does not load ASDF: the first load_system does.
    (should (equal (nth 0 out) '(t "=> NIL")))
    (should (eq (car (nth 1 out)) t))
    (should (string-match-p agentq-load-test-alexandria-loaded (cadr (nth 1 out))))
    (should (equal (nth 2 out) '(t "=> (1 2)")))
    ;; Debian's systems are part of the image, not session definitions ...
    (should (equal (nth 3 out) '(t "No definitions in this session yet.")))
    (should (equal (nth 4 out) '(t "Session reset. All definitions cleared.")))
    ;; ... so reset_session keeps them, and ASDF, usable.
    (should (equal (nth 5 out) '(t "=> ((1 2) T)")))
    (should (eq (car (nth 6 out)) t))
    (should (string-match-p agentq-load-test-alexandria-loaded (cadr (nth 6 out))))))

(ert-deftest sly-agent-q-load-system/alias-and-registration ()
  (let ((sly-agent-q-eval-timeout 600))
    (let ((result (agentq-test-call "load-system" '(:name "alexandria"))))
      (should (eq (plist-get result :success) t))
      (should (equal (agentq-test-metadata result :safety_level) "cautious"))
      (should (string-match-p agentq-load-test-alexandria-loaded (plist-get result :content)))))
  (should (equal (agentq-test-eval-ok "(alexandria:flatten '((1) 2))") "=> (1 2)"))
  (let ((tool (seq-find (lambda (tool) (equal (gethash "name" tool) "load_system"))
                        (sly-agent-q-tools-schema 'mcp))))
    (should tool)
    (should (equal (agentq-test-get tool "inputSchema" "required") ["name"])))
  ;; The name cannot be taken by a tool defined in Lisp, in either spelling.
  (dolist (name '("load_system" "load-system"))
    (should (string-match-p "runtime's own tool"
                            (agentq-test-eval-fails
                             (format "(agent-q:define-tool %S \"x\" nil :handler #'identity)" name))))))

;;;; The user's systems

(ert-deftest sly-agent-q-load-system/local-system-is-the-sessions ()
  (agentq-load-test-with-directory dir
    (agentq-load-test-write-system
     dir "agentq-demo"
     '(("package" . "(defpackage :agentq-demo (:use :cl) (:export #:greet))\n")
       ("greet" . "(in-package :agentq-demo)\n(defun greet (who)\n  (format nil \"Hello, ~A~A\" who (first (alexandria:flatten '((\"!\"))))))\n"))
     ;; One load of the user's system and Debian's alexandria.
     :version "1.2.3" :depends-on '("alexandria"))
    (let* ((sources (agentq-load-test-files dir))
           (load `(let ((sly-agent-q-system-directories (list ,dir)))
                    (agentq-load-test-call "load_system" :name "agentq-demo")))
           (out (agentq-load-test-fresh
                 `((agentq-load-test-call "load_system" :name "agentq-demo")
                   ,load
                   (agentq-load-test-call "evaluate_lisp" :code "(agentq-demo:greet \"you\")")
                   (agentq-load-test-call "list_definitions")
                   (agentq-load-test-call "reset_session")
                   (agentq-load-test-call "evaluate_lisp"
                                          :code "(list (find-package \"AGENTQ-DEMO\") (alexandria:flatten '((1) 2)))")
                   (agentq-load-test-call "list_definitions")
                   ,load
                   (agentq-load-test-call "evaluate_lisp" :code "(agentq-demo:greet \"again\")")))))
      ;; Without the directory the system is not found; the text says where it looked.
      (should (eq (car (nth 0 out)) nil))
      (should (string-prefix-p "[ERROR] ASDF:MISSING-COMPONENT\nComponent \"agentq-demo\" not found"
                               (cadr (nth 0 out))))
      (should (string-match-p "sly-agent-q-system-directories (none)" (cadr (nth 0 out))))
      ;; With it (a `let' around the call), it is, with its version.
      (should (equal (nth 1 out) '(t "Loading system: agentq-demo\nLoaded: agentq-demo (version 1.2.3)")))
      (should (equal (nth 2 out) '(t "=> \"Hello, you!\"")))
      ;; Its definitions are the session's; alexandria's are not.
      (should (equal (nth 3 out) '(t "[Functions]\n- AGENTQ-DEMO:GREET (AGENTQ-DEMO::WHO)")))
      (should (equal (nth 4 out) '(t "Session reset. All definitions cleared.")))
      (should (equal (nth 5 out) '(t "=> (NIL (1 2))")))
      (should (equal (nth 6 out) '(t "No definitions in this session yet.")))
      ;; ASDF forgot it with its package: it loads again (from the cache).
      (should (equal (nth 7 out) '(t "Loading system: agentq-demo\nLoaded: agentq-demo (version 1.2.3)")))
      (should (equal (nth 8 out) '(t "=> \"Hello, again!\"")))
      ;; The fasls went to the cache, none into the source tree.
      (should (equal (agentq-load-test-files dir) sources))
      (should (agentq-load-test-cache-directory dir)))))

(ert-deftest sly-agent-q-load-system/missing-system-fails ()
  (let ((result (agentq-load-test-load "agentq-no-such-system")))
    (should (eq (plist-get result :success) nil))
    (should (string-prefix-p "[ERROR] ASDF:MISSING-COMPONENT\nComponent \"agentq-no-such-system\" not found"
                             (plist-get result :content))))
  ;; Through MCP: a tool result with isError, not a protocol error.
  (let ((response (agentq-test-mcp '(:jsonrpc "2.0" :id 1 :method "tools/call"
                                     :params (:name "load_system" :arguments (:name "agentq-no-such-system"))))))
    (should (eq (agentq-test-get response "result" "isError") t))
    (should (string-prefix-p "[ERROR] ASDF:MISSING-COMPONENT"
                             (agentq-test-get response "result" "content" 0 "text"))))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-load-system/broken-sources-fail-and-warnings-are-shown ()
  (agentq-load-test-with-directory dir
    (agentq-load-test-write-system
     dir "agentq-unreadable"
     '(("a" . "(defun agentq-unreadable-ok () 1)\n(defun agentq-unreadable-broken () (list 1 2)))\n")))
    (agentq-load-test-write-system
     dir "agentq-uncompilable" '(("a" . "(defun agentq-uncompilable (x) (let ((1 2)) x))\n")))
    (agentq-load-test-write-system
     dir "agentq-warned"
     '(("a" . "(defpackage :agentq-warned (:use :cl))\n(in-package :agentq-warned)\n(defun unused (x) 1)\n(eval-when (:compile-toplevel) (warn \"agentq compile-time warning\"))\n")))
    (let ((sly-agent-q-system-directories (list dir)))
      (let ((content (plist-get (agentq-load-test-load "agentq-unreadable") :content)))
        (should (string-prefix-p "[ERROR] " content))
        (should (string-match-p "Unmatched right parenthesis" content)))
      (let ((content (plist-get (agentq-load-test-load "agentq-uncompilable") :content)))
        (should (string-prefix-p "[ERROR] " content))
        ;; ECL's C compiler: "The variable 1 is not a symbol."; its
        ;; bytecodes compiler: "Not a valid variable name 1."
        (should (string-match-p "variable" content)))
      (let ((result (agentq-load-test-load "agentq-warned")))
        (should (eq (plist-get result :success) t))
        (should (string-prefix-p "Loading system: agentq-warned\nLoaded: agentq-warned (version unknown)\n\n[warnings]\n"
                                 (plist-get result :content)))
        (should (string-match-p "^SIMPLE-WARNING: agentq compile-time warning$" (plist-get result :content)))
        (when (executable-find "gcc")       ; only ECL's C compiler warns of these
          (should (string-match-p (concat "^STYLE-WARNING: The variable X is not used\\. ("
                                          (regexp-quote (expand-file-name "agentq-warned/a.lisp" dir)) ":3)$")
                                  (plist-get result :content))))))
    (should (equal (agentq-test-eval-ok "(agentq-warned::unused 2)") "=> 1"))))

;;;; Stopping a load

(defun agentq-load-test-slow-system (dir name)
  "Write the system NAME into DIR: its second file takes 60 s to compile and
load while DIR/NAME/slow exists.  Returns that file's name."
  (let* ((home (file-name-as-directory (expand-file-name name dir)))
         (marker (expand-file-name "slow" home)))
    (agentq-load-test-write-system
     dir name
     `(("a" . ,(format "(defpackage :%s (:use :cl))\n(in-package :%s)\n(defun a () :a)\n" name name))
       ("b" . ,(format "(in-package :%s)\n(eval-when (:compile-toplevel :load-toplevel :execute)\n  (when (probe-file %S) (sleep 60)))\n(defun b () :b)\n"
                       name marker)))
     :version "2")
    (with-temp-file marker)
    marker))

(ert-deftest sly-agent-q-load-system/timed-out-load-then-loads-with-progress ()
  (agentq-load-test-with-directory dir
    (let* ((marker (agentq-load-test-slow-system dir "agentq-slow"))
           (seen nil)
           (record (lambda (_seconds)
                     (when sly-agent-q--progress-detail
                       (cl-pushnew sly-agent-q--progress-detail seen :test #'equal))))
           (sly-agent-q-system-directories (list dir))
           (sly-agent-q-wait-functions (list record)))
      (let* ((start (float-time))
             (result (let ((sly-agent-q-eval-timeout 2)) (agentq-load-test-load "agentq-slow"))))
        (should (< (- (float-time) start) 10))
        (should (eq (plist-get result :success) nil))
        (should (string-prefix-p "[ERROR] TIMEOUT" (plist-get result :content)))
        (should (string-match-p "load_system again goes on from there" (plist-get result :content))))
      ;; While it compiled the slow file, Emacs was told which one.
      (should (member "Loading agentq-slow: compiling agentq-slow/b" seen))
      (agentq-test-should-be-alive)
      (delete-file marker)
      (should (equal (plist-get (agentq-load-test-load "agentq-slow") :content)
                     "Loading system: agentq-slow\nLoaded: agentq-slow (version 2)"))
      (should (equal (agentq-test-eval-ok "(list (agentq-slow::a) (agentq-slow::b))") "=> (:A :B)")))))

(ert-deftest sly-agent-q-load-system/cancelled-load-then-loads ()
  (agentq-load-test-with-directory dir
    (let* ((marker (agentq-load-test-slow-system dir "agentq-cancelled"))
           (sly-agent-q-system-directories (list dir))
           (results 'pending)
           (job (sly-agent-q-execute-tool-calls-async
                 '((:id "l" :name "load_system" :arguments (:name "agentq-cancelled")))
                 (lambda (r) (setq results r))))
           (end (+ (float-time) 30)))
      ;; Cancel once it is inside the slow file (C-g in a synchronous call
      ;; takes the same path: sly-agent-q-cancel and C-g both interrupt the job).
      (while (and (not (equal sly-agent-q--progress-detail
                              "Loading agentq-cancelled: compiling agentq-cancelled/b"))
                  (< (float-time) end))
        (accept-process-output nil 0.02))
      (should (equal sly-agent-q--progress-detail "Loading agentq-cancelled: compiling agentq-cancelled/b"))
      (sleep-for 0.2)
      (should (sly-agent-q-cancel job))
      (setq end (+ (float-time) 10))
      (while (and (eq results 'pending) (< (float-time) end))
        (accept-process-output nil 0.02))
      (should (listp results))
      (should (string-prefix-p "[ERROR] INTERRUPTED" (plist-get (car results) :content)))
      ;; The progress message went with the job.
      (should (null sly-agent-q--progress-detail))
      (delete-file marker)
      (should (equal (plist-get (agentq-load-test-load "agentq-cancelled") :content)
                     "Loading system: agentq-cancelled\nLoaded: agentq-cancelled (version 2)"))
      (should (equal (agentq-test-eval-ok "(agentq-cancelled::b)") "=> :B")))))

;;;; The fasl cache

(ert-deftest sly-agent-q-load-system/fasl-cache-reused-and-invalidated-by-content ()
  ;; Compiled files go to $XDG_CACHE_HOME/sly-agent-q/fasl/, named with
  ;; their source's content hash: a later session loads them without
  ;; compiling; an edited source is compiled again, even when its time
  ;; stamp did not move.
  (agentq-load-test-with-directory dir
    (let* ((home (agentq-load-test-write-system
                  dir "agentq-cached"
                  '(("a" . "(defpackage :agentq-cached (:use :cl))\n(in-package :agentq-cached)\n(defun which () :first)\n"))))
           (source (expand-file-name "a.lisp" home))
           (steps `((let ((sly-agent-q-system-directories (list ,dir)))
                      (agentq-load-test-call "load_system" :name "agentq-cached"))
                    (agentq-load-test-call "evaluate_lisp" :code "(agentq-cached::which)")))
           (fasls (lambda ()
                    (let ((cache (car (agentq-load-test-cache-directory dir))))
                      (and cache (file-expand-wildcards (concat cache "/agentq-cached/a-*.fas*"))))))
           (mtime (lambda (file) (file-attribute-modification-time (file-attributes file)))))
      (should (equal (cadr (agentq-load-test-fresh steps)) '(t "=> :FIRST")))
      (let* ((first (funcall fasls))
             (first-time (funcall mtime (car first))))
        (should (= (length first) 1))
        ;; A new session: loaded from the cache, not compiled again.
        (sleep-for 1.1)
        (should (equal (cadr (agentq-load-test-fresh steps)) '(t "=> :FIRST")))
        (should (equal (funcall fasls) first))
        (should (equal (funcall mtime (car first)) first-time))
        ;; The source changes, its time stamp does not.
        (let ((stamp (funcall mtime source)))
          (with-temp-file source
            (insert "(defpackage :agentq-cached (:use :cl))\n(in-package :agentq-cached)\n(defun which () :second)\n"))
          (set-file-times source stamp))
        (should (equal (cadr (agentq-load-test-fresh steps)) '(t "=> :SECOND")))
        (should (= (length (funcall fasls)) 2))))))

;;;; No C compiler

(ert-deftest sly-agent-q-load-system/without-a-c-compiler ()
  ;; With no gcc on PATH, ECL's bytecodes compiler compiles (.fasc files).
  (agentq-load-test-with-directory dir
    (agentq-load-test-write-system
     dir "agentq-bytecodes"
     '(("a" . "(defpackage :agentq-bytecodes (:use :cl))\n(in-package :agentq-bytecodes)\n(defun twice (x) (* 2 x))\n")))
    (let ((out (agentq-load-test-fresh
                `((let ((sly-agent-q-system-directories (list ,dir)))
                    (agentq-load-test-call "load_system" :name "agentq-bytecodes"))
                  (agentq-load-test-call "evaluate_lisp" :code "(agentq-bytecodes::twice 21)"))
                :environment '("PATH=/nonexistent"))))
      (should (equal (nth 0 out) '(t "Loading system: agentq-bytecodes\nLoaded: agentq-bytecodes (version unknown)")))
      (should (equal (nth 1 out) '(t "=> 42")))
      (should (file-expand-wildcards
               (concat (car (agentq-load-test-cache-directory dir)) "/agentq-bytecodes/a-*.fasc"))))))

(ert-deftest sly-agent-q-load-system/describe-system-before-and-after-loading ()
  "describe_system, an agent's call that asks nothing: a user's system
with its file, version, dependencies (loaded, not loaded, not found),
whether a compiled build is cached, and its components; then loaded."
  (agentq-load-test-with-directory directory
    (agentq-load-test-write-system directory "agentq-described"
                                   '(("package" . "(defpackage :agentq-described (:use :cl))")
                                     ("code" . "(in-package :agentq-described) (defun f () 1)"))
                                   :version "0.3" :depends-on '("alexandria"))
    (unwind-protect
        (let ((sly-agent-q-system-directories (list directory))
              (sly-agent-q-call-origin "chat")
              (sly-agent-q-approval-function #'agentq-test-fail-if-asked))
          (let ((text (plist-get (agentq-test-call "describe_system" '(:name "agentq-described")) :content)))
            (should (string-prefix-p "System agentq-described (version 0.3)\n" text))
            (should (string-match-p (format "^Defined in: %s$" (regexp-quote (file-truename (expand-file-name "agentq-described/agentq-described.asd" directory))))
                                    text))
            (should (string-match-p "^Whose: the user's" text))
            (should (string-match-p "^Loaded: no$" text))
            (should (string-match-p "^Depends on: alexandria (\\(not \\)?loaded)$" text))
            (should (string-match-p "^Compiled: none of its 2 files is compiled yet$" text))
            (should (string-match-p "^Components:\n  package\n  code\\'" text)))
          (let ((sly-agent-q-call-origin "user"))
            (should (plist-get (agentq-load-test-load "agentq-described") :success)))
          (let ((text (plist-get (agentq-test-call "describe_system" '(:name "agentq-described")) :content)))
            (should (string-match-p "^Loaded: yes$" text))
            (should (string-match-p "^Depends on: alexandria (loaded)$" text))
            (should (string-match-p "^Compiled: all 2 compiled files are cached: loading is fast$" text)))
          (let ((result (agentq-test-call "describe_system" '(:name "agentq-no-such-system"))))
            (should-not (plist-get result :success))
            (should (string-prefix-p "No system named \"agentq-no-such-system\" was found" (plist-get result :content)))))
      (agentq-test-forget-systems '("agentq-described") '("AGENTQ-DESCRIBED")))))

;;;; list_systems: the loaded systems, from memory

(ert-deftest sly-agent-q-load-system/list-systems-from-memory ()
  "list_systems, an agent's call that asks nothing: before ASDF is loaded
it says so and does not load it; after a load it lists ASDF's own
systems and the user's one with its version and directory, filtered and
cut at a limit; wrong arguments are refused with what was wrong."
  (agentq-load-test-with-directory dir
    (agentq-load-test-write-system dir "agentq-listed" '(("a" . "(defun agentq-listed-f () 1)"))
                                   :version "2.5")
    (let* ((home (file-truename (expand-file-name "agentq-listed/" dir)))
           (out (agentq-load-test-fresh
                 `((defun agentq-list-call (&rest arguments)
                     ;; An agent's call (the chat's), with an approval function that fails if asked.
                     (let ((sly-agent-q-call-origin "chat")
                           (sly-agent-q-approval-function
                            (lambda (&rest question) (error "An approval question was asked: %S" question))))
                       (apply #'agentq-load-test-call "list_systems" arguments)))
                   (agentq-list-call)
                   (agentq-load-test-call "evaluate_lisp" :code "(find-package \"ASDF\")")
                   (let ((sly-agent-q-system-directories (list ,dir)))
                     (agentq-load-test-call "load_system" :name "agentq-listed"))
                   (agentq-list-call)
                   (agentq-list-call :filter " LISTED ")
                   (agentq-list-call :limit 1)
                   (agentq-list-call :filter "agentq-no-such")
                   (agentq-list-call :limit 0)
                   (agentq-list-call :limit 1001)
                   (agentq-list-call :limit "ten")
                   (agentq-list-call :filter 7)
                   (agentq-list-call :name "asdf")
                   (car (sly-agent-q-execute-tool-calls '((:id "m" :name "list_systems"))))))))
      (should (equal (nth 1 out)
                     '(t "ASDF is not loaded in this session, so no ASDF system is loaded. list_systems does not load it; load_system does (then the system asked for).")))
      ;; Asking did not load it.
      (should (equal (nth 2 out) '(t "=> NIL")))
      (should (equal (nth 3 out) '(t "Loading system: agentq-listed\nLoaded: agentq-listed (version 2.5)")))
      (pcase-let ((`(,success ,text) (nth 4 out)))
        (should (eq success t))
        (should (string-match "\\`\\([0-9]+\\) ASDF systems loaded (ASDF [0-9.]+):\n" text))
        (let ((count (string-to-number (match-string 1 text)))
              (lines (cdr (split-string text "\n"))))
          (should (= count (length lines)))
          ;; By name; ASDF's own, from no file, and the user's, from its directory.
          (should (equal lines (sort (copy-sequence lines) #'string<)))
          (should (member (format "- agentq-listed 2.5 in %s" home) lines))
          (should (seq-find (lambda (line) (string-match-p "\\`- asdf [0-9.]+ (no .asd file)\\'" line)) lines))
          (should (seq-find (lambda (line) (string-match-p "\\`- uiop [0-9.]+ (no .asd file)\\'" line)) lines))
          (should (equal (nth 6 out)
                         (list t (format "%d ASDF systems loaded (ASDF %s), showing the first 1:\n%s"
                                         count (progn (string-match "(ASDF \\([0-9.]+\\))" text) (match-string 1 text))
                                         (car lines)))))))
      (should (equal (nth 5 out)
                     (list t (format "1 ASDF system loaded matching \"LISTED\" (ASDF %s):\n- agentq-listed 2.5 in %s"
                                     (progn (string-match "(ASDF \\([0-9.]+\\))" (cadr (nth 4 out)))
                                            (match-string 1 (cadr (nth 4 out))))
                                     home))))
      (should (eq (car (nth 7 out)) t))
      (should (string-match-p "\\`No loaded ASDF system matches \"agentq-no-such\" ([0-9]+ loaded; list_systems without filter lists them).\\'"
                              (cadr (nth 7 out))))
      ;; Wrong arguments: refused before anything runs, saying what was wrong.
      (pcase-dolist (`(,index ,message) '((8 "Invalid argument 'limit': at least 1, got 0")
                                          (9 "Invalid argument 'limit': at most 1000, got 1001")
                                          (10 "Invalid argument 'limit': expected integer, got string")
                                          (11 "Invalid argument 'filter': expected string, got integer")
                                          (12 "Unknown argument 'name' for list_systems (it takes: filter, limit)")))
        (ert-info ((format "step %d" index))
          (should (eq (car (nth index out)) nil))
          (should (string-match-p (regexp-quote message) (cadr (nth index out))))))
      ;; A safe tool: the metadata says so.
      (should (equal (plist-get (plist-get (nth 13 out) :metadata) :safety_level) "safe")))))

;;; sly-agent-q-load-system-test.el ends here
