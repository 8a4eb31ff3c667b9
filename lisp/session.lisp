;;;; session.lisp — the session tools: list_definitions and reset_session.
;;;;
;;;; "The session's definitions" are the functions, macros and variables of
;;;; CL-USER that did not exist when the runtime booted, and those of every
;;;; package made since: a snapshot taken at boot, before any evaluated code
;;;; ran, holds the image's packages and CL-USER's defined symbols.  So what
;;;; evaluate_lisp, COMPILE, LOAD or a loaded system of the user's defined
;;;; counts; what ECL and AGENT-Q came with does not, nor does a definition
;;;; evaluated code put in one of the image's own packages (EXT, SI, …).
;;;; load_system adds to the snapshot: ASDF's packages, and those of the
;;;; systems it loads that are not the user's (see systems.lisp).

(in-package "AGENT-Q")

(defvar *image-symbols* nil
  "EQ hash table of CL-USER's symbols that were fbound or bound at boot.")
(defvar *image-packages* '()
  "The packages that existed at boot, and those load_system made part of
the image since (ASDF's, and those of systems not the user's).")

(defun image-package-p (package)
  "True for the packages that are not the session's: the image's, and
ASDF's own however it was loaded (ASDF could not load a system without
them, and REQUIRE would not load them again)."
  (or (member package *image-packages*) (asdf-own-package-p package)))

(defun snapshot-image ()
  "Remember what the image defines before any evaluated code runs."
  (let ((symbols (make-hash-table :test 'eq))
        (user (find-package "CL-USER")))
    (do-symbols (symbol user)
      (when (and (eq (symbol-package symbol) user) (or (fboundp symbol) (boundp symbol)))
        (setf (gethash symbol symbols) t)))
    (setf *image-symbols* symbols
          *image-packages* (list-all-packages))))

(defun session-symbols (&optional package)
  "The symbols the session defined (see the file's header), in PACKAGE when
given, sorted by name."
  (let ((found '()) (user (find-package "CL-USER")))
    (dolist (home (if package (list package) (list-all-packages)))
      (when (or (eq home user) (not (image-package-p home)))
        (do-symbols (symbol home)
          (when (and (eq (symbol-package symbol) home)
                     (or (fboundp symbol) (boundp symbol))
                     (not (gethash symbol *image-symbols*)))
            (pushnew symbol found)))))
    (sort found #'string< :key #'symbol-name)))

(defun definition-name (symbol)
  (let ((*package* (printing-package)))
    (prin1-to-string symbol)))

(defun definition-lambda-list (symbol)
  (let ((*package* (printing-package)) (*print-length* 100) (*print-level* 10))
    (multiple-value-bind (list found) (ignore-errors (ext:function-lambda-list symbol))
      (unless found                     ; natively compiled in the background
        (multiple-value-setq (list found) (tiered-lambda-list symbol)))
      (if found (format nil "~:[()~;~:*~S~]" list) "(…)"))))

(defparameter +list-definitions-output-schema+
  "{\"type\":\"object\",\"properties\":{
     \"functions\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{
        \"name\":{\"type\":\"string\"},\"lambda_list\":{\"type\":\"string\"}},\"required\":[\"name\",\"lambda_list\"]}},
     \"variables\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{
        \"name\":{\"type\":\"string\"},\"value\":{\"type\":\"string\",\"description\":\"Printed.\"}},\"required\":[\"name\",\"value\"]}},
     \"macros\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{
        \"name\":{\"type\":\"string\"},\"lambda_list\":{\"type\":\"string\"}},\"required\":[\"name\",\"lambda_list\"]}},
     \"package\":{\"type\":\"string\",\"description\":\"The package asked for, when one was.\"}},
   \"required\":[\"functions\",\"variables\",\"macros\"]}"
  "The JSON schema of list_definitions's structured result.")

(defun definition-variable-text (symbol)
  (let ((*package* (printing-package)))
    (handler-case (with-output-to-string (s) (print-value (symbol-value symbol) s))
      (serious-condition () "#<unprintable>"))))

(defun list-definitions (arguments)
  "The list_definitions tool: its text and, for a caller that takes one,
the same as a structured result (+LIST-DEFINITIONS-OUTPUT-SCHEMA+)."
  (let* ((name (gethash "package" arguments))
         (package (and name (find-package (string-upcase name)))))
    (when (and name (not package))
      (return-from list-definitions
        (values nil (format nil "Package ~S does not exist. Use list_definitions without a package to see ~
                                 every package's definitions." name))))
    (let ((functions '()) (variables '()) (macros '()))
      (dolist (symbol (session-symbols package))
        (when (fboundp symbol)
          (cond ((macro-function symbol) (push symbol macros))
                ((not (special-operator-p symbol)) (push symbol functions))))
        (when (boundp symbol) (push symbol variables)))
      ;; Each as (NAME . DETAIL), in order.
      (flet ((entries (symbols describe) (mapcar (lambda (s) (cons (definition-name s) (funcall describe s)))
                                                 (reverse symbols))))
        (let ((functions (entries functions #'definition-lambda-list))
              (variables (entries variables #'definition-variable-text))
              (macros (entries macros #'definition-lambda-list)))
          (when *want-structure*
            (flet ((objects (entries key)
                     (coerce (mapcar (lambda (entry) (list :name (car entry) key (cdr entry))) entries) 'vector)))
              (note-structured-result
               (append (list :functions (objects functions :lambda_list)
                             :variables (objects variables :value)
                             :macros (objects macros :lambda_list))
                       (and package (list :package (package-name package)))))))
          (if (not (or functions variables macros))
              (if package
                  (format nil "No definitions in package ~A yet in this session." (package-name package))
                  "No definitions in this session yet.")
              (with-output-to-string (out)
                (let ((first t))
                  (flet ((section (title entries format)
                           (when entries
                             (unless first (terpri out) (terpri out))
                             (setf first nil)
                             (format out "[~A]" title)
                             (dolist (entry entries)
                               (format out format (car entry) (cdr entry))))))
                    (section "Functions" functions "~%- ~A ~A")
                    (section "Variables" variables "~%- ~A = ~A")
                    (section "Macros" macros "~%- ~A ~A"))))))))))

(defun definitions-form-p (form &optional (depth 0))
  "True when FORM, a top-level form, may define something: a DEF… macro
\(DEFUN and the others; DEF…, DEFINE-… macros of libraries), or PROGN /
EVAL-WHEN around such a form.  Two or three tests for any other form."
  (and (consp form) (symbolp (car form)) (< depth 8)
       (let ((operator (car form)))
         (cond ((macro-function operator)
                (let ((name (symbol-name operator)))
                  (and (> (length name) 3) (string= "DEF" name :end2 3))))
               ((eq operator 'progn)
                (and (ignore-errors (list-length form))
                     (some (lambda (sub) (definitions-form-p sub (1+ depth))) (cdr form))))
               ((eq operator 'eval-when)
                (and (ignore-errors (list-length form))
                     (some (lambda (sub) (definitions-form-p sub (1+ depth))) (cddr form))))))))

(defun note-definitions-form (form)
  "After FORM was evaluated at top level: when it may have defined
something (DEFINITIONS-FORM-P), the host hears that the session's
definitions changed (MCP clients then get
notifications/resources/list_changed)."
  (when (definitions-form-p form)
    (%note-definitions-changed)))

(defun reset-session (arguments)
  "The reset_session tool."
  (declare (ignore arguments))
  (dolist (symbol (session-symbols))
    (ignore-errors (when (fboundp symbol) (fmakunbound symbol)))
    (ignore-errors (when (boundp symbol) (makunbound symbol)))
    ;; A constant cannot be unbound: its symbol leaves its package instead,
    ;; so that reading the name again gives a fresh, unbound symbol.
    (when (and (boundp symbol) (symbol-package symbol))
      (ignore-errors (unintern symbol (symbol-package symbol)))))
  (dolist (package (list-all-packages))
    (unless (image-package-p package)
      (ignore-errors (delete-package package))))
  ;; ASDF must not think the systems whose packages just went are loaded.
  (forget-session-systems)
  (setf *session-package* (printing-package)
        *readtable* (copy-readtable nil)
        *last-error* nil
        - nil + nil ++ nil +++ nil * nil ** nil *** nil / nil // nil /// nil)
  (clear-repl-records)
  (forget-tiering)
  (xref-forget-session)
  ;; CL-USER has the tool API again (evaluated code may have uninterned it).
  (import-tool-api (printing-package))
  (%note-definitions-changed)
  (with-standard-io-syntax
    (let ((values (list *print-base* *print-radix* *print-case* *print-escape* *print-readably*
                        *print-circle* *print-pretty* *print-length* *print-level* *print-lines*
                        *print-array* *print-gensym* *read-base* *read-default-float-format* *read-eval*
                        *read-suppress*)))
      (setf (values *print-base* *print-radix* *print-case* *print-escape* *print-readably*
                    *print-circle* *print-pretty* *print-length* *print-level* *print-lines*
                    *print-array* *print-gensym* *read-base* *read-default-float-format* *read-eval*
                    *read-suppress*)
            (values-list values))))
  (restore-limits)
  "Session reset. All definitions cleared.")

(define-built-in-tool "list_definitions"
  "List the functions, variables and macros defined in this Lisp session (by evaluate_lisp, compile, load or loaded systems; not what the Lisp image came with), each with its lambda list or value. Use it to recall what exists before defining more, or to check that a definition took. Returns [Functions], [Variables] and [Macros] sections of `- NAME (LAMBDA-LIST)` / `- *NAME* = VALUE` lines."
  '((:name "package" :type :string
     :description "Only the definitions of this package (default: every package the session used)."))
  :safety-level :safe
  :categories '(:execution :session)
  :own t
  :output-schema +list-definitions-output-schema+
  :handler #'list-definitions)

(define-built-in-tool "reset_session"
  "Remove everything this Lisp session defined: functions, macros and variables are unbound, packages it made are deleted, the current package goes back to CL-USER, and the readtable and printer settings are made standard again. Use it to start over cleanly, or to recover a session whose readtable was broken. Definitions the Lisp image came with stay."
  '()
  :safety-level :cautious
  :categories '(:execution :session)
  :own t
  :handler #'reset-session)
