;;; sly-agent-q-test-helpers.el --- Shared helpers of the Elisp test suite -*- lexical-binding: t; -*-

;;; Commentary:

;; Loaded by tests/elisp/run-tests.el before the *-test.el files.  Every
;; helper goes through the public API (or, where a test is about the
;; module itself, the documented module functions) with the real module,
;; the real ECL runtime and real files: nothing here is a mock.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'json)
(require 'sly-agent-q)

;; The set-up the tests assume, as the README's: the module loaded (the
;; first call would load it; the tests of the module itself look at it
;; first) and SLY's keys on in Lisp buffers.
(sly-agent-q--load-module)
(global-sly-agent-q-lisp-mode 1)

(defconst agentq-test-directory
  (file-name-directory (or load-file-name buffer-file-name default-directory))
  "tests/elisp/.")

(defconst agentq-test-root
  (expand-file-name "../../" agentq-test-directory)
  "The repository root.")

;;;; Files

(defmacro agentq-test-with-lisp-file (spec &rest body)
  "Run BODY with PATH a file holding TEXT in a fresh allowed directory.
SPEC is (PATH TEXT).  The directory, and any buffer visiting PATH, go after."
  (declare (indent 1) (debug ((symbolp form) body)))
  (let ((dir (make-symbol "dir")))
    `(let* ((,dir (file-name-as-directory (make-temp-file "agentq-file" t)))
            (,(car spec) (expand-file-name "code.lisp" ,dir))
            (sly-agent-q-allowed-directories (list ,dir)))
       (unwind-protect
           (progn
             (with-temp-file ,(car spec) (insert ,(cadr spec)))
             ,@body)
         (when-let ((buffer (get-file-buffer ,(car spec))))
           (with-current-buffer buffer (set-buffer-modified-p nil))
           (kill-buffer buffer))
         (delete-directory ,dir t)))))

;;;; Calls

(defconst agentq-test-foreign-threads
  "(count-if-not #'agent-q::%runtime-process-p (mp:all-processes))"
  "Lisp counting the Lisp threads that are not the runtime's own (the
worker, the watchdog and the background native compiler).")

(defun agentq-test-fail-if-asked (&rest question)
  "An approval function for calls that must ask nothing: asking fails.
QUESTION is what was asked, shown in the failure."
  (error "An approval question was asked: %S" question))

(defun agentq-test-forget-systems (systems packages)
  "Make ASDF forget SYSTEMS and delete PACKAGES (names, strings): the
session as other tests expect it after a test loaded a system of its own."
  (agentq-test-eval-ok
   (format "(progn (dolist (s '%S) (ignore-errors (funcall (find-symbol \"CLEAR-SYSTEM\" \"ASDF\") s)))
                   (dolist (p '%S) (ignore-errors (delete-package p))) t)"
           systems packages)))

(defun agentq-test-call (name arguments &optional id)
  "Run one call of tool NAME with ARGUMENTS; return its result plist.
The call is the person's, as from \\[sly-agent-q-evaluate], unless the
test bound `sly-agent-q-call-origin' to an agent's door: most tests here
exercise the runtime with the person's own code (hostile input
included); sly-agent-q-agent-code-test.el tests an agent's calls."
  (let ((results (let ((sly-agent-q-call-origin (or sly-agent-q-call-origin "user")))
                   (sly-agent-q-execute-tool-calls
                    (list (list :id (or id "t1") :name name :arguments arguments))))))
    (should (= (length results) 1))
    (agentq-test-check-result (car results))
    (car results)))

(defun agentq-test-eval (code &rest arguments)
  "Evaluate CODE with evaluate_lisp and extra ARGUMENTS; return the result plist."
  (agentq-test-call "evaluate_lisp" (append (list :code code) arguments)))

(defun agentq-test-content (code &rest arguments)
  "Evaluate CODE (and ARGUMENTS); return the content string."
  (plist-get (apply #'agentq-test-eval code arguments) :content))

(defun agentq-test-eval-ok (code &rest arguments)
  "Evaluate CODE, assert success, return the content."
  (let ((result (apply #'agentq-test-eval code arguments)))
    ;; The content in the failure: what went wrong is in it.
    (unless (eq (plist-get result :success) t)
      (ert-fail (list "the evaluation failed" :code code :content (plist-get result :content))))
    (plist-get result :content)))

(defun agentq-test-eval-fails (code &rest arguments)
  "Evaluate CODE, assert failure, return the content."
  (let ((result (apply #'agentq-test-eval code arguments)))
    (when (plist-get result :success)
      (ert-fail (list "the evaluation succeeded" :code code :content (plist-get result :content))))
    (plist-get result :content)))

(defun agentq-test-check-result (result)
  "Assert the invariants of the tool-execution contract on RESULT."
  (should (plistp-like result))
  (should (equal (cl-loop for (key _value) on result by #'cddr collect key)
                 '(:id :success :content :error :metadata)))
  (should (memq (plist-get result :success) '(t nil)))
  ;; Content is always a string.
  (should (stringp (plist-get result :content)))
  ;; Success XOR error.
  (if (plist-get result :success)
      (should (null (plist-get result :error)))
    (should (stringp (plist-get result :error)))
    (should (equal (plist-get result :error) (plist-get result :content))))
  (let ((metadata (plist-get result :metadata)))
    ;; A held error (evaluate_lisp's debug: true) adds its condition id.
    (should (member (cl-loop for (key _value) on metadata by #'cddr collect key)
                    '((:execution_time_ms :safety_level :approved)
                      (:execution_time_ms :safety_level :approved :condition_id))))
    (when (plist-member metadata :condition_id)
      (should (integerp (plist-get metadata :condition_id)))
      (should-not (plist-get result :success)))
    (should (numberp (plist-get metadata :execution_time_ms)))
    (should (>= (plist-get metadata :execution_time_ms) 0))
    (should (member (plist-get metadata :safety_level) '(nil "safe" "cautious" "dangerous")))
    (should (memq (plist-get metadata :approved) '(t nil))))
  result)

(defun plistp-like (object)
  "Non-nil if OBJECT is a proper list of even length."
  (and (proper-list-p object) (cl-evenp (length object))))

(defun agentq-test-metadata (result key)
  "KEY of RESULT's :metadata."
  (plist-get (plist-get result :metadata) key))

(defun agentq-test-should-be-alive ()
  "The session still evaluates: (+ 1 2) gives => 3."
  (should (equal (agentq-test-content "(+ 1 2)") "=> 3")))

;;;; Settings

(defmacro agentq-test-with-custom (bindings &rest body)
  "Run BODY with each (VARIABLE VALUE) of BINDINGS set by `customize-set-variable'.
The :set functions pass the value to the module; the old values are set
back the same way afterwards, whatever happens."
  (declare (indent 1) (debug ((&rest (symbolp form)) body)))
  (let ((olds (mapcar (lambda (_) (make-symbol "old")) bindings)))
    `(let ,(cl-mapcar (lambda (old binding) `(,old (symbol-value ',(car binding)))) olds bindings)
       (unwind-protect
           (progn
             ,@(mapcar (lambda (binding) `(customize-set-variable ',(car binding) ,(cadr binding)))
                       bindings)
             ,@body)
         ,@(cl-mapcar (lambda (old binding) `(customize-set-variable ',(car binding) ,old))
                      olds bindings)))))

;;;; Elisp tools

(defvar agentq-test--tool-counter 0)

(defun agentq-test-fresh-name (base)
  "A tool name not used before in this Emacs, starting with BASE."
  (format "%s_%d_%d" base (emacs-pid) (cl-incf agentq-test--tool-counter)))

;;;; JSON

(defun agentq-test-json (string)
  "Parse STRING as JSON with hash tables, :null and :false."
  (json-parse-string string :object-type 'hash-table :null-object :null :false-object :false))

(defun agentq-test-get (object &rest path)
  "Follow PATH (strings for object keys, integers for array indices) in OBJECT."
  (dolist (step path object)
    (setq object (if (integerp step) (aref object step) (gethash step object)))))

(defun agentq-test-mcp (request)
  "Send REQUEST (a string, or data for `json-serialize') to the MCP endpoint.
Return the parsed response, or nil for no response."
  (let ((response (sly-agent-q-mcp-request
                   (if (stringp request) request (json-serialize request)))))
    (when response
      (should (stringp response))
      (agentq-test-json response))))

;;;; Tools, from Elisp and over MCP

(defun agentq-test-tool-both (name arguments)
  "Call tool NAME with ARGUMENTS from Elisp and over MCP.
Check both answers agree; return (SUCCESS . CONTENT)."
  (let* ((result (agentq-test-call name arguments))
         (response (agentq-test-mcp `(:jsonrpc "2.0" :id 9 :method "tools/call"
                                               :params (:name ,name :arguments ,(or arguments (make-hash-table))))))
         (rpc-error (gethash "error" response)))
    (if rpc-error
        ;; MCP answers invalid arguments with a JSON-RPC error, as its spec has it.
        (progn (should (equal (gethash "code" rpc-error) -32602))
               (should-not (plist-get result :success)))
      (should (equal (agentq-test-get response "result" "content" 0 "text") (plist-get result :content)))
      (should (eq (eq (agentq-test-get response "result" "isError") t) (not (plist-get result :success)))))
    (cons (plist-get result :success) (plist-get result :content))))

(defun agentq-test-tool-ok (name arguments)
  "Call tool NAME with ARGUMENTS both ways; assert success; return the content."
  (let ((answer (agentq-test-tool-both name arguments)))
    (should (car answer))
    (cdr answer)))

(defun agentq-test-tool-fails (name arguments)
  "Call tool NAME with ARGUMENTS both ways; assert failure; return the content."
  (let ((answer (agentq-test-tool-both name arguments)))
    (should-not (car answer))
    (cdr answer)))

;;;; Loading files

(defun agentq-test-load-file (file)
  "Load FILE with `sly-agent-q-load-file' (C-c C-l); true once it says
\"Loaded\", within 20 s."
  (let ((loaded nil))
    (cl-letf (((symbol-function 'message)
               (lambda (&rest args) (when (string-prefix-p "Loaded" (car args)) (setq loaded t)))))
      (sly-agent-q-load-file file)
      (let ((deadline (+ (float-time) 20)))
        (while (and (not loaded) (< (float-time) deadline)) (accept-process-output nil 0.02))))
    loaded))

;;;; Subprocesses

(defun agentq-test-emacs-binary ()
  "The Emacs running the tests."
  (expand-file-name invocation-name invocation-directory))

(cl-defun agentq-test-run-emacs (forms &key (timeout 20))
  "Run a fresh `emacs -Q --batch' with elisp/ on the load path evaluating FORMS.
Its calls are the person's (`sly-agent-q-call-origin' \"user\", as for
`agentq-test-call'), unless FORMS bind another origin.
Return (EXIT-CODE STDOUT STDERR SECONDS); EXIT-CODE is `timeout' when the
process had to be killed after TIMEOUT seconds."
  (let* ((stdout (generate-new-buffer " *agentq-test-stdout*"))
         (stderr (generate-new-buffer " *agentq-test-stderr*"))
         (args (append (list "-Q" "--batch" "-L" (expand-file-name "elisp" agentq-test-root)
                             "--eval" "(setq sly-agent-q-call-origin \"user\")")
                       (cl-loop for form in forms
                                append (list "--eval" (prin1-to-string form)))))
         (start (float-time))
         (process-environment (cons "LC_ALL=C.UTF-8" process-environment))
         (process (make-process :name "agentq-test-emacs"
                                :buffer stdout
                                :stderr stderr
                                :command (cons (agentq-test-emacs-binary) args)
                                :connection-type 'pipe
                                :noquery t
                                :sentinel #'ignore))
         (code nil))
    (unwind-protect
        (progn
          (while (and (process-live-p process) (< (- (float-time) start) timeout))
            (accept-process-output process 0.05))
          (if (process-live-p process)
              (progn (kill-process process) (setq code 'timeout))
            ;; Let the last output arrive.
            (accept-process-output process 0.05)
            (setq code (process-exit-status process)))
          (let ((stderr-process (get-buffer-process stderr)))
            (when stderr-process
              (accept-process-output stderr-process 0.05)))
          (list code
                (with-current-buffer stdout (buffer-string))
                (with-current-buffer stderr (buffer-string))
                (- (float-time) start)))
      (when (process-live-p process) (delete-process process))
      (let ((stderr-process (get-buffer-process stderr)))
        (when stderr-process (delete-process stderr-process)))
      (kill-buffer stdout)
      (kill-buffer stderr))))

;; The REPL tests' buffer: fresh each time, with its own history file.
(defmacro agentq-test-with-repl (&rest body)
  "Run BODY in a fresh REPL buffer with a temporary history file.
Afterwards the debugger and REPL buffers are killed and the session is
back in CL-USER."
  (declare (indent 0) (debug (body)))
  `(let* ((history (make-temp-file "agentq-repl-history"))
          (sly-agent-q-repl-history-file history))
     (unwind-protect
         (save-window-excursion
           (with-current-buffer (sly-agent-q-repl)
             ,@body))
       (dolist (name (list (bound-and-true-p sly-agent-q-debugger-buffer-name)
                           sly-agent-q-repl-buffer-name))
         (when (and name (get-buffer name))
           (let ((kill-buffer-query-functions nil)) (kill-buffer name))))
       (agentq-test-eval-ok "(in-package :cl-user)")
       (delete-file history))))

(provide 'sly-agent-q-test-helpers)

;;; sly-agent-q-test-helpers.el ends here
