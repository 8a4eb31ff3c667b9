;;;; profile.lisp — the profile_form tool: where a form's time (or its
;;;; allocation) goes, by function of the session's.
;;;;
;;;; Deterministic: while the form runs, each function the session defined
;;;; (SESSION-SYMBOLS: not ECL's, not a library's) is replaced by a wrapper
;;;; that counts its calls and adds up the time (or the bytes allocated)
;;;; from its outermost call's entry to its return; afterwards each
;;;; definition the form did not replace is put back.  The form itself is
;;;; evaluated as evaluate_lisp evaluates (an agent's code is read first,
;;;; under the same limits, interruptible).  Not seen: generic functions
;;;; (wrapping one would break a DEFMETHOD in the form), macros, and calls
;;;; a native function makes to itself or to a function compiled in the
;;;; same batch, which are direct C calls.  Pending background compiles
;;;; end first, so the functions run as they will run afterwards.
;;;;
;;;; Statistical (mode sample, below): the worker's stacks, sampled on its
;;;; CPU-time clock; every function is seen, ECL's and native ones too.

(in-package "AGENT-Q")

(defconstant +profiled-functions-limit+ 2000 "Functions wrapped at most.")
(defconstant +profile-rows-shown+ 40 "Functions listed at most.")

(defstruct (profile-entry (:constructor make-profile-entry (name original)))
  name original (calls 0) (total 0) (depth 0))

(defun profile-metric (mode)
  "The current value of what MODE measures: microseconds, or bytes allocated."
  (if (eq mode :alloc) (si::gc-stats t) (%monotonic-us)))

(defun profile-wrapper (entry mode)
  (let ((original (profile-entry-original entry)))
    (lambda (&rest arguments)
      (incf (profile-entry-calls entry))
      (if (eq mode :calls)
          (apply original arguments)
          (let ((start (profile-metric mode)))
            (incf (profile-entry-depth entry))
            (unwind-protect (apply original arguments)
              ;; A recursive call's time is its outermost call's.
              (when (zerop (decf (profile-entry-depth entry)))
                (incf (profile-entry-total entry) (- (profile-metric mode) start)))))))))

(defun profiled-symbols ()
  "The session's functions that can be wrapped, at most +PROFILED-FUNCTIONS-LIMIT+."
  (let ((symbols (remove-if-not (lambda (symbol)
                                  (and (fboundp symbol)
                                       (not (macro-function symbol))
                                       (not (special-operator-p symbol))
                                       (not (typep (fdefinition symbol) 'generic-function))))
                                (session-symbols))))
    (subseq symbols 0 (min (length symbols) +profiled-functions-limit+))))

(defun call-profiled (mode thunk)
  "Call THUNK with the session's functions wrapped for MODE; returns its
values and, last, the entries (PROFILE-ENTRY) and the form's total."
  (let ((entries '()) (start 0) (total 0) (results '()))
    (unwind-protect
         (progn
           (dolist (symbol (profiled-symbols))
             (let ((entry (make-profile-entry symbol (fdefinition symbol))))
               (setf (fdefinition symbol) (profile-wrapper entry mode))
               (push (cons entry (fdefinition symbol)) entries)))
           (setf start (profile-metric mode)
                 results (multiple-value-list (funcall thunk))
                 total (- (profile-metric mode) start)))
      ;; Put back what the form did not replace.
      (loop for (entry . wrapper) in entries
            for name = (profile-entry-name entry)
            when (and (fboundp name) (eq (fdefinition name) wrapper))
              do (setf (fdefinition name) (profile-entry-original entry))))
    (values results (mapcar #'car entries) total)))

(defun profile-report (mode entries total)
  (let* ((called (sort (remove 0 entries :key #'profile-entry-calls)
                       #'> :key (if (eq mode :calls) #'profile-entry-calls #'profile-entry-total)))
         (*package* (printing-package))
         (unit (case mode (:alloc "bytes") (t "ms")))
         (scale (if (eq mode :time) 1000.0 1)))
    (with-output-to-string (out)
      (if (eq mode :alloc)
          (format out "profile_form (alloc): the form allocated ~:D bytes" total)
          (format out "profile_form (~(~A~)): the form took ~,2F ms" mode (/ total 1000.0)))
      (format out "; functions of the session's called: ~D of ~D." (length called) (length entries))
      (when called
        (format out "~%~%~40A ~12@A~:[ ~14@A ~6@A~;~]" "function" "calls" (eq mode :calls)
                (format nil "inclusive ~A" unit) "%")
        (loop for entry in called
              repeat +profile-rows-shown+
              do (format out "~%~40A ~12D" (one-line-capped (prin1-to-string (profile-entry-name entry)) 40)
                         (profile-entry-calls entry))
                 (unless (eq mode :calls)
                   (if (eq mode :alloc)
                       (format out " ~14:D" (profile-entry-total entry))
                       (format out " ~14,2F" (/ (profile-entry-total entry) scale)))
                   (format out " ~6,1F" (if (plusp total) (* 100.0 (/ (profile-entry-total entry) total)) 0.0))))
        (when (> (length called) +profile-rows-shown+)
          (format out "~%… ~D more" (- (length called) +profile-rows-shown+)))))))

;;; Mode sample: statistical.  While the form runs, a timer on the worker's
;;; CPU-time clock stops it every INTERVAL microseconds of its CPU time and
;;; records its C stack and ECL's interpreter frames (module/ecl/sampler.cpp:
;;; a signal of its own, not ECL's interrupts, so C-g and the limits are
;;; untouched).  Every function is seen: ECL's, a library's, natively
;;; compiled ones calling themselves.  Afterwards each C address is named
;;; by the Lisp function whose machine code holds it (the nearest entry
;;; below it in the same object, unless an exported C function lies
;;; between), each interpreter frame by its function.

(defconstant +profile-samples-limit+ 5000 "Samples taken at most by mode sample.")
(defconstant +profile-interval-default+ 1000 "Mode sample's default interval, in microseconds of CPU time.")

(defun call-sampled (interval thunk)
  "Call THUNK while the worker is sampled every INTERVAL microseconds of its
CPU time.  Returns its values' list, the samples ((ADDRESSES . FUNCTIONS)
each, innermost first), %SAMPLER-STOP's counts, and the wall and CPU
microseconds THUNK took.  Sampling has stopped, and its buffers are freed,
however THUNK ends."
  (let ((results '()) (samples '()) (counts '()) (wall 0) (cpu 0))
    (unwind-protect
         (let ((start (%sampler-start interval +profile-samples-limit+)))
           (unless (eq start t)
             (error "profile_form: sampling could not start: ~A." start))
           (let ((wall-start (%monotonic-us)) (cpu-start (%thread-cpu-us)))
             (setf results (multiple-value-list (funcall thunk))
                   counts (%sampler-stop)
                   wall (- (%monotonic-us) wall-start)
                   cpu (- (%thread-cpu-us) cpu-start)))
           (setf samples (loop for index below (first counts) collect (%sampler-sample index))))
      (%sampler-release))
    (values results samples counts wall cpu)))

(defun function-entries ()
  "A vector of (ENTRY . SYMBOL), sorted by ENTRY: where the machine code of
each named function starts (one name for code with several, CL's first)."
  (let ((table (make-hash-table)) (cl (find-package "CL")))
    (do-all-symbols (symbol)
      (when (and (fboundp symbol) (not (special-operator-p symbol)) (not (macro-function symbol)))
        (let ((entry (ignore-errors (%function-entry (fdefinition symbol)))))
          (when entry
            (let ((old (gethash entry table)))
              (when (or (null old) (and (eq (symbol-package symbol) cl) (not (eq (symbol-package old) cl))))
                (setf (gethash entry table) symbol)))))))
    (let ((pairs (make-array (hash-table-count table))) (index 0))
      (maphash (lambda (entry symbol) (setf (aref pairs index) (cons entry symbol)) (incf index)) table)
      (sort pairs #'< :key #'car))))

(defun entry-at-or-below (entries address)
  "The (ENTRY . SYMBOL) of ENTRIES with the greatest ENTRY not above ADDRESS, or NIL."
  (let ((low 0) (high (1- (length entries))) (found nil))
    (loop while (<= low high)
          do (let ((middle (floor (+ low high) 2)))
               (if (<= (car (aref entries middle)) address)
                   (setf found (aref entries middle) low (1+ middle))
                   (setf high (1- middle)))))
    found))

(defun runtime-symbol-p (name)
  "True when NAME, a function's name, is one of the runtime's (AGENT-Q's)."
  (and (symbolp name) (eq (symbol-package name) (load-time-value (find-package "AGENT-Q")))))

(defun make-address-namer ()
  "A function of a C address: (:LISP . NAME) in a Lisp function's machine
code, (:INTERPRETER) in ECL's bytecode interpreter, else (:C . TEXT).
An address inside an exported C function is that function (a Lisp one
when a Lisp function's code starts there).  In code its object does not
export, it is the Lisp function whose code starts nearest below it, in
the same object, when that function is not exported itself (compiled
Lisp, ECL's included, keeps its functions static; C helpers follow the
exported C function they serve); else unnamed C code."
  (let ((entries (function-entries)) (seen (make-hash-table)) (symbols (make-hash-table))
        (own-base (third (%native-symbol (%function-entry #'make-address-namer)))))
    (flet ((symbol-of (address)
             (multiple-value-bind (value found) (gethash address symbols)
               (if found value (setf (gethash address symbols) (%native-symbol address))))))
      (lambda (address)
        (or (gethash address seen)
            (setf (gethash address seen)
                  (destructuring-bind (&optional c-name c-start object-base file &rest rest) (symbol-of address)
                    (declare (ignore rest))
                    (let ((entry (entry-at-or-below entries address)))
                      (cond ((and c-name (equal c-name "ecl_interpret")) (list :interpreter))
                            ((and c-name entry (eql (car entry) c-start)) (cons :lisp (cdr entry)))
                            (c-name (cons :c c-name))
                            ((and entry object-base
                                  (destructuring-bind (&optional e-name e-start e-base &rest rest) (symbol-of (car entry))
                                    (declare (ignore rest))
                                    (and (eql e-base object-base)
                                         (not (and e-name (eql e-start (car entry))))))
                                  ;; The runtime's own object mixes its Lisp with static C++.
                                  (or (not (eql object-base own-base)) (runtime-symbol-p (cdr entry))))
                             (cons :lisp (cdr entry)))
                            (file (cons :c (format nil "~A+~X" (file-namestring file) (- address object-base))))
                            (t (cons :c (format nil "#x~X" address))))))))))))

(defparameter *sample-boundary-names* '(eval-form simple-eval load-source read-eval-forms evaluate-string)
  "The runtime's functions that evaluate the form: a sample's frames from
the innermost of them outwards are the runtime's, not the form's.")

(defun sampled-function-name (function)
  "The name of FUNCTION, an interpreter frame's function."
  (cond ((symbolp function) function)
        ((functionp function) (or (si::compiled-function-name function) (native-function-name function)))
        (t nil)))

(defun sample-rows (samples)
  "The samples counted by function: a list of (NAME SELF INCLUSIVE), and
how many samples found the worker in C code outside every Lisp function
the form runs (no Lisp function below it either)."
  (let ((namer (make-address-namer)) (self (make-hash-table :test #'equal))
        (inclusive (make-hash-table :test #'equal)) (outside 0))
    (dolist (sample samples)
      (destructuring-bind (addresses . functions) sample
        (let* ((interpreted (remove-if #'internal-frame-p (mapcar #'sampled-function-name functions)))
               (frames (loop for address in addresses
                             for frame = (funcall namer address)
                             until (and (eq (car frame) :lisp) (member (cdr frame) *sample-boundary-names*))
                             collect frame))
               (top nil) (names '()))
          ;; The runtime's call of EVAL, outermost: not the form's.
          (setf frames (reverse (member-if-not (lambda (frame) (or (not (eq (car frame) :lisp))
                                                                   (eq (cdr frame) 'si:eval-with-env)))
                                               (reverse frames))))
          ;; Innermost Lisp function: native code, or the interpreter's top
          ;; frame (the form itself when that has no name), also when only C
          ;; code is found above the form's evaluation.
          (setf top (loop for (kind . name) in frames
                          when (and (eq kind :lisp) (not (internal-frame-p name)))
                            return name
                          when (eq kind :interpreter)
                            return (or (first interpreted) "(the form itself)")
                          finally (return (first interpreted))))   ; C code serving the interpreter
          (loop for (kind . name) in frames
                when (and (eq kind :lisp) (not (internal-frame-p name)))
                  do (pushnew name names :test #'equal))
          (dolist (name interpreted) (pushnew name names :test #'equal))
          (when (find :interpreter frames :key #'car) (pushnew "(the form itself)" names :test #'equal))
          (if top (incf (gethash top self 0)) (incf outside))
          (dolist (name names) (incf (gethash name inclusive 0))))))
    (let ((rows '()))
      (maphash (lambda (name count) (push (list name (gethash name self 0) count) rows)) inclusive)
      (values (sort rows (lambda (a b) (or (> (second a) (second b))
                                           (and (= (second a) (second b)) (> (third a) (third b))))))
              outside))))

(defun sample-report (samples counts interval wall cpu)
  (destructuring-bind (taken dropped truncated unwound skipped) counts
    (multiple-value-bind (rows outside) (sample-rows samples)
      (let ((*package* (printing-package))
            (percent (lambda (n) (if (plusp taken) (* 100.0 (/ n taken)) 0.0))))
        (with-output-to-string (out)
          (format out "profile_form (sample): the form took ~,2F ms, ~,2F ms of the worker's CPU; ~D sample~:P, one every ~D us of CPU time asked"
                  (/ wall 1000.0) (/ cpu 1000.0) taken interval)
          (when (plusp taken)
            (format out " (~D us apart on average)" (round cpu taken)))
          (format out ".")
          (when (plusp dropped)
            (format out "~%Sampling stopped at ~:D samples (the limit); ~:D more were not taken." taken dropped))
          (when (plusp skipped)
            (format out "~%~:D tick~:P found the stack within 256 KB of its limit (deep recursion): no sample was taken there." skipped))
          (when (plusp truncated)
            (format out "~%~D sample~:P had a stack deeper than kept (the innermost 96 C and 64 interpreter frames): their outer callers are not counted." truncated))
          (when (< unwound taken)
            (format out "~%~D sample~:P could not walk the C stack: only the interrupted function was seen." (- taken unwound)))
          (when (plusp outside)
            (format out "~%~D sample~:P (~,1F%) found the worker in C code with no named Lisp function of the form's below it (the evaluator, the collector, the form's own top level)." outside (funcall percent outside)))
          (cond ((zerop taken)
                 (format out "~%No samples: the form used less CPU time than one interval."))
                (t
                 (format out "~%~%~40A ~8@A ~6@A ~9@A ~6@A" "function" "self" "%" "inclusive" "%")
                 (loop for (name self-count inclusive-count) in rows
                       repeat +profile-rows-shown+
                       do (format out "~%~40A ~8D ~6,1F ~9D ~6,1F"
                                  (one-line-capped (if (stringp name) name (prin1-to-string name)) 40)
                                  self-count (funcall percent self-count)
                                  inclusive-count (funcall percent inclusive-count)))
                 (when (> (length rows) +profile-rows-shown+)
                   (format out "~%… ~D more" (- (length rows) +profile-rows-shown+))))))))))

(define-built-in-tool "profile_form"
  "Evaluate Lisp code and report where its time goes, by function: each function of the session's with its calls and inclusive time (mode time), only the call counts (mode calls, cheapest), or the bytes allocated inside it (mode alloc), with its share of the whole; or, by sampling the running code every interval_us of CPU time, every function it was in, ECL's and libraries' included, natively compiled and recursive ones too: its self samples (the innermost Lisp function) and inclusive samples (anywhere on the stack, once per sample), with percentages (mode sample). Counting is exact (every call of a function the session defined is counted while the code runs); sampling is statistical. Under evaluate_lisp's limits and approval policy; the code's own result follows the table. Use it to find what makes code slow before changing it."
  `((:name "code" :type :string :description "The Lisp code to run and profile, e.g. \"(my-app:run-benchmark 1000)\".")
    (:name "mode" :type :string :enum ("time" "calls" "alloc" "sample") :default "time"
     :description "time (the default), calls, alloc or sample.")
    (:name "interval_us" :type :integer :minimum 1000 :maximum 100000 :default 1000
     :description "Mode sample: microseconds of the worker's CPU time between samples (default 1000, from 1000 to 100000); the kernel may space them further (its clock tick, often 4 ms); at most 5000 samples are taken.")
    ,+evaluation-package-parameter+)          ; repl-tools.lisp
  :required '("code")
  :safety-level :cautious
  :categories '(:execution)
  :handler (lambda (arguments)
             (let ((code (gethash "code" arguments))
                   ;; A call was checked against the enum; a handler called
                   ;; by hand was not.
                   (mode (cdr (assoc (or (gethash "mode" arguments) "time")
                                     '(("time" . :time) ("calls" . :calls) ("alloc" . :alloc) ("sample" . :sample))
                                     :test #'equal)))
                   (interval (gethash "interval_us" arguments +profile-interval-default+)))
               (cond
                 ((not (and (stringp code) (plusp (length (string-trim '(#\Space #\Tab #\Newline) code)))))
                  (values nil "The argument \"code\" is empty: give the Lisp code to profile."))
                 ((null mode) (values nil "\"mode\" must be time, calls, alloc or sample."))
                 ((not (and (integerp interval) (<= 1000 interval 100000)))
                  (values nil "\"interval_us\" must be an integer from 1000 to 100000 (microseconds)."))
                 ((eq mode :sample)
                  (ignore-errors (wait-for-native-compiles 30))   ; tiering.lisp
                  (multiple-value-bind (results samples counts wall cpu)
                      (call-sampled interval (lambda ()
                                               (with-nested-job-state
                                                 (evaluate-string code (gethash "package" arguments) nil
                                                                  (capture-limit *stdout-capture*)))))
                    (destructuring-bind (success text) results
                      (let ((report (format nil "~A~%~%[result]~%~A" (sample-report samples counts interval wall cpu) text)))
                        (if success report (values nil report))))))
                 (t
                  (ignore-errors (wait-for-native-compiles 30))   ; tiering.lisp
                  (multiple-value-bind (results entries total)
                      (call-profiled mode (lambda ()
                                            (with-nested-job-state
                                              (evaluate-string code (gethash "package" arguments) nil
                                                               (capture-limit *stdout-capture*)))))
                    (destructuring-bind (success text) results
                      (let ((report (format nil "~A~%~%[result]~%~A" (profile-report mode entries total) text)))
                        (if success report (values nil report))))))))))
