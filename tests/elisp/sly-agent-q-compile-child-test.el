;;; sly-agent-q-compile-child-test.el --- Background compiles in a forked child -*- lexical-binding: t; -*-

;;; Commentary:

;; A batch of the background native compiler runs its Lisp half (ECL's
;; compiler up to the C file) in a forked copy of the process, so that the
;; compiler's allocations stay out of the session's heap; the session runs
;; gcc and loads the code, with the constants handed over so that literals
;; keep their identity (lisp/tiering.lisp, "Compiling in a child process").
;; Where a constant could not keep its identity, or the child fails or
;; hangs, the batch is compiled in the session as before.

;;; Code:

(require 'ert)
(require 'sly-agent-q-test-helpers)

(defun agentq-cc-kind (name)
  "\"BYTECODES\" or \"NATIVE\": how the function NAME (Lisp text) runs now."
  (substring (agentq-test-eval-ok
              (format "(if (nth-value 1 (si:bc-split (fdefinition '%s))) :bytecodes :native)" name))
             4))

(defun agentq-cc-count (key)
  "The tiering counter KEY (a keyword's name) now."
  (string-to-number (substring (agentq-test-eval-ok (format "(getf (agent-q::tiering-status) :%s)" key)) 3)))

(defun agentq-cc-zombies ()
  "Children of this Emacs that ended and were not reaped."
  (let ((found 0))
    (dolist (pid (directory-files "/proc" nil "\\`[0-9]+\\'") found)
      (let ((stat (ignore-errors
                    (with-temp-buffer
                      (insert-file-contents (format "/proc/%s/stat" pid))
                      (buffer-string)))))
        ;; pid (comm) state ppid ...: comm may hold spaces, so from the last ")".
        (when (and stat (string-match ") \\([A-Z]\\) \\([0-9]+\\) " stat))
          (when (and (equal (match-string 1 stat) "Z")
                     (= (string-to-number (match-string 2 stat)) (emacs-pid)))
            (setq found (1+ found))))))))

(defmacro agentq-cc-with-private-tmpdir (dir &rest body)
  "Run BODY with the session's TMPDIR a new directory DIR (deleted after)."
  (declare (indent 1))
  `(let ((,dir (make-temp-file "agentq-cc" t))
         (old (substring (agentq-test-eval-ok "(or (ext:getenv \"TMPDIR\") \"\")") 3)))
     (unwind-protect
         (progn
           (agentq-test-eval-ok (format "(ext:setenv \"TMPDIR\" %S)" ,dir))
           ,@body)
       (agentq-test-eval-ok (format "(ext:setenv \"TMPDIR\" %s)" old))
       (delete-directory ,dir t))))

(defun agentq-cc-precondition ()
  "A batch can only go to a child when the runtime's threads are the only ones.
Batches that earlier tests queued are compiled first: the tests count
batches from here."
  (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)")
  (should (equal (agentq-test-eval-ok "(agent-q::only-our-threads-p)") "=> T")))

(ert-deftest sly-agent-q-compile-child/a-batch-compiles-in-a-child-and-literals-stay-the-same-objects ()
  (skip-unless (executable-find "gcc"))
  (agentq-cc-precondition)
  (agentq-cc-with-private-tmpdir dir
    (let ((in-child (agentq-cc-count "in-child"))
          (in-session (agentq-cc-count "in-session")))
      (agentq-test-eval-ok "(defun agentq-cc-lit () '(1 \"two\" #(3 (4))))
(defparameter *agentq-cc-lit-before* (agentq-cc-lit))
(defun agentq-cc-case (x) (ecase x ((a b) 1) (c 2)))
(defun agentq-cc-say (x) (format nil \"~a-~a\" x (length (agentq-cc-lit))))
(defmacro agentq-cc-twice () (let ((g (gensym \"AGENTQ-CC\"))) (list 'quote (list g g 2.5d0 1/3 #\\z))))
(defun agentq-cc-uninterned () (agentq-cc-twice))")
      (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)")
      (dolist (name '("agentq-cc-lit" "agentq-cc-case" "agentq-cc-say" "agentq-cc-uninterned"))
        (should (equal (list name (agentq-cc-kind name)) (list name "NATIVE"))))
      ;; Compiled in a child, not in the session.
      (should (= (agentq-cc-count "in-child") (1+ in-child)))
      (should (= (agentq-cc-count "in-session") in-session))
      (should (= (plist-get (sly-agent-q-runtime-status) :tiering-in-child) (1+ in-child)))
      ;; The source's literal is the very object the bytecodes returned.
      (should (equal (agentq-test-eval-ok "(eq (agentq-cc-lit) *agentq-cc-lit-before*)") "=> T"))
      ;; Constants the macros made in the child (ECASE's keys) came back.
      (should (equal (agentq-test-eval-ok "(list (agentq-cc-case 'b) (agentq-cc-case 'c) (handler-case (agentq-cc-case 'z) (type-error (e) (let ((type (type-error-expected-type e))) (and (eq (first type) 'member) (null (set-exclusive-or (rest type) '(a b c))))))))")
                     "=> (1 2 T)"))
      (should (equal (agentq-test-eval-ok "(agentq-cc-say 5)") "=> \"5-3\""))
      ;; A list the macro made in the child, with one new uninterned symbol
      ;; twice: it stays one symbol.
      (should (equal (agentq-test-eval-ok "(let ((l (agentq-cc-uninterned))) (list (eq (first l) (second l)) (symbol-package (first l)) (cddr l)))")
                     "=> (T NIL (2.5d0 1/3 #\\z))"))
      ;; Nothing left behind: no files, no unreaped child.
      (should (equal (directory-files dir nil "\\`[^.]") nil))
      (should (= (agentq-cc-zombies) 0)))))

(ert-deftest sly-agent-q-compile-child/a-constant-that-would-lose-its-identity-compiles-in-the-session ()
  (skip-unless (executable-find "gcc"))
  (agentq-cc-precondition)
  (let ((in-child (agentq-cc-count "in-child"))
        (in-session (agentq-cc-count "in-session")))
    ;; The macro puts the global's own list into the code: a copy made in
    ;; the child would not be EQ to it.
    (agentq-test-eval-ok "(defvar *agentq-cc-table* (list :a :b))
(defmacro agentq-cc-table () `',*agentq-cc-table*)
(defun agentq-cc-uses-table () (agentq-cc-table))")
    (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)")
    (should (equal (agentq-cc-kind "agentq-cc-uses-table") "NATIVE"))
    (should (equal (agentq-test-eval-ok "(eq (agentq-cc-uses-table) *agentq-cc-table*)") "=> T"))
    (should (= (agentq-cc-count "in-child") in-child))
    (should (= (agentq-cc-count "in-session") (1+ in-session)))
    ;; COMPILE evaluates a LOAD-TIME-VALUE's form where it compiles: in a
    ;; child its effects would be lost.  The native compile evaluates it
    ;; once more, in the session.
    (let ((count (agentq-test-eval-ok "(defvar *agentq-cc-ltv-count* 0)
(defun agentq-cc-ltv () (load-time-value (progn (incf *agentq-cc-ltv-count*) (list :made))))
*agentq-cc-ltv-count*")))
      (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)")
      (should (equal (agentq-cc-kind "agentq-cc-ltv") "NATIVE"))
      (should (equal (agentq-test-eval-ok "(list (agentq-cc-ltv) *agentq-cc-ltv-count*)")
                     (format "=> ((:MADE) %d)" (1+ (string-to-number (substring count 3)))))))
    (should (= (agentq-cc-count "in-child") in-child))
    (should (= (agentq-cc-count "in-session") (+ 2 in-session)))
    (should (string-match-p "LOAD-TIME-VALUE" (agentq-test-eval-ok "agent-q::*compile-child-fallback*")))))

(ert-deftest sly-agent-q-compile-child/a-child-that-does-not-end-is-killed-and-the-session-compiles ()
  (skip-unless (executable-find "gcc"))
  (agentq-cc-precondition)
  (sly-agent-q-log-runtime-notes)
  (let ((in-session (agentq-cc-count "in-session")))
    (unwind-protect
        (progn
          ;; No time at all: the child is killed at once.
          (agentq-test-eval-ok "(setf agent-q::*compile-child-timeout-ms* 0)")
          (agentq-test-eval-ok "(defun agentq-cc-slow-child (x) (list x x))")
          (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)"))
      (agentq-test-eval-ok "(setf agent-q::*compile-child-timeout-ms* 30000)"))
    (should (equal (agentq-cc-kind "agentq-cc-slow-child") "NATIVE"))
    (should (equal (agentq-test-eval-ok "(agentq-cc-slow-child 4)") "=> (4 4)"))
    (should (= (agentq-cc-count "in-session") (1+ in-session)))
    (should (= (agentq-cc-zombies) 0))
    (sly-agent-q-log-runtime-notes)
    (with-current-buffer (get-buffer-create "*Agent-Q Log*")
      (should (string-match-p "a compile child timed out; compiling in the session" (buffer-string))))))

(ert-deftest sly-agent-q-compile-child/evaluations-go-on-while-the-worker-is-held-for-forks ()
  "The worker holds still between jobs while a batch forks; calls made
meanwhile wait for the fork only, and all come back right."
  (skip-unless (executable-find "gcc"))
  (agentq-cc-precondition)
  (let ((in-child (agentq-cc-count "in-child"))
        (batches 3) (calls 0))
    (dotimes (round batches)
      (agentq-test-eval-ok
       (mapconcat (lambda (i) (format "(defun agentq-cc-held-%d-%d (x) (+ x %d))" round i i))
                  (number-sequence 1 10) "\n"))
      ;; Calls back to back until this batch is compiled.
      (while (equal (agentq-test-eval-ok "(if (or agent-q::*tiering-compiling* agent-q::*tiering-queue*) t nil)") "=> T")
        (should (equal (agentq-test-eval-ok (format "(+ %d 1)" calls)) (format "=> %d" (1+ calls))))
        (setq calls (1+ calls)))
      (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)")
      (should (equal (agentq-cc-kind (format "agentq-cc-held-%d-10" round)) "NATIVE")))
    (should (> calls 0))
    (should (= (agentq-cc-count "in-child") (+ in-child batches)))))

(ert-deftest sly-agent-q-compile-child/describe-runtime-counts-where-batches-compiled ()
  (let ((status (sly-agent-q-runtime-status)))
    (save-window-excursion (sly-agent-q-describe-runtime))
    (with-current-buffer "*sly-agent-q runtime*"
      (should (string-match-p
               (format "batches compiled in a child process %d, in the session %d"
                       (plist-get status :tiering-in-child) (plist-get status :tiering-in-session))
               (buffer-string)))
      (should (string-match-p "^Fasl cache: " (buffer-string))))))

;;;; The compiler ends with the process that runs it

(defun agentq-test--compiler-processes (directory)
  "Live (not zombie) processes whose command line names DIRECTORY."
  (cl-loop for pid in (list-system-processes)
           for attributes = (process-attributes pid)
           for args = (alist-get 'args attributes)
           when (and args (not (equal (alist-get 'state attributes) "Z"))
                     (string-search directory args))
           collect (cons pid args)))

(defun agentq-test--leftovers (directory)
  "What a compile left in DIRECTORY: private directories and ECL's files."
  (directory-files directory nil "\\`\\(sly-agent-q-compile-\\|ecl.*\\.\\(c\\|eclh\\|data\\|o\\|tmp\\)\\'\\)"))

(defun agentq-test--wait-for-compiler (directory seconds)
  "Wait up to SECONDS for cc1 to run on a file in DIRECTORY; true when it does."
  (let ((until (+ (float-time) seconds)) (found nil))
    (while (and (not found) (< (float-time) until))
      (setq found (cl-some (lambda (entry) (string-match-p "cc1 " (cdr entry)))
                           (agentq-test--compiler-processes directory)))
      (unless found (sleep-for 0.02)))
    found))

(ert-deftest sly-agent-q-compile-child/gcc-dies-with-a-killed-emacs ()
  "Emacs killed (SIGKILL) while the background compiler runs gcc: gcc,
cc1 and the compile child end within a second, and nothing of the batch
is left in TMPDIR (gcc ran on, reparented to init, for 10-40 s, and the
private directory stayed).  Fresh Emacsen, killed at several moments."
  (skip-unless (executable-find "gcc"))
  (dolist (pause '(0.05 0.2 0.6))
    (let* ((tmp (file-name-as-directory (make-temp-file "agentq-kill-tmp" t)))
           (process-environment (cons (concat "TMPDIR=" tmp) process-environment))
           (code (mapconcat (lambda (i) (format "(defun cl-user::agentq-k%d (x) (list x %d (* x x)))" i i))
                            (number-sequence 1 300) "\n"))
           (emacs (make-process
                   :name "agentq-killed-emacs" :noquery t :connection-type 'pipe
                   :buffer (generate-new-buffer " *agentq-killed*")
                   :command (list (agentq-test-emacs-binary) "-Q" "--batch"
                                  "-L" (expand-file-name "elisp" agentq-test-root)
                                  "--eval" "(require 'sly-agent-q)"
                                  "--eval" (prin1-to-string
                                            `(sly-agent-q-execute-tool-calls
                                              (list (list :id "d" :name "evaluate_lisp"
                                                          :arguments (list :code ,code)))))
                                  "--eval" "(sleep-for 60)"))))
      (unwind-protect
          (progn
            (should (agentq-test--wait-for-compiler tmp 30))
            (sleep-for pause)
            (signal-process emacs 'SIGKILL)
            (let ((until (+ (float-time) 2)))
              (while (and (or (agentq-test--compiler-processes tmp) (agentq-test--leftovers tmp))
                          (< (float-time) until))
                (sleep-for 0.05)))
            (should (equal (list pause (agentq-test--compiler-processes tmp)) (list pause nil)))
            (should (equal (list pause (agentq-test--leftovers tmp)) (list pause nil))))
        (when (process-live-p emacs) (delete-process emacs))
        (kill-buffer (process-buffer emacs))
        (delete-directory tmp t)))))

(ert-deftest sly-agent-q-compile-child/sigterm-to-the-mcp-server-ends-gcc ()
  "sly-agent-q-mcp given SIGTERM while a COMPILE-FILE inside evaluate_lisp
runs gcc: gcc and cc1 end, and ECL's files of the compile (the .c, .eclh,
.data, .o) go (gcc was orphaned and they stayed)."
  (skip-unless (executable-find "gcc"))
  (let* ((binary (expand-file-name "build/sly-agent-q-mcp" agentq-test-root))
         (tmp (file-name-as-directory (make-temp-file "agentq-mcp-term" t)))
         (process-environment (cons (concat "TMPDIR=" tmp) process-environment))
         (source (expand-file-name "agentq-big.lisp" tmp))
         (server nil))
    (skip-unless (file-executable-p binary))
    (with-temp-file source
      (dotimes (i 400) (insert (format "(defun agentq-f%d (x) (list x %d (* x x)))\n" i i))))
    (unwind-protect
        (progn
          (setq server (make-process :name "agentq-mcp-term" :noquery t :connection-type 'pipe
                                     :buffer (generate-new-buffer " *agentq-mcp-term*")
                                     ;; COMPILE is code a headless server
                                     ;; refuses from an agent unless allowed.
                                     :command (list binary "--allow-dangerous")))
          (process-send-string
           server
           (concat (json-encode `((jsonrpc . "2.0") (id . 1) (method . "initialize")
                                  (params . ((protocolVersion . "2025-03-26") (capabilities . ,(make-hash-table))
                                             (clientInfo . ((name . "t") (version . "1")))))))
                   "\n"
                   (json-encode '((jsonrpc . "2.0") (method . "notifications/initialized")))
                   "\n"
                   (json-encode `((jsonrpc . "2.0") (id . 2) (method . "tools/call")
                                  (params . ((name . "evaluate_lisp")
                                             (arguments . ((code . ,(format "(compile-file %S)" source))
                                                           (timeout . 120)))))))
                   "\n"))
          (should (agentq-test--wait-for-compiler tmp 60))
          (sleep-for 0.3)
          (signal-process server 'SIGTERM)
          (let ((until (+ (float-time) 3)))
            (while (and (or (process-live-p server) (agentq-test--compiler-processes tmp)
                            (agentq-test--leftovers tmp))
                        (< (float-time) until))
              (accept-process-output nil 0.05)))
          (should-not (process-live-p server))
          (should-not (agentq-test--compiler-processes tmp))
          (should-not (directory-files tmp nil "\\.\\(c\\|eclh\\|data\\|o\\)\\'")))
      (when (and server (process-live-p server)) (delete-process server))
      (when server (kill-buffer (process-buffer server)))
      (delete-directory tmp t))))

(provide 'sly-agent-q-compile-child-test)
;;; sly-agent-q-compile-child-test.el ends here
