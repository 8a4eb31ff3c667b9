;;; sly-agent-q-tiering-test.el --- Native tiering of the session's definitions -*- lexical-binding: t; -*-

;;; Commentary:

;; A DEFUN evaluated through evaluate_lisp runs at once as ECL bytecodes;
;; a background Lisp thread compiles it with gcc and swaps the native
;; function in (lisp/tiering.lisp).  Whether a function is bytecodes is
;; asked of ECL itself: SI:BC-SPLIT's second value is the bytecodes
;; vector, NIL for native code (COMPILED-FUNCTION-P is true for both).

;;; Code:

(require 'ert)
(require 'sly-agent-q-test-helpers)

(defun agentq-tiering-gcc-p ()
  "Non-nil when gcc is on PATH (tiering needs it)."
  (executable-find "gcc"))

(defun agentq-tiering-kind (name)
  "\"BYTECODES\" or \"NATIVE\": how the function NAME (Lisp text) runs now."
  (let ((content (agentq-test-eval-ok
                  (format "(if (nth-value 1 (si:bc-split (fdefinition '%s))) :bytecodes :native)" name))))
    (cond ((equal content "=> :BYTECODES") "BYTECODES")
          ((equal content "=> :NATIVE") "NATIVE")
          (t (error "Unexpected answer %S" content)))))

(defun agentq-tiering-wait ()
  "Wait for the background compiler to be idle (Lisp waits, at most 60 s)."
  (should (equal (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)") "=> T")))

(defmacro agentq-tiering-holding (&rest body)
  "Run BODY while the background compiler waits for a long quiet moment.
What BODY sees of a definition before its compile is then not raced by
the compile, which a loaded machine could otherwise finish first."
  (declare (indent 0))
  `(progn
     (agentq-test-eval-ok "(progn (defparameter cl-user::*agentq-test-tiering-waits*
                                    (list agent-q::*tiering-quiet-ms* agent-q::*tiering-longest-wait-ms*))
                                  (setf agent-q::*tiering-quiet-ms* 5000 agent-q::*tiering-longest-wait-ms* 5000))")
     (unwind-protect (progn ,@body)
       (agentq-test-eval-ok "(setf agent-q::*tiering-quiet-ms* (first cl-user::*agentq-test-tiering-waits*)
                                  agent-q::*tiering-longest-wait-ms* (second cl-user::*agentq-test-tiering-waits*))"))))

(defun agentq-tiering-describe (name)
  "describe_symbol's text for NAME."
  (plist-get (agentq-test-call "describe_symbol" (list :symbol name)) :content))

(ert-deftest sly-agent-q-tiering/defun-becomes-native-without-waiting ()
  (skip-unless (agentq-tiering-gcc-p))
  ;; Twenty definitions in one call: one batch.
  (let ((batches-before (agentq-test-eval-ok "(getf (agent-q::tiering-status) :batches)")))
    (let* ((code (mapconcat (lambda (i) (format "(defun agentq-tier-%d (x) (+ x %d))" i i))
                            (number-sequence 1 20) "\n"))
           (result nil))
      (agentq-tiering-holding
        (setq result (agentq-test-eval (concat code "\n(agentq-tier-7 1)")))
        (should (equal (plist-get result :content) "=> 8"))
        ;; The call came back with the bytecodes in place: gcc had not run yet.
        (should (equal (agentq-tiering-kind "agentq-tier-7") "BYTECODES"))
        (should (string-match-p "Runs as: bytecodes, waiting for the native compiler"
                                (agentq-tiering-describe "agentq-tier-7")))))
    (agentq-tiering-wait)
    (dolist (i '(1 7 20))
      (should (equal (agentq-tiering-kind (format "agentq-tier-%d" i)) "NATIVE")))
    (should (equal (agentq-test-eval-ok "(agentq-tier-20 1)") "=> 21"))
    (should (string-match-p "Runs as: native (compiled in the background)"
                            (agentq-tiering-describe "agentq-tier-1")))
    ;; One gcc run for the twenty.
    (should (equal (agentq-test-eval-ok
                    (format "(- (getf (agent-q::tiering-status) :batches) %s)"
                            (substring batches-before 3)))
                   "=> 1"))
    (let ((status (sly-agent-q-runtime-status)))
      (should (>= (plist-get status :tiering-native) 20))
      (should (= (plist-get status :tiering-waiting) 0)))))

(ert-deftest sly-agent-q-tiering/native-version-keeps-behaviour ()
  (skip-unless (agentq-tiering-gcc-p))
  ;; Literal objects stay the same objects; errors name the function;
  ;; the docstring and lambda list stay; calls of the session's own
  ;; functions see their later redefinitions.
  (agentq-test-eval-ok "(defvar *agentq-tier-lit* (list 1 2))
(defun agentq-tier-lit () \"Doc of lit.\" (quote #.*agentq-tier-lit*))
(defun agentq-tier-helper (x) (* x 2))
(defun agentq-tier-caller (x) (agentq-tier-helper x))
(defun agentq-tier-fails (x) (error \"boom ~A\" x))")
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-lit") "NATIVE"))
  (should (equal (agentq-tiering-kind "agentq-tier-caller") "NATIVE"))
  (should (equal (agentq-test-eval-ok "(eq (agentq-tier-lit) *agentq-tier-lit*)") "=> T"))
  (should (string-match-p "Function documentation: Doc of lit." (agentq-tiering-describe "agentq-tier-lit")))
  (should (string-match-p "Lambda list: (x)" (agentq-tiering-describe "agentq-tier-caller")))
  (agentq-test-eval-ok "(defun agentq-tier-helper (x) (* x 3))")
  (should (equal (agentq-test-eval-ok "(agentq-tier-caller 5)") "=> 15"))
  ;; Its error is the same error (ECL's native frames are not in the
  ;; backtrace, as after an explicit COMPILE).
  (should (string-prefix-p "[ERROR] SIMPLE-ERROR\nboom 3\n"
                           (agentq-test-eval-fails "(agentq-tier-fails 3)"))))

(ert-deftest sly-agent-q-tiering/recursion-is-direct-unless-notinline ()
  (skip-unless (agentq-tiering-gcc-p))
  ;; As after COMPILE, a native function's calls of itself are direct; a
  ;; name proclaimed NOTINLINE keeps going through its global definition.
  (agentq-test-eval-ok "(defun agentq-tier-rec (n) (if (zerop n) :base (agentq-tier-rec (1- n))))
(declaim (notinline agentq-tier-nrec))
(defun agentq-tier-nrec (n) (if (zerop n) :base (agentq-tier-nrec (1- n))))")
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-rec") "NATIVE"))
  (should (equal (agentq-tiering-kind "agentq-tier-nrec") "NATIVE"))
  (should (equal (agentq-test-eval-ok "(let ((rec #'agentq-tier-rec) (nrec #'agentq-tier-nrec))
  (setf (fdefinition 'agentq-tier-rec) (lambda (n) (declare (ignore n)) :redefined)
        (fdefinition 'agentq-tier-nrec) (lambda (n) (declare (ignore n)) :redefined))
  (list (funcall rec 3) (funcall nrec 3)))")
                 "=> (:BASE :REDEFINED)")))

(ert-deftest sly-agent-q-tiering/redefinition-during-compile-wins ()
  (skip-unless (agentq-tiering-gcc-p))
  ;; The second definition comes while the first is being compiled (the
  ;; compiler waits up to 1 s for a busy worker, then gcc takes a few
  ;; hundred ms).
  (agentq-test-eval-ok "(defun agentq-tier-redef () :old)")
  (should (equal (agentq-test-eval-ok "(loop repeat 1000 until agent-q::*tiering-compiling* do (sleep 0.005)
  finally (return agent-q::*tiering-compiling*))")
                 "=> T"))
  (agentq-test-eval-ok "(defun agentq-tier-redef () :new)")
  (should (equal (agentq-test-eval-ok "(agentq-tier-redef)") "=> :NEW"))
  (agentq-tiering-wait)
  (should (equal (agentq-test-eval-ok "(agentq-tier-redef)") "=> :NEW"))
  (should (equal (agentq-tiering-kind "agentq-tier-redef") "NATIVE"))
  ;; A redefinition by other means (not a top-level DEFUN) is never
  ;; overwritten by a compile of the old text.
  (agentq-test-eval-ok "(defun agentq-tier-other () :defun)
(setf (fdefinition 'agentq-tier-other) (lambda () :setf))")
  (agentq-tiering-wait)
  (should (equal (agentq-test-eval-ok "(agentq-tier-other)") "=> :SETF")))

(ert-deftest sly-agent-q-tiering/failed-native-compile-keeps-bytecodes ()
  (skip-unless (agentq-tiering-gcc-p))
  ;; FFI:C-INLINE means nothing to the bytecodes compiler's callers until
  ;; run, but C code that does not compile makes gcc fail.
  (sly-agent-q-log-runtime-notes)
  (agentq-test-eval-ok "(defun agentq-tier-bad (x) (if (eq x :never) (ffi:c-inline () () :int \"this is not C\" :one-liner t) (list x :ok)))
(defun agentq-tier-good (x) (list x :good))")
  (should (equal (agentq-test-eval-ok "(agentq-tier-bad 1)") "=> (1 :OK)"))
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-bad") "BYTECODES"))
  (should (equal (agentq-test-eval-ok "(agentq-tier-bad 2)") "=> (2 :OK)"))
  ;; Its neighbour in the batch is compiled alone.
  (should (equal (agentq-tiering-kind "agentq-tier-good") "NATIVE"))
  (should (string-match-p "Runs as: bytecodes: the native compile failed"
                          (agentq-tiering-describe "agentq-tier-bad")))
  ;; A warning in the log, none in the user's results.
  (sly-agent-q-log-runtime-notes)
  (with-current-buffer (get-buffer-create "*Agent-Q Log*")
    (should (string-match-p "AGENTQ-TIER-BAD stays bytecodes: the native compile failed"
                            (buffer-string)))))

(ert-deftest sly-agent-q-tiering/a-macro-that-fails-in-the-native-compile-is-named ()
  "A macro that signals, or calls EXT:QUIT, only when the background
compiler expands it: describe_symbol says so (it said \"the C compiler
failed\"), and the function stays bytecodes and runs."
  (skip-unless (agentq-tiering-gcc-p))
  (agentq-test-eval-ok "(defmacro agentq-tier-picky () (if (eq mp:*current-process* agent-q::*worker*) 1 (error \"not on this thread\")))
(defun agentq-tier-picky-user () (agentq-tier-picky))
(defmacro agentq-tier-quitter () (if (eq mp:*current-process* agent-q::*worker*) 2 (ext:quit 3)))
(defun agentq-tier-quitter-user () (agentq-tier-quitter))")
  (agentq-tiering-wait)
  (let ((picky (agentq-tiering-describe "agentq-tier-picky-user"))
        (quitter (agentq-tiering-describe "agentq-tier-quitter-user")))
    (should (string-match-p "Runs as: bytecodes: the native compile failed: compiling the definition signalled: The macro form (AGENTQ-TIER-PICKY) was not expanded successfully\\. Error detected: not on this thread" picky))
    (should (string-match-p "compiling the definition signalled: .*EXT:QUIT was intercepted" quitter))
    (should-not (string-match-p "C compiler" (concat picky quitter))))
  (should (equal (agentq-test-eval-ok "(list (agentq-tier-picky-user) (agentq-tier-quitter-user))") "=> (1 2)")))

(ert-deftest sly-agent-q-tiering/closures-and-stale-macros-stay-bytecodes ()
  (skip-unless (agentq-tiering-gcc-p))
  (agentq-test-eval-ok "(let ((n 0)) (defun agentq-tier-counter () (incf n)))")
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-counter") "BYTECODES"))
  (should (string-match-p "Runs as: bytecodes: a closure over a lexical environment"
                          (agentq-tiering-describe "agentq-tier-counter")))
  ;; The macro changes before the compile: the native version would expand
  ;; the new one, so the function stays as it was evaluated.
  (agentq-test-eval-ok "(defmacro agentq-tier-mac () :first)
(defun agentq-tier-uses-mac () (agentq-tier-mac))
(defmacro agentq-tier-mac () :second)")
  (agentq-tiering-wait)
  (should (equal (agentq-test-eval-ok "(agentq-tier-uses-mac)") "=> :FIRST"))
  (should (string-match-p "Runs as: bytecodes: a macro it uses was redefined"
                          (agentq-tiering-describe "agentq-tier-uses-mac"))))

(ert-deftest sly-agent-q-tiering/evaluation-meanwhile-and-c-g-do-not-stop-it ()
  (skip-unless (agentq-tiering-gcc-p))
  ;; A timeout of the evaluation that defined it (while the compiler
  ;; works) does not stop the compile.
  (let ((result (agentq-test-eval "(defun agentq-tier-timeout (x) (1+ x)) (sleep 5)" :timeout 1)))
    (should (string-prefix-p "[ERROR] TIMEOUT" (plist-get result :content))))
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-timeout") "NATIVE"))
  ;; Evaluated code cannot kill or interrupt the compiler thread.
  (should (string-match-p "EXIT-INTERCEPTED"
                          (agentq-test-eval-fails
                           "(mp:process-kill (find \"agent-q native compiler\" (mp:all-processes) :key #'mp:process-name :test #'string=))")))
  (agentq-test-eval-ok "(defun agentq-tier-after-kill () :alive)")
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-after-kill") "NATIVE")))

;; A batch gcc takes a second or two on: 40 DEFUNs of some size.
(defun agentq-tiering-batch (prefix)
  "The text of 40 DEFUNs named PREFIX-1 … PREFIX-40."
  (mapconcat
   (lambda (i)
     (format "(defun %s-%d (x)
  (let ((h (make-hash-table :test 'equal)) (acc '()))
    (dotimes (i x) (let ((key (format nil \"~a-~a\" i %d)))
                     (setf (gethash key h) (string-upcase key))
                     (when (evenp i) (push (cons key (length (gethash key h))) acc))))
    (loop for (k . v) in acc when (> v 1) collect (concatenate 'string k (princ-to-string v)))))"
             prefix i i))
   (number-sequence 1 40) "\n"))

(defun agentq-tiering-read (code)
  "Evaluate CODE and read its one value back."
  (let ((content (agentq-test-eval-ok code)))
    (should (string-prefix-p "=> " content))
    (car (read-from-string (substring content 3)))))

(ert-deftest sly-agent-q-tiering/evaluations-keep-off-the-compile-cpus ()
  "While a batch compiles, evaluations run on none of the CPUs the compiler
thread and its gcc keep to, even with Emacs's own thread on the worker's
CPU.  The worker moves off Emacs's CPU between jobs; it used to move onto
gcc's, where a 5 ms evaluation then waited for a CPU 4 ms of its 9."
  (skip-unless (agentq-tiering-gcc-p))
  (skip-unless (executable-find "taskset"))
  (skip-unless (>= (num-processors) 2))
  (agentq-tiering-wait)
  (let ((pid (number-to-string (emacs-pid)))
        (affinity nil) (checked 0) (cpus nil))
    (with-temp-buffer
      (call-process "taskset" nil t nil "-p" "-c" pid)
      (goto-char (point-min))
      (when (re-search-forward ": *\\([-0-9,]+\\)" nil t) (setq affinity (match-string 1))))
    (skip-unless affinity)
    (agentq-test-eval-ok (agentq-tiering-batch "agentq-tier-cpus"))
    (unwind-protect
        (progn
          (setq cpus (agentq-tiering-read
                      "(loop repeat 2000 until agent-q::*tiering-cpus* do (sleep 0.005)
                         finally (return agent-q::*tiering-cpus*))"))
          (skip-unless cpus)          ; every CPU but one the batch may not use: none left for it
          ;; Emacs's thread onto the worker's CPU.
          (should (eql 0 (call-process "taskset" nil nil nil "-p" "-c"
                                       (number-to-string (agentq-tiering-read "(agent-q::%current-cpu)")) pid)))
          (dotimes (_ 40)
            (pcase-let ((`(,cpu ,batch-cpus)
                         (agentq-tiering-read "(let ((l '())) (dotimes (i 20000) (push i l))
                                                 (list (agent-q::%current-cpu) agent-q::*tiering-cpus*))")))
              (when batch-cpus
                (cl-incf checked)
                (should-not (memq cpu batch-cpus)))))
          (should (> checked 0)))
      (call-process "taskset" nil nil nil "-p" "-c" affinity pid))
    (agentq-tiering-wait)
    (should (equal (agentq-tiering-kind "agentq-tier-cpus-40") "NATIVE"))))

(ert-deftest sly-agent-q-tiering/off-by-option ()
  (agentq-test-with-custom ((sly-agent-q-native-tiering nil))
    (should-not (plist-get (sly-agent-q-runtime-status) :native-tiering))
    (agentq-test-eval-ok "(defun agentq-tier-off (x) x)")
    (agentq-tiering-wait)
    (should (equal (agentq-tiering-kind "agentq-tier-off") "BYTECODES"))
    (should (string-match-p "Runs as: bytecodes: native tiering is off"
                            (agentq-tiering-describe "agentq-tier-off"))))
  (should (plist-get (sly-agent-q-runtime-status) :native-tiering)))

(ert-deftest sly-agent-q-tiering/off-without-a-c-compiler ()
  ;; No gcc on PATH: every DEFUN stays bytecodes and says why.
  (let ((out (let ((process-environment (cons "PATH=/nonexistent" process-environment)))
               (agentq-test-run-emacs
              '((require 'sly-agent-q)
                (defun agentq-tier-call (code)
                  (plist-get (car (sly-agent-q-execute-tool-calls
                                   (list (list :id "t" :name "evaluate_lisp" :arguments (list :code code)))))
                             :content))
                (princ "\nagentq-results:\n")
                (prin1 (list (agentq-tier-call "(defun agentq-tier-nogcc (x) (* x 2))")
                             (agentq-tier-call "(agent-q::wait-for-native-compiles 10)")
                             (agentq-tier-call "(if (nth-value 1 (si:bc-split #'agentq-tier-nogcc)) :bytecodes :native)")
                             (agentq-tier-call "(agent-q::tiering-state-text 'agentq-tier-nogcc)")
                             (agentq-tier-call "(agentq-tier-nogcc 21)")))
                (kill-emacs 0))
              :timeout 120))))
    (pcase-let ((`(,code ,stdout ,stderr ,_seconds) out))
      (unless (and (equal code 0) (string-search "agentq-results:\n" stdout))
        (ert-fail (list :exit code :stdout stdout :stderr stderr)))
      (should (equal (car (read-from-string stdout (+ (string-search "agentq-results:\n" stdout)
                                                      (length "agentq-results:\n"))))
                     '("=> AGENTQ-TIER-NOGCC" "=> T" "=> :BYTECODES"
                       "=> \"bytecodes: no C compiler (gcc) on PATH\"" "=> 42"))))))

;;;; Definitions inside a top-level PROGN or EVAL-WHEN, and methods

(ert-deftest sly-agent-q-tiering/progn-of-defuns-becomes-native ()
  (skip-unless (agentq-tiering-gcc-p))
  (agentq-tiering-holding
    (should (equal (agentq-test-eval-ok "(progn (defun agentq-tier-p1 (x) (+ x 1))
       (defun agentq-tier-p2 (x) (* x 2))
       (agentq-tier-p2 (agentq-tier-p1 2)))")
                   "=> 6"))
    ;; The call came back with the bytecodes in place.
    (should (equal (agentq-tiering-kind "agentq-tier-p1") "BYTECODES"))
    (should (string-match-p "Runs as: bytecodes, waiting for the native compiler"
                            (agentq-tiering-describe "agentq-tier-p2"))))
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-p1") "NATIVE"))
  (should (equal (agentq-tiering-kind "agentq-tier-p2") "NATIVE"))
  (should (equal (agentq-test-eval-ok "(agentq-tier-p2 (agentq-tier-p1 4))") "=> 10"))
  (should (string-match-p "Runs as: native (compiled in the background)"
                          (agentq-tiering-describe "agentq-tier-p1")))
  ;; Nested PROGNs; a name defined twice keeps its second definition; a
  ;; name a later subform set to another function keeps that function (the
  ;; text of its DEFUN is not what it runs).
  (agentq-test-eval-ok "(progn (progn (defun agentq-tier-p3 () :p3))
       (defun agentq-tier-p4 () :first)
       (defun agentq-tier-p4 () :second)
       (defun agentq-tier-p5 () :p5)
       (setf (fdefinition 'agentq-tier-p5) #'agentq-tier-p3))")
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-p3") "NATIVE"))
  (should (equal (agentq-tiering-kind "agentq-tier-p4") "NATIVE"))
  (should (equal (agentq-test-eval-ok "(list (agentq-tier-p3) (agentq-tier-p4) (agentq-tier-p5))")
                 "=> (:P3 :SECOND :P3)"))
  (should (string-match-p "Runs as: bytecodes: not defined by a top-level DEFUN"
                          (agentq-tiering-describe "agentq-tier-p5")))
  ;; A function made from the same body conses (#1#) but another lambda
  ;; list is not taken for the DEFUN's.
  (agentq-test-eval-ok "(progn (defun agentq-tier-p6 (x) . #1=((list :p6 x)))
       (setf (fdefinition 'agentq-tier-p6) (lambda (x &optional y) (declare (ignore y)) . #1#)))")
  (agentq-tiering-wait)
  (should (equal (agentq-test-eval-ok "(agentq-tier-p6 1 2)") "=> (:P6 1)")))

(ert-deftest sly-agent-q-tiering/eval-when-defuns-become-native ()
  (skip-unless (agentq-tiering-gcc-p))
  (agentq-tiering-holding
    (agentq-test-eval-ok "(eval-when (:compile-toplevel :load-toplevel :execute)
  (defun agentq-tier-ew1 (x) (list :ew1 x)))
(eval-when (:execute)
  (progn (defun agentq-tier-ew2 (x) (list :ew2 x))))
(locally (declare (optimize (debug 1)))
  (defun agentq-tier-loc (x) (list :loc x)))")
    (should (equal (agentq-tiering-kind "agentq-tier-ew1") "BYTECODES")))
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-kind "agentq-tier-ew1") "NATIVE"))
  (should (equal (agentq-tiering-kind "agentq-tier-ew2") "NATIVE"))
  (should (equal (agentq-test-eval-ok "(list (agentq-tier-ew1 1) (agentq-tier-ew2 2))")
                 "=> ((:EW1 1) (:EW2 2))"))
  ;; LOCALLY (declarations around it) is left as it was: bytecodes.
  (should (equal (agentq-tiering-kind "agentq-tier-loc") "BYTECODES"))
  ;; Without :EXECUTE, EVAL-WHEN evaluates nothing: nothing is defined.
  (should (equal (agentq-test-eval-ok "(eval-when (:compile-toplevel) (defun agentq-tier-ew3 () 3))
(fboundp 'agentq-tier-ew3)")
                 "=> NIL")))

(defun agentq-tiering-frame-probe (name)
  "Lisp that says how the method of NAME it is written in runs, asked of
ECL: a bytecodes function has a frame of its own, named NAME, whose
function SI:BC-SPLIT splits; native code compiled by the background
compiler has none (the innermost frame is then its caller's)."
  (format "(let ((f (si::ihs-fun (si::ihs-top))))
  (if (and (functionp f) (nth-value 1 (si:bc-split f)) (eq (si:compiled-function-name f) '%s))
      :bytecodes :native))" name))

(defun agentq-tiering-method-code (gf)
  "DEFMETHODs of GF: methods on INTEGER, on NUMBER, on T, an :AROUND and a
:BEFORE method; each primary method returns its probe's answer and what
the next method returns."
  (let ((probe (agentq-tiering-frame-probe gf)))
    (format "(defvar *agentq-tier-before* '())
(defgeneric %1$s (x &optional y))
(defmethod %1$s ((x integer) &optional (y 0))
  (list* :integer %2$s (call-next-method (* 10 x) y)))
(progn
  (defmethod %1$s ((x number) &optional (y 0))
    (let ((next #'call-next-method))
      (list* :number %2$s (and (next-method-p) t) (funcall next (+ x y)))))
  (eval-when (:load-toplevel :execute)
    (defmethod %1$s ((x t) &optional y)
      (declare (ignore y))
      (list :t %2$s x))))
(defmethod %1$s :around ((x integer) &optional y)
  (declare (ignore y))
  (list :around %2$s (call-next-method)))
(defmethod %1$s :before ((x (eql 7)) &optional y)
  (declare (ignore y))
  (push (list :before %2$s) *agentq-tier-before*))"
            gf probe)))

(ert-deftest sly-agent-q-tiering/defmethod-becomes-native-and-dispatches ()
  (skip-unless (agentq-tiering-gcc-p))
  (agentq-test-eval-ok (agentq-tiering-method-code "agentq-tier-gf"))
  (should (equal (agentq-tiering-read "(list (agentq-tier-gf 7 1) (agentq-tier-gf 2.5) *agentq-tier-before*)")
                 '((:AROUND :BYTECODES (:INTEGER :BYTECODES :NUMBER :BYTECODES T :T :BYTECODES 71))
                   (:NUMBER :BYTECODES T :T :BYTECODES 2.5) ((:BEFORE :BYTECODES)))))
  (should (string-match-p
           "Runs as: methods the session defined: 0 native (compiled in the background), 5 bytecodes (5 waiting for the native compiler)"
           (agentq-tiering-describe "agentq-tier-gf")))
  (agentq-tiering-wait)
  ;; The same results, from native methods: CALL-NEXT-METHOD with and
  ;; without arguments, as a function object, NEXT-METHOD-P, :AROUND,
  ;; :BEFORE on an EQL specializer.
  (should (equal (agentq-tiering-read "(progn (setf *agentq-tier-before* '())
  (list (agentq-tier-gf 7 1) (agentq-tier-gf 2.5) (agentq-tier-gf \"s\") *agentq-tier-before*))")
                 '((:AROUND :NATIVE (:INTEGER :NATIVE :NUMBER :NATIVE T :T :NATIVE 71))
                   (:NUMBER :NATIVE T :T :NATIVE 2.5) (:T :NATIVE "s") ((:BEFORE :NATIVE)))))
  (should (string-match-p
           "Runs as: methods the session defined: 5 native (compiled in the background), 0 bytecodes"
           (agentq-tiering-describe "agentq-tier-gf")))
  ;; Two DEFMETHODs sharing their body's conses (#1#) each get their own.
  (agentq-test-eval-ok "(progn (defmethod agentq-tier-gs ((x integer)) . #1=((list :shared x)))
       (defmethod agentq-tier-gs ((x string)) . #1#))")
  (agentq-tiering-wait)
  (should (equal (agentq-tiering-read "(list (agentq-tier-gs 1) (agentq-tier-gs \"a\"))")
                 '((:SHARED 1) (:SHARED "a"))))
  ;; The same method objects, still found by FIND-METHOD.
  (should (equal (agentq-test-eval-ok "(let ((m (find-method #'agentq-tier-gf '(:around) '(integer))))
  (and (member m (clos:generic-function-methods #'agentq-tier-gf)) (method-qualifiers m)))")
                 "=> (:AROUND)")))

(ert-deftest sly-agent-q-tiering/defmethod-redefined-during-compile-wins ()
  (skip-unless (agentq-tiering-gcc-p))
  (agentq-test-eval-ok (format "(defgeneric agentq-tier-gr (x))
(defmethod agentq-tier-gr ((x integer)) (list :old %s))" (agentq-tiering-frame-probe "agentq-tier-gr")))
  (should (equal (agentq-test-eval-ok "(loop repeat 1000 until agent-q::*tiering-compiling* do (sleep 0.005)
  finally (return agent-q::*tiering-compiling*))")
                 "=> T"))
  (agentq-test-eval-ok (format "(defmethod agentq-tier-gr ((x integer)) (list :new %s))"
                               (agentq-tiering-frame-probe "agentq-tier-gr")))
  (should (equal (agentq-test-eval-ok "(agentq-tier-gr 1)") "=> (:NEW :BYTECODES)"))
  (agentq-tiering-wait)
  ;; The new method, compiled in turn; the old one's native function was
  ;; never installed.
  (should (equal (agentq-test-eval-ok "(agentq-tier-gr 1)") "=> (:NEW :NATIVE)"))
  ;; A method removed before its compile stays removed.
  (agentq-test-eval-ok "(defmethod agentq-tier-gr ((x string)) :string)
(remove-method #'agentq-tier-gr (find-method #'agentq-tier-gr '() '(string)))")
  (agentq-tiering-wait)
  (should (equal (agentq-test-eval-ok "(length (clos:generic-function-methods #'agentq-tier-gr))")
                 "=> 1")))

(ert-deftest sly-agent-q-tiering/failed-defmethod-compile-keeps-bytecodes ()
  (skip-unless (agentq-tiering-gcc-p))
  (sly-agent-q-log-runtime-notes)
  (agentq-test-eval-ok (format "(defgeneric agentq-tier-gbad (x))
(defmethod agentq-tier-gbad ((x integer))
  (if (eq x :never) (ffi:c-inline () () :int \"this is not C\" :one-liner t) (list x %s)))
(defmethod agentq-tier-gbad ((x string)) (list x %s))
(let ((n 0))
  (defmethod agentq-tier-gbad ((x symbol)) (list (incf n) %s)))"
                               (agentq-tiering-frame-probe "agentq-tier-gbad")
                               (agentq-tiering-frame-probe "agentq-tier-gbad")
                               (agentq-tiering-frame-probe "agentq-tier-gbad")))
  (agentq-tiering-wait)
  ;; The closure (a DEFMETHOD inside a LET) is not compiled either.
  (should (equal (agentq-test-eval-ok "(list (agentq-tier-gbad 1) (agentq-tier-gbad \"s\") (agentq-tier-gbad 'a))")
                 "=> ((1 :BYTECODES) (\"s\" :NATIVE) (1 :BYTECODES))"))
  (should (string-match-p "Runs as: methods the session defined: 1 native (compiled in the background), 1 bytecodes: the native compile failed"
                          (agentq-tiering-describe "agentq-tier-gbad")))
  (sly-agent-q-log-runtime-notes)
  (with-current-buffer (get-buffer-create "*Agent-Q Log*")
    (should (string-match-p "method AGENTQ-TIER-GBAD (INTEGER) stays bytecodes: the native compile failed"
                            (buffer-string)))))

(ert-deftest sly-agent-q-tiering/methods-compile-in-a-child ()
  "Methods' batches go to a compile child like DEFUNs' (CALL-NEXT-METHOD's
compiler macro would bring a constant of ECL's own into the code)."
  (skip-unless (agentq-tiering-gcc-p))
  (skip-unless (equal (agentq-test-eval-ok "(agent-q::only-our-threads-p)") "=> T"))
  (agentq-tiering-wait)
  (let ((in-child (plist-get (sly-agent-q-runtime-status) :tiering-in-child))
        (in-session (plist-get (sly-agent-q-runtime-status) :tiering-in-session)))
    (agentq-test-eval-ok (format "(defgeneric agentq-tier-gch (x))
(defmethod agentq-tier-gch ((x t)) (list :t %1$s))
(defmethod agentq-tier-gch ((x number)) (list* :number %1$s (funcall #'call-next-method)))
(defmethod agentq-tier-gch ((x integer)) (list* :integer %1$s (call-next-method)))
(defmethod agentq-tier-gch :around ((x integer)) (list* :around %1$s (call-next-method)))"
                                 (agentq-tiering-frame-probe "agentq-tier-gch")))
    (agentq-tiering-wait)
    (should (equal (agentq-tiering-read "(agentq-tier-gch 1)")
                   '(:AROUND :NATIVE :INTEGER :NATIVE :NUMBER :NATIVE :T :NATIVE)))
    (should (= (plist-get (sly-agent-q-runtime-status) :tiering-in-child) (1+ in-child)))
    (should (= (plist-get (sly-agent-q-runtime-status) :tiering-in-session) in-session))))

(ert-deftest sly-agent-q-tiering/a-loaded-file-is-tiered ()
  "C-c C-l (`sly-agent-q-load-file') loads source as LOAD does, and its
definitions go to the background native compiler as evaluated ones do."
  (skip-unless (agentq-tiering-gcc-p))
  (let* ((dir (make-temp-file "agentq-tier-load" t))
         (file (expand-file-name "defs.lisp" dir))
         (package-before (agentq-test-eval-ok "(package-name *package*)")))
    (unwind-protect
        (progn
          (with-temp-file file
            (insert "(defpackage :agentq-tier-loaded (:use :cl))\n(in-package :agentq-tier-loaded)\n"
                    "(defparameter *where* (list *load-truename* *load-pathname*))\n"
                    "(defun tier-loaded (x) (* x 3))\n"
                    "(defgeneric tier-loaded-gf (x))\n(defmethod tier-loaded-gf ((x integer)) (+ x 1))\n"))
          (should (agentq-test-load-file file))
          (agentq-tiering-wait)
          (should (equal (agentq-tiering-kind "agentq-tier-loaded::tier-loaded") "NATIVE"))
          (should (equal (agentq-test-eval-ok "(list (agentq-tier-loaded::tier-loaded 2) (agentq-tier-loaded::tier-loaded-gf 2))")
                         "=> (6 3)"))
          (should (string-match-p "Runs as: methods the session defined: 1 native"
                                  (agentq-tiering-describe "agentq-tier-loaded::tier-loaded-gf")))
          ;; LOAD's variables were bound, and its IN-PACKAGE stayed inside.
          (should (equal (agentq-test-eval-ok
                          (format "(equal (mapcar #'namestring agentq-tier-loaded::*where*) (list %S %S))"
                                  (file-truename file) file))
                         "=> T"))
          (should (equal (agentq-test-eval-ok "(package-name *package*)") package-before)))
      (delete-directory dir t))))

;;; sly-agent-q-tiering-test.el ends here
