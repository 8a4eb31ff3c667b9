;;; sly-agent-q-lisp-tools-test.el --- Tools defined in Common Lisp -*- lexical-binding: t; -*-

;;; Commentary:

;; `agent-q:define-tool' and `agent-q:register-tool' in the embedded ECL
;; put a tool in the registry that Elisp and MCP use: it is listed, has a schema, runs synchronously,
;; asynchronously and over MCP, asks for approval when dangerous, and its
;; handler's errors come back as results.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defun agentq-lisp-tools-define (code)
  "Register the tool that CODE (a define-tool form) makes, and check it succeeded."
  (agentq-test-eval-ok (format "(agent-q:register-tool agent-q:*agent-q-registry* %s)" code)))

(ert-deftest sly-agent-q-lisp-tools/defined-in-lisp-used-from-everywhere ()
  (should (equal (agentq-lisp-tools-define
                  "(agent-q:define-tool \"agentq_lisp_upcase\" \"Upcase a text.\"
                     '((:name \"text\" :type :string :description \"The text.\")
                       (:name \"times\" :type :integer :description \"How often.\"))
                     :required '(\"text\") :categories '(:text)
                     :handler (lambda (args)
                                (let ((text (string-upcase (gethash \"text\" args))))
                                  (format nil \"~{~A~^ ~}\" (make-list (or (gethash \"times\" args) 1)
                                                                      :initial-element text)))))")
                 "=> #<tool agentq_lisp_upcase :safe>"))
  (should (member "agentq_lisp_upcase" (sly-agent-q-list-tools)))
  (let* ((schema (seq-find (lambda (tool) (equal (gethash "name" (gethash "function" tool)) "agentq_lisp_upcase"))
                           (sly-agent-q-tools-schema 'openai)))
         (parameters (gethash "parameters" (gethash "function" schema))))
    (should (equal (gethash "description" (gethash "function" schema)) "Upcase a text."))
    (should (equal (gethash "required" parameters) ["text"])))
  ;; Synchronously, under the hyphenated alias too.
  (should (equal (plist-get (agentq-test-call "agentq_lisp_upcase" '(:text "hi" :times 2)) :content) "HI HI"))
  (should (equal (plist-get (agentq-test-call "agentq-lisp-upcase" '(:text "x")) :content) "X"))
  ;; Validated like every tool.
  (should (equal (plist-get (agentq-test-call "agentq_lisp_upcase" '(:times 2)) :content)
                 "Missing required argument: text"))
  ;; Asynchronously.
  (let ((results 'pending))
    (sly-agent-q-execute-tool-calls-async '((:id "a" :name "agentq_lisp_upcase" :arguments (:text "async")))
                                          (lambda (r) (setq results r)))
    (let ((end (+ (float-time) 20)))
      (while (and (eq results 'pending) (< (float-time) end))
        (accept-process-output sly-agent-q--async-process 0.05)))
    (should (equal (plist-get (car results) :content) "ASYNC")))
  ;; Over MCP.
  (let ((response (json-parse-string
                   (sly-agent-q-mcp-request
                    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",
                      \"params\":{\"name\":\"agentq_lisp_upcase\",\"arguments\":{\"text\":\"mcp\"}}}"))))
    (should (equal (gethash "text" (aref (gethash "content" (gethash "result" response)) 0)) "MCP"))))

(ert-deftest sly-agent-q-lisp-tools/handler-failures-are-results ()
  (agentq-lisp-tools-define
   "(agent-q:define-tool \"agentq_lisp_fails\" \"Fails.\" '((:name \"how\" :type :string))
      :handler (lambda (args)
                 (if (equal (gethash \"how\" args) \"signal\")
                     (error \"Symbol FOO not found in package BAR\")
                     (values nil \"Nothing found; try another pattern.\"))))")
  (let ((signalled (agentq-test-call "agentq_lisp_fails" '(:how "signal")))
        (returned (agentq-test-call "agentq_lisp_fails" '(:how "return"))))
    (should-not (plist-get signalled :success))
    (should (equal (plist-get signalled :content) "Tool error: Symbol FOO not found in package BAR"))
    (should-not (plist-get returned :success))
    (should (equal (plist-get returned :content) "Nothing found; try another pattern.")))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-lisp-tools/dangerous-lisp-tools-ask-first ()
  (agentq-lisp-tools-define
   "(agent-q:define-tool \"agentq_lisp_danger\" \"Dangerous.\" nil :safety-level :dangerous
      :handler (lambda (args) (declare (ignore args)) \"done\"))")
  (let ((asked nil))
    (let ((sly-agent-q-approval-function (lambda (name _args) (push name asked) :denied)))
      (should (equal (plist-get (agentq-test-call "agentq_lisp_danger" nil) :content) "User denied tool execution")))
    (let ((sly-agent-q-approval-function (lambda (name _args) (push name asked) :approved)))
      (should (equal (plist-get (agentq-test-call "agentq_lisp_danger" nil) :content) "done")))
    (should (equal asked '("agentq_lisp_danger" "agentq_lisp_danger")))))

(ert-deftest sly-agent-q-lisp-tools/bad-definitions-are-refused-clearly ()
  (dolist (case '(("(agent-q:define-tool \"Bad Name\" \"x\" nil :handler #'identity)" . "snake_case")
                  ("(agent-q:define-tool \"agentq_t\" \"x\" '((:name \"a\" :type :float)) :handler #'identity)"
                   . "unknown type \"float\"")
                  ("(agent-q:define-tool \"agentq_t\" \"x\" nil :safety-level :risky :handler #'identity)"
                   . "unknown safety level risky")
                  ("(agent-q:define-tool \"agentq_t\" \"x\" nil)" . "needs a :handler")
                  ("(agent-q:define-tool \"evaluate_lisp\" \"x\" nil :handler #'identity)"
                   . "evaluate_lisp is the runtime's own tool")
                  ("(agent-q:define-tool \"evaluate-lisp\" \"x\" nil :handler #'identity)"
                   . "evaluate_lisp is the runtime's own tool")))
    (let ((content (agentq-test-eval-fails (car case))))
      (should (string-match-p (regexp-quote (cdr case)) content))))
  ;; evaluate_lisp is still the built-in one.
  (agentq-test-should-be-alive))

;;; sly-agent-q-lisp-tools-test.el ends here
