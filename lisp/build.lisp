;;;; build.lisp — compile the AGENT-Q Lisp files to native code and bundle
;;;; them as a static library for the Emacs module.  Run by CMake:
;;;;   ecl --norc --eval '(defparameter cl-user::*build-dir* "…/")' \
;;;;       --eval '(defparameter cl-user::*source-dir* "…/lisp/")' --load build.lisp

(require :cmp)

(defparameter *files* '("package" "capture" "guards" "errors" "process-guard" "evaluate" "worker" "session" "emacs" "debugger" "tools" "execution" "introspection" "xref" "tiering" "systems" "repl-tools")
  "In load order: each is loaded before the next is compiled.")

(let ((objects '()))
  (handler-bind ((warning #'muffle-warning))
    (dolist (name *files*)
      (let ((source (merge-pathnames (concatenate 'string name ".lisp") cl-user::*source-dir*))
            (object (merge-pathnames (concatenate 'string name ".o") cl-user::*build-dir*)))
        (unless (compile-file source :output-file object :system-p t)
          (format *error-output* "~&build.lisp: compiling ~A failed~%" source)
          (ext:quit 1))
        (push object objects)
        (load source))))
  (c:build-static-library (merge-pathnames "libagentq_lisp.a" cl-user::*build-dir*)
                          :lisp-files (reverse objects)
                          :init-name "init_agentq_lisp")
  (ext:quit 0))
