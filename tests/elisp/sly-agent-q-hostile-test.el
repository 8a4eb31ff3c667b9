;;; sly-agent-q-hostile-test.el --- Nothing evaluated can exit, wedge or crash Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; design.md: "ext:quit, debugger entry, *query-io* reads, stack overflow,
;; heap exhaustion, infinite loops all come back as error results, and the
;; session keeps working."  Each case here is followed by a working
;; (+ 1 2) => 3 and a check that a definition made before it survived.
;; Also C-g (simulated with quit-flag from `sly-agent-q-wait-functions'),
;; timeouts, and malformed input to the API.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defmacro agentq-test-surviving (&rest body)
  "Define a sentinel, run BODY, then check the session and the sentinel survived."
  (declare (indent 0) (debug t))
  (let ((n (make-symbol "n")))
    `(let ((,n (+ 1000 (random 1000000))))
       (should (eq (plist-get (agentq-test-eval
                               (format "(defparameter cl-user::*agentq-sentinel* %d) (defun cl-user::agentq-sentinel-fn () (1+ cl-user::*agentq-sentinel*))"
                                       ,n))
                              :success)
                   t))
       (progn ,@body)
       (agentq-test-should-be-alive)
       (should (equal (agentq-test-content "(list cl-user::*agentq-sentinel* (cl-user::agentq-sentinel-fn))")
                      (format "=> (%d %d)" ,n (1+ ,n)))))))

(defun agentq-test--timed-eval (code &rest arguments)
  "Evaluate CODE (and ARGUMENTS); return (RESULT . SECONDS)."
  (let* ((start (float-time))
         (result (apply #'agentq-test-eval code arguments)))
    (cons result (- (float-time) start))))

;;;; Exits

(ert-deftest sly-agent-q-hostile/exit-functions-are-intercepted ()
  "(ext:quit), (ext:exit 3) and friends are errors; Emacs and the session live on."
  (dolist (code '("(ext:quit)" "(ext:exit 3)" "(ext:quit 0 t)" "(si:quit 1)" "(mp:exit-process)"))
    (agentq-test-surviving
      (let ((result (agentq-test-eval code :timeout 5)))
        (should (eq (plist-get result :success) nil))
        (should (string-prefix-p "[ERROR] " (plist-get result :content)))
        (should (string-match-p "EXIT-INTERCEPTED" (plist-get result :content)))))))

;;;; Debugger and terminal

(ert-deftest sly-agent-q-hostile/debugger-entries-return-promptly ()
  "(break), invoke-debugger, reads of *query-io* and the like fail at once, not by timeout."
  (dolist (code '("(break)"
                  "(break \"with ~A\" \"arguments\")"
                  "(invoke-debugger (make-condition 'simple-error :format-control \"x\"))"
                  "(read *query-io*)"
                  "(read-line *terminal-io*)"
                  "(read)"
                  "(y-or-n-p \"ok?\")"
                  "(cerror \"Go on\" \"continuable ~A\" 1)"))
    (agentq-test-surviving
      (pcase-let ((`(,result . ,seconds) (agentq-test--timed-eval code :timeout 5)))
        (should (eq (plist-get result :success) nil))
        (should (string-prefix-p "[ERROR] " (plist-get result :content)))
        (should-not (string-match-p "TIMEOUT" (plist-get result :content)))
        (should (< seconds 2))))))

(ert-deftest sly-agent-q-hostile/reading-with-no-input-says-so ()
  "Evaluated code has no input: reading it is END-OF-FILE with a message
that says why, and reading with an EOF value gets that value."
  (dolist (code '("(read-line)" "(read)" "(read-char *query-io*)" "(read-line *terminal-io*)"))
    (should (string-prefix-p
             "[ERROR] END-OF-FILE\nEnd of file: evaluated code has no input (*standard-input*, *query-io* and *terminal-io* read as empty).  Put the data in the code instead.\n"
             (agentq-test-eval-fails code))))
  (should (equal (agentq-test-eval-ok "(read-line *standard-input* nil :eof)") "=> :EOF\n=> T"))
  ;; Other streams keep ECL's own report.
  (should (string-match-p "\\`\\[ERROR\\] END-OF-FILE\nUnexpected end of file on #<string-input stream"
                          (agentq-test-eval-fails "(read-line (make-string-input-stream \"\"))"))))

(ert-deftest sly-agent-q-hostile/signal-handlers-are-emacss ()
  "Evaluated code may not change how the process handles signals: a
handler of ECL's on Emacs's thread ended Emacs at the next SIGCHLD."
  (agentq-test-surviving
    (dolist (code '("(ext:catch-signal 17 t)" "(ext:catch-signal 2 :ignore)" "(ext:catch-signal 17 :default)"))
      (should (string-prefix-p
               "[ERROR] AGENT-Q:OPERATION-REFUSED\nEXT:CATCH-SIGNAL was refused: this Lisp runs inside its host"
               (agentq-test-eval-fails code))))
    ;; SIGCHLD still reaches Emacs's own handler.
    (should (equal (call-process "true") 0))
    (should (equal (with-temp-buffer (call-process "echo" nil t nil "child") (buffer-string)) "child\n"))))

(ert-deftest sly-agent-q-hostile/our-threads-cannot-be-suspended ()
  "Suspending the watchdog would leave timeouts and C-g dead."
  (agentq-test-surviving
    (dolist (code '("(mp:process-suspend (find \"agent-q watchdog\" (mp:all-processes) :key #'mp:process-name :test #'equal))"
                    "(mp:process-suspend agent-q::*worker*)"
                    "(mp:process-suspend mp:*current-process*)"))
      (should (string-match-p
               "\\`\\[ERROR\\] AGENT-Q:EXIT-INTERCEPTED\nMP:PROCESS-SUSPEND on an AGENT-Q thread"
               (agentq-test-eval-fails code))))
    (should (string-prefix-p "[ERROR] TIMEOUT\n" (agentq-test-eval-fails "(loop)" :timeout 0.3)))))

(ert-deftest sly-agent-q-hostile/a-nan-timeout-is-the-default ()
  "A NaN `timeout' is not \"0 or less\": the default applies, not no limit."
  (let ((sly-agent-q-eval-timeout 0.4))
    (should (string-prefix-p "[ERROR] TIMEOUT\nEvaluation did not finish within 0.4 seconds"
                             (agentq-test-eval-fails "(loop)" :timeout 0.0e+NaN)))))

(ert-deftest sly-agent-q-hostile/error-text-ignores-the-codes-printer-settings ()
  "The [ERROR] header and backtrace print the same whatever printer
variables the evaluated code set."
  (unwind-protect
      (progn
        (agentq-test-eval-ok "(setf *print-base* 36 *print-readably* t *print-case* :downcase) :set")
        (let ((text (agentq-test-eval-fails "(car 5)")))
          (should (string-prefix-p "[ERROR] SIMPLE-TYPE-ERROR\nIn function CAR" text))
          (should (string-match-p "\n0: (CAR)" text))))
    (agentq-test-eval "(setf *print-base* 10 *print-readably* nil *print-case* :upcase)")))

;;;; Stack

(ert-deftest sly-agent-q-hostile/unbounded-recursion ()
  "Stack overflow is an error, again and again: the guard is re-armed."
  (agentq-test-surviving
    (agentq-test-eval-ok "(defun cl-user::agentq-deep (n) (1+ (cl-user::agentq-deep n)))")
    (dotimes (_ 3)
      (let ((text (agentq-test-eval-fails "(cl-user::agentq-deep 0)" :timeout 10)))
        (should (string-prefix-p "[ERROR] " text))
        (should (string-match-p "STACK-OVERFLOW" text))
        (agentq-test-should-be-alive)))))

;; ECL's own C code (COPY-TREE, EQUAL, SUBST ...) recurses without checking
;; its stack: on a list nested a million deep it used to run into the
;; thread's guard page, and the process (Emacs) died of SIGSEGV.
(defconst agentq-test--deep-list
  "(defparameter cl-user::*agentq-deep-list* (let ((x nil)) (dotimes (i 1000000 x) (setf x (list x))))) (defparameter cl-user::*agentq-deep-twin* (let ((x nil)) (dotimes (i 1000000 x) (setf x (list x))))) :built"
  "Lisp code that builds two lists nested a million deep.")

(ert-deftest sly-agent-q-hostile/c-stack-overflow-in-ecls-c-code ()
  "COPY-TREE of a list nested a million deep is a STACK-OVERFLOW error,
twice; then (+ 1 2) works and earlier definitions are still there.
\(A fresh worker is guarded too: tests/ecl, where restarting the worker
leaves no retired thread behind for later tests.)"
  (agentq-test-surviving
    (should (equal (agentq-test-eval-ok agentq-test--deep-list) "=> :BUILT"))
    (dotimes (_ 2)
      (let ((text (agentq-test-eval-fails "(copy-tree cl-user::*agentq-deep-list*) :copied" :timeout 30)))
        (should (string-prefix-p "[ERROR] EXT:STACK-OVERFLOW\nC-STACK overflow" text)))
      (should (equal (agentq-test-eval-ok "(+ 1 2)") "=> 3")))
    (agentq-test-eval "(makunbound 'cl-user::*agentq-deep-list*) (makunbound 'cl-user::*agentq-deep-twin*)")))

(ert-deftest sly-agent-q-hostile/c-stack-overflow-in-other-c-recursions ()
  "EQUAL, EQUALP, SUBST, TREE-EQUAL and printing on lists nested a
million deep are errors, never a crash; code that
handles STORAGE-CONDITION catches them, several in one evaluation."
  (agentq-test-surviving
    (agentq-test-eval-ok agentq-test--deep-list)
    (dolist (code '("(equal cl-user::*agentq-deep-list* cl-user::*agentq-deep-twin*)"
                    "(equalp cl-user::*agentq-deep-list* cl-user::*agentq-deep-twin*)"
                    "(subst 1 2 cl-user::*agentq-deep-list*)"
                    "(tree-equal cl-user::*agentq-deep-list* cl-user::*agentq-deep-twin*)"
                    "(prin1-to-string cl-user::*agentq-deep-list*)"))
      (let ((text (agentq-test-eval-fails (concat code " :done") :timeout 30)))
        (should (string-prefix-p "[ERROR] EXT:STACK-OVERFLOW\n" text))))
    ;; SXHASH (so an EQUAL hash table) looks only so deep: no overflow.
    (should (equal (agentq-test-eval-ok
                    "(let ((h (make-hash-table :test 'equal))) (setf (gethash cl-user::*agentq-deep-twin* h) 1) (integerp (sxhash cl-user::*agentq-deep-list*)))")
                   "=> T"))
    (should (equal (agentq-test-eval-ok
                    "(loop for f in (list #'copy-tree (lambda (x) (equal x cl-user::*agentq-deep-twin*)) #'copy-tree)
                           collect (handler-case (progn (funcall f cl-user::*agentq-deep-list*) :returned)
                                     (storage-condition (c) (type-of c))))")
                   "=> (EXT:STACK-OVERFLOW EXT:STACK-OVERFLOW EXT:STACK-OVERFLOW)"))
    ;; As often as the code likes: each overflow's guard is closed again.
    (should (equal (agentq-test-eval-ok
                    "(loop repeat 12 count (handler-case (progn (copy-tree cl-user::*agentq-deep-list*) nil) (ext:stack-overflow () t)))")
                   "=> 12"))
    ;; In threads the evaluation starts, too, beside the worker's own.
    (should (equal (agentq-test-eval-ok
                    "(let ((threads (loop repeat 2 collect (mp:process-run-function \"deep\" (lambda () (loop repeat 8 count (handler-case (progn (copy-tree cl-user::*agentq-deep-list*) nil) (storage-condition () t))))))))
                       (list (loop repeat 8 count (handler-case (progn (equal cl-user::*agentq-deep-list* cl-user::*agentq-deep-twin*) nil) (storage-condition () t)))
                             (mapcar #'mp:process-join threads)))")
                   "=> (8 (8 8))"))
    ;; Other faults are still ECL's SEGMENTATION-VIOLATION, each time.
    (dotimes (_ 2)
      (should (string-prefix-p "[ERROR] EXT:SEGMENTATION-VIOLATION\n"
                               (agentq-test-eval-fails "(ffi:deref-pointer (ffi:make-pointer 8 :int) :int)"))))
    (agentq-test-eval "(makunbound 'cl-user::*agentq-deep-list*) (makunbound 'cl-user::*agentq-deep-twin*)")))

(ert-deftest sly-agent-q-hostile/frame-stack-overflow ()
  "Nesting CATCH past the frame stack is a STACK-OVERFLOW error with the
output before it, again and again; the frame stack keeps its size.
ECL 21.2 may lose the unwinding's target here and unwind past every
Lisp frame; the error must be the same either way."
  (agentq-test-surviving
    (agentq-test-eval-ok
     "(defun cl-user::agentq-catches (n) (catch n (if (= n 0) 0 (1+ (cl-user::agentq-catches (1- n))))))")
    (dotimes (_ 3)
      (let ((text (agentq-test-eval-fails
                   "(princ :before-overflow) (cl-user::agentq-catches 30000)" :timeout 20)))
        (should (string-prefix-p "[ERROR] EXT:STACK-OVERFLOW\nFRAME-STACK overflow" text))
        (should (string-match-p "\\[stdout\\]\nBEFORE-OVERFLOW" text)))
      (should (equal (agentq-test-eval-ok "(cl-user::agentq-catches 15000)") "=> 15000"))
      (agentq-test-should-be-alive))
    ;; An error the code recovered from earlier is never the one reported.
    (should-not (string-match-p
                 "stale"
                 (plist-get (agentq-test-eval
                             "(block b (unwind-protect (error \"stale\") (return-from b 5))) (handler-case (cl-user::agentq-catches 30000) (ext:stack-overflow () :caught))"
                             :timeout 20)
                            :content)))
    (agentq-test-should-be-alive)))

(ert-deftest sly-agent-q-hostile/deep-special-bindings ()
  "The worker's binding stack holds more than ECL's default 8192 bindings;
past its size the overflow is an error and the guard is re-armed."
  (agentq-test-surviving
    (agentq-test-eval-ok
     "(defvar cl-user::*agentq-depth* 0) (defun cl-user::agentq-binds (n) (let ((cl-user::*agentq-depth* n)) (if (= n 0) 0 (1+ (cl-user::agentq-binds (1- n))))))")
    (should (equal (agentq-test-eval-ok "(cl-user::agentq-binds 20000)") "=> 20000"))
    (dotimes (_ 2)
      (should (string-match-p "STACK-OVERFLOW"
                              (agentq-test-eval-fails "(cl-user::agentq-binds 1000000)" :timeout 20)))
      (should (equal (agentq-test-eval-ok "(cl-user::agentq-binds 20000)") "=> 20000")))))

(ert-deftest sly-agent-q-hostile/raised-stack-limits-are-kept ()
  "Limits an evaluation raised stay raised after later evaluations fail."
  (agentq-test-surviving
    (unwind-protect
        (progn
          (agentq-test-eval-ok "(ext:set-limit 'ext:binding-stack 200000) (ext:set-limit 'ext:frame-stack 50000)")
          (agentq-test-eval-fails "(car 1)")
          (agentq-test-eval-fails "(loop)" :timeout 0.2)
          (should (equal (agentq-test-eval-ok
                          "(list (ext:get-limit 'ext:binding-stack) (ext:get-limit 'ext:frame-stack))")
                         "=> (200000 50000)")))
      (agentq-test-eval "(ext:set-limit 'ext:binding-stack 65536) (ext:set-limit 'ext:frame-stack 16384)"))))

(ert-deftest sly-agent-q-hostile/stack-limits-that-cannot-work-are-refused ()
  "EXT:SET-LIMIT may not cut a stack under the running code: a Lisp stack
below its size at boot (1000 entries aborted Emacs: \"not a lisp data
object\"; growing it left the running bytecodes' frames behind), nor
change the C stack (fixed when the thread started: larger only hides
overflows).  Also from natively compiled code.  Growing the binding
stack, and shrinking it back to its size at boot, still work."
  (agentq-test-surviving
   (let ((c-stack (agentq-test-eval-ok "(ext:get-limit 'ext:c-stack)")))
     (dolist (code '("(ext:set-limit 'ext:lisp-stack 1000)"
                     "(ext:set-limit 'ext:binding-stack 10)"
                     "(ext:set-limit 'ext:frame-stack 10)"
                     "(ext:set-limit 'ext:lisp-stack 1000000)"
                     "(ext:set-limit 'ext:c-stack 4096)"
                     "(ext:set-limit 'ext:c-stack (* 2 1024 1024))"
                     "(ext:set-limit 'ext:c-stack (* 1024 1024 1024))"))
       (let ((text (agentq-test-eval-fails code)))
         (should (string-prefix-p "[ERROR] AGENT-Q:OPERATION-REFUSED\n(EXT:SET-LIMIT" text))
         (should (string-match-p "The session is still alive" text)))
       (agentq-test-should-be-alive))
     (when (executable-find "gcc")
       (should (string-match-p
                "OPERATION-REFUSED"
                (agentq-test-eval-fails
                 "(funcall (compile nil '(lambda () (ext:set-limit 'ext:lisp-stack 1000))))"
                 :timeout 60))))
     (should (equal (agentq-test-eval-ok
                     "(list (ext:set-limit 'ext:binding-stack 300000) (ext:set-limit 'ext:binding-stack 65536))")
                    "=> (300000 65536)"))
     ;; The worker's C stack is what it was.
     (should (equal (agentq-test-eval-ok "(ext:get-limit 'ext:c-stack)") c-stack)))))

(ert-deftest sly-agent-q-hostile/runtime-functions-out-of-reach ()
  "Evaluated code that replaces every function of the AGENT-Q package
breaks nothing the runtime does: the runtime calls its own functions
directly and the host's by identity (setting `agent-q::evaluate-string'
made every later evaluation answer empty content).  In a fresh Emacs."
  (pcase-let ((`(,code ,stdout ,stderr ,_seconds)
               (agentq-test-run-emacs
                `((require 'sly-agent-q)
                  (defun agentq-call (name arguments)
                    (let ((result (car (sly-agent-q-execute-tool-calls
                                        (list (list :id "r" :name name :arguments arguments))))))
                      (princ (format "<%s>" (car (split-string (plist-get result :content) "\n"))))))
                  (agentq-call "evaluate_lisp" '(:code "(defun cl-user::agentq-helper (x) (* x 2))"))
                  (agentq-call "evaluate_lisp"
                               '(:code "(let ((n 0))
                                          (do-symbols (s \"AGENT-Q\")
                                            (when (and (eq (symbol-package s) (find-package \"AGENT-Q\"))
                                                       (fboundp s) (not (macro-function s)))
                                              (incf n)
                                              (setf (fdefinition s) (lambda (&rest r) (declare (ignore r)) (values t 42)))))
                                          (> n 400))"))
                  (agentq-call "evaluate_lisp" '(:code "(+ 1 2)"))
                  (agentq-call "evaluate_lisp" '(:code "(car 1)"))
                  (agentq-call "evaluate_lisp" '(:code "(print 5)"))
                  (agentq-call "evaluate_lisp" '(:code "(loop)" :timeout 0.5))
                  (agentq-call "evaluate_lisp" '(:code "(cl-user::agentq-helper 21)"))
                  (agentq-call "function_arglist" '(:function "cl-user::agentq-helper"))
                  (agentq-call "list_definitions" nil)
                  (agentq-call "apropos_search" '(:pattern "agentq-helper"))
                  (agentq-call "evaluate_lisp" '(:code "(ext:quit)"))
                  (agentq-call "evaluate_lisp" '(:code "(+ 1 2)")))
                :timeout 90)))
    (should (equal (list code (if (equal code 0) "" stderr)) '(0 "")))
    (should (equal stdout
                   (concat "<=> AGENTQ-HELPER><=> T><=> 3><[ERROR] SIMPLE-TYPE-ERROR><[stdout]>"
                           "<[ERROR] TIMEOUT><=> 42><(agentq-helper x)><[Functions]>"
                           "<1 symbol matches 'agentq-helper':><[ERROR] AGENT-Q:EXIT-INTERCEPTED><=> 3>")))))

(ert-deftest sly-agent-q-hostile/host-functions-are-all-taken-by-identity ()
  "Every function the C++ side defines in AGENT-Q is in
`agent-q::+host-functions+' (package.lisp), which the compiled Lisp calls
by identity: one missing would be called by name."
  (let ((defined '()))
    (dolist (file (directory-files (expand-file-name "module/ecl" agentq-test-root) t "\\.cpp\\'"))
      (with-temp-buffer
        (insert-file-contents file)
        (while (re-search-forward "define_lisp_function(\"\\([^\"]+\\)\"" nil t)
          (push (match-string 1) defined))))
    (should (> (length defined) 40))
    (should (equal (sort defined #'string<)
                   (sort (split-string
                          (string-trim (agentq-test-eval-ok
                                        "(format nil \"~{~A~^ ~}\" agent-q::+host-functions+)")
                                       "=> \"" "\"")
                          " ")
                         #'string<)))))

(ert-deftest sly-agent-q-hostile/argument-redefining-the-operator ()
  "A call whose argument turns its function into a macro is an error or a
value, never a crash."
  (agentq-test-surviving
    (agentq-test-eval-ok "(defun cl-user::agentq-shifty (x) x)")
    (should (equal (agentq-test-eval-ok
                    "(cl-user::agentq-shifty (eval '(defmacro cl-user::agentq-shifty (x) `(list ,x))))")
                   "=> (AGENTQ-SHIFTY)"))))

(ert-deftest sly-agent-q-hostile/unprintable-value ()
  "A value whose printing fails is an error, not a crash."
  (agentq-test-surviving
    (let ((text (agentq-test-eval-fails
                 "(defstruct agentq-unprintable) (defmethod print-object ((o agentq-unprintable) s) (error \"refuses to print\")) (make-agentq-unprintable)")))
      (should (string-prefix-p "[ERROR] " text))
      (should (string-match-p "refuses to print" text)))))

;;;; Heap

(ert-deftest sly-agent-q-hostile/runaway-allocation-under-heap-limit ()
  "With a 256 MiB heap limit runaway allocation is a storage error; the limit is re-armed and restored."
  (let ((mib (* 1024 1024)))
    (agentq-test-with-custom ((sly-agent-q-heap-limit (* 256 mib)))
      (should (= (plist-get (sly-agent-q-runtime-status) :heap-limit) (* 256 mib)))
      (agentq-test-surviving
        (dotimes (_ 2)
          (pcase-let ((`(,result . ,seconds)
                       (agentq-test--timed-eval "(let ((l nil)) (loop (push (make-array 100000) l)))"
                                                :timeout 20)))
            (should (eq (plist-get result :success) nil))
            (should (string-prefix-p "[ERROR] " (plist-get result :content)))
            (should (string-match-p "STORAGE" (plist-get result :content)))
            (should (< seconds 15))
            (agentq-test-should-be-alive)))))
    (should (= sly-agent-q-heap-limit (* 1024 mib)))
    (should (= (plist-get (sly-agent-q-runtime-status) :heap-limit) (* 1024 mib)))
    ;; 300 MiB fit again under the restored limit.
    (should (equal (agentq-test-eval-ok
                    "(let ((l nil)) (dotimes (i 3000) (push (make-array 12500) l)) (length l))"
                    :timeout 20)
                   "=> 3000"))))

(ert-deftest sly-agent-q-hostile/heap-exhaustion-reported-as-evaluation-error ()
  "Heap exhaustion is reported like any error of the evaluation (contract: storage-condition →
catch, format, return as error): [ERROR] TYPE, message, [Backtrace]; output before it kept."
  (agentq-test-with-custom ((sly-agent-q-heap-limit (* 256 1024 1024)))
    (agentq-test-surviving
      (let ((text (agentq-test-eval-fails
                   "(progn (princ \"allocating\") (let ((l nil)) (loop (push (make-array 100000) l))))"
                   :timeout 20)))
        (should (string-match-p "\\`\\[ERROR\\] [A-Z:-]*STORAGE[A-Z-]*\n" text))
        (should (string-match-p "\n\n\\[Backtrace\\]\n" text))
        (should (string-match-p "\\[stdout\\]\nallocating" text))))))

;;;; Time limits

(ert-deftest sly-agent-q-hostile/infinite-loop-per-call-timeout ()
  "(loop) with timeout 1 is a TIMEOUT error in under 3 s; cleanups run."
  (agentq-test-surviving
    (pcase-let ((`(,result . ,seconds) (agentq-test--timed-eval "(loop)" :timeout 1)))
      (should (eq (plist-get result :success) nil))
      (should (string-prefix-p "[ERROR] TIMEOUT\n" (plist-get result :content)))
      (should (string-match-p "1\\.0 seconds" (plist-get result :content)))
      (should (>= seconds 0.9))
      (should (< seconds 3)))
    (agentq-test-eval-fails
     "(defvar cl-user::*agentq-cleaned* nil) (unwind-protect (loop) (setf cl-user::*agentq-cleaned* t))"
     :timeout 0.3)
    (should (equal (agentq-test-eval-ok "cl-user::*agentq-cleaned*") "=> T"))))

;; fork() holds every malloc lock while it runs, and closing a file is a
;; C library call followed by Lisp bookkeeping: an interrupt let in there
;; froze Emacs at its next malloc, or closed the stream twice (glibc aborts).
(ert-deftest sly-agent-q-hostile/timeouts-during-fork-and-file-io ()
  "Timeouts landing in fork and in file closing leave Emacs and the session working."
  (agentq-test-surviving
    (dolist (code '("(loop (ext:run-program \"/bin/true\" nil :output nil))"
                    "(loop (with-open-file (s \"/tmp/agent-q-ert-interrupt.txt\" :direction :output :if-exists :supersede) (print 1 s)))"))
      (dotimes (i 40)
        (should (string-prefix-p "[ERROR] TIMEOUT\n"
                                 (agentq-test-eval-fails code :timeout (* 0.001 (1+ (% i 5))))))))
    ;; Emacs's own allocation still works.
    (should (= (length (make-string 100000 ?x)) 100000))))

(ert-deftest sly-agent-q-hostile/faults-reach-lisp-threads-started-from-the-async-runner ()
  "The fault signals are never blocked on a Lisp thread, whoever starts it.
The async runner blocks every asynchronous signal and starts the worker when
the first call of an Emacs is asynchronous (the chat's, an MCP client's), and
a replacement worker when an asynchronous evaluation cannot be unwound.  A
thread inherits its creator's mask; with SIGSEGV blocked, the first C-stack
overflow ended Emacs (the kernel resets a blocked fault's handler).  In a
fresh Emacs, so that the first call is the asynchronous one."
  (pcase-let ((`(,code ,stdout ,stderr ,_seconds)
               (agentq-test-run-emacs
                `((require 'sly-agent-q)
                  (defun agentq-child-async (code timeout)
                    (let* ((results 'pending))
                      (sly-agent-q-execute-tool-calls-async
                       (list (list :id "a" :name "evaluate_lisp" :arguments (list :code code :timeout timeout)))
                       (lambda (r) (setq results r)))
                      (while (eq results 'pending) (accept-process-output nil 0.01))
                      (plist-get (car results) :content)))
                  (defun agentq-child-sync (code)
                    (plist-get (car (sly-agent-q-execute-tool-calls
                                     (list (list :id "s" :name "evaluate_lisp" :arguments (list :code code :timeout 30)))))
                               :content))
                  (defun agentq-child-blocking-faults ()
                    "Threads (but libgc's markers) blocking SIGILL, SIGBUS, SIGFPE or SIGSEGV."
                    (let ((faults (logior (ash 1 3) (ash 1 6) (ash 1 7) (ash 1 10))) (found '()))
                      (dolist (task (directory-files "/proc/self/task" nil "\\`[0-9]+\\'")
                                    (if found (format "%d: %s" (length found) found) "0"))
                        (with-temp-buffer
                          (insert-file-contents (format "/proc/self/task/%s/status" task))
                          (let ((name (and (re-search-forward "^Name:\t\\(.*\\)$" nil t) (match-string 1)))
                                (blocked (and (re-search-forward "^SigBlk:\t\\([0-9a-f]+\\)$" nil t)
                                              (string-to-number (match-string 1) 16))))
                            (unless (or (string-prefix-p "GC-" name) (zerop (logand blocked faults)))
                              (push (format "%s %s %x" task name blocked) found)))))))
                  (princ (format "<%s>" (agentq-child-async "(+ 1 2)" 5)))
                  (princ (format "<%s>" (agentq-child-sync ,agentq-test--deep-list)))
                  (princ (format "<%s>" (car (split-string (agentq-child-sync "(copy-tree cl-user::*agentq-deep-list*)") "\n"))))
                  (princ (format "<%s>" (agentq-child-blocking-faults)))
                  ;; Abandoned after its grace: the runner starts a replacement.
                  (princ (format "<%s>" (car (split-string (agentq-child-async "(mp:without-interrupts (loop))" 1) "\n"))))
                  (princ (format "<%s>" (car (split-string (agentq-child-sync "(copy-tree cl-user::*agentq-deep-list*)") "\n"))))
                  (princ (format "<%s>" (agentq-child-sync "(+ 1 2)")))
                  (princ (format "<%s>" (agentq-child-blocking-faults))))
                :timeout 90)))
    ;; Its stderr, when it failed, says why.
    (should (equal (list code (if (equal code 0) "" stderr)) '(0 "")))
    (should (equal stdout
                   "<=> 3><=> :BUILT><[ERROR] EXT:STACK-OVERFLOW><0><[ERROR] TIMEOUT><[ERROR] EXT:STACK-OVERFLOW><=> 3><0>"))))

(ert-deftest sly-agent-q-hostile/exit-while-the-background-compiler-works ()
  "Emacs exits cleanly while the background compiler loads ECL's compiler
or compiles: ECL's shutdown used to close every loaded library under it,
and the compiler thread faulted at exit (\"Detected access to protected
memory\" on stderr).  Fresh Emacsen, exiting at several moments after a
`defun' started the compiler."
  (skip-unless (executable-find "gcc"))
  (dolist (pause '(0.05 0.1 0.15 0.2 0.3 0.5))
    (pcase-let* ((tmp (make-temp-file "agentq-exit-tmp" t))
                 (process-environment (cons (concat "TMPDIR=" tmp) process-environment))
                 (`(,code ,_stdout ,stderr ,_seconds)
                 (agentq-test-run-emacs
                  `((require 'sly-agent-q)
                    (sly-agent-q-execute-tool-calls
                     (list (list :id "d" :name "evaluate_lisp"
                                 :arguments (list :code "(defun agentq-exit-tier (x) (list x x))"))))
                    (sleep-for ,pause)
                    (kill-emacs 0))
                  :timeout 30)))
      (should (equal (list pause code (string-match-p "protected memory\\|fault" stderr))
                     (list pause 0 nil)))
      ;; A batch's private directory goes, even when Emacs quit during it:
      ;; removed at exit, or by the compile child once Emacs is gone (it
      ;; stops its compiler first), so it may go a moment after the exit.
      (let ((left (lambda () (directory-files tmp nil "\\`sly-agent-q-compile-"))))
        (with-timeout (5 nil)
          (while (funcall left) (sleep-for 0.05)))
        (should (equal (list pause (funcall left)) (list pause nil))))
      (delete-directory tmp t))))

(ert-deftest sly-agent-q-hostile/child-processes-never-get-the-terminal ()
  "Children that inherit stdio read the null device and write into the result.
In a fresh Emacs, `cat' inheriting stdin ends at once, and output a child
inherits reaches [stdout]/[stderr], never Emacs's own stdout (a terminal,
when Emacs runs in one)."
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (dolist (code '("(nth-value 1 (ext:run-program \"/bin/cat\" nil :input t :output t :error t))"
                                  "(ext:system \"echo SYSTEM-OUT; echo SYSTEM-ERR >&2; exit 3\")"
                                  "(progn (ext:run-program \"/bin/sh\" '(\"-c\" \"echo CHILD-OUT\") :input t :output t) nil)"
                                  ;; Bound to the process's own streams, the way ECL's compiler runs gcc.
                                  "(let ((*standard-output* ext:+process-standard-output+) (*error-output* ext:+process-error-output+)) (ext:run-program \"/bin/sh\" '(\"-c\" \"echo GCC-OUT; echo GCC-ERR >&2\") :input nil :output t :error t) nil)"
                                  ;; Wrapped in other streams.
                                  "(progn (ext:run-program \"/bin/sh\" '(\"-c\" \"echo SYN-OUT\") :input (make-two-way-stream ext:+process-standard-input+ *standard-output*) :output (make-synonym-stream 'ext:+process-standard-output+)) nil)"
                                  ;; From a thread of its own, outside any evaluation.
                                  "(let ((status nil)) (mp:process-join (mp:process-run-function \"t\" (lambda () (setf status (ext:system \"echo THREAD-OUT; exit 2\"))))) status)"))
                    (let ((result (car (sly-agent-q-execute-tool-calls
                                        (list (list :id "p" :name "evaluate_lisp"
                                                    :arguments (list :code code :timeout 5)))))))
                      (princ (format "<%s>" (plist-get result :content)))))))))
    (should (equal code 0))
    (should (equal stdout
                   (concat "<=> 0>"
                           "<[stdout]\nSYSTEM-OUT\n\n[stderr]\nSYSTEM-ERR\n\n=> 768>"
                           "<[stdout]\nCHILD-OUT\n\n=> NIL>"
                           "<[stdout]\nGCC-OUT\n\n[stderr]\nGCC-ERR\n\n=> NIL>"
                           "<[stdout]\nSYN-OUT\n\n=> NIL>"
                           "<=> 512>")))))

(ert-deftest sly-agent-q-hostile/native-compiler-messages-stay-in-the-result ()
  "gcc's messages when ECL's native compiler fails arrive in [stdout] and
nowhere else: not on Emacs's own stdout or stderr (a terminal, when Emacs
runs in one)."
  (pcase-let ((`(,code ,stdout ,stderr ,_seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (dolist (code '("(require :cmp)"
                                  "(nth-value 1 (compile nil '(lambda () (ffi:c-inline () () :void \"\n#error AGENTQ-GCC-ERROR\n\" :one-liner nil))))"))
                    (let ((result (car (sly-agent-q-execute-tool-calls
                                        (list (list :id "c" :name "evaluate_lisp"
                                                    :arguments (list :code code :timeout 60)))))))
                      (princ (format "<%s>" (plist-get result :content))))))
               :timeout 90)))
    (should (equal code 0))
    (should (string-match "\\`<[^<>]*=> (\"CMP\")><\\(\\(?:.\\|\n\\)*\\)>\\'" stdout))
    (let ((second (match-string 1 stdout)))
      (should (string-prefix-p "[stdout]\n" second))
      (should (string-match-p "error: #error AGENTQ-GCC-ERROR" second))
      (should (string-suffix-p "\n\n=> T" second)))
    (should-not (string-match-p "AGENTQ-GCC-ERROR" stderr))))

(defun agentq-test--children-matching (regexp)
  "PIDs of Emacs's child processes whose command line matches REGEXP."
  (cl-loop for pid in (list-system-processes)
           for attributes = (process-attributes pid)
           when (and (eql (alist-get 'ppid attributes) (emacs-pid))
                     (string-match-p regexp (or (alist-get 'args attributes) "")))
           collect pid))

(defun agentq-test--processes-matching (regexp)
  "PIDs of running processes, anyone's children, whose command line
matches REGEXP."
  (cl-loop for pid in (list-system-processes)
           for attributes = (process-attributes pid)
           when (and (not (member (alist-get 'state attributes) '("Z" "X")))
                     (string-match-p regexp (or (alist-get 'args attributes) "")))
           collect pid))

(ert-deftest sly-agent-q-hostile/interrupted-start-leaves-no-child ()
  "A timeout that lands while ECL starts a child, after its fork and before
it returns the process, leaves no zombie and no child running: that child
is killed and reaped.  (Before, 150 evaluations starting children in a loop
under 5-44 ms timeouts left 7-11 zombies; a waited-for `sleep' the same
way could be left running.)"
  (let* ((dir (make-temp-file "agentq-zombie" t))
         (probe (expand-file-name "agentq-zp" dir)))
    (unwind-protect
        (agentq-test-surviving
          (copy-file "/bin/true" probe)
          (set-file-modes probe #o755)
          (dotimes (i 150)
            (agentq-test-eval (if (cl-evenp i)
                                  (format "(loop (ext:run-program %S nil :output nil))" probe)
                                "(ext:run-program \"/bin/sleep\" '(\"30.5171\") :output nil)")
                              :timeout (/ (+ 5 (random 40)) 1000.0)))
          (sleep-for 0.3)
          (should-not (cl-loop for pid in (list-system-processes)
                               for attributes = (process-attributes pid)
                               when (and (eql (alist-get 'ppid attributes) (emacs-pid))
                                         (equal (alist-get 'comm attributes) "agentq-zp"))
                               collect (alist-get 'state attributes)))
          (should-not (agentq-test--processes-matching "sleep 30\\.5171")))
      (call-process "pkill" nil nil nil "-f" "sleep 30\\.5171")
      (delete-directory dir t))))

(ert-deftest sly-agent-q-hostile/interrupted-wait-ends-the-child ()
  "A child the evaluation waited for is ended when the wait is interrupted,
also one that ignores SIGTERM, with the processes it started (a shell's
commands, a pipeline, a grandchild that ignores SIGTERM) but not a daemon
it started, and no Lisp thread is left behind."
  (agentq-test-surviving
    (unwind-protect
        (dolist (case '(("(ext:run-program \"/bin/sleep\" '(\"30.5151\"))" . "sleep 30\\.5151")
                        ("(ext:system \"exec /bin/sleep 30.5152\")" . "sleep 30\\.5152")
                        ("(ext:run-program \"/bin/sh\" '(\"-c\" \"echo started; sleep 30.5153\") :output t)" . "sleep 30\\.5153")
                        ("(ext:run-program \"/bin/sh\" '(\"-c\" \"trap '' TERM; exec sleep 30.5154\") :output nil)" . "sleep 30\\.5154")
                        ("(ext:system \"sleep 30.5156 | cat\")" . "sleep 30\\.5156")
                        ("(ext:system \"sh -c 'sh -c \\\"sleep 30.5157; :\\\"; :'; :\")" . "sleep 30\\.5157")
                        ("(ext:system \"(trap '' TERM; exec sleep 30.5158) & wait\")" . "sleep 30\\.5158")
                        ;; Processes started while the child is being ended.
                        ("(ext:system \"while :; do sleep 30.5162 & done\")" . "sleep 30\\.5162")
                        ("(ext:system \"while :; do (trap '' TERM; exec sleep 30.5163) & sleep 0.001; done\")" . "sleep 30\\.5163")))
          (let ((text (agentq-test-eval-fails (car case) :timeout 0.5)))
            (should (string-prefix-p "[ERROR] TIMEOUT\n" text)))
          (should-not (agentq-test--children-matching (cdr case)))
          ;; Its own children too, wherever they were reparented.
          (should (equal (list (car case) (agentq-test--processes-matching (cdr case)))
                         (list (car case) nil))))
      (call-process "pkill" nil nil nil "-f" "sleep 30\\.515"))
    ;; A daemon, which left the session with setsid, is not ended with the
    ;; shell that started it, as a terminal's interrupt would not reach it.
    (unwind-protect
        (progn
          (should (string-prefix-p "[ERROR] TIMEOUT\n"
                                   (agentq-test-eval-fails "(ext:system \"setsid sleep 30.5159 & wait\")"
                                                           :timeout 0.5)))
          (should (agentq-test--processes-matching "^sleep 30\\.5159")))
      (call-process "pkill" nil nil nil "-f" "sleep 30\\.5159"))
    (should (equal (agentq-test-eval-ok agentq-test-foreign-threads) "=> 0"))))

(ert-deftest sly-agent-q-hostile/process-functions-stay-interruptible ()
  "Evaluated code that calls the guard's /proc readers in a loop is still
stopped by a timeout, and leaks no descriptor (an interrupt used to unwind
through their C++ frames)."
  (agentq-test-surviving
    ;; A background native compile of earlier tests' DEFUNs holds pipes
    ;; and files while it runs: not counted.
    (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)")
    (let ((before (length (directory-files "/proc/self/fd"))))
      (dotimes (_ 10)
        (should (string-prefix-p
                 "[ERROR] TIMEOUT\n"
                 (agentq-test-eval-fails
                  "(let ((p (nth-value 2 (ext:run-program \"/bin/sleep\" '(\"30.5164\") :wait nil :output nil)))) (unwind-protect (loop (agent-q::%any-running-p (agent-q::%stop-family (ext:external-process-pid p) 50))) (ext:terminate-process p t) (ext:external-process-wait p t)))"
                  :timeout 0.2))))
      ;; ECL's own streams of the sleeps close when collected; ours would not.
      (agentq-test-eval-ok "(si:gc t)")
      (agentq-test-eval-ok "(agent-q::wait-for-native-compiles 60)")
      (should (<= (length (directory-files "/proc/self/fd")) (+ before 2))))
    (should-not (agentq-test--processes-matching "sleep 30\\.5164"))))

(ert-deftest sly-agent-q-hostile/waited-child-output-and-status ()
  "Output a waited-for child writes to the captures arrives whole, in order,
with its exit status, however much there is and whichever pipe it uses."
  (agentq-test-surviving
    (pcase-dolist (`(,code . ,expected)
                   '(("(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"echo out; echo err >&2; echo more; exit 4\") :output t :error t))"
                      . "[stdout]\nout\nmore\n\n[stderr]\nerr\n\n=> 4")
                     ("(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"echo both; echo err >&2\") :output t))"
                      . "[stdout]\nboth\nerr\n\n=> 0")
                     ("(let ((s (make-string-output-stream))) (list (nth-value 1 (ext:run-program \"/bin/echo\" '(\"to-a-string\") :output s)) (get-output-stream-string s)))"
                      . "=> (0 \"to-a-string\n\")")
                     ("(let ((p (nth-value 2 (ext:run-program \"/bin/sh\" '(\"-c\" \"exit 7\") :wait nil :output nil)))) (ext:external-process-wait p t))"
                      . "=> :EXITED\n=> 7")
                     ;; Bytes that are not UTF-8 do not fail the call.
                     ("(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"printf 'a\\\\377b\\\\n'\") :output t))"
                      . "[stdout]\na\ufffdb\n\n=> 0")
                     ;; One U+FFFD for each bad byte, the good ones after it kept.
                     ("(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"printf 'a\\\\351bcdef\\\\n'\") :output t))"
                      . "[stdout]\na\ufffdbcdef\n\n=> 0")
                     ;; A character the pipe delivers in two parts.
                     ("(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"printf '\\\\342'; sleep 0.05; printf '\\\\202\\\\254\\\\n'\") :output t))"
                      . "[stdout]\n\u20ac\n\n=> 0")
                     ;; Cut short at the end.
                     ("(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"printf 'x\\\\342\\\\202'\") :output t))"
                      . "[stdout]\nx\ufffd\ufffd\n\n=> 0")
                     ;; Nothing run: ECL's single NIL.
                     ("(multiple-value-list (ext:run-program \"/bin/cat\" nil :input \"/nonexistent/agentq\" :output nil))"
                      . "=> (NIL)")))
      (should (equal (list code (agentq-test-eval-ok code)) (list code expected))))
    (let ((text (agentq-test-eval-ok "(ext:system \"seq 1 40000\")")))
      (should (string-prefix-p "[stdout]\n1\n2\n3\n" text))
      (should (string-suffix-p "\n39999\n40000\n\n=> 0" text)))))

(ert-deftest sly-agent-q-hostile/children-writing-to-lisp-streams ()
  "A waited-for child whose output goes to a Lisp stream of the caller's (a
string stream, `with-output-to-string') is copied without ECL's copying
thread: all of it arrives, no thread is left, and an interrupted wait
ends the child."
  (agentq-test-surviving
    (unwind-protect
        (progn
          (pcase-dolist (`(,code . ,expected)
                         '(("(let ((s (make-string-output-stream))) (list (nth-value 1 (ext:run-program \"seq\" '(\"1\" \"40000\") :output s)) (length (get-output-stream-string s))))"
                            . "=> (0 228894)")
                           ("(with-output-to-string (*standard-output*) (ext:run-program \"/bin/echo\" '(\"via-t\") :output t))"
                            . "=> \"via-t\n\"")
                           ("(let ((out (make-string-output-stream)) (err (make-string-output-stream))) (ext:run-program \"/bin/sh\" '(\"-c\" \"echo o; echo e >&2; exit 3\") :output out :error err) (list (get-output-stream-string out) (get-output-stream-string err)))"
                            . "=> (\"o\n\"\n    \"e\n\")")
                           ("(let ((err (make-string-output-stream))) (list (nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"echo o; echo e >&2\") :output t :error err)) (get-output-stream-string err)))"
                            . "[stdout]\no\n\n=> (0 \"e\n\")")
                           ;; ECL's copying thread hung for good in some runs of this.
                           ("(loop repeat 50 always (equal (with-output-to-string (s) (ext:run-program \"/bin/echo\" '(\"x\") :output s)) (format nil \"x~%\")))"
                            . "=> T")))
            (should (equal (list code (agentq-test-eval-ok code)) (list code expected))))
          (should (string-prefix-p
                   "[ERROR] TIMEOUT\n"
                   (agentq-test-eval-fails
                    "(with-output-to-string (s) (ext:run-program \"/bin/sh\" '(\"-c\" \"echo started; sleep 30.5161\") :output s))"
                    :timeout 0.5)))
          (should-not (agentq-test--processes-matching "sleep 30\\.5161"))
          (should (equal (agentq-test-eval-ok agentq-test-foreign-threads) "=> 0")))
      (call-process "pkill" nil nil nil "-f" "sleep 30\\.5161"))))

(defun agentq-test--signals-pending-p ()
  "Non-nil when a thread of this process has a signal pending."
  (cl-loop for task in (directory-files "/proc/self/task" t "\\`[0-9]+\\'")
           thereis (with-temp-buffer
                     (insert-file-contents (expand-file-name "status" task))
                     (re-search-forward "^SigPnd:\t\\(.*\\)")
                     (string-match-p "[1-9a-f]" (match-string 1)))))

(ert-deftest sly-agent-q-hostile/children-reading-lisp-streams ()
  "A waited-for child whose input is a Lisp stream with no file descriptor
\(a string stream, a Gray stream, an octet stream) is fed without ECL's
copying thread: all of it arrives, as UTF-8; a child that stops reading
loses nothing else and raises no SIGPIPE; an interrupted wait ends the
child, its processes and our copying, and no thread is left."
  (agentq-test-surviving
    (let ((file (make-temp-file "agentq-input-")))
      (unwind-protect
          (progn
            (pcase-dolist (`(,code . ,expected)
                           `(("(nth-value 1 (ext:run-program \"/bin/cat\" nil :input (make-string-input-stream (format nil \"λx€😀~%\")) :output t))"
                              . "[stdout]\nλx€😀\n\n=> 0")
                             ;; More than the pipe holds, both ways at once.
                             ("(let ((s (make-string-output-stream)) (in (make-string 3000000 :initial-element #\\λ))) (list (nth-value 1 (ext:run-program \"/bin/cat\" nil :input (make-string-input-stream in) :output s)) (string= in (get-output-stream-string s))))"
                              . "=> (0 T)")
                             ("(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"od -An -tx1\") :input (ext:make-sequence-input-stream (coerce #(1 2 255) '(vector (unsigned-byte 8)))) :output t))"
                              . "[stdout]\n 01 02 ff\n\n=> 0")
                             ;; Its output closed at once, the child still reads its input.
                             (,(format "(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"exec >/dev/null; cat > %s\") :input (make-string-input-stream \"kept\") :output t))" file)
                              . "=> 0")
                             ;; Children that stop reading.
                             ("(nth-value 1 (ext:run-program \"/bin/true\" nil :input (make-string-input-stream (make-string 10000000 :initial-element #\\a)) :output nil))"
                              . "=> 0")
                             ("(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"head -c 3; exit 5\") :input (make-string-input-stream (make-string 10000000 :initial-element #\\a)) :output t))"
                              . "[stdout]\naaa\n\n=> 5")
                             ("(multiple-value-list (let ((p (nth-value 2 (ext:run-program \"/bin/true\" nil :input :stream :output nil :wait nil)))) (ext:external-process-wait p t) (agent-q::%write-pipe (ext:file-stream-fd (ext:external-process-input p)) \"abc\" 0)))"
                              . "=> (0 :CLOSED)")))
              (should (equal (list code (agentq-test-eval-ok code)) (list code expected))))
            (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string)) "kept"))
            ;; The SIGPIPE of a write to a pipe nobody reads is taken back.
            (should-not (agentq-test--signals-pending-p))
            (dolist (code '("(progn (defclass endless-input (gray:fundamental-character-input-stream) ()) (defmethod gray:stream-read-char ((s endless-input)) #\\x) (ext:run-program \"/bin/cat\" nil :input (make-instance 'endless-input) :output nil))"
                            "(with-output-to-string (s) (ext:run-program \"/bin/sh\" '(\"-c\" \"echo started; sleep 30.5165\") :input (make-string-input-stream \"x\") :output s))"))
              (should (string-prefix-p "[ERROR] TIMEOUT\n" (agentq-test-eval-fails code :timeout 0.5))))
            (should-not (agentq-test--processes-matching "sleep 30\\.5165"))
            (should (equal (agentq-test-eval-ok agentq-test-foreign-threads) "=> 0")))
        (call-process "pkill" nil nil nil "-f" "sleep 30\\.5165")
        (delete-file file)))))

(ert-deftest sly-agent-q-hostile/children-start-with-no-blocked-signals ()
  "A child does not inherit the Lisp thread's blocked signals (SIGTERM among
them), so the SIGTERM an interrupted wait sends reaches it."
  (agentq-test-surviving
    (should (equal (agentq-test-eval-ok
                    "(nth-value 1 (ext:run-program \"/bin/sh\" '(\"-c\" \"grep SigBlk /proc/self/status\") :output t))")
                   "[stdout]\nSigBlk:\t0000000000000000\n\n=> 0"))
    (let ((marker (make-temp-file "agentq-sigterm-")))
      (unwind-protect
          (progn
            (delete-file marker)
            (should (string-prefix-p
                     "[ERROR] TIMEOUT\n"
                     (agentq-test-eval-fails
                      (format "(ext:run-program \"/bin/sh\" '(\"-c\" \"trap 'echo term > %s; exit 1' TERM; /bin/sleep 30.5155 & wait\") :output nil)"
                              marker)
                      :timeout 0.3)))
            (should (file-exists-p marker)))
        (call-process "pkill" nil nil nil "-f" "sleep 30\\.5155")
        (when (file-exists-p marker) (delete-file marker))))))

(ert-deftest sly-agent-q-hostile/waited-children-leave-no-descriptors ()
  "A loop of waited-for children does not use up Emacs's file descriptors."
  (agentq-test-surviving
    (let ((before (length (directory-files "/proc/self/fd"))))
      (agentq-test-eval-ok "(dotimes (i 300) (ext:run-program \"/bin/true\" nil :input nil :output t :error t))"
                           :timeout 60)
      (should (< (length (directory-files "/proc/self/fd")) (+ before 20))))))

(ert-deftest sly-agent-q-hostile/timeout-keeps-partial-output ()
  "Output printed before the timeout is shown with the TIMEOUT error."
  (agentq-test-surviving
    (let ((text (agentq-test-eval-fails "(progn (princ \"partial\") (finish-output) (loop))" :timeout 0.5)))
      (should (string-prefix-p "[ERROR] TIMEOUT\n" text))
      (should (string-match-p "\\[stdout\\]\npartial" text)))))

(ert-deftest sly-agent-q-hostile/runaway-output-with-timeout ()
  "Endless printing stops at the timeout with bounded, truncated output."
  (agentq-test-with-custom ((sly-agent-q-output-limit 10000))
    (agentq-test-surviving
      (let ((text (agentq-test-eval-fails "(loop (print 1))" :timeout 0.5)))
        (should (string-prefix-p "[ERROR] TIMEOUT\n" text))
        (should (string-match-p "output truncated" text))
        (should (< (length text) 20000))))))

(ert-deftest sly-agent-q-hostile/eval-timeout-defcustom ()
  "sly-agent-q-eval-timeout applies when the call gives no timeout, and is a ceiling a call cannot lift."
  (let ((old sly-agent-q-eval-timeout))
    (agentq-test-with-custom ((sly-agent-q-eval-timeout 1))
      (agentq-test-surviving
        (pcase-let ((`(,result . ,seconds) (agentq-test--timed-eval "(loop)")))
          (should (eq (plist-get result :success) nil))
          (should (string-prefix-p "[ERROR] TIMEOUT\n" (plist-get result :content)))
          (should (< seconds 3)))
        ;; A model or an MCP client cannot lift the user's limit.
        (pcase-let ((`(,result . ,seconds) (agentq-test--timed-eval "(progn (sleep 1.3) :slept)" :timeout 5)))
          (should (string-prefix-p "[ERROR] TIMEOUT\n" (plist-get result :content)))
          (should (< seconds 3)))))
    (should (equal sly-agent-q-eval-timeout old))
    ;; Restored: 1.3 s is fine again without a per-call timeout.
    (should (equal (agentq-test-eval-ok "(progn (sleep 1.3) :slept-again)") "=> :SLEPT-AGAIN"))))

(ert-deftest sly-agent-q-hostile/options-set-with-setq-or-let ()
  "Options set with `setq' after loading, or bound with `let', apply to the
next call, not only those set through customize; and back again after."
  (let ((old sly-agent-q-eval-timeout))
    (unwind-protect
        (progn
          (setq sly-agent-q-eval-timeout 0.5)
          (should (string-prefix-p "[ERROR] TIMEOUT\nEvaluation did not finish within 0.5 seconds"
                                   (agentq-test-eval-fails "(sleep 3)")))
          (setq sly-agent-q-eval-timeout old)
          (let ((sly-agent-q-eval-timeout 0.4)
                (sly-agent-q-output-limit 10))
            (should (string-prefix-p "[ERROR] TIMEOUT\nEvaluation did not finish within 0.4 seconds"
                                     (agentq-test-eval-fails "(sleep 3)")))
            (should (string-match-p "output truncated"
                                    (agentq-test-eval-ok "(princ (make-string 100 :initial-element #\\a))")))))
      (setq sly-agent-q-eval-timeout old))
    (should (equal (agentq-test-eval-ok "(progn (sleep 0.6) (princ (make-string 100 :initial-element #\\b)) :slept)")
                   (concat "[stdout]\n" (make-string 100 ?b) "\n\n=> :SLEPT")))))

;;;; C-g

(defun agentq-test--quit-once-after (delay action)
  "A wait function that runs ACTION once, DELAY seconds into the wait."
  (let ((done nil))
    (lambda (seconds)
      (when (and (not done) (>= seconds delay))
        (setq done t)
        (funcall action)))))

(defun agentq-test--quit-outcome (wait-function)
  "Evaluate (loop) with WAIT-FUNCTION in `sly-agent-q-wait-functions'.
Return (OUTCOME . SECONDS); OUTCOME is `quitted' when a quit came out."
  (let* ((start (float-time))
         (outcome (condition-case nil
                      (let ((sly-agent-q-wait-functions (list wait-function)))
                        (sly-agent-q-execute-tool-calls
                         '((:id "q" :name "evaluate_lisp" :arguments (:code "(loop)" :timeout 3)))))
                    (quit 'quitted))))
    (cons outcome (- (float-time) start))))

(ert-deftest sly-agent-q-hostile/simulated-C-g-quits ()
  "quit-flag set 0.3 s into the wait (as C-g does) quits within 1.5 s; the session works after."
  (agentq-test-surviving
    (pcase-let ((`(,outcome . ,seconds)
                 (agentq-test--quit-outcome
                  (agentq-test--quit-once-after 0.3 (lambda () (setq quit-flag t))))))
      (should (eq outcome 'quitted))
      (should (< seconds 1.5)))
    (should-not quit-flag)))

(ert-deftest sly-agent-q-hostile/quit-signalled-by-wait-function-quits ()
  "A quit signalled while the progress function runs (C-g during the progress message) quits too."
  (agentq-test-surviving
    (pcase-let ((`(,outcome . ,seconds)
                 (agentq-test--quit-outcome
                  (agentq-test--quit-once-after 0.3 (lambda () (signal 'quit nil))))))
      (should (eq outcome 'quitted))
      (should (< seconds 1.5)))))

(ert-deftest sly-agent-q-hostile/failing-wait-function-is-ignored ()
  "An error in a wait function neither stops the evaluation nor escapes."
  (agentq-test-surviving
    (let ((calls 0))
      (let ((sly-agent-q-wait-functions
             (list (lambda (_seconds) (cl-incf calls) (error "Broken progress display")))))
        (should (equal (agentq-test-eval-ok "(progn (sleep 0.5) :done)") "=> :DONE")))
      (should (>= calls 2)))))

(ert-deftest sly-agent-q-hostile/wait-functions-get-seconds ()
  "Wait functions are called about every 0.1 s after 0.2 s with the seconds waited."
  (let ((seen '()))
    (let ((sly-agent-q-wait-functions (list (lambda (seconds) (push seconds seen)))))
      (agentq-test-eval-ok "(sleep 0.75)"))
    (setq seen (nreverse seen))
    (should (>= (length seen) 3))
    (should (cl-every #'floatp seen))
    (should (>= (car seen) 0.19))
    (should (equal seen (sort (copy-sequence seen) #'<)))))

;;;; Malformed input to the API

(ert-deftest sly-agent-q-hostile/calls-not-a-list ()
  "CALLS that is not a list is a clear sly-agent-q-error."
  (dolist (calls (list "evaluate_lisp" [(:name "evaluate_lisp")] 42 'calls
                       '((:id "a" :name "evaluate_lisp" :arguments (:code "1")) . 5)))
    (let ((err (should-error (sly-agent-q-execute-tool-calls calls) :type 'sly-agent-q-error)))
      (should (string-match-p "list" (cadr err)))))
  (agentq-test-should-be-alive))

(defun agentq-test--malformed-result (call)
  "Run the malformed CALL: an error result or a clear `sly-agent-q-error'.
Return the error message."
  (condition-case err
      (let ((results (sly-agent-q-execute-tool-calls (list call))))
        (should (= (length results) 1))
        (agentq-test-check-result (car results))
        (should (eq (plist-get (car results) :success) nil))
        (plist-get (car results) :error))
    (sly-agent-q-error (cadr err))))

(ert-deftest sly-agent-q-hostile/call-without-name ()
  (should (string-match-p ":name" (agentq-test--malformed-result '(:id "x" :arguments (:code "1")))))
  (should (string-match-p ":name" (agentq-test--malformed-result '(:id "x" :name "" :arguments nil))))
  (should (string-match-p ":name" (agentq-test--malformed-result '(:id "x" :name 42 :arguments nil))))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-hostile/call-not-a-plist ()
  (dolist (call (list 'evaluate_lisp 42 "just a string" [1 2 3] '(1 2 3) '(:id "odd" :name)))
    (should (stringp (agentq-test--malformed-result call))))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-hostile/circular-input ()
  "Circular plists, circular arguments and self-containing lists are errors, quickly."
  (let ((start (float-time)))
    (let ((call (list :id "c" :name "evaluate_lisp" :arguments '(:code "1"))))
      (setcdr (last call) call)
      (should (string-match-p "circular" (agentq-test--malformed-result call))))
    (let ((args (list :code "(+ 1 2)" :package "CL-USER")))
      (setcdr (last args) args)
      (should (string-match-p "circular"
                              (agentq-test--malformed-result
                               (list :id "c" :name "evaluate_lisp" :arguments args)))))
    (let ((loop-list (list 1 2)))
      (setcar loop-list loop-list)
      (should (stringp (agentq-test--malformed-result
                        (list :id "c" :name "evaluate_lisp"
                              :arguments (list :code "1" :extra loop-list))))))
    (let ((table (make-hash-table :test 'equal)))
      (puthash "code" "1" table)
      (puthash "self" table table)
      (should (stringp (agentq-test--malformed-result
                        (list :id "c" :name "evaluate_lisp" :arguments table)))))
    (should (< (- (float-time) start) 2)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-hostile/unconvertible-argument-values ()
  "Values with no JSON form (a buffer, a marker, a process-less function) are error results."
  (dolist (value (list (current-buffer) (point-marker) (make-bool-vector 3 t)))
    (should (stringp (agentq-test--malformed-result
                      (list :id "u" :name "evaluate_lisp" :arguments (list :code "1" :weird value))))))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-hostile/unconvertible-call-keeps-its-id ()
  "A call whose arguments cannot be converted still gets its own id back,
whatever the shape of the call and the spelling of its id key."
  (let ((table (make-hash-table :test 'equal)))
    (puthash "id" "in-a-table" table)
    (puthash "name" "evaluate_lisp" table)
    (puthash "arguments" (list :code "1" :weird (current-buffer)) table)
    (dolist (case `((,table . "in-a-table")
                    ((("id" . "in-an-alist") ("name" . "evaluate_lisp")
                      ("arguments" . (:code "1" :weird ,(point-marker))))
                     . "in-an-alist")
                    ((:name "evaluate_lisp" "id" "string-key" :arguments (:code "1" :weird ,(current-buffer)))
                     . "string-key")
                    ((:id 42 :name "evaluate_lisp" :arguments (:code "1" :weird ,(current-buffer)))
                     . "42")))
      (let ((result (car (sly-agent-q-execute-tool-calls (list (car case))))))
        (agentq-test-check-result result)
        (should (eq (plist-get result :success) nil))
        (should (equal (plist-get result :id) (cdr case)))))))

(ert-deftest sly-agent-q-hostile/large-code-string ()
  "A megabyte of code goes through."
  (should (equal (agentq-test-eval-ok (format "(length \"%s\")" (make-string 1000000 ?a)))
                 "=> 1000000")))

(ert-deftest sly-agent-q-hostile/malformed-tool-definitions-and-schema-args ()
  "Garbage given to define-tool, tools-schema and mcp-request is a clear error, never a crash."
  (should-error (sly-agent-q-define-tool 42 "d" nil :handler #'ignore))
  (should-error (sly-agent-q-define-tool "agentq_bad_params" "d" "not a list" :handler #'ignore)
                :type 'sly-agent-q-error)
  (should-error (sly-agent-q-define-tool "agentq_bad_params" "d" '(1 2) :handler #'ignore)
                :type 'sly-agent-q-error)
  (should-error (sly-agent-q-tools-schema 'openai :extremely-safe) :type 'sly-agent-q-error)
  (should-error (sly-agent-q-mcp-request 42))
  (should-not (member "agentq_bad_params" (sly-agent-q-list-tools)))
  (agentq-test-should-be-alive))

(provide 'sly-agent-q-hostile-test)

;;; sly-agent-q-hostile-test.el ends here
