;;;; repl-tools.lisp — the Agent-Q execution tools: eval_form, compile_form,
;;;; get_last_error and get_repl_history.
;;;;
;;;; eval_form evaluates as evaluate_lisp does; compile_form compiles as
;;;; C-c C-c does in SLY (the whole text through COMPILE-FILE, so the
;;;; compiler's findings come back as warnings) and loads the result.  Both
;;;; record the REPL history and the last error, which the other two tools
;;;; show.  evaluate_lisp records nothing: it stays as fast as it is.

(in-package "AGENT-Q")

(defparameter *history-size* 50 "REPL history entries kept.")

(defstruct (history-entry (:constructor make-history-entry (tool form success result)))
  tool form success result (time (get-universal-time)))

(defvar *repl-history* '() "Newest first: HISTORY-ENTRYs of eval_form and compile_form.")
(defvar *last-error-record* nil
  "The last failure of eval_form or compile_form: a plist (:tool :form :text), or NIL.")

(defun clear-repl-records ()
  "Forget the REPL history, the REPL buffer's values and the last error (reset_session)."
  (clrhash *repl-values*)
  (setf *repl-history* '() *repl-value-keys* '() *last-error-record* nil))

(defun record-history (tool form success text)
  (push (make-history-entry tool form success text) *repl-history*)
  (when (> (length *repl-history*) *history-size*)
    (setf *repl-history* (subseq *repl-history* 0 *history-size*)))
  (unless success
    (setf *last-error-record* (list :tool tool :form form :text text))))

(defun form-argument (arguments)
  (let ((form (gethash "form" arguments)))
    (if (and (stringp form) (plusp (length (string-trim '(#\Space #\Tab #\Newline) form))))
        form
        nil)))

(defparameter +evaluation-package-parameter+
  '(:name "package" :type :string
    :description "The package to evaluate in (default: the session's current package).")
  "The parameter of the tools that evaluate code, naming its package.")

(define-built-in-tool "eval_form"
  "Evaluate Common Lisp code in the running image, in the session's package or another, and record it in the REPL history (see get_repl_history, get_last_error). Returns what evaluate_lisp returns: [stdout]/[stderr]/[warnings] sections and one `=> value` line per value, or an [ERROR] report with a backtrace."
  `((:name "form" :type :string :description "The code to evaluate: one or more forms, e.g. \"(defun add (a b) (+ a b))\".")
    ,+evaluation-package-parameter+)
  :required '("form")
  :safety-level :cautious
  :categories '(:execution)
  :handler (lambda (arguments)
             (let ((form (form-argument arguments)))
               (if (null form)
                   (values nil "The argument \"form\" is empty: give the Lisp code to evaluate.")
                   (multiple-value-bind (success text)
                       (with-nested-job-state
                         (evaluate-string form (gethash "package" arguments) nil (capture-limit *stdout-capture*)))
                     (record-history "eval_form" form success text)
                     (if success text (values nil text)))))))

;;; compile_form

(defun compiler-name ()
  (if (c-compiler-available-p) "ECL's C compiler (native code)" "ECL's bytecodes compiler (no C compiler found)"))

(defun form-line (file position header-lines)
  "The line of the form's text that POSITION of FILE is on."
  (let ((line (and (integerp position) (>= position 0) (file-line file position))))
    (and line (max 1 (- line header-lines)))))

(defun compile-warning-text (condition file)
  "A finding of the compiler as [warnings] shows it: KIND: message (line N)."
  (let ((kind (cond ((typep condition 'style-warning) "STYLE-WARNING")
                    ((typep condition 'warning) "WARNING")
                    (t "ERROR"))))
    (if (compiler-message-p condition)
        (let* ((message (compiler-message-body condition))
               (line (form-line file (ignore-errors (slot-value condition 'position)) 1)))
          (format nil "~A: ~A~@[ (line ~D)~]" kind (without-object-addresses (one-line message)) line))
        (format nil "~A: ~A" kind (without-object-addresses (one-line (condition-message condition)))))))

(defun read-forms (text package)
  "The forms of TEXT read in PACKAGE (what can be read of them)."
  (let ((*package* package) (*read-eval* nil) (forms '()) (eof '#:eof))
    (ignore-errors
     (with-input-from-string (in text)
       (loop for form = (read in nil eof)
             until (eq form eof)
             do (push form forms)
                (when (and (consp form) (eq (car form) 'in-package))
                  (let ((next (find-package (second form))))
                    (when next (setf *package* next)))))))
    (nreverse forms)))

(defmacro with-temporary-source ((source prefix) &body body)
  "Run BODY with SOURCE the name of form.lisp in a fresh directory
/tmp/PREFIX-N/, which goes after, with all BODY wrote there."
  (let ((directory (gensym "DIRECTORY")))
    `(let* ((,directory (format nil "/tmp/~A-~D/" ,prefix (random 1000000000)))
            (,source (format nil "~Aform.lisp" ,directory)))
       (ensure-directories-exist ,directory)
       (unwind-protect (progn ,@body)
         (ignore-errors
          (dolist (file (directory (format nil "~A*.*" ,directory)))
            (delete-file file))
          (si:rmdir ,directory))))))

(defun compile-file-collecting (source package bytecodes on-warning on-error)
  "COMPILE-FILE SOURCE in PACKAGE, silently, with the bytecodes compiler
when BYTECODES, else ECL's C compiler.  Each warning is muffled after
ON-WARNING is called with it; each compiler error message (not a
warning, not a note) goes to ON-ERROR.  Returns COMPILE-FILE's values."
  (handler-bind ((warning (lambda (condition)
                            (funcall on-warning condition)
                            (let ((restart (find-restart 'muffle-warning condition)))
                              (when restart (invoke-restart restart)))))
                 (condition (lambda (condition)
                              (when (and (compiler-message-p condition)
                                         (not (typep condition 'warning))
                                         (not (typep condition (find-symbol "COMPILER-NOTE" "C"))))
                                (funcall on-error condition)))))
    (let ((*compile-verbose* nil) (*compile-print* nil) (*load-verbose* nil) (*load-print* nil)
          (*package* package))
      (progv (let ((symbol (find-symbol "*SUPPRESS-COMPILER-MESSAGES*" "C")))
               (and symbol (list symbol)))
          (list (find-symbol "COMPILER-MESSAGE" "C"))
        (with-load-compiler (bytecodes)
          ;; What the compiler prints repeats its conditions.
          (let ((*standard-output* (make-broadcast-stream))
                (*error-output* (make-broadcast-stream)))
            (compile-file source)))))))

(defun compile-and-load (text package)
  "Compile TEXT (forms, read in PACKAGE) with COMPILE-FILE and load the
result.  Returns true and a summary, or NIL and the [ERROR] text; the
compiler's warnings go to *WARNINGS*."
  (let ((errors '())
        (c-compiler (c-compiler-available-p)))
    (with-temporary-source (source "agent-q-compile")
      (with-open-file (out source :direction :output :if-exists :supersede :external-format :utf-8)
        ;; One header line: the form's lines are the file's less one.
        (format out "(in-package ~S)~%~A~%" (package-name package) text))
      (multiple-value-bind (fasl warnings-p failure-p)
          (compile-file-collecting source package (not c-compiler)
                                   (lambda (condition)
                                     (push (compile-warning-text condition source) *warnings*))
                                   (lambda (condition)
                                     (push (compile-warning-text condition source) errors)))
        (declare (ignore warnings-p))
        (cond ((or (null fasl) (and failure-p errors))
               (values nil (format nil "[ERROR] COMPILE-ERROR~%The code did not compile~@[:~%~{~A~^~%~}~]"
                                   (reverse errors))))
              (t
               (let ((*package* package)) (load fasl :verbose nil :print nil))
               (let ((forms (read-forms text package)))
                 (dolist (form forms) (let ((*package* package)) (xref-note form)))
                 (dolist (warning (append (unused-variable-warnings forms package)
                                          (undefined-function-warnings forms package)))
                   (push warning *warnings*)))
               (values t (format nil "; Compiled with ~A and loaded." (compiler-name)))))))))

(define-built-in-tool "compile_form"
  "Compile Common Lisp code with ECL's compiler and load it, as C-c C-c does in SLY: the compiler's findings (undefined functions, unused or undefined variables, wrong argument counts) come back in a [warnings] section. Use it after writing a definition to catch mistakes that plain evaluation misses. Uses the C compiler (native code) when one is installed, else the bytecodes compiler, and says which."
  '((:name "form" :type :string :description "The code to compile: one or more top-level forms, e.g. a DEFUN.")
    (:name "package" :type :string :description "The package to read and compile in (default: the session's current package)."))
  :required '("form")
  :safety-level :cautious
  :categories '(:execution)
  :handler (lambda (arguments)
           (block compile-form-handler
             (let* ((form (form-argument arguments))
                    (package-name (gethash "package" arguments))
                    (package (lookup-package package-name)))
               (cond ((null form)
                      (values nil "The argument \"form\" is empty: give the Lisp code to compile."))
                     ((null package)
                      (values nil (no-package-text package-name)))
                     ((and (eq (%job-origin) :agent)
                           (multiple-value-bind (run text)
                               (progn (setf *job-code* form) (vet-agent-code form package-name))
                             (if run (progn (setf form text) nil) (return-from compile-form-handler (values nil text))))))
                     (t
                      (multiple-value-bind (success text)
                          (handler-case (compile-and-load form package)
                            (error (condition)
                              (values nil (format nil "[ERROR] ~A~%~A" (type-name condition)
                                                  (without-object-addresses (condition-message condition))))))
                        (record-history "compile_form" form success
                                        (if *warnings*
                                            (format nil "~A~%~{~A~^~%~}" text (reverse *warnings*))
                                            text))
                        (if success text (values nil text)))))))))

;;; The records

(define-built-in-tool "get_last_error"
  "Show the last error of eval_form or compile_form: the code, the condition's type and message, and the backtrace. Use it to look at a failure again after other calls, or when a result was cut."
  '()
  :categories '(:execution)
  :handler (lambda (arguments)
             (declare (ignore arguments))
             (if (null *last-error-record*)
                 "No error recorded: eval_form and compile_form have not failed in this session (evaluate_lisp's errors are not recorded)."
                 (destructuring-bind (&key tool form text) *last-error-record*
                   (format nil "Last error (~A of ~A):~%~A" tool (one-line-capped form 200) text)))))

(defun one-line-capped (text limit)
  (let ((line (one-line text)))
    (if (> (length line) limit) (concatenate 'string (subseq line 0 limit) "…") line)))

(define-built-in-tool "get_repl_history"
  "Show the recent evaluations and compilations of eval_form and compile_form, oldest first: each with its code and its result (or error). Use it to recall what was already tried in this session."
  '((:name "limit" :type :integer :minimum 1 :maximum 50 :default 10 :description "How many of the latest entries (default 10, at most 50)."))
  :categories '(:execution)
  :handler (lambda (arguments)
             (let ((limit (max 1 (min 50 (or (gethash "limit" arguments) 10)))))
               (if (null *repl-history*)
                   "The REPL history is empty: nothing was run with eval_form or compile_form in this session."
                   (let ((entries (reverse (subseq *repl-history* 0 (min limit (length *repl-history*))))))
                     (with-output-to-string (out)
                       (format out "The last ~D of ~D entr~:@P:" (length entries) (length *repl-history*))
                       (loop for entry in entries
                             for index from (1+ (- (length *repl-history*) (length entries)))
                             do (format out "~%~%~D. ~A~:[ (failed)~;~]: ~A~%~A"
                                        index (history-entry-tool entry) (history-entry-success entry)
                                        (one-line-capped (history-entry-form entry) 500)
                                        (let ((result (history-entry-result entry)))
                                          (if (> (length result) 2000)
                                              (concatenate 'string (subseq result 0 2000) "…")
                                              result))))))))))
