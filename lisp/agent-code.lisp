;;;; agent-code.lisp — an agent's code is read before it runs, and its
;;;; world-touching steps are checked again while it runs.
;;;;
;;;; Every job has an origin, kept by the host where evaluated code cannot
;;;; set it (module/ecl/job_origin.hpp): the person's own (the REPL, the
;;;; evaluate commands, keys in Lisp buffers) or an agent's (the chat's
;;;; model, an MCP client, the Lisp API).  The person's code runs as typed.
;;;; An agent's code is first read with *READ-EVAL* off, macroexpanded and
;;;; walked (READ-FINDINGS): what touches the world (files opened for
;;;; output, deleted or renamed, directories, processes, threads, sockets,
;;;; foreign code, Emacs, the runtime's internals and approval state) and
;;;; what cannot be read ahead (a computed call: EVAL, COMPILE, INTERN then
;;;; a call, FUNCALL of a computed function…) make it ask the person,
;;;; through the approval question every dangerous tool asks, before
;;;; anything runs.  The person's yes makes the job an approved agent's:
;;;; it runs as the person's.
;;;;
;;;; Static reading cannot see everything, so the world-touching functions
;;;; themselves (INSTALL-WORLD-GUARDS) check the job's origin while it runs
;;;; and ask at that moment, or refuse where nobody can be asked (a thread
;;;; the job started).  Threads and finalizers keep the origin of the code
;;;; that made them.  What is left to a determined adversary is said in
;;;; docs/user-guide.md ("What an agent's code may do").

(in-package "AGENT-Q")

;;; What touches the world

(defparameter +world-functions+
  '(("COMMON-LISP"
     ("DELETE-FILE" "deletes a file" t) ("RENAME-FILE" "renames a file" t)
     ("ENSURE-DIRECTORIES-EXIST" "creates directories" t)
     ("COMPILE-FILE" "writes a compiled file" nil) ("DRIBBLE" "writes a transcript file" nil)
     ("OPEN" "opens a file for output" t))
    ("SI"
     ("SYSTEM" "runs a shell command" t) ("RUN-PROGRAM" "runs a program" t)
     ("MKDIR" "creates a directory" t) ("RMDIR" "removes a directory" t)
     ("CHDIR" "changes the process's directory" t) ("SETENV" "changes the process's environment" t)
     ("COPY-FILE" "copies a file" t) ("TERMINATE-PROCESS" "ends a process" nil)
     ("KILLPID" "sends a signal to a process" nil) ("WAITPID" "waits for a process" nil)
     ("SPAWN-SUBPROCESS" "starts a process" nil) ("MAKE-PIPE" "makes a pipe" nil)
     ("MAKE-STREAM-FROM-FD" "opens a file descriptor" nil)
     ("LOAD-FOREIGN-MODULE" "loads foreign code" t) ("FIND-FOREIGN-SYMBOL" "calls foreign code" nil)
     ("CALL-CFUN" "calls foreign code" nil) ("CATCH-SIGNAL" "changes signal handling" t)
     ("SET-SIGNAL-HANDLER" "changes signal handling" nil))
    ;; EXT:QUIT and EXT:EXIT are not here: they are refused whoever calls
    ;; them (guards.lisp), so asking about them would ask for nothing.
    ("MP"
     ("PROCESS-RUN-FUNCTION" "starts a thread" t) ("PROCESS-PRESET" "starts a thread" t)
     ("PROCESS-KILL" "kills a thread" t) ("INTERRUPT-PROCESS" "interrupts a thread" t))
    ("AGENT-Q"
     ("EVAL-IN-EMACS" "evaluates Emacs Lisp" t)
     ("*APPROVAL-HANDLER*" "changes who approves dangerous tools" nil)
     ("*TOOL-EXECUTION-HOOKS*" "changes the hooks every tool call runs" nil)))
  "By package: (NAME WHAT GUARDED-P).  GUARDED-P: the function checks the
job's origin itself while it runs (INSTALL-WORLD-GUARDS), so a definition
that calls it need not ask when it is defined, only when it runs.")

(defparameter +world-packages+
  '(("FFI" . "uses foreign code (FFI)") ("SB-BSD-SOCKETS" . "uses sockets"))
  "Packages every function of which touches the world.")

(defparameter +uiop-world-functions+
  '("RUN-PROGRAM" "LAUNCH-PROGRAM" "DELETE-FILE-IF-EXISTS" "DELETE-DIRECTORY-TREE"
    "DELETE-EMPTY-DIRECTORY" "RENAME-FILE-OVERWRITING-TARGET" "COPY-FILE" "CONCATENATE-FILES"
    "WITH-OUTPUT-FILE" "CALL-WITH-OUTPUT-FILE" "ENSURE-ALL-DIRECTORIES-EXIST" "CHDIR"
    "WITH-CURRENT-DIRECTORY" "QUIT" "DIE" "WITH-STAGING-PATHNAME" "CALL-WITH-STAGING-PATHNAME")
  "UIOP's functions that touch the world (ASDF's portability layer, compiled
native, so not checked while it runs).")

(defparameter +opaque-functions+
  '(eval compile coerce symbol-function fdefinition macro-function compiler-macro-function
    intern find-symbol read-from-string si:coerce-to-function)
  "Functions whose call cannot be read ahead: they compute what runs.")

(defun world-table ()
  "Symbol → (WHAT GUARDED-P) for +WORLD-FUNCTIONS+ (a literal of the compiled
code: evaluated code cannot reach it)."
  (let ((cell (load-time-value (list nil))))
    (or (car cell)
        (let ((table (make-hash-table :test 'eq)))
          (loop for (package . entries) in +world-functions+
                for found = (find-package package)
                when found
                  do (loop for (name what guarded) in entries
                           for symbol = (find-symbol name found)
                           when symbol
                             do (setf (gethash symbol table) (list what guarded))))
          (setf (car cell) table)))))

(defun world-entry (symbol)
  "(WHAT GUARDED-P) when SYMBOL names something that touches the world."
  (let* ((cache (load-time-value (make-hash-table :test 'eq) t))
         (known (gethash symbol cache)))
    (if known
        (if (eq known :none) nil known)
        (let ((entry (find-world-entry symbol)))
          ;; Only the answers that do not change: a UIOP or FFI symbol is
          ;; what it is, a symbol of ours may be exported later.
          (unless (eq (symbol-package symbol) (load-time-value (find-package "AGENT-Q") t))
            (setf (gethash symbol cache) (or entry :none)))
          entry))))

(defun find-world-entry (symbol)
  (or (gethash symbol (world-table))
      (let* ((home (symbol-package symbol))
             (package (and home (package-name home))))
        (cond ((null package) nil)
              ((assoc package +world-packages+ :test #'string=)
               (list (cdr (assoc package +world-packages+ :test #'string=)) nil))
              ((and (>= (length package) 4) (string= package "UIOP" :end1 4)
                    (member (symbol-name symbol) +uiop-world-functions+ :test #'string=))
               (list "touches files or processes (UIOP)" nil))
              ((and (string= package "AGENT-Q")
                    (not (eq (nth-value 1 (find-symbol (symbol-name symbol) home)) :external)))
               (list "uses the runtime's internals" nil))))))

;;; Reading the code

(defvar *findings* nil "What the walk found, newest first (strings).")
(defvar *deferred* nil "True inside a definition's body: runs later, not now.")
(defvar *lexicals* nil "The lexical variables in scope, as far as the walk knows.")
(defvar *walk-budget* 0 "Forms the walk may still look at.")

(defun note-finding (text guarded)
  "Record TEXT; in a definition's body only when its function is not
checked while it runs (GUARDED false)."
  (unless (and *deferred* guarded)
    (let ((text (if *deferred* (format nil "defines code that ~A" text) text)))
      (pushnew text *findings* :test #'string=))))

(defun short-form (form)
  "FORM printed on one line for a finding, at most 80 characters."
  (one-line-capped (printed form) 80))   ; introspection.lisp, repl-tools.lisp

(defun constant-form-p (form)
  (or (and (atom form) (not (symbolp form)))
      (keywordp form) (member form '(t nil))
      (and (consp form) (eq (car form) 'quote))))

(defun constant-value (form)
  (if (consp form) (second form) form))

(defun note-operator (symbol form)
  "A call (or a reference, FORM nil) of SYMBOL: a finding when SYMBOL
touches the world (WORLD-ENTRY)."
  (let ((entry (world-entry symbol)))
    (when entry
      (destructuring-bind (what guarded) entry
        (if (and (eq symbol 'open) form (open-for-input-p (cddr form)))
            nil
            (note-finding (format nil "~A (~S~@[ on ~A~])" what symbol
                                  (and form (consp (cdr form)) (constant-form-p (second form))
                                       (short-form (constant-value (second form)))))
                          guarded))))))

(defun open-for-input-p (keys)
  "True when OPEN's keyword argument forms KEYS, all constant, only read."
  (and (loop for (key value) on keys by #'cddr
             always (and (keywordp key) (constant-form-p value)))
       (open-reads-only-p (mapcar #'constant-value keys))))

(defun note-opaque (what form)
  (note-finding (format nil "cannot be read ahead: ~A (~A)" what (short-form form)) nil))

(defun lexical-variable-p (form)
  (and (symbolp form) (not (constant-form-p form))
       (or (member form *lexicals*) (not (si:specialp form)))))

(defun function-operand (form operand)
  "OPERAND, the function FUNCALL, APPLY or MULTIPLE-VALUE-CALL in FORM calls."
  (cond ((and (consp operand) (member (car operand) '(quote function)) (symbolp (second operand)))
         (note-operator (second operand) (cons (second operand) (cddr form))))
        ((and (consp operand) (eq (car operand) 'function)) (vet-form operand))
        ((and (consp operand) (eq (car operand) 'lambda)) (vet-form operand))
        ((lexical-variable-p operand) nil)
        (t (note-opaque "a call of a computed function" form)
           (vet-form operand))))

(defun vet-body (forms)
  (dolist (form forms)
    (unless (and (consp form) (eq (car form) 'declare))
      (vet-form form))))

(defun vet-lambda-list-defaults (lambda-list)
  "Walk the default forms of LAMBDA-LIST's optional and key parameters."
  (dolist (item (if (listp lambda-list) lambda-list '()))
    (when (and (consp item) (consp (cdr item)))
      (vet-form (second item)))))

(defun vet-lambda (lambda-list body)
  (vet-lambda-list-defaults lambda-list)
  (let ((*lexicals* (append (lambda-list-variables lambda-list) *lexicals*)))  ; xref.lisp
    (vet-body body)))

(defparameter +definition-operators+
  '(defun defmacro defmethod defgeneric define-compiler-macro defsetf define-setf-expander
    define-method-combination deftype)
  "Forms whose body runs later, when what they define is used.")

(defun vet-form (form)
  "Walk FORM, an evaluated form, recording what it touches in *FINDINGS*."
  (when (<= (decf *walk-budget*) 0)
    (when (= *walk-budget* 0)
      (note-opaque "the code is too large to read ahead" "..."))
    (return-from vet-form))
  (cond ((symbolp form)
         (unless (or (keywordp form) (null form) (eq form t))
           (note-operator form nil)
           (multiple-value-bind (expansion expanded) (ignore-errors (macroexpand-1 form))
             (when (and expanded (not (eq expansion form)))
               (vet-form expansion)))))
        ((atom form))
        ((consp (car form))
         (vet-form (car form))
         (vet-body (cdr form)))
        ((not (symbolp (car form))))
        (t (vet-call (car form) form))))

(defun operators-read-specially ()
  "The operators VET-CALL handles one by one (a literal of the compiled
code): any other call is a macro, a special form or a plain call."
  (let ((cell (load-time-value (list nil))))
    (or (car cell)
        (let ((table (make-hash-table :test 'eq)))
          (dolist (operator (append '(quote function lambda let let* flet labels macrolet symbol-macrolet
                                      block return-from eval-when the catch tagbody go setq psetq
                                      funcall apply multiple-value-call set progv)
                                    +opaque-functions+ +definition-operators+))
            (setf (gethash operator table) t))
          (setf (car cell) table)))))

(defun vet-plain-call (operator form arguments)
  "Walk FORM, a call of OPERATOR that the walk does not read specially: a
special form's or a function's ARGUMENTS, a macro's expansion."
  (note-operator operator form)
  (cond ((special-operator-p operator) (vet-body arguments))
        ((macro-function operator) (vet-expansion form))
        (t (vet-body arguments))))

(defun vet-call (operator form)
  (let ((arguments (if (listp (cdr form)) (cdr form) '())))
    (cond
      ((not (gethash operator (operators-read-specially)))
       (vet-plain-call operator form arguments))
      ((eq operator 'quote)
       (when (symbolp (first arguments))
         (note-operator (first arguments) nil)))
      ((eq operator 'function)
       (let ((what (first arguments)))
         (cond ((symbolp what) (note-operator what nil))
               ((and (consp what) (member (car what) '(lambda ext:lambda-block)))
                (if (eq (car what) 'lambda)
                    (vet-lambda (second what) (cddr what))
                    (vet-lambda (third what) (cdddr what)))))))
      ((eq operator 'lambda) (vet-lambda (first arguments) (rest arguments)))
      ((member operator '(let let*))
       (let ((names '()))
         (dolist (binding (if (listp (first arguments)) (first arguments) '()))
           (cond ((symbolp binding) (push binding names))
                 ((consp binding)
                  (push (car binding) names)
                  (when (consp (cdr binding)) (vet-form (second binding))))))
         (let ((*lexicals* (append names *lexicals*)))
           (vet-body (rest arguments)))))
      ((member operator '(flet labels macrolet))
       (dolist (definition (if (listp (first arguments)) (first arguments) '()))
         (when (consp definition)
           (vet-lambda (second definition) (cddr definition))))
       (vet-body (rest arguments)))
      ((eq operator 'symbol-macrolet)
       (dolist (definition (if (listp (first arguments)) (first arguments) '()))
         (when (consp definition) (vet-form (second definition))))
       (vet-body (rest arguments)))
      ((member operator '(block return-from eval-when the catch))
       ;; The first argument is a name, situations or a type (CATCH: a tag form).
       (when (eq operator 'catch) (vet-form (first arguments)))
       (vet-body (rest arguments)))
      ((member operator '(tagbody))
       (dolist (item arguments) (when (consp item) (vet-form item))))
      ((eq operator 'go))
      ((member operator '(setq psetq))
       (loop for (variable value) on arguments by #'cddr
             do (when (symbolp variable)
                  (note-operator variable nil))
                (vet-form value)))
      ((member operator '(funcall apply multiple-value-call))
       (function-operand form (first arguments))
       (vet-body (rest arguments)))
      ((eq operator 'set)
       (if (constant-form-p (first arguments))
           (let ((symbol (constant-value (first arguments))))
             (when (symbolp symbol) (note-operator symbol nil)))
           (note-opaque "a variable chosen while it runs is set" form))
       (vet-body arguments))
      ((eq operator 'progv)
       (unless (constant-form-p (first arguments))
         (note-opaque "variables chosen while it runs are bound" form))
       (vet-body arguments))
      ((member operator +opaque-functions+)
       (unless (and (eq operator 'coerce) (consp (first arguments))
                    (member (car (first arguments)) '(quote function)))
         (note-opaque (format nil "~S" operator) form))
       (vet-body arguments))
      ((member operator +definition-operators+)
       (let ((*deferred* t))
         (vet-expansion form)))
      (t (vet-plain-call operator form arguments)))))

(defun vet-expansion (form)
  "Walk what macro FORM expands to.  An expansion that fails is left to the
evaluation, which fails the same way."
  (multiple-value-bind (expansion expanded)
      (handler-case (macroexpand-1 form)
        (error () (values nil nil)))
    (when expanded (vet-form expansion))))

(defun stop-reading (condition)
  "The handler of READ-FINDINGS: an error while reading or walking ends the
reading (the evaluation meets the same error and reports it); a reader
error that was a #. under *READ-EVAL* nil is a finding."
  (when (and (typep condition 'reader-error) (search "#." (princ-to-string condition)))
    (note-finding "evaluates code while it is read (#.)" nil))
  (throw '%reading-stopped nil))

(defun defpackage-stand-in (form)
  "For FORM, a DEFPACKAGE read ahead of its evaluation, a package of its
name using the packages it uses that exist (else CL), so that what
follows reads as it will; NIL when a package of that name exists.  The
caller deletes it when done reading."
  (let ((name (ignore-errors (string (second form)))))
    (when (and name (not (find-package name)))
      (let ((uses (loop for option in (cddr form)
                        when (and (consp option) (eq (car option) :use))
                          append (remove-if-not #'find-package (cdr option)))))
        (make-package name :use (or uses '("COMMON-LISP")))))))

(defun read-findings (code package)
  "Read CODE's forms in PACKAGE as the evaluation will (an IN-PACKAGE
switches; a DEFPACKAGE read ahead makes a stand-in package for what
follows), with *READ-EVAL* off, and walk each.  Returns the findings,
oldest first, and, when CODE is exactly one form read whole, that form
in a list: the evaluation may take it instead of reading CODE again (with
one form, nothing can run between the two readings to change the reader)."
  (let ((*findings* '()) (*deferred* nil) (*lexicals* '()) (*walk-budget* 200000)
        (*package* package) (*read-eval* nil) (eof '#:eof) (stand-ins '())
        (forms '()) (whole nil))
    (unwind-protect
         (with-input-from-string (in code)
           (catch '%reading-stopped
             ;; (HANDLER-BIND ((ERROR #'STOP-READING)) …) with its cluster
             ;; made once: an agent's every call comes through here.
             (let ((si:*handler-clusters* (cons (load-time-value (list (cons 'error #'stop-reading)))
                                                si:*handler-clusters*)))
               (loop
                 (let ((form (read in nil eof)))
                   (when (eq form eof)
                     (setf whole t)
                     (return))
                   (push form forms)
                   (vet-form form)
                   (when (consp form)
                     (case (car form)
                       (defpackage
                        (let ((stand-in (defpackage-stand-in form)))
                          (when stand-in (push stand-in stand-ins))))
                       (in-package
                        (let ((next (ignore-errors (find-package (string (second form))))))
                          (if next (setf *package* next) (return)))))))))))
      (when stand-ins
        (dolist (package stand-ins) (ignore-errors (delete-package package)))))
    (values (reverse *findings*)
            (and whole (null *findings*) forms (null (cdr forms)) forms))))

;;; Asking the person

(defvar *job-tool* "evaluate_lisp" "The tool of the running job, for the question.")
(defvar *job-code* nil "The code of the running agent's job, for the question.")

(defun ask-about-code (tool arguments)
  "Ask whoever stands behind the running agent's job whether the call of
TOOL with ARGUMENTS (an alist of strings to JSON values) may run.
Returns :APPROVED, (:MODIFIED CODE) — the code as the person edited it —,
\(:DENIED REASON-OR-NIL) or (:REFUSED TEXT) for a denial to be shown as
it is."
  (let* ((json (json-text (let ((table (make-hash-table :test 'equal)))
                            (loop for (key . value) in arguments do (setf (gethash key table) value))
                            table)))
         (ticket (%ask-approval (format nil "(sly-agent-q--approve-agent-code ~A ~A)"
                                        (elisp-text tool) (elisp-text json)))))
    (if (null ticket)
        (list :refused "Denied: nobody can be asked from here (a thread the agent's code started, or a job nobody waits for).")
        (multiple-value-bind (ok text) (await-host-answer ticket)
          (if ok
              (let ((decision (approval-decision (ignore-errors (read-printed-elisp text)))))
                (if (eq decision :denied) (list :denied nil) decision))
              (list :refused (format nil "Denied: the approval question could not be asked (~A)." text)))))))

(defun denial-text (decision findings)
  (let ((list (format nil "~{~%  - ~A~}" findings)))
    (case (first decision)
      (:refused (format nil "[ERROR] DENIED~%The code was not run. It would:~A~%~A" list (second decision)))
      (t (format nil "[ERROR] DENIED~%The user denied running this code, which would:~A~@[~%The user said: ~A~]"
                 list (second decision))))))

(defun vet-agent-code (code package-name)
  "For an agent's job: read CODE (in PACKAGE-NAME's package or the
session's) and, when it touches the world, ask.  Returns (values :RUN
CODE FORMS), with the code the person edited when they did (FORMS: the
one form read, when the evaluation may take it instead of reading CODE
again), or (values NIL TEXT), the [ERROR] text of a denial.  The
person's own jobs, and an agent's job already approved, run unread."
  (if (not (eq (%job-origin) :agent))
      (values :run code)
      (let* ((package (or (and package-name (find-package (string-upcase package-name)))
                          (and (live-package-p *session-package*) *session-package*)
                          (find-package "CL-USER")))
             (findings nil) (forms nil))
        (multiple-value-setq (findings forms) (read-findings code package))
        (when (and (null findings) (%ask-before-agent-code-p))
          (setf findings (list "runs code (you asked to approve every evaluation from an agent: sly-agent-q-ask-before-agent-code)")))
        (if (null findings)
            (values :run code forms)
            (let ((decision (ask-about-code *job-tool*
                                            `(("code" . ,code)
                                              ,@(and package-name `(("package" . ,package-name)))
                                              ("touches" . ,(coerce findings 'vector))))))
              (cond ((eq decision :approved) (values :run code))
                    ((eq (first decision) :modified) (values :run (second decision)))
                    (t (values nil (denial-text decision findings)))))))))

;;; Checked again while it runs

(defun true-path-text (path)
  "PATH's true name as text: symbolic links resolved in the part that
exists, the rest (directories not made yet, the file) appended as
written.  NIL when that rest climbs (\"..\") or PATH cannot be named."
  (let* ((name (ignore-errors (namestring (merge-pathnames path))))
         (directory (and name (directory-namestring name)))
         (rest (and name (file-namestring name))))
    (loop
      (when (or (null directory) (zerop (length directory))) (return nil))
      (let ((true (ignore-errors (truename directory))))
        (when true
          (return (and (not (search "../" rest)) (not (equal rest ".."))
                       (concatenate 'string (namestring true) rest)))))
      (let ((slash (position #\/ directory :from-end t :end (max 0 (1- (length directory))))))
        (unless slash (return nil))
        (setf rest (concatenate 'string (subseq directory (1+ slash)) rest)
              directory (subseq directory 0 (1+ slash)))))))

(defun inside-directory-p (true directory)
  (and true directory (> (length true) (length directory))
       (string= directory true :end2 (length directory))))

(defun runtime-work-path-p (path)
  "True for PATH inside a directory the runtime writes for its own work:
compile_form's $TMPDIR/agent-q-compile-N/, load_system's cache of compiled
files and ASDF's own (~/.cache/common-lisp/)."
  (let ((true (true-path-text path)))
    (and true
         (or (let ((tmp (true-path-text (tmp-directory))))
               (and tmp (inside-directory-p true (concatenate 'string tmp "agent-q-compile-"))))
             (inside-directory-p true (true-path-text (fasl-cache-root)))
             (inside-directory-p true (asdf-cache-directory))))))

(defun tmp-directory ()
  (let ((tmp (ext:getenv "TMPDIR")))
    (if (and tmp (plusp (length tmp)))
        (pathname (if (char= (char tmp (1- (length tmp))) #\/) tmp (concatenate 'string tmp "/")))
        #p"/tmp/")))

(defun asdf-cache-directory ()
  "The true name of ASDF's output cache (~/.cache/common-lisp/), or NIL."
  (let ((home (ignore-errors (user-homedir-pathname))))
    (and home (true-path-text (merge-pathnames ".cache/common-lisp/" home)))))

(defun compiler-command-p (command)
  (let ((keeper (ignore-errors (%compiler-keeper))))
    (and (stringp command) (stringp keeper) (string= command keeper))))

(defun check-world-operation (operator what &optional path command)
  "Called by a world-touching function before it acts: in an agent's job
not yet approved, ask (or refuse where nobody can be asked); signal
OPERATION-REFUSED when denied."
  (when (and (eq (%job-origin) :agent)
             (not (and path (runtime-work-path-p path)))
             (not (and command (compiler-command-p command))))
    (let* ((finding (format nil "~A (~A~@[ on ~S~]) while it runs" what operator
                            (and path (ignore-errors (namestring path)))))
           (decision (ask-about-code *job-tool*
                                     `(("code" . ,(or *job-code* ""))
                                       ("touches" . ,(vector finding))))))
      (unless (eq decision :approved)
        (error 'operation-refused
               :operator operator
               :reason (case (first decision)
                         (:refused (second decision))
                         (:modified "an edit cannot change code that already runs; denied.")
                         (t (format nil "the user denied it~@[: ~A~]." (second decision)))))))))

(defun guard-world-function (symbol &key path-argument command-argument output-check)
  "Replace SYMBOL's function with one that calls CHECK-WORLD-OPERATION
first, saying what it does as +WORLD-FUNCTIONS+ does."
  (when (and symbol (fboundp symbol) (not (macro-function symbol)) (not (special-operator-p symbol)))
    (let ((original (fdefinition symbol))
          (what (first (world-entry symbol)))
          (name (format nil "~S" symbol))
          (si:*ignore-package-locks* t))
      (setf (fdefinition symbol)
            (lambda (&rest arguments)
              (when (and (%job-origin) (or (null output-check) (funcall output-check arguments)))
                (check-world-operation name what
                                       (and path-argument (nth path-argument arguments))
                                       (and command-argument (nth command-argument arguments))))
              (apply original arguments))))))

(defun open-writes-p (arguments)
  (not (open-reads-only-p (rest arguments))))

(defun open-reads-only-p (keys)
  "True when OPEN's keyword arguments KEYS (values) only read."
  (loop for (key value) on keys by #'cddr
        always (case key
                 (:direction (member value '(:input :probe)))
                 (:if-does-not-exist (not (eq value :create)))
                 (t t))))

(defun origin-keeping-function (function)
  "FUNCTION, run with the origin of the code that made this closure
\(a thread's function, a finalizer)."
  (let ((token (%origin-token)))
    (lambda (&rest arguments)
      (let ((saved (%origin-token)))
        (%adopt-origin token)
        (unwind-protect (apply function arguments)
          (%adopt-origin saved))))))

(defun install-world-guards ()
  "Make the world-touching functions check the running job's origin."
  (dolist (name '(delete-file rename-file ensure-directories-exist si:mkdir si:rmdir
                  si:load-foreign-module))
    (guard-world-function name :path-argument 0))
  (guard-world-function 'open :path-argument 0 :output-check #'open-writes-p)
  (guard-world-function 'si:copy-file :path-argument 1)
  (dolist (name '(si:system si:run-program))
    (guard-world-function name :command-argument 0))
  (dolist (name '(si:chdir si:setenv eval-in-emacs mp:process-run-function mp:process-preset))
    (guard-world-function name)))
