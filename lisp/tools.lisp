;;;; tools.lisp — the contracts' tool objects and registry, in Lisp.
;;;;
;;;; There is one registry of tools, in C++, shared by Emacs, MCP clients
;;;; and Lisp.  *AGENT-Q-REGISTRY* is Lisp's view of it: a hash table of
;;;; tool objects, brought up to date from the C++ registry by every
;;;; function here.  REGISTER-TOOL puts a Lisp tool in the C++ registry (its
;;;; calls then run as jobs handed to its handler); tools defined elsewhere
;;;; appear as tool objects whose handler calls them.

(in-package "AGENT-Q")

(eval-when (:compile-toplevel :load-toplevel :execute)
  (defparameter +tool-api+
    '("DEFINE-TOOL" "REGISTER-TOOL" "GET-TOOL" "LIST-REGISTERED-TOOLS" "GET-AGENT-Q-TOOLS"
      "TOOL-TO-SCHEMA" "TOOLS-TO-SCHEMA" "REGISTER-AGENT-Q-TOOLS" "EXECUTE-TOOL-CALLS"
      "FORMAT-TOOL-RESULT" "*AGENT-Q-REGISTRY*" "*APPROVAL-HANDLER*" "*TOOL-EXECUTION-HOOKS*"
      "TOOL" "TOOL-NAME" "TOOL-DESCRIPTION" "TOOL-PARAMETERS" "TOOL-REQUIRED" "TOOL-SAFETY-LEVEL"
      "TOOL-CATEGORIES" "TOOL-HANDLER" "TOOL-KIND"
      "TOOL-RESULT" "TOOL-RESULT-ID" "TOOL-RESULT-SUCCESS" "TOOL-RESULT-CONTENT" "TOOL-RESULT-ERROR"
      "TOOL-RESULT-METADATA" "*LAST-ERROR*")
    "The contracts' Lisp API: exported, and imported into CL-USER, where the
contracts' examples use it unqualified.  Only these: the runtime's own
functions stay out of reach of a DEFUN in CL-USER.")
  (export (mapcar (lambda (name) (intern name "AGENT-Q")) +tool-api+) "AGENT-Q"))

(defun import-tool-api (package)
  "Make the tool API (+TOOL-API+) accessible in PACKAGE, except names
PACKAGE already has a symbol of its own for."
  (dolist (name +tool-api+)
    (ignore-errors (import (find-symbol name "AGENT-Q") package))))

(define-condition tool-definition-error (error)
  ((message :initarg :message :reader tool-definition-error-message))
  (:report (lambda (condition stream)
             (write-string (tool-definition-error-message condition) stream)))
  (:documentation "Signalled by DEFINE-TOOL and REGISTER-TOOL for a definition the registry refuses."))

(defclass tool ()
  ((name :initarg :name :accessor tool-name :type string
         :documentation "The tool's name, snake_case: \"describe_symbol\".")
   (description :initarg :description :accessor tool-description :initform "" :type string
                :documentation "What the tool does and when a model should use it.")
   (parameters :initarg :parameters :accessor tool-parameters :initform '() :type list
               :documentation "Plists (:name \"x\" :type :string :description \"...\").")
   (required :initarg :required :accessor tool-required :initform '() :type list
             :documentation "The names of the parameters a call must give.")
   (safety-level :initarg :safety-level :accessor tool-safety-level :initform :safe :type keyword
                 :documentation ":safe, :cautious (logged) or :dangerous (asks for approval).")
   (categories :initarg :categories :accessor tool-categories :initform '() :type list
               :documentation "Keywords such as :introspection.")
   (handler :initarg :handler :accessor tool-handler :initform nil
            :documentation "Called with the arguments, a hash table with string keys.")
   (kind :initarg :kind :reader tool-kind :initform :lisp
         :documentation "Who handles the tool's calls: :lisp, :elisp (Emacs) or :native (C++).")
   (own :initarg :own :initform t :reader tool-own-p
        :documentation "True for a tool made in Lisp by DEFINE-TOOL; false for a view of a
tool the registry had (defined in Emacs, C++, or the runtime's own)."))
  (:documentation "A tool a model may call (contract tool-protocol)."))

(defmethod print-object ((tool tool) stream)
  (print-unreadable-object (tool stream :type t)
    (format stream "~A ~(~S~)" (slot-value tool 'name) (slot-value tool 'safety-level))))

(defvar *agent-q-registry* (make-hash-table :test 'equal)
  "The tools every front door shares, by name: Lisp's view of the one
registry.  Read it through GET-TOOL, LIST-REGISTERED-TOOLS and
GET-AGENT-Q-TOOLS, which bring it up to date (tools defined in Emacs appear
there too); add to it with REGISTER-TOOL.")

(defvar *registry-generation* nil
  "The C++ registry's generation *AGENT-Q-REGISTRY* last mirrored.")

(defun define-tool (name description parameters &key required (safety-level :safe) categories handler)
  "Make a tool object (contract tool-protocol); REGISTER-TOOL makes it
callable.  NAME is a snake_case string; DESCRIPTION tells a model what the
tool does and when to use it.  PARAMETERS is a list of plists
\(:name \"x\" :type :string :description \"...\") with types :string,
:boolean, :number, :integer, :object or :array; a plist may also give
:MINIMUM and :MAXIMUM (a value beyond fails the call), :DEFAULT (what the
handler uses when the argument is absent, :FALSE for false: only said in
the schema), :ALIASES (older names still accepted) and, for a string,
:ENUM (the list of strings it may be; anything else fails the call).
Arguments that
are no parameter fail the call.  REQUIRED lists parameter
names; SAFETY-LEVEL is :safe, :cautious or :dangerous (dangerous tools ask
for approval); CATEGORIES is a list of keywords.  HANDLER is called with
the arguments as a hash table with string keys and returns the result: a
string, any value to print, or NIL and an error message (a second value
beside a result is an error message only when it is a string, so that
GETHASH's found flag is none).  A definition the
registry would refuse signals TOOL-DEFINITION-ERROR.

  (register-tool *agent-q-registry*
    (define-tool \"word_count\" \"Count the words of a text.\"
      '((:name \"text\" :type :string :description \"The text.\"))
      :required '(\"text\")
      :handler (lambda (args)
                 (let ((text (string-trim \" \" (gethash \"text\" args))))
                   (if (string= text \"\") 0 (1+ (count #\\Space text)))))))"
  (unless (functionp handler)
    (error 'tool-definition-error :message (format nil "Tool ~A needs a :handler function." name)))
  (let ((failure (%define-tool name description parameters required safety-level categories nil nil)))
    (when failure
      (error 'tool-definition-error :message failure)))
  (make-instance 'tool :name (string name) :description (or description "") :parameters parameters
                       :required required :safety-level safety-level :categories categories
                       :handler handler))

(defun register-tool (registry tool)
  "Add TOOL to REGISTRY, replacing a tool of the same name, and return TOOL.
In *AGENT-Q-REGISTRY* the tool becomes callable from Emacs, MCP clients and
EXECUTE-TOOL-CALLS; any other hash table just keeps it."
  (check-type tool tool)
  (check-type registry hash-table)
  (when (and (eq registry *agent-q-registry*) (slot-value tool 'own))
    (let ((failure (%define-tool (slot-value tool 'name) (slot-value tool 'description) (slot-value tool 'parameters)
                                 (slot-value tool 'required) (slot-value tool 'safety-level) (slot-value tool 'categories) t nil)))
      (when failure
        (error 'tool-definition-error :message failure)))
    (register-job-handler (slot-value tool 'name) (slot-value tool 'handler))
    (sync-registry))
  (setf (gethash (slot-value tool 'name) registry) tool))

(defun registered-tool (name description parameters required safety categories kind)
  "A view of a tool the C++ registry has and Lisp did not make: its handler
calls the tool (without approval or hooks, as calling a handler does)."
  (make-instance 'tool :name name :description description :parameters parameters
                       :required required :safety-level safety :categories categories :kind kind
                       :own nil
                       :handler (lambda (arguments) (call-registered-tool name kind arguments))))

(defun sync-registry ()
  "Bring *AGENT-Q-REGISTRY* up to date with the one registry."
  (let ((generation (%registry-generation)))
    (unless (eql generation *registry-generation*)
      (let ((registry *agent-q-registry*) (names '()))
        (dolist (entry (%tools))
          (destructuring-bind (name description parameters required safety categories kind) entry
            (push name names)
            (let ((known (gethash name registry)))
              ;; Keep the object Lisp registered (its identity, its handler),
              ;; unless the name now belongs to a tool of another kind.
              (unless (and known (eq (slot-value known 'kind) kind)
                           (eq (slot-value known 'safety-level) safety))
                (setf (gethash name registry)
                      (registered-tool name description parameters required safety categories kind))))))
        (let ((stale '()))
          (maphash (lambda (name tool) (declare (ignore tool))
                     (unless (member name names :test #'string=) (push name stale)))
                   registry)
          (dolist (name stale) (remhash name registry)))
        (setf *registry-generation* generation))))
  *agent-q-registry*)

(defun get-tool (name)
  "The tool named NAME (a string; \"describe-symbol\" also finds
\"describe_symbol\"), or NIL."
  (find-tool name))

(defun find-tool (name)
  "GET-TOOL, for the runtime's own use: CL-USER has GET-TOOL, and a DEFUN
there must not break tool calls."
  (let ((registry (sync-registry)) (name (string name)))
    (values (or (gethash name registry)
                (gethash (substitute #\_ #\- name) registry)))))

(defun list-registered-tools ()
  "The names of all registered tools, sorted."
  (let ((names '()))
    (maphash (lambda (name tool) (declare (ignore tool)) (push name names)) (sync-registry))
    (sort names #'string<)))

(defun safety-rank (level)
  (or (position level '(:safe :cautious :dangerous))
      (error "Unknown safety level ~S (:safe, :cautious or :dangerous)." level)))

(defun get-agent-q-tools (&key max-safety-level categories)
  "The registered tools, sorted by name: those at or below MAX-SAFETY-LEVEL
\(:safe, :cautious or :dangerous) when given, and those with at least one
of CATEGORIES (keywords) when given; both filters apply together."
  (let ((limit (and max-safety-level (safety-rank max-safety-level))))
    (remove-if-not (lambda (tool)
                     (and (or (null limit) (<= (safety-rank (slot-value tool 'safety-level)) limit))
                          (or (null categories)
                              (intersection categories (slot-value tool 'categories) :test #'string-equal))))
                   (mapcar (lambda (n) (find-tool n)) (list-registered-tools)))))

(defun parameter-schema (parameter)
  (let ((type (getf parameter :type :string)))
    (list :type (string-downcase (string type))
          :description (or (getf parameter :description) ""))))

(defun tool-to-schema (tool)
  "TOOL as a model's function schema, a plist:
  (:type \"function\"
   :function (:name \"describe_symbol\" :description \"...\"
              :parameters (:type \"object\"
                           :properties (:symbol (:type \"string\" :description \"...\"))
                           :required (\"symbol\"))))"
  (list :type "function"
        :function (list :name (slot-value tool 'name)
                        :description (slot-value tool 'description)
                        :parameters (list :type "object"
                                          :properties (loop for parameter in (slot-value tool 'parameters)
                                                            collect (intern (string-upcase (string (getf parameter :name)))
                                                                            "KEYWORD")
                                                            collect (parameter-schema parameter))
                                          :required (mapcar #'string (slot-value tool 'required))))))

(defun tools-to-schema (tools)
  "TOOLS (from GET-AGENT-Q-TOOLS) as a list of function schemas (see TOOL-TO-SCHEMA)."
  (mapcar (lambda (tool) (tool-to-schema tool)) tools))

(defun register-agent-q-tools ()
  "Register the 18 Agent-Q tools again (those handled in Lisp, and, when
an Emacs waits for this evaluation, those handled there), replacing tools
of the same names, and return how many tools there are.  Safe to call any
number of times."
  (register-built-in-tools)
  ;; The buffer and diff tools are Emacs's: the Emacs that waits for this
  ;; evaluation defines them again (nothing to do without one).
  (ignore-errors
   (eval-in-emacs "(progn (and (fboundp 'sly-agent-q--define-buffer-tools) (sly-agent-q--define-buffer-tools))
                          (and (fboundp 'sly-agent-q--define-project-tools) (sly-agent-q--define-project-tools))
                          (and (fboundp 'sly-agent-q--define-form-edit-tools) (sly-agent-q--define-form-edit-tools)))"))
  (hash-table-count (sync-registry)))
