;;;; tiering.lisp — the session's functions run at once as bytecodes, then
;;;; natively: a background Lisp thread compiles them with ECL's C compiler
;;;; (gcc) and swaps each native function in, unless it was redefined
;;;; meanwhile.
;;;;
;;;; What is tiered: a DEFUN or DEFMETHOD evaluated at top level by
;;;; evaluate_lisp, eval_form, the REPL or the evaluate commands
;;;; (READ-EVAL-FORMS calls TIERING-NOTE after each form), or as a subform
;;;; of a top-level PROGN, or of an EVAL-WHEN whose situations include
;;;; :EXECUTE, at any depth (nothing is macroexpanded to find them).  Its
;;;; form, already read, is kept with the package it was read in; nothing
;;;; is printed and read again, so uninterned symbols, #. objects and
;;;; literal structures stay the same objects (ECL's COMPILE keeps literals
;;;; by identity).  Definitions that arrive together (20 DEFUNs in one
;;;; call) are compiled as one lambda returning all of them: one gcc run.
;;;;
;;;; What native code would change, and is prevented:
;;;; - A call of another global function of the session's could be inlined
;;;;   (a DECLAIM INLINE, a compiler macro), so its later redefinitions would
;;;;   be missed: every function the body calls that is not the image's own
;;;;   (CL, ECL, ASDF...) is declared NOTINLINE in the native version.  The
;;;;   function's own recursive calls become direct calls, as after COMPILE
;;;;   (so TRACE shows only the outer call), unless its name was proclaimed
;;;;   NOTINLINE.
;;;; - A macro redefined, or a variable proclaimed special, between the
;;;;   evaluation and the compile would expand or bind differently: such a
;;;;   definition stays bytecodes, and says why.
;;;; - A redefinition made while the compile ran wins: the native function
;;;;   replaces only the very bytecodes function it was compiled from.
;;;; Closures (a DEFUN inside a LET), and definitions inside LOCALLY, FLET,
;;;; MACROLET..., are not tiered: they stay bytecodes.
;;;;
;;;; The thread: made by the worker, so every asynchronous signal stays
;;;; blocked on it (Emacs keeps them); known to the host as one of the
;;;; runtime's own (%SET-COMPILER-THREAD), so evaluated code cannot kill,
;;;; interrupt or suspend it; it runs without interrupts and at a lower
;;;; priority (nice 10, which gcc inherits), and before each batch it moves
;;;; off the CPU the worker is pinned to, or was last seen on
;;;; (%KEEP-OFF-WORKER-CPUS; gcc inherits that too), and the worker stays
;;;; off the batch's CPUs until it ends (%RELEASE-COMPILE-CPUS), so an
;;;; evaluation running meanwhile keeps its CPU to itself
;;;; (bench/tiering-meanwhile.el).  A batch's Lisp half runs in a forked
;;;; child when it can (compile-child.lisp); else, in
;;;; the session, ECL's COMPILE holds MP:+LOAD-COMPILE-LOCK+ throughout, and
;;;; on this thread the lock is let go while gcc runs, so the worker's own
;;;; COMPILE or COMPILE-FILE (compile_form, load_system) waits at most for
;;;; the Lisp half of a batch.
;;;;
;;;; DEFMETHODs are tiered in tiering-methods.lisp; a batch's Lisp half
;;;; compiles in a forked child in compile-child.lisp.

(in-package "AGENT-Q")

(defvar *tiering-lock* (mp:make-lock :name "agent-q tiering")
  "Guards *TIERING-QUEUE*, *TIERING-BUSY* and the counters; held briefly.")
(defvar *tiering-wakeup* (mp:make-condition-variable)
  "Signalled when a definition is queued, and when a batch ends.")
(defvar *tiering-queue* '() "TIERED entries waiting for the compiler, newest first.")
(defvar *tiering-busy* nil "True while the compiler thread works on a batch.")
(defvar *tiering-last-note* 0 "Internal real time of the last definition queued.")
(defvar *compiler-process* nil "The background compiler thread, once started.")
(defvar *c-compile* nil "ECL's C compiler's COMPILE, taken once CMP is loaded.")
(defvar *compiler-state* nil
  "NIL until the compiler thread first looked: then :READY, or a string
saying why native compilation is not possible (CMP failed to load).")
(defvar *tiering-counts* (list :waiting 0 :native 0 :bytecodes 0 :batches 0 :failed-batches 0
                                :in-child 0 :in-session 0)
  "Counters since boot: definitions waiting, made native, left as
bytecodes; batches compiled, those that failed, and where compiles' Lisp
half ran: in a compile child, or in the session.")
(defvar *tiered* (make-hash-table :test 'equal)
  "Function name → the TIERED entry of its latest top-level DEFUN.")
(defvar *tiered-methods* (make-hash-table :test 'eq :weakness :key)
  "Method object → the TIERED entry of the DEFMETHOD that made it.")
(defvar *methods-made* '()
  "(FUNCTION . METHOD) for the methods CLOS::INSTALL-METHOD made from
bytecodes since the last TIERING-NOTE, newest first: FUNCTION is the
method's own function, before CLOS wraps it.")
(defvar *methods-made-count* 0 "The length of *METHODS-MADE*.")
(defvar *methods-made-lock* (mp:make-lock :name "agent-q methods made")
  "Guards *METHODS-MADE*: any thread may define methods.")
(defparameter *methods-made-limit* 2000
  "At most this many methods are kept between two top-level forms.")
(defparameter *tiering-subform-limit* 2000
  "Subforms of a top-level PROGN or EVAL-WHEN looked at, at most.")
(defvar *native-names* (make-hash-table :test 'eq :weakness :key)
  "Native function → its name: ECL's COMPILE leaves the functions of a batch
unnamed, and backtraces should name them.")
(defvar *require-lock* (mp:make-lock :name "agent-q require" :recursive t)
  "Held while CMP is loaded and while the session's compiler is switched
\(INSTALL-COMPILER): neither may happen on two threads at once.")
(defvar *path-compiler* (cons nil nil)
  "(PATH . whether a C compiler is on it), so the PATH is searched once.")
(defparameter *tiering-quiet-ms* 40
  "A batch starts once no definition came for this long...")
(defparameter *tiering-longest-wait-ms* 400
  "...or this long after its first one.")
(defparameter *tiering-busy-grace-ms* 1000
  "A batch waits for the worker to finish its job, so that the compile does
not slow it (the collector stops every thread), but at most this long: a
long job (a test suite run just after the DEFUNs) gets the native code.")
(defvar *compiles-awaited* nil
  "True while the worker waits in WAIT-FOR-NATIVE-COMPILES: compile now.")
(defvar *tiering-compiling* nil "True while a batch is being compiled.")
(defvar *tiering-in-gcc* nil "True while the compiler thread waits for gcc (for benchmarks).")
(defvar *tiering-cpus* nil
  "While a batch runs: the CPUs it (the compiler thread and its gcc) keeps
to, which the worker stays off; NIL when it may use every CPU.")
(defparameter *tiering-batch-limit* 200 "At most this many definitions in one gcc run.")
(defparameter *tiering-walk-limit* 20000 "Conses walked in a form, at most.")

(defstruct (tiered (:constructor make-tiered
                       (name form package bytecodes macros specials &optional (kind :defun) method)))
  "One top-level DEFUN or DEFMETHOD of the session, and what became of it."
  name form package
  bytecodes                             ; the function DEFUN made; a method's METHOD-FUNCTION
  macros                                ; ((symbol . macro-function) ...) it used
  specials                              ; symbols special when it was defined
  (kind :defun)                         ; :defun or :method
  (method nil)                          ; the method object a DEFMETHOD made
  (native nil)                          ; a method's native METHOD-FUNCTION, once installed
  (state :new)                          ; :new, :waiting, :native, :bytecodes, :replaced
  (reason nil))                         ; why :bytecodes

(defun bytecodes-function-p (function)
  "True when FUNCTION is ECL bytecodes (COMPILED-FUNCTION-P is true for
those too)."
  (and (functionp function) (nth-value 1 (si:bc-split function)) t))

(defun closure-with-environment-p (function)
  (and (bytecodes-function-p function) (si:bc-split function) t))

(defun c-compiler-on-path-p ()
  "True when a C compiler is on PATH (looked for again when PATH changes)."
  (let ((path (ext:getenv "PATH")))
    (unless (equal path (car *path-compiler*))
      (setf *path-compiler* (cons path (and (c-compiler-available-p) t))))
    (cdr *path-compiler*)))

;;;; Noting definitions (on the worker)

(defun defun-name (form)
  "The function name of FORM when it is (DEFUN NAME LAMBDA-LIST . BODY)."
  (and (consp form) (eq (car form) 'defun)
       (consp (cdr form)) (consp (cddr form)) (listp (caddr form))
       (let ((name (cadr form)))
         (and (or (and (symbolp name) name)
                  (and (consp name) (eq (car name) 'setf) (consp (cdr name))
                       (symbolp (cadr name)) (null (cddr name))))
              name))))

(defun form-symbols (form)
  "The symbols in FORM (a cons tree), or :TOO-BIG past *TIERING-WALK-LIMIT*
conses.  Circular structure is walked once."
  (let ((seen (make-hash-table :test 'eq)) (symbols '()) (count 0))
    (labels ((walk (x)
               (loop
                 (cond ((symbolp x) (when (and x (not (gethash x seen)))
                                      (setf (gethash x seen) t) (push x symbols))
                                    (return))
                       ((not (consp x)) (return))
                       ((gethash x seen) (return))
                       (t (setf (gethash x seen) t)
                          (when (> (incf count) *tiering-walk-limit*)
                            (return-from form-symbols :too-big))
                          (walk (car x))
                          (setf x (cdr x)))))))
      (walk form))
    symbols))

;;; What a top-level form defined is known by identity: a DEFUN's function
;;; is its name's definition right after a top-level DEFUN; inside a PROGN
;;; or EVAL-WHEN, later subforms may have redefined the name, so the
;;; function must be the one made from that DEFUN: ECL keeps each bytecodes
;;; function's definition (FUNCTION-LAMBDA-EXPRESSION), whose lambda list
;;; and body are the very conses of the DEFUN's.  A DEFMETHOD's method is
;;; found the same way among those CLOS::INSTALL-METHOD made while the
;;; form ran (HOOK-INSTALL-METHOD records them): its function's definition
;;; holds the form's body, and its name, qualifiers and lambda list are
;;; the form's.  Nothing is macroexpanded to find them.

(defun tiering-note (form)
  "After FORM was evaluated at top level on the worker: queue the DEFUNs
and DEFMETHODs it made for the native compiler (FORM itself, or the
subforms of a top-level PROGN, or of an EVAL-WHEN whose situations
include :EXECUTE, recursively), when they can be tiered.  Cheap for any
other form."
  (let ((made (and *methods-made* (take-methods-made))))
    (when (consp form)
      (let ((defmethods (note-form form t (list 0) '())))
        (when (and defmethods made)
          (note-defmethods (nreverse defmethods) made))))))

(defun note-form (form top budget defmethods)
  "Note the DEFUNs of FORM (a top-level form when TOP, else a subform of
one) and of its top-level subforms; returns DEFMETHODS with its
DEFMETHODs pushed.  BUDGET is a one-element list counting the subforms."
  (when (and (consp form) (<= (incf (car budget)) *tiering-subform-limit*))
    (case (car form)
      (defun (note-defun form top))
      (defmethod (push form defmethods))
      ((progn eval-when)
       (when (or (eq (car form) 'progn)
                 (and (consp (cdr form)) (listp (second form))
                      (ignore-errors (intersection '(:execute eval) (second form)))))
         (loop for tail on (if (eq (car form) 'progn) (cdr form) (cddr form))
               while (and (consp tail) (<= (car budget) *tiering-subform-limit*))
               do (setf defmethods (note-form (car tail) nil budget defmethods)))))))
  defmethods)

(defun made-from-defun-p (function form)
  "True when the bytecodes FUNCTION was made from the DEFUN FORM: its
definition is (EXT:LAMBDA-BLOCK NAME LAMBDA-LIST . BODY) with FORM's
lambda list and ending with FORM's body forms (the same conses, not
equal ones)."
  (let ((cell (last (nth-value 1 (split-body (cdddr form)))))
        (definition (ignore-errors (function-lambda-expression function))))
    (and (consp cell) (consp definition) (consp (cdr definition)) (consp (cddr definition))
         (eq (third definition) (third form))
         (eq (last definition) cell))))

(defun note-defun (form top)
  "Queue the DEFUN FORM's function, when it is the one FORM made."
  (let ((name (defun-name form)))
    (when name
      (let ((function (and (fboundp name) (fdefinition name))))
        (when (and (bytecodes-function-p function) (not (closure-with-environment-p function))
                   (or top (made-from-defun-p function form)))
          (let ((entry (queue-entry (make-tiered name form *package* function nil nil))))
            (setf (gethash name *tiered*) entry)))))))

(defun queue-entry (entry)
  "Fill in ENTRY's macros and specials, and queue it for the native
compiler, or settle it as bytecodes and why.  Returns ENTRY."
  (let ((symbols (form-symbols (tiered-form entry))))
    (setf (tiered-macros entry) (if (listp symbols)
                                    (loop for s in symbols
                                          for m = (macro-function s)
                                          when m collect (cons s m))
                                    :too-big)
          (tiered-specials entry) (if (listp symbols) (remove-if-not #'si:specialp symbols) '()))
    (cond ((eq symbols :too-big)
           (settle entry :bytecodes "the definition is too big to compile in the background"))
          ((not (%tiering-enabled-p))
           (settle entry :bytecodes "native tiering is off (sly-agent-q-native-tiering)"))
          ((not (c-compiler-on-path-p))
           (settle entry :bytecodes "no C compiler (gcc) on PATH"))
          ((stringp *compiler-state*)
           (settle entry :bytecodes *compiler-state*))
          (t
           (mp:with-lock (*tiering-lock*)
             (push entry *tiering-queue*)
             (setf (tiered-state entry) :waiting)
             (incf (getf *tiering-counts* :waiting))
             (publish-tiering-counts)
             (setf *tiering-last-note* (get-internal-real-time)))
           (mp:condition-variable-broadcast *tiering-wakeup*)
           (ensure-compiler-thread)))
    entry))

(defun settle (entry state &optional reason)
  "ENTRY's definition is now in STATE (:NATIVE, :BYTECODES for REASON, or
:REPLACED by a newer one)."
  (mp:with-lock (*tiering-lock*)
    (when (eq (tiered-state entry) :waiting)
      (decf (getf *tiering-counts* :waiting)))
    (setf (tiered-state entry) state (tiered-reason entry) reason)
    (case state
      (:native (incf (getf *tiering-counts* :native)))
      (:bytecodes (incf (getf *tiering-counts* :bytecodes))))
    (publish-tiering-counts)))

(defun publish-tiering-counts ()
  "Tell the host the counters (for sly-agent-q-runtime-status)."
  (%publish-tiering-counts (max 0 (getf *tiering-counts* :waiting))
                           (getf *tiering-counts* :native) (getf *tiering-counts* :bytecodes)
                           (getf *tiering-counts* :in-child) (getf *tiering-counts* :in-session)))

(defun ensure-compiler-thread ()
  (unless *compiler-process*
    (let ((process (mp:make-process :name "agent-q native compiler")))
      (mp:process-preset process (lambda () (compiler-loop)))
      (%set-compiler-thread process)
      (setf *compiler-process* process)
      (mp:process-enable process))))

;;;; The compiler thread

(defun take-batch ()
  "Wait for definitions, then for a quiet moment, and take them (oldest
first, at most *TIERING-BATCH-LIMIT*).  NIL: the runtime stops."
  (mp:with-lock (*tiering-lock*)
    (loop while (null *tiering-queue*)
          do (setf *tiering-busy* nil)
             (mp:condition-variable-broadcast *tiering-wakeup*)
             (mp:condition-variable-wait *tiering-wakeup* *tiering-lock*))
    (setf *tiering-busy* t))
  (let ((first-seen (get-internal-real-time))
        (units (/ internal-time-units-per-second 1000)))
    (loop
      (let ((now (get-internal-real-time)))
        (when (or (> (- now *tiering-last-note*) (* units *tiering-quiet-ms*))
                  (> (- now first-seen) (* units *tiering-longest-wait-ms*)))
          (return)))
      (sleep (/ *tiering-quiet-ms* 4000))))
  (let ((ready (get-internal-real-time))
        (units (/ internal-time-units-per-second 1000)))
    (loop while (and (%worker-busy-p) (not *compiles-awaited*)
                     (< (- (get-internal-real-time) ready) (* units *tiering-busy-grace-ms*)))
          do (sleep 0.005)))
  (mp:with-lock (*tiering-lock*)
    (let* ((all (reverse *tiering-queue*))
           (batch (subseq all 0 (min (length all) *tiering-batch-limit*))))
      (setf *tiering-queue* (reverse (nthcdr (length batch) all)))
      batch)))

(defun image-symbol-p (symbol)
  "True for symbols of the image's own packages (CL, ECL's, ASDF's, ours)
and CL-USER's that were defined at boot: their functions are not the
session's."
  (let ((package (symbol-package symbol)))
    (and package
         (if (eq package (load-time-value (find-package "CL-USER")))
             (and *image-symbols* (gethash symbol *image-symbols*) t)
             (image-package-p package)))))

(defun split-body (body)
  "BODY of a DEFUN as (values DECLARATIONS FORMS), the docstring dropped."
  (let ((declarations '()))
    (loop
      (cond ((and (consp body) (consp (car body)) (eq (caar body) 'declare))
             (push (pop body) declarations))
            ((and (stringp (car body)) (cdr body))
             (pop body))
            (t (return))))
    (values (nreverse declarations) body)))

(defun declared-notinline-p (name)
  "True when NAME was proclaimed NOTINLINE (asked of ECL's compiler)."
  (let ((symbol (find-symbol "DECLARED-NOTINLINE-P" "C")))
    (and symbol (fboundp symbol) (ignore-errors (funcall symbol name)) t)))

(defun native-lambda (entry)
  "The form compiled for ENTRY: its DEFUN's function, with the session's
functions it calls kept NOTINLINE.  Its recursive calls of itself are
direct calls (LABELS), as COMPILE makes them (CLHS 3.2.2.3): 1.4 times
faster for a (fib 30); not when its name was proclaimed NOTINLINE.  For
a DEFMETHOD, its method's function (METHOD-NATIVE-LAMBDA)."
  (when (eq (tiered-kind entry) :method)
    (return-from native-lambda (method-native-lambda entry)))
  (destructuring-bind (name lambda-list &rest body) (cdr (tiered-form entry))
    (multiple-value-bind (declarations forms) (split-body body)
      (let* ((direct (not (declared-notinline-p name)))
             (called (loop for s in (form-symbols forms)
                           when (and (fboundp s) (not (macro-function s)) (not (special-operator-p s))
                                     (not (and direct (eq s name))) (not (image-symbol-p s)))
                             collect s))
             (body `(,@declarations
                     ,@(when called `((declare (notinline ,@called))))
                     ,@forms)))
        (if direct
            `(labels ((,name ,lambda-list ,@body)) (function ,name))
            `(function (ext:lambda-block ,name ,lambda-list ,@body)))))))

(defun stale-reason (entry)
  "Why ENTRY may not be compiled now, or NIL."
  (cond ((if (eq (tiered-kind entry) :method)
             (not (method-current-p entry))
             (not (eq (and (fboundp (tiered-name entry)) (fdefinition (tiered-name entry)))
                      (tiered-bytecodes entry))))
         :replaced)
        ((loop for (symbol . macro) in (tiered-macros entry)
               thereis (not (eq (macro-function symbol) macro)))
         "a macro it uses was redefined after it; evaluate the DEFUN again")
        ((let ((symbols (form-symbols (tiered-form entry))))
           (and (listp symbols)
                (loop for s in symbols
                      thereis (and (si:specialp s) (not (member s (tiered-specials entry)))))))
         "a variable it names became special after it; evaluate the DEFUN again")))

(defun guard-first-compile ()
  "Make the session's first COMPILE and COMPILE-FILE load CMP under
*REQUIRE-LOCK*, and wrap what it runs gcc with (WRAP-SAFE-RUN-PROGRAM):
ECL's own ones load it on their first call, and the background compiler
may be loading it at that moment (the worker's load then failed:
\"Attempt to redefine function WITH-COMPILATION-UNIT in locked
package\").  Loading CMP replaces both functions, and these with them."
  (dolist (name '(compile compile-file))
    (let ((original (fdefinition name))
          (si:*ignore-package-locks* t))
      (setf (fdefinition name)
            (lambda (&rest arguments)
              (load-cmp)
              (apply original arguments))))))

(defun load-cmp ()
  "Load ECL's C compiler, CMP, under *REQUIRE-LOCK* (once: REQUIRE), and
wrap what it runs gcc with (WRAP-SAFE-RUN-PROGRAM)."
  (mp:with-lock (*require-lock*)
    (let ((*load-verbose* nil) (*compile-verbose* nil))
      (require "CMP"))
    (wrap-safe-run-program)))

(defun prepare-compiler ()
  "Load ECL's C compiler once (with *REQUIRE-LOCK*), take its COMPILE, and
let go of the compile lock while gcc runs on this thread."
  (unless *compiler-state*
    (setf *compiler-state*
          (handler-case
              (mp:with-lock (*require-lock*)
                (load-cmp)
                (let ((compile (if (bytecodes-compiler-p)
                                   (progn (ext:install-c-compiler)
                                          (prog1 (fdefinition 'compile) (ext:install-bytecodes-compiler)))
                                   (fdefinition 'compile))))
                  (setf *c-compile* compile))
                :ready)
            (serious-condition (condition)
              (format nil "ECL's C compiler could not be loaded: ~A" (condition-message condition)))))))

(defun safe-run-program-wrapper ()
  ;; A literal of the compiled code: the wrapper installed, once made.
  (load-time-value (list nil)))

(defun use-compiler-keeper ()
  "Make ECL's compiler run gcc (its *CC* and *LD*) through
sly-agent-q-run-compiler, when there is one: gcc, and what it starts, then
end with this process, however it ends, and leave none of the compile's
files (module/ecl/run_compiler_main.cpp).  The program it runs is passed
in SLY_AGENT_Q_CC.  (ECL's compiler calls its SAFE-RUN-PROGRAM and
EXT:RUN-PROGRAM directly: only its variables reach every gcc it runs.)"
  (let ((keeper (%compiler-keeper))
        (cc (find-symbol "*CC*" "C"))
        (ld (find-symbol "*LD*" "C")))
    (when (and keeper cc ld (boundp cc) (boundp ld)
               (stringp (symbol-value cc)) (equal (symbol-value cc) (symbol-value ld))
               (not (equal (symbol-value cc) keeper)))
      (ext:setenv "SLY_AGENT_Q_CC" (symbol-value cc))
      (setf (symbol-value cc) keeper
            (symbol-value ld) keeper))))

(defun wrap-safe-run-program ()
  "ECL's compiler runs gcc through C::SAFE-RUN-PROGRAM: on the compiler
thread, which holds the compile lock when it compiles here, let the lock
go meanwhile, and say that gcc runs (*TIERING-IN-GCC*), also when the
compiler thread runs a compile child's commands.  Once.  And run gcc
under sly-agent-q-run-compiler (USE-COMPILER-KEEPER)."
  (let* ((symbol (find-symbol "SAFE-RUN-PROGRAM" "C"))
         (original (and symbol (fboundp symbol) (fdefinition symbol)))
         (installed (safe-run-program-wrapper)))
    (when (and original (not (eq original (car installed))))
      (setf (car installed)
            (lambda (&rest arguments)
              (if (eq mp:*current-process* *compiler-process*)
                  (let* ((lock mp:+load-compile-lock+)
                         (give-up (and (mp:holding-lock-p lock) (eql (mp:lock-count lock) 1))))
                    (when give-up (mp:giveup-lock lock))
                    (setf *tiering-in-gcc* t) ; the global value (benchmarks read it)
                    (unwind-protect (apply original arguments)
                      (setf *tiering-in-gcc* nil)
                      (when give-up (mp:get-lock lock))))
                  (apply original arguments)))
            (fdefinition symbol) (car installed)))
    (use-compiler-keeper)))

(defun call-with-compiler-settings (package function)
  "Call FUNCTION with ECL's C compiler quiet, in PACKAGE; its errors (a
macro that signalled, or called EXT:QUIT, while the code was compiled) and
warnings, muffled, are kept as text, the errors first: returns (values
\(MULTIPLE-VALUE-LIST of its values) MESSAGES ERRORS-P)."
  (let ((warnings '()) (errors '())
        (compiler-error (find-symbol "COMPILER-ERROR" "C")))
    (values
     (handler-bind ((warning (lambda (condition)
                               (push (one-line (condition-message condition)) warnings)
                               (muffle-warning condition)))
                    (condition (lambda (condition)
                                 (when (and compiler-error (typep condition compiler-error))
                                   (push (one-line (condition-message condition)) errors)))))
       (let ((*package* package)
             (*compile-verbose* nil) (*compile-print* nil)
             (*standard-output* (make-broadcast-stream))
             (*error-output* (make-broadcast-stream)))
         (progv (let ((symbol (find-symbol "*SUPPRESS-COMPILER-MESSAGES*" "C")))
                  (and symbol (list symbol)))
             (list (find-symbol "COMPILER-MESSAGE" "C"))
           (multiple-value-list (funcall function)))))
     (append (nreverse errors) (nreverse warnings))
     (and errors t))))

(defun compile-failure (messages errors-p)
  "Signal that a native compile failed, saying why: the first of MESSAGES,
an error of the Lisp half when ERRORS-P, else gcc's."
  (if errors-p
      ;; ECL's compiler writes its errors as "Error: * The macro form …".
      (error "compiling the definition signalled: ~A"
             (let ((text (first messages)))
               (loop for prefix in '("Error: " "* ")
                     when (and (stringp text) (eql 0 (search prefix text)))
                       do (setf text (subseq text (length prefix))))
               text))
      (error "the C compiler failed~@[: ~A~]" (first messages))))

(defun compile-here (form package)
  "Compile FORM with ECL's COMPILE in the session: (values THUNK WARNINGS),
or signals."
  (multiple-value-bind (values warnings errors-p)
      (call-with-compiler-settings package (lambda () (funcall *c-compile* nil form)))
    (destructuring-bind (&optional thunk warnings-p failure-p) values
      (declare (ignore warnings-p))
      (when (or failure-p errors-p (not (functionp thunk)))
        (compile-failure warnings errors-p))
      (values thunk warnings))))

(defun compile-batch (entries)
  "Compile ENTRIES natively in one gcc run; returns the native functions
in order, or signals.  Warnings are kept, as text, in the second value."
  (let ((form `(lambda () (list ,@(mapcar (lambda (e) (native-lambda e)) entries))))
        (package (tiered-package (first entries))))
    (multiple-value-bind (thunk warnings) (compile-in-child form package)
      (count-compile (if thunk :in-child :in-session))
      (unless thunk
        (multiple-value-setq (thunk warnings) (compile-here form package)))
      (values (funcall thunk) warnings))))

(defun install-native (entry native)
  "Swap NATIVE in for ENTRY's bytecodes, unless the name was redefined."
  (when (eq (tiered-kind entry) :method)
    (return-from install-native (install-native-method entry native)))
  (let ((name (tiered-name entry)))
    (setf (gethash native *native-names*) name)
    (if (and (fboundp name) (eq (fdefinition name) (tiered-bytecodes entry)))
        (progn (setf (fdefinition name) native)
               (settle entry :native))
        (settle entry :replaced))))

(defun native-function-name (function)
  "The name of FUNCTION when the background compiler made it, else NIL."
  (values (gethash function *native-names*)))

(defun tiered-lambda-list (name)
  "(values LAMBDA-LIST T) when NAME's function is the native version the
background compiler made of its DEFUN, else NIL."
  (let ((entry (gethash name *tiered*)))
    (if (and entry (eq (tiered-state entry) :native) (fboundp name)
             (eq (native-function-name (fdefinition name)) name))
        (values (third (tiered-form entry)) t)
        nil)))

(defun log-note (format-control &rest arguments)
  "A line for the host's log (Emacs's *Agent-Q Log*)."
  (ignore-errors (%post-note (apply #'format nil format-control arguments))))

(defun run-batch (batch)
  (setf *tiering-cpus* (%keep-off-worker-cpus))
  (unwind-protect (run-live-entries batch)
    (setf *tiering-cpus* nil)
    (%release-compile-cpus)))

(defun run-live-entries (batch)
  "Settle BATCH's stale entries, and compile the others, one gcc run per package."
  (let ((live '()))
    (dolist (entry batch)
      (let ((reason (stale-reason entry)))
        (cond ((eq reason :replaced) (settle entry :replaced))
              (reason (settle entry :bytecodes reason))
              (t (push entry live)))))
    (setf live (nreverse live))
    (when live
      ;; Packages differ (in-package between DEFUNs): one batch per package.
      (loop while live
            do (let* ((package (tiered-package (first live)))
                      (group (remove package live :key (lambda (e) (tiered-package e)) :test-not #'eq)))
                 (setf live (remove package live :key (lambda (e) (tiered-package e)) :test #'eq))
                 (compile-group group))))))

(defun compile-group (group)
  (mp:with-lock (*tiering-lock*) (incf (getf *tiering-counts* :batches)))
  (handler-case
      (let ((natives (compile-batch group)))
        (mapc (lambda (e n) (install-native e n)) group natives))
    (serious-condition (condition)
      (mp:with-lock (*tiering-lock*) (incf (getf *tiering-counts* :failed-batches)))
      (if (rest group)
          ;; One bad definition should not keep the others as bytecodes.
          (dolist (entry group) (compile-group (list entry)))
          (let ((entry (first group))
                (text (one-line (or (ignore-errors (condition-message condition)) "unknown error"))))
            (settle entry :bytecodes (format nil "the native compile failed: ~A" text))
            (log-note "WARNING: ~A stays bytecodes: the native compile failed: ~A"
                      (entry-label entry) text))))))

(defun compiler-loop ()
  "The compiler thread: compile batches until the runtime stops."
  (%lower-thread-priority)
  (%arm-stack-guard)
  (mp:without-interrupts
    (let ((*standard-output* *sink*) (*error-output* *sink*) (*trace-output* *sink*)
          (*standard-input* *null-input*) (*query-io* *null-io*) (*debug-io* *null-io*)
          (*terminal-io* *null-io*))
      (loop
        (let ((batch (take-batch)))
          (handler-case
              (progn
                (prepare-compiler)
                (if (stringp *compiler-state*)
                    (dolist (entry batch) (settle entry :bytecodes *compiler-state*))
                    (unwind-protect (progn (setf *tiering-compiling* t) (run-batch batch))
                      (setf *tiering-compiling* nil))))
            (serious-condition (condition)
              (dolist (entry batch)
                (when (eq (tiered-state entry) :waiting)
                  (settle entry :bytecodes "the background compiler failed")))
              (log-note "WARNING: the background native compile failed: ~A"
                        (ignore-errors (one-line (condition-message condition)))))))))))

;;;; Looking at it

(defun wait-for-native-compiles (&optional (timeout 60))
  "Wait until the background compiler has nothing to do (at most TIMEOUT
seconds).  True when it is idle.  For benchmarks and tests: nothing
needs to wait for it."
  (let ((deadline (+ (get-internal-real-time) (* timeout internal-time-units-per-second))))
    ;; The global value (a LET would bind it for this thread only).
    (unwind-protect
         (progn
           (setf *compiles-awaited* t)
           (loop
             (when (mp:with-lock (*tiering-lock*) (and (null *tiering-queue*) (not *tiering-busy*)))
               (return t))
             (when (> (get-internal-real-time) deadline) (return nil))
             ;; Holding no lock here: a batch may fork meanwhile.
             (unless (%hold-point) (sleep 0.01))))
      (setf *compiles-awaited* nil))))

(defun tiering-state-text (name)
  "How NAME's function runs: native, bytecodes waiting, or bytecodes and
why; for a generic function, how many of the methods the session's
DEFMETHODs made are native.  NIL when NAME names no function, one of the
image's, or a generic function without such methods."
  (let ((function (and (fboundp name) (not (macro-function name)) (not (special-operator-p name))
                       (fdefinition name)))
        (entry (gethash name *tiered*)))
    (cond ((typep function 'generic-function)
           (methods-state-text function))
          ((or (null function) (and (symbolp name) (image-symbol-p name)))
           nil)
          ((not (bytecodes-function-p function))
           (if (and entry (eq (tiered-state entry) :native)) "native (compiled in the background)" "native"))
          ((closure-with-environment-p function)
           "bytecodes: a closure over a lexical environment (not compiled in the background)")
          ((or (null entry) (not (eq (tiered-bytecodes entry) function)))
           "bytecodes: not defined by a top-level DEFUN of the session (not compiled in the background)")
          ((eq (tiered-state entry) :waiting) "bytecodes, waiting for the native compiler")
          ((eq (tiered-state entry) :replaced)
           "bytecodes: its definition was replaced while it waited for the native compiler (TRACE, say); evaluate the DEFUN again")
          (t (format nil "bytecodes: ~A" (or (tiered-reason entry) "not compiled"))))))

(defun tiering-status ()
  "A plist: :ENABLED :COMPILER :WAITING :NATIVE :BYTECODES :BATCHES :FAILED-BATCHES."
  (mp:with-lock (*tiering-lock*)
    (list* :enabled (and (%tiering-enabled-p) t)
           :compiler (cond ((stringp *compiler-state*) *compiler-state*)
                           ((c-compiler-on-path-p) "gcc")
                           (t "none"))
           (copy-list *tiering-counts*))))

(defun forget-tiering ()
  "For reset_session: forget the session's entries (the counters stay)."
  (mp:with-lock (*tiering-lock*)
    (clrhash *tiered*)
    (clrhash *tiered-methods*)))
