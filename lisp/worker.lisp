;;;; worker.lisp — the worker loop of the ECL thread that runs jobs, the
;;;; watchdog that interrupts it, limits re-armed after a job, and boot.

(in-package "AGENT-Q")

(defvar *worker* nil
  "The ECL process that runs jobs, for looking at.  The runtime keeps its
own reference, out of evaluated code's reach, and never reads this.")
(defvar *watchdog* nil
  "The ECL process that interrupts the worker, for looking at (see *WORKER*).")
(defvar *heap-limit* nil "Heap limit in bytes re-armed after exhaustion, or NIL.")

(defun restore-limits ()
  "Re-arm the stack guards an overflow used up, and the heap limit."
  ;; Not the C and Lisp stacks: EXT:SET-LIMIT refuses to change them.
  (dolist (limit '(ext:binding-stack ext:frame-stack))
    ;; EXT:GET-LIMIT says 0 until a SET-LIMIT (by us, or evaluated code
    ;; raising a limit, which is kept); boot's sizes are in *STACK-SIZES*.
    ;; Never below boot's: evaluated code may have shrunk it (and a
    ;; frame stack of 4 entries fails every later evaluation).
    (let ((size (max (ext:get-limit limit) (getf *stack-sizes* limit 0))))
      ;; 0 means "ECL's default, size unknown": setting it would shrink the stack.
      (when (and (plusp size) (/= size (ext:get-limit limit)))
        (ignore-errors (set-limit limit size)))))
  (when *heap-limit*
    (ignore-errors (set-limit 'ext:heap-size *heap-limit*))))

(defun set-heap-limit (bytes)
  (setf *heap-limit* bytes)
  (set-limit 'ext:heap-size bytes))

(defun interrupt-job (id reason)
  "Run in the worker by MP:INTERRUPT-PROCESS: abandon job ID, if it is
still the one running."
  ;; The running job's id comes from C++: evaluated code cannot make a job
  ;; uninterruptible by changing Lisp state.  ECL also runs queued
  ;; interrupts where Lisp has them disabled (when C code re-enables its
  ;; own): outside the job's catch, or inside MP:WITHOUT-INTERRUPTS.  Such a
  ;; call does nothing; the host repeats the interrupt.
  ;; :FINALIZER (the finalizers' budget spent) lands only among them.
  ;; :BREAK (the REPL's C-c C-c) stops in the REPL's debugger instead,
  ;; with CONTINUE: the evaluation goes on from where it was.
  (when (and ext:*interrupts-enabled* (eql (%current-job) id)
             (or (not (eq reason :finalizer)) *running-finalizers*))
    (if (eq reason :break)
        (repl-break)
        (throw '%job-aborted (values :aborted reason)))))

(defun aborted-text (reason timeout-ms &optional note)
  "The [ERROR] text of a job stopped for REASON; NOTE, when given, is a
line the tool adds."
  (with-output-to-string (out)
    (case reason
      (:timeout
       (format out "[ERROR] TIMEOUT~%Evaluation did not finish within ~,1F seconds and was interrupted.~%~
                    The session is still alive.  The limit is the session's setting, which a ~
                    call's `timeout' argument may only lower: code that needs longer needs the ~
                    user to raise it."
               (/ timeout-ms 1000)))
      (t
       (format out "[ERROR] INTERRUPTED~%Evaluation was interrupted (~A).~%The session is still alive."
               (if (eq reason :quit) "quit by the user" "cancelled"))))
    (when note (format out "~%~A" note))
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
  "True when the worker and the watchdog are the only Lisp threads (with
the background compiler and former workers: a held error's, or a retired
one): nobody else can hold (and use) the streams an evaluation was given."
  (<= (%lisp-thread-count) (+ (if *compiler-process* 3 2) (%former-worker-count))))

(defun ecl-interrupt-process ()
  ;; A literal cell: ECL's MP:INTERRUPT-PROCESS as it was before the guards.
  (load-time-value (list nil)))

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

(defmacro guarded-job ((timeout-ms &optional note) &body body)
  "Run BODY, which returns (values success text), with interrupts let in,
so that C-g, a timeout or a cancellation abandons it; then put right what
it may have used up or left behind; NOTE is added to the [ERROR] text of
a job stopped by an interrupt.  (A macro: no closure per job.)"
  `(multiple-value-bind (status text)
       (catch '%job-aborted
         (with-interrupts-allowed
           ,@body))
     (unless (only-our-threads-p)
       (rotate-capture-streams))
     (when (or *stack-overflowed* (eq status :aborted) (not status))
       (restore-limits))
     (if (eq status :aborted)
         (values nil (aborted-text text ,timeout-ms ,note))
         (values status text))))

;;;; The built-in tools: each declared once, beside its handler, with
;;;; DEFINE-BUILT-IN-TOOL; the flags a tool carries are keys of its
;;;; definition, not lists of names here.

(defvar *built-in-tools* '()
  "The built-in Agent-Q tools' definitions, in registration order: lists
\(NAME DESCRIPTION PARAMETERS . KEYS) as DEFINE-BUILT-IN-TOOL takes them.")

(defmacro define-built-in-tool (name description parameters &rest keys)
  "Make NAME a built-in tool, registered at boot and by
REGISTER-AGENT-Q-TOOLS.  DESCRIPTION, PARAMETERS, :REQUIRED,
:SAFETY-LEVEL, :CATEGORIES and :HANDLER (the function its jobs call) are
DEFINE-TOOL's; :OWN true makes it the runtime's own (evaluated code may
neither replace its handler nor define a tool of its name); :ABORT-NOTE
is the line an interrupted call's [ERROR] text adds; :OUTPUT-SCHEMA the
JSON text of its structured result's schema (its handler then calls
NOTE-STRUCTURED-RESULT)."
  `(progn
     (setf *built-in-tools*
           (append (remove ,name *built-in-tools* :key #'car :test #'string=)
                   (list (list ,name ,description ,parameters ,@keys))))
     ,name))

(defun own-tools ()
  ;; A literal of the compiled code, not a variable: evaluated code cannot
  ;; empty or replace the table.  Name → T.
  (load-time-value (let ((own (make-hash-table :test 'equal)))
                     (setf (gethash "evaluate_lisp" own) t
                           (gethash "%tool_hooks" own) t)
                     own)))

(defun abort-notes ()
  ;; Name → the line an interrupted call's [ERROR] text adds.
  (load-time-value (make-hash-table :test 'equal)))

(defun job-handlers ()
  ;; A literal too, for the same reason.
  (load-time-value (make-hash-table :test 'equal)))

(defun job-handler (tool)
  "The function that runs jobs of TOOL, or NIL."
  (gethash tool (job-handlers)))

(defun register-job-handler (tool function)
  "Run jobs of the Lisp-handled tool TOOL (a name) with FUNCTION, which
is called with the job's arguments (a hash table with string keys) and
returns its result (see CALL-TOOL-HANDLER).  The runtime's own tools
cannot be replaced."
  (check-type tool string)
  (check-type function function)
  (when (nth-value 1 (gethash tool (own-tools)))
    (error 'operation-refused :operator "REGISTER-JOB-HANDLER"
                              :reason (format nil "~A is the runtime's own tool." tool)))
  (setf (gethash tool (job-handlers)) function))

(defun register-built-in-job-handlers ()
  "Make the handlers of the built-in tools run their jobs (at boot, before
evaluated code can run), the runtime's own tools among them."
  (setf (gethash "%tool_hooks" (job-handlers)) #'run-tool-hooks-job)
  (dolist (entry *built-in-tools*)
    (destructuring-bind (name description parameters &key own abort-note handler &allow-other-keys) entry
      (declare (ignore description parameters))
      (when abort-note
        (setf (gethash name (abort-notes)) abort-note))
      (when own
        (setf (gethash name (own-tools)) t
              (gethash name (job-handlers)) handler)))))

(defun register-built-in-tools (&key keep-others)
  "Register the built-in tools straight in the one registry: their tool
objects are made when Lisp first asks for them (see SYNC-REGISTRY), which
keeps boot fast.  KEEP-OTHERS (at boot): leave a tool of the same name
defined elsewhere (in Emacs, before Lisp booted) in place."
  (let ((elsewhere (and keep-others
                        (loop for entry in (%tools)
                              unless (eq (seventh entry) :lisp) collect (first entry)))))
    (dolist (entry *built-in-tools*)
      (destructuring-bind (name description parameters
                           &key required (safety-level :safe) categories handler own abort-note output-schema)
          entry
        (declare (ignore abort-note))
        (unless (member name elsewhere :test #'string=)
          (let ((failure (%define-tool name description parameters required safety-level categories
                                       (if own :own t) output-schema)))
            (when failure
              (error 'tool-definition-error :message failure)))
          (unless own                   ; set once, at boot
            (register-job-handler name handler))
          ;; A tool object of the same name made in Lisp is not this one.
          (remhash name *agent-q-registry*))))))

(defun tool-abort-note (tool)
  "The line the [ERROR] text of an interrupted call of TOOL adds, or NIL."
  (values (gethash tool (abort-notes))))

(defvar *jobs-that-may-intern* 0
  "How many jobs have run that may have interned or uninterned symbols:
all but apropos_search's.  PREFIX-INDEX (introspection.lisp) rechecks a
package after one.")

(defun run-job (tool arguments code package flags output-limit timeout-ms interactive-key)
  "Run one job: an evaluation, or a call of the Lisp-handled tool TOOL.
Returns true and the result text, or NIL and the [ERROR] text.
INTERACTIVE-KEY: see EVALUATE-STRING."
  ;; TOOL is a string (EQUAL: no keyword arguments to parse, as STRING= has).
  (unless (equal tool "apropos_search")
    (incf *jobs-that-may-intern*))
  (setf *job-tool* tool)                ; for an approval question (agent-code.lisp)
  (let ((*want-structure* (/= 0 (logand flags 8))))
    (if (equal tool "evaluate_lisp")
        (run-evaluate-job code package flags output-limit timeout-ms interactive-key)
        (let ((handler (job-handler tool)))
          (if handler
              (guarded-job (timeout-ms (tool-abort-note tool)) (call-tool-handler handler arguments output-limit))
              (values nil (format nil "[ERROR] UNKNOWN-TOOL~%No Lisp handler for the tool ~S." tool)))))))

(defun note-structured-result (object)
  "When the running job's caller takes structured results (an MCP client),
give it OBJECT (a hash table, plist or alist: JSON-TEXT's kinds), which
fits the tool's :OUTPUT-SCHEMA."
  (when *want-structure*
    (%set-job-structure (json-text object))))

(defun run-evaluate-job (code package flags output-limit timeout-ms interactive-key)
  ;; FLAGS: bit 0 capture time, bit 1 the REPL's debugger (debugger.lisp),
  ;; bit 2 hold unhandled errors (held-errors.lisp), bit 3 a structured
  ;; result too (EVALUATION-STRUCTURE, NOTE-STRUCTURED-RESULT: bound in
  ;; RUN-JOB), bit 4 a copy of the output to the host as it is printed (an
  ;; MCP client's progress).
  (declare (fixnum flags))
  (let ((*repl-debugger* (/= 0 (logand flags 2)))
        (*copy-output* (/= 0 (logand flags 16))))
    (if (/= 0 (logand flags 4))
        (run-held-evaluation-job code package flags output-limit timeout-ms interactive-key)
        (guarded-job (timeout-ms) (evaluate-string code package (/= 0 (logand flags 1)) output-limit interactive-key)))))

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

(defvar *tool-execution-hooks*)         ; execution.lisp
(defvar *compiler-process*)             ; tiering.lisp
(defvar *hooks-published* nil
  "Whether the host was last told that *TOOL-EXECUTION-HOOKS* has hooks.")

(defun publish-hooks ()
  "Tell the host whether calls made from Emacs or MCP need to run Lisp's
hooks: only then does each of them cost a job more."
  (let ((present (and (boundp '*tool-execution-hooks*) *tool-execution-hooks* t)))
    (unless (eq present *hooks-published*)
      (setf *hooks-published* present)
      (%set-lisp-hooks present))))

(defparameter +runtime-generic-functions+
  '(stream-capture emacs-error-message exit-intercepted-operator operation-refused-operator
    operation-refused-reason tool-definition-error-message tool-result-id tool-result-success)
  "The runtime's generic functions its compiled code calls by name (everything
else it calls directly: build.lisp, package.lisp).")

(defun runtime-generic-functions ()
  ;; A literal of the compiled code: (NAME . FUNCTION) as INITIALIZE found them.
  (load-time-value (list nil)))

(defun remember-runtime-generic-functions ()
  (setf (car (runtime-generic-functions))
        (mapcar (lambda (name) (cons name (fdefinition name))) +runtime-generic-functions+)))

(defun repair-runtime-generic-functions ()
  "Put back a generic function of the runtime's that evaluated code replaced
\(say with (SETF FDEFINITION)): the runtime calls those by name."
  (let ((entries (car (runtime-generic-functions))))
    ;; Before every job: the function cells read in one call (a tenth of
    ;; FBOUNDP and FDEFINITION's cost, which was 0.5 us a job).
    (unless (%functions-intact-p entries)
      (dolist (entry entries)
        (let ((name (car entry)))
          (unless (and (fboundp name) (eq (fdefinition name) (cdr entry)))
            (fmakunbound name)
            (setf (fdefinition name) (cdr entry))))))))

(defun worker-loop (fresh)
  "Serve jobs until %NEXT-JOB says stop.  Interrupts are only let in while
a job runs, so a late interrupt can never hit the loop itself.  FRESH: this
thread replaces a worker that was stuck in a job; that job may have left
the limits or the output streams in any state."
  (setf *worker* (%own-process))
  (mp:without-interrupts
    (when fresh
      (restore-limits)
      (rotate-capture-streams))
    (loop
      (multiple-value-bind (id tool code package flags output-limit timeout-ms heap-limit arguments interactive-key)
          (%next-job)
        (unless id (return))
        (serve-job id tool code package flags output-limit timeout-ms heap-limit arguments interactive-key)))))

(defun serve-job (id tool code package flags output-limit timeout-ms heap-limit arguments interactive-key)
  "Run one job, as %NEXT-JOB or %INLINE-JOB gave it, and hand its result
to %FINISH-JOB.  On the worker, interrupts held off but inside the job."
  (repair-runtime-generic-functions)
  (when heap-limit (ignore-errors (set-heap-limit heap-limit)))
  (multiple-value-bind (success text)
      (catch '%worker-top
        (run-job tool arguments code package flags output-limit timeout-ms interactive-key))
    ;; Before the job ends: the caller's next call reads it.
    (publish-hooks)
    (when (%finish-job id success text)
      ;; Evaluated code shrank the stacks (EXT:SET-LIMIT).
      (restore-limits))))

(defun run-inline-job ()
  "Run the job the worker made itself for a call its idle reader read (see
docs/design.md, \"One thread for the usual call\"): called from inside
%NEXT-JOB, so in WORKER-LOOP's dynamic extent, interrupts held off."
  (multiple-value-bind (id tool code package flags output-limit timeout-ms heap-limit arguments interactive-key)
      (%inline-job)
    (when id
      (serve-job id tool code package flags output-limit timeout-ms heap-limit arguments interactive-key))))

(defun watchdog-loop (interrupt)
  "On its own ECL thread: interrupt the worker when the host asks (C-g,
timeout, cancellation), with INTERRUPT, ECL's own MP:INTERRUPT-PROCESS.
The worker comes from the host, not from a variable evaluated code could
set.  Runs without interrupts: killing it from Lisp would otherwise unwind
out of a C++ condition-variable wait and leave its mutex locked, and C-g
would freeze Emacs."
  (%arm-stack-guard)
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
    ;; ECL's own, before the guards wrap it: held-errors.lisp interrupts
    ;; the runtime's own threads with it.
    (setf (car (ecl-interrupt-process)) interrupt)
    (install-exit-guards)
    (install-thread-guards)
    (install-process-guards)
    (install-world-guards)
    (install-collection-guard)
    (guard-first-compile)
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
  (install-limit-guard)
  (when (plusp heap-limit) (set-heap-limit heap-limit))
  (register-built-in-job-handlers)
  (remember-runtime-generic-functions)
  ;; The contracts' examples use the tool API unqualified, in CL-USER.
  (import-tool-api "CL-USER")
  (when (%tools-attached)
    (register-built-in-tools :keep-others t)
    ;; No tool becomes the runtime's own after boot.
    (%seal-own-tools))
  ;; Last: what the image defines before any evaluated code runs.
  (snapshot-image)
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
