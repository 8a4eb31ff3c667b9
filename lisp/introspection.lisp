;;;; introspection.lisp — the Agent-Q introspection tools that run in the
;;;; embedded ECL: describe_symbol, apropos_search, function_arglist,
;;;; list_package_symbols, class_slots, class_hierarchy, macroexpand_form.
;;;;
;;;; Each is an ordinary Lisp tool (DEFINE-BUILT-IN-TOOL, worker.lisp),
;;;; registered at boot; a user may replace one, and
;;;; REGISTER-AGENT-Q-TOOLS puts the built-in one back.  Errors are
;;;; sentences a model can act on: what was not found, where, and what
;;;; exists instead.

(in-package "AGENT-Q")

;;; Finding things by name.

(defparameter +package-parameter+
  '(:name "package" :type :string
    :description "The package to look the name up in (default: the session's current package).")
  "The parameter of the tools that look a name up.")

(defun printed (object &optional (package (printing-package)))
  "OBJECT printed readably where it can be, bounded, from PACKAGE (CL-USER)."
  (let ((*package* package))
    (handler-case (let ((*print-length* 50) (*print-level* 6) (*print-readably* nil) (*print-pretty* nil))
                    (prin1-to-string object))
      (serious-condition () "#<unprintable>"))))

(defun qualified-name (symbol)
  "SYMBOL as PACKAGE:NAME (or PACKAGE::NAME), whatever the current package."
  (let ((home (symbol-package symbol)))
    ;; CONCATENATE, not FORMAT: apropos_search makes one per match, and
    ;; FORMAT's interpreter was most of its time (111 matches: 2 ms).
    (cond ((null home) (concatenate 'string "#:" (symbol-name symbol)))
          ((eq home (find-package "KEYWORD")) (concatenate 'string ":" (symbol-name symbol)))
          (t (concatenate 'string (package-name home)
                          (if (eq (nth-value 1 (find-symbol (symbol-name symbol) home)) :external) ":" "::")
                          (symbol-name symbol))))))

(defun lookup-package (name)
  "The package NAME designates, or NIL (and the default package when NAME is NIL)."
  (if (or (null name) (equal name ""))
      *package*
      (find-package (string-upcase name))))

(defun no-package-text (name)
  (let ((similar (loop for package in (list-all-packages)
                       for package-name = (package-name package)
                       when (search (string-upcase name) package-name)
                         collect package-name)))
    (format nil "Package ~A not found.~@[ Similar packages: ~{~A~^, ~}.~] Use list_package_symbols or ~
                 apropos_search to find where a symbol lives."
            (string-upcase name) (subseq similar 0 (min 5 (length similar))))))

(defun split-qualified (text)
  "\"pkg:name\" → \"pkg\" \"name\"; \"name\" → NIL \"name\"."
  (let ((colon (position #\: text)))
    (if (and colon (plusp colon))
        (values (subseq text 0 colon) (string-left-trim ":" (subseq text colon)))
        (values nil (string-left-trim ":" text)))))

(defun symbol-text (text)
  "The name a reader would make of TEXT: upcased, unless written |like this|."
  (if (and (> (length text) 1) (char= (char text 0) #\|) (char= (char text (1- (length text))) #\|))
      (subseq text 1 (1- (length text)))
      (string-upcase text)))

(defun similar-symbols (name &optional (limit 5))
  "Up to LIMIT symbols whose names contain NAME (or, failing that, its
first half), as qualified names."
  (flet ((matching (part)
           (let ((found '()))
             (block search
               (dolist (package (list-all-packages))
                 (do-external-symbols (symbol package)
                   (when (and (eq (symbol-package symbol) package) (search part (symbol-name symbol)))
                     (pushnew symbol found)
                     (when (>= (length found) limit) (return-from search))))))
             found)))
    (let ((found (or (matching name)
                     (and (> (length name) 3) (matching (subseq name 0 (ceiling (length name) 2)))))))
      ;; Closest in length first: MAPCARR suggests MAPCAR before MAPC.
      (mapcar (lambda (s) (qualified-name s))
              (stable-sort found #'< :key (lambda (symbol) (abs (- (length (symbol-name symbol)) (length name)))))))))

(defun find-named-symbol (text package-name)
  "The symbol TEXT names (\"car\", \"cl:car\", \"|mixedCase|\") in the
package PACKAGE-NAME (default: the session's).  Returns the symbol, or NIL
and a sentence saying what was not found and what is similar."
  (multiple-value-bind (qualifier name) (split-qualified (string-trim " " text))
    (let* ((package-text (or qualifier package-name))
           (package (lookup-package package-text)))
      (cond ((null package) (values nil (no-package-text package-text)))
            (t (multiple-value-bind (symbol status) (find-symbol (symbol-text name) package)
                 (if status
                     symbol
                     (values nil (format nil "Symbol ~A not found in package ~A.~@[ Did you mean ~{~A~^, ~}?~]"
                                         (symbol-text name) (package-name package)
                                         (similar-symbols (symbol-text name)))))))))))

(defmacro with-named-symbol ((symbol text package) &body body)
  "Run BODY with SYMBOL named by TEXT in PACKAGE, or answer the failure."
  (let ((problem (gensym)))
    `(multiple-value-bind (,symbol ,problem) (find-named-symbol ,text ,package)
       (if ,problem
           (values nil ,problem)
           (progn ,@body)))))

(defun lambda-list-text (function-name)
  "FUNCTION-NAME's lambda list as SLY shows it: \"(test sequence &key key)\"."
  (multiple-value-bind (list found) (ignore-errors (ext:function-lambda-list function-name))
    ;; ECL knows no lambda list of a function the background compiler made.
    (unless found
      (multiple-value-setq (list found) (tiered-lambda-list function-name)))
    (if found
        (handler-case (let ((*print-length* 50) (*print-level* 6) (*print-readably* nil)
                            (*print-pretty* nil) (*print-case* :downcase))
                        (if (listp list) (princ-to-string list) (format nil "~A" list)))
          (serious-condition () "(unprintable)"))
        "(unknown)")))

(defun documentation-text (symbol type)
  "SYMBOL's documentation of TYPE without the header ECL puts on its own
\(\"Function in COMMON-LISP package:\", \"Args: (X)\")."
  (let ((text (ignore-errors (documentation symbol type))))
    (when (stringp text)
      (let ((lines (with-input-from-string (in text)
                     (loop for line = (read-line in nil) while line collect line))))
        (when (and lines (search " package:" (first lines)) (search " in " (first lines)))
          (pop lines)
          (when (and lines (string= "Args:" (string-left-trim " " (first lines)) :end2 (min 5 (length (string-left-trim " " (first lines))))))
            (pop lines)))
        (let ((clean (string-trim '(#\Newline #\Space) (format nil "~{~A~^~%~}" lines))))
          (and (plusp (length clean)) clean))))))

(defun first-line (text)
  (and text (subseq text 0 (or (position #\Newline text) (length text)))))

(defun symbol-kinds (symbol)
  "What SYMBOL names, as words: \"macro\", \"generic function\", \"class\"…"
  (let ((kinds '()))
    (when (special-operator-p symbol) (push "special operator" kinds))
    (cond ((macro-function symbol) (push "macro" kinds))
          ((and (fboundp symbol) (typep (fdefinition symbol) 'generic-function)) (push "generic function" kinds))
          ((and (fboundp symbol) (not (special-operator-p symbol))) (push "function" kinds)))
    (cond ((constantp symbol) (unless (keywordp symbol) (push "constant" kinds)))
          ((boundp symbol) (push "variable" kinds)))
    (when (find-class symbol nil) (push "class" kinds))
    (when (keywordp symbol) (push "keyword" kinds))
    (nreverse kinds)))

;;; The tools.

(defparameter +describe-symbol-output-schema+
  "{\"type\":\"object\",\"properties\":{
     \"symbol\":{\"type\":\"string\",\"description\":\"The symbol, qualified: PACKAGE:NAME.\"},
     \"kinds\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"What it names: function, macro, generic function, special operator, variable, constant, class, keyword; empty when nothing.\"},
     \"lambda_list\":{\"type\":\"string\"},
     \"methods\":{\"type\":\"integer\",\"description\":\"A generic function's number of methods.\"},
     \"runs_as\":{\"type\":\"string\"},
     \"value\":{\"type\":\"string\",\"description\":\"A variable's value, printed.\"},
     \"metaclass\":{\"type\":\"string\",\"description\":\"The metaclass of the class it names.\"},
     \"documentation\":{\"type\":\"object\",\"properties\":{
        \"function\":{\"type\":\"string\"},\"variable\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"}},
        \"additionalProperties\":false}},
   \"required\":[\"symbol\",\"kinds\"]}"
  "The JSON schema of describe_symbol's structured result.")

(defun describe-symbol (args)
  "The describe_symbol tool: its text and, for a caller that takes one,
the same as a structured result (+DESCRIBE-SYMBOL-OUTPUT-SCHEMA+)."
  (with-named-symbol (symbol (gethash "symbol" args) (gethash "package" args))
    (let* ((kinds (symbol-kinds symbol))
           (function-p (and (fboundp symbol) (not (special-operator-p symbol))))
           (lambda-list (and function-p (lambda-list-text symbol)))
           (methods (and (fboundp symbol) (typep (fdefinition symbol) 'generic-function)
                         (length (clos:generic-function-methods (fdefinition symbol)))))
           (runs (tiering-state-text symbol))
           (value (and (boundp symbol) (not (keywordp symbol)) (printed (symbol-value symbol))))
           (class (find-class symbol nil))
           (metaclass (and class (printed (class-name (class-of class)))))
           (docs (loop for (type label key) in '((function "Function" :function) (variable "Variable" :variable)
                                                 (type "Type" :type))
                       for doc = (documentation-text symbol type)
                       when doc collect (list label key doc))))
      (when *want-structure*
        (note-structured-result
         (append (list :symbol (qualified-name symbol) :kinds (coerce kinds 'vector))
                 (and lambda-list (list :lambda_list lambda-list))
                 (and methods (list :methods methods))
                 (and runs (list :runs_as runs))
                 (and value (list :value value))
                 (and metaclass (list :metaclass metaclass))
                 (and docs (list :documentation (loop for (nil key doc) in docs append (list key doc)))))))
      (with-output-to-string (out)
        (format out "~A is ~:[an unbound symbol (it names nothing yet)~;a ~:*~{~A~^, ~}~]."
                (qualified-name symbol) kinds)
        (when lambda-list (format out "~%Lambda list: ~A" lambda-list))
        (when methods (format out "~%Methods: ~D" methods))
        (when runs (format out "~%Runs as: ~A" runs))
        (when value (format out "~%Value: ~A" value))
        (when metaclass (format out "~%Class: ~A" metaclass))
        (loop for (label nil doc) in docs
              do (format out "~%~A documentation: ~A" label doc))))))

(define-built-in-tool "describe_symbol"
  "Describe a Common Lisp symbol in the running image: what it names (function, macro, generic function, special operator, variable, constant, class), its lambda list or value, and its documentation. Use it before calling or redefining something, to learn its signature and purpose. Works for anything the session defined too."
  '((:name "symbol" :type :string
     :description "The symbol's name, e.g. \"mapcar\", or qualified: \"alexandria:flatten\". Case-insensitive unless written |likeThis|.")
    (:name "package" :type :string
     :description "The package to look the name up in (default: the session's current package, usually CL-USER)."))
  :required '("symbol")
  :categories '(:introspection)
  :output-schema +describe-symbol-output-schema+
  :handler #'describe-symbol)

;;; The prefix index: completion's (and apropos_search's prefix mode's)
;;; sorted names of a package, kept up to date without rescanning it.

(defstruct (prefix-index (:constructor make-prefix-index ()))
  "What PREFIX-INDEX keeps of one package: SYMBOLS, the symbols whose home
it is, sorted by name (a simple vector); MEMBERS, an EQ set of them;
FOREIGN, an EQ set of the symbols present in it whose home is another
package (or none); EXTERNAL and INTERNAL, the symbols of its two hash
tables in the order the tables hold them, as of the last update; COUNTS
\(see PACKAGE-SYMBOL-COUNTS), which tell when it may be out of date."
  (counts nil)
  (symbols #() :type simple-vector)
  (members (make-hash-table :test 'eq))
  (foreign (make-hash-table :test 'eq))
  (external #() :type simple-vector)
  (internal #() :type simple-vector))

(defvar *prefix-indexes* (make-hash-table :test 'eq :weakness :key)
  "Package -> its PREFIX-INDEX.  Used under *PREFIX-INDEXES-LOCK*.")

(defvar *prefix-indexes-lock* (mp:make-lock :name "agent-q prefix indexes")
  "Held while *PREFIX-INDEXES* is read or updated: the MCP server's
threads search too.")

(defun package-symbol-counts (package)
  "What tells that PACKAGE's index may be out of date: its external and
internal symbol counts, which change when a symbol is interned,
uninterned, exported or unexported, and *JOBS-THAT-MAY-INTERN*, which
changes after a job that may have uninterned one symbol and interned
another (the counts as before)."
  (multiple-value-bind (external internal) (package-table-counts package)
    (list external internal *jobs-that-may-intern*)))

(defun package-table-counts (package)
  "How many symbols PACKAGE's external and internal tables hold, read
from the tables: SI::PACKAGE-HASH-TABLES copies both (0.2 ms for 10,000
symbols), too slow for a check at every completion."
  (check-type package package)
  (ffi:c-inline (package) (:object) (values :fixnum :fixnum)
    "cl_object e = (#0)->pack.external, i = (#0)->pack.internal;
     @(return 0) = ECL_HASH_TABLE_P(e) ? e->hash.entries : 0;
     @(return 1) = ECL_HASH_TABLE_P(i) ? i->hash.entries : 0;"
    :one-liner nil :side-effects nil))

(defun symbol-name< (a b)
  "Whether symbol A's name sorts before symbol B's."
  (string< (symbol-name a) (symbol-name b)))

(defun first-not-before (index name start)
  "The position of the first symbol of INDEX, from START on, whose name is
not less than NAME (INDEX sorted by name): a binary search."
  (let ((low start) (high (length index)))
    (loop while (< low high)
          do (let ((middle (floor (+ low high) 2)))
               (if (string< (symbol-name (svref index middle)) name)
                   (setf low (1+ middle))
                   (setf high middle))))
    low))

(defun insert-sorted (index new)
  "A fresh simple vector of the symbols of INDEX and NEW (both sorted by
name), sorted by name.  A binary search for each new symbol, not MERGE's
comparison at every element: few symbols are new, and a comparison costs
0.15 µs or more in ECL."
  (let ((result (make-array (+ (length index) (length new))))
        (from 0) (to 0))
    (loop for symbol across new
          for at = (first-not-before index (symbol-name symbol) from)
          do (replace result index :start1 to :start2 from :end2 at)
             (incf to (- at from))
             (setf (svref result to) symbol from at)
             (incf to))
    (replace result index :start1 to :start2 from)
    result))

(defun table-changes (table old)
  "Walk TABLE, one of a package's two hash tables, comparing its symbols
in the table's order with OLD, those of the previous walk.  Returns a
simple vector of its symbols now, a list of those not where they were in
OLD (new ones, or moved), and whether one of OLD may be gone.

An interned symbol takes a free slot and leaves the others where they
were: one walk, an EQ test a symbol (about 20 ns, against 90 ns a symbol
for DO-SYMBOLS and a hash lookup), finds it.  When the table grew and was
rehashed, every symbol is \"moved\" and the caller looks each up."
  (declare (simple-vector old) (optimize (speed 3) (safety 0)))
  (let* ((size (hash-table-count table))
         (now (make-array size))
         (old-size (length old))
         (i 0) (j 0) (moved '()) (gone nil))
    (declare (fixnum size old-size i j))
    (with-hash-table-iterator (next table)
      (loop
        (multiple-value-bind (more key symbol) (next)
          (declare (ignore key))
          (unless (and more (< j size)) (return))
          (setf (svref now j) symbol)
          (incf j)
          ;; The same as before, or as a few places further (those
          ;; between gone: uninterned, or exported/unexported).
          (let ((found (loop for k of-type fixnum from i below (min old-size (+ i 4))
                             when (eq symbol (svref old k)) return k)))
            (cond ((null found) (push symbol moved))
                  (t (when (> (the fixnum found) i) (setf gone t))
                     (setf i (1+ (the fixnum found)))))))))
    (when (< i old-size) (setf gone t))
    (values (if (= j size) now (subseq now 0 j)) moved gone)))

(defun update-prefix-index (entry package)
  "Bring ENTRY, PACKAGE's PREFIX-INDEX, up to date: add the symbols whose
home PACKAGE became since the last update, drop those whose home it no
longer is."
  (let ((members (prefix-index-members entry))
        (foreign (prefix-index-foreign entry))
        (new '()) (gone nil))
    ;; Copies, made under ECL's lock: another thread may intern meanwhile.
    (multiple-value-bind (external internal) (si::package-hash-tables package)
      (flet ((walk (table old)
               (multiple-value-bind (now moved table-gone) (table-changes table old)
                 (when table-gone (setf gone t))
                 (dolist (symbol moved)
                   (unless (or (gethash symbol members) (gethash symbol foreign))
                     (if (eq (symbol-package symbol) package)
                         (progn (setf (gethash symbol members) t) (push symbol new))
                         (setf (gethash symbol foreign) t))))
                 now)))
        (setf (prefix-index-external entry) (walk external (prefix-index-external entry))
              (prefix-index-internal entry) (walk internal (prefix-index-internal entry)))))
    ;; A symbol present all along whose home PACKAGE became (UNINTERN
    ;; from it and IMPORT back, in one job, once homeless).
    (when (plusp (hash-table-count foreign))
      (maphash (lambda (symbol value)
                 (declare (ignore value))
                 (cond ((eq (symbol-package symbol) package)
                        (remhash symbol foreign)
                        (unless (gethash symbol members)
                          (setf (gethash symbol members) t)
                          (push symbol new)))
                       ((and gone (not (eq (find-symbol (symbol-name symbol) package) symbol)))
                        (remhash symbol foreign))))
               foreign))
    (let* ((old (prefix-index-symbols entry))
           ;; Home elsewhere or none now: uninterned (or the package deleted).
           (kept (if (or (not gone) (every (lambda (symbol) (eq (symbol-package symbol) package)) old))
                     old
                     (remove-if-not (lambda (symbol)
                                      (or (eq (symbol-package symbol) package)
                                          (progn (remhash symbol members) nil)))
                                    old))))
      (setf (prefix-index-symbols entry)
            (if new
                (insert-sorted kept (sort (coerce new 'simple-vector) #'symbol-name<))
                kept)))))

(defun prefix-index (package)
  "PACKAGE's PREFIX-INDEX, brought up to date when PACKAGE-SYMBOL-COUNTS
changed.  Scanning a package costs about 0.1 µs a symbol in ECL (1-3 ms
for 10,000), too much for completion at every key; a binary search in
the sorted names costs nothing.  Sorting 10,000 names takes 20 ms: only
the first index of a package does it; an update walks the package's
tables for the symbols not seen before (TABLE-CHANGES), sorts those and
inserts them.  Call under *PREFIX-INDEXES-LOCK*."
  (let ((counts (package-symbol-counts package))
        (entry (or (gethash package *prefix-indexes*)
                   (setf (gethash package *prefix-indexes*) (make-prefix-index)))))
    (unless (equal (prefix-index-counts entry) counts)
      (update-prefix-index entry package)
      (setf (prefix-index-counts entry) counts))
    entry))

(defun map-prefix-matches (function pattern package external accessible)
  "Call FUNCTION on each symbol whose name starts with PATTERN and whose
home is PACKAGE, or with ACCESSIBLE, which PACKAGE's name finds (present
in it, or inherited from a package it uses); with EXTERNAL, only those
external in PACKAGE."
  (let ((length (length pattern)))
    (mp:with-lock (*prefix-indexes-lock*)
      (flet ((each-match (entry action)
               (let* ((index (prefix-index-symbols entry))
                      (start (first-not-before index pattern 0)))
                 (loop for i from start below (length index)
                       for symbol = (svref index i)
                       for name = (symbol-name symbol)
                       while (and (>= (length name) length) (string= pattern name :end2 length))
                       do (funcall action symbol name))))
             (each-foreign (entry action)
               (maphash (lambda (symbol value)
                          (declare (ignore value))
                          (let ((name (symbol-name symbol)))
                            (when (and (>= (length name) length) (string= pattern name :end2 length))
                              (funcall action symbol name))))
                        (prefix-index-foreign entry))))
        ;; The index may predate an UNINTERN that left the counts alone.
        (each-match (prefix-index package)
                    (lambda (symbol name)
                      (when (and (eq (symbol-package symbol) package)
                                 (or (not external) (eq (nth-value 1 (find-symbol name package)) :external)))
                        (funcall function symbol))))
        (when accessible
          (let ((seen (make-hash-table :test 'eq)))
            ;; Imported: present, whose home is elsewhere.
            (each-foreign (prefix-index package)
                          (lambda (symbol name)
                            (multiple-value-bind (found status) (find-symbol name package)
                              (when (and (eq found symbol) (not (eq status :inherited))
                                         (or (not external) (eq status :external))
                                         (not (gethash symbol seen)))
                                (setf (gethash symbol seen) t)
                                (funcall function symbol)))))
            (unless external
              ;; Inherited: external in a used package, not shadowed.
              (dolist (used (package-use-list package))
                (let ((entry (prefix-index used)))
                  (flet ((consider (symbol name)
                           (multiple-value-bind (found status) (find-symbol name package)
                             (when (and (eq found symbol) (eq status :inherited) (not (gethash symbol seen)))
                               (setf (gethash symbol seen) t)
                               (funcall function symbol)))))
                    (each-match entry #'consider)
                    (each-foreign entry #'consider)))))))))))

(defun map-apropos-matches (function pattern package external prefix &optional accessible)
  "Call FUNCTION on each symbol whose home is PACKAGE (with ACCESSIBLE,
each symbol accessible in PACKAGE: present or inherited) and whose name
contains PATTERN (starts with it when PREFIX), external ones only when
EXTERNAL.  PATTERN is compared case-sensitively: upcase it first."
  (let ((length (length pattern)))
    (if prefix
        (map-prefix-matches function pattern package external accessible)
        (let ((seen (and accessible (make-hash-table :test 'eq))))
          (flet ((consider (symbol)
                   (when (and (if accessible
                                  (not (gethash symbol seen))
                                  (eq (symbol-package symbol) package))
                              (let ((name (symbol-name symbol)))
                                (and (>= (length name) length) (search pattern name))))
                     (when seen (setf (gethash symbol seen) t))
                     (funcall function symbol))))
            (if external
                (do-external-symbols (symbol package) (consider symbol))
                (do-symbols (symbol package) (consider symbol))))))))

(defun write-kinds (kinds out)
  "KINDS (words) as \" [a, b]\" on OUT, nothing when there are none."
  (when kinds
    (write-string " [" out)
    (loop for (kind . more) on kinds
          do (write-string kind out)
             (when more (write-string ", " out)))
    (write-char #\] out)))

(define-built-in-tool "apropos_search"
  "Find symbols whose names contain a substring, across all packages or in one. Use it when you know part of a name but not the exact symbol or its package. Returns one line per symbol: its qualified name and what it names."
  '((:name "pattern" :type :string :description "Substring of the symbol names to find, case-insensitive, e.g. \"hash-table\".")
    (:name "package" :type :string :description "Only symbols of this package (default: all packages).")
    (:name "external_only" :type :boolean :default :false :description "Only exported symbols (default: false).")
    (:name "prefix" :type :boolean :default :false :description "Only names that start with the pattern (default: false, names containing it).")
    (:name "accessible" :type :boolean :default :false :description "With package: every symbol the package's code can name without a prefix (its own, imported, and inherited from the packages it uses), not only those whose home it is (default: false).")
    (:name "limit" :type :integer :minimum 1 :maximum 500 :default 50 :description "At most this many symbols (default 50, at most 500)."))
  :required '("pattern")
  :categories '(:introspection)
  :handler (lambda (args)
             (let* ((pattern (string-upcase (gethash "pattern" args)))
                    (package-name (gethash "package" args))
                    (package (and package-name (lookup-package package-name)))
                    (external (gethash "external_only" args))
                    (prefix (gethash "prefix" args))
                    (accessible (and package (gethash "accessible" args)))
                    (limit (max 1 (min 500 (or (gethash "limit" args) 50))))
                    (found '()) (total 0))
               (if (and package-name (null package))
                   (values nil (no-package-text package-name))
                   (progn
                     (dolist (home (if package (list package) (list-all-packages)))
                       (map-apropos-matches (lambda (symbol)
                                              (incf total)
                                              (when (<= total limit) (push symbol found)))
                                            pattern home external prefix accessible))
                     (if (null found)
                         (format nil "No symbols match '~A'~@[ in package ~A~]." (gethash "pattern" args)
                                 (and package (package-name package)))
                         (with-output-to-string (out)
                           (format out "~D symbol~:P match~:[~;es~] '~A'~:[~;, showing ~D~]:"
                                   total (= total 1) (gethash "pattern" args) (> total limit) limit)
                           ;; Each name made once: as a sort key it was made at every
                           ;; comparison (111 matches in a 10,000-symbol package: 29 ms).
                           (loop for (name . symbol) in (sort (mapcar (lambda (symbol) (cons (qualified-name symbol) symbol))
                                                                      found)
                                                              #'string< :key #'car)
                                 do (terpri out)
                                    (write-string name out)
                                    (write-kinds (symbol-kinds symbol) out)))))))))

(define-built-in-tool "function_arglist"
  "Get the lambda list (parameters) of a function, macro or generic function, with the first line of its documentation. Use it to call something correctly."
  (list '(:name "function" :type :string :description "The function's name, e.g. \"remove-if\" or \"alexandria:flatten\".") +package-parameter+)
  :required '("function")
  :categories '(:introspection)
  :handler (lambda (args)
             (with-named-symbol (symbol (gethash "function" args) (gethash "package" args))
               (if (or (not (fboundp symbol)) (special-operator-p symbol))
                   (values nil (format nil "~A is not a function or macro~:[~;; it is a special operator~]. ~
                                            Use describe_symbol to see what it is."
                                       (qualified-name symbol) (special-operator-p symbol)))
                   (let ((text (lambda-list-text symbol)))
                     (format nil "(~(~A~)~:[ ~A~;~*~])~@[~%~A~]"
                             (symbol-name symbol)
                             (member text '("()" "nil") :test #'string=)
                             (if (and (> (length text) 1) (char= (char text 0) #\())
                                 (subseq text 1 (1- (length text)))
                                 text)
                             (first-line (documentation-text symbol 'function))))))))

(define-built-in-tool "list_package_symbols"
  "List the symbols of a package, with what each names. Use it to explore a library's API (its exported symbols) or to see what a package contains."
  '((:name "package" :type :string :description "The package's name or nickname, e.g. \"alexandria\" or \"CL-USER\".")
    (:name "external_only" :type :boolean :default t :description "Only exported symbols (default: true).")
    (:name "limit" :type :integer :minimum 1 :maximum 1000 :default 100 :description "At most this many symbols (default 100, at most 1000)."))
  :required '("package")
  :categories '(:introspection :packages)
  :handler (lambda (args)
             (let* ((name (gethash "package" args))
                    (package (lookup-package name))
                    (external (multiple-value-bind (value present) (gethash "external_only" args)
                                (if present value t)))
                    (limit (max 1 (min 1000 (or (gethash "limit" args) 100))))
                    (symbols '()))
               (if (null package)
                   (values nil (no-package-text name))
                   (progn
                     (if external
                         (do-external-symbols (symbol package) (push symbol symbols))
                         (do-symbols (symbol package)
                           (when (eq (symbol-package symbol) package) (push symbol symbols))))
                     ;; DO-SYMBOLS may visit a symbol twice; sorted, the
                     ;; repeats are neighbours (REMOVE-DUPLICATES is
                     ;; quadratic: 1.7 s for 10,000 symbols).
                     (setf symbols (loop for (symbol . rest) on (sort symbols #'string< :key #'symbol-name)
                                         unless (eq symbol (first rest)) collect symbol))
                     (if (null symbols)
                         (format nil "Package ~A has no ~:[symbols of its own~;exported symbols~]." (package-name package) external)
                         (with-output-to-string (out)
                           (format out "Package ~A: ~D ~:[~;exported ~]symbol~:P~:[~;, showing ~D~]:"
                                   (package-name package) (length symbols) external
                                   (> (length symbols) limit) limit)
                           (loop for symbol in symbols repeat limit
                                 do (format out "~%~A~@[ [~{~A~^, ~}]~]" (symbol-name symbol) (symbol-kinds symbol))))))))))

(defun named-class (text package)
  "The class TEXT names in PACKAGE, or NIL and why not."
  (multiple-value-bind (symbol problem) (find-named-symbol text package)
    (cond (problem (values nil problem))
          ((find-class symbol nil))
          (t (values nil (format nil "~A names no class~@[ (it is a ~{~A~^, ~})~]. Use apropos_search to find the class's name."
                                 (qualified-name symbol) (symbol-kinds symbol)))))))

(define-built-in-tool "class_slots"
  "List the slots of a class (CLOS or structure): each slot's name, initargs, readers and writers, type, initial value form and allocation, including inherited slots. Use it before making instances or writing methods."
  (list '(:name "class" :type :string :description "The class's name, e.g. \"standard-object\" or \"my-package:point\".") +package-parameter+)
  :required '("class")
  :categories '(:introspection :clos)
  :handler (lambda (args)
             (block tool
              (multiple-value-bind (class problem) (named-class (gethash "class" args) (gethash "package" args))
               (if problem
                   (values nil problem)
                   (progn
                     (unless (clos:class-finalized-p class)
                       (handler-case (clos:finalize-inheritance class)
                         (error (condition)
                           (return-from tool
                             (values nil (format nil "Class ~A cannot be finalized yet (~A); define its missing superclasses first."
                                                 (qualified-name (class-name class)) (condition-message condition)))))))
                     (let ((slots (clos:class-slots class))
                           (home (or (symbol-package (class-name class)) (printing-package)))
                           ;; Readers and writers live on the direct slots.
                           (direct (loop for super in (clos:class-precedence-list class)
                                         append (ignore-errors (clos:class-direct-slots super)))))
                       (if (null slots)
                           (format nil "Class ~A has no slots." (qualified-name (class-name class)))
                           (with-output-to-string (out)
                             (format out "Class ~A (~A), ~D slot~:P:" (qualified-name (class-name class))
                                     (printed (class-name (class-of class))) (length slots) (length slots))
                             (dolist (slot slots)
                               (let* ((name (clos:slot-definition-name slot))
                                      (own (remove name direct :key #'clos:slot-definition-name :test-not #'eq))
                                      (readers (remove-duplicates (loop for d in own append (ignore-errors (clos:slot-definition-readers d)))))
                                      (writers (remove-duplicates (loop for d in own append (ignore-errors (clos:slot-definition-writers d))))))
                                 (format out "~%- ~A~@[ initargs: ~{~S~^ ~}~]~@[ readers: ~{~A~^ ~}~]~@[ writers: ~{~A~^ ~}~] type: ~A~@[ initform: ~A~] allocation: ~(~A~)"
                                         (qualified-name name)
                                         (clos:slot-definition-initargs slot)
                                         (mapcar (lambda (f) (printed f home)) readers)
                                         (mapcar (lambda (f) (printed f home)) writers)
                                         (printed (clos:slot-definition-type slot))
                                         (and (clos:slot-definition-initfunction slot)
                                              (printed (clos:slot-definition-initform slot)))
                                         (clos:slot-definition-allocation slot)))))))))))))

(define-built-in-tool "class_hierarchy"
  "Show a class's place in the class graph: its superclasses in precedence order up to T, and its direct subclasses. Use it to understand inheritance before adding methods or slots."
  (list '(:name "class" :type :string :description "The class's name, e.g. \"simple-error\".") +package-parameter+)
  :required '("class")
  :categories '(:introspection :clos)
  :handler (lambda (args)
             (multiple-value-bind (class problem) (named-class (gethash "class" args) (gethash "package" args))
               (if problem
                   (values nil problem)
                   (let ((precedence (or (ignore-errors
                                          (unless (clos:class-finalized-p class) (clos:finalize-inheritance class))
                                          (clos:class-precedence-list class))
                                         (cons class (clos:class-direct-superclasses class))))
                         (subclasses (clos:class-direct-subclasses class)))
                     (format nil "Class ~A (~A)~%Superclasses (precedence order): ~{~A~^ → ~}~%Direct subclasses: ~:[none~;~:*~{~A~^, ~}~]"
                             (qualified-name (class-name class)) (printed (class-name (class-of class)))
                             (mapcar (lambda (c) (qualified-name (class-name c))) (rest precedence))
                             (sort (mapcar (lambda (c) (qualified-name (class-name c))) subclasses) #'string<)))))))

(define-built-in-tool "macroexpand_form"
  "Expand the macros of a Lisp form and show the result pretty-printed: one step (MACROEXPAND-1) by default, or until the outermost form is no macro call (MACROEXPAND) with full=true. Use it to understand what a macro does or to debug one."
  '((:name "form" :type :string :description "The form, as Lisp source text, e.g. \"(with-open-file (s \\\"f\\\") (read s))\".")
    (:name "package" :type :string :description "The package to read the form in (default: the session's current package).")
    (:name "full" :type :boolean :default :false :description "Expand until the outermost form is no longer a macro call (default: false, one step)."))
  :required '("form")
  :categories '(:introspection)
  :handler (lambda (args)
            (block tool
             (let* ((package-name (gethash "package" args))
                    (package (lookup-package package-name)))
               (if (null package)
                   (values nil (no-package-text package-name))
                   (let* ((*package* package)
                          (form (handler-case (let ((*read-eval* nil)) (read-from-string (gethash "form" args)))
                                  (end-of-file ()
                                    (return-from tool (values nil "The form cannot be read: it ends before it is complete (a missing closing parenthesis or quote?).")))
                                  (error (condition)
                                    (return-from tool (values nil (format nil "The form cannot be read: ~A"
                                                                          (without-object-addresses (condition-message condition)))))))))
                     (multiple-value-bind (expansion expanded)
                         (if (gethash "full" args) (macroexpand form) (macroexpand-1 form))
                       (let ((*print-pretty* t) (*print-right-margin* 80) (*print-case* :downcase)
                             (*print-length* nil) (*print-level* nil) (*print-readably* nil))
                         (if expanded
                             (prin1-to-string expansion)
                             (format nil "~A~%(not a macro call: nothing to expand)" (prin1-to-string expansion)))))))))))
