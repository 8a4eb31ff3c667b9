;;;; errors.lisp — conditions as the evaluate-lisp result shows them: the
;;;; [ERROR] text with its backtrace, warnings, and the handlers that turn a
;;;; condition into a result instead of a debugger.

(in-package "AGENT-Q")

(defvar *warnings* nil)
(defvar *stack-overflowed* nil)
(defvar *failure-in-flight* nil
  "The [ERROR] text of the stack overflow FAIL unwound from last in this
evaluation.  ECL 21.2 can lose its target while unwinding from a
frame-stack overflow and unwind past every Lisp frame; the host then
reports this text.")
(defvar *last-error* nil
  "The condition that made the last failed evaluation (or tool handler)
fail, or NIL; reset_session clears it.")
(defconstant +backtrace-frames+ 20)
(defvar *repl-debugger* nil
  "True while an evaluation typed in the REPL runs: an unhandled serious
condition asks the person for a restart (REPL-DEBUG) instead of failing.")
(defvar *hold-errors* nil
  "True while an evaluation that holds its unhandled errors runs (evaluate_lisp's debug: true, held-errors.lisp).")
(defvar *in-repl-debugger* nil "True while the REPL's debugger asks the person.")
(defvar *outer-restarts* '()
  "The restarts in force when the REPL's form started: not the form's own.")


(defun safe-princ (object)
  (handler-case (let ((*print-length* 100) (*print-level* 10) (*print-readably* nil))
                  (princ-to-string object))
    (serious-condition () "#<error while printing>")))

(defun condition-message (condition)
  "CONDITION's report, or what is known of it when the report says nothing:
ECL reports a condition made without the slots its report reads (a closed
stream's STREAM-ERROR, (ERROR 'SIMPLE-ERROR)) as #<a STREAM-ERROR 0x…>, as
nothing, or not at all."
  (let ((text (handler-case (let ((*print-length* 100) (*print-level* 10) (*print-readably* nil))
                              (princ-to-string condition))
                (serious-condition () nil))))
    (cond ((and (typep condition 'end-of-file)
                (member (ignore-errors (stream-error-stream condition)) (list *null-input* *null-io*)))
           (format nil "End of file: evaluated code has no input (*standard-input*, *query-io* ~
                        and *terminal-io* read as empty).  Put the data in the code instead."))
          ((and text (plusp (length text))
                ;; Not ECL's #<a STREAM-ERROR 0x…> for this condition.
                (not (and (> (length text) 4)
                          (string= "#<a " text :end2 4)
                          (char= #\> (char text (1- (length text))))
                          (search (symbol-name (type-of condition)) text)
                          (not (find #\Newline text)))))
           text)
          ((typep condition 'stream-error)
           (let ((stream (ignore-errors (stream-error-stream condition))))
             (format nil "~:[Stream error on~;The stream is closed:~] ~A."
                     (and (streamp stream) (not (ignore-errors (open-stream-p stream))))
                     (safe-princ stream))))
          (t
           (format nil "~A was signalled~:[ (its report failed)~;~]."
                   (type-name condition) text)))))

(defun without-object-addresses (text)
  "TEXT with each #<...> printed object (a stream, say, with its memory
address) replaced by a word for it: a message that reads the same each
time, for a model and for a test."
  (with-output-to-string (out)
    (loop with start = 0
          for open = (search "#<" text :start2 start)
          for close = (and open (position #\> text :start open))
          while close
          do (write-string text out :start start :end open)
             (let ((inside (subseq text (+ open 2) close)))
               (write-string (if (search "stream" inside) "the text" "an object") out))
             (setf start (1+ close))
          finally (write-string text out :start start))))

(defun printing-package ()
  "CL-USER if it still exists (evaluated code may delete it), else CL."
  (or (find-package "CL-USER") (load-time-value (find-package "COMMON-LISP"))))

(defun type-name (condition)
  (handler-case (let ((*package* (printing-package)))
                  (prin1-to-string (type-of condition)))
    (serious-condition () "UNKNOWN-CONDITION")))

(defun frame-name (index)
  (let ((fun (si::ihs-fun index)))
    (cond ((symbolp fun) fun)
          ((functionp fun) (or (si::compiled-function-name fun) (native-function-name fun)))
          (t fun))))

(defparameter *internal-frame-names*
  '(nil si:bytecodes eval signal error cerror warn invoke-debugger break
    si::universal-error-handler si::tpl si::safe-eval)
  "Frames of the evaluator and of the condition machinery: not the user's.")

(defun internal-frame-p (name)
  (or (member name *internal-frame-names*)
      (and (symbolp name)
           (eq (symbol-package name) (load-time-value (find-package "AGENT-Q"))))))

(defun user-frames ()
  "Up to +BACKTRACE-FRAMES+ user frames, innermost first, each (NAME . IHS),
IHS the frame's index on ECL's invocation history stack."
  (let ((frames '()) (n 0))
    (loop for i from (si::ihs-top) downto 1
          for name = (frame-name i)
          while (< n +backtrace-frames+)
          unless (internal-frame-p name)
            do (push (cons name i) frames)
               (incf n))
    (nreverse frames)))

(defun backtrace-names ()
  "The names of up to +BACKTRACE-FRAMES+ user frames, innermost first."
  (mapcar #'car (user-frames)))

(defun backtrace-lines (names)
  "NAMES (see BACKTRACE-NAMES) as numbered text lines."
  (let ((*package* (printing-package)))
    (loop for name in names for n from 0
          collect (format nil "~D: (~A)" n (safe-princ (if (symbolp name) (prin1-to-string name) name))))))

(defun capture-backtrace ()
  "Up to +BACKTRACE-FRAMES+ user frames, innermost first, as text lines."
  (backtrace-lines (backtrace-names)))

(defun restart-lines (condition &optional (restarts (job-restarts condition)))   ; debugger.lisp
  "The restarts the evaluated code established that are in force for
CONDITION (RESTARTS), innermost first, as numbered lines \"0: [NAME]
report\" (the REPL's debugger numbers them the same way), or NIL when
there are none."
  (loop for restart in restarts
        for index from 0
        collect (format nil "~D: ~A" index (restart-line restart))))

(defvar *want-structure*)               ; evaluate.lisp

(defvar *error-structure* nil
  "While the caller of a job takes structured results (*WANT-STRUCTURE*):
the last [ERROR] text ERROR-TEXT made in the job and its parts, (TEXT .
OBJECT), OBJECT a hash table as evaluate_lisp's outputSchema has its
error: type, message, restarts.  Made from the condition itself, so that
a message cannot pass for a section of the text.")

(defun error-structure-text (object)
  "The JSON text of evaluate_lisp's structured result for the error OBJECT."
  (let ((result (make-hash-table :test #'equal)))
    (setf (gethash "error" result) object)
    (json-text result)))                ; execution.lisp

(defun error-object (type message note restarts)
  "The structured error (see *ERROR-STRUCTURE*) of a condition of TYPE
\(its name as the text prints it) with MESSAGE, NOTE (or NIL) and
RESTARTS (innermost first)."
  (let ((object (make-hash-table :test #'equal)))
    (setf (gethash "type" object) type
          (gethash "message" object) (if note (format nil "~A~%~A" message note) message)
          (gethash "restarts" object)
          (coerce (loop for restart in restarts
                        for index from 0
                        collect (let ((entry (make-hash-table :test #'equal)))
                                  (multiple-value-bind (name report) (restart-parts restart)   ; debugger.lisp
                                    (setf (gethash "index" entry) index
                                          (gethash "name" entry) name
                                          (gethash "report" entry) report))
                                  entry))
                  'vector))
    object))

(defun error-text (condition &optional note (names :here))
  "The [ERROR] text of CONDITION, printed the same way whatever printer
variables the evaluated code set (say *PRINT-BASE* 36), in the current
package.  NAMES: its frames' names, taken earlier (BACKTRACE-NAMES), or
:HERE to take them now."
  (let ((package *package*))
    (with-standard-io-syntax
      (let ((*package* package) (*print-readably* nil))
        (error-text-1 condition note names)))))

(defstruct (deferred-failure (:constructor make-deferred-failure (condition names note)))
  "A storage condition's failure, described once the unwinding has let the
evaluation's data go (FAILURE-TEXT)."
  condition names note)

(defun failure-text (failure)
  "What was thrown to %EVALUATION-FAILED, as the [ERROR] text (NIL stays NIL)."
  (if (typep failure 'deferred-failure)   ; inline: no call by name
      (error-text (deferred-failure-condition failure) (deferred-failure-note failure)
                  (deferred-failure-names failure))
      failure))

(defun error-text-1 (condition note names)
  (handler-case
      (let ((frames (backtrace-lines (if (eq names :here) (backtrace-names) names))))
        ;; The missing function of an UNDEFINED-FUNCTION was never called, so
        ;; it has no frame; show it where the call failed.
        (when (typep condition 'undefined-function)
          (setf frames (cons (format nil "0: (~A)" (let ((*package* (printing-package)))
                                                     (safe-princ (prin1-to-string (cell-error-name condition)))))
                             (loop for line in frames for i from 1
                                   collect (format nil "~D~A" i (subseq line (position #\: line)))))))
        (let* ((type (type-name condition))
               (message (condition-message condition))
               ;; Taken where the condition was signalled (NAMES :HERE):
               ;; after the unwinding none is left.
               (restarts (and (eq names :here) (job-restarts condition)))
               (text (format nil "[ERROR] ~A~%~A~@[~%~A~]~%~@[~%[Restarts]~%~{~A~^~%~}~%~]~%[Backtrace]~%~{~A~^~%~}"
                             type message note (restart-lines condition restarts)
                             (or frames '("(no user frames)")))))
          (when *want-structure*
            (setf *error-structure* (cons text (error-object type message note restarts))))
          text))
    (serious-condition ()
      (format nil "[ERROR] ~A~%(the condition could not be described)" (type-name condition)))))

(defun fail (condition &optional note)
  "Handler for serious conditions: describe CONDITION where it was
signalled, then unwind out of the evaluation."
  (maybe-repl-debug condition)         ; debugger.lisp: returns unless a restart was chosen
  (when *hold-errors*
    (maybe-hold-error condition))       ; held-errors.lisp: the same
  (when (typep condition '(and storage-condition (not ext:stack-overflow)))
    ;; Out of memory: all the evaluation made is still live here, and
    ;; describing it could run out again, outside any handler.  Take the
    ;; frames' names (a short list), unwind, then describe.
    (setf *last-error* condition)
    (throw '%evaluation-failed
      (make-deferred-failure condition (ignore-errors (backtrace-names)) note)))
  (let ((text (error-text condition note)))
    (setf *last-error* condition)
    (when (typep condition 'ext:stack-overflow)
      (setf *stack-overflowed* t
            *failure-in-flight* text))
    (throw '%evaluation-failed text)))

(defun debugger-hook (condition hook)
  (declare (ignore hook))
  (fail condition "(The debugger was entered; there is no interactive debugger here.)"))

(defvar *finalizer-failures* 0
  "How many finalizers failed during this evaluation.")
(defvar *finalizer-error* nil "The first of those failures' condition.")

(defconstant +finalizer-budget-ms+ 200
  "How long the finalizers may run at the end of one job, in milliseconds.")

(define-condition finalizer-overran (error)
  ()
  (:report (lambda (condition stream)
             (declare (ignore condition))
             (format stream "a finalizer ran past the ~,1F s the finalizers get at the end of a call; ~
                             it was interrupted and dropped (any others wait for the next call)"
                     (/ +finalizer-budget-ms+ 1000))))
  (:documentation "A finalizer that used up its call's finalizer budget."))

(defun run-pending-finalizers ()
  "Run the finalizers the collector has called for since the last job, in
the job, for at most +FINALIZER-BUDGET-MS+: a failure is counted and
becomes one warning of the job (see FINALIZER-WARNING); one still running
when the budget is spent is interrupted (by the host, as a timeout is) and
dropped, and the rest wait for the next job."
  (%finalizer-budget +finalizer-budget-ms+)
  (unwind-protect
       (loop for entry = (mp:atomic-pop *pending-finalizers*)
             while entry
             do (multiple-value-bind (status reason)
                    (catch '%job-aborted
                      ;; Bound only here: a late :FINALIZER interrupt that
                      ;; lands anywhere else is ignored (INTERRUPT-JOB).
                      (let ((*running-finalizers* t))
                        (handler-case (funcall (car entry) (cdr entry))
                          (serious-condition (condition)
                            (when (= 1 (incf *finalizer-failures*))
                              (setf *finalizer-error* condition)))))
                      nil)
                  (when (eq status :aborted)
                    (unless (eq reason :finalizer)
                      (throw '%job-aborted (values status reason))) ; C-g, the job's timeout
                    (when (= 1 (incf *finalizer-failures*))
                      (setf *finalizer-error* (make-condition 'finalizer-overran)))
                    (return))))
    (%finalizer-budget 0)))

(defun record-finalizer-warning ()
  "Add the one warning of the finalizers that failed during this job, if any."
  (when (plusp *finalizer-failures*)
    (let ((first (format nil "~A: ~A" (type-name *finalizer-error*) (condition-message *finalizer-error*))))
      (push (if (= *finalizer-failures* 1)
                (format nil "FINALIZER-ERROR: ~A (in a finalizer; its error was ignored)" first)
                (format nil "FINALIZER-ERROR: ~D finalizers failed; their errors were ignored (the first: ~A)"
                        *finalizer-failures* first))
            *warnings*))))

(defun record-warning (condition)
  (push (format nil "~A: ~A" (type-name condition) (condition-message condition)) *warnings*)
  (let ((restart (find-restart 'muffle-warning condition)))
    (when restart (invoke-restart restart))))
