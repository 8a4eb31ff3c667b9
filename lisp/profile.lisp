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

(define-built-in-tool "profile_form"
  "Evaluate Lisp code and report where its time goes, by function of the session's: each function's calls and its inclusive time (mode time), only the call counts (mode calls, cheapest), or the bytes allocated inside it (mode alloc), with its share of the whole. Counting is exact (every call of a function the session defined is counted while the code runs), under evaluate_lisp's limits and approval policy; the code's own result follows the table. Use it to find what makes code slow before changing it."
  `((:name "code" :type :string :description "The Lisp code to run and profile, e.g. \"(my-app:run-benchmark 1000)\".")
    (:name "mode" :type :string :description "time (the default), calls or alloc.")
    ,+evaluation-package-parameter+)          ; repl-tools.lisp
  :required '("code")
  :safety-level :cautious
  :categories '(:execution)
  :handler (lambda (arguments)
             (let ((code (gethash "code" arguments))
                   (mode (let ((text (or (gethash "mode" arguments) "time")))
                           (cond ((string-equal text "time") :time)
                                 ((string-equal text "calls") :calls)
                                 ((string-equal text "alloc") :alloc)))))
               (cond
                 ((not (and (stringp code) (plusp (length (string-trim '(#\Space #\Tab #\Newline) code)))))
                  (values nil "The argument \"code\" is empty: give the Lisp code to profile."))
                 ((null mode) (values nil "\"mode\" must be time, calls or alloc."))
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
