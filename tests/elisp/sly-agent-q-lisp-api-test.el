;;; sly-agent-q-lisp-api-test.el --- The AGENT-Q package's tool API, from Lisp -*- lexical-binding: t; -*-

;;; Commentary:

;; The contracts' Lisp API (tool-protocol, tool-registry, tool-execution)
;; inside the embedded ECL, driven through evaluate_lisp as a user would:
;; the contracts' own example definitions pasted as written, the registry
;; functions, EXECUTE-TOOL-CALLS and its results, *APPROVAL-HANDLER*,
;; *TOOL-EXECUTION-HOOKS*, and tools crossing between Lisp, Elisp and MCP.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defconst agentq-lisp-api--describe-symbol
  "(let ((tool (define-tool
              \"describe_symbol\"
              \"Get detailed information about a Lisp symbol including type, value, documentation.\"
              '((:name \"symbol\" :type :string :description \"Symbol name to describe\")
                (:name \"package\" :type :string :description \"Package name (optional)\"))
              :required '(\"symbol\")
              :safety-level :safe
              :categories '(:introspection)
              :handler (lambda (args)
                         (let* ((sym-name (gethash \"symbol\" args))
                                (pkg-name (gethash \"package\" args))
                                (pkg (if pkg-name (find-package pkg-name) *package*))
                                (sym (and pkg (find-symbol (string-upcase sym-name) pkg))))
                           (if sym
                               (with-output-to-string (s)
                                 (describe sym s))
                               (format nil \"Symbol ~A not found\" sym-name)))))))
  (register-tool *agent-q-registry* tool))"
  "The contract tool-protocol's safe example, as written there.")

(defconst agentq-lisp-api--eval-form
  "(let ((tool (define-tool
              \"eval_form\"
              \"Evaluate a Lisp form in the running image. Returns result or error.\"
              '((:name \"form\" :type :string :description \"Lisp form to evaluate\")
                (:name \"package\" :type :string :description \"Package context (optional)\"))
              :required '(\"form\")
              :safety-level :cautious  ; Modifies state, logged
              :categories '(:execution)
              :handler (lambda (args)
                         (let* ((form-string (gethash \"form\" args))
                                (pkg (find-package (or (gethash \"package\" args) *package*))))
                           (handler-case
                               (let ((*package* pkg))
                                 (format nil \"~S\" (eval (read-from-string form-string))))
                             (error (e)
                               (format nil \"Error: ~A\" e))))))))
  (register-tool *agent-q-registry* tool))"
  "The contract tool-protocol's cautious example, as written there.")

(defconst agentq-lisp-api--write-file
  "(let ((tool (define-tool
              \"write_file\"
              \"Write content to a file. DESTRUCTIVE - requires user approval.\"
              '((:name \"path\" :type :string :description \"File path to write\")
                (:name \"content\" :type :string :description \"Content to write\"))
              :required '(\"path\" \"content\")
              :safety-level :dangerous  ; Requires approval
              :categories '(:buffer :filesystem)
              :handler (lambda (args)
                         (let ((path (gethash \"path\" args))
                               (content (gethash \"content\" args)))
                           (with-open-file (stream path :direction :output
                                                  :if-exists :supersede)
                             (write-string content stream))
                           (format nil \"Wrote ~D bytes to ~A\"
                                  (length content) path))))))
  (register-tool *agent-q-registry* tool))"
  "The contract tool-protocol's dangerous example, as written there.")

(defun agentq-lisp-api--define-examples ()
  (dolist (code (list agentq-lisp-api--describe-symbol agentq-lisp-api--eval-form agentq-lisp-api--write-file))
    (should (string-match-p "\\`=> #<tool [a-z_]+ :[a-z]+>\\'" (agentq-test-eval-ok code)))))

(defmacro agentq-lisp-api--with-examples (&rest body)
  "Run BODY with the contracts' example tools registered in place of the
built-in ones of the same names, which are put back afterwards."
  (declare (indent 0))
  `(unwind-protect
       (progn (agentq-lisp-api--define-examples) ,@body)
     (agentq-test-eval-ok "(register-agent-q-tools)")))

(ert-deftest sly-agent-q-lisp-api/contract-examples-pasted-as-written ()
  (agentq-lisp-api--with-examples
  ;; From Elisp, as any tool.
  (let ((described (agentq-test-call "describe_symbol" '(:symbol "car" :package "COMMON-LISP"))))
    (should (plist-get described :success))
    (should (string-match-p "CAR" (plist-get described :content))))
  (should (equal (plist-get (agentq-test-call "describe_symbol" '(:symbol "no_such_symbol_x")) :content)
                 "Symbol no_such_symbol_x not found"))
  (should (equal (plist-get (agentq-test-call "eval_form" '(:form "(+ 1 2)")) :content) "3"))
  (should (string-match-p "\\`Error: .*CAR.*\n  1\n"
                          (plist-get (agentq-test-call "eval_form" '(:form "(car 1)")) :content)))
  ;; The dangerous one writes a real file only when approved.
  (let* ((dir (make-temp-file "agentq-lisp-api" t))
         (path (expand-file-name "out.txt" dir)))
    (unwind-protect
        (let ((asked '()))
          (let ((sly-agent-q-approval-function (lambda (name args) (push (list name (gethash "path" args)) asked) :denied)))
            (should (equal (plist-get (agentq-test-call "write_file" (list :path path :content "no")) :content)
                           "User denied tool execution"))
            (should-not (file-exists-p path)))
          (let ((sly-agent-q-approval-function (lambda (name args) (push (list name (gethash "path" args)) asked) :approved)))
            (should (equal (plist-get (agentq-test-call "write_file" (list :path path :content "hello")) :content)
                           (format "Wrote 5 bytes to %s" path))))
          (should (equal (with-temp-buffer (insert-file-contents path) (buffer-string)) "hello"))
          (should (equal asked (list (list "write_file" path) (list "write_file" path)))))
      (delete-directory dir t)))
  ;; Listed to MCP clients with the contract's schema.
  (let* ((tools (agentq-test-get (agentq-test-mcp '(:jsonrpc "2.0" :id 1 :method "tools/list")) "result" "tools"))
         (described (seq-find (lambda (tool) (equal (gethash "name" tool) "describe_symbol")) tools)))
    (should described)
    (should (equal (agentq-test-get described "inputSchema" "required") ["symbol"])))))

(ert-deftest sly-agent-q-lisp-api/registry-functions ()
  (agentq-lisp-api--with-examples
  (should (equal (agentq-test-eval-ok "(get-tool \"describe_symbol\")") "=> #<tool describe_symbol :safe>"))
  (should (equal (agentq-test-eval-ok "(get-tool \"describe-symbol\")") "=> #<tool describe_symbol :safe>"))
  (should (equal (agentq-test-eval-ok "(get-tool \"nonexistent\")") "=> NIL"))
  ;; Every tool, whoever defined it, sorted; the same list Elisp sees.
  (let ((name (agentq-test-fresh-name "agentq_elisp_listed")))
    (sly-agent-q-define-tool name "Listed." nil :categories '(:introspection) :handler #'ignore)
    (should (equal (agentq-test-eval-ok "(equal (list-registered-tools) (sort (copy-list (list-registered-tools)) #'string<))")
                   "=> T"))
    (should (equal (agentq-test-eval-ok (format "(equal (list-registered-tools) '%s)"
                                                (agentq-lisp-api--lisp-list (sly-agent-q-list-tools))))
                   "=> T"))
    (should (equal (agentq-test-eval-ok (format "(tool-kind (get-tool %S))" name)) "=> :ELISP")))
  ;; Filters: safety level, categories, and both (AND).
  (should (equal (agentq-test-eval-ok "(notany (lambda (tool) (eq (tool-safety-level tool) :dangerous))
                                          (get-agent-q-tools :max-safety-level :cautious))")
                 "=> T"))
  (should (equal (agentq-test-eval-ok "(and (member \"write_file\" (mapcar #'tool-name (get-agent-q-tools :max-safety-level :dangerous)) :test #'string=) t)")
                 "=> T"))
  (should (equal (agentq-test-eval-ok "(every (lambda (tool) (member :introspection (tool-categories tool)))
                                          (get-agent-q-tools :categories '(:introspection)))")
                 "=> T"))
  (should (equal (agentq-test-eval-ok "(mapcar #'tool-name (get-agent-q-tools :max-safety-level :safe :categories '(:execution)))")
                 "=> (\"get_last_error\" \"get_repl_history\" \"list_definitions\")"))
  (should (equal (agentq-test-eval-ok "(mapcar #'tool-name (get-agent-q-tools :max-safety-level :cautious :categories '(:filesystem)))")
                 "=> NIL"))
  ;; Schemas, in the contract's shape.
  (should (equal (agentq-test-eval-ok "(let ((*print-pretty* nil)) (prin1-to-string (tool-to-schema (get-tool \"describe_symbol\"))))")
                 (concat "=> \"(:TYPE \\\"function\\\" :FUNCTION (:NAME \\\"describe_symbol\\\" :DESCRIPTION "
                         "\\\"Get detailed information about a Lisp symbol including type, value, documentation.\\\" "
                         ":PARAMETERS (:TYPE \\\"object\\\" :PROPERTIES (:SYMBOL (:TYPE \\\"string\\\" :DESCRIPTION "
                         "\\\"Symbol name to describe\\\") :PACKAGE (:TYPE \\\"string\\\" :DESCRIPTION "
                         "\\\"Package name (optional)\\\")) :REQUIRED (\\\"symbol\\\"))))\"")))
  (should (equal (agentq-test-eval-ok "(let ((tools (get-agent-q-tools :max-safety-level :safe)))
                                         (equal (tools-to-schema tools) (mapcar #'tool-to-schema tools)))")
                 "=> T"))
  ;; Another hash table only keeps the tool: nothing is registered.
  (should (equal (agentq-test-eval-ok "(let ((mine (make-hash-table :test 'equal)))
                                         (register-tool mine (define-tool \"agentq_private_tool\" \"x\" nil
                                                                          :handler (lambda (a) (declare (ignore a)) 1)))
                                         (list (hash-table-count mine) (get-tool \"agentq_private_tool\")))")
                 "=> (1 NIL)"))
  (should-not (member "agentq_private_tool" (sly-agent-q-list-tools)))
  ;; A handler can be called by hand, as the contract's testing section does.
  (should (equal (agentq-test-eval-ok "(let ((args (make-hash-table :test 'equal)))
                                         (setf (gethash \"form\" args) \"(* 6 7)\")
                                         (funcall (tool-handler (get-tool \"eval_form\")) args))")
                 "=> \"42\""))
  (should (equal (agentq-test-eval-ok "(let ((args (make-hash-table :test 'equal)))
                                         (setf (gethash \"code\" args) \"(* 6 7)\")
                                         (funcall (tool-handler (get-tool \"evaluate_lisp\")) args))")
                 "=> \"=> 42\""))
  ;; register-agent-q-tools: idempotent, the count.
  (should (equal (agentq-test-eval-ok "(list (register-agent-q-tools) (register-agent-q-tools))")
                 (let ((count (length (sly-agent-q-list-tools)))) (format "=> (%d %d)" count count))))))

(defun agentq-lisp-api--lisp-list (strings)
  "STRINGS as Lisp prints a list of them (short lists only)."
  (concat "(" (mapconcat #'prin1-to-string strings " ") ")"))

(ert-deftest sly-agent-q-lisp-api/execute-tool-calls-results ()
  (agentq-test-eval-ok "(register-tool *agent-q-registry*
                          (define-tool \"agentq_api_kinds\" \"Returns what it is asked to.\"
                            '((:name \"what\" :type :string) (:name \"n\" :type :integer))
                            :required '(\"what\")
                            :handler (lambda (args)
                                       (let ((what (gethash \"what\" args)))
                                         (cond ((string= what \"list\") (list 1 2 (gethash \"n\" args)))
                                               ((string= what \"nil\") nil)
                                               ((string= what \"values\") (values nil \"Nothing found\"))
                                               ((string= what \"signal\") (error \"Symbol FOO not found in package BAR\"))
                                               ((string= what \"print\") (format t \"side note~%\") \"printed\")
                                               ;; A result and a second value that is no message.
                                               ((string= what \"found\") (gethash \"what\" args))
                                               ((string= what \"status\") (find-symbol \"CAR\" \"CL\"))
                                               (t what))))))")
  (let ((content (agentq-test-eval-ok
                  "(let ((*print-pretty* nil)
                         (results (execute-tool-calls
                                   '((:id \"c1\" :name \"agentq_api_kinds\" :arguments (:what \"list\" :n 3))
                                     (:id \"c2\" :name \"agentq_api_kinds\" :arguments (:what \"nil\"))
                                     (:id \"c3\" :name \"agentq_api_kinds\" :arguments (:what \"values\"))
                                     (:id \"c4\" :name \"agentq_api_kinds\" :arguments (:what \"signal\"))
                                     (:id \"c5\" :name \"nonexistent\" :arguments (:x 1))
                                     (:id \"c6\" :name \"agentq_api_kinds\" :arguments (:n \"three\"))
                                     (:id \"c7\" :name \"agentq-api-kinds\" :arguments \"{\\\"what\\\": \\\"json\\\"}\")
                                     (:id \"c8\" :name \"agentq_api_kinds\" :arguments (:what \"print\"))
                                     (:id \"c9\" :name \"agentq_api_kinds\" :arguments (:what \"found\"))
                                     (:id \"c10\" :name \"agentq_api_kinds\" :arguments (:what \"status\"))))))
                    (format t \"~{~W~%~}\"
                            (mapcar (lambda (r)
                                      (list (tool-result-id r) (tool-result-success r) (tool-result-content r)
                                            (tool-result-error r) (getf (tool-result-metadata r) :safety-level)
                                            (getf (tool-result-metadata r) :approved)
                                            (realp (getf (tool-result-metadata r) :execution-time-ms))))
                                    results))
                    (values))"
                  :package "CL-USER")))
    (should (equal content
                   (concat "[stdout]\n"
                           "(\"c1\" T \"(1 2 3)\" NIL :SAFE T T)\n"
                           "(\"c2\" T \"nil\" NIL :SAFE T T)\n"
                           "(\"c3\" NIL \"Nothing found\" \"Nothing found\" :SAFE T T)\n"
                           "(\"c4\" NIL \"Tool error: Symbol FOO not found in package BAR\" \"Tool error: Symbol FOO not found in package BAR\" :SAFE T T)\n"
                           "(\"c5\" NIL \"Unknown tool: nonexistent\" \"Unknown tool: nonexistent\" NIL NIL T)\n"
                           "(\"c6\" NIL \"Missing required argument: what\" \"Missing required argument: what\" :SAFE T T)\n"
                           "(\"c7\" T \"json\" NIL :SAFE T T)\n"
                           "(\"c8\" T \"[stdout]\nside note\n\nprinted\" NIL :SAFE T T)\n"
                           "(\"c9\" T \"found\" NIL :SAFE T T)\n"
                           "(\"c10\" T \"CAR\" NIL :SAFE T T)\n"
                           "\n; No values"))))
  ;; The calling evaluation's own output is kept apart from the tools'.
  (should (equal (agentq-test-eval-ok "(princ \"before \")
                                       (execute-tool-calls '((:id \"p\" :name \"evaluate_lisp\" :arguments (:code \"(princ 'inner) 7\"))))
                                       (princ \"after\")
                                       (tool-result-content (first (execute-tool-calls '((:id \"p\" :name \"evaluate_lisp\" :arguments (:code \"(princ 'inner) 7\"))))))")
                 "[stdout]\nbefore after\n\n=> \"[stdout]\nINNER\n\n=> 7\""))
  ;; Bad calls are results, not errors; a bad list is a clear error.
  (should (equal (agentq-test-eval-ok "(mapcar #'tool-result-content (execute-tool-calls '((:id \"b\" :arguments (:x 1)) 42)))")
                 "=> (\"Invalid tool call: the tool call has no :name\"\n    \"Invalid tool call: a tool call must be a plist (:id ID :name NAME :arguments ARGUMENTS)\")"))
  (should (string-match-p "EXECUTE-TOOL-CALLS needs a list of tool calls"
                          (agentq-test-eval-fails "(execute-tool-calls 42)")))
  ;; format-tool-result, as the contract has it.
  (should (equal (agentq-test-eval-ok "(list (format-tool-result \"s\") (format-tool-result nil) (format-tool-result '(1 2 3)) (format-tool-result 42) (format-tool-result 'car))")
                 "=> (\"s\" \"nil\" \"(1 2 3)\" \"42\" \"CAR\")"))
  ;; Calls from Lisp count in the executor's counters.
  (let ((before (plist-get (cdr (assoc "agentq_api_kinds" (sly-agent-q-tool-stats))) :calls)))
    (agentq-test-eval-ok "(execute-tool-calls '((:id \"s\" :name \"agentq_api_kinds\" :arguments (:what \"x\"))))")
    (should (= (plist-get (cdr (assoc "agentq_api_kinds" (sly-agent-q-tool-stats))) :calls) (1+ before)))))

(ert-deftest sly-agent-q-lisp-api/elisp-tools-run-from-lisp ()
  (let ((name (agentq-test-fresh-name "agentq_elisp_from_lisp"))
        (seen nil))
    (sly-agent-q-define-tool name "Upcase in Emacs." '((:name "text" :type :string))
                             :required '("text")
                             :handler (lambda (args)
                                        (setq seen (list (gethash "text" args) (buffer-name)))
                                        (if (equal (gethash "text" args) "fail")
                                            (error "No such buffer")
                                          (upcase (gethash "text" args)))))
    (should (equal (agentq-test-eval-ok
                    (format "(mapcar (lambda (r) (list (tool-result-success r) (tool-result-content r)))
                                     (execute-tool-calls '((:id \"1\" :name %S :arguments (:text \"héllo\"))
                                                           (:id \"2\" :name %S :arguments (:text \"fail\"))
                                                           (:id \"3\" :name %S :arguments (:nope 1)))))"
                            name name name))
                   "=> ((T \"HÉLLO\") (NIL \"Tool error: No such buffer\")\n    (NIL \"Missing required argument: text\"))"))
    (should (equal (car seen) "fail"))
    ;; Its tool object's handler calls it too.
    (should (equal (agentq-test-eval-ok
                    (format "(let ((args (make-hash-table :test 'equal)))
                               (setf (gethash \"text\" args) \"direct\")
                               (funcall (tool-handler (get-tool %S)) args))" name))
                   "=> \"DIRECT\""))
    ;; With no Emacs waiting (an asynchronous call serves Lisp too), still a result.
    (let ((results 'pending))
      (sly-agent-q-execute-tool-calls-async
       (list (list :id "a" :name "evaluate_lisp"
                   :arguments (list :code (format "(tool-result-content (first (execute-tool-calls '((:id \"x\" :name %S :arguments (:text \"async\"))))))" name))))
       (lambda (r) (setq results r)))
      (let ((end (+ (float-time) 20)))
        (while (and (eq results 'pending) (< (float-time) end))
          (accept-process-output sly-agent-q--async-process 0.05)))
      (should (equal (plist-get (car results) :content) "=> \"ASYNC\"")))))

(ert-deftest sly-agent-q-lisp-api/approval-handler-decides-for-lisp ()
  (agentq-test-eval-ok "(register-tool *agent-q-registry*
                          (define-tool \"agentq_api_danger\" \"Dangerous echo.\"
                            '((:name \"path\" :type :string))
                            :required '(\"path\") :safety-level :dangerous
                            :handler (lambda (args) (format nil \"ran with ~A\" (gethash \"path\" args)))))")
  (let ((emacs-asked 0)
        (call "(mapcar (lambda (r) (list (tool-result-content r) (getf (tool-result-metadata r) :approved)))
                       (execute-tool-calls '((:id \"d\" :name \"agentq_api_danger\" :arguments (:path \"/tmp/x\")))))"))
    (let ((sly-agent-q-approval-function (lambda (_name _args) (cl-incf emacs-asked) :approved)))
      ;; *approval-handler* decides when set, with the tool object and the arguments.
      (should (equal (agentq-test-eval-ok
                      (format "(let ((*approval-handler* (lambda (tool args)
                                                           (if (and (typep tool 'tool) (equal (gethash \"path\" args) \"/tmp/x\"))
                                                               :approved :denied))))
                                 %s)" call))
                     "=> ((\"ran with /tmp/x\" T))"))
      (should (equal (agentq-test-eval-ok (format "(let ((*approval-handler* (lambda (tool args) (declare (ignore tool args)) :denied))) %s)" call))
                     "=> ((\"User denied tool execution\" NIL))"))
      (should (equal (agentq-test-eval-ok (format "(let ((*approval-handler* (lambda (tool args) (declare (ignore tool args)) (list :modified (list :path \"/safe\"))))) %s)" call))
                     "=> ((\"ran with /safe\" T))"))
      ;; Modified arguments are validated like the model's.
      (should (equal (agentq-test-eval-ok (format "(let ((*approval-handler* (lambda (tool args) (declare (ignore tool args)) (list :modified (list :other 1))))) %s)" call))
                     "=> ((\"Missing required argument: path\" T))"))
      ;; A handler that signals denies.
      (should (equal (agentq-test-eval-ok (format "(let ((*approval-handler* (lambda (tool args) (declare (ignore tool args)) (error \"oops\")))) %s)" call))
                     "=> ((\"User denied tool execution\" NIL))"))
      (should (= emacs-asked 0))
      ;; Unset: the Emacs approval function decides, with the name and a hash table.
      (should (equal (agentq-test-eval-ok call) "=> ((\"ran with /tmp/x\" T))"))
      (should (= emacs-asked 1)))
    (let ((sly-agent-q-approval-function (lambda (name args) (list :modified (list :path (concat name ":" (gethash "path" args)))))))
      (should (equal (agentq-test-eval-ok call) "=> ((\"ran with agentq_api_danger:/tmp/x\" T))")))
    ;; Neither: denied.
    (let ((sly-agent-q-approval-function nil))
      (should (equal (agentq-test-eval-ok call) "=> ((\"User denied tool execution\" NIL))")))
    ;; Calls made from Emacs ask Emacs, whatever Lisp's handler says.
    (agentq-test-eval-ok "(setf *approval-handler* (lambda (tool args) (declare (ignore tool args)) :approved))")
    (unwind-protect
        (let ((sly-agent-q-approval-function (lambda (_name _args) :denied)))
          (should (equal (plist-get (agentq-test-call "agentq_api_danger" '(:path "p")) :content)
                         "User denied tool execution")))
      (agentq-test-eval-ok "(setf *approval-handler* nil)"))))

(ert-deftest sly-agent-q-lisp-api/hooks-from-both-languages ()
  (agentq-test-eval-ok "(register-tool *agent-q-registry*
                          (define-tool \"agentq_api_hooked\" \"Echo.\" '((:name \"x\" :type :string))
                            :handler (lambda (args) (or (gethash \"x\" args) (error \"no x\")))))")
  (unwind-protect
      (progn
        ;; Lisp hooks: a failing one changes nothing; they see calls made from Emacs.
        (agentq-test-eval-ok "(defparameter cl-user::*agentq-hook-log* nil)
                              (setf *tool-execution-hooks*
                                    (list (lambda (phase tool args result) (declare (ignore phase tool args result)) (error \"hook fails\"))
                                          (lambda (phase tool args result)
                                            (when (string= (if (stringp tool) tool (tool-name tool)) \"agentq_api_hooked\")
                                              (push (list phase (tool-name tool) (gethash \"x\" args)
                                                          (and result (tool-result-success result))
                                                          (and result (tool-result-content result)))
                                                    cl-user::*agentq-hook-log*)))))")
        (should (equal (plist-get (agentq-test-call "agentq_api_hooked" '(:x "from-emacs")) :content) "from-emacs"))
        (should (equal (plist-get (agentq-test-call "agentq_api_hooked" nil) :content) "Tool error: no x"))
        ;; And calls made from Lisp, in order.
        (agentq-test-eval-ok "(execute-tool-calls '((:id \"l\" :name \"agentq_api_hooked\" :arguments (:x \"from-lisp\"))))")
        (should (equal (agentq-test-eval-ok "(reverse cl-user::*agentq-hook-log*)")
                       (concat "=> ((:BEFORE \"agentq_api_hooked\" \"from-emacs\" NIL NIL)\n"
                               "    (:AFTER \"agentq_api_hooked\" \"from-emacs\" T \"from-emacs\")\n"
                               "    (:BEFORE \"agentq_api_hooked\" NIL NIL NIL)\n"
                               "    (:ERROR \"agentq_api_hooked\" NIL NIL \"Tool error: no x\")\n"
                               "    (:BEFORE \"agentq_api_hooked\" \"from-lisp\" NIL NIL)\n"
                               "    (:AFTER \"agentq_api_hooked\" \"from-lisp\" T \"from-lisp\"))")))
        ;; Over MCP too.
        (agentq-test-eval-ok "(setf cl-user::*agentq-hook-log* nil)")
        (agentq-test-mcp '(:jsonrpc "2.0" :id 2 :method "tools/call"
                                    :params (:name "agentq_api_hooked" :arguments (:x "mcp"))))
        (should (equal (agentq-test-eval-ok "(mapcar #'first (reverse cl-user::*agentq-hook-log*))")
                       "=> (:BEFORE :AFTER)")))
    (agentq-test-eval-ok "(setf *tool-execution-hooks* nil)"))
  ;; Emacs hooks see calls made from Lisp, with the usual arguments.
  (let* ((log '())
         (sly-agent-q-tool-execution-functions
          (list (lambda (&rest _) (error "Emacs hook fails"))
                (lambda (phase name args result)
                  (when (equal name "agentq_api_hooked")
                    (push (list phase (gethash "x" args) (plist-get result :success) (plist-get result :content)
                                (plist-get (plist-get result :metadata) :safety_level))
                          log))))))
    (agentq-test-eval-ok "(execute-tool-calls '((:id \"l\" :name \"agentq_api_hooked\" :arguments (:x \"lisp\"))
                                                 (:id \"m\" :name \"agentq_api_hooked\" :arguments nil)))")
    (should (equal (reverse log)
                   '((:before "lisp" nil nil nil) (:after "lisp" t "lisp" "safe")
                     (:before nil nil nil nil) (:error nil nil "Tool error: no x" "safe"))))))

(ert-deftest sly-agent-q-lisp-api/looping-handlers-are-stopped ()
  (agentq-test-eval-ok "(register-tool *agent-q-registry*
                          (define-tool \"agentq_api_loops\" \"Never returns.\" nil
                            :handler (lambda (args) (declare (ignore args)) (loop))))")
  (agentq-test-with-custom ((sly-agent-q-eval-timeout 1))
    ;; Called from Emacs: its own job, stopped by the timeout.
    (let ((result (agentq-test-call "agentq_api_loops" nil)))
      (should-not (plist-get result :success))
      (should (string-prefix-p "[ERROR] TIMEOUT" (plist-get result :content))))
    ;; Called from Lisp: the calling evaluation's timeout stops both.
    (should (string-prefix-p "[ERROR] TIMEOUT"
                             (agentq-test-eval-fails "(execute-tool-calls '((:id \"l\" :name \"agentq_api_loops\")))"))))
  ;; C-g (quit-flag set while Emacs waits, as C-g does) stops both too.
  (dolist (call '((:id "q" :name "agentq_api_loops")
                  (:id "q" :name "evaluate_lisp"
                       :arguments (:code "(execute-tool-calls '((:id \"l\" :name \"agentq_api_loops\")))"))))
    (let* ((start (float-time))
           (done nil)
           (outcome (condition-case nil
                        (let ((sly-agent-q-wait-functions
                               (list (lambda (seconds)
                                       (when (and (not done) (>= seconds 0.3))
                                         (setq done t quit-flag t))))))
                          (sly-agent-q-execute-tool-calls (list call)))
                      (quit 'quitted))))
      (should (eq outcome 'quitted))
      (should (< (- (float-time) start) 2))))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-lisp-api/reset-clears-history-and-last-error ()
  (agentq-test-eval-ok "(+ 40 2)")
  (should (equal (agentq-test-eval-ok "(list * (car +))") "=> (42 +)"))
  (agentq-test-eval-fails "(car 1)")
  (should (equal (agentq-test-eval-ok "(and (typep *last-error* 'type-error) t)") "=> T"))
  (should (equal (plist-get (agentq-test-call "reset_session" nil) :content) "Session reset. All definitions cleared."))
  (should (equal (agentq-test-eval-ok "(list *last-error* **)") "=> (NIL NIL)"))
  ;; The API is still at hand in CL-USER.
  (agentq-test-eval-ok "(unintern 'execute-tool-calls)")
  (agentq-test-call "reset_session" nil)
  (should (equal (agentq-test-eval-ok "(and (fboundp 'execute-tool-calls) (symbol-package 'execute-tool-calls))")
                 "=> #<\"AGENT-Q\" package>")))

;;; sly-agent-q-lisp-api-test.el ends here
