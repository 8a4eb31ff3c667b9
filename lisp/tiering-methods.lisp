;;;; tiering-methods.lisp — tiering (tiering.lisp) for DEFMETHODs.
;;;;
;;;; A method of a standard generic function keeps its method
;;;; object; only its function changes.  ECL's DEFMETHOD passes the
;;;; method's own function (bytecodes) to CLOS::INSTALL-METHOD, which wraps
;;;; it (CLOS::WRAPPED-METHOD-FUNCTION: the wrapper binds what
;;;; CALL-NEXT-METHOD needs) into the METHOD-FUNCTION.  The compiler
;;;; thread takes that function's form from DEFMETHOD's expansion again
;;;; (which touches no generic function in ECL 21.2.1), compiles it (with
;;;; CALL-NEXT-METHOD NOTINLINE: METHOD-NATIVE-LAMBDA says why), and
;;;; sets the METHOD-FUNCTION to the native one wrapped the same way, if
;;;; the method is still in its generic function with the function it had;
;;;; SI:CLEAR-GFUN-HASH then makes every thread's dispatch cache forget the
;;;; old effective methods (until then they still run the bytecodes, which
;;;; are as correct).  Which method a DEFMETHOD made is known by identity:
;;;; INSTALL-METHOD tells HOOK-INSTALL-METHOD's wrapper each method it made
;;;; and its function, whose definition ECL keeps and which holds the very
;;;; conses of the DEFMETHOD's body.

(in-package "AGENT-Q")

(defun note-method-made (function method)
  "Called by CLOS::INSTALL-METHOD (on any thread) with the method's own
FUNCTION and the METHOD it made."
  (when (bytecodes-function-p function)
    (mp:with-lock (*methods-made-lock*)
      (when (< *methods-made-count* *methods-made-limit*)
        (push (cons function method) *methods-made*)
        (incf *methods-made-count*)))))

(defun take-methods-made ()
  "The methods made since the last call, newest first (see *METHODS-MADE*)."
  (mp:with-lock (*methods-made-lock*)
    (prog1 *methods-made*
      (setf *methods-made* '() *methods-made-count* 0))))

(defvar *install-method-hooked* nil "True once CLOS::INSTALL-METHOD records the methods it makes.")

(defun hook-install-method ()
  "Make ECL's CLOS::INSTALL-METHOD, which every DEFMETHOD calls with the
method's function, tell NOTE-METHOD-MADE what it made."
  (unless *install-method-hooked*
    (let* ((symbol (find-symbol "INSTALL-METHOD" "CLOS"))
           (original (and symbol (fboundp symbol) (fdefinition symbol))))
      (when (functionp original)
        (setf (fdefinition symbol)
              (lambda (name qualifiers specializers lambda-list function &rest options)
                (let ((method (apply original name qualifiers specializers lambda-list function options)))
                  (ignore-errors (note-method-made function method))
                  method)))
        (setf *install-method-hooked* t)))))

(hook-install-method)

(defun defmethod-parts (form)
  "(values NAME QUALIFIERS LAMBDA-LIST BODY) of (DEFMETHOD NAME
{QUALIFIER}* LAMBDA-LIST . BODY), or NIL."
  (when (and (consp form) (consp (cdr form)))
    (let ((name (second form)) (rest (cddr form)) (qualifiers '()))
      (loop while (and (consp rest) (atom (car rest)) (car rest))
            do (push (pop rest) qualifiers))
      (when (and (consp rest) (listp (car rest))
                 (or (symbolp name)
                     (and (consp name) (eq (car name) 'setf) (consp (cdr name)) (symbolp (cadr name)))))
        (values name (nreverse qualifiers) (car rest) (cdr rest))))))

(defun note-defmethods (forms made)
  "Queue the methods the DEFMETHOD FORMS made: each is the newest of MADE
whose function's definition holds the last cons of the form's body.
Each definition is walked once (at most *TIERING-WALK-LIMIT* conses)."
  (let ((forms-by-cell (make-hash-table :test 'eq)) (matched (make-hash-table :test 'eq)))
    (dolist (form forms)
      (let ((cell (last (nth-value 1 (split-body (nth-value 3 (defmethod-parts form)))))))
        (when (consp cell)
          (setf (gethash cell forms-by-cell) form))))
    (when (plusp (hash-table-count forms-by-cell))
      (dolist (record made)
        (let ((count 0))
          (block walk-record
            (labels ((walk (x)
                       (loop
                         (unless (consp x) (return))
                         (let ((form (gethash x forms-by-cell)))
                           (when (and form (not (gethash form matched)))
                             (setf (gethash form matched) t)
                             (note-defmethod form record)))
                         (when (> (incf count) *tiering-walk-limit*) (return-from walk-record))
                         (walk (car x))
                         (setf x (cdr x)))))
              (walk (ignore-errors (function-lambda-expression (car record)))))))))))

(defun note-defmethod (form record)
  "Queue the method the DEFMETHOD FORM made, RECORD (FUNCTION . METHOD),
when it is a standard method of a standard generic function."
  (multiple-value-bind (name qualifiers lambda-list) (defmethod-parts form)
    (when name
      (let* ((method (cdr record))
             (gf (and method (ignore-errors (clos:method-generic-function method)))))
        (when (and gf
                   ;; The same body could be shared by two forms (#1#).
                   (equal (clos:generic-function-name gf) name)
                   (equal (method-qualifiers method) qualifiers)
                   (equal (clos:method-lambda-list method)
                          (ignore-errors (clos:extract-lambda-list lambda-list)))
                   (specializers-match-p (clos:method-specializers method)
                                         (ignore-errors (clos:extract-specializer-names lambda-list)))
                   (eq (class-of method) (find-class 'standard-method))
                   (eq (class-of gf) (find-class 'standard-generic-function))
                   (not (closure-with-environment-p (car record)))
                   (member method (clos:generic-function-methods gf))
                   (not (gethash method *tiered-methods*)))
          (setf (gethash method *tiered-methods*)
                (queue-entry (make-tiered name form *package* (clos:method-function method) nil nil
                                          :method method))))))))

(defun specializers-match-p (specializers names)
  "True when the method SPECIALIZERS are those NAMES name (an (EQL FORM)
name matches any EQL specializer: FORM is not evaluated again)."
  (and (= (length specializers) (length names))
       (every (lambda (specializer name)
                (if (and (consp name) (eq (car name) 'eql))
                    (typep specializer 'clos:eql-specializer)
                    (eq specializer (find-class name nil))))
              specializers names)))

(defun method-current-p (entry)
  "True when ENTRY's method is still in its generic function, running the
function its DEFMETHOD made."
  (let* ((method (tiered-method entry))
         (gf (ignore-errors (clos:method-generic-function method))))
    (and gf
         (eq (clos:method-function method) (tiered-bytecodes entry))
         (member method (clos:generic-function-methods gf))
         t)))

(defun entry-label (entry)
  "How logs name ENTRY's definition."
  (let ((*package* (tiered-package entry)))
    (entry-label-1 entry)))

(defun entry-label-1 (entry)
  (if (eq (tiered-kind entry) :method)
      (let ((method (tiered-method entry)))
        (format nil "method ~S~{ ~S~} ~S" (tiered-name entry) (method-qualifiers method)
                (mapcar (lambda (specializer)
                          (if (typep specializer 'class)
                              (class-name specializer)
                              (list 'eql (ignore-errors (clos:eql-specializer-object specializer)))))
                        (clos:method-specializers method))))
      (format nil "~S" (tiered-name entry))))

(defun method-native-lambda (entry)
  "The form compiled for a method ENTRY: the method's own function as ECL's
DEFMETHOD makes it (its expansion, taken again: no generic function is
touched by that), with the session's functions it calls kept NOTINLINE."
  (let* ((expansion (let ((*package* (tiered-package entry)))
                      (macroexpand-1 (tiered-form entry) nil)))
         (install (find-symbol "INSTALL-METHOD" "CLOS"))
         (call (and (consp expansion) (eq (car expansion) 'progn)
                    (find-if (lambda (x) (and (consp x) (eq (car x) install))) (cdr expansion))))
         (function (and (consp call) (nth 5 call))))
    (unless (and (consp function) (member (car function) '(lambda ext:lambda-block))
                 (consp (cdr function)) (or (eq (car function) 'lambda) (consp (cddr function))))
      (error "ECL's DEFMETHOD made no method function this compiler knows"))
    (let* ((head (if (eq (car function) 'lambda) (list (car function) (cadr function))
                     (list (car function) (cadr function) (caddr function))))
           (body (nthcdr (length head) function))
           (called (loop for s in (form-symbols (nth-value 3 (defmethod-parts (tiered-form entry))))
                         when (and (fboundp s) (not (macro-function s)) (not (special-operator-p s))
                                   (not (image-symbol-p s)))
                           collect s)))
      ;; CALL-NEXT-METHOD's compiler macro puts a string of ECL's own
      ;; into the code ("No next method."): a constant that would keep
      ;; the batch out of a compile child.  The global function (what the
      ;; bytecodes call) does the same.
      (push 'call-next-method called)
      `(function (,@head (declare (notinline ,@called)) ,@body)))))

(defun install-native-method (entry native)
  "Make NATIVE ENTRY's method's function (wrapped as CLOS wraps it), unless
the method was redefined or removed meanwhile."
  (let ((method (tiered-method entry)))
    (setf (gethash native *native-names*) (tiered-name entry))
    (if (method-current-p entry)
        (let ((wrapped (clos::wrapped-method-function native)))
          (setf (tiered-native entry) wrapped
                (clos:method-function method) wrapped)
          ;; Every thread's cache of effective methods forgets the old one.
          (si:clear-gfun-hash (clos:method-generic-function method))
          (settle entry :native))
        (settle entry :replaced))))

(defun methods-state-text (gf)
  "For a generic function: how the methods the session's DEFMETHODs made
run, or NIL when it has none."
  (let ((native 0) (bytecodes 0) (waiting 0) (reasons '()))
    (dolist (method (clos:generic-function-methods gf))
      (let ((entry (gethash method *tiered-methods*)))
        (when entry
          (cond ((and (eq (tiered-state entry) :native)
                      (eq (clos:method-function method) (tiered-native entry)))
                 (incf native))
                (t (incf bytecodes)
                   (case (tiered-state entry)
                     (:waiting (incf waiting))
                     (:replaced (pushnew "replaced while waiting for the native compiler" reasons :test #'equal))
                     (t (when (tiered-reason entry)
                          (pushnew (tiered-reason entry) reasons :test #'equal)))))))))
    (when (plusp (+ native bytecodes))
      (format nil "methods the session defined: ~D native (compiled in the background), ~D bytecodes~@[ (~D waiting for the native compiler)~]~@[: ~{~A~^; ~}~]"
              native bytecodes (and (plusp waiting) waiting) (reverse reasons)))))
