;;;; evaluate.lisp — the evaluate_lisp tool's Lisp half (contract evaluate-lisp)
;;;; and the worker loop of the ECL thread.
;;;;
;;;; Everything evaluated here runs inside Emacs's process, so nothing may
;;;; exit, enter the interactive debugger or read the terminal: those all
;;;; become error results.  Functions named %… are defined in C++
;;;; (module/ecl/runtime.cpp).

(in-package "AGENT-Q")

(defvar *session-package* (find-package "CL-USER")
  "The package evaluate_lisp uses when the call names none; IN-PACKAGE in
evaluated code changes it for the following calls.")

(defvar *worker* nil
  "The ECL process that runs jobs, for looking at.  The runtime keeps its
own reference, out of evaluated code's reach, and never reads this.")
(defvar *watchdog* nil
  "The ECL process that interrupts the worker, for looking at (see *WORKER*).")
(defvar *heap-limit* nil "Heap limit in bytes re-armed after exhaustion, or NIL.")
(defvar *stack-sizes* '()
  "Plist of the worker's stack sizes in entries (EXT:BINDING-STACK,
EXT:FRAME-STACK) set at boot, which EXT:GET-LIMIT does not report.")
(defvar *warnings* nil)
(defvar *stack-overflowed* nil)
(defvar *failure-in-flight* nil
  "The [ERROR] text of the stack overflow FAIL unwound from last in this
evaluation.  ECL 21.2 can lose its target while unwinding from a
frame-stack overflow and unwind past every Lisp frame; the host then
reports this text.")
(defvar *exit-process* nil "The original MP:EXIT-PROCESS.")
(defvar *values-stream* nil
  "A string output stream VALUES-TEXT reuses for plain values: making one
per evaluation cost more than printing a small value.")

(defconstant +backtrace-frames+ 20)

(defvar *null-input* (make-string-input-stream ""))
(defvar *null-io* (make-two-way-stream *null-input* (make-broadcast-stream))
  "Bound to the interactive streams: reading gives END-OF-FILE at once,
writing goes nowhere.  There is no terminal behind an embedded Lisp.")

(defvar *stdout* (make-capture-stream))
(defvar *stderr* (make-capture-stream))
(defvar *stdout-capture* (stream-capture *stdout*))
(defvar *stderr-capture* (stream-capture *stderr*))

;;; ---------------------------------------------------------------- exits

(define-condition exit-intercepted (error)
  ((operator :initarg :operator :reader exit-intercepted-operator))
  (:report (lambda (condition stream)
             (format stream "~A was intercepted: this Lisp runs inside Emacs and may not ~
                             exit. The session is still alive."
                     (exit-intercepted-operator condition))))
  (:documentation "Signalled instead of exiting when evaluated code calls
EXT:QUIT, EXT:EXIT or MP:EXIT-PROCESS on the worker thread."))

(define-condition operation-refused (error)
  ((operator :initarg :operator :reader operation-refused-operator)
   (reason :initarg :reason :reader operation-refused-reason))
  (:report (lambda (condition stream)
             (format stream "~A was refused: ~A The session is still alive."
                     (operation-refused-operator condition)
                     (operation-refused-reason condition))))
  (:documentation "Signalled instead of doing what would break Emacs, which
this Lisp runs inside: EXT:CATCH-SIGNAL."))

(defun install-exit-guards ()
  "Replace the functions that would exit the process (and so Emacs), end or
stop the runtime's own threads, or change how the process handles signals."
  (setf (fdefinition 'ext:quit)
        (lambda (&rest args)
          (declare (ignore args))
          (error 'exit-intercepted :operator "EXT:QUIT")))
  (setf (fdefinition 'ext:exit)
        (lambda (&rest args)
          (declare (ignore args))
          (error 'exit-intercepted :operator "EXT:EXIT")))
  ;; Signal dispositions are the process's, so Emacs's: a handler of
  ;; ECL's that runs on Emacs's thread (SIGCHLD from any subprocess, SIGINT
  ;; from C-g) ends that thread, and an ignored SIGCHLD hangs every process
  ;; Emacs waits for.
  (setf (fdefinition 'ext:catch-signal)
        (lambda (&rest args)
          (declare (ignore args))
          (error 'operation-refused
                 :operator "EXT:CATCH-SIGNAL"
                 :reason "this Lisp runs inside Emacs, and how the process handles signals is Emacs's.")))
  ;; The worker and the watchdog are ours: evaluated code may not kill,
  ;; interrupt or suspend them (a killed or suspended watchdog would leave
  ;; C-g and timeouts dead).
  (dolist (name '(mp:process-kill mp:interrupt-process mp:process-suspend))
    (let ((original (fdefinition name)) (name name))
      (setf (fdefinition name)
            (lambda (process &rest args)
              (if (%runtime-process-p process)
                  (error 'exit-intercepted :operator (format nil "~S on an AGENT-Q thread" name))
                  (apply original process args))))))
  ;; A finalizer runs on whatever thread the collector ran on, between any
  ;; two forms: its error would be taken for the error of that evaluation,
  ;; or escape it.  It becomes a warning of the evaluation instead.
  (let ((original (fdefinition 'ext:set-finalizer)))
    (setf (fdefinition 'ext:set-finalizer)
          (lambda (object function)
            (funcall original object
                     (if (functionp function)
                         (lambda (object)
                           (handler-case (funcall function object)
                             (serious-condition (condition) (note-finalizer-failure condition))))
                         function)))))
  (let ((original (fdefinition 'mp:exit-process)))
    (setf *exit-process* original
          (fdefinition 'mp:exit-process)
          (lambda (&rest args)
            (if (%runtime-thread-p)
                (error 'exit-intercepted :operator "MP:EXIT-PROCESS")
                (apply original args))))))

;;; ---------------------------------------------------------------- child processes

(defun exit-status-word (process code)
  "What C's system() returns for PROCESS that ended with CODE."
  (if (eq (ext:external-process-status process) :exited) (* 256 code) code))

(defvar *sink* (make-broadcast-stream)
  "Where output of ours outside an evaluation goes: nowhere.")

(defun terminal-bound-p (stream direction &optional (depth 0))
  "True when STREAM reads (DIRECTION :INPUT) or writes the process's own
standard input, output or error: Emacs's terminal.  Synonym, two-way, echo
and broadcast streams are looked through."
  (and (< depth 16)
       (typecase stream
         (synonym-stream
          (let ((symbol (synonym-stream-symbol stream)))
            (and (boundp symbol) (terminal-bound-p (symbol-value symbol) direction (1+ depth)))))
         (two-way-stream
          (terminal-bound-p (if (eq direction :input)
                                (two-way-stream-input-stream stream)
                                (two-way-stream-output-stream stream))
                            direction (1+ depth)))
         (echo-stream
          (or (terminal-bound-p (echo-stream-output-stream stream) :output (1+ depth))
              (and (eq direction :input)
                   (terminal-bound-p (echo-stream-input-stream stream) :input (1+ depth)))))
         (broadcast-stream
          (some (lambda (s) (terminal-bound-p s direction (1+ depth))) (broadcast-stream-streams stream)))
         (stream
          (let ((fd (ignore-errors (ext:file-stream-fd stream))))
            (and (integerp fd) (<= 0 fd 2)))))))

(defun child-stream (value default direction)
  "What a child process gets for VALUE of its :INPUT, :OUTPUT or :ERROR
\(DIRECTION).  T means DEFAULT, the current standard stream, as in
EXT:RUN-PROGRAM itself.  Emacs's terminal is replaced by the evaluation's
captured output, or by the null device; so is our sink."
  (let ((stream (if (eq value t) default value)))
    (cond ((not (streamp stream)) value)
          ((eq stream *sink*) nil)
          ((not (terminal-bound-p stream direction)) stream)
          ((and (not (eq direction :input)) (eq (%runtime-thread-p) :worker))
           (if (eq direction :output) *stdout* *stderr*))
          (t nil))))

(defun copied-by-ecl-p (value)
  "True when EXT:RUN-PROGRAM would start a thread to copy VALUE (a stream
with no file descriptor, such as the evaluation's captures or a string
stream) to or from the child."
  (and (streamp value) (not (ignore-errors (ext:file-stream-fd value)))))

(defun drain (pipe)
  "Copy what PIPE's stream holds now to its destination, without waiting.
True at its end.  PIPE is (STREAM DESTINATION . CARRY), CARRY the bytes
of a character the pipe cut in two.  Bytes that are not UTF-8 come out as
U+FFFD, one for each."
  (let ((stream (first pipe)) (destination (second pipe)))
    (loop
      (multiple-value-bind (text rest state) (%read-pipe (ext:file-stream-fd stream) (cddr pipe))
        (setf (cddr pipe) rest)
        (when (plusp (length text))
          (write-string text destination))
        (unless (eq state :more)
          (return (eq state :end)))))))

(defstruct (input-copy (:constructor make-input-copy
                            (stream source
                             &aux (buffer (make-array 65536 :element-type (input-element-type source)
                                                            :fill-pointer 0)))))
  "A Lisp stream SOURCE copied into a child's input pipe STREAM: BUFFER
holds the part read last, of which START is where writing goes on."
  stream source buffer (start 0))

(defun input-element-type (stream)
  "CHARACTER or (UNSIGNED-BYTE 8) as STREAM gives, or NIL for other elements."
  (let ((type (ignore-errors (stream-element-type stream))))
    (cond ((null type) nil)
          ((subtypep type 'character) 'character)
          ((subtypep type '(unsigned-byte 8)) '(unsigned-byte 8)))))

(defun copy-input (copy)
  "Write to COPY's pipe what its source has, as far as the pipe takes it
now.  True when no more is to be written: the source is at its end (the
pipe is then closed, so that the child reads its end) or the child reads
no more."
  (let ((buffer (input-copy-buffer copy)))
    (flet ((done ()
             (mp:without-interrupts (ignore-errors (close (input-copy-stream copy))))
             (return-from copy-input t)))
      (loop
        (when (>= (input-copy-start copy) (length buffer))
          (setf (fill-pointer buffer) (array-dimension buffer 0)
                (fill-pointer buffer) (read-sequence buffer (input-copy-source copy))
                (input-copy-start copy) 0)
          (when (zerop (length buffer))
            (done)))
        (multiple-value-bind (next state)
            (%write-pipe (ext:file-stream-fd (input-copy-stream copy)) buffer (input-copy-start copy))
          (setf (input-copy-start copy) next)
          (case state
            (:full (return nil))
            (:closed (done))))))))

(defun ended-p (process)
  (member (ext:external-process-status process) '(:exited :signaled :signalled :abort :error)))

(defun end-child (process)
  "Terminate PROCESS and the processes it started, kill what lingers, and
reap PROCESS: within about 0.3 s; a fork loop's thousands take about 2 s.
Called with interrupts kept out.  (Ending /bin/sh alone would leave the
make it runs, and make's compilers, running.)"
  (let* ((family '())
         (give-up (+ (get-internal-real-time) internal-time-units-per-second)))
    (flet ((ms-left (at-most)
             (max 0 (min at-most (round (* 1000 (- give-up (get-internal-real-time)))
                                        internal-time-units-per-second))))
           (ended-within-p (ms)
             (loop with deadline = (+ (get-internal-real-time)
                                      (round (* ms internal-time-units-per-second) 1000))
                   when (and (ignore-errors (ended-p process))
                             (not (%any-running-p family)))
                     return t
                   while (< (get-internal-real-time) deadline)
                   do (sleep 0.002))))
      (unless (ended-within-p 0)
        ;; Stopped first, all of them: a stopped process starts no more,
        ;; and once a parent is gone its children belong to init.
        (let ((pid (ignore-errors (ext:external-process-pid process))))
          (when (integerp pid)
            (setf family (%stop-family pid (ms-left 400)))))
        (if family
            (%end-processes family :terminate)
            (ignore-errors (ext:terminate-process process)))
        (unless (ended-within-p (ms-left 100))
          (setf family (%stop-family family (ms-left 200))) ; with any started meanwhile
          (%end-processes family :kill)
          (ignore-errors (ext:terminate-process process t))
          (ended-within-p 100))))))

(defun run-and-wait (original command argv input output error keys)
  "EXT:RUN-PROGRAM with :WAIT T: the child's INPUT, OUTPUT and ERROR,
where they are Lisp streams with no file descriptor (the
evaluation's captures, a string stream), are copied here rather than by
ECL's copying threads, and a non-local exit (C-g, a timeout) ends and
reaps the child.  (ECL 21.2's copying thread can reap the child
itself and then wait for itself forever, and an interrupted wait leaves
the child running with nothing to end it.)"
  ;; Interrupts are let in only while ECL starts the child and while we
  ;; wait for it: not between the two (the child would be left running),
  ;; nor while opening or closing streams (an interrupt inside CLOSE left a
  ;; stream half closed, and its later flush failed), nor in the cleanup.
  (mp:without-interrupts
    (let* ((input-copied (copied-by-ecl-p input))
           (output-copied (copied-by-ecl-p output))
           (error-copied (copied-by-ecl-p error))
           (results
            (let ((null-devices '()))
              ;; ECL opens /dev/null for a NIL stream and leaves it open
              ;; until collected; ours are closed at once.
              (flet ((null-device-for (value direction)
                       (or value
                           (car (push (open "/dev/null" :direction direction :if-exists :append)
                                      null-devices)))))
                (unwind-protect
                     (let ((input (if input-copied :stream (null-device-for input :input)))
                           (output (if output-copied :stream (null-device-for output :output)))
                           (error (if error-copied :stream (null-device-for error :output))))
                       (mp:with-restored-interrupts
                         (multiple-value-list
                          ;; The first of repeated keys wins: ours come first.
                          (apply original command argv
                                 :input input :output output :error error :wait nil keys))))
                  (mapc #'close null-devices))))))
      (destructuring-bind (&optional stream code process &rest more) results
        (declare (ignore code more))
        (unless process                 ; nothing run (say :IF-OUTPUT-EXISTS NIL)
          (return-from run-and-wait (values-list results)))
        (let* ((ours (remove nil (list (and output-copied
                                            (list* (ext:external-process-output process) output ""))
                                       (and error-copied
                                            (list* (ext:external-process-error-stream process) error "")))))
               (pipes ours)
               (feed (and input-copied (make-input-copy (ext:external-process-input process) input)))
               (copying feed)
               (waited nil))
          (unwind-protect
               (mp:with-restored-interrupts
                 (loop (setf pipes (remove-if #'drain pipes))
                       (when (and copying (copy-input copying))
                         (setf copying nil))
                       (when (or (and (null pipes) (null copying)) (ended-p process))
                         (return))
                       (sleep 0.001))
                 ;; What the child wrote just before it ended (a child of its
                 ;; own may keep the pipe open: not waited for, as in ECL).
                 (mapc #'drain pipes)
                 (let ((code (nth-value 1 (ext:external-process-wait process t))))
                   (setf waited t)
                   (values stream code process)))
            ;; The pipes are ours: closed now rather than when collected, so
            ;; a loop of calls cannot use up the process's descriptors.
            (dolist (pipe ours) (ignore-errors (close (car pipe))))
            (when feed (ignore-errors (close (input-copy-stream feed))))
            (unless waited
              (end-child process))))))))

(defun install-process-guards ()
  "Child processes never get Emacs's terminal.  EXT:RUN-PROGRAM gives them
the evaluation's [stdout]/[stderr] or the null device where they would
inherit it, also when the caller bound *STANDARD-OUTPUT* to the process's
own stream; EXT:SYSTEM runs /bin/sh the same way.  (A child reading
Emacs's terminal takes the keystrokes away from Emacs; one writing to it
scrambles the display.)  A child waited for (:WAIT T) is ended when the
wait is interrupted (C-g, a timeout), with the processes it started (say
the make that /bin/sh runs, and make's compilers).  Not covered: a child
whose input is a Lisp stream with no file descriptor whose elements are
neither characters nor octets, which ECL copies on a thread of its own.
\(ECL's native compiler reads gcc's messages itself and prints them into
the evaluation's output.)"
  (let* ((original (fdefinition 'ext:run-program))
         (guarded (lambda (command argv &rest keys &key (input :stream) (output :stream)
                           (error :output) (wait t) &allow-other-keys)
                    (let ((input (child-stream input *standard-input* :input))
                          (output (child-stream output *standard-output* :output))
                          (error (child-stream error *error-output* :error)))
                      (if (and wait (or (not (copied-by-ecl-p input)) (input-element-type input)))
                          (run-and-wait original command argv input output error keys)
                          ;; The first of repeated keys wins: ours come first.
                          (apply original command argv
                                 :input input :output output :error error keys))))))
    (setf (fdefinition 'ext:run-program) guarded)
    ;; GUARDED itself, not EXT:RUN-PROGRAM: compiled code may call ECL's
    ;; own function directly, past the new definition.
    (setf (fdefinition 'ext:system)
          (lambda (command)
            (multiple-value-bind (stream code process)
                (funcall guarded "/bin/sh" (list "-c" command) :input nil :output t :error t)
              (declare (ignore stream))
              (exit-status-word process code))))))

;;; ---------------------------------------------------------------- conditions

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
          ((functionp fun) (si::compiled-function-name fun))
          (t fun))))

(defparameter *internal-frame-names*
  '(nil si:bytecodes eval signal error cerror warn invoke-debugger break
    si::universal-error-handler si::tpl si::safe-eval)
  "Frames of the evaluator and of the condition machinery: not the user's.")

(defun internal-frame-p (name)
  (or (member name *internal-frame-names*)
      (and (symbolp name)
           (eq (symbol-package name) (load-time-value (find-package "AGENT-Q"))))))

(defun capture-backtrace ()
  "Up to +BACKTRACE-FRAMES+ user frames, innermost first, as text lines."
  (let ((lines '()) (n 0))
    (loop for i from (si::ihs-top) downto 1
          for name = (frame-name i)
          while (< n +backtrace-frames+)
          unless (internal-frame-p name)
            do (push (format nil "~D: (~A)" n
                             (let ((*package* (printing-package)))
                               (safe-princ (if (symbolp name) (prin1-to-string name) name))))
                     lines)
               (incf n))
    (nreverse lines)))

(defun error-text (condition &optional note)
  "The [ERROR] text of CONDITION, printed the same way whatever printer
variables the evaluated code set (say *PRINT-BASE* 36), in the current
package."
  (let ((package *package*))
    (with-standard-io-syntax
      (let ((*package* package) (*print-readably* nil))
        (error-text-1 condition note)))))

(defun error-text-1 (condition note)
  (handler-case
      (let ((frames (capture-backtrace)))
        ;; The missing function of an UNDEFINED-FUNCTION was never called, so
        ;; it has no frame; show it where the call failed.
        (when (typep condition 'undefined-function)
          (setf frames (cons (format nil "0: (~A)" (let ((*package* (printing-package)))
                                                     (safe-princ (prin1-to-string (cell-error-name condition)))))
                             (loop for line in frames for i from 1
                                   collect (format nil "~D~A" i (subseq line (position #\: line)))))))
        (format nil "[ERROR] ~A~%~A~@[~%~A~]~%~%[Backtrace]~%~{~A~^~%~}"
                (type-name condition) (condition-message condition) note
                (or frames '("(no user frames)"))))
    (serious-condition ()
      (format nil "[ERROR] ~A~%(the condition could not be described)" (type-name condition)))))

(defun fail (condition &optional note)
  "Handler for serious conditions: describe CONDITION where it was
signalled, then unwind out of the evaluation."
  (let ((text (error-text condition note)))
    (when (typep condition 'ext:stack-overflow)
      (setf *stack-overflowed* t
            *failure-in-flight* text))
    (throw '%evaluation-failed text)))

(defun debugger-hook (condition hook)
  (declare (ignore hook))
  (fail condition "(The debugger was entered; there is no interactive debugger here.)"))

(defvar *finalizer-failures* 0
  "How many finalizers failed during this evaluation.")
(defvar *finalizer-error* nil "The first of those failures, as text.")

(defun note-finalizer-failure (condition)
  "A finalizer failed with CONDITION during an evaluation: counted, and
reported as one warning of that evaluation (see FINALIZER-WARNING)."
  (when (eq (%runtime-thread-p) :worker)
    ;; Counted before the text is made: making it may collect, and run
    ;; more finalizers.
    (when (= 1 (incf *finalizer-failures*))
      (setf *finalizer-error* (format nil "~A: ~A" (type-name condition) (condition-message condition))))))

(defun finalizer-warning ()
  (when (plusp *finalizer-failures*)
    (if (= *finalizer-failures* 1)
        (format nil "FINALIZER-ERROR: ~A (in a finalizer; its error was ignored)" *finalizer-error*)
        (format nil "FINALIZER-ERROR: ~D finalizers failed; their errors were ignored (the first: ~A)"
                *finalizer-failures* *finalizer-error*))))

(defun record-warning (condition)
  (push (format nil "~A: ~A" (type-name condition) (condition-message condition)) *warnings*)
  (let ((restart (find-restart 'muffle-warning condition)))
    (when restart (invoke-restart restart))))

;;; ---------------------------------------------------------------- evaluation

(defun print-value (value stream)
  "Print VALUE readably-ish per the contract, bounded by the capture limit."
  (if (or (consp value) (typep value '(and array (not string))))
      (let ((*print-length* 100) (*print-level* 10) (*print-circle* t)
            (*print-pretty* t) (*print-readably* nil))
        (prin1 value stream))
      ;; Atoms print the same without the pretty printer and circle
      ;; detection, which cost more than the rest of a small evaluation.
      (let ((*print-length* 100) (*print-level* 10) (*print-circle* nil)
            (*print-pretty* nil) (*print-readably* nil))
        (prin1 value stream))))

(defun plain-value-p (value)
  "True when printing VALUE runs no user code (no PRINT-OBJECT method), so
no user code can keep the stream it is printed to."
  (or (numberp value) (characterp value) (symbolp value) (stringp value)))

(defun values-text (values any output-limit)
  "The => lines for VALUES, cut at OUTPUT-LIMIT characters with a marker."
  (let ((text (cond ((not any) "; No forms to evaluate")
                    ((null values) "; No values")
                    (t (let* ((plain (loop for value in values always (plain-value-p value)))
                              (out (or (and plain (shiftf *values-stream* nil))
                                       (make-string-output-stream))))
                         (loop for (value . more) on values
                               do (write-string "=> " out)
                                  (print-value value out)
                                  (when more (terpri out)))
                         (let ((text (get-output-stream-string out)))
                           ;; Not kept when it grew big (its buffer stays that
                           ;; big), nor when printing failed half way.
                           (when (and plain (< (length text) 4096))
                             ;; ECL keeps the column after GET-OUTPUT-STREAM-STRING
                             ;; (the pretty printer would indent from there): a
                             ;; newline resets it, FILE-POSITION drops the newline.
                             (terpri out)
                             (file-position out 0)
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
        (t (let ((operator (car form))
                 (arguments (mapcar #'simple-eval (cdr form))))
             (if (plain-function-name-p operator)
                 (apply (fdefinition operator) arguments)
                 ;; An argument redefined the operator: EVAL decides.
                 (eval (cons operator (mapcar (lambda (value) (list 'quote value)) arguments))))))))

(defun eval-form (form)
  (if (simple-form-p form 4)
      (simple-eval form)
      (eval form)))

(defun read-eval-forms (code output-limit)
  "Read and evaluate the forms of CODE one at a time, so an IN-PACKAGE takes
effect before the next form is read.  Returns the => text of the last
form's values and the package in force at the end."
  (let ((values '()) (any nil) (eof '#:eof))
    (with-input-from-string (in code)
      (loop for form = (read in nil eof)
            until (eq form eof)
            do (setf values (multiple-value-list (eval-form form))
                     any t)))
    (values (values-text values any output-limit) *package*)))

(defun live-package-p (object)
  (and (packagep object) (package-name object) t))

(defun section (stream name text)
  (format stream "[~A]~%~A~%~%" name (string-right-trim '(#\Newline) text)))

(defun no-output-p ()
  (and (capture-empty-p *stdout-capture*) (capture-empty-p *stderr-capture*) (null *warnings*)))

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

(defun evaluate-string (code package-name capture-time output-limit)
  "Evaluate the forms in the string CODE as evaluate_lisp does.
Returns two values: true on success, and the result text of the contract
\([stdout], [stderr], [warnings] sections, => values, timing line), or on
failure the [ERROR] text."
  (capture-reset *stdout-capture* output-limit)
  (capture-reset *stderr-capture* output-limit)
  (setf *warnings* '() *stack-overflowed* nil *failure-in-flight* nil *finalizer-failures* 0 *finalizer-error* nil)
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
         (error-text
           (catch '%evaluation-failed
             (unless package
               (throw '%evaluation-failed
                 (format nil "[ERROR] PACKAGE-ERROR~%Package ~S does not exist."
                         package-name)))
             (let ((*standard-output* *stdout*)
                   (*error-output* *stderr*)
                   (*trace-output* *stderr*)
                   (*standard-input* *null-input*)
                   (*query-io* *null-io*)
                   (*debug-io* *null-io*)
                   (*terminal-io* *null-io*)
                   (*package* package)
                   (*debugger-hook* #'debugger-hook)
                   (ext:*invoke-debugger-hook* #'debugger-hook))
               (handler-bind ((warning #'record-warning)
                              (serious-condition #'fail))
                 (multiple-value-setq (values-text end-package)
                   (read-eval-forms code output-limit))))
             nil)))
    ;; IN-PACKAGE in the code carries over to the next call; so does the
    ;; session package when the call named none.
    (when (and (live-package-p end-package)
               (or (null package-name) (not (eq end-package package))))
      (setf *session-package* end-package))
    (let ((finalizers (finalizer-warning)))
      (when finalizers (push finalizers *warnings*)))
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

;;; ---------------------------------------------------------------- worker

(defun restore-limits ()
  "Re-arm the stack guards an overflow used up, and the heap limit."
  (dolist (limit '(ext:c-stack ext:lisp-stack ext:binding-stack ext:frame-stack))
    ;; EXT:GET-LIMIT says 0 until a SET-LIMIT (by us, or evaluated code
    ;; raising a limit, which is kept); boot's sizes are in *STACK-SIZES*.
    ;; Never below boot's: evaluated code may have shrunk it (and a
    ;; frame stack of 4 entries fails every later evaluation).
    (let ((size (max (ext:get-limit limit) (getf *stack-sizes* limit 0))))
      ;; 0 means "ECL's default, size unknown": setting it would shrink the stack.
      (when (plusp size)
        (ignore-errors (ext:set-limit limit size)))))
  (when *heap-limit*
    (ignore-errors (ext:set-limit 'ext:heap-size *heap-limit*))))

(defun set-heap-limit (bytes)
  (setf *heap-limit* bytes)
  (ext:set-limit 'ext:heap-size bytes))

(defun interrupt-job (id reason)
  "Run in the worker by MP:INTERRUPT-PROCESS: abandon job ID, if it is
still the one running."
  ;; The running job's id comes from C++: evaluated code cannot make a job
  ;; uninterruptible by changing Lisp state.  ECL also runs queued
  ;; interrupts where Lisp has them disabled (when C code re-enables its
  ;; own): outside the job's catch, or inside MP:WITHOUT-INTERRUPTS.  Such a
  ;; call does nothing; the host repeats the interrupt.
  (when (and ext:*interrupts-enabled* (eql (%current-job) id))
    (throw '%job-aborted (values :aborted reason))))

(defun aborted-text (reason timeout-ms)
  (with-output-to-string (out)
    (case reason
      (:timeout
       (format out "[ERROR] TIMEOUT~%Evaluation did not finish within ~,1F seconds and was interrupted.~%~
                    The session is still alive; raise the limit with the `timeout' argument ~
                    or the default (in Emacs, `sly-agent-q-eval-timeout')."
               (/ timeout-ms 1000)))
      (t
       (format out "[ERROR] INTERRUPTED~%Evaluation was interrupted (~A).~%The session is still alive."
               (if (eq reason :quit) "C-g" "cancelled"))))
    (output-sections-after-error out)))

(defmacro with-interrupts-allowed (&body body)
  "Let interrupts in while BODY runs (the worker loop keeps them out).
MP:WITH-LOCAL-INTERRUPTS does this but exists only lexically inside
MP:WITHOUT-INTERRUPTS."
  `(let ((si:*allow-with-interrupts* t)
         (ext:*interrupts-enabled* t))
     (si:check-pending-interrupts)
     ,@body))

(defun only-our-threads-p ()
  "True when the worker and the watchdog are the only Lisp threads: nobody
else can hold (and use) the streams an evaluation was given."
  (<= (length (mp:all-processes)) 2))

(defun rotate-capture-streams ()
  "Give the next evaluation fresh output streams.  Threads started by
evaluated code may still hold the old ones; those now drop what they get
instead of leaking it into later results."
  (dolist (old (list *stdout* *stderr*))
    (let ((retired (make-capture)))
      (setf (capture-limit retired) 0
            (slot-value old 'capture) retired)))
  (setf *stdout* (make-capture-stream)
        *stderr* (make-capture-stream)
        *stdout-capture* (stream-capture *stdout*)
        *stderr-capture* (stream-capture *stderr*)))

(defun run-evaluate-job (code package flags output-limit timeout-ms)
  (multiple-value-bind (status text)
      (catch '%job-aborted
        (with-interrupts-allowed
          (evaluate-string code package (logbitp 0 flags) output-limit)))
    (unless (only-our-threads-p)
      (rotate-capture-streams))
    (when (or *stack-overflowed* (eq status :aborted) (not status))
      (restore-limits))
    (if (eq status :aborted)
        (values nil (aborted-text text timeout-ms))
        (values status text))))

(defun escaped-job-text ()
  "Called by the host when a non-local exit unwound past WORKER-LOOP while
a job ran: re-arm the limits and return the job's [ERROR] text, or NIL
when no failure was being unwound."
  (restore-limits)
  (let ((text (shiftf *failure-in-flight* nil)))
    (when text
      (with-output-to-string (out)
        (write-string text out)
        (output-sections-after-error out)))))

(defun last-resort-debugger-hook (condition hook)
  "Installed globally: no Lisp thread of ours may ever reach ECL's debugger,
which would read Emacs's standard input.  The worker fails its job and goes
on; any other thread ends."
  (declare (ignore hook))
  (if (eq (%runtime-thread-p) :worker)
      (throw '%worker-top
        (values nil (format nil "[ERROR] ~A~%~A~%(outside the evaluation; the session is still alive)"
                            (type-name condition) (condition-message condition))))
      (funcall *exit-process*)))

(defun worker-loop (fresh)
  "Serve jobs until %NEXT-JOB says stop.  Interrupts are only let in while
a job runs, so a late interrupt can never hit the loop itself.  FRESH: this
thread replaces a worker that was stuck in a job; that job may have left
the limits or the output streams in any state."
  (setf *worker* mp:*current-process*)
  (mp:without-interrupts
    (when fresh
      (restore-limits)
      (rotate-capture-streams))
    (loop
      (multiple-value-bind (id code package flags output-limit timeout-ms heap-limit) (%next-job)
        (unless id (return))
        (when heap-limit (ignore-errors (set-heap-limit heap-limit)))
        (multiple-value-bind (success text)
            (catch '%worker-top
              (run-evaluate-job code package flags output-limit timeout-ms))
          (when (%finish-job id success text)
            ;; Evaluated code shrank the stacks (EXT:SET-LIMIT).
            (restore-limits)))))))

(defun watchdog-loop (interrupt)
  "On its own ECL thread: interrupt the worker when the host asks (C-g,
timeout, cancellation), with INTERRUPT, ECL's own MP:INTERRUPT-PROCESS.
The worker comes from the host, not from a variable evaluated code could
set.  Runs without interrupts: killing it from Lisp would otherwise unwind
out of a C++ condition-variable wait and leave its mutex locked, and C-g
would freeze Emacs."
  (mp:without-interrupts
    (loop
      (multiple-value-bind (id reason worker) (%next-interrupt)
        (unless id (return))
        (when worker
          (let ((id id) (reason reason))
            (ignore-errors (funcall interrupt worker (lambda () (interrupt-job id reason))))))))))

(defun initialize (heap-limit binding-stack frame-stack)
  "Called once on the worker thread after boot, which made the worker's
stacks BINDING-STACK and FRAME-STACK entries deep."
  (let ((interrupt (fdefinition 'mp:interrupt-process)))
    (install-exit-guards)
    (install-process-guards)
    (start-watchdog interrupt))
  (let ((sink *sink*))
    ;; Nothing of ours writes to Emacs's stdout/stderr or reads its stdin.
    (setf *terminal-io* *null-io*
          *standard-input* *null-input*
          *standard-output* sink
          *error-output* sink
          *trace-output* sink
          *debug-io* *null-io*
          *query-io* *null-io*
          *debugger-hook* #'last-resort-debugger-hook
          ext:*invoke-debugger-hook* #'last-resort-debugger-hook))
  (si::gc-stats t)
  (setf *stack-sizes* (list 'ext:binding-stack binding-stack 'ext:frame-stack frame-stack))
  (when (plusp heap-limit) (set-heap-limit heap-limit))
  t)

(defun start-watchdog (interrupt)
  ;; Known to the host as the watchdog before it runs: evaluated code may
  ;; look for it by name at once.
  (let ((watchdog (mp:make-process :name "agent-q watchdog")))
    (mp:process-preset watchdog #'watchdog-loop interrupt)
    (%set-watchdog watchdog)
    (setf *watchdog* watchdog)
    (mp:process-enable watchdog)))

(defun boot (heap-limit binding-stack frame-stack)
  "INITIALIZE, reporting a failure as a string (NIL on success) for the
host's boot error message."
  (handler-case (progn (initialize heap-limit binding-stack frame-stack) nil)
    (serious-condition (condition)
      (format nil "~A: ~A" (type-name condition) (condition-message condition)))))
