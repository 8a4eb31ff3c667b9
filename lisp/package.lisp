;;;; package.lisp — the AGENT-Q package inside the embedded ECL.
;;;;
;;;; Compiled to native code at build time and linked into the Emacs module
;;;; (see cmake/runtime.cmake), so nothing here is interpreted on the hot path.

(defpackage "AGENT-Q"
  (:use "CL")
  (:export "*SESSION-PACKAGE*"
           "EVALUATE-STRING"
           "EXIT-INTERCEPTED"
           "OPERATION-REFUSED"
           ;; The tool API is exported by tools.lisp (+TOOL-API+).
           "TOOL-DEFINITION-ERROR"
           "EVAL-IN-EMACS"
           "EMACS-ERROR"
           "EMACS-ERROR-MESSAGE"))

(in-package "AGENT-Q")

;;; The functions the host (the C++ side) defines in this package.  The
;;; compiled Lisp takes each by identity when it loads, after the host
;;; defined them: a call of one is a FUNCALL of that function object, never
;;; a look-up of its name, so evaluated code that redefines a name (say
;;; %NEXT-JOB) changes only what it calls itself.  The runtime's own Lisp
;;; functions call each other directly the same way (build.lisp compiles
;;; the files as one unit).  The list is checked against the host's
;;; definitions by a test (sly-agent-q-hostile/host-functions-are-all-taken-by-identity).

(defmacro define-host-functions (&rest names)
  "Make every compiled call of one of NAMES call the function the host
defined under that name when this code was loaded."
  `(progn
     (defparameter +host-functions+ ',names
       "The functions the host defines in AGENT-Q, which the runtime calls by identity.")
     ,@(mapcar (lambda (name)
                 `(define-compiler-macro ,name (&rest arguments)
                    (list* 'funcall (list 'load-time-value (list 'fdefinition '',name) t) arguments)))
               names)))

(define-host-functions
  %adopt-origin %any-running-p %arm-stack-guard %ask-approval %ask-before-agent-code-p %ask-host %break-taken %child-exit %compiler-keeper %current-cpu
  %current-job %set-job-structure %set-one-value-structure %define-tool %detach-worker %end-processes %finalizer-budget %finish-job %former-worker-count %forget-host-request
  %fork-compile-child %function-entry %functions-intact-p %gc-count %gc-phase-us %gc-time-ms %hold-point
  %hold-worker %host-answer %inline-job %job-origin %origin-token %keep-off-worker-cpus %lisp-thread-count
  %live-package-p %lower-thread-priority %make-private-directory
  %mark-live-objects %monotonic-ms %monotonic-us %native-symbol %next-interrupt %next-job %own-process
  %post-note %preexisting-object-p %prepare-tool-call %publish-tiering-counts
  %note-definitions-changed %read-pipe %record-tool-call %registry-generation %release-compile-cpus
  %release-worker %remove-private-directory %runtime-process-p %seal-own-tools
  %runtime-thread-p %sampler-release %sampler-sample %sampler-start %sampler-stop %set-compiler-thread %set-lisp-hooks %set-watchdog
  %stop-family %stream-output %thread-cpu-us %thread-run-delay-us
  %tiering-enabled-p %tools %tools-attached %wait-child %worker-busy-p
  %write-pipe)
