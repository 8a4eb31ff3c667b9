;;;; inspector.lisp — an object taken apart, each part with an id to drill into.
;;;;
;;;; The objects shown get ids from one table, kept for the last
;;;; +INSPECTED-KEPT+ objects, so that the Emacs inspector (and later the
;;;; tools) can come back to a part: a list's elements, a vector's, a
;;;; structure's or an instance's slots, a hash table's entries, a symbol's
;;;; value, function and plist, a function's lambda list.  Looking at an
;;;; object never runs its code: no PRINT-OBJECT method of the object's
;;;; own class beyond printing it, no slot reader.

(in-package "AGENT-Q")

(defconstant +inspected-kept+ 1000
  "How many inspected objects keep their ids (the oldest go first).")

(defconstant +inspected-parts-shown+ 500
  "How many parts of one object a page shows (a long list, a big table).")

(defstruct (inspected-table (:constructor make-inspected-table ()))
  (objects (make-hash-table) :read-only t)        ; id → object
  (ids (make-hash-table :test 'eq) :read-only t)  ; object → id
  (order (make-array 16 :adjustable t :fill-pointer 0))
  (next 1))

(defun inspected-table ()
  (let ((cell (load-time-value (list nil))))
    (or (car cell) (setf (car cell) (make-inspected-table)))))

(defun inspected-id (object)
  "OBJECT's id in the inspector's table, given now if it has none."
  (let* ((table (inspected-table))
         (ids (inspected-table-ids table)))
    (or (gethash object ids)
        (let ((id (inspected-table-next table))
              (order (inspected-table-order table)))
          (setf (inspected-table-next table) (1+ id)
                (gethash object ids) id
                (gethash id (inspected-table-objects table)) object)
          (vector-push-extend id order)
          (when (> (fill-pointer order) +inspected-kept+)
            ;; Drop the oldest half at once: the table stays bounded and
            ;; dropping costs little per object.
            (let ((drop (floor (fill-pointer order) 2)))
              (dotimes (i drop)
                (let* ((old (aref order i))
                       (gone (gethash old (inspected-table-objects table))))
                  (remhash old (inspected-table-objects table))
                  (remhash gone ids)))
              (replace order order :start2 drop)
              (setf (fill-pointer order) (- (fill-pointer order) drop))))
          id))))

(defun inspected-object (id)
  "The object inspected under ID; an error when it is no longer kept."
  (multiple-value-bind (object found) (gethash id (inspected-table-objects (inspected-table)))
    (unless found
      (error "No inspected object has the id ~A (only the last ~D are kept)." id +inspected-kept+))
    object))

(defun short-print (object &optional (limit 200))
  "OBJECT printed on one line from the current package, at most LIMIT
characters."
  (one-line-capped (printed object *package*) limit))   ; introspection.lisp, repl-tools.lisp

(defun unbound-part ()
  "The value of a part that is an unbound slot (a marker of ours)."
  (load-time-value (make-symbol "UNBOUND")))

(defun more-part ()
  "The value of the part that stands for the parts not shown."
  (load-time-value (make-symbol "MORE")))

(defun slot-parts (object)
  (loop for slot in (ignore-errors (clos:class-slots (class-of object)))
        for name = (clos:slot-definition-name slot)
        collect (if (slot-boundp object name)
                    (list (symbol-name name) (slot-value object name))
                    (list (symbol-name name) (unbound-part)))))

(defun list-parts (list)
  (let ((parts '()) (index 0))
    (loop for rest = list then (cdr rest)
          while (and (consp rest) (< index +inspected-parts-shown+))
          do (push (list (format nil "~D" index) (car rest)) parts)
             (incf index)
          finally (cond ((and rest (atom rest)) (push (list "tail (dotted)" rest) parts))
                        (rest (push (list "..." (more-part)) parts))))
    (nreverse parts)))

(defun object-parts (object)
  "What OBJECT is (a line) and its parts, a list of (LABEL VALUE), VALUE
\(UNBOUND-PART) for an unbound slot, (MORE-PART) where parts were left out."
  (typecase object
    (null (values "NIL: the empty list, and false" '()))
    (cons (values (let ((length (ignore-errors (list-length object))))
                    (cond ((null length) "A circular list")
                          ((null (cdr (last object))) (format nil "A proper list of ~D element~:P" length))
                          (t "A dotted list")))
                  (if (ignore-errors (list-length object))
                      (list-parts object)
                      (list (list "car" (car object)) (list "cdr" (cdr object))))))
    (string (values (format nil "A string of ~D character~:P" (length object)) '()))
    (vector (values (format nil "A vector of ~D element~:P (~S)" (length object) (array-element-type object))
                    (append (loop for i below (min (length object) +inspected-parts-shown+)
                                  collect (list (format nil "~D" i) (aref object i)))
                            (and (> (length object) +inspected-parts-shown+) (list (list "..." (more-part)))))))
    (array (values (format nil "An array of dimensions ~S" (array-dimensions object))
                   (loop for i below (min (array-total-size object) +inspected-parts-shown+)
                         collect (list (format nil "row-major ~D" i) (row-major-aref object i)))))
    (hash-table (values (format nil "A hash table (~S) of ~D entr~:@P" (hash-table-test object)
                                (hash-table-count object))
                        (let ((parts '()) (n 0))
                          (block entries
                            (maphash (lambda (key value)
                                       (when (>= (incf n) +inspected-parts-shown+)
                                         (push (list "..." (more-part)) parts)
                                         (return-from entries))
                                       (push (list (short-print key 60) value) parts))
                                     object))
                          (nreverse parts))))
    (symbol (values (format nil "A symbol~@[ of ~A~]~:[~; (keyword)~]"
                            (and (symbol-package object) (package-name (symbol-package object)))
                            (keywordp object))
                    (append (list (list "name" (symbol-name object)))
                            (and (symbol-package object) (list (list "package" (symbol-package object))))
                            (and (boundp object) (list (list "value" (symbol-value object))))
                            (and (fboundp object) (not (special-operator-p object))
                                 (list (list (if (macro-function object) "macro" "function")
                                             (or (macro-function object) (fdefinition object)))))
                            (and (symbol-plist object) (list (list "plist" (symbol-plist object)))))))
    (function (values (format nil "A ~:[function~;compiled function~]" (compiled-function-p object))
                      (let ((name (ignore-errors (nth-value 2 (function-lambda-expression object))))
                            (lambda-list (ignore-errors (ext:function-lambda-list object))))
                        (append (and name (list (list "name" name)))
                                (list (list "lambda list" (or lambda-list :unknown)))))))
    (package (values "A package"
                     (list (list "name" (package-name object))
                           (list "nicknames" (package-nicknames object))
                           (list "uses" (package-use-list object))
                           (list "used by" (package-used-by-list object))
                           (list "external symbols"
                                 (let ((n 0)) (do-external-symbols (s object) (declare (ignore s)) (incf n)) n)))))
    (character (values (format nil "A character, code ~D" (char-code object))
                       (list (list "name" (or (char-name object) (string object))))))
    (integer (values (format nil "An integer (#x~X, #b~B)" object object) '()))
    (number (values (format nil "A number (~S)" (type-of object)) '()))
    ((or structure-object standard-object condition)
     (values (format nil "An instance of ~S" (class-name (class-of object))) (slot-parts object)))
    (t (values (format nil "~S" (type-of object)) '()))))

(defun inspector-page (object)
  "OBJECT's page: (:ID ID :TITLE PRINTED :KIND WHAT :PARTS ((LABEL PRINTED ID) …))
with ID NIL for a part that is not an object to drill into."
  (multiple-value-bind (kind parts) (object-parts object)
    (list :id (inspected-id object)
          :title (short-print object 400)
          :kind kind
          :parts (loop for (label value) in parts
                       collect (cond ((eq value (unbound-part)) (list label "(unbound)" nil))
                                     ((eq value (more-part)) (list label "(more parts are not shown)" nil))
                                     (t (list label (short-print value)
                                              (if (or (numberp value) (characterp value) (null value))
                                                  nil
                                                  (inspected-id value)))))))))

(defun inspector-page-for-emacs (object)
  "OBJECT's inspector page as Emacs Lisp text (see INSPECTOR-PAGE)."
  (elisp-text (inspector-page object)))

;;; inspect_object: the same pages for a model, by id and path.

(defun page-text (page)
  "PAGE (INSPECTOR-PAGE) as text: the object, what it is, its parts."
  (destructuring-bind (&key id title kind parts) page
    (with-output-to-string (out)
      (format out "Object ~D: ~A~%~A" id title kind)
      (when parts
        (format out "~%Parts (label = value [id to inspect]):")
        (loop for (label printed part-id) in parts
              do (format out "~%  ~A = ~A~@[ [id ~D]~]" label printed part-id))))))

(defun follow-path (object path)
  "The part of OBJECT that PATH, a list of part labels (strings or
integers, matched as INSPECTOR-PAGE labels them, case aside), leads to;
or NIL and a sentence saying which label was not found."
  (dolist (step path (values object nil))
    (let* ((label (if (stringp step) step (princ-to-string step)))
           (parts (nth-value 1 (object-parts object)))
           (part (find label parts :key #'first :test #'string-equal)))
      (when (or (null part) (member (second part) (list (unbound-part) (more-part))))
        (return (values nil (format nil "~A has no part ~S to inspect.~@[ Its parts: ~{~A~^, ~}.~]"
                                    (short-print object 100) label
                                    (let ((labels (mapcar #'first parts)))
                                      (subseq labels 0 (min 30 (length labels))))))))
      (setf object (second part)))))

(define-built-in-tool "inspect_object"
  "Take a live object of the session apart without running its code: what it is and its parts (a list's or vector's elements, a structure's or instance's slots, a hash table's entries, a symbol's value, function and plist, a function's lambda list), each part that is an object with an id to inspect next. Start from a symbol (the symbol itself: its value is the part \"value\") or from an id an earlier inspect_object (or the REPL's inspector) gave; path drills down from there by part labels. Use it to look at data the session holds instead of printing it with evaluate_lisp."
  `((:name "id" :type :integer
     :description "The id of an object shown before (\"[id N]\"); the last 1000 objects keep their ids. When left out, symbol is where to start.")
    (:name "symbol" :type :string
     :description "A symbol to start from, e.g. \"*config*\" or \"my-pkg:*table*\" (never interned: it must exist).")
    ,+package-parameter+
    (:name "path" :type :array
     :description "Part labels to follow from the start, e.g. [\"value\", \"2\", \"NAME\"]: an element's index, a slot's name, a hash key as printed."))
  :categories '(:introspection)
  :handler (lambda (arguments)
             (let ((id (gethash "id" arguments))
                   (symbol (gethash "symbol" arguments))
                   (path (gethash "path" arguments)))
               (cond
                 ((and (null id) (or (null symbol) (equal symbol "")))
                  (values nil "Give \"id\" (an object shown before) or \"symbol\" (a symbol to start from)."))
                 ((and id (not (integerp id)))
                  (values nil "\"id\" must be an integer, as shown in \"[id N]\"."))
                 ((not (listp path))
                  (values nil "\"path\" must be an array of part labels."))
                 (t
                  (multiple-value-bind (start problem)
                      (if id
                          (handler-case (values (inspected-object id) nil)
                            (error (condition) (values nil (princ-to-string condition))))
                          (find-named-symbol symbol (gethash "package" arguments)))
                    (if problem
                        (values nil problem)
                        (multiple-value-bind (object problem) (follow-path start path)
                          (if problem
                              (values nil problem)
                              (page-text (inspector-page object)))))))))))
