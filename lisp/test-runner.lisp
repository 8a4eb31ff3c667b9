;;;; test-runner.lisp — the run_tests tool: a system's tests, or FiveAM
;;;; tests and suites by name, with each check's result.
;;;;
;;;; FiveAM (Debian's cl-fiveam) is read directly: every FIVEAM:RUN made
;;;; while the tests run is watched for the results it returns (a test
;;;; system's TEST-OP usually calls RUN! or RUN), so a failure comes back
;;;; with its test, its reason and its form.  Any other framework: the
;;;; output TEST-OP printed is the answer, and it says so.  The tests run
;;;; as a tool's job: under the session's time limit, interruptible, and
;;;; an agent's run is checked while it runs as its evaluations are.
;;;; FiveAM's symbols are looked up when the code runs: it is not loaded
;;;; when this file is compiled.

(in-package "AGENT-Q")

(defconstant +test-failures-shown+ 30 "Failures reported in full, at most.")

(defun fiveam-symbol (name)
  (let ((package (find-package "FIVEAM")))
    (and package (find-symbol name package))))

(defun fiveam-slot (object name)
  "The slot NAME (of FIVEAM's) of OBJECT, or NIL."
  (let ((slot (fiveam-symbol name)))
    (and slot (slot-exists-p object slot) (slot-boundp object slot) (slot-value object slot))))

(defun fiveam-result-classes ()
  "FiveAM's result classes, as (PASSED ERRORED FAILED SKIPPED), each a
class or NIL: looked up once for a run's results, not once per result."
  (mapcar (lambda (name)
            (let ((symbol (fiveam-symbol name)))
              (and symbol (find-class symbol nil))))
          '("TEST-PASSED" "UNEXPECTED-TEST-FAILURE" "TEST-FAILURE" "TEST-SKIPPED")))

(defun fiveam-result-kind (result &optional (classes (fiveam-result-classes)))
  "RESULT's kind: :PASSED, :ERRORED, :FAILED, :SKIPPED or :UNKNOWN.
CLASSES: see FIVEAM-RESULT-CLASSES."
  (destructuring-bind (passed errored failed skipped) classes
    (flet ((is (class) (and class (typep result class))))
      ;; An unexpected failure (an error) is a kind of failure: first.
      (cond ((is passed) :passed)
            ((is errored) :errored)
            ((is failed) :failed)
            ((is skipped) :skipped)
            (t :unknown)))))

(defun fiveam-result-parts (result)
  "A failure or error's kind (:FAILED, :ERRORED), test name, reason and
form, the last three as text or NIL."
  (let* ((test-case (fiveam-slot result "TEST-CASE"))
         (name (and test-case (fiveam-slot test-case "NAME")))
         (reason (fiveam-slot result "REASON"))
         (form (fiveam-slot result "TEST-EXPR"))
         (condition (fiveam-slot result "ACTUAL-CONDITION"))
         (*package* (printing-package)))
    (values (fiveam-result-kind result)
            (if name (prin1-to-string name) "(unnamed test)")
            (cond (reason (without-object-addresses (one-line-capped (princ-to-string reason) 400)))
                  (condition (format nil "~A: ~A" (type-name condition) (one-line (condition-message condition)))))
            (and form (one-line-capped (printed form) 300)))))

(defun fiveam-result-line (result)
  "One failure or error as text: its test, its reason, its form."
  (multiple-value-bind (kind name reason form) (fiveam-result-parts result)
    (format nil "~:@(~A~) ~A~@[~%  reason: ~A~]~@[~%  form: ~A~]" kind name reason form)))

(defun note-test-results (counts failures framework-note)
  "run_tests's structured result (its :OUTPUT-SCHEMA), for a caller that
takes one."
  (when *want-structure*
    (note-structured-result
     (list :passed (if failures :false t)
           :checks (+ (getf counts :passed) (getf counts :failed) (getf counts :errored)
                      (getf counts :skipped) (getf counts :unknown))
           :passed_checks (getf counts :passed) :failed_checks (getf counts :failed)
           :errored_checks (getf counts :errored) :skipped_checks (getf counts :skipped)
           :framework framework-note
           :failures (coerce (loop for result in failures
                                   repeat +test-failures-shown+
                                   collect (multiple-value-bind (kind name reason form)
                                               (fiveam-result-parts result)
                                             (list :test name :kind (string-downcase kind)
                                                   :reason (or reason :null) :form (or form :null))))
                             'vector)))))

(defparameter +run-tests-output-schema+
  "{\"type\":\"object\",\"properties\":{
     \"passed\":{\"type\":[\"boolean\",\"null\"],\"description\":\"No check failed or errored; null when the framework's results could not be read (see output).\"},
     \"output\":{\"type\":\"string\",\"description\":\"What the tests printed, when their framework is not FiveAM.\"},
     \"checks\":{\"type\":\"integer\"},\"passed_checks\":{\"type\":\"integer\"},
     \"failed_checks\":{\"type\":\"integer\"},\"errored_checks\":{\"type\":\"integer\"},
     \"skipped_checks\":{\"type\":\"integer\"},
     \"framework\":{\"type\":\"string\"},
     \"failures\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{
        \"test\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\",\"enum\":[\"failed\",\"errored\"]},
        \"reason\":{\"type\":[\"string\",\"null\"]},\"form\":{\"type\":[\"string\",\"null\"]}},
        \"required\":[\"test\",\"kind\"]}}},
   \"required\":[\"passed\",\"checks\",\"failures\"]}"
  "The JSON schema of run_tests's structured result (FiveAM's results).")

(defvar *test-results* :off
  "While run_tests runs tests: the FiveAM results made so far, newest first.")
(defvar *fiveam-hooked* nil "True once FiveAM's results are noted as they are made.")

(defun note-test-result (result)
  (when (listp *test-results*) (push result *test-results*)))

(defun hook-fiveam-results ()
  "Note every FiveAM result as it is made: an :AFTER method on its
INITIALIZE-INSTANCE (a call of FIVEAM:RUN from FiveAM's own RUN! is a
direct call in ECL's compiled code, which no wrapper would see)."
  (unless *fiveam-hooked*
    (let ((class (fiveam-symbol "TEST-RESULT")))
      (when (and class (find-class class nil))
        (eval `(defmethod initialize-instance :after ((result ,class) &key)
                 (note-test-result result)))
        (setf *fiveam-hooked* t)))))

(defun call-collecting-fiveam-results (thunk)
  "Call THUNK; return the FiveAM results made meanwhile, in order."
  (hook-fiveam-results)
  (let ((*test-results* '()))
    (funcall thunk)
    ;; FiveAM loaded by THUNK itself: hooked from now on, and its results
    ;; are seen on the next run.
    (hook-fiveam-results)
    (reverse *test-results*)))

(defun test-results-text (results framework-note)
  (let ((counts (list :passed 0 :failed 0 :errored 0 :skipped 0 :unknown 0))
        (failures '())
        (classes (fiveam-result-classes)))
    (dolist (result results)
      (let ((kind (fiveam-result-kind result classes)))
        (incf (getf counts kind))
        (when (member kind '(:failed :errored)) (push result failures))))
    (setf failures (reverse failures))
    (note-test-results counts failures framework-note)
    (setf failures (reverse failures))
    (with-output-to-string (out)
      (format out "~:[FAILED~;PASSED~]: ~D check~:P, ~D passed, ~D failed, ~D errored~:[, ~D skipped~;~*~] (~A)"
              (null failures) (length results) (getf counts :passed) (getf counts :failed)
              (getf counts :errored) (zerop (getf counts :skipped)) (getf counts :skipped) framework-note)
      (loop for result in (nreverse failures)
            repeat +test-failures-shown+
            do (format out "~%~%~A" (fiveam-result-line result)))
      (when (> (length failures) +test-failures-shown+)
        (format out "~%~%… ~D more failures" (- (length failures) +test-failures-shown+))))))

(defun run-named-tests (names package)
  "Run the FiveAM tests or suites NAMES (strings read as PACKAGE reads them)."
  (unless (find-package "FIVEAM")
    (return-from run-named-tests
      (values nil "FiveAM is not loaded, so there are no FiveAM tests to run by name: load the system that defines them (load_system), or give \"system\".")))
  (let ((results '()))
    (dolist (name names)
      (multiple-value-bind (symbol problem) (find-named-symbol name package)
        (when problem (return-from run-named-tests (values nil problem)))
        (unless (funcall (fiveam-symbol "GET-TEST") symbol)
          (return-from run-named-tests (values nil (format nil "~A names no FiveAM test or suite." name))))
        (setf results (append results (call-collecting-fiveam-results
                                       (lambda ()
                                         ;; FiveAM's dots and names: the results say more.
                                         (let ((*standard-output* (make-broadcast-stream)))
                                           (funcall (fiveam-symbol "RUN") symbol))))))))
    (test-results-text results "FiveAM")))

(defun run-system-tests (name)
  "ASDF:TEST-SYSTEM NAME, found as load_system finds systems."
  (prepare-system-search)                  ; systems.lisp
  ;; FiveAM first, when there is one, so that its results are seen.
  (unless (find-package "FIVEAM")
    (let ((*load-verbose* nil) (*compile-verbose* nil) (*compile-print* nil)
          (*standard-output* (make-broadcast-stream)))
      (handler-bind ((warning #'muffle-warning))
        (when (ignore-errors (asdf-call "FIND-SYSTEM" "fiveam" nil))
          ;; A library, as load_system counts one from the system registry:
          ;; its packages stay through reset_session.  (Deleting them broke
          ;; ASDF: asdf-flv, which FiveAM uses, adds methods to ASDF's
          ;; PERFORM that read its variable.)
          ;; And it is not loaded again: a dependency of FiveAM's with a
          ;; missing static file (trivial-backtrace's COPYING) made ASDF
          ;; reload FiveAM at a later TEST-SYSTEM, which emptied its test
          ;; registry ("Didn't run anything").
          (let ((before (list-all-packages))
                (systems (ignore-errors (asdf-call "ALREADY-LOADED-SYSTEMS"))))
            (unwind-protect (asdf-call "LOAD-SYSTEM" "fiveam")
              (dolist (package (list-all-packages))
                (unless (member package before)
                  (pushnew package *image-packages*)))
              (dolist (system (ignore-errors (asdf-call "ALREADY-LOADED-SYSTEMS")))
                (unless (member system systems :test #'equal)
                  (ignore-errors (asdf-call "REGISTER-IMMUTABLE-SYSTEM" system))))))))))
  (let* ((output (make-string-output-stream))
         (results (let ((*standard-output* output) (*error-output* output)
                        (*load-verbose* nil) (*compile-verbose* nil) (*compile-print* nil)
                        (*package* (printing-package)) (*read-eval* t))
                    (call-collecting-fiveam-results
                     (lambda () (asdf-call "TEST-SYSTEM" name))))))
    (if results
        (test-results-text results (format nil "FiveAM, via ASDF:TEST-SYSTEM ~S" name))
        (let ((printed (string-right-trim '(#\Newline #\Space) (get-output-stream-string output))))
          (note-structured-result
           (list :passed :null :checks 0 :failures #() :framework "not FiveAM: results not read"
                 :output (if (> (length printed) 20000) (subseq printed 0 20000) printed)))
          (format nil "The tests of ~A ran (ASDF:TEST-SYSTEM) with a framework this tool does not read ~
                       (not FiveAM), so there are no per-test results: here is what they printed.~%~%~A"
                  name (if (> (length printed) 20000)
                           (concatenate 'string (subseq printed 0 20000) "…")
                           (if (string= printed "") "(nothing)" printed)))))))

(define-built-in-tool "run_tests"
  "Run Common Lisp tests and report each failure: a system's tests (ASDF:TEST-SYSTEM, loading what it needs), or FiveAM tests and suites by name. Returns PASSED or FAILED with the counts of checks passed, failed and errored, then each failure with its test, reason and form. FiveAM results are read directly; with another framework the test output is returned instead, and the answer says so. Runs under the session's time limit and can be interrupted."
  `((:name "system" :type :string :description "An ASDF system whose tests to run, e.g. \"my-app\" (its test-op, usually my-app/tests). Give system or names.")
    (:name "names" :type :array :description "FiveAM tests or suites to run by name, e.g. [\"my-suite\"], read in package.")
    ,+package-parameter+
    (:name "framework" :type :string :enum ("auto" "fiveam") :default "auto"
     :description "auto (the default: FiveAM when it ran, else the output), or fiveam."))
  :safety-level :cautious
  :categories '(:execution)
  :output-schema +run-tests-output-schema+
  :handler (lambda (arguments)
             (let ((system (gethash "system" arguments))
                   (names (gethash "names" arguments)))
               ;; framework: auto and fiveam (its enum) read FiveAM's results alike.
               (cond
                 ((and (listp names) names)
                  (if (every #'stringp names)
                      (run-named-tests names (gethash "package" arguments))
                      (values nil "\"names\" must be an array of strings.")))
                 ((and (stringp system) (plusp (length (string-trim " " system))))
                  (handler-case (run-system-tests (string-trim " " system))
                    (error (condition)
                      (values nil (format nil "[ERROR] ~A~%~A" (type-name condition)
                                          (one-line (condition-message condition)))))))
                 (t (values nil "Give \"system\" (an ASDF system) or \"names\" (FiveAM tests or suites)."))))))
