;;; sly-agent-q-tool-descriptions-test.el --- Every built-in tool describes itself -*- lexical-binding: t; -*-

;;; Commentary:

;; Walks MCP tools/list: the 18 Agent-Q tools and the 4 session tools are
;; there with the contracts' safety levels and categories; every tool and
;; every parameter has a description that says what it is; optional
;; parameters with a default say it; `required' names only declared
;; parameters.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defconst agentq-descriptions--built-in
  '(("describe_symbol" safe (introspection))
    ("apropos_search" safe (introspection))
    ("function_arglist" safe (introspection))
    ("who_calls" safe (introspection xref))
    ("who_references" safe (introspection xref))
    ("list_package_symbols" safe (introspection packages))
    ("class_slots" safe (introspection clos))
    ("class_hierarchy" safe (introspection clos))
    ("macroexpand_form" safe (introspection))
    ("eval_form" cautious (execution))
    ("compile_form" cautious (execution))
    ("get_last_error" safe (execution))
    ("get_repl_history" safe (execution))
    ("read_file" safe (buffer))
    ("read_buffer" cautious (buffer))
    ("search_in_buffer" safe (buffer))
    ("write_file" dangerous (buffer))
    ("propose_file_edit" dangerous (diff)))
  "The 18 Agent-Q tools of the contracts: name, safety level, categories.")

(defconst agentq-descriptions--session '("evaluate_lisp" "list_definitions" "reset_session" "load_system"))

(defconst agentq-descriptions--debugger '("inspect_object" "invoke_restart" "backtrace" "eval_in_frame" "check_syntax" "describe_system" "list_systems" "profile_form" "run_tests")
  "The tools of the shared debugger and the workbench (beyond the contracts' 18).")

(defconst agentq-descriptions--project '("list_directory" "search_files" "find_definitions" "get_diagnostics")
  "The project tools defined in Elisp (beyond the contracts' 18).")
(defconst agentq-descriptions--form-edit
  '(("edit_form" dangerous (diff))
    ("insert_form" dangerous (diff)))
  "The workbench's Emacs tools that edit a Lisp file's forms, reviewed as diffs.")

(ert-deftest sly-agent-q-tool-descriptions/the-18-tools-and-their-counts ()
  ;; Put back any built-in tool another test replaced.
  (agentq-test-eval-ok "(register-agent-q-tools)")
  (let ((names (sly-agent-q-list-tools)))
    (dolist (tool (append (mapcar #'car agentq-descriptions--built-in) agentq-descriptions--session))
      (should (member tool names))))
  (dolist (tool (append agentq-descriptions--built-in agentq-descriptions--form-edit))
    (pcase-let ((`(,name ,safety ,categories) tool))
      (should (equal (agentq-test-eval-ok (format "(let ((tool (get-tool %S))) (list (tool-safety-level tool) (tool-categories tool)))" name))
                     (format "=> (%S %S)" (intern (format ":%s" (upcase (symbol-name safety))))
                             (mapcar (lambda (c) (intern (format ":%s" (upcase (symbol-name c))))) categories))))))
  ;; The contract's counts: 13 safe, 3 cautious, 2 dangerous; introspection 9,
  ;; execution 4, buffer 4, diff 1, xref 2, clos 2, packages 1.
  (let ((count (lambda (pred) (cl-count-if pred agentq-descriptions--built-in))))
    (should (= 13 (funcall count (lambda (tool) (eq (nth 1 tool) 'safe)))))
    (should (= 3 (funcall count (lambda (tool) (eq (nth 1 tool) 'cautious)))))
    (should (= 2 (funcall count (lambda (tool) (eq (nth 1 tool) 'dangerous)))))
    (pcase-dolist (`(,category ,n) '((introspection 9) (execution 4) (buffer 4) (diff 1) (xref 2) (clos 2) (packages 1)))
      (should (= n (funcall count (lambda (tool) (memq category (nth 2 tool))))))))
  ;; In a fresh Emacs (this one has the other tests' tools): exactly these 11.
  (pcase-let ((`(,code ,stdout ,stderr ,_seconds)
               (agentq-test-run-emacs
                `((setq sly-agent-q-module-file ,(sly-agent-q--module-path))
                  (require 'sly-agent-q)
                  (princ (plist-get (car (sly-agent-q-execute-tool-calls
                                          '((:id "x" :name "evaluate_lisp"
                                                 :arguments (:code "(list (mapcar #'tool-name (get-agent-q-tools :max-safety-level :safe :categories '(:introspection))) (register-agent-q-tools) (register-agent-q-tools) (length (list-registered-tools)))")))))
                                    :content)))
                :timeout 60)))
    (should (equal code 0))
    (should (equal stdout (concat "=> ((\"apropos_search\" \"class_hierarchy\" \"class_slots\" \"describe_symbol\"\n"
                                  "     \"function_arglist\" \"inspect_object\" \"list_package_symbols\" \"list_systems\"\n"
                                  "     \"macroexpand_form\" \"who_calls\" \"who_references\")\n"
                                  "    37 37 37)")))
    (ignore stderr)))

(ert-deftest sly-agent-q-tool-descriptions/every-tool-and-parameter-is-described ()
  (agentq-test-eval-ok "(register-agent-q-tools)")
  (let ((listed (agentq-test-get (agentq-test-mcp '(:jsonrpc "2.0" :id 1 :method "tools/list")) "result" "tools"))
        (checked 0))
    (seq-doseq (tool listed)
      (let ((name (gethash "name" tool)))
        (when (or (assoc name agentq-descriptions--built-in) (member name agentq-descriptions--session)
                  (member name agentq-descriptions--debugger) (member name agentq-descriptions--project)
                  (assoc name agentq-descriptions--form-edit))
          (cl-incf checked)
          (ert-info ((format "tool %s" name))
            ;; What it does, when to use it, what it returns: a few sentences.
            (should (>= (length (gethash "description" tool)) 100))
            (let* ((schema (gethash "inputSchema" tool))
                   (properties (gethash "properties" schema))
                   (required (append (gethash "required" schema) nil)))
              (dolist (parameter required)
                (should (gethash parameter properties)))
              (maphash (lambda (parameter definition)
                         (ert-info ((format "parameter %s" parameter))
                           (let ((description (gethash "description" definition)))
                             (should (>= (length description) 15))
                             ;; An optional flag or count says what it is when left out.
                             (when (and (not (member parameter required))
                                        (member (gethash "type" definition) '("boolean" "integer")))
                               (should (string-match-p "default\\|defaults\\|unless\\|when left out\\|If true"
                                                       description))))))
                       properties))))))
    (should (= checked 37))))

;;; sly-agent-q-tool-descriptions-test.el ends here
