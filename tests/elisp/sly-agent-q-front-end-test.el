;;; sly-agent-q-front-end-test.el --- The mode, its keys, the audit log and the tool list -*- lexical-binding: t; -*-

;;; Commentary:

;; `sly-agent-q-mode': the C-c ? prefix and its commands, the transient
;; menu, the audit log of cautious and dangerous calls, and the table of
;; tools.

;;; Code:

(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-mode)

(defmacro agentq-front-end--with-mode (&rest body)
  "Run BODY with `sly-agent-q-mode' on, as it was afterwards."
  (declare (indent 0))
  `(let ((was sly-agent-q-mode))
     (unwind-protect (progn (sly-agent-q-mode 1) ,@body)
       (sly-agent-q-mode (if was 1 -1)))))

(ert-deftest sly-agent-q-front-end/keys-under-the-prefix ()
  (agentq-front-end--with-mode
    (should (eq (key-binding (kbd "C-c ? l")) #'sly-agent-q-show-log))
    (should (eq (key-binding (kbd "C-c ? t")) #'sly-agent-q-show-tools))
    (should (eq (key-binding (kbd "C-c ? !")) #'sly-agent-q-auto-approve))
    (should (eq (key-binding (kbd "C-c ? a")) #'sly-agent-q-jump-to-approval))
    (should (eq (key-binding (kbd "C-c ? c r")) #'sly-agent-q-context-add-region))
    (should (eq (key-binding (kbd "C-c ? q f")) #'sly-agent-q-fix-last-error))
    (should (eq (key-binding (kbd "C-c ? ?")) #'sly-agent-q-menu))
    (should (commandp #'sly-agent-q-menu))
    ;; The prefix is an option.
    (let ((old sly-agent-q-keymap-prefix))
      (unwind-protect
          (progn
            (customize-set-variable 'sly-agent-q-keymap-prefix "C-c a")
            (should (eq (key-binding (kbd "C-c a l")) #'sly-agent-q-show-log))
            (should-not (eq (key-binding (kbd "C-c ? l")) #'sly-agent-q-show-log)))
        (customize-set-variable 'sly-agent-q-keymap-prefix old)))
    ;; The chat's commands are the chat's.
    (should (eq (key-binding (kbd "C-c ? s")) #'sly-agent-q-send))
    (should (eq (key-binding (kbd "C-c ? v")) #'sly-agent-q-show-conversation))
    (should (string-match-p "sly-agent-q-chat\\(-[a-z]+\\)?\\.elc?\\'" (symbol-file 'sly-agent-q-send 'defun)))
    ;; Every command has a docstring.
    (map-keymap (lambda (_key command)
                  (when (symbolp command) (should (documentation command))))
                sly-agent-q-command-map))
  (should-not (eq (key-binding (kbd "C-c ? l")) #'sly-agent-q-show-log)))

(ert-deftest sly-agent-q-front-end/audit-log ()
  (let ((file (make-temp-file "agentq-log"))
        (danger (agentq-test-fresh-name "agentq_logged_danger")))
    (sly-agent-q-define-tool danger "Dangerous." '((:name "path" :type :string))
                             :safety-level :dangerous :handler (lambda (_args) "done"))
    (unwind-protect
        (agentq-front-end--with-mode
          (let ((sly-agent-q-log-file file))
            (when (get-buffer "*Agent-Q Log*") (kill-buffer "*Agent-Q Log*"))
            (agentq-test-eval-ok "(+ 1 2)")
            (agentq-test-call "describe_symbol" '(:symbol "car"))
            (let ((sly-agent-q-approval-function (lambda (_n _a) :denied)))
              (agentq-test-call danger '(:path "/tmp/denied")))
            (let ((sly-agent-q-approval-function (lambda (_n _a) :approved)))
              (agentq-test-call danger '(:path "/tmp/approved")))
            (let ((log (with-current-buffer "*Agent-Q Log*" (buffer-string))))
              (should (string-match-p "evaluate_lisp +cautious +- +[0-9.]+ms ok +code=(\\+ 1 2)" log))
              (should-not (string-match-p "describe_symbol" log))
              (should (string-match-p (concat danger " +dangerous +denied .*FAILED +path=/tmp/denied +→ User denied tool execution") log))
              (should (string-match-p (concat danger " +dangerous +approved .*ok +path=/tmp/approved") log))
              (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string)) log)))))
      (delete-file file))
    ;; Off: nothing logged.
    (when (get-buffer "*Agent-Q Log*") (kill-buffer "*Agent-Q Log*"))
    (agentq-test-eval-ok "(+ 1 2)")
    (should-not (get-buffer "*Agent-Q Log*"))))

(ert-deftest sly-agent-q-front-end/audit-log-names-the-door ()
  "Each line of the audit log says which door its call came through:
user (Elisp: the person's commands), chat, MCP, Lisp; for asynchronous
jobs too, whose hooks run after the door's binding has ended."
  (agentq-front-end--with-mode
    (when (get-buffer "*Agent-Q Log*") (kill-buffer "*Agent-Q Log*"))
    (agentq-test-eval-ok "(+ 1 2)")
    (let ((sly-agent-q-call-origin "chat"))
      (agentq-test-eval-ok "(+ 2 3)"))
    (agentq-test-mcp '(:jsonrpc "2.0" :id 1 :method "tools/call"
                                :params (:name "evaluate_lisp" :arguments (:code "(+ 3 4)"))))
    (agentq-test-eval-ok "(agent-q:execute-tool-calls '((:id \"l\" :name \"eval_form\" :arguments (:form \"(+ 5 6)\"))))")
    (let ((done 0))
      (let ((sly-agent-q-call-origin "MCP: agentq-client"))
        (sly-agent-q-execute-tool-calls-async '((:id "a" :name "evaluate_lisp" :arguments (:code "(+ 6 7)")))
                                              (lambda (_) (cl-incf done))))
      (sly-agent-q-mcp-request-async
       "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"evaluate_lisp\",\"arguments\":{\"code\":\"(+ 7 8)\"}}}"
       (lambda (_) (cl-incf done)))
      (let ((deadline (+ (float-time) 20)))
        (while (and (< done 2) (< (float-time) deadline)) (accept-process-output nil 0.02)))
      (should (= done 2)))
    (let ((log (with-current-buffer "*Agent-Q Log*" (buffer-string))))
      (dolist (expected '(("user" "evaluate_lisp" "code=(\\+ 1 2)")
                          ("chat" "evaluate_lisp" "code=(\\+ 2 3)")
                          ("MCP" "evaluate_lisp" "code=(\\+ 3 4)")
                          ("user" "evaluate_lisp" "code=(agent-q:execute-tool-calls")
                          ("Lisp" "eval_form" "form=(\\+ 5 6)")
                          ("MCP: agentq-client" "evaluate_lisp" "code=(\\+ 6 7)")
                          ("MCP" "evaluate_lisp" "code=(\\+ 7 8)")))
        (should (string-match-p (format "^[-0-9]+ [:0-9]+ %s +%s +cautious .* %s"
                                        (regexp-quote (car expected)) (nth 1 expected) (nth 2 expected))
                                log))))))

(ert-deftest sly-agent-q-front-end/tool-list ()
  (agentq-test-eval-ok "(+ 1 2)")
  (should (member "evaluate_lisp" (sly-agent-q-list-tools)))
  (save-window-excursion
    (call-interactively #'sly-agent-q-list-tools)
    (with-current-buffer "*Agent-Q Tools*"
      (should (derived-mode-p 'sly-agent-q-tool-list-mode))
      (goto-char (point-min))
      (should (re-search-forward "^evaluate_lisp +cautious +execution +\\([0-9]+\\) +[0-9]+ +[0-9.]+$" nil t))
      (should (> (string-to-number (match-string 1)) 0))
      (should (re-search-forward "^who_calls +safe +introspection xref " nil t))
      (goto-char (point-min))
      (re-search-forward "^describe_symbol")
      (sly-agent-q-tool-list-describe (tabulated-list-get-id))
      (should (string-match-p "\\`describe_symbol\n\nDescribe a Common Lisp symbol"
                              (with-current-buffer "*Agent-Q Tool*" (buffer-string))))
      (should (string-match-p "\"required\": \\[\n? *\"symbol\""
                              (with-current-buffer "*Agent-Q Tool*" (buffer-string)))))))

(ert-deftest sly-agent-q-front-end/mode-line ()
  (agentq-front-end--with-mode
    (let ((sly-agent-q-approval-pending nil) (sly-agent-q--auto-approve-until nil))
      (should (equal (sly-agent-q--mode-line) " AgentQ"))
      (setq sly-agent-q-approval-pending (cons "write_file" (float-time)))
      (should (equal (substring-no-properties (sly-agent-q--mode-line)) " AgentQ:APPROVE write_file?"))
      (setq sly-agent-q-approval-pending nil sly-agent-q--auto-approve-until (+ (float-time) 600))
      (should (equal (substring-no-properties (sly-agent-q--mode-line)) " AgentQ:AUTO 10m")))))

;; `make run' shows the welcome, which turns the mode on.
(ert-deftest sly-agent-q-front-end/welcome-turns-the-mode-on ()
  (agentq-front-end--with-mode
    (sly-agent-q-mode -1)
    (save-window-excursion (sly-agent-q-welcome))
    (should sly-agent-q-mode)
    (should (string-match-p "C-c \\? t / C-c \\? l / C-c \\? \\?"
                            (with-current-buffer "*sly-agent-q*" (buffer-string))))))

;;; sly-agent-q-front-end-test.el ends here
