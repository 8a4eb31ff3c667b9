;;;; compile-child.lisp — a tiering batch's Lisp half compiled in a forked
;;;; child process (the C++ half: module/ecl/compile_child.cpp).
;;;;
;;;; ECL's compiler allocates a lot, in the session's heap: each collection
;;;; stops the worker too and marks the compiler's data as well, so
;;;; evaluations running beside a batch met more and longer collections
;;;; (bench/tiering-meanwhile.el: p90 1.15-1.65 times quiet).  So a batch's
;;;; Lisp half runs in a forked copy of the process, which has the session's
;;;; macros, packages and declarations; it stops where gcc would start and
;;;; hands back the C file's gcc and link commands and the compiled code's
;;;; constants.  The parent runs gcc and loads the result, with the
;;;; constants given as objects (SI:*COMPILER-CONSTANTS*, as COMPILE does),
;;;; so literals keep their identity:
;;;; - a constant that is part of the compiled form (the DEFUN's own
;;;;   source) is named by its place in a walk of the form, and the parent
;;;;   takes its own, identical, object;
;;;; - numbers, characters and interned symbols are printed and read;
;;;; - a constant the child made (a macro's expansion: ECASE's keys) is
;;;;   printed and read, when it is a tree of conses, vectors and strings;
;;;;   the child tells those from older objects by a collection right after
;;;;   the fork, and none after it (%MARK-LIVE-OBJECTS);
;;;; - any other constant (an object a macro put in its expansion, say a
;;;;   global's list) would lose its identity: that batch is compiled in
;;;;   the session instead, as is one with a LOAD-TIME-VALUE (COMPILE
;;;;   evaluates its form where it compiles), one while the worker runs a
;;;;   long job, or while the image has other Lisp threads than the
;;;;   runtime's.
;;;; A lock held at the fork stays held in the child: the fork is made
;;;; while the worker holds still between jobs (%HOLD-WORKER) or where it
;;;; waits for compiles (%HOLD-POINT), and no other Lisp thread exists.  A
;;;; child that does not end in time is killed and its batch compiled in
;;;; the session.

(in-package "AGENT-Q")

(defparameter *compile-in-child* t
  "True: a batch's Lisp half runs in a forked copy of the process (see
this file's header); NIL: in the session.")
(defparameter *compile-child-timeout-ms* 30000
  "A compile child that takes longer is killed; its batch is compiled in the session.")
(defparameter *compile-child-stall-ms* 5000
  "A compile child that uses no CPU time for this long (it waits on a lock
held at the fork) is killed too.")
(defparameter *worker-hold-timeout-ms* 200
  "How long a batch waits for the worker to be between jobs before it forks.")

(defvar *compile-child-us* nil
  "Where the last compile child's time went, in µs: (:HOLD waiting for the
worker to be between jobs, :FORK, :CHILD the child's life after the fork,
:GCC the parent's gcc and link, :LOAD).")

(defvar *compile-child-fallback* nil
  "Why the last batch that went to a compile child was compiled in the
session after all (text), or NIL.")

(defun count-compile (where)
  (mp:with-lock (*tiering-lock*)
    (incf (getf *tiering-counts* where))
    (publish-tiering-counts)))

(defun source-objects (form)
  "The objects of FORM a constant of its code may be, in a fixed order:
each cons, vector, string, uninterned symbol or other object but numbers,
characters and interned symbols, reached through conses and simple
vectors, once."
  (let ((seen (make-hash-table :test 'eq))
        (objects (make-array 64 :adjustable t :fill-pointer 0))
        (stack (list form)))
    (loop while stack
          do (let ((x (pop stack)))
               (unless (or (and (symbolp x) (symbol-package x)) (numberp x) (characterp x)
                           (gethash x seen))
                 (setf (gethash x seen) t)
                 (vector-push-extend x objects)
                 (cond ((consp x) (push (cdr x) stack) (push (car x) stack))
                       ((simple-vector-p x)
                        (loop for i from (1- (length x)) downto 0 do (push (svref x i) stack)))))))
    objects))

(defun made-in-child-p (object)
  "True when OBJECT was made after the fork and is a tree of conses,
simple vectors, strings, numbers, characters and symbols, none of its
parts but numbers and interned symbols older than the fork: it can be
printed and read back in the parent without losing an identity."
  (let ((seen (make-hash-table :test 'eq)) (stack (list object)))
    (loop while stack
          do (let ((x (pop stack)))
               (cond ((or (numberp x) (characterp x) (and (symbolp x) (symbol-package x))))
                     ((gethash x seen))
                     ((%preexisting-object-p x) (return-from made-in-child-p nil))
                     (t (setf (gethash x seen) t)
                        (typecase x
                          (symbol)
                          (cons (push (cdr x) stack) (push (car x) stack))
                          (simple-vector (loop for e across x do (push e stack)))
                          ((or simple-string simple-bit-vector))
                          (t (return-from made-in-child-p nil)))))))
    t))

(defun constant-descriptions (constants form)
  "CONSTANTS, the child's compiled code's, as (:SOURCE . index) or (:VALUE
. object) each; NIL when one cannot be handed over."
  (let ((index (make-hash-table :test 'eq)))
    (loop for object across (source-objects form) for i from 0
          do (setf (gethash object index) i))
    (loop for object across constants
          collect (cond ((or (numberp object) (characterp object)
                             (and (symbolp object) (symbol-package object)))
                         (cons :value object))
                        ((gethash object index) (cons :source (gethash object index)))
                        ((made-in-child-p object) (cons :value object))
                        (t (return-from constant-descriptions
                             (values nil (let ((*print-length* 5) (*print-level* 3))
                                           (format nil "a constant would lose its identity: ~A"
                                                   (ignore-errors (one-line (prin1-to-string object))))))))))))

(defun write-child-result (directory result)
  (with-open-file (stream (concatenate 'string directory "result")
                          :direction :output :if-exists :supersede)
    (with-standard-io-syntax
      (let ((*print-readably* t) (*print-circle* t) (*package* (find-package "KEYWORD")))
        (prin1 result stream)))))

(defun read-child-result (directory)
  (with-open-file (stream (concatenate 'string directory "result"))
    (with-standard-io-syntax
      (let ((*read-eval* nil) (*package* (find-package "KEYWORD")))
        (read stream)))))

(defun child-compile (form package directory)
  "In the compile child: compile FORM up to the C file and write the
result file: (:COMPILED COMMANDS CONSTANTS WARNINGS), (:FAILED MESSAGES ERRORS-P)
or (:UNSAFE WHY)."
  (%mark-live-objects)
  (ext:setenv "ECL_PRESERVE_FILES" "1")
  (setf (logical-pathname-translations "TMP") `(("**;*.*" ,(concatenate 'string directory "**/*.*"))))
  (let ((commands '()) (constants nil))
    ;; gcc is not run here: its two commands are noted, and the compile
    ;; stops at the second (the link), when the constants are known.
    (setf (fdefinition (find-symbol "SAFE-RUN-PROGRAM" "C"))
          (lambda (program arguments &rest more)
            (declare (ignore more))
            (push (cons program arguments) commands)
            (when (= (length commands) 2)
              (setf constants si:*compiler-constants*)
              (throw 'child-compiled t))
            0))
    ;; COMPILE evaluates a LOAD-TIME-VALUE form where it compiles: here,
    ;; its effects would be lost.
    (let ((table (symbol-value (find-symbol "*C1-DISPATCH-TABLE*" "C"))))
      (setf (gethash 'load-time-value table)
            (lambda (&rest arguments)
              (declare (ignore arguments))
              (throw 'child-compiled :load-time-value))))
    (multiple-value-bind (values warnings errors-p)
        (call-with-compiler-settings
         package (lambda () (catch 'child-compiled (funcall *c-compile* nil form) nil)))
      (write-child-result
       directory
       (cond ((eq (first values) :load-time-value)
              (list :unsafe "LOAD-TIME-VALUE (its form is evaluated where the code is compiled)"))
             ((or errors-p (not (and (first values) (= (length commands) 2) (vectorp constants))))
              (list :failed warnings errors-p))
             (t (multiple-value-bind (descriptions unsafe) (constant-descriptions constants form)
                  (if unsafe
                      (list :unsafe unsafe)
                      (list :compiled (reverse commands) descriptions warnings)))))))))

(defun run-compile-child (form package directory)
  "Fork; in the child, compile and exit.  The child's pid, or NIL."
  (when (%hold-worker *worker-hold-timeout-ms*)
    (let ((pid nil) (held (%monotonic-us)))
      (unwind-protect (setf pid (%fork-compile-child))
        (unless (eql pid 0) (%release-worker)))
      (setf *compile-child-us* (list :hold (- held (getf *compile-child-us* :start 0))
                                     :fork (- (%monotonic-us) held)))
      (when (eql pid 0)
        (let ((code 1))
          (unwind-protect
               (handler-case (progn (child-compile form package directory) (setf code 0))
                 (serious-condition () (setf code 2)))
            (%child-exit code))))
      pid)))

(defun load-child-code (form commands descriptions)
  "Run the child's gcc COMMANDS here and load the result with the
constants DESCRIPTIONS name: the batch's thunk."
  (let ((run (fdefinition (find-symbol "SAFE-RUN-PROGRAM" "C")))
        (fasl (second (member "-o" (rest (second commands)) :test #'string=))))
    (let ((start (%monotonic-us)))
      (dolist (command commands)
        (funcall run (first command) (rest command)))
      (setf (getf *compile-child-us* :gcc) (- (%monotonic-us) start)))
    (unless (and fasl (probe-file fasl))
      (error "the C compiler failed"))
    (let* ((objects (source-objects form))
           (constants (map 'vector (lambda (description)
                                     (if (eq (car description) :source)
                                         (aref objects (cdr description))
                                         (cdr description)))
                           descriptions))
           (gazonk (find-symbol "GAZONK" "C")))
      (progv (list gazonk) (list nil)
        (let ((si:*compiler-constants* constants) (*load-verbose* nil) (*load-print* nil)
              (start (%monotonic-us)))
          (load fasl)
          (setf (getf *compile-child-us* :load) (- (%monotonic-us) start)))
        (symbol-value gazonk)))))

(defun compile-in-child (form package)
  "Compile FORM with its Lisp half in a compile child: (values THUNK
WARNINGS); NIL when the child cannot be used (then compile in the
session); signals when the compile failed."
  (unless (and *compile-in-child* (only-our-threads-p))
    (return-from compile-in-child nil))
  (let ((directory (%make-private-directory)))
    (unless directory (return-from compile-in-child nil))
    (unwind-protect
         (let* ((pid (progn (setf *compile-child-us* (list :start (%monotonic-us)))
                            (run-compile-child form package directory)))
                (forked (%monotonic-us))
                (status (and pid (%wait-child pid *compile-child-timeout-ms* *compile-child-stall-ms*)))
                (ended (%monotonic-us))
                (result (and (eql status 0) (ignore-errors (read-child-result directory)))))
           (when (and pid (not (eql status 0)))
             (log-note "NOTE: a compile child ~A; compiling in the session"
                       (case status
                         (:timeout "timed out")
                         (:stalled "stopped using the CPU (it waited on a lock?)")
                         (t (format nil "failed (~A)" status)))))
           (case (first result)
             (:compiled
              (destructuring-bind (commands descriptions warnings) (rest result)
                (setf (getf *compile-child-us* :child) (- ended forked))
                (multiple-value-bind (values gcc-warnings)
                    (call-with-compiler-settings
                     package (lambda () (load-child-code form commands descriptions)))
                  (let ((thunk (first values)))
                    (unless (functionp thunk)
                      (error "the native code did not load~@[: ~A~]" (first gcc-warnings)))
                    (values thunk (append warnings gcc-warnings))))))
             (:failed
              (compile-failure (second result) (third result)))
             (t (setf *compile-child-fallback*
                      (if (eq (first result) :unsafe)
                          (format nil "not in a child: ~A" (second result))
                          (format nil "the child ended with ~S" status)))
                nil)))
      (%remove-private-directory directory))))
