;;;; evaluate.lisp — the evaluate_lisp tool's Lisp half: read and evaluate
;;;; the forms of a call one at a time and build the result text of the
;;;; contract ([stdout], [stderr], [warnings], => values).
;;;;
;;;; Everything evaluated here runs inside Emacs's process, so nothing may
;;;; exit, enter the interactive debugger or read the terminal: those all
;;;; become error results.  Functions named %… are defined in C++
;;;; (module/ecl/runtime_*.cpp, listed in runtime_state.hpp).

(in-package "AGENT-Q")

(defvar *session-package* (find-package "CL-USER")
  "The package evaluate_lisp uses when the call names none; IN-PACKAGE in
evaluated code changes it for the following calls.")
(defvar *values-stream* nil
  "A string output stream VALUES-TEXT reuses for plain values: making one
per evaluation cost more than printing a small value.")

(declaim (inline decimal-integer-p))
(defun decimal-integer-p (value)
  "True when VALUE is an integer that PRIN1 would print as its plain
decimal digits (base 10, no radix marker) and that DECIMAL-TEXT can write."
  (and (typep value '(integer #.(- most-positive-fixnum) #.most-positive-fixnum))
       (eql *print-base* 10) (not *print-radix*)))

(defun decimal-text (prefix n)
  "PREFIX (of base characters) then N's decimal digits as PRIN1 prints them, for
N of DECIMAL-INTEGER-P: made without a stream, for a tenth of what PRIN1
costs."
  (declare (type (integer #.(- most-positive-fixnum) #.most-positive-fixnum) n)
           (string prefix))
  (let* ((magnitude (abs n))
         (digits (do ((rest (floor magnitude 10) (floor rest 10))
                      (count 1 (1+ count)))
                     ((zerop rest) count)
                   (declare (fixnum rest count))))
         (start (+ (length prefix) (if (minusp n) 1 0)))
         (text (make-string (+ start digits) :element-type 'base-char)))
    (declare (fixnum magnitude digits start))
    (replace text prefix)
    (when (minusp n) (setf (schar text (1- start)) #\-))
    (do ((rest magnitude (floor rest 10))
         (at (+ start digits -1) (1- at)))
        ((< at start) text)
      (declare (fixnum rest at))
      (setf (schar text at) (code-char (+ 48 (mod rest 10)))))))

(defun print-value (value stream)
  "Print VALUE readably-ish per the contract, bounded by the capture limit."
  (cond
    ;; The usual value, an integer, as PRIN1 writes it.
    ((decimal-integer-p value)
     (write-string (decimal-text "" value) stream))
    ((or (consp value) (typep value '(and array (not string))))
     (let ((*print-length* 100) (*print-level* 10) (*print-circle* t)
           (*print-pretty* t) (*print-readably* nil))
       (prin1 value stream)))
    ;; Atoms print the same without the pretty printer and circle
    ;; detection, which cost more than the rest of a small evaluation.
    (t
     (let ((*print-length* 100) (*print-level* 10) (*print-circle* nil)
           (*print-pretty* nil) (*print-readably* nil))
       (prin1 value stream)))))

(defun plain-value-p (value)
  "True when printing VALUE runs no user code (no PRINT-OBJECT method), so
no user code can keep the stream it is printed to."
  (or (numberp value) (characterp value) (symbolp value) (stringp value)))

(defun values-text (values any output-limit)
  "The => lines for VALUES, cut at OUTPUT-LIMIT characters with a marker."
  (let ((text (cond ((not any) "; No forms to evaluate")
                    ((null values) "; No values")
                    ;; The usual result, one integer, without a stream.
                    ((and (null (cdr values)) (decimal-integer-p (car values)))
                     (decimal-text "=> " (car values)))
                    (t (let* ((plain (loop for value in values always (plain-value-p value)))
                              (kept (and plain *values-stream*))
                              (out (or kept (make-string-output-stream))))
                         (when kept (setf *values-stream* nil))
                         (loop for (value . more) on values
                               do (write-char #\= out) (write-char #\> out) (write-char #\Space out)
                                  (print-value value out)
                                  (when more (terpri out)))
                         (let ((text (get-output-stream-string out)))
                           ;; Not kept when it grew big (its buffer stays that
                           ;; big), nor when printing failed half way.  ECL
                           ;; keeps the column after GET-OUTPUT-STREAM-STRING,
                           ;; which only the pretty printer would heed: plain
                           ;; values are printed without it.
                           (when (and plain (< (length text) 4096))
                             (setf *values-stream* out))
                           text))))))
    (if (> (length text) output-limit)
        (format nil "~A~%~A" (subseq text 0 output-limit)
                (truncation-marker (- (length text) output-limit) output-limit))
        text)))

(defun plain-function-name-p (operator)
  "True when OPERATOR names a global function: not a macro, nor a special
operator."
  (and (symbolp operator) (fboundp operator)
       (not (special-operator-p operator)) (not (macro-function operator))))

(defun simple-form-p (form depth)
  "True when FORM evaluates the same without ECL's bytecode compiler: a
self-evaluating object, a keyword, T, NIL, a QUOTE form, or a call of a
global function (not a macro or special operator) on at most 32 such forms,
nested at most DEPTH calls deep."
  (declare (fixnum depth))
  (cond ((consp form)
         (let ((operator (car form)) (arguments (cdr form)))
           (if (eq operator 'quote)
               (and (consp arguments) (null (cdr arguments)))
               (and (plusp depth) (plain-function-name-p operator)
                    (do ((rest arguments (cdr rest)) (count 0 (1+ count)))
                        ((atom rest) (null rest))
                      (declare (fixnum count))
                      (unless (and (< count 32) (simple-form-p (car rest) (1- depth)))
                        (return nil)))))))
        ((symbolp form) (or (keywordp form) (eq form t) (eq form nil)))
        (t t)))

(defun simple-eval (form)
  "Evaluate FORM, for which SIMPLE-FORM-P is true: arguments left to right,
then the function.  Compiling such a form to bytecodes cost more than the
rest of a small evaluation (as in SBCL, whose EVAL skips its compiler for
these too)."
  (cond ((atom form) form)
        ((eq (car form) 'quote) (second form))
        ;; Arguments that are all atoms run no code that could redefine
        ;; the operator SIMPLE-FORM-P looked at; two or fewer are passed
        ;; without a list.
        ((and (consp (cdr form)) (null (cddr form)) (atom (second form)))
         (funcall (fdefinition (car form)) (second form)))
        ((and (consp (cdr form)) (consp (cddr form)) (null (cdddr form))
              (atom (second form)) (atom (third form)))
         (funcall (fdefinition (car form)) (second form) (third form)))
        (t (let ((operator (car form))
                 (arguments (mapcar (lambda (f) (simple-eval f)) (cdr form))))
             (if (or (loop for argument in (cdr form) always (atom argument))
                     (plain-function-name-p operator))
                 (apply (fdefinition operator) arguments)
                 ;; An argument redefined the operator: EVAL decides.
                 (eval (cons operator (mapcar (lambda (value) (list 'quote value)) arguments))))))))

(defun eval-form (form)
  (if (simple-form-p form 4)
      (simple-eval form)
      (eval form)))

(defun read-eval-forms (code output-limit &optional forms)
  "Read and evaluate the forms of CODE one at a time, so an IN-PACKAGE takes
effect before the next form is read.  Returns the => text of the last
form's values and the package in force at the end.  FORMS, when given,
are CODE's forms already read (an agent's one form, read to be vetted)."
  (let ((values '()) (any nil))
    (flet ((run (form)
             (setf - form
                   values (if *repl-debugger*
                              (repl-eval-form form) ; debugger.lisp: with restarts
                              (multiple-value-list (eval-form form)))
                   any t)
             ;; Definitions go into the who-calls index (xref.lisp).
             (xref-note form)
             ;; MCP clients hear that the definitions changed (session.lisp).
             (note-definitions-form form)
             ;; A DEFUN goes to the background native compiler (tiering.lisp).
             (tiering-note form)
             ;; The REPL's history, as a listener keeps it; the
             ;; inspector's own look-ups leave it alone, and so does the
             ;; runtime's warm-up before a call (Runtime::wake_ahead).
             (unless (and (consp form)
                          (or (eq (car form) 'inspector-page-for-emacs)
                              (and (eq (car form) 'quote) (eq (second form) 'warm-up))))
               (setf +++ ++ ++ + + form
                     /// // // / / values
                     *** ** ** * * (first values)))))
      (if forms
          (dolist (form forms) (run form)) ; no string stream to make: ~0.7 us
          (with-input-from-string (in code)
            (loop with eof = '#:eof
                  for form = (read in nil eof)
                  until (eq form eof)
                  do (run form)))))
    (values (values-text values any output-limit) *package* values)))

(defun load-source (file)
  "LOAD the Lisp source FILE as LOAD does (*LOAD-PATHNAME*, *LOAD-TRUENAME*,
*PACKAGE* and *READTABLE* rebound; each form read, then evaluated), and
note each form as READ-EVAL-FORMS does: its DEFUNs and DEFMETHODs go to the
background native compiler as evaluated ones do (ECL's LOAD of source
leaves them bytecodes).  Returns FILE's truename."
  (let* ((truename (truename file))
         (*load-pathname* (merge-pathnames file))
         (*load-truename* truename)
         (*package* *package*)
         (*readtable* *readtable*)
         (eof '#:eof))
    (with-open-file (in truename :external-format :default)
      (loop for form = (read in nil eof)
            until (eq form eof)
            do (eval-form form)
               (tiering-note form)))
    truename))

(defun live-package-p (object)
  "True when OBJECT is a package that was not deleted."
  (%live-package-p object))

(defun section (stream name text)
  (format stream "[~A]~%~A~%~%" name (string-right-trim '(#\Newline) text)))

(defun no-output-p ()
  (and (null *warnings*)
       (or (not *output-written*)
           (and (capture-empty-p *stdout-capture*) (capture-empty-p *stderr-capture*)))))

(defun output-sections (stream)
  (unless (capture-empty-p *stdout-capture*)
    (section stream "stdout" (capture-contents *stdout-capture*)))
  (unless (capture-empty-p *stderr-capture*)
    (section stream "stderr" (capture-contents *stderr-capture*)))
  (when *warnings*
    (section stream "warnings" (format nil "~{~A~^~%~}" (reverse *warnings*)))))

(defun output-sections-after-error (stream)
  "Output captured before an error or interrupt, after a blank line."
  (let ((sections (with-output-to-string (s) (output-sections s))))
    (when (plusp (length sections))
      (format stream "~%~%~A" (string-right-trim '(#\Newline) sections)))))

(defmacro with-job-environment ((package) &body body)
  "Run BODY as a job's code runs: output captured, no input, no debugger,
in PACKAGE; warnings recorded; a serious condition throws its [ERROR] text
to %EVALUATION-FAILED.  Finalizers the collector called for meanwhile run
after BODY, still inside (see RUN-PENDING-FINALIZERS)."
  `(let ((*standard-output* *stdout*)
         (*error-output* *stderr*)
         (*trace-output* *stderr*)
         (*standard-input* *null-input*)
         (*query-io* *null-io*)
         (*debug-io* *null-io*)
         (*terminal-io* *null-io*)
         (*package* ,package)
         (*debugger-hook* (load-time-value #'debugger-hook t))
         (ext:*invoke-debugger-hook* (load-time-value #'debugger-hook t))
         ;; What (HANDLER-BIND ((WARNING #'RECORD-WARNING)
         ;; (SERIOUS-CONDITION #'FAIL)) …) binds, its handler cluster made
         ;; once instead of consed for every job.
         (si:*handler-clusters* (cons (load-time-value (list (cons 'warning #'record-warning)
                                                             (cons 'serious-condition #'fail)))
                                      si:*handler-clusters*)))
     (multiple-value-prog1 (progn ,@body)
       (when *pending-finalizers* (run-pending-finalizers)))))

(defun reset-job-state (output-limit)
  "Empty the captures and the per-job records before a job."
  (cond (*output-written*
         ;; Cleared first: what another thread writes meanwhile sets it again.
         (setf *output-written* nil)
         (capture-reset *stdout-capture* output-limit)
         (capture-reset *stderr-capture* output-limit))
        (t
         ;; Still empty since the last reset: only the limit and the mode
         ;; may differ.
         (let ((out *stdout-capture*) (err *stderr-capture*))
           (setf (capture-limit out) output-limit (capture-streaming out) nil
                 (capture-limit err) output-limit (capture-streaming err) nil))))
  ;; Set only what the last job changed: setting a special variable costs
  ;; more than reading it.
  (when *warnings* (setf *warnings* '()))
  (when *stack-overflowed* (setf *stack-overflowed* nil))
  (when *failure-in-flight* (setf *failure-in-flight* nil))
  (when *error-structure* (setf *error-structure* nil))
  (unless (eql *finalizer-failures* 0) (setf *finalizer-failures* 0))
  (when *finalizer-error* (setf *finalizer-error* nil)))

(defvar *want-structure* nil
  "True while an evaluation's caller (an MCP client) also takes its result
as structured data: see EVALUATION-STRUCTURE.")

(defvar *copy-output* nil
  "True while an evaluation's caller (an MCP client following its progress)
takes a copy of its output as it is printed; the result keeps it all.")

(defun value-text (value limit)
  "VALUE as print-value prints it, cut at LIMIT characters."
  (let ((text (handler-case (with-output-to-string (out) (print-value value out))
                (serious-condition () "#<the value could not be printed>"))))
    (if (> (length text) limit) (subseq text 0 limit) text)))

(defun evaluation-structure (values package output-limit)
  "The structured result of an evaluation that returned VALUES in PACKAGE,
as a JSON object's text (evaluate_lisp's outputSchema): values, each
printed as on its => line; stdout, stderr and warnings when there were
any; the package the session is in after it."
  (let ((object (make-hash-table :test #'equal))
        (*package* (if (live-package-p package) package (printing-package))))
    (setf (gethash "values" object)
          (map 'vector (lambda (value) (value-text value output-limit)) values))
    (unless (capture-empty-p *stdout-capture*)
      (setf (gethash "stdout" object) (capture-contents *stdout-capture*)))
    (unless (capture-empty-p *stderr-capture*)
      (setf (gethash "stderr" object) (capture-contents *stderr-capture*)))
    (when *warnings*
      (setf (gethash "warnings" object) (coerce (reverse *warnings*) 'vector)))
    (setf (gethash "package" object) (package-name *package*))
    (json-text object)))

(defun evaluate-string (code package-name capture-time output-limit &optional interactive-key)
  "Evaluate the forms in the string CODE as evaluate_lisp does.
Returns two values: true on success, and the result text of the contract
\([stdout], [stderr], [warnings] sections, => values, timing line), or on
failure the [ERROR] text.
INTERACTIVE-KEY, an integer, is given for the REPL's evaluations: their
output goes to the host as it is written (and is left out of the result),
and their values are kept under that key for REPL-VALUE."
  (reset-job-state output-limit)
  (cond (interactive-key
         (setf (capture-streaming *stdout-capture*) t
               (capture-streaming *stderr-capture*) t))
        (*copy-output*
         (setf (capture-streaming *stdout-capture*) :copy
               (capture-streaming *stderr-capture*) :copy)))
  (unless (live-package-p *session-package*)
    ;; Deleted by evaluated code: start over in CL-USER (or CL), and say so.
    (setf *session-package* (printing-package))
    (push (format nil "WARNING: the session's package was deleted; now in ~A."
                  (package-name *session-package*))
          *warnings*))
  (let* ((start-real (if capture-time (get-internal-real-time) 0))
         (start-run (if capture-time (get-internal-run-time) 0))
         (start-gc (if capture-time (%gc-time-ms) 0))
         (start-bytes (if capture-time (si::gc-stats t) 0))
         (package (if package-name
                      (find-package (string-upcase package-name))
                      *session-package*))
         (end-package nil)
         (values-text nil)
         (result-values nil)
         (error-text
           (failure-text
            (catch '%evaluation-failed
             (unless package
               (throw '%evaluation-failed
                 (format nil "[ERROR] PACKAGE-ERROR~%Package ~S does not exist."
                         package-name)))
             (with-job-environment (package)
               (let ((forms nil))
                 ;; An agent's code is read first (agent-code.lisp).
                 (when (eq (%job-origin) :agent)
                   (setf *job-code* code)
                   (multiple-value-bind (run text read) (vet-agent-code code package-name)
                     (cond ((not run) (throw '%evaluation-failed text))
                           ((eq text code) (setf forms read))
                           (t (setf code text)))))
                 (multiple-value-setq (values-text end-package result-values)
                   (read-eval-forms code output-limit forms))))
             nil))))
    ;; IN-PACKAGE in the code carries over to the next call; so does the
    ;; session package when the call named none.
    (when (and (not (eq end-package *session-package*)) ; else nothing to change
               (live-package-p end-package)
               (or (null package-name) (not (eq end-package package))))
      (setf *session-package* end-package))
    (record-finalizer-warning)
    (when (and interactive-key values-text)
      (remember-repl-values interactive-key result-values))
    ;; A failure's structure, when its text was made from its condition
    ;; here (else evaluate_lisp reads the text: a denial, a timeout).
    (when (and *want-structure* error-text *error-structure* (eq (car *error-structure*) error-text))
      (%set-job-structure (error-structure-text (cdr *error-structure*))))
    (when (and *want-structure* values-text)
      (if (and (not capture-time) result-values (null (cdr result-values)) (no-output-p)
               (<= (length values-text) output-limit))
          ;; The usual answer, one value and nothing printed: the host
          ;; makes it from the => line, which is the whole text.
          (%set-one-value-structure (package-name *session-package*))
          (%set-job-structure (evaluation-structure result-values *session-package* output-limit))))
    (if (and values-text (not capture-time) (no-output-p))
        (values t values-text)          ; the common case: nothing else to say
        (values (and values-text t)
                (with-output-to-string (out)
                  (cond (values-text
                         (output-sections out)
                         (write-string values-text out))
                        (t
                         (write-string error-text out)
                         (output-sections-after-error out)))
                  (when capture-time
                    (format out "~%; Timing: ~Dms real, ~Dms run, ~Dms GC, ~D bytes consed"
                            (round (* 1000 (- (get-internal-real-time) start-real))
                                   internal-time-units-per-second)
                            (round (* 1000 (- (get-internal-run-time) start-run))
                                   internal-time-units-per-second)
                            (- (%gc-time-ms) start-gc)
                            (max 0 (- (si::gc-stats t) start-bytes)))))))))

(defvar *repl-values-kept* 100
  "How many REPL evaluations keep their values for REPL-VALUE.")
(defvar *repl-values* (make-hash-table)
  "The values of the last *REPL-VALUES-KEPT* REPL evaluations, by key.")
(defvar *repl-value-keys* '() "The keys of *REPL-VALUES*, newest first.")

(defun remember-repl-values (key values)
  (setf (gethash key *repl-values*) values)
  (push key *repl-value-keys*)
  (let ((old (nthcdr (max 0 (1- *repl-values-kept*)) *repl-value-keys*)))
    (when (cdr old)
      (dolist (gone (cdr old)) (remhash gone *repl-values*))
      (setf (cdr old) nil))))

(defun repl-value (key &optional (index 0))
  "The INDEXth value (from 0) of the REPL evaluation KEY, the job id of the
REPL's asynchronous call.  The values of the last *REPL-VALUES-KEPT*
evaluations are kept; an older one is an error."
  (multiple-value-bind (values found) (gethash key *repl-values*)
    (unless found
      (error "The values of REPL evaluation ~A are no longer kept (only the last ~D are)."
             key *repl-values-kept*))
    (unless (< -1 index (length values))
      (error "REPL evaluation ~A returned ~D value~:P; there is no value ~A." key (length values) index))
    (nth index values)))

(defun call-tool-handler (function arguments output-limit)
  "Call FUNCTION, the Lisp handler of a tool, with ARGUMENTS (a hash table
with string keys) as a job's code runs (see WITH-JOB-ENVIRONMENT).  The
handler returns its result, a string or any value to print, or NIL and an
error message; a second value beside a result is a message only when it
is a string (GETHASH's found flag or FIND-SYMBOL's status is none).
Returns true and the result text, or NIL and the error text; output the
handler printed comes as in evaluate_lisp: before a result, after an
error."
  (reset-job-state output-limit)
  (let* ((value nil) (message nil)
         (error-text (failure-text
                      (catch '%evaluation-failed
                       (with-job-environment (*session-package*)
                         ;; An error is the tool's answer, "Tool error: …",
                         ;; as the contracts have it; other serious
                         ;; conditions (a stack overflow) are reported as
                         ;; an evaluation's.
                         (handler-case (multiple-value-setq (value message) (funcall function arguments))
                           (error (condition)
                             (setf value nil
                                   message (format nil "Tool error: ~A" (condition-message condition))))))
                       nil)))
         (error-message (and message (or (null value) (stringp message)) message))
         (success (and (null error-text) (null error-message)))
         (text (cond (error-text error-text)
                     (error-message (princ-to-string error-message))
                     ((stringp value) value)
                     (t (format-tool-result value)))))
    (record-finalizer-warning)
    (values success
            (cond ((no-output-p) text)
                  (success (with-output-to-string (out)
                             (output-sections out)
                             (write-string text out)))
                  (t (with-output-to-string (out)
                       (write-string text out)
                       (output-sections-after-error out)))))))
