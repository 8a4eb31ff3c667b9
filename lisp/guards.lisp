;;;; guards.lisp — what evaluated code may not do inside Emacs's process:
;;;; exit it, end or stop the runtime's own threads, change how the process
;;;; handles signals, or let a finalizer's error escape.

(in-package "AGENT-Q")

(defvar *exit-process* nil "The original MP:EXIT-PROCESS.")
(defvar *running-finalizers* nil
  "True while the worker runs finalizers (RUN-PENDING-FINALIZERS): only then
may the host's :FINALIZER interrupt land.")
(defvar *pending-finalizers* '()
  "(FUNCTION . OBJECT) of the finalizers the collector has called for,
for the worker to run (see RUN-PENDING-FINALIZERS).")

(define-condition exit-intercepted (error)
  ((operator :initarg :operator :reader exit-intercepted-operator))
  (:report (lambda (condition stream)
             (format stream "~A was intercepted: this Lisp runs inside its host (Emacs, ~
                             or the MCP server) and may not exit. The session is still alive."
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

;; EXT:GC collects inside a C section of ECL's where interrupts wait (see
;; module/ecl/interrupt_gate.cpp: an interrupt is never run inside one).  A
;; loop of collections spends nearly all its time there, so the wait for a
;; signal that finds it elsewhere could outlast the interrupt's grace: the
;; collection lets a waiting interrupt in as soon as it is over, when Lisp
;; allows interrupts.  (Code compiled to call ECL's collector directly does
;; not come here: the watchdog replaces a worker that cannot be interrupted.)
(defun install-collection-guard ()
  "Make EXT:GC (also SI:GC) let in an interrupt that waited for the
collection to end, when interrupts are enabled."
  (let ((original (fdefinition 'ext:gc)))
    (setf (fdefinition 'ext:gc)
          (lambda (&rest args)
            (multiple-value-prog1 (apply original args)
              (when ext:*interrupts-enabled*
                (si:check-pending-interrupts)))))))

;; ECL resizes a thread's stacks under the running code.  Its Lisp stack
;; holds the frames of the bytecodes running the very call (growing it
;; left them behind: Emacs aborted, "not a lisp data object", and a Lisp
;; stack set below what it held was cut under them); a C stack set above
;; the thread's real one stops ECL seeing overflows, and raises the
;; process's RLIMIT_STACK, which is Emacs's.  So those two stay as they
;; are, and the binding and frame stacks may grow, and shrink back to their
;; size at boot, never below.
(defvar *stack-sizes* '()
  "Plist of the worker's stack sizes in entries (EXT:BINDING-STACK,
EXT:FRAME-STACK) set at boot, which EXT:GET-LIMIT does not report.")

(defun stack-limit-refusal (limit size)
  "Why setting the stack LIMIT to SIZE on this thread cannot work, or NIL
when it can."
  (let ((current (ext:get-limit limit))
        (boot (getf *stack-sizes* limit 0)))
    (cond ((eq limit 'ext:c-stack)
           (format nil "this thread's C stack is ~:D bytes, fixed when the thread started: ~
                        ECL cannot resize it (a larger limit only stops it seeing overflows, ~
                        and raises Emacs's own stack limit)." current))
          ((eq limit 'ext:lisp-stack)
           (format nil "the Lisp stack (~:D entries) holds the frames of the code running ~
                        this call: resizing it moves it under them." current))
          ((< size boot)
           (format nil "~S may grow, or shrink back to its size at boot (~:D), but not below: ~
                        ECL would cut the stack under the running code." limit boot)))))

(defun original-set-limit ()
  ;; A literal of the compiled code, not a variable: evaluated code cannot
  ;; reach ECL's own EXT:SET-LIMIT.
  (load-time-value (list nil)))

(defun install-limit-guard ()
  "Make EXT:SET-LIMIT refuse stack sizes that would break the thread using them."
  (let ((original (fdefinition 'ext:set-limit)))
    (setf (car (original-set-limit)) original
          (fdefinition 'ext:set-limit)
          (lambda (limit size)
            (let ((why (and (member limit '(ext:c-stack ext:lisp-stack ext:binding-stack ext:frame-stack))
                            (integerp size)
                            (stack-limit-refusal limit size))))
              (if why
                  (error 'operation-refused
                         :operator (format nil "(EXT:SET-LIMIT '~S ~D)" limit size) :reason why)
                  (funcall original limit size)))))))

(defun set-limit (limit size)
  "ECL's own EXT:SET-LIMIT, for the runtime restoring its limits."
  (funcall (or (car (original-set-limit)) #'ext:set-limit) limit size))

(defun guarded-thread-function (function)
  "FUNCTION (a function designator), run in a new thread after arming it
against C-stack overflow, with the origin of the code that started the
thread (agent-code.lisp): an agent's thread stays an agent's."
  (let ((token (%origin-token)))
    (lambda (&rest args)
      (%arm-stack-guard)
      (%adopt-origin token)
      (apply function args))))

(defun install-thread-guards ()
  "Make the threads evaluated code starts get an alternate signal stack and
guard regions like the worker's, so that ECL's C code recursing past
their stack is a STACK-OVERFLOW error there too
\(module/ecl/stack_guard.hpp)."
  (dolist (name '(mp:process-run-function mp:process-preset))
    (let ((original (fdefinition name)))
      (setf (fdefinition name)
            (lambda (first function &rest args)
              (apply original first (guarded-thread-function function) args))))))

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
                 :reason "this Lisp runs inside its host (Emacs, or the MCP server), and how the process handles signals is the host's.")))
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
  ;; ECL runs a finalizer inside whatever allocation set the collector off,
  ;; on any thread, between any two steps of the code there: its error was
  ;; taken for that evaluation's (or a later one's), and even a handler's
  ;; non-local exit out of it sometimes escaped the evaluation whole.  So
  ;; the collector only queues the object; the worker runs the function
  ;; at the end of a job, where its error is a warning of that job.
  (let ((original (fdefinition 'ext:set-finalizer)))
    (setf (fdefinition 'ext:set-finalizer)
          (lambda (object function)
            (funcall original object
                     (if (functionp function)
                         ;; Run later with the origin of the code that set it.
                         (let ((function (origin-keeping-function function)))
                           (lambda (object) (mp:atomic-push (cons function object) *pending-finalizers*)))
                         function)))))
  (let ((original (fdefinition 'mp:exit-process)))
    (setf *exit-process* original
          (fdefinition 'mp:exit-process)
          (lambda (&rest args)
            (if (%runtime-thread-p)
                (error 'exit-intercepted :operator "MP:EXIT-PROCESS")
                (apply original args))))))
