;;; sly-agent-q-buffer-tools-test.el --- read_file, read_buffer, search_in_buffer, write_file, propose_file_edit -*- lexical-binding: t; -*-

;;; Commentary:

;; The buffer tools of elisp/sly-agent-q-buffer-tools.el, called through
;; `sly-agent-q-execute-tool-calls' and MCP tools/call (and, for
;; propose_file_edit, Lisp's execute-tool-calls) on real files in fresh
;; temporary directories and real buffers.  Approvals are scripted by
;; binding `sly-agent-q-approval-function'.  Also: what the tools rest on,
;; `sly-agent-q-tool-fail' and the :check and :denied-message of
;; `sly-agent-q-define-tool'.

;;; Code:

(require 'sly-agent-q-test-helpers)

;;;; Fixtures

(defvar agentq-bt--immutable nil
  "Directories a test made immutable (chattr +i), undone when it ends.")

(defun agentq-bt--clean-up (directory)
  "Kill the buffers visiting files under DIRECTORY, then delete it."
  (dolist (buffer (buffer-list))
    (let ((file (buffer-file-name buffer)))
      (when (and file (string-prefix-p directory (file-truename file)))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer))))
  (dolist (immutable agentq-bt--immutable)
    (call-process "chattr" nil nil nil "-i" immutable))
  (setq agentq-bt--immutable nil)
  (delete-directory directory t))

(defmacro agentq-bt-with-directory (var &rest body)
  "Run BODY with VAR a fresh temporary directory, the one allowed directory.
VAR is its true name, ending in a slash.  Its buffers and files go
afterwards."
  (declare (indent 1) (debug (symbolp body)))
  `(let* ((,var (file-name-as-directory (file-truename (make-temp-file "agentq-bt-" t))))
          (sly-agent-q-allowed-directories (list ,var))
          (sly-agent-q-target-buffer nil)
          (sly-agent-q-approval-function nil))
     (unwind-protect
         (progn ,@body)
       (agentq-bt--clean-up ,var))))

(defun agentq-bt-write (file text)
  "Write TEXT to FILE as UTF-8, making its directory; return FILE."
  (make-directory (file-name-directory file) t)
  (let ((coding-system-for-write 'utf-8-unix))
    (write-region text nil file nil 'silent))
  file)

(defun agentq-bt-read (file)
  "FILE's text, decoded as UTF-8."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8-unix))
      (insert-file-contents file))
    (buffer-string)))

(defun agentq-bt-call (name arguments)
  "Call tool NAME with ARGUMENTS from Elisp; return (SUCCESS . CONTENT)."
  (let ((result (agentq-test-call name arguments)))
    (cons (plist-get result :success) (plist-get result :content))))

(defun agentq-bt-mcp (name arguments)
  "Call tool NAME with ARGUMENTS over MCP tools/call; return (SUCCESS . TEXT).
A JSON-RPC error (invalid arguments) gives (nil . ITS-MESSAGE)."
  (let* ((response (agentq-test-mcp `(:jsonrpc "2.0" :id 7 :method "tools/call"
                                               :params (:name ,name :arguments ,(or arguments (make-hash-table))))))
         (rpc-error (gethash "error" response)))
    (if rpc-error
        (progn (should (equal (gethash "code" rpc-error) -32602))
               (cons nil (gethash "message" rpc-error)))
      (cons (not (eq (agentq-test-get response "result" "isError") t))
            (agentq-test-get response "result" "content" 0 "text")))))

(defun agentq-bt-both (name arguments)
  "Call tool NAME with ARGUMENTS from Elisp and over MCP, which must agree.
For calls that change nothing.  Returns (SUCCESS . CONTENT)."
  (let ((elisp (agentq-bt-call name arguments))
        (mcp (agentq-bt-mcp name arguments)))
    (should (equal mcp elisp))
    elisp))

(defun agentq-bt-ok (name arguments)
  "Both ways, successful: the content."
  (let ((answer (agentq-bt-both name arguments)))
    (should (eq (car answer) t))
    (cdr answer)))

(defun agentq-bt-fails (name arguments)
  "Both ways, failed: the content."
  (let ((answer (agentq-bt-both name arguments)))
    (should-not (car answer))
    (cdr answer)))

(defvar agentq-bt--asked nil
  "The (TOOL-NAME . ARGUMENTS) the scripted approval function was asked, latest first.")

(defun agentq-bt-approval (decision)
  "An approval function that records what it is asked and answers DECISION.
DECISION may be a function of the arguments hash table."
  (setq agentq-bt--asked nil)
  (lambda (name arguments)
    (push (cons name (copy-hash-table arguments)) agentq-bt--asked)
    (if (functionp decision) (funcall decision arguments) decision)))

(defun agentq-bt-files (directory)
  "The names in DIRECTORY, without . and .., sorted."
  (sort (directory-files directory nil directory-files-no-dot-files-regexp) #'string<))

(defun agentq-bt--make-immutable (directory)
  "Make DIRECTORY immutable (chattr +i); non-nil if no file can be made in it now.
Root may create files in a directory without write permission, but not
in an immutable one.  The flag is removed when the test ends."
  (when (and (executable-find "chattr")
             (eq 0 (call-process "chattr" nil nil nil "+i" directory)))
    (push directory agentq-bt--immutable)
    (let ((probe (expand-file-name "probe" directory)))
      (condition-case nil
          (progn (write-region "" nil probe nil 'silent)
                 (delete-file probe)
                 nil)
        (file-error t)))))

;;;; Failing with a message of one's own, checks, denied messages

(ert-deftest sly-agent-q-buffer-tools/tool-fail-check-and-denied-message ()
  (let* ((name (agentq-test-fresh-name "agentq_checked"))
         (runs nil)
         (sly-agent-q-approval-function (agentq-bt-approval :approved)))
    (sly-agent-q-define-tool
     name "A dangerous test tool with a check and a denied message of its own."
     '((:name "x" :type :string :description "How the check and the handler behave."))
     :required '("x") :safety-level :dangerous
     :check (lambda (args)
              (pcase (gethash "x" args)
                ("refuse" (sly-agent-q-tool-fail "Refused: %s is not %d%%." "x" 100))
                ("break" (error "The check broke"))))
     :handler (lambda (args)
                (push (gethash "x" args) runs)
                (pcase (gethash "x" args)
                  ("fail" (sly-agent-q-tool-fail "Failed as %s." "written"))
                  ("break" (error "Never here"))
                  (_ "ran")))
     :denied-message "Denied, and say so.")
    ;; A failing check: its message as written, no approval asked, no handler run.
    (should (equal (agentq-bt-both name '(:x "refuse")) '(nil . "Refused: x is not 100%.")))
    (should (equal (agentq-bt-both name '(:x "break")) '(nil . "Tool error: The check broke")))
    (should (null agentq-bt--asked))
    (should (null runs))
    ;; A handler's own failure is as written, other errors get "Tool error: ".
    (should (equal (agentq-bt-both name '(:x "fail")) '(nil . "Failed as written.")))
    (should (equal (agentq-bt-both name '(:x "go")) '(t . "ran")))
    (should (= (length agentq-bt--asked) 4))
    ;; A denial answers the tool's text, also with no approval function.
    (let ((sly-agent-q-approval-function (agentq-bt-approval :denied)))
      (should (equal (agentq-bt-both name '(:x "go")) '(nil . "Denied, and say so."))))
    (let ((sly-agent-q-approval-function nil))
      (should (equal (agentq-bt-both name '(:x "go")) '(nil . "Denied, and say so."))))
    ;; From Lisp: the same check and denial.
    (let ((sly-agent-q-approval-function (agentq-bt-approval :denied)))
      (should (equal (agentq-test-eval-ok
                      (format "(mapcar (lambda (r) (list (tool-result-success r) (tool-result-content r)))
                                 (execute-tool-calls '((:id \"1\" :name %S :arguments (:x \"refuse\"))
                                                       (:id \"2\" :name %S :arguments (:x \"go\")))))"
                              name name))
                     "=> ((NIL \"Refused: x is not 100%.\") (NIL \"Denied, and say so.\"))"))
      (should (= (length agentq-bt--asked) 1)))
    (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
      (should (equal (agentq-test-eval-ok
                      (format "(let ((r (first (execute-tool-calls '((:id \"1\" :name %S :arguments (:x \"go\")))))))
                                 (list (tool-result-success r) (tool-result-content r)))"
                              name))
                     "=> (T \"ran\")")))
    ;; Redefined without a check or a denied message: neither is left.
    (sly-agent-q-define-tool name "The same tool, without its check now." '((:name "x" :type :string :description "Anything."))
                             :safety-level :dangerous :handler (lambda (_) "plain"))
    (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
      (should (equal (agentq-bt-both name '(:x "refuse")) '(t . "plain"))))
    (let ((sly-agent-q-approval-function nil))
      (should (equal (agentq-bt-both name '(:x "refuse")) '(nil . "User denied tool execution"))))
    (should-error (sly-agent-q-define-tool name "Bad." nil :handler #'ignore :check "not a function")
                  :type 'sly-agent-q-error)
    (should-error (sly-agent-q-define-tool name "Bad." nil :handler #'ignore :denied-message 'no)
                  :type 'sly-agent-q-error)))

(provide 'sly-agent-q-buffer-tools-test)

;;; sly-agent-q-buffer-tools-test.el ends here
