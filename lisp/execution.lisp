;;;; execution.lisp — calling tools from Lisp (contract tool-execution).
;;;;
;;;; EXECUTE-TOOL-CALLS runs the executor's steps for code running in the
;;;; session: lookup and argument validation are the C++ executor's own
;;;; (%PREPARE-TOOL-CALL), so are the counters; approval, hooks and the
;;;; handler run here, because C++ never calls back into Lisp (an interrupt
;;;; would unwind through its frames).  A Lisp-handled tool runs right here
;;;; in the calling job, with output captures of its own; a tool handled in
;;;; Emacs runs there, through the Emacs caller that waits for this job.

(in-package "AGENT-Q")

(defmacro as-agent (&rest body)
  "Run BODY, a tool call made through the Lisp API, as an agent's call:
its code is read first and asks before it touches the world
\(agent-code.lisp), whoever runs the calling code."
  (let ((saved (gensym "SAVED")))
    `(let ((,saved (%origin-token)))
       (%adopt-origin :agent)
       (unwind-protect (progn ,@body)
         (%adopt-origin ,saved)))))

(defvar *approval-handler* nil
  "Who approves the dangerous tools that Lisp calls (EXECUTE-TOOL-CALLS):
NIL, or a function called with the tool object and the arguments (a hash
table with string keys) that returns :APPROVED, :DENIED, (:DENIED REASON)
\(the result says \"Denied by user: REASON\") or (:MODIFIED NEW-ARGUMENTS).  When NIL, the Emacs
`sly-agent-q-approval-function' decides; with neither, dangerous tools are
denied.  Calls made from Emacs or MCP always ask Emacs, and so do the
calls an agent's code makes: only the person's own code (the REPL, the
evaluate commands) may approve through this handler.")

(defvar *tool-execution-hooks* nil
  "Functions called as (FUNCTION PHASE TOOL ARGUMENTS RESULT) around every
tool call, whoever made it (Lisp, Emacs, an MCP client).  PHASE is :BEFORE
\(RESULT is NIL), :AFTER or :ERROR; TOOL is the tool object (the name, for
an unknown tool); ARGUMENTS a hash table; RESULT a TOOL-RESULT.  A hook
that signals an error changes nothing.  Hooks of calls made from Emacs or
MCP run in a job of their own: what they print is not shown.")

(defclass tool-result ()
  ((id :initarg :id :accessor tool-result-id :initform nil
       :documentation "The id of the call this answers.")
   (success :initarg :success :accessor tool-result-success :initform nil
            :documentation "T when the tool ran and succeeded.")
   (content :initarg :content :accessor tool-result-content :initform ""
            :documentation "The text for the model: the result, or the error text.")
   (error :initarg :error :accessor tool-result-error :initform nil
          :documentation "The error text when the call failed, else NIL.")
   (metadata :initarg :metadata :accessor tool-result-metadata :initform '()
             :documentation "Plist (:execution-time-ms MS :safety-level LEVEL :approved BOOLEAN)."))
  (:documentation "What a tool call came to (contract tool-execution)."))

(defmethod print-object ((result tool-result) stream)
  (print-unreadable-object (result stream :type t)
    (format stream "~A ~:[failed~;ok~]" (tool-result-id result) (tool-result-success result))))

(defun format-tool-result (raw-result)
  "RAW-RESULT, what a handler returned, as text for a model: a string as it
is, NIL as \"nil\", anything else printed readably where it can be, lists
pretty-printed."
  (typecase raw-result
    (string raw-result)
    (null "nil")
    (t (let ((*package* (printing-package)) (*print-pretty* (consp raw-result)))
         (handler-case (let ((*print-length* 100) (*print-level* 10) (*print-readably* nil))
                         (prin1-to-string raw-result))
           (serious-condition () "#<error while printing>"))))))

;;; JSON text, for the executor and for Emacs.

(defun json-key (key)
  (if (stringp key) key (string-downcase (string key))))

(defun plist-object-p (list)
  "A list read as a JSON object: a plist with keyword keys."
  (and (ignore-errors (list-length list))
       (evenp (length list))
       (loop for key in list by #'cddr always (keywordp key))))

(defun alist-object-p (list)
  "A list read as a JSON object: an alist of dotted pairs with string or keyword keys."
  (and (ignore-errors (list-length list))
       (every (lambda (entry)
                (and (consp entry) (or (stringp (car entry)) (keywordp (car entry))) (atom (cdr entry))))
              list)))

(defun write-json-string (string out)
  (write-char #\" out)
  (loop for char across string
        for code = (char-code char)
        do (case char
             (#\" (write-string "\\\"" out))
             (#\\ (write-string "\\\\" out))
             (t (if (< code 32)
                    (format out "\\u~4,'0X" code)
                    (write-char char out)))))
  (write-char #\" out))

(defun write-json (value out depth)
  (when (> depth 200)
    (error "The arguments nest too deeply to send as JSON."))
  (flet ((object (pairs)
           (write-char #\{ out)
           (loop for (key . item) in pairs
                 for first = t then nil
                 do (unless first (write-char #\, out))
                    (write-json-string (json-key key) out)
                    (write-char #\: out)
                    (write-json item out (1+ depth)))
           (write-char #\} out))
         (array (items)
           (write-char #\[ out)
           (loop for item in items
                 for first = t then nil
                 do (unless first (write-char #\, out))
                    (write-json item out (1+ depth)))
           (write-char #\] out)))
    (cond ((member value '(t :true)) (write-string "true" out))
          ((eq value :false) (write-string "false" out))
          ((member value '(nil :null)) (write-string "null" out))
          ((stringp value) (write-json-string value out))
          ((integerp value) (format out "~D" value))
          ((realp value)
           (let ((float (float value 1d0)))
             (if (ext:float-infinity-p float)
                 (write-string "null" out)
                 (let ((*read-default-float-format* 'double-float))
                   (format out "~F" float)))))
          ((symbolp value) (write-json-string (json-key value) out))
          ((characterp value) (write-json-string (string value) out))
          ((hash-table-p value)
           (let ((pairs '()))
             (maphash (lambda (key item) (push (cons key item) pairs)) value)
             (object (nreverse pairs))))
          ((and (consp value) (plist-object-p value))
           (object (loop for (key item) on value by #'cddr collect (cons key item))))
          ((and (consp value) (alist-object-p value)) (object value))
          ((and (listp value) (ignore-errors (list-length value))) (array value))
          ((vectorp value) (array (coerce value 'list)))
          (t (error "~S cannot be sent as JSON." (type-of value))))))

(defun json-text (value)
  "VALUE as JSON text: hash tables, plists with keyword keys and alists of
dotted pairs are objects; other lists and vectors arrays; T and :TRUE
true, :FALSE false, NIL and :NULL null; other symbols their lower-case
names."
  (with-output-to-string (out) (write-json value out 0)))

;;; Asking the Emacs that waits for this job.

(defun ask-emacs (form)
  "Evaluate FORM, Emacs Lisp text, in the Emacs that waits for this job and
read the value it prints.  Signals EMACS-ERROR, also when no Emacs waits."
  (read-printed-elisp (eval-in-emacs form)))

(defun read-printed-elisp (printed)
  "The value Emacs PRINTED, read as Lisp data (strings, lists, numbers)."
  (with-standard-io-syntax
    (let ((*read-eval* nil))
      (values (read-from-string printed)))))

(defun approval-decision (answer)
  "What an approval function's ANSWER, as sly-agent-q--approve-for-lisp
and sly-agent-q--approve-agent-code print it and Lisp reads it, decides:
:APPROVED, (:MODIFIED TEXT), (:DENIED REASON), (:REFUSED TEXT) — a
denial to show as it is — or :DENIED for anything else."
  (cond ((equal answer "approved") :approved)
        ((and (consp answer) (stringp (cdr answer))
              (member (car answer) '("modified" "denied" "refused") :test #'equal))
         (list (cdr (assoc (car answer) '(("modified" . :modified) ("denied" . :denied) ("refused" . :refused))
                           :test #'equal))
               (cdr answer)))
        (t :denied)))

(defun emacs-hooks-p ()
  (ignore-errors (ask-emacs "(and sly-agent-q-tool-execution-functions t)")))

(defun emacs-approval (name arguments-json)
  "The Emacs approval function's decision: :APPROVED, :DENIED or
\(:MODIFIED-JSON TEXT).  Without an Emacs to ask, :DENIED."
  (let ((decision (approval-decision
                   (handler-case (ask-emacs (format nil "(sly-agent-q--approve-for-lisp ~A ~A)"
                                                    (elisp-text name) (elisp-text arguments-json)))
                     (emacs-error () nil)))))
    (case (and (consp decision) (first decision))
      (:modified (list :modified-json (second decision)))
      (:refused :denied)                 ; sly-agent-q--approve-for-lisp never answers it
      (t decision))))

(defun run-emacs-hooks (phase name arguments-json result)
  (ignore-errors
   (eval-in-emacs (format nil "(sly-agent-q--run-hooks-for-lisp ~A ~A ~A '~A)"
                          (elisp-text phase) (elisp-text name) (elisp-text arguments-json)
                          (elisp-text (and result (result-plist-for-emacs result)))))))

(defun result-plist-for-emacs (result)
  (let ((metadata (slot-value result 'metadata)))
    (list :id (slot-value result 'id)
          :success (and (slot-value result 'success) t)
          :content (slot-value result 'content)
          :error (slot-value result 'error)
          :metadata (list :execution_time_ms (getf metadata :execution-time-ms)
                          :safety_level (let ((level (getf metadata :safety-level)))
                                          (and level (string-downcase (string level))))
                          :approved (and (getf metadata :approved) t)))))

(defun run-emacs-check (name arguments-json)
  "Run the check of NAME, a tool with one (CHECK-P of %PREPARE-TOOL-CALL),
in the Emacs that waits for this job.  Returns NIL when the call may go
on, or the text it fails with."
  (handler-case
      (let ((answer (ask-emacs (format nil "(sly-agent-q--module-run-check ~A ~A)"
                                       (elisp-text name) (elisp-text arguments-json)))))
        (cond ((null answer) nil)
              ((stringp answer) answer)
              (t (format nil "Tool error: Emacs answered ~S for the check of ~A" answer name))))
    (emacs-error (condition)
      (format nil "Tool error: ~A is checked in Emacs, which could not run the check: ~A"
              name (emacs-error-message condition)))))

(defun call-emacs-tool (name arguments-json)
  "Run the handler of NAME, a tool handled in Emacs (or C++), in the Emacs
that waits for this job.  Returns true and the result text, or NIL and the
error text."
  (handler-case
      (let ((answer (ask-emacs (format nil "(sly-agent-q--module-run-handler ~A ~A)"
                                       (elisp-text name) (elisp-text arguments-json)))))
        (if (and (consp answer) (stringp (cdr answer)))
            (values (and (car answer) t) (cdr answer))
            (values nil (format nil "Tool error: Emacs answered ~S for the tool ~A" answer name))))
    (emacs-error (condition)
      (values nil (format nil "Tool error: ~A is handled in Emacs, which could not run it: ~A"
                          name (emacs-error-message condition))))))

;;; Lisp-handled tools, run inside the calling job.

(defmacro with-nested-job-state (&body body)
  "Run BODY, a tool call made from inside a job, with output captures and
per-job records of its own: the calling job's output stays its own."
  (let ((overflowed (gensym "OVERFLOWED")))
    `(let ((,overflowed nil))
       (multiple-value-prog1
           (let* ((*stdout* (make-capture-stream))
                  (*stderr* (make-capture-stream))
                  (*stdout-capture* (stream-capture *stdout*))
                  (*stderr-capture* (stream-capture *stderr*))
                  (*output-written* t)
                  (*warnings* '())
                  (*stack-overflowed* nil)
                  (*failure-in-flight* nil)
                  (*finalizer-failures* 0)
                  (*finalizer-error* nil))
             (multiple-value-prog1 (progn ,@body)
               (setf ,overflowed *stack-overflowed*)))
         ;; The calling job re-arms the stack guards when it ends.
         (when ,overflowed (setf *stack-overflowed* t))))))

(defun run-lisp-tool (name arguments)
  "Run NAME, a Lisp-handled tool, with ARGUMENTS (a hash table) inside the
calling job.  Returns true and the result text, or NIL and the error text."
  (let ((limit (capture-limit *stdout-capture*)))
    (with-nested-job-state
      (if (string= name "evaluate_lisp")
          (evaluate-string (gethash "code" arguments) (gethash "package" arguments)
                           (or (gethash "capture-time" arguments) (gethash "capture_time" arguments))
                           limit)
          (let ((handler (job-handler name)))
            (if handler
                (call-tool-handler handler arguments limit)
                (values nil (format nil "Tool error: the tool ~A has no Lisp handler" name))))))))

(defun call-registered-tool (name kind arguments)
  "The handler of a tool Lisp did not make (see REGISTERED-TOOL): run it
with ARGUMENTS, a hash table; return its result, or NIL and the error."
  (multiple-value-bind (success text)
      (if (eq kind :lisp)
          (run-lisp-tool name arguments)
          (call-emacs-tool name (json-text arguments)))
    (if success text (values nil text))))

;;; Hooks.

(defun run-lisp-hooks (phase tool arguments result)
  (let ((hooks *tool-execution-hooks*))
    (when (and (listp hooks) (ignore-errors (list-length hooks)))
      (dolist (hook hooks)
        (handler-case (funcall hook phase tool arguments result)
          (error () nil))))))

(defun metadata-from-hash (metadata)
  (and (hash-table-p metadata)
       (list :execution-time-ms (gethash "execution_time_ms" metadata)
             :safety-level (let ((level (gethash "safety_level" metadata)))
                             (and (stringp level) (intern (string-upcase level) "KEYWORD")))
             :approved (and (gethash "approved" metadata) t))))

(defun run-tool-hooks-job (arguments)
  "The job the executor runs for a call made from Emacs or MCP when
*TOOL-EXECUTION-HOOKS* is not empty."
  (let* ((name (gethash "tool" arguments))
         (result (gethash "result" arguments))
         (phase (find (gethash "phase" arguments) '(:before :after :error) :test #'string-equal)))
    (run-lisp-hooks phase (or (ignore-errors (find-tool name)) name)
                    (or (gethash "arguments" arguments) (make-hash-table :test 'equal))
                    (and (hash-table-p result)
                         (make-instance 'tool-result
                                        :id (gethash "id" result)
                                        :success (and (gethash "success" result) t)
                                        :content (gethash "content" result)
                                        :error (gethash "error" result)
                                        :metadata (metadata-from-hash (gethash "metadata" result))))))
  nil)

;;; Calls.

(defun call-part (call key)
  (cond ((hash-table-p call) (gethash (string-downcase (string key)) call))
        ((plist-object-p call) (getf call key))))

(defun read-tool-call (call)
  "The id, name and arguments (JSON text) of CALL, a plist
\(:id ID :name NAME :arguments ARGUMENTS) or a hash table with those
string keys; as a fourth value, what is wrong with it, or NIL."
  (let ((id (ignore-errors (call-part call :id))))
    (handler-case
        (let ((name (call-part call :name))
              (arguments (call-part call :arguments)))
          (unless (or (hash-table-p call) (plist-object-p call))
            (error "a tool call must be a plist (:id ID :name NAME :arguments ARGUMENTS)"))
          (unless (and (stringp name) (plusp (length name)))
            (error "the tool call has no :name"))
          (values id name (if (stringp arguments) arguments (json-text arguments)) nil))
      (error (condition)
        (values id nil nil (condition-message condition))))))

(defun elapsed-ms (start paused)
  (- (%monotonic-ms) start paused))

(defun execute-tool-call (call emacs-hooks)
  "Run one tool call (see EXECUTE-TOOL-CALLS) and return its TOOL-RESULT."
  (let ((start (%monotonic-ms)) (paused 0)
        (tool nil) (safety nil) (approved nil) (arguments nil) (arguments-json "{}")
        (denied "User denied tool execution") (check-p nil))
    (multiple-value-bind (id given arguments-text problem) (read-tool-call call)
      (labels ((finish (success text &key (record t) (phase (if success :after :error)))
                 (let ((result (make-instance 'tool-result
                                              :id id :success success :content text
                                              :error (unless success text)
                                              :metadata (list :execution-time-ms (elapsed-ms start paused)
                                                              :safety-level safety
                                                              :approved (and approved t)))))
                   (when record
                     (%record-tool-call (slot-value tool 'name) success (getf (slot-value result 'metadata) :execution-time-ms)))
                   (when phase
                     (hook phase result))
                   result))
               (hook (phase result)
                 (run-lisp-hooks phase (or tool given) (or arguments (make-hash-table :test 'equal)) result)
                 (when emacs-hooks
                   (run-emacs-hooks phase (if tool (slot-value tool 'name) given) arguments-json result)))
               (prepare (text)
                 (multiple-value-bind (error name level kind hash json denied-text check)
                     (%prepare-tool-call given text)
                   (declare (ignore kind))
                   (setf safety level
                         tool (and level (find-tool name)))
                   (when denied-text (setf denied denied-text check-p check))
                   (when json (setf arguments hash arguments-json json))
                   error)))
        (when problem
          (return-from execute-tool-call
            (finish nil (format nil "Invalid tool call: ~A" problem) :record nil :phase nil)))
        (let ((error (prepare arguments-text)))
          ;; Safe and cautious tools need no permission; dangerous ones get it below.
          (setf approved (and tool (not (eq safety :dangerous))))
          (cond ((null tool) (finish nil error :record nil))
                (error (finish nil error))
                (t
                 (when check-p
                   (let ((problem (run-emacs-check (slot-value tool 'name) arguments-json)))
                     (when problem
                       (return-from execute-tool-call (finish nil problem)))))
                 (unless approved
                   (let* ((asked (%monotonic-ms))
                          ;; An agent's job cannot approve for itself by
                          ;; setting the handler: only the person's jobs use it.
                          (decision (if (and *approval-handler* (null (%job-origin)))
                                        (handler-case (funcall *approval-handler* tool arguments)
                                          (error () :denied))
                                        (emacs-approval (slot-value tool 'name) arguments-json))))
                     (incf paused (- (%monotonic-ms) asked))
                     (cond ((eq decision :approved) (setf approved t))
                           ((and (consp decision) (member (car decision) '(:modified :modified-json)))
                            (setf approved t)
                            (let ((again (prepare (if (eq (car decision) :modified-json)
                                                      (second decision)
                                                      (handler-case (json-text (second decision))
                                                        (error () "null"))))))
                              (when again
                                (return-from execute-tool-call (finish nil again)))))
                           ((and (consp decision) (eq (car decision) :denied) (stringp (second decision)))
                            (return-from execute-tool-call
                              (finish nil (if (equal denied "User denied tool execution")
                                              (format nil "Denied by user: ~A" (second decision))
                                              (format nil "~A~%The user said: ~A" denied (second decision))))))
                           (t (return-from execute-tool-call (finish nil denied))))))
                 (hook :before nil)
                 (multiple-value-bind (success text)
                     (if (eq (slot-value tool 'kind) :lisp)
                         ;; A dangerous tool got here approved: it runs as
                         ;; its caller's code; any other as an agent's.
                         (if (eq safety :dangerous)
                             (run-lisp-tool (slot-value tool 'name) arguments)
                             (as-agent (run-lisp-tool (slot-value tool 'name) arguments)))
                         (call-emacs-tool (slot-value tool 'name) arguments-json))
                   (finish success (if (and (not success) (zerop (length text))) "Tool failed" text)))))))))) 

(defun execute-tool-calls (tool-calls)
  "Run TOOL-CALLS, a list of plists (:id \"c1\" :name \"describe_symbol\"
:arguments (:symbol \"car\")), in order, and return a TOOL-RESULT for each.
Arguments may be a plist with keyword keys, a hash table with string keys,
an alist or JSON text.  Each call goes through the registry that Emacs and
MCP use: unknown tools and bad arguments give failed results, dangerous
tools ask *APPROVAL-HANDLER* (or Emacs), *TOOL-EXECUTION-HOOKS* (and
Emacs's hooks) see every call, and a handler's error is a failed result
\"Tool error: …\".  Lisp-handled tools run inside this evaluation; tools
handled in Emacs run there, when this evaluation was called from Emacs."
  (unless (and (listp tool-calls) (ignore-errors (list-length tool-calls)))
    (error "EXECUTE-TOOL-CALLS needs a list of tool calls, not ~S." tool-calls))
  (let ((emacs-hooks (emacs-hooks-p)))
    (mapcar (lambda (call) (execute-tool-call call emacs-hooks)) tool-calls)))
