;;;; syntax.lisp — the check_syntax tool: Lisp text read, never evaluated,
;;;; each problem reported at its line and column.
;;;;
;;;; The text is read form by form as the compiler would read it (an
;;;; IN-PACKAGE switches packages, a DEFPACKAGE read ahead makes a stand-in
;;;; for what follows), with *READ-EVAL* off.  Unqualified names are read
;;;; into a scratch package that uses what the real one uses, so checking
;;;; interns nothing in the session's packages (a PKG::NAME still interns
;;;; in PKG, as any reading does).  After a problem inside a list form the
;;;; reading goes on after the list's closing parenthesis, found by a small
;;;; scanner that knows strings, comments, character names and |escapes|,
;;;; so one run reports every form's problem, not only the first.

(in-package "AGENT-Q")

(defconstant +syntax-problems-shown+ 50 "Problems reported at most, per check.")
(defconstant +syntax-file-limit+ (* 16 1024 1024) "The largest file check_syntax reads, in bytes.")

(defun scan-list-end (text start)
  "Scan TEXT from START, an open parenthesis, as the reader would see the
list's characters.  Returns the position after its closing parenthesis,
or NIL and, as second value, where the innermost list still open at the
end began, and as third the start of a string (or |name|, or #| comment)
still open at the end."
  (let ((opens '()) (i start) (n (length text)))
    (flet ((skip-delimited (close)
             ;; From just after an opening " or |: past its CLOSE, or NIL.
             (loop (when (>= i n) (return nil))
                   (let ((c (char text i)))
                     (cond ((char= c #\\) (incf i 2))
                           ((char= c close) (incf i) (return t))
                           (t (incf i)))))))
      (loop
        (when (>= i n) (return (values nil (first opens) nil)))
        (let ((c (char text i)))
          (cond
            ((char= c #\() (push i opens) (incf i))
            ((char= c #\))
             (pop opens) (incf i)
             (when (null opens) (return i)))
            ((char= c #\;) (setf i (or (position #\Newline text :start i) n)))
            ((or (char= c #\") (char= c #\|))
             (let ((from i))
               (incf i)
               (unless (skip-delimited c) (return (values nil (first opens) from)))))
            ((char= c #\\) (incf i 2))
            ((and (char= c #\#) (< (1+ i) n) (char= (char text (1+ i)) #\\))
             ;; #\x, #\(, #\Space: the character after #\ is never syntax.
             (incf i 3))
            ((and (char= c #\#) (< (1+ i) n) (char= (char text (1+ i)) #\|))
             (let ((from i) (depth 1))
               (incf i 2)
               (loop (when (>= i (1- n)) (return-from scan-list-end (values nil (first opens) from)))
                     (cond ((and (char= (char text i) #\|) (char= (char text (1+ i)) #\#))
                            (incf i 2) (when (zerop (decf depth)) (return)))
                           ((and (char= (char text i) #\#) (char= (char text (1+ i)) #\|))
                            (incf i 2) (incf depth))
                           (t (incf i))))))
            (t (incf i))))))))

(defun reader-message (condition)
  "CONDITION's report without ECL's \"Reader error in file …, position N:\"
line, on one line."
  (let* ((text (condition-message condition))
         (colon (and (search "Reader error in file" text) (position #\Newline text))))
    (one-line (if colon (subseq text (1+ colon)) text))))

(defun scratch-package (package)
  "A package that reads unqualified names as PACKAGE does for its
inherited symbols, where checking may intern what it reads."
  (make-package (symbol-name (gensym "AGENT-Q-SYNTAX-")) :use (package-use-list package)))

(defun check-syntax-text (text package)
  "Read TEXT's forms in PACKAGE without evaluating them.  Returns the number
of forms read and the problems, each (LINE COLUMN MESSAGE), in order."
  (let* ((starts (line-starts text))
         (made '()) (problems '()) (forms 0) (position 0)
         (eof '#:eof))
    (labels ((place (at) (let ((line (line-of starts at))) (list line (1+ (- at (aref starts (1- line)))))))
             (note (at format-control &rest arguments)
               (push (append (place at) (list (apply #'format nil format-control arguments))) problems))
             (reading-package (real)
               (let ((scratch (scratch-package real))) (push scratch made) scratch)))
      (unwind-protect
           (with-input-from-string (in text)
             (let ((*package* (reading-package package)) (*read-eval* nil))
               (loop
                 (setf position (skip-blank text position))
                 (when (or (>= position (length text)) (>= (length problems) +syntax-problems-shown+))
                   (return))
                 (file-position in position)
                 (let ((start position))
                   (handler-case
                       (let ((form (read in nil eof)))
                         (when (eq form eof) (return))
                         (incf forms)
                         (setf position (file-position in))
                         (when (consp form)
                           (case (car form)
                             (in-package
                              (let ((next (ignore-errors (find-package (string (second form))))))
                                (if next
                                    (setf *package* (if (member next made) next (reading-package next)))
                                    (note start "(in-package ~A): no such package, and none defined above it"
                                          (ignore-errors (string (second form)))))))
                             (defpackage
                              (let ((stand-in (defpackage-stand-in form)))   ; agent-code.lisp
                                (when stand-in (push stand-in made)))))))
                     (end-of-file ()
                       (multiple-value-bind (end open string) (if (char= (char text start) #\()
                                                                   (scan-list-end text start)
                                                                   (values nil nil nil))
                         (declare (ignore end))
                         (cond (string
                                (apply #'note string "~A opened here is never closed"
                                       (list (case (char text string)
                                               (#\" "a string") (#\| "a |name|") (t "a #| comment")))))
                               (open
                                (note open "this ( is never closed~:[ (the form begins at line ~D, column ~D)~;~*~*~]"
                                      (= open start) (first (place start)) (second (place start))))
                               (t (note start "the text ends in the middle of this form"))))
                       (return))
                     (error (condition)
                       ;; The reader stops just past what it failed on
                       ;; (a stray ")", a token's last character).
                       (let ((at (min (max start (1- (or (ignore-errors (file-position in)) (1+ start))))
                                      (max 0 (1- (length text))))))
                         (note at "~A" (reader-message condition))
                         (setf position
                               (max (1+ at)
                                    (or (and (char= (char text start) #\() (scan-list-end text start))
                                        (1+ at)))))))))))
        (dolist (package made) (ignore-errors (delete-package package)))))
    (values forms (nreverse problems))))

(defun check-syntax-report (forms problems)
  (if (null problems)
      (format nil "No problems: ~D form~:P read (nothing was evaluated)." forms)
      (format nil "~D problem~:P (~D form~:P read, nothing evaluated):~{~%line ~D, column ~D: ~A~}"
              (length problems) forms (loop for problem in problems append problem))))

(define-built-in-tool "check_syntax"
  "Check Common Lisp text for reader problems without evaluating anything: unbalanced parentheses (says where the unclosed one opens), unknown package prefixes, a string or comment that never ends, #. (read-time evaluation is off), bad # syntax. Each problem comes with its line and column; an IN-PACKAGE or DEFPACKAGE in the text is honoured. Give code, or the path of a .lisp file. Use it before evaluating or saving code you wrote."
  `((:name "code" :type :string :description "The Lisp text to check. Give code or path.")
    (:name "path" :type :string :description "A Lisp source file to check instead of code (read as UTF-8).")
    ,+package-parameter+)
  :categories '(:editing)
  :handler (lambda (arguments)
             (let ((code (gethash "code" arguments))
                   (path (gethash "path" arguments))
                   (package (lookup-package (gethash "package" arguments))))
               (cond
                 ((null package) (values nil (no-package-text (gethash "package" arguments))))
                 ((and (stringp code) (plusp (length code)))
                  (multiple-value-call #'check-syntax-report (check-syntax-text code package)))
                 ((and (stringp path) (plusp (length path)))
                  (handler-case
                      (with-open-file (in path :external-format :utf-8)
                        (if (> (file-length in) +syntax-file-limit+)
                            (values nil (format nil "~A is larger than ~D MB: not checked." path
                                                (floor +syntax-file-limit+ (* 1024 1024))))
                            (let ((text (make-string (file-length in))))
                              (setf text (subseq text 0 (read-sequence text in)))
                              (multiple-value-call #'check-syntax-report (check-syntax-text text package)))))
                    (file-error (condition)
                      (values nil (format nil "Cannot read ~A: ~A" path (one-line (condition-message condition)))))))
                 (t (values nil "Give \"code\" (Lisp text) or \"path\" (a Lisp file) to check."))))))
