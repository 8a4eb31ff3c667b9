;;;; form-edit.lisp — what edit_form and insert_form (elisp/sly-agent-q-form-edit.el)
;;;; ask of the session before the person reviews their edit: the new source
;;;; read as the compiler reads it (*READ-EVAL* off, nothing evaluated), and
;;;; compiled with the session's compiler for its notes, without loading it.
;;;;
;;;; The text is compiled inside a lambda that is never loaded nor called:
;;;; not at top level, a DEFMACRO or an EVAL-WHEN in it changes nothing in
;;;; the session while it is compiled (at top level COMPILE-FILE would
;;;; define the macro before the person said yes).  A text whose reading
;;;; finds it touches the world (READ-FINDINGS, agent-code.lisp: a MACROLET
;;;; runs code when it is compiled) is not compiled: the notes say so.

(in-package "AGENT-Q")

(defconstant +form-edit-notes-shown+ 30 "Compiler notes edit_form shows at most.")

(defun form-edit-compile-notes (text package)
  "Compile TEXT's forms (read in PACKAGE) in a lambda that is never loaded;
the compiler's findings as [warnings] shows them."
  (let ((notes '()))
    (with-temporary-source (source "agent-q-form-edit")           ; repl-tools.lisp
      (with-open-file (out source :direction :output :if-exists :supersede :external-format :utf-8)
        ;; Two header lines: the text's lines are the file's less two.
        (format out "(in-package ~S)~%(cl:function (cl:lambda ()~%~A~%))~%" (package-name package) text))
      (let ((*read-eval* nil))
        (compile-file-collecting source package (not (c-compiler-available-p))
                                 (lambda (condition)
                                   ;; The compiler's findings; not what loading its
                                   ;; parts says the first time ("Duplicate proclamation").
                                   (when (compiler-message-p condition)
                                     (push (compile-warning-text condition source) notes)))
                                 (lambda (condition)
                                   (push (compile-warning-text condition source) notes)))))
    ;; ECL places each finding at its top-level form, here the lambda
    ;; around the text: a "(line N)" would point at nothing of the text's.
    (mapcar (lambda (note)
              (let ((at (search " (line " note :from-end t)))
                (if (and at (char= (char note (1- (length note))) #\))) (subseq note 0 at) note)))
            (nreverse notes))))

(defun form-edit-undefined-functions (forms package)
  "STYLE-WARNINGs for the functions FORMS (read in PACKAGE) call that are
defined nowhere, neither in the session nor by FORMS themselves."
  (let ((defined (loop for form in forms
                       when (and (consp form) (consp (cdr form))) collect (second form)))
        (missing '()))
    (dolist (form forms)
      (let ((record (lambda (what name)
                      (when (and (eq what :call) (symbolp name)
                                 (not (fboundp name)) (not (special-operator-p name))
                                 (not (member name defined)))
                        (pushnew name missing)))))
        (handler-case
            ;; A definition's body as xref reads it (its expansion hides it).
            (case (and (consp form) (car form))
              ((defun defmacro) (walk-lambda (third form) (cdddr form) '() '() record 0))
              (defmethod
               (let ((rest (cddr form)))
                 (loop while (and rest (atom (car rest))) do (pop rest))
                 (walk-lambda (mapcar (lambda (item) (if (consp item) (car item) item)) (car rest))
                              (cdr rest) '() '() record 0)))
              (t (walk-form form '() '() record 0)))
          (serious-condition () nil))))
    (let ((*package* package))
      (mapcar (lambda (name) (format nil "STYLE-WARNING: Undefined function ~A" (qualified-name name)))
              (nreverse missing)))))

(defun symbol-in-use-p (symbol)
  "True when SYMBOL names something or carries something."
  (or (boundp symbol) (fboundp symbol) (symbol-plist symbol) (find-class symbol nil)
      (ignore-errors (macro-function symbol))))

(defmacro with-new-symbols-forgotten ((package text) &body body)
  "Run BODY, which reads TEXT in PACKAGE; then unintern the symbols it
interned there that name nothing, so that checking a text the person has
not accepted yet leaves the package as it was (a symbol left behind could
later conflict with one a USE-PACKAGE brings).  Only symbols whose names
TEXT holds: what else BODY's compiling interned (the compiler's own
first load, say) is not the text's, and code may hold those symbols."
  (let ((before (gensym "BEFORE")) (symbol (gensym "SYMBOL")) (upcased (gensym "TEXT")))
    `(let ((,before (make-hash-table :test 'eq))
           (,upcased (string-upcase ,text)))
       (do-symbols (,symbol ,package) (setf (gethash ,symbol ,before) t))
       (unwind-protect (progn ,@body)
         (let ((new '()))
           (do-symbols (,symbol ,package)
             (unless (or (gethash ,symbol ,before) (not (eq (symbol-package ,symbol) ,package))
                         (not (search (string-upcase (symbol-name ,symbol)) ,upcased)))
               (push ,symbol new)))
           (dolist (,symbol new)
             (unless (symbol-in-use-p ,symbol)
               (unintern ,symbol ,package))))))))

(defun form-edit-check (text package-name)
  "Read TEXT (new source for edit_form or insert_form) in the package named
PACKAGE-NAME (exactly; NIL: CL-USER) and compile it for notes.  Returns
\(:PROBLEMS (TEXT…)) when it does not read, else (:FORMS N :KIND OPERATOR
:NOTES (TEXT…)), OPERATOR the first form's operator's name."
  (let ((package (if package-name (find-package package-name) (find-package "CL-USER")))
        (notes '()))
    (unless package
      (setf notes (list (format nil "NOTE: the file's package ~A does not exist in the session (load the file or its system first): the text was read in CL-USER and not compiled" package-name))
            package (find-package "CL-USER")))
    (multiple-value-bind (count problems) (check-syntax-text text package)
      (cond
        (problems
         (list :problems (loop for (line column message) in problems
                               collect (format nil "line ~D, column ~D: ~A" line column message))))
        ((zerop count) (list :problems (list "there is no form in it")))
        (t
         (with-new-symbols-forgotten (package text)
          (let* ((forms (read-forms text package))
                (first (first forms))
                (kind (and (consp first) (symbolp (car first)) (symbol-name (car first)))))
           (when (null notes)
             (let ((findings (read-findings text package)))
               (if findings
                   (push (format nil "NOTE: not compiled before your decision, because reading it found it would:~{ ~A~^;~}" findings)
                         notes)
                   (setf notes (append (form-edit-compile-notes text package)
                                       (unused-variable-warnings forms package)
                                       (form-edit-undefined-functions forms package))))))
           (list :forms count :kind kind
                 :notes (subseq notes 0 (min (length notes) +form-edit-notes-shown+))))))))))
