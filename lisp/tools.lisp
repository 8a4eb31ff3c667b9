;;;; tools.lisp — tools defined in Common Lisp.
;;;;
;;;; DEFINE-TOOL puts a tool in the one registry that Emacs, MCP clients and
;;;; Lisp share; each call of it is a job that the worker hands to its
;;;; handler, with the limits and guards of an evaluation.

(in-package "AGENT-Q")

(define-condition tool-definition-error (error)
  ((message :initarg :message :reader tool-definition-error-message))
  (:report (lambda (condition stream)
             (write-string (tool-definition-error-message condition) stream)))
  (:documentation "Signalled by DEFINE-TOOL for a definition the registry refuses."))

(defun define-tool (name description parameters &key required (safety-level :safe) categories handler)
  "Define the tool NAME (a snake_case string), handled in Lisp by HANDLER,
and register it where Emacs and MCP clients see it too.  DESCRIPTION tells a
model what the tool does and when to use it.  PARAMETERS is a list of
plists (:name \"x\" :type :string :description \"...\") with types :string,
:boolean, :number, :integer, :object or :array; REQUIRED lists parameter
names; SAFETY-LEVEL is :safe, :cautious or :dangerous (dangerous tools ask
for approval); CATEGORIES is a list of keywords.  HANDLER is called with
the arguments as a hash table with string keys and returns the result, a
string or any value to print, or NIL and an error message.  Redefining a
tool replaces it.  Returns NAME.

  (agent-q:define-tool \"word_count\" \"Count the words of a text.\"
    '((:name \"text\" :type :string :description \"The text.\"))
    :required '(\"text\")
    :handler (lambda (args)
               (let ((text (gethash \"text\" args)))
                 (format nil \"~D\" (1+ (count #\\Space (string-trim \" \" text)))))))"
  (unless (functionp handler)
    (error 'tool-definition-error :message (format nil "Tool ~A needs a :handler function." name)))
  (let ((failure (%define-tool name description parameters required safety-level categories)))
    (when failure
      (error 'tool-definition-error :message failure)))
  (register-job-handler name handler)
  name)
