;;;; build.lisp — compile the AGENT-Q Lisp files to native code and bundle
;;;; them as a static library for the Emacs module.  Run by CMake:
;;;;   ecl --norc --eval '(defparameter cl-user::*build-dir* "…/")' \
;;;;       --eval '(defparameter cl-user::*source-dir* "…/lisp/")' --load build.lisp
;;;;
;;;; The files are compiled as one unit (agent-q.lisp in the build
;;;; directory, their concatenation): ECL's compiler calls a function
;;;; defined in the same file directly, in C, not through its symbol.  So
;;;; evaluated code that redefines a function of the runtime's, say
;;;; (SETF (FDEFINITION 'AGENT-Q::EVALUATE-STRING) …), changes what it
;;;; calls itself, never what the worker runs.  The same holds for the
;;;; functions written in C++ (DEFINE-HOST-FUNCTIONS in package.lisp) and
;;;; the readers of the runtime's structures (below).  Left to their
;;;; names: generic functions (a condition's readers, the tool protocol's
;;;; classes), which are there to be extended, and ECL's own functions.

(require :cmp)

(defparameter *files* '("package" "capture" "guards" "errors" "process-guard" "evaluate" "worker" "session" "emacs" "agent-code" "debugger" "held-errors" "tools" "execution" "introspection" "xref" "tiering" "tiering-methods" "compile-child" "systems" "repl-tools" "inspector" "syntax" "profile" "test-runner" "form-edit")
  "In load order.")

(defun read-structure-slots-directly ()
  "Compile a call of a reader of an AGENT-Q structure as the slot access
itself (SI:STRUCTURE-REF, which checks the type), not as a call through
the reader's name: so too for the structures (ECL calls their readers by
name at the default safety)."
  (let ((package (find-package "AGENT-Q")))
    (do-symbols (name package)
      (when (eq (symbol-package name) package)
        (dolist (slot (si:get-sysprop name 'si::structure-slot-descriptions))
          (let ((offset (nth 4 slot)) (reader (nth 5 slot)) (structure name))
            (when (and reader (eq (symbol-package reader) package))
              (setf (compiler-macro-function reader)
                    (lambda (form environment)
                      (declare (ignore environment))
                      (if (and (eq (first form) reader) (= (length form) 2))
                          `(si:structure-ref ,(second form) ',structure ,offset)
                          form))))))))))

(let ((unit (merge-pathnames "agent-q.lisp" cl-user::*build-dir*))
      (object (merge-pathnames "agent-q.o" cl-user::*build-dir*)))
  (handler-bind ((warning #'muffle-warning))
    ;; Loaded first, as source: the macros and the functions they call
    ;; at expansion time exist when the unit is compiled.
    (with-open-file (out unit :direction :output :if-exists :supersede :external-format :utf-8)
      (dolist (name *files*)
        (let ((source (merge-pathnames (concatenate 'string name ".lisp") cl-user::*source-dir*)))
          (load source :external-format :utf-8)
          (format out "~&;;;; ---- ~A.lisp~%(in-package \"CL-USER\")~%" name)
          (with-open-file (in source :external-format :utf-8)
            (loop for line = (read-line in nil)
                  while line
                  do (write-line line out))))))
    (read-structure-slots-directly)
    (unless (compile-file unit :output-file object :system-p t :external-format :utf-8)
      (format *error-output* "~&build.lisp: compiling ~A failed~%" unit)
      (ext:quit 1)))
  (c:build-static-library (merge-pathnames "libagentq_lisp.a" cl-user::*build-dir*)
                          :lisp-files (list object)
                          :init-name "init_agentq_lisp")
  (ext:quit 0))
