;;;; held-errors.lisp — evaluate_lisp with debug: true.  An unhandled
;;;; error does not unwind: the evaluation stops where the error was
;;;; signalled, with its restarts and frames live, and a model (or the
;;;; person) picks a restart later with invoke_restart, looks at the
;;;; frames with backtrace, or evaluates in one with eval_in_frame.
;;;;
;;;; The worker must go on serving meanwhile, and a stack cannot move
;;;; between threads: so the worker thread itself keeps the held error.
;;;; %DETACH-WORKER answers the job with the held error's text and makes a
;;;; fresh worker serve the next jobs (every definition is kept: it is the
;;;; same image), while this thread waits in SERVE-HELD for a command.  A
;;;; restart sent there is invoked on this thread, so the evaluation goes
;;;; on from where it stopped; its result goes to whoever sent the restart
;;;; (a REPLY-BOX), and the thread then ends.  The per-job records an
;;;; evaluation writes (captures, warnings) are bound on such a job's
;;;; thread (RUN-HELD-EVALUATION-JOB), so the new worker's jobs and the
;;;; held one never share them.
;;;;
;;;; Bounded: at most +HELD-ERROR-LIMIT+ at once (a new one aborts the
;;;; oldest) and each for *HELD-ERROR-TIMEOUT* seconds, after which it is
;;;; aborted as if ABORT had been chosen.

(in-package "AGENT-Q")

(defconstant +held-error-limit+ 4
  "How many errors may be held at once; holding one more aborts the oldest.")

(defvar *held-error-timeout* 300
  "Seconds a held error waits for a command before it is aborted.")

(defvar *held-reply* nil
  "On a held evaluation's thread, once a restart let it go on: the
REPLY-BOX that gets its result (or its next held error).")

(defvar *in-held-command* nil
  "On a held error's thread while it runs a command (eval_in_frame): the
command's REPLY-BOX.")

(defvar *held-errors-lock* (mp:make-lock :name "agent-q held errors"))
(defvar *held-errors* '() "The held errors, newest first.")
(defvar *held-error-count* 0 "The last condition id given.")
(defvar *held-outcomes* '()
  "What became of the latest held errors that are held no more, newest
first: (ID . TEXT), at most 20, so that a later call about one says so.")

(defstruct (reply-box (:constructor make-reply-box ()))
  "Where a held error's thread answers a command: SUCCESS and TEXT once DONE."
  (lock (mp:make-lock :name "agent-q held reply"))
  (ready (mp:make-condition-variable))
  (done nil)
  (success nil)
  (text nil))

(defstruct (held-error (:constructor %make-held-error))
  "An error held live on its thread."
  id condition thread restarts user-frames frames deadline
  (lock (mp:make-lock :name "agent-q held error"))
  (command nil))

(defun deliver-reply (box success text)
  "Answer BOX: SUCCESS and TEXT."
  (mp:with-lock ((reply-box-lock box))
    (setf (reply-box-success box) success
          (reply-box-text box) text
          (reply-box-done box) t)
    (mp:condition-variable-broadcast (reply-box-ready box))))

(defun await-reply (box)
  "Wait (interruptibly: C-g and the time limit stop it) for BOX's answer;
return its SUCCESS and TEXT."
  (mp:with-lock ((reply-box-lock box))
    (loop until (reply-box-done box)
          do (mp:condition-variable-wait (reply-box-ready box) (reply-box-lock box))))
  (values (reply-box-success box) (reply-box-text box)))

;;; Holding

(defun find-held-error (id)
  (mp:with-lock (*held-errors-lock*)
    (find id *held-errors* :key #'held-error-id)))

(defun forget-held-error (held &optional outcome)
  "HELD is held no more; OUTCOME, a text, says what became of it."
  (mp:with-lock (*held-errors-lock*)
    (setf *held-errors* (remove held *held-errors*))
    (when outcome
      (push (cons (held-error-id held) outcome) *held-outcomes*)
      (when (> (length *held-outcomes*) 20)
        (setf *held-outcomes* (subseq *held-outcomes* 0 20))))))

(defun held-outcome (id)
  (mp:with-lock (*held-errors-lock*)
    (cdr (assoc id *held-outcomes*))))

(defun send-held-command (held command)
  "Give HELD's thread COMMAND; NIL when it already has one to run."
  (mp:with-lock ((held-error-lock held))
    (unless (held-error-command held)
      (setf (held-error-command held) command)
      t)))

(defun register-held-error (held)
  "Make HELD findable by its id; abort the oldest when too many are held."
  (let ((oldest nil))
    (mp:with-lock (*held-errors-lock*)
      (push held *held-errors*)
      (when (> (length *held-errors*) +held-error-limit+)
        (setf oldest (car (last *held-errors*))
              *held-errors* (butlast *held-errors*))))
    (when oldest
      (send-held-command oldest '(:abort "too many held errors: this one, the oldest, was aborted")))))

(defun held-note (held)
  (format nil "The error is held (condition ~D): the evaluation waits where it stopped, for up to ~D s. ~
               Go on with invoke_restart (condition_id ~D, a restart's name or number below), see the frames ~
               with backtrace, or evaluate in a frame with eval_in_frame."
          (held-error-id held) *held-error-timeout* (held-error-id held)))

(defun held-text (held)
  "The [ERROR] text of the held error HELD, its first line marked
\"(held: condition N)\" (the id evaluate_lisp's metadata carries)."
  (let* ((text (error-text (held-error-condition held) (held-note held)))
         (end (or (position #\Newline text) (length text))))
    (concatenate 'string (subseq text 0 end)
                 (format nil " (held: condition ~D)" (held-error-id held))
                 (subseq text end))))

(defun maybe-hold-error (condition)
  "Called by FAIL for an unhandled CONDITION: when this evaluation holds
its errors, hold CONDITION here until a command lets the evaluation go
on (which does not return here), or abort it.  Returns when it cannot be
held; the error then fails the evaluation as usual."
  (when (and *hold-errors* (not *in-held-command*) (not *in-repl-debugger*)
             (not (typep condition '(or ext:stack-overflow storage-condition))))
    (let* ((user-frames (user-frames))
           (held (%make-held-error :id (mp:with-lock (*held-errors-lock*) (incf *held-error-count*))
                                   :condition condition
                                   :thread (%own-process)
                                   :restarts (job-restarts condition)
                                   :user-frames user-frames
                                   :frames (debugger-frames user-frames)))
           (text (held-text held)))
      ;; Its structure, made with its text (held-text), with its id.
      (when (and *want-structure* *error-structure*)
        (let ((object (cdr *error-structure*)))
          (setf (gethash "condition_id" object) (held-error-id held))
          (%set-job-structure (error-structure-text object))))
      (setf *last-error* condition)
      (register-held-error held)
      (cond (*held-reply*
             ;; A restart let it go on, and it stopped again: the caller of
             ;; invoke_restart gets this error.
             (deliver-reply (shiftf *held-reply* nil) nil text))
            ((not (mp:without-interrupts (%detach-worker text)))
             (forget-held-error held)
             (return-from maybe-hold-error nil)))
      (serve-held-error held))))

(defun next-held-command (held)
  "HELD's next command, waiting for it until HELD's deadline: then (:ABORT).
Polled every 20 ms (ECL here has no timed condition-variable wait): a
wake-up costs microseconds, and only while an error is held."
  (let ((deadline (+ (get-internal-real-time) (* *held-error-timeout* internal-time-units-per-second))))
    (loop
      (let ((command (mp:with-lock ((held-error-lock held))
                       (shiftf (held-error-command held) nil))))
        (when command (return command)))
      (when (>= (get-internal-real-time) deadline)
        (return (list :abort (format nil "nobody answered it in ~D s" *held-error-timeout*))))
      (sleep 0.02))))

(defun abort-held-evaluation (condition why)
  "End the held evaluation: the innermost ABORT restart the evaluation
established, else out of the evaluation with an [ERROR] text."
  (let ((abort (find 'abort (job-restarts condition) :key #'restart-name)))
    (if abort
        (invoke-restart abort)
        (throw '%evaluation-failed
          (format nil "~A~%(held, then aborted: ~A)" (abort-text condition) why)))))

(defun serve-held-error (held)
  "Run HELD's commands on its thread until one lets the evaluation go on
or ends it."
  (let ((condition (held-error-condition held)))
    (loop
      (let ((command (next-held-command held)))
        (case (first command)
          (:restart
           (destructuring-bind (restart values reply who) (rest command)
             (forget-held-error held (format nil "~A chose the restart ~A~@[ with ~{~A~^, ~}~]."
                                             who (restart-name restart)
                                             (mapcar (lambda (v) (one-line-capped (printed v) 100)) values)))
             (setf *held-reply* reply)
             (apply #'invoke-restart restart values)
             ;; A restart that returns (RESTART-BIND's): the error goes on
             ;; unhandled, and fails the evaluation.
             (return nil)))
          (:eval
           (destructuring-bind (frame code reply) (rest command)
             (deliver-reply reply t
                            (or (catch '%held-command-aborted
                                  (let ((*in-held-command* reply))
                                    (with-interrupts-allowed
                                      (evaluate-in-frame-text (held-error-user-frames held)
                                                              (format nil "~D ~A" frame code)))))
                                (format nil "Frame ~D: the evaluation was interrupted." frame)))))
          (t
           (forget-held-error held (format nil "It was aborted: ~A." (or (second command) "aborted")))
           (abort-held-evaluation condition (or (second command) "aborted"))))))))

(defun interrupt-held-thread (held reply)
  "Stop what HELD's thread runs for a command whose caller gave up (C-g,
the time limit): a frame evaluation, or the evaluation a restart let go
on.  Sent again every 10 ms, for at most half a second, until the thread
has answered REPLY: an interrupt that lands where the thread defers it
may wait for the next one."
  (let ((thread (held-error-thread held)))
    (loop repeat 50
          until (or (reply-box-done reply) (not (mp:process-active-p thread)))
          do (handler-case
              (funcall
               (car (ecl-interrupt-process))
               thread
               ;; Only what REPLY's command runs: a repeat that lands
               ;; after it ended, between commands, does nothing.
               (lambda ()
                 (cond ((eq *in-held-command* reply)
                        (throw '%held-command-aborted nil))
                       ((and (null *in-held-command*) (eq *held-reply* reply))
                        (throw '%evaluation-failed
                          (format nil "[ERROR] INTERRUPTED~%The evaluation that went on after invoke_restart was stopped."))))))
               (serious-condition () nil))
             (sleep 0.01))))

(defun run-held-evaluation-job (code package flags output-limit timeout-ms interactive-key)
  "RUN-EVALUATE-JOB for an evaluation that holds its errors: the per-job
records are this thread's own, so that a held error keeps them while the
next worker runs other jobs.  On a thread a restart let go on, the result
goes to the caller of invoke_restart."
  (let* ((*stdout* (make-capture-stream))
         (*stderr* (make-capture-stream))
         (*stdout-capture* (stream-capture *stdout*))
         (*stderr-capture* (stream-capture *stderr*))
         (*output-written* nil)
         (*warnings* '())
         (*failure-in-flight* nil)
         (*stack-overflowed* nil)
         (*finalizer-failures* 0)
         (*finalizer-error* nil)
         (*hold-errors* t)
         (*held-reply* nil)
         (*outer-restarts* (compute-restarts)))
    (multiple-value-bind (success text)
        (guarded-job (timeout-ms)
          (evaluate-string code package (/= 0 (logand flags 1)) output-limit interactive-key))
      (when *held-reply*
        (deliver-reply (shiftf *held-reply* nil) success text))
      ;; Whatever ended it, no error of this thread's stays listed.
      (let ((self (%own-process)))
        (dolist (held (mp:with-lock (*held-errors-lock*) (copy-list *held-errors*)))
          (when (eq (held-error-thread held) self)
            (forget-held-error held "Its evaluation ended."))))
      (values success text))))

;;; Shown in Emacs's debugger buffer

(defun held-error-elisp-text (id)
  "The held error ID as `sly-agent-q-debugger-show-held' shows it, as
Emacs Lisp text: (TYPE MESSAGE RESTARTS WANTS-VALUE FRAMES), or NIL."
  (let ((held (find-held-error id)))
    (elisp-text                         ; emacs.lisp
     (and held
          (let ((condition (held-error-condition held)))
            (list (type-name condition)
                  (without-object-addresses (condition-message condition))
                  (mapcar #'restart-line (held-error-restarts held))
                  (mapcar (lambda (r) (and (restart-wants-value-p r) t)) (held-error-restarts held))
                  (or (held-error-frames held) '("(no user frames)"))))))))

;;; The tools

(defun held-error-argument (arguments)
  "The held error ARGUMENTS' condition_id names, or NIL and why not."
  (let* ((id (gethash "condition_id" arguments))
         (held (and (integerp id) (find-held-error id))))
    (if held
        held
        (values nil (format nil "No error is held as condition ~A (~:[it was answered, aborted after ~D s, ~
                                 or pushed out by newer ones~;~:*~A~*~]). Held now: ~:[none~;~:*~{~D~^, ~}~]."
                            id (and (integerp id) (held-outcome id)) *held-error-timeout*
                            (mp:with-lock (*held-errors-lock*) (mapcar #'held-error-id *held-errors*)))))))

(defun who-calls-text ()
  "Who makes the running call, as a held error's outcome names them."
  (if (%job-origin) "The agent" "The user"))   ; NIL: the person's own

(defun find-restart-named (held designator)
  "The restart of HELD that DESIGNATOR (a number, or a restart's name)
names, or NIL."
  (let* ((restarts (held-error-restarts held))
         (text (string-trim " " (princ-to-string designator)))
         (index (ignore-errors (parse-integer text))))
    (if index
        (and (< -1 index (length restarts)) (nth index restarts))
        (find text restarts :key (lambda (r) (symbol-name (restart-name r))) :test #'string-equal))))

(defun vetted-code (code)
  "CODE as an agent may run it (see VET-AGENT-CODE): CODE or the person's
edit, or NIL and the denial's text."
  (multiple-value-bind (run text) (vet-agent-code code nil)
    (if run (values text nil) (values nil text))))

(defun read-restart-values (text)
  "The values of the forms in TEXT, read in the session's package and
evaluated, or NIL and what went wrong."
  (handler-case
      (let ((*package* (if (live-package-p *session-package*) *session-package* (printing-package)))
            (values '()))
        (with-input-from-string (in text)
          (loop for form = (read in nil in)
                until (eq form in)
                do (push (eval-form form) values)))
        (values (nreverse values) nil))
    (serious-condition (c)
      (values nil (format nil "The values could not be had (~A): ~A" (type-name c)
                          (one-line (condition-message c)))))))

(defun invoke-restart-tool (arguments)
  "The invoke_restart tool."
  (multiple-value-bind (held problem) (held-error-argument arguments)
    (unless held (return-from invoke-restart-tool (values nil problem)))
    (let* ((designator (gethash "restart" arguments))
           (restart (find-restart-named held designator))
           (values-text (or (gethash "values" arguments) "")))
      (unless (or restart (string-equal (string-trim " " (princ-to-string designator)) "ABORT"))
        (return-from invoke-restart-tool
          (values nil (format nil "Condition ~D has no restart ~A. Its restarts:~%~{~A~^~%~}"
                              (held-error-id held) designator
                              (or (restart-lines (held-error-condition held)) '("(none)"))))))
      (let ((values '()))
        (when (plusp (length (string-trim '(#\Space #\Newline #\Tab) values-text)))
          (multiple-value-bind (code denial) (vetted-code values-text)
            (unless code (return-from invoke-restart-tool (values nil denial)))
            (multiple-value-bind (read problem) (read-restart-values code)
              (when problem (return-from invoke-restart-tool (values nil problem)))
              (setf values read))))
        (let ((reply (make-reply-box)))
          (unless (send-held-command held (if restart
                                              (list :restart restart values reply (who-calls-text))
                                              (list :abort (format nil "~A chose ABORT" (who-calls-text)))))
            (return-from invoke-restart-tool
              (values nil (format nil "Condition ~D is busy with another command." (held-error-id held)))))
          (if (null restart)
              (format nil "Condition ~D aborted." (held-error-id held))
              (let ((done nil))
                (unwind-protect
                     (multiple-value-bind (success text) (await-reply reply)
                       (setf done t)
                       (if success text (values nil text)))
                  (unless done (interrupt-held-thread held reply))))))))))

(defun backtrace-tool (arguments)
  "The backtrace tool."
  (multiple-value-bind (held problem) (held-error-argument arguments)
    (unless held (return-from backtrace-tool (values nil problem)))
    (let* ((frames (held-error-frames held))
           (start (max 0 (or (gethash "start" arguments) 0)))
           (count (max 0 (or (gethash "count" arguments) 20))))
      (with-output-to-string (out)
        (format out "Condition ~D: ~A: ~A~%" (held-error-id held) (type-name (held-error-condition held))
                (without-object-addresses (one-line (condition-message (held-error-condition held)))))
        (if (null frames)
            (format out "(no user frames)")
            (loop for (line locals source) in (nthcdr start frames)
                  repeat count
                  do (format out "~%~A~{~%    ~A~}~@[~%    source: ~{~A:~D~}~]" line locals source)))
        (when (> (length frames) (+ start count))
          (format out "~%~%(~D more frames: ask with start ~D)" (- (length frames) start count) (+ start count)))))))

(defun eval-in-frame-tool (arguments)
  "The eval_in_frame tool."
  (multiple-value-bind (held problem) (held-error-argument arguments)
    (unless held (return-from eval-in-frame-tool (values nil problem)))
    (multiple-value-bind (code denial) (vetted-code (gethash "code" arguments))
      (unless code (return-from eval-in-frame-tool (values nil denial)))
      (let ((reply (make-reply-box))
            (done nil))
        (unless (send-held-command held (list :eval (or (gethash "frame" arguments) 0) code reply))
          (return-from eval-in-frame-tool
            (values nil (format nil "Condition ~D is busy with another command." (held-error-id held)))))
        (unwind-protect
             (multiple-value-bind (success text) (await-reply reply)
               (setf done t)
               (if success text (values nil text)))
          (unless done (interrupt-held-thread held reply)))))))

(defparameter +condition-id-parameter+
  '(:name "condition_id" :type :integer
    :description "The held error's id: N in the `(held: condition N)` of evaluate_lisp's [ERROR] line (evaluated with debug: true).")
  "The parameter of the tools that work on a held error.")

(define-built-in-tool "invoke_restart"
  "Go on with an evaluation whose error is held (evaluate_lisp with debug: true): invoke one of the restarts its [Restarts] section lists, and get the rest of the evaluation's result, as if it had not stopped (`=> value` lines, or the next held error). ABORT is always possible: it ends the evaluation. Values for USE-VALUE or STORE-VALUE are Lisp forms, evaluated in the session."
  (list +condition-id-parameter+
        '(:name "restart" :type :string
          :description "The restart: its number in [Restarts] (\"0\") or its name (\"USE-VALUE\", \"CONTINUE\", \"ABORT\")." )
        '(:name "values" :type :string
          :description "Forms whose values the restart takes, e.g. \"42\" for USE-VALUE; none for restarts that take no value."))
  :required '("condition_id" "restart")
  :safety-level :cautious
  :categories '(:execution :debugger)
  :handler #'invoke-restart-tool)

(define-built-in-tool "backtrace"
  "The frames of a held error (evaluate_lisp with debug: true), innermost first: each function with its local variables and their values where ECL keeps them (functions evaluated or loaded from source; natively compiled ones keep none, and say so), and its source file and line when known."
  (list +condition-id-parameter+
        '(:name "start" :type :integer :minimum 0 :default 0 :description "The first frame to show, from 0 (the innermost). Default 0.")
        '(:name "count" :type :integer :minimum 1 :default 20 :description "How many frames to show. Default 20."))
  :required '("condition_id")
  :categories '(:debugger)
  :handler #'backtrace-tool)

(define-built-in-tool "eval_in_frame"
  "Evaluate Lisp code in a frame of a held error (evaluate_lisp with debug: true), with that frame's local variables bound to their values (a copy: setting one changes the copy). Returns `Frame N: CODE => value`. Use it to look at what the code was working on when it failed."
  (list +condition-id-parameter+
        '(:name "frame" :type :integer :minimum 0 :description "The frame's number in backtrace's list, from 0 (the innermost).")
        '(:name "code" :type :string :description "The form to evaluate, e.g. \"(length items)\"."))
  :required '("condition_id" "frame" "code")
  :safety-level :cautious
  :categories '(:execution :debugger)
  :handler #'eval-in-frame-tool)
