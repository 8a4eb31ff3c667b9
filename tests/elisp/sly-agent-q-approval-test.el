;;; sly-agent-q-approval-test.el --- The default approval of dangerous tools -*- lexical-binding: t; -*-

;;; Commentary:

;; `sly-agent-q-approve': standing rules, auto-approval, approval for the
;; rest of the conversation, and the minibuffer question answered with
;; real key events (read by `read-multiple-choice' from
;; `unread-command-events'), through real dangerous tool calls.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defvar agentq-approval--runs nil)

(defun agentq-approval--define ()
  "A dangerous Elisp tool that records its runs; its name."
  (let ((name (agentq-test-fresh-name "agentq_danger")))
    (sly-agent-q-define-tool name "Dangerous." '((:name "path" :type :string) (:name "text" :type :string))
                             :safety-level :dangerous
                             :handler (lambda (args) (push (gethash "path" args) agentq-approval--runs)
                                        (format "ran %s" (gethash "path" args))))
    name))

(defmacro agentq-approval--with-keys (keys &rest body)
  "Run BODY as if the person typed KEYS (a string or list of events) at the prompt."
  (declare (indent 1))
  `(let ((unread-command-events (append ,keys nil))
         (noninteractive nil)
         (sly-agent-q-approval-function #'sly-agent-q-approve)
         (sly-agent-q--session-approved-tools nil)
         (sly-agent-q--auto-approve-until nil))
     (setq agentq-approval--runs nil)
     ,@body))

(defun agentq-approval--content (name &optional path)
  (plist-get (agentq-test-call name (list :path (or path "/tmp/agentq-x") :text "hello")) :content))

(ert-deftest sly-agent-q-approval/answers ()
  (let ((name (agentq-approval--define)))
    (agentq-approval--with-keys "y"
      (should (equal (agentq-approval--content name) "ran /tmp/agentq-x")))
    (agentq-approval--with-keys "n"
      (should (equal (agentq-approval--content name) "User denied tool execution"))
      (should-not agentq-approval--runs))
    ;; RET alone is no answer; v shows the arguments and asks again.
    (agentq-approval--with-keys "\rvy"
      (should (equal (agentq-approval--content name) "ran /tmp/agentq-x"))
      (should (string-match-p "path: /tmp/agentq-x"
                              (with-current-buffer "*Agent-Q Arguments*" (buffer-string)))))))
;; C-g at the prompt is tested in a real terminal: tests/e2e/approval-tmux.sh.

(ert-deftest sly-agent-q-approval/the-question-says-which-door ()
  (let ((args (make-hash-table :test 'equal)) (seen '()))
    (puthash "path" "/tmp/p" args)
    (should (string-prefix-p "Run dangerous tool write_file with\n  path: /tmp/p"
                             (sly-agent-q--approval-prompt "write_file" args)))
    (let ((sly-agent-q-call-origin "MCP: claude-code"))
      (should (string-prefix-p "[MCP: claude-code] Run dangerous tool write_file"
                               (sly-agent-q--approval-prompt "write_file" args))))
    ;; The origin as an approval function sees it, from each door.
    (let* ((name (agentq-approval--define))
           (sly-agent-q-approval-function (lambda (_n _a) (push sly-agent-q-call-origin seen) :denied)))
      (agentq-test-call name '(:path "/x"))
      (agentq-test-mcp `(:jsonrpc "2.0" :id 3 :method "tools/call" :params (:name ,name :arguments (:path "/x"))))
      (agentq-test-eval-ok (format "(execute-tool-calls '((:id \"l\" :name %S :arguments (:path \"/x\"))))" name))
      ;; The test helper's calls are the person's (`agentq-test-call').
      (should (equal (reverse seen) '("user" "MCP" "Lisp"))))))

(ert-deftest sly-agent-q-approval/approved-for-the-conversation ()
  (let ((name (agentq-approval--define)))
    (agentq-approval--with-keys "!"
      (should (equal (agentq-approval--content name "/tmp/a") "ran /tmp/a"))
      ;; Not asked again: no key is left to answer with.
      (should (equal (agentq-approval--content name "/tmp/b") "ran /tmp/b"))
      (sly-agent-q-forget-approvals)
      (setq unread-command-events (list ?n))
      (should (equal (agentq-approval--content name "/tmp/c") "User denied tool execution")))
    ;; Not offered for the tools of `sly-agent-q-approval-no-session-tools'.
    (let ((sly-agent-q-approval-no-session-tools (list name)))
      (agentq-approval--with-keys "!n"
        (should (equal (agentq-approval--content name) "User denied tool execution"))
        (should-not sly-agent-q--session-approved-tools)))))

(ert-deftest sly-agent-q-approval/auto-approve-for-minutes ()
  (let ((name (agentq-approval--define)))
    (agentq-approval--with-keys ""
      (sly-agent-q-auto-approve 5)
      (should (equal (agentq-approval--content name) "ran /tmp/agentq-x"))
      (sly-agent-q-auto-approve 0)
      (setq unread-command-events (list ?n))
      (should (equal (agentq-approval--content name) "User denied tool execution"))
      ;; Expired.
      (setq sly-agent-q--auto-approve-until (- (float-time) 1)
            unread-command-events (list ?n))
      (should (equal (agentq-approval--content name) "User denied tool execution")))))

(ert-deftest sly-agent-q-approval/standing-rules ()
  (let ((name (agentq-approval--define)))
    (agentq-approval--with-keys ""
      (let ((sly-agent-q-approval-rules `((,name "/tmp/agentq-src/**/*.lisp" allow)
                                          (,name "/etc/**" deny)
                                          ("*" "*" ask))))
        (should (equal (agentq-approval--content name "/tmp/agentq-src/a/b/c.lisp") "ran /tmp/agentq-src/a/b/c.lisp"))
        (should (equal (agentq-approval--content name "/tmp/agentq-src/c.lisp") "ran /tmp/agentq-src/c.lisp"))
        (should (equal (agentq-approval--content name "/etc/passwd") "User denied tool execution"))
        ;; "ask": the question, answered y.
        (setq unread-command-events (list ?y))
        (should (equal (agentq-approval--content name "/tmp/agentq-src/a.txt") "ran /tmp/agentq-src/a.txt"))))
    ;; Anything outside the project is denied.
    (agentq-approval--with-keys ""
      (let ((sly-agent-q-allowed-directories (list "/tmp/agentq-project/"))
            (sly-agent-q-approval-rules `((,name outside-project deny) (,name "*" allow))))
        (should (equal (agentq-approval--content name "/etc/passwd") "User denied tool execution"))
        (should (equal (agentq-approval--content name "/tmp/agentq-project/a.lisp") "ran /tmp/agentq-project/a.lisp"))
        (should (equal (agentq-approval--content name "/tmp/agentq-project/../x") "User denied tool execution"))))
    (should (string-match-p (sly-agent-q--glob-regexp "**/src/**/*.lisp") "/home/me/src/x.lisp"))
    (should-not (string-match-p (sly-agent-q--glob-regexp "*/src/*.lisp") "/home/me/src/a/x.lisp"))))

(ert-deftest sly-agent-q-approval/reply-and-edited-arguments ()
  (let ((name (agentq-approval--define)))
    ;; A denial with a reason reaches the model as the result.
    (let ((sly-agent-q-approval-function (lambda (_name _args) '(:denied "write under /tmp/safe instead"))))
      (should (equal (agentq-approval--content name) "Denied by user: write under /tmp/safe instead")))
    ;; From Lisp too.
    (let ((sly-agent-q-approval-function (lambda (_name _args) '(:denied "not now"))))
      (should (equal (agentq-test-eval-ok (format "(tool-result-content (first (execute-tool-calls '((:id \"l\" :name %S :arguments (:path \"/x\"))))))" name))
                     "=> \"Denied by user: not now\"")))
    (should (equal (agentq-test-eval-ok (format "(let ((*approval-handler* (lambda (tool args) (declare (ignore tool args)) (list :denied \"no\"))))
                                                   (tool-result-content (first (execute-tool-calls '((:id \"l\" :name %S :arguments (:path \"/x\")))))))" name))
                   "=> \"Denied by user: no\""))
    ;; What the edit buffer accepts.
    (should (equal (gethash "path" (sly-agent-q--parse-arguments "{\"path\": \"/y\"}")) "/y"))
    (should (string-prefix-p "not valid JSON" (sly-agent-q--parse-arguments "{\"path\": ")))
    (should (equal (sly-agent-q--parse-arguments "[1]") "the arguments must be a JSON object {…}"))))

;;; sly-agent-q-approval-test.el ends here
