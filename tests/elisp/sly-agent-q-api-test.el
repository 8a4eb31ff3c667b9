;;; sly-agent-q-api-test.el --- The Elisp API of design.md -*- lexical-binding: t; -*-

;;; Commentary:

;; The public API table of design.md, through the real module and ECL:
;; sly-agent-q-execute-tool-calls, sly-agent-q-define-tool, approvals,
;; sly-agent-q-tool-execution-functions, sly-agent-q-tools-schema,
;; sly-agent-q-mcp-request and sly-agent-q-tool-stats.

;;; Code:

(require 'sly-agent-q-test-helpers)

;;;; sly-agent-q-execute-tool-calls

(ert-deftest sly-agent-q-api/result-plist-shape ()
  "A result is (:id :success :content :error :metadata (:execution_time_ms :safety_level :approved))."
  (let* ((results (sly-agent-q-execute-tool-calls
                   '((:id "call_abc123" :name "evaluate_lisp" :arguments (:code "(+ 1 2)")))))
         (result (car results)))
    (should (= (length results) 1))
    (agentq-test-check-result result)
    (should (equal (plist-get result :id) "call_abc123"))
    (should (eq (plist-get result :success) t))
    (should (equal (plist-get result :content) "=> 3"))
    (should (null (plist-get result :error)))
    (should (equal (agentq-test-metadata result :safety_level) "cautious"))
    ;; Cautious tools need no approval: they count as approved.
    (should (eq (agentq-test-metadata result :approved) t))
    (should (floatp (agentq-test-metadata result :execution_time_ms)))))

(ert-deftest sly-agent-q-api/order-and-ids-preserved ()
  "Results come back in call order with each call's id, successes and failures mixed."
  (let* ((calls (list '(:id "a" :name "evaluate_lisp" :arguments (:code "(+ 0 1)"))
                      '(:id "b" :name "no_such_tool_here" :arguments nil)
                      '(:id "c" :name "evaluate_lisp" :arguments (:code "(error \"boom\")"))
                      '(:id "d" :name "evaluate_lisp" :arguments (:code "(+ 1 3)"))
                      '(:id "e" :name "evaluate_lisp" :arguments (:code 5))
                      '(:id "f" :name "evaluate_lisp" :arguments (:code "(* 2 3)"))))
         (results (sly-agent-q-execute-tool-calls calls)))
    (should (= (length results) 6))
    (mapc #'agentq-test-check-result results)
    (should (equal (mapcar (lambda (r) (plist-get r :id)) results) '("a" "b" "c" "d" "e" "f")))
    (should (equal (mapcar (lambda (r) (plist-get r :success)) results) '(t nil nil t nil t)))
    (should (equal (plist-get (nth 0 results) :content) "=> 1"))
    (should (equal (plist-get (nth 3 results) :content) "=> 4"))
    (should (equal (plist-get (nth 5 results) :content) "=> 6"))))

(ert-deftest sly-agent-q-api/empty-call-list ()
  "No calls, no results."
  (should (null (sly-agent-q-execute-tool-calls nil))))

(ert-deftest sly-agent-q-api/call-without-id ()
  "A call without :id gives a result with :id nil."
  (let ((result (car (sly-agent-q-execute-tool-calls
                      '((:name "evaluate_lisp" :arguments (:code "(+ 1 2)")))))))
    (agentq-test-check-result result)
    (should (null (plist-get result :id)))
    (should (equal (plist-get result :content) "=> 3"))))

(ert-deftest sly-agent-q-api/argument-forms ()
  "ARGS as a plist, an alist (string and symbol keys), a hash table and a JSON string."
  (let ((table (make-hash-table :test 'equal)))
    (puthash "code" "(+ 1 2)" table)
    (dolist (args (list '(:code "(+ 1 2)")
                        '(("code" . "(+ 1 2)"))
                        '((code . "(+ 1 2)"))
                        table
                        "{\"code\": \"(+ 1 2)\"}"))
      (let ((result (agentq-test-call "evaluate_lisp" args)))
        (should (eq (plist-get result :success) t))
        (should (equal (plist-get result :content) "=> 3"))))))

(ert-deftest sly-agent-q-api/argument-forms-with-several-keys ()
  "Every argument of a plist, alist, hash table or JSON string reaches the tool."
  (let ((table (make-hash-table :test 'equal)))
    (puthash "code" "(package-name *package*)" table)
    (puthash "package" "COMMON-LISP" table)
    (dolist (args (list '(:code "(package-name *package*)" :package "COMMON-LISP")
                        '(("code" . "(package-name *package*)") ("package" . "COMMON-LISP"))
                        table
                        "{\"code\": \"(package-name *package*)\", \"package\": \"COMMON-LISP\"}"))
      (should (equal (plist-get (agentq-test-call "evaluate_lisp" args) :content)
                     "=> \"COMMON-LISP\"")))))

(ert-deftest sly-agent-q-api/openai-call-shape ()
  "A call in OpenAI's shape (:id … :function (:name … :arguments JSON)) also runs."
  (let ((result (car (sly-agent-q-execute-tool-calls
                      '((:id "oa" :function (:name "evaluate_lisp"
                                             :arguments "{\"code\":\"(+ 20 22)\"}")))))))
    (agentq-test-check-result result)
    (should (equal (plist-get result :id) "oa"))
    (should (equal (plist-get result :content) "=> 42"))))

(ert-deftest sly-agent-q-api/fast-and-general-call-paths-agree ()
  "Calls taken apart in Elisp give what the module's general conversion gives."
  (let ((table (make-hash-table :test 'equal))
        (deep-table (make-hash-table :test 'equal))
        (deep (let ((v "x")) (dotimes (_ 199) (setq v (vector v))) v))
        (circular (list :code "1" :package "CL-USER")))
    (setcdr (last circular) circular)
    (puthash "code" "(+ 1 2)" table)
    (puthash "code" "1" deep-table)
    (puthash "package" deep deep-table)
    (dolist (call `((:id "p" :name "evaluate_lisp" :arguments (:code "(+ 1 2)" :package "CL-USER"))
                    (:id 7 :name "evaluate_lisp" :arguments (:code "(+ 1 2)"))
                    (:id 1.5 :name evaluate_lisp :arguments (:code "(+ 1 2)"))
                    (:name "evaluate_lisp" :id "h" :arguments ,table)
                    (:id "j" :name "evaluate_lisp" :arguments "{\"code\": \"(+ 2 2)\"}")
                    (:id "a" :name "evaluate_lisp" :arguments (("code" . "(+ 1 2)")))
                    (:id "n" :name "evaluate_lisp" :arguments nil)
                    (:id "n2" :name "evaluate_lisp")
                    (:id "odd" :name "evaluate_lisp" :arguments (:code))
                    (:id "odd3" :name "evaluate_lisp" :arguments (:code "1" :package))
                    (:id "dup" :name "evaluate_lisp" :arguments (:code "(+ 1 1)" :code "(+ 2 2)"))
                    (:id "dup-name" :name "evaluate_lisp" :name "nothing" :arguments (:code "3"))
                    (:id "k" :name "evaluate_lisp" :arguments (:code "4" "package" "CL-USER"))
                    (:id "t" :name "evaluate_lisp" :arguments (:code "5" :timeout 10 :capture-time :false))
                    (:id "nm" :name "" :arguments (:code "1"))
                    (:id "vec" :name "evaluate_lisp" :arguments [1 2])
                    (:id "bad" :name "evaluate_lisp" :arguments (:code ,(string (unibyte-char-to-multibyte 200))))
                    ;; Other spellings of the keys, extra keys, unconvertible values.
                    (:id "a" name "nothing" :name "evaluate_lisp" :arguments (:code "1"))
                    (:id "s" "name" "nothing" :name "evaluate_lisp" :arguments (:code "1"))
                    (:name "evaluate_lisp" "id" "x" :id "a" :arguments (:code "1"))
                    (:id "ar" :name "evaluate_lisp" "arguments" (:code "2") :arguments (:code "1"))
                    (:id "meta" :name "evaluate_lisp" :meta ,(current-buffer) :arguments (:code "1"))
                    (:id "fk" :name "evaluate_lisp" :arguments (:code "1" 1.5 2))
                    (:id "buf" :name "evaluate_lisp" :arguments (:code ,(current-buffer)))
                    (:id ,(current-buffer) :name "evaluate_lisp" :arguments (:code "1"))
                    (:id "deep" :name "evaluate_lisp" :arguments (:code "1" :package ,deep))
                    (:id "deep-h" :name "evaluate_lisp" :arguments ,deep-table)
                    (:id "circ" :name "evaluate_lisp" :arguments ,circular)))
      (let ((fast (car (sly-agent-q-execute-tool-calls (list call))))
            (general (car (sly-agent-q--module-execute (list call) sly-agent-q-approval-function nil))))
        (agentq-test-check-result fast)
        (dolist (key '(:id :success :content :error))
          (should (equal (list call key (plist-get fast key))
                         (list call key (plist-get general key)))))))))

(ert-deftest sly-agent-q-api/unknown-tool ()
  "An unknown tool gives \"Unknown tool: NAME\"."
  (let ((result (agentq-test-call "frobnicate_everything" '(:x "y"))))
    (should (eq (plist-get result :success) nil))
    (should (equal (plist-get result :error) "Unknown tool: frobnicate_everything"))
    (should (equal (plist-get result :content) "Unknown tool: frobnicate_everything"))))

(ert-deftest sly-agent-q-api/hyphenated-alias ()
  "evaluate-lisp is accepted for evaluate_lisp."
  (let ((result (agentq-test-call "evaluate-lisp" '(:code "(+ 1 2)"))))
    (should (eq (plist-get result :success) t))
    (should (equal (plist-get result :content) "=> 3"))
    (should (equal (agentq-test-metadata result :safety_level) "cautious"))))

(ert-deftest sly-agent-q-api/missing-required-argument ()
  "A call without code says which argument is missing."
  (dolist (args (list nil '(:package "CL-USER") "{}" (make-hash-table :test 'equal)))
    (let ((result (agentq-test-call "evaluate_lisp" args)))
      (should (eq (plist-get result :success) nil))
      (should (equal (plist-get result :error) "Missing required argument: code")))))

(ert-deftest sly-agent-q-api/wrong-argument-type ()
  "(:code 42) names the argument and the expected type."
  (let* ((result (agentq-test-call "evaluate_lisp" '(:code 42)))
         (message (plist-get result :error)))
    (should (eq (plist-get result :success) nil))
    (should (string-match-p "\\_<code\\_>" message))
    (should (string-match-p "\\_<string\\_>" message))
    (should (equal message "Invalid argument 'code': expected string, got integer"))))

(ert-deftest sly-agent-q-api/malformed-json-arguments ()
  "A malformed JSON string of arguments is an error result, not a signal."
  (dolist (json '("{bad" "{\"code\": " "[1, 2" ""))
    (let ((result (agentq-test-call "evaluate_lisp" json "mj")))
      (should (eq (plist-get result :success) nil))
      (should (equal (plist-get result :id) "mj"))
      (should (string-match-p "JSON" (plist-get result :error))))))

(ert-deftest sly-agent-q-api/json-arguments-not-an-object ()
  "A JSON string that is valid but not an object is an error result."
  (dolist (json '("[1, 2]" "42" "\"code\""))
    (let ((result (agentq-test-call "evaluate_lisp" json)))
      (should (eq (plist-get result :success) nil))
      (should (string-match-p "object\\|Missing required argument" (plist-get result :error))))))

(ert-deftest sly-agent-q-api/content-is-always-a-string ()
  "Whatever the outcome, :content is a string and success XOR error holds."
  (let ((results (sly-agent-q-execute-tool-calls
                  '((:id "1" :name "evaluate_lisp" :arguments (:code "nil"))
                    (:id "2" :name "evaluate_lisp" :arguments (:code "(values)"))
                    (:id "3" :name "evaluate_lisp" :arguments (:code ""))
                    (:id "4" :name "evaluate_lisp" :arguments (:code "(error \"x\")"))
                    (:id "5" :name "nope" :arguments nil)
                    (:id "6" :name "evaluate_lisp" :arguments "{")
                    (:id "7" :name "evaluate_lisp" :arguments (:code nil))))))
    (should (= (length results) 7))
    (dolist (result results)
      (agentq-test-check-result result)
      (should (> (length (plist-get result :content)) 0)))
    (should (equal (plist-get (car results) :content) "=> NIL"))))

;;;; sly-agent-q-define-tool

(ert-deftest sly-agent-q-api/define-tool-is-listed-everywhere ()
  "An Elisp tool shows in list-tools (sorted), the schemas and MCP tools/list, and runs via MCP."
  (let ((name (agentq-test-fresh-name "agentq_echo")))
    (should (equal (sly-agent-q-define-tool
                    name "Echo the text back."
                    '((:name "text" :type :string :description "What to echo."))
                    :required '("text")
                    :categories '(:testing)
                    :handler (lambda (args) (concat "echo: " (gethash "text" args))))
                   name))
    ;; list-tools: present once, sorted, and evaluate_lisp too.
    (let ((names (sly-agent-q-list-tools)))
      (should (= (cl-count name names :test #'equal) 1))
      (should (member "evaluate_lisp" names))
      (should (equal names (sort (copy-sequence names) #'string<))))
    ;; Schema.
    (let* ((schema (sly-agent-q-tools-schema))
           (entry (cl-find name schema :key (lambda (e) (agentq-test-get e "function" "name"))
                           :test #'equal)))
      (should entry)
      (should (equal (agentq-test-get entry "type") "function"))
      (should (equal (agentq-test-get entry "function" "description") "Echo the text back."))
      (should (equal (agentq-test-get entry "function" "parameters" "properties" "text" "type")
                     "string"))
      (should (equal (agentq-test-get entry "function" "parameters" "properties" "text" "description")
                     "What to echo."))
      (should (equal (agentq-test-get entry "function" "parameters" "required") ["text"])))
    ;; MCP tools/list.
    (let* ((response (agentq-test-mcp '((jsonrpc . "2.0") (id . 5) (method . "tools/list"))))
           (tools (agentq-test-get response "result" "tools"))
           (entry (cl-find name tools :key (lambda (e) (gethash "name" e)) :test #'equal)))
      (should entry)
      (should (equal (agentq-test-get entry "inputSchema" "properties" "text" "type") "string")))
    ;; MCP tools/call.
    (let ((response (agentq-test-mcp
                     `((jsonrpc . "2.0") (id . 6) (method . "tools/call")
                       (params . ((name . ,name) (arguments . ((text . "héllo")))))))))
      (should (equal (agentq-test-get response "id") 6))
      (should (eq (agentq-test-get response "result" "isError") :false))
      (should (equal (agentq-test-get response "result" "content" 0 "type") "text"))
      (should (equal (agentq-test-get response "result" "content" 0 "text") "echo: héllo")))
    ;; And through execute-tool-calls, with the tool's safety level.
    (let ((result (agentq-test-call name '(:text "hi"))))
      (should (equal (plist-get result :content) "echo: hi"))
      (should (equal (agentq-test-metadata result :safety_level) "safe")))))

(ert-deftest sly-agent-q-api/define-tool-several-parameters ()
  "A tool with several typed parameters gets all of them, converted from JSON."
  (let ((name (agentq-test-fresh-name "agentq_multi"))
        (seen nil))
    (sly-agent-q-define-tool
     name "Several parameters."
     '((:name "s" :type :string :description "a string")
       (:name "n" :type :integer :description "an integer")
       (:name "f" :type :boolean :description "a flag")
       (:name "xs" :type :array :description "a list"))
     :required '("s" "n")
     :handler (lambda (args) (setq seen args) "ok"))
    (let ((result (agentq-test-call name "{\"s\": \"x\", \"n\": 3, \"f\": true, \"xs\": [1, 2]}")))
      (should (equal (plist-get result :content) "ok")))
    (should (equal (gethash "s" seen) "x"))
    (should (equal (gethash "n" seen) 3))
    (should (eq (gethash "f" seen) t))
    (should (equal (gethash "xs" seen) [1 2]))
    (let ((properties (agentq-test-get
                       (cl-find name (sly-agent-q-tools-schema 'mcp)
                                :key (lambda (e) (gethash "name" e)) :test #'equal)
                       "inputSchema" "properties")))
      (should (equal (sort (hash-table-keys properties) #'string<) '("f" "n" "s" "xs")))
      (should (equal (agentq-test-get properties "n" "type") "integer")))
    ;; Types are checked before the handler runs.
    (setq seen nil)
    (let ((result (agentq-test-call name '(:s "x" :n "three"))))
      (should (eq (plist-get result :success) nil))
      (should (string-match-p "'n'.*integer" (plist-get result :error))))
    (should (null seen))))

(ert-deftest sly-agent-q-api/define-tool-enum ()
  "A string parameter's :enum is in its schema and checked before the handler
runs, for a tool defined in Elisp and one defined in Lisp; on a number it
is refused."
  (let ((name (agentq-test-fresh-name "agentq_enum"))
        (seen nil))
    (sly-agent-q-define-tool
     name "Takes a kind."
     '((:name "kind" :type :string :enum ("fast" "slow") :default "fast" :description "How."))
     :handler (lambda (args) (setq seen (gethash "kind" args)) "ok"))
    (let ((kind (agentq-test-get
                 (cl-find name (sly-agent-q-tools-schema 'mcp) :key (lambda (e) (gethash "name" e)) :test #'equal)
                 "inputSchema" "properties" "kind")))
      (should (equal (gethash "enum" kind) ["fast" "slow"]))
      (should (equal (gethash "default" kind) "fast")))
    (should (equal (plist-get (agentq-test-call name '(:kind "slow")) :content) "ok"))
    (should (equal seen "slow"))
    (setq seen nil)
    (let ((result (agentq-test-call name '(:kind "Slow"))))
      (should-not (plist-get result :success))
      (should (equal (plist-get result :error) "Invalid argument 'kind': one of \"fast\", \"slow\", got \"Slow\"")))
    (should-not seen))
  (should (string-match-p "parameter \"n\" has an enum but is not a string"
                          (agentq-test--definition-error
                           (lambda () (sly-agent-q-define-tool "agentq_enum_number" "d"
                                                               '((:name "n" :type :integer :enum ("1")))
                                                               :handler #'ignore)))))
  ;; The same from Lisp.
  (should (equal (agentq-test-eval-ok "(progn (register-tool *agent-q-registry*
                                                 (define-tool \"agentq_lisp_enum\" \"Takes a kind.\"
                                                   '((:name \"kind\" :type :string :enum (\"a\" \"b\")))
                                                   :handler (lambda (args) (gethash \"kind\" args))))
                                               :registered)")
                 "=> :REGISTERED"))
  (should (equal (plist-get (agentq-test-call "agentq_lisp_enum" '(:kind "b")) :content) "b"))
  (should (equal (plist-get (agentq-test-call "agentq_lisp_enum" '(:kind "c")) :error)
                 "Invalid argument 'kind': one of \"a\", \"b\", got \"c\""))
  (should (string-match-p "TOOL-DEFINITION-ERROR\nTool agentq_lisp_enum_twice: parameter \"k\" lists \"a\" twice in its enum"
                          (agentq-test-eval-fails "(define-tool \"agentq_lisp_enum_twice\" \"x\"
                                               '((:name \"k\" :type :string :enum (\"a\" \"a\")))
                                               :handler #'identity)"))))

(ert-deftest sly-agent-q-api/define-tool-handler-gets-string-keyed-hash ()
  "The handler gets a hash table whose keys are strings, whatever form ARGS had."
  (let ((name (agentq-test-fresh-name "agentq_keys"))
        (seen '()))
    (sly-agent-q-define-tool
     name "Record the arguments."
     '((:name "alpha" :type :string :description "a") (:name "beta" :type :number :description "b"))
     :handler (lambda (args) (push args seen) "ok"))
    (let ((table (make-hash-table :test 'equal)))
      (puthash "alpha" "x" table)
      (puthash "beta" 2 table)
      (dolist (args (list '(:alpha "x" :beta 2) '((alpha . "x") (beta . 2)) table
                          "{\"alpha\": \"x\", \"beta\": 2}"))
        (should (equal (plist-get (agentq-test-call name args) :content) "ok"))))
    (should (= (length seen) 4))
    (dolist (args seen)
      (should (hash-table-p args))
      (should (cl-every #'stringp (hash-table-keys args)))
      (should (equal (sort (hash-table-keys args) #'string<) '("alpha" "beta")))
      (should (equal (gethash "alpha" args) "x"))
      (should (equal (gethash "beta" args) 2)))))

(ert-deftest sly-agent-q-api/define-tool-non-string-result-is-printed ()
  "A handler's non-string value is printed with prin1."
  (let ((name (agentq-test-fresh-name "agentq_values"))
        (value nil))
    (sly-agent-q-define-tool name "Return a value." nil :handler (lambda (_args) value))
    (dolist (case '((42 . "42")
                    ((1 "two" three) . "(1 \"two\" three)")
                    (nil . "nil")
                    (:kw . ":kw")
                    (1.5 . "1.5")))
      (setq value (car case))
      (let ((result (agentq-test-call name nil)))
        (should (eq (plist-get result :success) t))
        (should (equal (plist-get result :content) (cdr case)))))))

(ert-deftest sly-agent-q-api/define-tool-handler-error ()
  "A handler that signals gives \"Tool error: …\" and the session goes on."
  (let ((name (agentq-test-fresh-name "agentq_fails")))
    (sly-agent-q-define-tool name "Always fails." nil
                             :handler (lambda (_args) (error "Boom %d" 7)))
    (let ((result (agentq-test-call name nil)))
      (should (eq (plist-get result :success) nil))
      (should (equal (plist-get result :error) "Tool error: Boom 7")))
    (sly-agent-q-define-tool name "Fails with a non-error signal." nil
                             :handler (lambda (_args) (signal 'wrong-type-argument '(stringp 3))))
    (let ((result (agentq-test-call name nil)))
      (should (eq (plist-get result :success) nil))
      (should (string-prefix-p "Tool error: " (plist-get result :error)))
      (should (string-match-p "stringp" (plist-get result :error))))
    (agentq-test-should-be-alive)))

(defun agentq-test--definition-error (thunk)
  "Call THUNK; assert it signals `sly-agent-q-error'; return the message."
  (let ((err (should-error (funcall thunk) :type 'sly-agent-q-error)))
    (should (stringp (cadr err)))
    (cadr err)))

(ert-deftest sly-agent-q-api/define-tool-invalid-definitions ()
  "Invalid definitions signal sly-agent-q-error with a message that says what is wrong."
  (let ((message (agentq-test--definition-error
                  (lambda () (sly-agent-q-define-tool "Foo-Bar" "d" nil :handler #'ignore)))))
    (should (string-match-p "Foo-Bar" message))
    (should (string-match-p "snake_case" message)))
  (let ((message (agentq-test--definition-error
                  (lambda ()
                    (sly-agent-q-define-tool "agentq_bad_required" "d"
                                             '((:name "x" :type :string :description "x"))
                                             :required '("y") :handler #'ignore)))))
    (should (string-match-p "\"y\"" message))
    (should (string-match-p "not among its parameters" message)))
  (let ((message (agentq-test--definition-error
                  (lambda ()
                    (sly-agent-q-define-tool "agentq_bad_level" "d" nil
                                             :safety-level :reckless :handler #'ignore)))))
    (should (string-match-p "reckless" message))
    (should (string-match-p "safety level" message)))
  (let ((message (agentq-test--definition-error
                  (lambda ()
                    (sly-agent-q-define-tool "agentq_bad_type" "d"
                                             '((:name "x" :type :widget :description "x"))
                                             :handler #'ignore)))))
    (should (string-match-p "widget" message))
    (should (string-match-p "type" message)))
  (let ((message (agentq-test--definition-error
                  (lambda () (sly-agent-q-define-tool "agentq_no_handler" "d" nil)))))
    (should (string-match-p "handler" message)))
  (should (equal (agentq-test--definition-error
                  (lambda () (sly-agent-q-define-tool "agentq_required_5" "d" nil :required 5 :handler #'ignore)))
                 "Tool agentq_required_5: :required expected a list of names (strings or keywords), got 5"))
  (should (equal (agentq-test--definition-error
                  (lambda () (sly-agent-q-define-tool "a\0b" "d" nil :handler #'ignore)))
                 "Invalid tool name \"a\\u0000b\": tool names must be snake_case (^[a-z][a-z0-9_]*$)"))
  ;; None of them was registered.
  (let ((names (sly-agent-q-list-tools)))
    (dolist (name '("Foo-Bar" "agentq_bad_required" "agentq_bad_level" "agentq_bad_type"
                    "agentq_no_handler" "agentq_required_5"))
      (should-not (member name names)))))

(ert-deftest sly-agent-q-api/define-tool-redefinition-overwrites ()
  "Defining a tool again replaces its description, parameters and handler."
  (let ((name (agentq-test-fresh-name "agentq_redef")))
    (sly-agent-q-define-tool name "First version." '((:name "a" :type :string :description "a"))
                             :handler (lambda (_args) "v1"))
    (should (equal (plist-get (agentq-test-call name nil) :content) "v1"))
    (sly-agent-q-define-tool name "Second version." '((:name "b" :type :integer :description "b"))
                             :required '("b") :safety-level :cautious
                             :handler (lambda (args) (format "v2 %s" (gethash "b" args))))
    (should (= (cl-count name (sly-agent-q-list-tools) :test #'equal) 1))
    (let ((result (agentq-test-call name '(:b 7))))
      (should (equal (plist-get result :content) "v2 7"))
      (should (equal (agentq-test-metadata result :safety_level) "cautious")))
    (should (equal (plist-get (agentq-test-call name nil) :error) "Missing required argument: b"))
    (let ((entry (cl-find name (sly-agent-q-tools-schema 'anthropic)
                          :key (lambda (e) (gethash "name" e)) :test #'equal)))
      (should (equal (gethash "description" entry) "Second version."))
      (should (equal (hash-table-keys (agentq-test-get entry "input_schema" "properties")) '("b"))))))

;;;; Approvals

(defvar agentq-test--danger-runs nil "Arguments the dangerous test tool ran with.")

(defun agentq-test--define-danger ()
  "Define a dangerous tool that records its runs; return its name."
  (let ((name (agentq-test-fresh-name "agentq_danger")))
    (sly-agent-q-define-tool
     name "A dangerous test tool." '((:name "path" :type :string :description "A path."))
     :required '("path") :safety-level :dangerous :categories '(:files)
     :handler (lambda (args)
                (push (gethash "path" args) agentq-test--danger-runs)
                (concat "wrote " (gethash "path" args))))
    (setq agentq-test--danger-runs nil)
    name))

(ert-deftest sly-agent-q-api/approval-nil-denies ()
  "With no approval function a dangerous tool is denied and its handler never runs."
  (let ((name (agentq-test--define-danger))
        (sly-agent-q-approval-function nil))
    (let ((result (agentq-test-call name '(:path "/tmp/x"))))
      (should (eq (plist-get result :success) nil))
      (should (equal (plist-get result :error) "User denied tool execution"))
      (should (equal (agentq-test-metadata result :safety_level) "dangerous"))
      (should (eq (agentq-test-metadata result :approved) nil)))
    (should (null agentq-test--danger-runs))))

(ert-deftest sly-agent-q-api/approval-default-denies-in-batch ()
  "The default approval function (which would ask) denies in batch Emacs."
  (let ((name (agentq-test--define-danger))
        (sly-agent-q-approval-function (default-value 'sly-agent-q-approval-function)))
    (should (eq sly-agent-q-approval-function #'sly-agent-q-approve))
    (should (equal (plist-get (agentq-test-call name '(:path "p")) :error)
                   "User denied tool execution"))
    (should (null agentq-test--danger-runs))))

(ert-deftest sly-agent-q-api/approval-approved-runs ()
  ":approved runs the tool and the metadata says approved."
  (let* ((name (agentq-test--define-danger))
         (sly-agent-q-approval-function (lambda (_name _args) :approved))
         (result (agentq-test-call name '(:path "a.txt"))))
    (should (eq (plist-get result :success) t))
    (should (equal (plist-get result :content) "wrote a.txt"))
    (should (eq (agentq-test-metadata result :approved) t))
    (should (equal (agentq-test-metadata result :safety_level) "dangerous"))
    (should (equal agentq-test--danger-runs '("a.txt")))))

(ert-deftest sly-agent-q-api/approval-denied ()
  ":denied (or any unknown answer, a dotted (:modified . X) too) denies."
  (let ((name (agentq-test--define-danger)))
    (dolist (answer '(:denied nil :maybe "yes" (:modified . 5) (:modified . "x")))
      (let* ((sly-agent-q-approval-function (lambda (_name _args) answer))
             (result (agentq-test-call name '(:path "b.txt"))))
        (should (eq (plist-get result :success) nil))
        (should (equal (plist-get result :error) "User denied tool execution"))
        (should (eq (agentq-test-metadata result :approved) nil))))
    (should (null agentq-test--danger-runs))))

(ert-deftest sly-agent-q-api/approval-modified-plist ()
  "(:modified NEW-ARGS) with a plist runs the handler with the new arguments."
  (let* ((name (agentq-test--define-danger))
         (sly-agent-q-approval-function (lambda (_name _args) '(:modified (:path "safer.txt"))))
         (result (agentq-test-call name '(:path "rm-rf.txt"))))
    (should (eq (plist-get result :success) t))
    (should (equal (plist-get result :content) "wrote safer.txt"))
    (should (eq (agentq-test-metadata result :approved) t))
    (should (equal agentq-test--danger-runs '("safer.txt")))))

(ert-deftest sly-agent-q-api/approval-modified-hash-table ()
  "(:modified NEW-ARGS) with a hash table runs the handler with the new arguments."
  (let* ((name (agentq-test--define-danger))
         (sly-agent-q-approval-function
          (lambda (_name args)
            (let ((new (copy-hash-table args)))
              (puthash "path" (concat (gethash "path" args) ".bak") new)
              (list :modified new))))
         (result (agentq-test-call name '(:path "c.txt"))))
    (should (eq (plist-get result :success) t))
    (should (equal (plist-get result :content) "wrote c.txt.bak"))
    (should (equal agentq-test--danger-runs '("c.txt.bak")))))

(ert-deftest sly-agent-q-api/approval-modified-args-are-validated ()
  "Modified arguments are checked like the model's: a missing required one fails."
  (let* ((name (agentq-test--define-danger))
         (sly-agent-q-approval-function (lambda (_name _args) '(:modified (:other "x"))))
         (result (agentq-test-call name '(:path "d.txt"))))
    (should (eq (plist-get result :success) nil))
    (should (equal (plist-get result :error) "Missing required argument: path"))
    (should (null agentq-test--danger-runs))))

(ert-deftest sly-agent-q-api/approval-function-arguments ()
  "The approval function gets (TOOL-NAME ARGS-HASH) with string keys, once per call."
  (let* ((name (agentq-test--define-danger))
         (calls '())
         (sly-agent-q-approval-function
          (lambda (&rest args) (push args calls) :denied)))
    (agentq-test-call name '(:path "e.txt"))
    (should (= (length calls) 1))
    (pcase-let ((`(,tool-name ,args) (car calls)))
      (should (equal tool-name name))
      (should (hash-table-p args))
      (should (equal (hash-table-keys args) '("path")))
      (should (equal (gethash "path" args) "e.txt")))))

(ert-deftest sly-agent-q-api/approval-function-error-denies ()
  "An approval function that signals an error denies the call; nothing escapes."
  (let* ((name (agentq-test--define-danger))
         (sly-agent-q-approval-function (lambda (_name _args) (error "Approval UI broke")))
         (result (condition-case err
                     (agentq-test-call name '(:path "f.txt"))
                   (error (ert-fail (format "the approval function's error escaped: %S" err))))))
    (should (eq (plist-get result :success) nil))
    (should (equal (plist-get result :error) "User denied tool execution"))
    (should (null agentq-test--danger-runs))
    (agentq-test-should-be-alive)))

(ert-deftest sly-agent-q-api/approval-function-error-denies-mcp ()
  "Through MCP too, a failing approval function denies: isError with the denial, no signal."
  (let* ((name (agentq-test--define-danger))
         (sly-agent-q-approval-function (lambda (_name _args) (error "Approval UI broke")))
         (response (condition-case err
                       (agentq-test-mcp `((jsonrpc . "2.0") (id . 11) (method . "tools/call")
                                          (params . ((name . ,name) (arguments . ((path . "g.txt")))))))
                     (error (ert-fail (format "the approval function's error escaped: %S" err))))))
    (should (equal (gethash "id" response) 11))
    (should (eq (agentq-test-get response "result" "isError") t))
    (should (equal (agentq-test-get response "result" "content" 0 "text") "User denied tool execution"))
    (should (null agentq-test--danger-runs))))

(ert-deftest sly-agent-q-api/safe-and-cautious-never-ask ()
  "Safe and cautious tools run without calling the approval function."
  (let* ((safe (agentq-test-fresh-name "agentq_safe"))
         (cautious (agentq-test-fresh-name "agentq_cautious"))
         (asked '())
         (sly-agent-q-approval-function (lambda (name _args) (push name asked) :denied)))
    (sly-agent-q-define-tool safe "Safe." nil :handler (lambda (_) "safe ran"))
    (sly-agent-q-define-tool cautious "Cautious." nil :safety-level :cautious
                             :handler (lambda (_) "cautious ran"))
    (let ((results (sly-agent-q-execute-tool-calls
                    `((:id "1" :name ,safe :arguments nil)
                      (:id "2" :name ,cautious :arguments nil)
                      (:id "3" :name "evaluate_lisp" :arguments (:code "(+ 1 2)"))))))
      (mapc #'agentq-test-check-result results)
      (should (equal (mapcar (lambda (r) (plist-get r :content)) results)
                     '("safe ran" "cautious ran" "=> 3")))
      (should (equal (mapcar (lambda (r) (agentq-test-metadata r :safety_level)) results)
                     '("safe" "cautious" "cautious")))
      (should (cl-every (lambda (r) (eq (agentq-test-metadata r :approved) t)) results)))
    (should (null asked))))

(ert-deftest sly-agent-q-api/approval-applies-to-mcp-calls ()
  "tools/call of a dangerous tool goes through the same approval."
  (let ((name (agentq-test--define-danger))
        (request nil))
    (setq request (lambda (id)
                    `((jsonrpc . "2.0") (id . ,id) (method . "tools/call")
                      (params . ((name . ,name) (arguments . ((path . "m.txt"))))))))
    (let* ((sly-agent-q-approval-function nil)
           (response (agentq-test-mcp (funcall request 1))))
      (should (eq (agentq-test-get response "result" "isError") t))
      (should (equal (agentq-test-get response "result" "content" 0 "text")
                     "User denied tool execution")))
    (should (null agentq-test--danger-runs))
    (let* ((sly-agent-q-approval-function (lambda (_n _a) :approved))
           (response (agentq-test-mcp (funcall request 2))))
      (should (eq (agentq-test-get response "result" "isError") :false))
      (should (equal (agentq-test-get response "result" "content" 0 "text") "wrote m.txt")))
    (should (equal agentq-test--danger-runs '("m.txt")))))

;;;; sly-agent-q-tool-execution-functions

(defun agentq-test--recording-hook (log)
  "A hook function pushing (PHASE NAME ARGS-ALIST RESULT) onto the symbol LOG."
  (lambda (phase name args result)
    (set log (cons (list phase name
                         (and (hash-table-p args)
                              (sort (cl-loop for k being the hash-keys of args using (hash-values v)
                                             collect (cons k v))
                                    (lambda (a b) (string< (car a) (car b)))))
                         result)
                   (symbol-value log)))))

(defvar agentq-test--hook-log nil)

(ert-deftest sly-agent-q-api/hooks-before-and-after-on-success ()
  "A successful call runs :before (RESULT nil) then :after (RESULT the result plist)."
  (setq agentq-test--hook-log nil)
  (let* ((sly-agent-q-tool-execution-functions
          (list (agentq-test--recording-hook 'agentq-test--hook-log)))
         (result (agentq-test-call "evaluate_lisp" '(:code "(+ 1 2)") "h1"))
         (log (reverse agentq-test--hook-log)))
    (should (= (length log) 2))
    (pcase-let ((`(,phase ,name ,args ,res) (nth 0 log)))
      (should (eq phase :before))
      (should (equal name "evaluate_lisp"))
      (should (equal args '(("code" . "(+ 1 2)"))))
      (should (null res)))
    (pcase-let ((`(,phase ,name ,args ,res) (nth 1 log)))
      (should (eq phase :after))
      (should (equal name "evaluate_lisp"))
      (should (equal args '(("code" . "(+ 1 2)"))))
      (agentq-test-check-result res)
      (should (equal (plist-get res :id) "h1"))
      (should (equal (plist-get res :content) "=> 3"))
      (should (equal (plist-get res :content) (plist-get result :content))))))

(ert-deftest sly-agent-q-api/hooks-error-phase-on-failure ()
  "A failing call runs :before then :error; an unknown tool and a denial run :error only."
  (let ((danger (agentq-test--define-danger))
        (sly-agent-q-approval-function nil))
    (setq agentq-test--hook-log nil)
    (let ((sly-agent-q-tool-execution-functions
           (list (agentq-test--recording-hook 'agentq-test--hook-log))))
      (agentq-test-call "evaluate_lisp" '(:code "(error \"hooked\")"))
      (let ((log (reverse agentq-test--hook-log)))
        (should (equal (mapcar #'car log) '(:before :error)))
        (should (equal (nth 1 (nth 1 log)) "evaluate_lisp"))
        (let ((res (nth 3 (nth 1 log))))
          (should (eq (plist-get res :success) nil))
          (should (string-prefix-p "[ERROR] SIMPLE-ERROR\nhooked" (plist-get res :error)))))
      (setq agentq-test--hook-log nil)
      (agentq-test-call "no_such_tool_for_hooks" '(:a "b"))
      (should (equal (mapcar (lambda (e) (list (nth 0 e) (nth 1 e))) agentq-test--hook-log)
                     '((:error "no_such_tool_for_hooks"))))
      (should (equal (plist-get (nth 3 (car agentq-test--hook-log)) :error)
                     "Unknown tool: no_such_tool_for_hooks"))
      (setq agentq-test--hook-log nil)
      (agentq-test-call danger '(:path "h.txt"))
      (should (equal (mapcar #'car agentq-test--hook-log) '(:error)))
      (should (equal (plist-get (nth 3 (car agentq-test--hook-log)) :error)
                     "User denied tool execution")))))

(ert-deftest sly-agent-q-api/hooks-failing-hook-changes-nothing ()
  "A hook that signals neither changes the result nor stops the other hooks."
  (let ((plain (agentq-test-call "evaluate_lisp" '(:code "(values 3 1)"))))
    (setq agentq-test--hook-log nil)
    (let* ((sly-agent-q-tool-execution-functions
            (list (lambda (&rest _) (error "Broken hook"))
                  (agentq-test--recording-hook 'agentq-test--hook-log)
                  (lambda (&rest _) (signal 'wrong-type-argument '(hook)))))
           (hooked (agentq-test-call "evaluate_lisp" '(:code "(values 3 1)")))
           (failing (agentq-test-call "evaluate_lisp" '(:code "(error \"e\")"))))
      (should (eq (plist-get hooked :success) t))
      (should (equal (plist-get hooked :content) (plist-get plain :content)))
      (should (equal (plist-get hooked :content) "=> 3\n=> 1"))
      (should (eq (plist-get failing :success) nil))
      (should (equal (mapcar #'car (reverse agentq-test--hook-log))
                     '(:before :after :before :error))))))

;; module.cpp: "a failing hook changes nothing; a quit still quits".
(ert-deftest sly-agent-q-api/hooks-quit-still-quits ()
  "A quit (C-g) inside a hook is not swallowed like an error: the call quits."
  (let* ((sly-agent-q-tool-execution-functions
          (list (lambda (phase &rest _) (when (eq phase :before) (signal 'quit nil)))))
         (outcome (condition-case nil
                      (progn (sly-agent-q-execute-tool-calls
                              '((:id "hq" :name "evaluate_lisp" :arguments (:code "(+ 1 2)"))))
                             'returned)
                    (quit 'quitted))))
    (should (eq outcome 'quitted)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-api/hooks-see-elisp-tools ()
  "Hooks see Elisp-defined tools too, with their arguments."
  (let ((name (agentq-test-fresh-name "agentq_hooked")))
    (sly-agent-q-define-tool name "Hooked." '((:name "n" :type :integer :description "n"))
                             :handler (lambda (args) (* 2 (gethash "n" args))))
    (setq agentq-test--hook-log nil)
    (let ((sly-agent-q-tool-execution-functions
           (list (agentq-test--recording-hook 'agentq-test--hook-log))))
      (should (equal (plist-get (agentq-test-call name '(:n 21)) :content) "42")))
    (should (equal (mapcar (lambda (e) (list (nth 0 e) (nth 1 e) (nth 2 e)))
                           (reverse agentq-test--hook-log))
                   `((:before ,name (("n" . 21))) (:after ,name (("n" . 21))))))))

;;;; sly-agent-q-tools-schema

(defun agentq-test--schema-names (schema key-path)
  "Tool names in SCHEMA, each found at KEY-PATH."
  (mapcar (lambda (entry) (apply #'agentq-test-get entry key-path)) schema))

(ert-deftest sly-agent-q-api/schema-openai-default ()
  "The default format is OpenAI's: {type: function, function: {name, description, parameters}}."
  (let* ((schema (sly-agent-q-tools-schema))
         (entry (cl-find "evaluate_lisp" schema
                         :key (lambda (e) (agentq-test-get e "function" "name")) :test #'equal)))
    (should (vectorp schema))
    (should (equal (json-serialize schema) (json-serialize (sly-agent-q-tools-schema 'openai))))
    (should entry)
    (should (equal (agentq-test-get entry "type") "function"))
    (should (> (length (agentq-test-get entry "function" "description")) 20))
    (let ((parameters (agentq-test-get entry "function" "parameters")))
      (should (equal (gethash "type" parameters) "object"))
      (should (equal (gethash "required" parameters) ["code"]))
      (should (equal (agentq-test-get parameters "properties" "code" "type") "string"))
      (should (equal (agentq-test-get parameters "properties" "package" "type") "string"))
      (should (equal (agentq-test-get parameters "properties" "capture_time" "type") "boolean")))
    ;; Sorted by name, like list-tools.
    (let ((names (agentq-test--schema-names schema '("function" "name"))))
      (should (equal names (sort (copy-sequence names) #'string<))))))

(ert-deftest sly-agent-q-api/schema-anthropic-and-mcp ()
  "anthropic: {name, description, input_schema}; mcp: {name, title, description, inputSchema, outputSchema, annotations} (evaluate_lisp has an output schema)."
  (dolist (case '((anthropic . "input_schema") ("anthropic" . "input_schema")
                  (mcp . "inputSchema") ("mcp" . "inputSchema") (:mcp . "inputSchema")))
    (let* ((schema (sly-agent-q-tools-schema (car case)))
           (entry (cl-find "evaluate_lisp" schema :key (lambda (e) (gethash "name" e))
                           :test #'equal))
           (mcp (equal (cdr case) "inputSchema")))
      (should entry)
      (should (equal (sort (hash-table-keys entry) #'string<)
                     (sort (append (list "name" "description" (cdr case)) (and mcp (list "annotations" "title" "outputSchema")))
                           #'string<)))
      (when mcp                         ; evaluate_lisp runs code: it may destroy
        (should (eq (agentq-test-get entry "annotations" "readOnlyHint") :false))
        (should (eq (agentq-test-get entry "annotations" "destructiveHint") t)))
      (should (equal (agentq-test-get entry (cdr case) "type") "object"))
      (should (equal (agentq-test-get entry (cdr case) "required") ["code"])))))

(ert-deftest sly-agent-q-api/schema-json-serializable ()
  "json-serialize accepts every format, and the JSON parses back to the same tool list."
  (dolist (format '(nil openai anthropic mcp))
    (let* ((schema (sly-agent-q-tools-schema format))
           (text (json-serialize schema))
           (parsed (agentq-test-json text)))
      (should (stringp text))
      (should (vectorp parsed))
      (should (= (length parsed) (length schema)))
      (should (= (length parsed) (length (sly-agent-q-list-tools)))))))

(ert-deftest sly-agent-q-api/schema-unknown-format ()
  "An unknown format is a clear error."
  (let ((err (should-error (sly-agent-q-tools-schema 'gemini-ultra) :type 'sly-agent-q-error)))
    (should (string-match-p "gemini-ultra" (cadr err)))))

(ert-deftest sly-agent-q-api/schema-filters ()
  "MAX-SAFETY-LEVEL and CATEGORIES filter; both together are an AND; a tool needs one category."
  (let ((safe (agentq-test-fresh-name "agentq_f_safe"))
        (cautious (agentq-test-fresh-name "agentq_f_cautious"))
        (dangerous (agentq-test-fresh-name "agentq_f_dangerous")))
    (sly-agent-q-define-tool safe "S." nil :categories '(:alpha) :handler #'ignore)
    (sly-agent-q-define-tool cautious "C." nil :safety-level :cautious :categories '(:beta)
                             :handler #'ignore)
    (sly-agent-q-define-tool dangerous "D." nil :safety-level :dangerous
                             :categories '(:alpha :beta) :handler #'ignore)
    (cl-flet ((names (&rest args)
                (let ((found (agentq-test--schema-names
                              (apply #'sly-agent-q-tools-schema 'mcp args) '("name"))))
                  (cl-remove-if-not (lambda (n) (member n (list safe cautious dangerous "evaluate_lisp")))
                                    found))))
      (should (equal (names nil nil) (sort (list safe cautious dangerous "evaluate_lisp") #'string<)))
      (should (equal (names :safe nil) (list safe)))
      (should (equal (names :cautious nil) (sort (list safe cautious "evaluate_lisp") #'string<)))
      (should (equal (names :dangerous nil) (sort (list safe cautious dangerous "evaluate_lisp") #'string<)))
      (should (equal (names nil '(:alpha)) (sort (list safe dangerous) #'string<)))
      (should (equal (names nil '(:beta)) (sort (list cautious dangerous) #'string<)))
      (should (equal (names nil '(:alpha :beta)) (sort (list safe cautious dangerous) #'string<)))
      (should (equal (names nil '(:execution)) '("evaluate_lisp")))
      (should (equal (names nil '(:no-such-category)) nil))
      ;; AND of the two filters.
      (should (equal (names :cautious '(:alpha)) (list safe)))
      (should (equal (names :cautious '(:beta)) (list cautious)))
      (should (equal (names :safe '(:beta)) nil)))
    ;; An empty result still serializes as a JSON array.
    (should (equal (json-serialize (sly-agent-q-tools-schema 'mcp :safe '(:no-such-category))) "[]"))))

;;;; sly-agent-q-mcp-request

(defun agentq-test--rpc (method &optional id params)
  "A JSON-RPC 2.0 request (as data for json-serialize)."
  (append `((jsonrpc . "2.0"))
          (and id `((id . ,id)))
          `((method . ,method))
          (and params `((params . ,params)))))

(ert-deftest sly-agent-q-api/mcp-initialize ()
  "initialize answers with protocolVersion, capabilities.tools and serverInfo."
  (let ((response (agentq-test-mcp
                   (agentq-test--rpc "initialize" 1
                                     '((protocolVersion . "2024-11-05")
                                       (capabilities . #s(hash-table test equal data ()))
                                       (clientInfo . ((name . "ert") (version . "1"))))))))
    (should (equal (gethash "jsonrpc" response) "2.0"))
    (should (equal (gethash "id" response) 1))
    (should (equal (agentq-test-get response "result" "protocolVersion") "2024-11-05"))
    (should (hash-table-p (agentq-test-get response "result" "capabilities" "tools")))
    (should (equal (agentq-test-get response "result" "serverInfo" "name") "sly-agent-q"))
    (should (stringp (agentq-test-get response "result" "serverInfo" "version")))))

(ert-deftest sly-agent-q-api/mcp-ping ()
  "ping answers an empty result with the same id (string ids too)."
  (let ((response (agentq-test-mcp (agentq-test--rpc "ping" "p-1"))))
    (should (equal (gethash "id" response) "p-1"))
    (should (equal (gethash "jsonrpc" response) "2.0"))
    (should (hash-table-p (gethash "result" response)))
    (should (= (hash-table-count (gethash "result" response)) 0))
    (should-not (gethash "error" response))))

(ert-deftest sly-agent-q-api/mcp-tools-list ()
  "tools/list lists every registered tool with name, description and inputSchema."
  (let* ((response (agentq-test-mcp (agentq-test--rpc "tools/list" 2)))
         (tools (agentq-test-get response "result" "tools")))
    (should (vectorp tools))
    (should (equal (mapcar (lambda (tool) (gethash "name" tool)) tools) (sly-agent-q-list-tools)))
    (let ((evaluate (cl-find "evaluate_lisp" tools :key (lambda (e) (gethash "name" e)) :test #'equal)))
      (should (stringp (gethash "description" evaluate)))
      (should (equal (agentq-test-get evaluate "inputSchema" "required") ["code"])))))

(ert-deftest sly-agent-q-api/mcp-tools-call ()
  "tools/call runs the tool: content [{type: text, text}], isError false; or true on failure."
  (let ((response (agentq-test-mcp
                   (agentq-test--rpc "tools/call" 3 '((name . "evaluate-lisp")
                                                      (arguments . ((code . "(+ 1 2 3)"))))))))
    (should (equal (gethash "id" response) 3))
    (should (= (length (agentq-test-get response "result" "content")) 1))
    (should (equal (sort (hash-table-keys (agentq-test-get response "result" "content" 0)) #'string<)
                   '("text" "type")))
    (should (equal (agentq-test-get response "result" "content" 0 "type") "text"))
    (should (equal (agentq-test-get response "result" "content" 0 "text") "=> 6"))
    (should (eq (agentq-test-get response "result" "isError") :false)))
  (let ((response (agentq-test-mcp
                   (agentq-test--rpc "tools/call" 4 '((name . "evaluate_lisp")
                                                      (arguments . ((code . "(values 3 1)"))))))))
    (should (equal (agentq-test-get response "result" "content" 0 "text") "=> 3\n=> 1")))
  (let* ((response (agentq-test-mcp
                    (agentq-test--rpc "tools/call" 6 '((name . "evaluate_lisp")
                                                       (arguments . ((code . "(nonexistent-function-xyz)")))))))
         (text (agentq-test-get response "result" "content" 0 "text")))
    (should (eq (agentq-test-get response "result" "isError") t))
    (should (string-prefix-p "[ERROR] UNDEFINED-FUNCTION\n" text))
    (should (string-match-p "NONEXISTENT-FUNCTION-XYZ" text))
    (should (string-match-p "\n\n\\[Backtrace\\]\n" text))))

(ert-deftest sly-agent-q-api/mcp-unknown-tool ()
  "tools/call of an unknown tool is a -32602 protocol error."
  (let ((response (agentq-test-mcp
                   (agentq-test--rpc "tools/call" 7 '((name . "invalid-tool-name")
                                                      (arguments . ((x . 1))))))))
    (should (equal (gethash "id" response) 7))
    (should-not (gethash "result" response))
    (should (equal (agentq-test-get response "error" "code") -32602))
    (should (equal (agentq-test-get response "error" "message") "Unknown tool: invalid-tool-name"))))

(ert-deftest sly-agent-q-api/mcp-invalid-arguments ()
  "tools/call with arguments missing a required one, or one it does not take,
is the tool's error (isError), naming it: the model sees why (MCP 2025-11-25)."
  (let ((response (agentq-test-mcp
                   (agentq-test--rpc "tools/call" 8 '((name . "evaluate_lisp")
                                                      (arguments . ((package . "CL-USER"))))))))
    (should (eq (agentq-test-get response "result" "isError") t))
    (should (equal (agentq-test-get response "result" "content" 0 "text") "Missing required argument: code")))
  (let ((response (agentq-test-mcp
                   (agentq-test--rpc "tools/call" 9 '((name . "get_last_error") (arguments . ((bogus . 1))))))))
    (should (eq (agentq-test-get response "result" "isError") t))
    (should (equal (agentq-test-get response "result" "content" 0 "text")
                   "Unknown argument 'bogus' for get_last_error (it takes no arguments)"))))

(ert-deftest sly-agent-q-api/mcp-parse-error ()
  "Unparseable JSON is -32700 with id null."
  (dolist (text '("{bad" "" "{\"jsonrpc\": \"2.0\", " "[1, 2"))
    (let ((response (agentq-test-mcp text)))
      (should (equal (agentq-test-get response "error" "code") -32700))
      (should (eq (gethash "id" response) :null))
      (should (equal (gethash "jsonrpc" response) "2.0")))))

(ert-deftest sly-agent-q-api/mcp-invalid-request ()
  "Messages that are JSON but not requests are -32600."
  (dolist (text '("{\"id\": 1, \"method\": \"ping\"}"
                  "{\"jsonrpc\": \"1.0\", \"id\": 1, \"method\": \"ping\"}"
                  "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": 42}"
                  "{\"jsonrpc\": \"2.0\", \"id\": {\"a\": 1}, \"method\": \"ping\"}"
                  "42"
                  "[]"))
    (let ((response (agentq-test-mcp text)))
      (should (equal (agentq-test-get response "error" "code") -32600)))))

(ert-deftest sly-agent-q-api/mcp-method-not-found ()
  "An unknown method is -32601."
  (let ((response (agentq-test-mcp (agentq-test--rpc "resources/frobnicate" 9))))
    (should (equal (gethash "id" response) 9))
    (should (equal (agentq-test-get response "error" "code") -32601))
    (should (string-match-p "resources/frobnicate" (agentq-test-get response "error" "message")))))

(ert-deftest sly-agent-q-api/mcp-notification-has-no-response ()
  "Notifications (no id) get no response: nil."
  (should (null (sly-agent-q-mcp-request
                 "{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}")))
  (should (null (sly-agent-q-mcp-request
                 "{\"jsonrpc\": \"2.0\", \"method\": \"notifications/cancelled\", \"params\": {\"requestId\": 3}}")))
  (should (null (sly-agent-q-mcp-request
                 "[{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}]"))))

(ert-deftest sly-agent-q-api/mcp-batch ()
  "A batch gets an array of the responses to its requests, none for notifications."
  (let* ((batch (vector (agentq-test--rpc "ping" 1)
                        (agentq-test--rpc "notifications/initialized")
                        (agentq-test--rpc "tools/call" 2 '((name . "evaluate_lisp")
                                                           (arguments . ((code . "(* 6 7)")))))
                        (agentq-test--rpc "no/such/method" 3)))
         (response (agentq-test-mcp batch)))
    (should (vectorp response))
    (should (= (length response) 3))
    (let ((by-id (mapcar (lambda (r) (cons (gethash "id" r) r)) response)))
      (should (hash-table-p (agentq-test-get (cdr (assoc 1 by-id)) "result")))
      (should (equal (agentq-test-get (cdr (assoc 2 by-id)) "result" "content" 0 "text") "=> 42"))
      (should (equal (agentq-test-get (cdr (assoc 3 by-id)) "error" "code") -32601)))))

(ert-deftest sly-agent-q-api/mcp-every-response-is-json ()
  "Every response parses with json-parse-string, whatever came in."
  (dolist (text (list "{}" "null" "\"x\"" "[{}]" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}"
                      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[1]}"
                      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"evaluate_lisp\",\"arguments\":\"(+ 1 2)\"}}"
                      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"evaluate_lisp\",\"arguments\":{\"code\":\"(format t \\\"\\u00e9\\u2192\\\")\"}}}"
                      (concat (make-string 300 ?\[) (make-string 300 ?\]))
                      "\u00ff\u00fe"))
    (let ((response (sly-agent-q-mcp-request text)))
      (should (stringp response))
      (should (agentq-test-json response)))))

;;;; One module call per batch: what the Elisp used to do, the module does

(ert-deftest sly-agent-q-api/options-as-each-call-has-them ()
  "Each call runs with the options' values where it is made.
The module compares them with what it last gave the runtime: a
buffer-local value holds in its buffer only, `setq' counts at once, and a
value of the wrong type is a clear error that the next good value mends."
  (let ((code "(make-string 100 :initial-element #\\x)")
        (local (generate-new-buffer " agentq-options"))
        (global-limit sly-agent-q-output-limit))
    (cl-flet ((cut-p () (string-match-p "truncated" (plist-get (agentq-test-call "evaluate_lisp" (list :code code)) :content))))
      (unwind-protect
          (progn
            (with-current-buffer local (setq-local sly-agent-q-output-limit 10))
            (should-not (cut-p))
            (with-current-buffer local (should (cut-p)))
            (should-not (cut-p))
            (with-current-buffer local (should (cut-p)))
            ;; setq, no customize: the next call has it.
            (setq sly-agent-q-output-limit 20)
            (should (cut-p))
            (setq sly-agent-q-output-limit global-limit)
            (should-not (cut-p))
            ;; An equal float is the same value (nothing to give again).
            (let ((sly-agent-q-eval-timeout (float sly-agent-q-eval-timeout)))
              (should (equal (plist-get (agentq-test-call "evaluate_lisp" '(:code "(+ 1 2)")) :content) "=> 3")))
            (let ((sly-agent-q-output-limit "lots"))
              (let ((err (should-error (agentq-test-call "evaluate_lisp" '(:code "1")) :type 'sly-agent-q-error)))
                (should (string-match-p "output-limit must be a number" (cadr err)))))
            (should (equal (plist-get (agentq-test-call "evaluate_lisp" '(:code "(+ 1 2)")) :content) "=> 3")))
        (kill-buffer local)
        (setq sly-agent-q-output-limit global-limit)))))

(ert-deftest sly-agent-q-api/origin-as-text ()
  "The origin is compared as text: a copy of \"user\" is the person's,
a copy of `sly-agent-q-ui-origin' the front end's (its look-ups of names
that exist nowhere are counted apart), and any other text an agent's."
  (let ((missing '(:symbol "agentq-no-such-symbol-anywhere" :package "CL-USER"))
        (count (lambda () (gethash "describe_symbol" sly-agent-q--not-found-lookups 0))))
    (let ((before (funcall count)))
      (let ((sly-agent-q-call-origin (copy-sequence sly-agent-q-ui-origin)))
        (agentq-test-call "describe_symbol" missing))
      (should (= (funcall count) (1+ before)))
      (let ((sly-agent-q-call-origin "chat"))
        (agentq-test-call "describe_symbol" missing))
      (should (= (funcall count) (1+ before))))
    ;; The person's code runs unread; an agent's world-touching code asks.
    (let* ((asked nil)
           (sly-agent-q-approval-function (lambda (&rest _) (setq asked t) '(:denied "no")))
           (sly-agent-q-ask-before-agent-code t)
           (code "(probe-file \"/\")"))
      (let ((sly-agent-q-call-origin (copy-sequence "user")))
        (should (plist-get (agentq-test-call "evaluate_lisp" (list :code code)) :success)))
      (should-not asked)
      (let ((sly-agent-q-call-origin (string-to-multibyte "user")))
        (agentq-test-call "evaluate_lisp" (list :code code)))
      (should-not asked)
      (let ((sly-agent-q-call-origin 'user))  ; a symbol is not the text "user"
        (agentq-test-call "evaluate_lisp" (list :code "(delete-file \"/nonexistent/agentq\")")))
      (should asked))))

;;;; sly-agent-q-tool-stats

(ert-deftest sly-agent-q-api/tool-stats-count-calls ()
  "Counters grow with calls and failures, per tool."
  (let* ((name (agentq-test-fresh-name "agentq_counted"))
         (row (lambda (tool) (cdr (assoc tool (sly-agent-q-tool-stats)))))
         (before (funcall row "evaluate_lisp")))
    (sly-agent-q-define-tool name "Counted." nil :handler (lambda (_) "ok"))
    (should (null (funcall row name)))
    (agentq-test-eval "(+ 1 2)")
    (agentq-test-eval "(error \"counted\")")
    (agentq-test-call name nil)
    (let ((after (funcall row "evaluate_lisp")))
      (should (= (plist-get after :calls) (+ 2 (or (plist-get before :calls) 0))))
      (should (= (plist-get after :failures) (+ 1 (or (plist-get before :failures) 0))))
      (should (>= (plist-get after :total-ms) (or (plist-get before :total-ms) 0))))
    (should (equal (funcall row name) (list :calls 1 :failures 0
                                            :total-ms (plist-get (funcall row name) :total-ms))))
    (should (numberp (plist-get (funcall row name) :total-ms)))))

(ert-deftest sly-agent-q-api/buffer-package-of-lisp-files ()
  "The package of a Lisp buffer is the one its last `in-package' before
point names, as in SLY; other buffers have none."
  (pcase-dolist (`(,text . ,expected)
                 '(("(in-package :demo)\n(defun f ())" . "demo")
                   ("(in-package #:demo)\nx" . "demo")
                   ("(cl:in-package \"Demo\")\nx" . "Demo")
                   ("(IN-PACKAGE 'demo)\nx" . "demo")
                   ("  (in-package |Bar|)\nx" . "Bar")
                   ("(in-package :a)\n(in-package :b)\nx" . "b")
                   ("(defun x ())" . nil)
                   ("(in-package-foo :no)\nx" . nil)
                   (";(in-package :no)\nx" . nil)))
    (with-temp-buffer
      (lisp-mode)
      (insert text)
      (should (equal (list text (sly-agent-q--buffer-package)) (list text expected)))))
  (with-temp-buffer
    (insert "(in-package :a)\n(defun f ())\n(in-package :b)\n")
    (lisp-mode)
    (should (equal (sly-agent-q--buffer-package 20) "a")))
  (with-temp-buffer
    (emacs-lisp-mode)
    (insert "(in-package :demo)\n")
    (should-not (sly-agent-q--buffer-package))))

(ert-deftest sly-agent-q-api/circular-hook-list-is-an-error ()
  "A circular or dotted `sly-agent-q-tool-execution-functions' is a clear
error, not a walk without end."
  (dolist (hooks (list (let ((l (list #'ignore))) (setcdr l l) l)
                       (cons #'ignore #'ignore)))
    (let ((sly-agent-q-tool-execution-functions hooks))
      (should (equal (should-error (agentq-test-eval "(+ 1 2)") :type 'sly-agent-q-error)
                     '(sly-agent-q-error "sly-agent-q-tool-execution-functions is a circular or dotted list")))
      (should-error (sly-agent-q-mcp-request "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}")
                    :type 'sly-agent-q-error)))
  (should (equal (agentq-test-eval-ok "(+ 1 2)") "=> 3")))

(provide 'sly-agent-q-api-test)

;;; sly-agent-q-api-test.el ends here
