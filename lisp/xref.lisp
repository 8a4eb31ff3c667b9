;;;; xref.lisp — who calls what, for ECL, which keeps no such database.
;;;;
;;;; The index holds the definitions the session evaluates (evaluate_lisp,
;;;; eval_form), compiles (compile_form) and loads with load_system: for
;;;; each DEFUN, DEFMACRO, DEFMETHOD, DEFVAR, DEFPARAMETER, DEFCONSTANT (also
;;;; inside PROGN, EVAL-WHEN and macros that expand to them) the functions
;;;; its macroexpanded body calls and the global variables it uses, with
;;;; the file and line when it came from a file.  who_calls and
;;;; who_references answer from it, and say when a symbol is outside what
;;;; the index covers.  The walk is a plain code walker: calls through
;;;; FUNCALL of a computed function, or made by code built at run time, are
;;;; not seen.

(in-package "AGENT-Q")

(defstruct (xref-definition (:constructor make-xref-definition (kind name qualifier file line session)))
  kind                                  ; :function :macro :method :generic :variable
  name                                  ; the symbol (or (SETF symbol))
  qualifier                             ; a method's specializers, as text, or NIL
  file line                             ; where, when known
  session                               ; reset_session forgets it
  (calls '()) (references '()))

(defvar *xref-definitions* (make-hash-table :test 'equal)
  "(KIND NAME QUALIFIER) → the XREF-DEFINITION indexed last for it.")
(defvar *xref-callers* (make-hash-table :test 'equal)
  "Function name → the XREF-DEFINITIONs whose bodies call it.")
(defvar *xref-referrers* (make-hash-table :test 'eq)
  "Variable → the XREF-DEFINITIONs whose bodies use it.")
(defvar *xref-defined* (make-hash-table :test 'equal)
  "Name → the XREF-DEFINITIONs that define it (a function, a variable).")
(defvar *xref-source* nil
  "While a file is indexed: (FILE LINE-STARTS SESSION); NIL for code
evaluated in the session.")

(defparameter +definers+
  '((defun . :function) (defmacro . :macro) (defmethod . :method) (defgeneric . :generic)
    (defvar . :variable) (defparameter . :variable) (defconstant . :variable))
  "The defining forms the index knows, and the kind each defines.")

;;; Walking code

(defun lambda-list-variables (lambda-list)
  "The variables a lambda list binds (also in its default forms' supplied-p parts)."
  (let ((variables '()))
    (dolist (item (if (listp lambda-list) lambda-list '()) variables)
      (cond ((member item lambda-list-keywords))
            ((symbolp item) (push item variables))
            ((consp item)
             (let ((head (car item)))
               (cond ((symbolp head) (push head variables))
                     ((and (consp head) (symbolp (second head))) (push (second head) variables))))
             (when (and (consp (cdr item)) (consp (cddr item)) (symbolp (third item)))
               (push (third item) variables)))))))

(defun lambda-list-defaults (lambda-list)
  "The default forms of a lambda list's optional and key parameters."
  (loop for item in (if (listp lambda-list) lambda-list '())
        when (and (consp item) (consp (cdr item))) collect (second item)))

(defun global-variable-p (symbol)
  (and (symbolp symbol) symbol (not (eq symbol t)) (not (keywordp symbol))
       (or (si:specialp symbol) (constantp symbol))))

(defun walk-body (forms lexicals functions record depth)
  (dolist (form (if (listp forms) forms '()))
    (walk-form form lexicals functions record depth)))

(defun walk-lambda (lambda-list body lexicals functions record depth)
  (walk-body (lambda-list-defaults lambda-list) lexicals functions record depth)
  (let ((variables (lambda-list-variables lambda-list)))
    (dolist (variable variables) (funcall record :bind variable))
    (walk-body body (append variables lexicals) functions record depth)))

(defun walk-form (form lexicals functions record depth)
  "Call RECORD with :CALL NAME or :REFERENCE VARIABLE for what FORM does,
macroexpanded; LEXICALS and FUNCTIONS are the names bound around it."
  (when (> depth 200) (return-from walk-form))
  (let ((depth (1+ depth)))
    (cond ((symbolp form)
           (cond ((member form lexicals) (funcall record :use form))
                 ((global-variable-p form) (funcall record :reference form))))
          ((atom form))
          ((not (ignore-errors (list-length form))))
          ((consp (car form))
           ;; ((lambda (x) …) args)
           (when (eq (caar form) 'lambda)
             (walk-lambda (second (car form)) (cddr (car form)) lexicals functions record depth))
           (walk-body (cdr form) lexicals functions record depth))
          ((not (symbolp (car form))))
          (t
           (let ((operator (car form)))
             (case operator
               ((quote go))
               (declare
                ;; (declare (ignore x)) says X is unused on purpose.
                (dolist (specifier (cdr form))
                  (when (and (consp specifier) (member (car specifier) '(ignore ignorable)))
                    (dolist (variable (cdr specifier))
                      (when (symbolp variable) (funcall record :use variable))))))
               (function
                (let ((name (second form)))
                  (cond ((and (consp name) (eq (car name) 'lambda))
                         (walk-lambda (second name) (cddr name) lexicals functions record depth))
                        ((and name (or (symbolp name) (consp name)) (not (member name functions :test #'equal)))
                         (funcall record :call name)))))
               ((let let*)
                (let ((bound '()))
                  (dolist (binding (if (listp (second form)) (second form) '()))
                    (let ((variable (if (consp binding) (car binding) binding)))
                      ;; Binding a special variable uses it too.
                      (when (global-variable-p variable)
                        (funcall record :reference variable))
                      (when (consp binding)
                        (walk-form (second binding) (if (eq operator 'let*) (append bound lexicals) lexicals)
                                   functions record depth))
                      (when (symbolp variable)
                        (funcall record :bind variable)
                        (push variable bound))))
                  (walk-body (cddr form) (append bound lexicals) functions record depth)))
               ((flet labels macrolet)
                (let ((names (mapcar (lambda (d) (and (consp d) (car d))) (if (listp (second form)) (second form) '()))))
                  (dolist (definition (if (listp (second form)) (second form) '()))
                    (when (consp definition)
                      (walk-lambda (second definition) (cddr definition) lexicals
                                   (if (eq operator 'labels) (append names functions) functions) record depth)))
                  (walk-body (cddr form) lexicals (append names functions) record depth)))
               ((block return-from the eval-when)
                (walk-body (cddr form) lexicals functions record depth))
               (setq
                (loop for (variable value) on (cdr form) by #'cddr
                      do (cond ((member variable lexicals) (funcall record :use variable))
                               ((global-variable-p variable) (funcall record :reference variable)))
                         (walk-form value lexicals functions record depth)))
               (symbol-macrolet (walk-body (cddr form) lexicals functions record depth))
               (tagbody (walk-body (remove-if #'atom (cdr form)) lexicals functions record depth))
               (t
                (cond ((and (macro-function operator) (not (member operator functions)))
                       (multiple-value-bind (expansion expanded) (ignore-errors (macroexpand-1 form))
                         (if expanded
                             (walk-form expansion lexicals functions record depth)
                             (walk-body (cdr form) lexicals functions record depth))))
                      ((special-operator-p operator)
                       (walk-body (cdr form) lexicals functions record depth))
                      (t
                       (unless (member operator functions)
                         (funcall record :call operator))
                       (walk-body (cdr form) lexicals functions record depth))))))))))

;;; The index

(defun forget-definition (definition)
  (dolist (name (xref-definition-calls definition))
    (setf (gethash name *xref-callers*) (remove definition (gethash name *xref-callers*))))
  (dolist (variable (xref-definition-references definition))
    (setf (gethash variable *xref-referrers*) (remove definition (gethash variable *xref-referrers*))))
  (let ((name (xref-definition-name definition)))
    (setf (gethash name *xref-defined*) (remove definition (gethash name *xref-defined*)))))

(defun source-line ()
  "The line of the form being indexed, when it comes from a file."
  (and *xref-source* (second *xref-source*)))

(defun index-definition (kind name qualifier walk)
  "Index a definition; WALK is called with a recording function."
  (let* ((key (list kind name qualifier))
         (old (gethash key *xref-definitions*))
         (definition (make-xref-definition kind name qualifier (first *xref-source*) (source-line)
                                           (if *xref-source* (third *xref-source*) t)))
         (calls '()) (references '()))
    (when old (forget-definition old))
    (funcall walk (lambda (what item)
                    (case what
                      (:call (pushnew item calls :test #'equal))
                      (:reference (pushnew item references)))))
    (setf (xref-definition-calls definition) calls
          (xref-definition-references definition) references
          (gethash key *xref-definitions*) definition)
    (push definition (gethash name *xref-defined*))
    (dolist (callee calls) (push definition (gethash callee *xref-callers*)))
    (dolist (variable references) (push definition (gethash variable *xref-referrers*)))
    definition))

(defun specializers-text (lambda-list)
  (let ((*package* (printing-package)))
    (format nil "~{~S~^ ~}"
            (loop for item in lambda-list
                  until (member item lambda-list-keywords)
                  collect (if (consp item) (second item) t)))))

(defun xref-note-form (form &optional (depth 0))
  "Index the definitions FORM makes, a top-level form."
  (when (or (> depth 20) (atom form) (not (symbolp (car form))) (not (ignore-errors (list-length form))))
    (return-from xref-note-form))
  (let* ((operator (car form))
         (kind (cdr (assoc operator +definers+))))
    (cond (kind
           (let ((name (second form)))
             (case kind
               ((:function :macro)
                (index-definition kind name nil
                                  (lambda (record) (walk-lambda (third form) (cdddr form) '() '() record 0))))
               (:method
                (let* ((rest (cddr form))
                       (qualifiers (loop while (and rest (atom (car rest))) collect (pop rest)))
                       (lambda-list (car rest)))
                  (index-definition :method name (format nil "~{~S ~}(~A)" qualifiers (specializers-text lambda-list))
                                    (lambda (record)
                                      (walk-lambda (mapcar (lambda (item) (if (consp item) (car item) item)) lambda-list)
                                                   (cdr rest) '() '() record 0)))))
               (:generic (index-definition :generic name nil (lambda (record) (declare (ignore record)))))
               (:variable
                (index-definition :variable name nil
                                  (lambda (record) (walk-form (third form) '() '() record 0)))))))
          ((member operator '(progn eval-when locally))
           (dolist (sub (if (eq operator 'eval-when) (cddr form) (cdr form)))
             (xref-note-form sub (1+ depth))))
          ((and (macro-function operator)
                (not (member operator '(in-package defpackage defclass defstruct define-condition deftype))))
           (multiple-value-bind (expansion expanded) (ignore-errors (macroexpand-1 form))
             (when expanded (xref-note-form expansion (1+ depth))))))))

(defun xref-note (form)
  "Index FORM, evaluated in the session, if it defines something: never
fails.  A form that defines nothing costs two or three tests: every
definer is a macro (DEFUN and the others; DEF…, DEFINE-… macros of
libraries, which may expand to them), or PROGN / EVAL-WHEN around some."
  (when (and (consp form)
             (let ((operator (car form)))
               (and (symbolp operator)
                    (if (macro-function operator)
                        (let ((name (symbol-name operator)))
                          (and (> (length name) 3) (string= "DEF" name :end2 3)))
                        (member operator '(progn eval-when))))))
    (handler-case (xref-note-form form)
      (serious-condition () nil))))

(defun line-starts (text)
  (let ((starts (list 0)))
    (loop for index from 0 below (length text)
          when (char= (char text index) #\Newline) do (push (1+ index) starts))
    (coerce (nreverse starts) 'vector)))

(defun line-of (starts position)
  (let ((low 0) (high (1- (length starts))))
    (loop while (< low high)
          do (let ((middle (ceiling (+ low high) 2)))
               (if (<= (aref starts middle) position) (setf low middle) (setf high (1- middle)))))
    (1+ low)))

(defun skip-blank (text position)
  "The position of the next form's first character at or after POSITION."
  (loop
    (cond ((>= position (length text)) (return position))
          ((member (char text position) '(#\Space #\Tab #\Newline #\Return #\Page)) (incf position))
          ((char= (char text position) #\;)
           (setf position (or (position #\Newline text :start position) (length text))))
          ((and (char= (char text position) #\#) (< (1+ position) (length text))
                (char= (char text (1+ position)) #\|))
           ;; A #| comment |#, nested ones inside; unclosed: the reader says so.
           (let ((depth 0) (i position))
             (loop (cond ((>= i (1- (length text))) (return-from skip-blank position))
                         ((and (char= (char text i) #\#) (char= (char text (1+ i)) #\|)) (incf depth) (incf i 2))
                         ((and (char= (char text i) #\|) (char= (char text (1+ i)) #\#))
                          (incf i 2)
                          (when (zerop (decf depth)) (return)))
                         (t (incf i))))
             (setf position i)))
          (t (return position)))))

(defun xref-index-file (file session)
  "Index the top-level forms of the Lisp source FILE (loaded already):
each form is read, not evaluated, except IN-PACKAGE, which is followed."
  (handler-case
      (let* ((text (with-open-file (in file :external-format :utf-8)
                     (let ((string (make-string (file-length in))))
                       (subseq string 0 (read-sequence string in)))))
             (starts (line-starts text))
             (*package* (find-package "CL-USER"))
             (*readtable* (copy-readtable nil))
             (*read-eval* t)
             (eof '#:eof)
             (truename (namestring (truename file))))
        (with-input-from-string (in text)
          (loop
            (let* ((start (skip-blank text (file-position in)))
                   (form (handler-case (read in nil eof)
                           (error () (return)))))
              (when (eq form eof) (return))
              (if (and (consp form) (eq (car form) 'in-package))
                  (let ((package (find-package (second form))))
                    (when package (setf *package* package)))
                  (let ((*xref-source* (list truename (line-of starts start) session)))
                    (xref-note-form form)))))))
    (serious-condition () nil)))

(defun xref-forget-session ()
  "Forget what the session defined (reset_session): keep what came with
systems that count as the image's."
  (let ((session '()))
    (maphash (lambda (key definition)
               (when (xref-definition-session definition) (push key session)))
             *xref-definitions*)
    (dolist (key session)
      (forget-definition (gethash key *xref-definitions*))
      (remhash key *xref-definitions*))))

;;; M-. in Emacs

(defun existing-symbol (text package-name)
  "The symbol TEXT names (\"helper\", \"pkg::helper\", \"|Mixed|\") read
in the package PACKAGE-NAME (as an IN-PACKAGE form names it: \"bb\" for
(in-package :bb); CL-USER when NIL), or NIL.  Looked up with FIND-SYMBOL:
nothing is interned, so looking a name up never makes it exist."
  (multiple-value-bind (qualifier name) (split-qualified (string-trim " " text))
    (let* ((package-text (or qualifier package-name "CL-USER"))
           (package (or (find-package package-text) (find-package (string-upcase package-text)))))
      (when package
        (multiple-value-bind (symbol status) (find-symbol (symbol-text name) package)
          (and status symbol))))))

(defparameter +ecl-packages+
  '("COMMON-LISP" "SYSTEM" "EXT" "MP" "CLOS" "GRAY" "FFI" "C" "SB-BSD-SOCKETS")
  "ECL's own packages, whose functions have no source to go to.")

(defun definition-locations (text package-name)
  "Where the symbol TEXT, read in PACKAGE-NAME as EXISTING-SYMBOL reads it,
is defined, for M-. in Emacs: a list of (KIND FILE LINE) from the index
\(KIND a lowercase string), else ((\"function\" FILE NIL POSITION)) for a
function whose source file ECL recorded, else (:ECL PACKAGE) for a
function of ECL's own, else NIL (also when no such symbol exists)."
  (let ((symbol (existing-symbol text package-name)))
    (when symbol
      (or (loop for definition in (gethash symbol *xref-defined*)
                when (xref-definition-file definition)
                  collect (list (string-downcase (symbol-name (xref-definition-kind definition)))
                                (namestring (xref-definition-file definition))
                                (or (xref-definition-line definition) 1)))
          (and (fboundp symbol)
               (multiple-value-bind (file position)
                   (ignore-errors (si::compiled-function-file (or (macro-function symbol) (fdefinition symbol))))
                 (if (and file (ignore-errors (probe-file file)))
                     (list (list "function" (namestring (truename file)) nil (max 0 (or position 0))))
                     (and (symbol-package symbol)
                          (member (package-name (symbol-package symbol)) +ecl-packages+ :test #'string=)
                          (list :ecl (package-name (symbol-package symbol)))))))))))

;;; The tools

(defun definition-text (definition)
  (let ((*package* (printing-package)))
    (format nil "~(~A~) ~A~@[ ~A~] (~:[evaluated in the session~;~:*~A~@[:~D~]~])"
            (xref-definition-kind definition)
            (let ((name (xref-definition-name definition)))
              (if (symbolp name) (qualified-name name) (prin1-to-string name)))
            (xref-definition-qualifier definition)
            (xref-definition-file definition) (xref-definition-line definition))))

(defun xref-answer (symbol found what verb)
  "The answer of who_calls / who_references for SYMBOL: FOUND definitions."
  (let ((total (hash-table-count *xref-definitions*))
        (name (qualified-name symbol)))
    (cond (found
           (with-output-to-string (out)
             (format out "~D definition~:P ~A~:[~;s~] ~A (among ~:D indexed):"
                     (length found) verb (= (length found) 1) name total)
             (dolist (text (sort (mapcar (lambda (d) (definition-text d)) found) #'string<))
               (format out "~%- ~A" text))))
          ((gethash symbol *xref-defined*)
           (format nil "No ~A of ~A among ~:D indexed definitions." what name total))
          (t
           (format nil "~A is not defined by any indexed code, so its ~A are unknown; none of the ~:D indexed ~
                        definitions ~A it. The index covers what this session evaluated, compiled or loaded ~
                        with load_system, not code loaded otherwise (ECL's own, say)."
                   name what total verb)))))

(define-built-in-tool "who_calls"
  "List the definitions (functions, macros, methods) whose code calls a function, with file and line when they came from a file. Use it before changing a function's signature or behaviour, to find what depends on it. Covers what this session evaluated, compiled or loaded with load_system."
  (list '(:name "function" :type :string :description "The called function's name, e.g. \"parse-config\" or \"my-app:start\".") +package-parameter+)
  :required '("function")
  :categories '(:introspection :xref)
  :handler (lambda (arguments)
             (with-named-symbol (symbol (gethash "function" arguments) (gethash "package" arguments))
               (xref-answer symbol (append (gethash symbol *xref-callers*)
                                           (gethash (list 'setf symbol) *xref-callers*))
                            "callers" "call"))))

(define-built-in-tool "who_references"
  "List the definitions whose code reads or sets a global (special) variable or constant, with file and line when they came from a file. Use it before changing a variable's meaning or removing it. Covers what this session evaluated, compiled or loaded with load_system."
  (list '(:name "symbol" :type :string :description "The variable's name, e.g. \"*config*\".") +package-parameter+)
  :required '("symbol")
  :categories '(:introspection :xref)
  :handler (lambda (arguments)
             (with-named-symbol (symbol (gethash "symbol" arguments) (gethash "package" arguments))
               (xref-answer symbol (gethash symbol *xref-referrers*) "references" "reference"))))

(defun undefined-function-warnings (forms package)
  "STYLE-WARNINGs for the functions the definitions among FORMS (read in
PACKAGE) call that are defined nowhere (ECL's compiler does not say)."
  (let ((warnings '()))
    (dolist (form forms (nreverse warnings))
      (let ((*package* package))
        (when (and (consp form) (assoc (car form) +definers+))
          (let ((definition (gethash (list (cdr (assoc (car form) +definers+)) (second form) nil) *xref-definitions*)))
            (when definition
              (dolist (name (reverse (xref-definition-calls definition)))
                (unless (or (and (symbolp name) (or (fboundp name) (special-operator-p name)))
                            (and (consp name) (ignore-errors (fdefinition name))))
                  (push (format nil "STYLE-WARNING: Undefined function ~A, called by ~A"
                                (if (symbolp name) (qualified-name name) name) (qualified-name (second form)))
                        warnings))))))))))

(defun unused-variable-warnings (forms package)
  "STYLE-WARNINGs for the variables that the functions, macros and methods
among FORMS (read in PACKAGE) bind and never use nor declare ignored (ECL's
compiler does not say).  Only variables written in the source count:
those of macro expansions are the macros' business."
  (let ((warnings '()))
    (dolist (form forms (nreverse warnings))
      (when (and (consp form) (member (car form) '(defun defmacro defmethod)))
        (let ((bound '()) (used '()) (*package* package))
          (flet ((record (what item)
                   (case what
                     (:bind (pushnew item bound))
                     (:use (pushnew item used)))))
            (handler-case
                (if (eq (car form) 'defmethod)
                    (let ((rest (cddr form)))
                      (loop while (and rest (atom (car rest))) do (pop rest))
                      (walk-lambda (mapcar (lambda (item) (if (consp item) (car item) item)) (car rest))
                                   (cdr rest) '() '() #'record 0))
                    (walk-lambda (third form) (cdddr form) '() '() #'record 0))
              (serious-condition () (setf bound '()))))
          (dolist (variable (reverse bound))
            (when (and (symbol-package variable)
                       (not (member variable used))
                       (tree-contains-p variable (cddr form)))
              (push (format nil "STYLE-WARNING: The variable ~A is defined but never used (in ~A)"
                            (symbol-name variable) (qualified-name (second form)))
                    warnings))))))))

(defun tree-contains-p (item tree &optional (budget (list 100000)))
  "True when ITEM occurs in TREE (looking at no more than BUDGET conses:
source may be circular)."
  (cond ((eq item tree) t)
        ((and (consp tree) (plusp (decf (car budget))))
         (or (tree-contains-p item (car tree) budget) (tree-contains-p item (cdr tree) budget)))))
