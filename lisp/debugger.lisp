;;;; debugger.lisp — the REPL's debugger: an unhandled error in an
;;;; evaluation typed in the REPL stops where it was signalled while the
;;;; person chooses a restart in Emacs (*sly-agent-q debugger*).
;;;;
;;;; Only evaluations the REPL submits with its debugger flag get here
;;;; (*REPL-DEBUGGER*); a model's evaluate_lisp keeps its [ERROR] text.  The
;;;; question goes to Emacs through EVAL-IN-EMACS; Emacs shows the buffer and
;;;; answers later, from the person's command, so Emacs is not blocked and
;;;; the job's time limit is paused while the person thinks.
;;;;
;;;; ECL signals UNBOUND-VARIABLE and UNDEFINED-FUNCTION where they cannot
;;;; be continued, so the REPL establishes USE-VALUE and STORE-VALUE around
;;;; each form it evaluates: they evaluate the form again, with the value.

(in-package "AGENT-Q")

(defun abort-text (condition)
  (format nil "; Evaluation aborted on ~A: ~A" (type-name condition)
          (without-object-addresses (one-line (condition-message condition)))))

(defun repl-eval-form (form)
  "Evaluate FORM, typed in the REPL, and return the list of its values.
Establishes ABORT (back to the prompt) and, for an unbound variable or an
undefined function, USE-VALUE and STORE-VALUE, which evaluate FORM again."
  (let ((bindings '()) (functions '()) (outer (compute-restarts)))
    (loop
      (let ((cell nil) (condition nil))
        (restart-case
            (return
              (let ((*outer-restarts* outer))
                (handler-bind ((serious-condition (lambda (c)
                                                    (setf condition c)
                                                    (when (typep c 'cell-error) (setf cell c)))))
                  (progv (mapcar #'car bindings) (mapcar #'cdr bindings)
                    (if functions
                        ;; USE-VALUE for a function: the global definition,
                        ;; for this evaluation only.
                        (let ((saved (loop for (name) in functions
                                           collect (and (fboundp name) (fdefinition name)))))
                          (unwind-protect
                               (progn
                                 (loop for (name . function) in functions
                                       do (setf (fdefinition name) function))
                                 (multiple-value-list (eval-form form)))
                            (loop for (name) in functions
                                  for old in saved
                                  do (if old (setf (fdefinition name) old) (fmakunbound name)))))
                        (multiple-value-list (eval-form form)))))))
          (use-value (value)
            :test (lambda (c) (restart-applies-p c cell))
            :report (lambda (stream)
                      (format stream "Use a value for ~:[the function~;the variable~] ~S, evaluating the form again"
                              (typep cell 'unbound-variable) (and cell (cell-error-name cell))))
            (if (typep cell 'unbound-variable)
                (push (cons (cell-error-name cell) value) bindings)
                (push (cons (cell-error-name cell) (coerce-function value)) functions)))
          (store-value (value)
            :test (lambda (c) (restart-applies-p c cell))
            :report (lambda (stream)
                      (format stream "Set ~:[the function~;the variable~] ~S to a value for good, evaluating the form again"
                              (typep cell 'unbound-variable) (and cell (cell-error-name cell))))
            (if (typep cell 'unbound-variable)
                (setf (symbol-value (cell-error-name cell)) value)
                (setf (fdefinition (cell-error-name cell)) (coerce-function value))))
          (abort ()
            :report "Return to the REPL's prompt (the session keeps its definitions)"
            (throw '%evaluation-failed (abort-text condition))))))))

(defun restart-applies-p (condition cell)
  "The :TEST of USE-VALUE and STORE-VALUE: CONDITION is CELL, an unbound
variable or undefined function.  With no condition, true: ECL's
INVOKE-RESTART looks the restart up without one."
  (or (null condition)
      (and (eq condition cell) (cell-error-restartable-p condition))))

(defun cell-error-restartable-p (condition)
  (and (typep condition '(or unbound-variable undefined-function))
       (symbolp (cell-error-name condition))))

(defun coerce-function (value)
  (if (functionp value) value (fdefinition value)))

(defun job-restarts (condition)
  "CONDITION's restarts established inside the REPL's form, innermost first."
  (remove-if (lambda (restart) (member restart *outer-restarts*))
             (compute-restarts condition)))

(defun restart-parts (restart)
  "RESTART's name and report, as text, as the [Restarts] lines show them."
  (let ((*package* (printing-package)))
    (values (prin1-to-string (restart-name restart))
            (without-object-addresses (one-line (safe-princ restart))))))

(defun restart-line (restart)
  (multiple-value-bind (name report) (restart-parts restart)
    (format nil "[~A] ~A" name report)))

(defun restart-wants-value-p (restart)
  (member (restart-name restart) '(use-value store-value)))

(defun repl-debug (condition)
  "Show CONDITION in the REPL's debugger and do what the person chooses:
invoke a restart (which does not return here) or, when Emacs cannot ask
or the person's choice failed to be made, return to let the error fail
the evaluation as usual."
  (let* ((restarts (job-restarts condition))
         (user-frames (user-frames))
         (frames (debugger-frames user-frames))
         (note nil)
         (page nil)
         (*in-repl-debugger* t))
    (when (null restarts)
      (return-from repl-debug nil))
    (loop
      (let ((answer (handler-case
                        (eval-in-emacs
                         (list 'sly-agent-q--debugger-enter
                               (type-name condition)
                               (without-object-addresses (condition-message condition))
                               (list 'quote (mapcar (lambda (r) (restart-line r)) restarts))
                               (list 'quote (mapcar (lambda (restart) (if (restart-wants-value-p restart) t nil))
                                                    restarts))
                               (list 'quote (or frames '("(no user frames)")))
                               note
                               (list 'quote page)))
                      (serious-condition () (return-from repl-debug nil)))))
        (setf page nil)
        ;; ANSWER: "INDEX" or "INDEX VALUE-FORM" (a restart), "e FRAME
        ;; CODE" (evaluate CODE in a frame: its value is the next note), or
        ;; "i ..." (an object for the inspector: the next PAGE, or a note
        ;; saying why not; the worker is this job's meanwhile, so the
        ;; inspector asks here for the parts it drills into).
        (cond
          ((and (> (length answer) 2) (string= "e " answer :end2 2))
           (setf note (evaluate-in-frame-text user-frames (subseq answer 2))))
          ((and (> (length answer) 2) (string= "i " answer :end2 2))
           (multiple-value-bind (object problem) (debugger-object-to-inspect condition user-frames (subseq answer 2))
             (if problem
                 (setf note problem)
                 (setf page (inspector-page object)))))
          (t
            (multiple-value-bind (index end) (parse-integer answer :junk-allowed t)
              ;; -1: no restart to abort with (the error came outside the
              ;; forms, as the code was read): fail as usual.
              (when (or (null restarts) (eql index -1))
                (return-from repl-debug nil))
              (let ((restart (and index (< -1 index (length restarts)) (nth index restarts)))
                    (value-text (string-trim '(#\Space #\Newline #\Tab) (subseq answer end))))
                (setf note
                      (cond ((null restart) (format nil "There is no restart ~A." answer))
                            ((restart-wants-value-p restart)
                             (multiple-value-bind (value problem) (read-and-evaluate-value value-text)
                               (or problem (invoke-restart restart value))))
                            (t
                             (handler-case (invoke-restart restart)
                               (serious-condition (c)
                                 (format nil "Invoking ~A failed: ~A" (restart-name restart)
                                         (one-line (condition-message c))))))))))))))))

(defun debugger-object-to-inspect (condition user-frames text)
  "The object the REPL debugger's `i' names by TEXT: \"c\" the CONDITION,
\"FRAME CODE\" the value of CODE evaluated in frame FRAME of USER-FRAMES
\(as `e' evaluates), \"id ID\" an object the inspector shows already (a
part it drills into).  Returns the object, or NIL and a note saying why
there is none."
  (handler-case
      (cond ((string= text "c") (values condition nil))
            ((and (> (length text) 3) (string= "id " text :end2 3))
             (values (inspected-object (parse-integer text :start 3)) nil))
            (t (multiple-value-bind (values problem) (frame-form-values user-frames text)
                 (if problem (values nil problem) (values (first values) nil)))))
    (serious-condition (c)
      (values nil (format nil "Nothing to inspect: ~A: ~A" (type-name c) (one-line (condition-message c)))))))

;;; The frames: locals, source, evaluation in a frame

(defun frame-locals (ihs)
  "The lexical variables of the frame IHS and their values, innermost
first, as ((NAME . VALUE) ...): ECL keeps them for bytecodes frames
only (a native function's frame has none)."
  (let ((env (ignore-errors (si::decode-ihs-env (si::ihs-env ihs)))))
    (loop for entry in (if (listp env) env '())
          when (and (consp entry) (symbolp (car entry)) (car entry) (not (keywordp (car entry))))
            collect entry)))

(defun frame-source (name)
  "(FILE LINE) of the function NAME's definition when the xref index knows
its file (a file compiled or loaded through the session), else NIL."
  (let ((definition (and (symbolp name)
                         (find-if (lambda (d) (and (eq (xref-definition-kind d) :function)
                                                   (xref-definition-file d)))
                                  (gethash name *xref-defined*)))))
    (and definition
         (list (namestring (xref-definition-file definition)) (or (xref-definition-line definition) 1)))))

(defun debugger-frames (user-frames)
  "USER-FRAMES (USER-FRAMES) as the debugger shows them: (LINE LOCALS
SOURCE) each, LINE \"N: (NAME)\", LOCALS lines \"NAME = value\" (or
one saying why there are none), SOURCE (FILE LINE) or NIL."
  (loop for line in (backtrace-lines (mapcar #'car user-frames))
        for (name . ihs) in user-frames
        collect (list line
                      (let ((locals (frame-locals ihs))
                            (*package* (printing-package)))
                        (cond (locals (loop for (variable . value) in locals
                                            collect (format nil "~A = ~A" (prin1-to-string variable)
                                                            (without-object-addresses (one-line-capped (printed value) 200)))))
                              ((typep (si::ihs-fun ihs) 'compiled-function)
                               '("(native code: ECL keeps no locals in this frame)"))
                              (t '("(no local variables)"))))
                      (frame-source name))))

(defun frame-form-values (user-frames text)
  "TEXT, \"FRAME CODE\", evaluated with frame FRAME's local variables bound
to their values (a copy: SETQ changes the copy): the list of its values,
or NIL and a note, \"Frame FRAME: evaluating CODE failed: ...\", saying
what went wrong.  The third value is FRAME, the fourth CODE."
  (multiple-value-bind (index end) (parse-integer text :junk-allowed t)
    (let ((frame (and index (< -1 index (length user-frames)) (nth index user-frames)))
          (code (string-trim '(#\Space #\Newline #\Tab) (subseq text end))))
      (if (null frame)
          (values nil (format nil "There is no frame ~A." (subseq text 0 end)) index code)
          (handler-case
              (let* ((form (let ((*read-eval* t)) (read-from-string code)))
                     ;; Innermost first; a name bound twice: the inner one.
                     (locals (remove-duplicates (frame-locals (cdr frame)) :key #'car :from-end t)))
                (values (multiple-value-list
                         (eval-form `(let ,(mapcar (lambda (local) (list (car local) (list 'quote (cdr local))))
                                                   (reverse locals))
                                       ,form)))
                        nil index code))
            (serious-condition (c)
              (values nil (format nil "Frame ~D: evaluating ~A failed: ~A: ~A" index (one-line-capped code 100)
                                  (type-name c) (one-line (condition-message c)))
                      index code)))))))

(defun evaluate-in-frame-text (user-frames text)
  "TEXT, \"FRAME CODE\", evaluated with frame FRAME's local variables bound
to their values (FRAME-FORM-VALUES): the note the debugger shows,
\"Frame FRAME: CODE => value\" or what went wrong."
  (multiple-value-bind (values problem index code) (frame-form-values user-frames text)
    (or problem
        (format nil "Frame ~D: ~A => ~{~A~^, ~}" index (one-line-capped code 100)
                (mapcar (lambda (value) (without-object-addresses (one-line-capped (printed value) 300)))
                        (or values '(nil)))))))

(defun read-and-evaluate-value (text)
  "The value of the form in TEXT, or NIL and what went wrong."
  (handler-case
      (let ((*read-eval* t))
        (multiple-value-bind (form end) (read-from-string text)
          (declare (ignore end))
          (values (eval-form form) nil)))
    (serious-condition (c)
      (values nil (format nil "The value could not be had (~A): ~A" (type-name c)
                          (one-line (condition-message c)))))))

(defun maybe-repl-debug (condition)
  "Enter the REPL's debugger for CONDITION when this evaluation has one."
  (when (and *repl-debugger* (not *in-repl-debugger*)
             (not (typep condition '(or ext:stack-overflow ext:storage-exhausted))))
    (repl-debug condition)))

(define-condition repl-interrupt (condition) ()
  (:report "Interrupted by C-c C-c in the REPL")
  (:documentation "What the REPL's debugger shows after C-c C-c (not an error)."))

(defun repl-break ()
  "Run in the worker, where the REPL's evaluation was interrupted by C-c
C-c (INTERRUPT-JOB): show the interrupt in the REPL's debugger with
CONTINUE, which returns here and so lets the evaluation go on, ABORT,
back to the prompt, and the evaluation's own restarts.  Nothing when the
evaluation has no debugger or is already in it."
  ;; Before the job's debugger is set up this does nothing, and the host
  ;; sends the interrupt again.  Once here, it is taken: %BREAK-TAKEN is
  ;; true for one delivery of each C-c C-c, so a repeat that was already
  ;; on its way (or lands while the debugger waits for the person) does
  ;; not stop the evaluation a second time after CONTINUE.
  (when (and *repl-debugger* (%break-taken) (not *in-repl-debugger*))
    (let ((condition (make-condition 'repl-interrupt))
          ;; Our ABORT stands for the REPL's (which would report no
          ;; condition); ECL also sometimes runs an interrupt that landed
          ;; inside its C code with the REPL's restarts out of sight.
          (*outer-restarts* (append (remove 'abort (compute-restarts) :key #'restart-name :test-not #'eq)
                                    *outer-restarts*)))
      (restart-case
          (with-interrupts-allowed
            (with-simple-restart (continue "Continue the evaluation from where it was interrupted")
              (repl-debug condition)))
        (abort ()
          :report "Return to the REPL's prompt (the session keeps its definitions)"
          (throw '%evaluation-failed (abort-text condition)))))))
