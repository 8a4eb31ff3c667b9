;;; sly-agent-q-eval-test.el --- evaluate_lisp per its contract, from Emacs -*- lexical-binding: t; -*-

;;; Commentary:

;; contracts/evaluate-lisp.md through sly-agent-q-execute-tool-calls, with
;; the real module and ECL: values, output sections, packages, timing,
;; printing, errors and backtraces, output limits, Unicode.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defmacro agentq-test-in-cl-user (&rest body)
  "Run BODY and put the session back in CL-USER afterwards."
  (declare (indent 0))
  `(unwind-protect (progn ,@body)
     (agentq-test-eval "(in-package :cl-user)")))

;;;; Values

(ert-deftest sly-agent-q-eval/single-value ()
  (should (equal (agentq-test-eval-ok "(+ 1 2)") "=> 3"))
  (should (equal (agentq-test-eval-ok "\"a string\"") "=> \"a string\""))
  (should (equal (agentq-test-eval-ok ":kw") "=> :KW"))
  (should (equal (agentq-test-eval-ok "'(1 (2 \"x\") #\\a)") "=> (1 (2 \"x\") #\\a)")))

(ert-deftest sly-agent-q-eval/multiple-values ()
  (should (equal (agentq-test-eval-ok "(values 3 1)") "=> 3\n=> 1"))
  (should (equal (agentq-test-eval-ok "(floor 7 2)") "=> 3\n=> 1"))
  (should (equal (agentq-test-eval-ok "(values 1 :two \"three\")") "=> 1\n=> :TWO\n=> \"three\"")))

(ert-deftest sly-agent-q-eval/only-last-form-returned ()
  "Several forms are evaluated in order; the last one's values are returned."
  (should (equal (agentq-test-eval-ok
                  "(defparameter *agentq-el-order* (list 1)) (push 2 *agentq-el-order*) (reverse *agentq-el-order*)")
                 "=> (1 2)")))

(ert-deftest sly-agent-q-eval/definitions-persist ()
  "Definitions and variables persist across calls."
  (agentq-test-eval-ok "(defun agentq-el-square (x) (* x x)) (defvar *agentq-el-base* 40)")
  (should (equal (agentq-test-eval-ok "(+ (agentq-el-square 1) *agentq-el-base* 1)") "=> 42")))

(ert-deftest sly-agent-q-eval/calls-skip-the-compiler-and-agree-with-eval ()
  "Calls of global functions on constants are evaluated without ECL's
bytecode compiler; each gives what the same form under PROGN (which goes
through EVAL) gives: the same values and output, or an error of the same
type."
  (agentq-test-eval-ok
   "(defun cl-user::agentq-el-twice (x) (list x x)) (defmacro cl-user::agentq-el-one () 1)
    (define-symbol-macro cl-user::agentq-el-sm 42) (defgeneric cl-user::agentq-el-gf (x))
    (defmethod cl-user::agentq-el-gf ((x integer)) (* 10 x))")
  (dolist (form '("(+ 1 2)" "(values 1 :two \"three\")" "(values)" "(floor 7 2)"
                  "(list (princ 1) (princ 2))" "(list 1 'a :b \"c\" #\\d t nil)"
                  "(cl-user::agentq-el-twice (cl-user::agentq-el-twice '(x)))"
                  "(cl-user::agentq-el-gf 4)" "(cl-user::agentq-el-gf 'x)"
                  "(list (cl-user::agentq-el-one))" "(list cl-user::agentq-el-sm)"
                  "(apply '+ '(1 2))" "(funcall #'car '(1))" "(quote (a b))" "'x" "(identity #(1 2))"
                  "(car 1)" "(error \"boom ~A\" 1)" "(princ 1 2 3)" "(cl-user::agentq-el-undefined 1)"
                  "(format t \"~A~%\" (length (list 1 2 3)))" "(warn \"careful\")"
                  "(list (list (list (list (list (list (list 1)))))))" "(ext:quit)"))
    (let ((direct (agentq-test-eval form))
          (through-eval (agentq-test-eval (format "(progn %s)" form))))
      (should (equal (list form (plist-get direct :success))
                     (list form (plist-get through-eval :success))))
      (if (plist-get direct :success)
          (should (equal (list form (plist-get direct :content))
                         (list form (plist-get through-eval :content))))
        (let ((first-line (lambda (result) (car (split-string (plist-get result :content) "\n")))))
          (should (equal (list form (funcall first-line direct))
                         (list form (funcall first-line through-eval)))))))))

(ert-deftest sly-agent-q-eval/code-stream-is-fresh-for-every-call ()
  "Each call reads its own code from the start, whatever the call before
did to the stream it was read from (reader macros that close or consume
it), with ASCII and non-ASCII code in turn, and with other Lisp threads
alive."
  (unwind-protect
      (progn
        (agentq-test-eval-ok
         "(defvar cl-user::*agentq-el-old-readtable* *readtable*)
          (setf *readtable* (copy-readtable))
          (set-macro-character #\\! (lambda (stream char) (declare (ignore char)) (close stream) :closed))
          (set-macro-character #\\% (lambda (stream char) (declare (ignore char)) (read-line stream) :skipped))")
        (should (string-prefix-p "[ERROR] " (agentq-test-eval-fails "(+ 1 2) ! (+ 3 4)")))
        (should (equal (agentq-test-eval-ok "% (this line is skipped)\n(+ 3 4)") "=> 7"))
        (dotimes (_ 3)
          (should (equal (agentq-test-eval-ok "(length \"λx\")") "=> 2"))
          (should (equal (agentq-test-eval-ok "(+ 1 2)") "=> 3"))
          (should (equal (agentq-test-eval-ok "\"ü\"") "=> \"ü\"")))
        (agentq-test-eval-ok
         "(defvar cl-user::*agentq-el-sleeper* (mp:process-run-function \"agentq sleeper\" (lambda () (sleep 2))))")
        (should (equal (agentq-test-eval-ok "(+ 5 6)") "=> 11"))
        (should (equal (agentq-test-eval-ok "(length \"λxy\")") "=> 3")))
    (agentq-test-eval "(setf *readtable* cl-user::*agentq-el-old-readtable*)")
    (agentq-test-eval "(mp:process-join cl-user::*agentq-el-sleeper*)" :timeout 10)))

;;;; Output sections

(ert-deftest sly-agent-q-eval/stdout-section ()
  (should (equal (agentq-test-eval-ok "(progn (format t \"Hello, World!\") nil)")
                 "[stdout]\nHello, World!\n\n=> NIL"))
  ;; Trailing newlines of the output are not doubled.
  (should (equal (agentq-test-eval-ok "(progn (print 42) (terpri) 7)")
                 "[stdout]\n\n42 \n\n=> 7")))

(ert-deftest sly-agent-q-eval/stderr-section ()
  (should (equal (agentq-test-eval-ok "(progn (format *error-output* \"Warning: deprecated function\") nil)")
                 "[stderr]\nWarning: deprecated function\n\n=> NIL")))

(ert-deftest sly-agent-q-eval/trace-output-goes-to-stderr ()
  (should (equal (agentq-test-eval-ok "(progn (format *trace-output* \"traced\") 1)")
                 "[stderr]\ntraced\n\n=> 1"))
  ;; And TRACE itself writes there.
  (let ((text (agentq-test-eval-ok
               "(defun agentq-el-traced (x) (1+ x)) (trace agentq-el-traced) (prog1 (agentq-el-traced 1) (untrace agentq-el-traced))")))
    (should (string-prefix-p "[stderr]\n" text))
    (should (string-match-p "AGENTQ-EL-TRACED" text))
    (should (string-suffix-p "\n\n=> 2" text)))
  ;; Also for a bare call, which is evaluated without the compiler.
  (unwind-protect
      (progn
        (agentq-test-eval-ok "(trace agentq-el-traced)")
        (let ((text (agentq-test-eval-ok "(agentq-el-traced 2)")))
          (should (string-match-p "\\`\\[stderr\\]\n.*AGENTQ-EL-TRACED 2" text))
          (should (string-suffix-p "\n\n=> 3" text))))
    (agentq-test-eval "(untrace agentq-el-traced)")))

(ert-deftest sly-agent-q-eval/warnings-section ()
  (should (equal (agentq-test-eval-ok "(progn (warn \"careful ~A\" 1) 2)")
                 "[warnings]\nSIMPLE-WARNING: careful 1\n\n=> 2"))
  (should (equal (agentq-test-eval-ok "(progn (warn \"one\") (warn \"two\") 3)")
                 "[warnings]\nSIMPLE-WARNING: one\nSIMPLE-WARNING: two\n\n=> 3")))

(ert-deftest sly-agent-q-eval/all-sections-in-order ()
  "[stdout], [stderr], [warnings], then the values, each section ended by a blank line."
  (should (equal (agentq-test-eval-ok
                  "(progn (format t \"Hello, World!\") (format *error-output* \"oops\") (warn \"careful ~A\" 1) (values 3 1))")
                 "[stdout]\nHello, World!\n\n[stderr]\noops\n\n[warnings]\nSIMPLE-WARNING: careful 1\n\n=> 3\n=> 1")))

(ert-deftest sly-agent-q-eval/output-does-not-leak-between-calls ()
  (should (string-prefix-p "[stdout]\nfirst" (agentq-test-eval-ok "(progn (princ \"first\") 1)")))
  (should (equal (agentq-test-eval-ok "2") "=> 2")))

(ert-deftest sly-agent-q-eval/output-before-an-error-is-kept ()
  "Output printed before an error is still shown, after the error report."
  (let ((text (agentq-test-eval-fails "(progn (princ \"before the fall\") (error \"fell\"))")))
    (should (string-prefix-p "[ERROR] SIMPLE-ERROR\nfell\n" text))
    (should (string-match-p "\\[stdout\\]\nbefore the fall" text))))

;;;; Packages

(ert-deftest sly-agent-q-eval/multi-form-package-persists ()
  "defpackage + in-package + defun in one call: F lands in P, and P stays the package."
  (agentq-test-in-cl-user
    (should (eq (plist-get (agentq-test-eval "(defpackage :p (:use :cl)) (in-package :p) (defun f () 1)") :success)
                t))
    (should (equal (agentq-test-eval-ok "(package-name *package*)") "=> \"P\""))
    (should (equal (agentq-test-eval-ok "(package-name (symbol-package 'f))") "=> \"P\""))
    (should (equal (agentq-test-eval-ok "(f)") "=> 1"))
    (should (equal (agentq-test-eval-ok "(in-package :cl-user)") "=> #<\"COMMON-LISP-USER\" package>"))
    (should (equal (agentq-test-eval-ok "(p::f)") "=> 1"))
    (should (equal (agentq-test-eval-ok "(package-name *package*)") "=> \"COMMON-LISP-USER\""))))

(ert-deftest sly-agent-q-eval/package-argument ()
  "The package argument binds *package* for that call only."
  (agentq-test-in-cl-user
    (should (equal (agentq-test-eval-ok "(package-name *package*)" :package "COMMON-LISP") "=> \"COMMON-LISP\""))
    (should (equal (agentq-test-eval-ok "(package-name *package*)" :package "common-lisp") "=> \"COMMON-LISP\""))
    ;; Symbols are read in that package: in KEYWORD they are keywords.
    (should (equal (agentq-test-eval-ok "'foo" :package "KEYWORD") "=> :FOO"))
    (should (equal (agentq-test-eval-ok "(package-name *package*)") "=> \"COMMON-LISP-USER\""))
    (agentq-test-eval-ok "(defpackage :agentq-el-pkg (:use :cl)) (in-package :cl-user)")
    (agentq-test-eval-ok "(defun where () :in-pkg)" :package "AGENTQ-EL-PKG")
    (should (equal (agentq-test-eval-ok "(agentq-el-pkg::where)") "=> :IN-PKG"))
    (should (equal (agentq-test-eval-ok "(where)" :package "agentq-el-pkg") "=> :IN-PKG"))))

(ert-deftest sly-agent-q-eval/unknown-package-is-an-error ()
  (let ((result (agentq-test-eval "1" :package "no-such-package-xyz")))
    (should (eq (plist-get result :success) nil))
    (should (string-prefix-p "[ERROR] PACKAGE-ERROR\n" (plist-get result :content)))
    (should (string-match-p "no-such-package-xyz" (plist-get result :content))))
  (agentq-test-should-be-alive))

;;;; Timing

(defconst agentq-test--timing-line
  "\n; Timing: [0-9]+ms real, [0-9]+ms run, [0-9]+ms GC, [0-9]+ bytes consed\\'")

(ert-deftest sly-agent-q-eval/capture-time ()
  "capture-time and capture_time add the timing line; without them there is none."
  (dolist (arguments (list '(:code "(make-list 1000)" :capture-time t)
                           '(:code "(make-list 1000)" :capture_time t)
                           "{\"code\": \"(make-list 1000)\", \"capture-time\": true}"))
    (let ((text (plist-get (agentq-test-call "evaluate_lisp" arguments) :content)))
      (should (string-prefix-p "=> (NIL NIL" text))
      (should (string-match-p agentq-test--timing-line text))))
  (should-not (string-match-p "Timing" (agentq-test-eval-ok "(make-list 10)")))
  (should-not (string-match-p "Timing" (agentq-test-eval-ok "(make-list 10)" :capture-time :false))))

(ert-deftest sly-agent-q-eval/capture-time-measures ()
  "The timing line measures the evaluation: a 0.2 s sleep shows ≥ 200 ms real; consing shows bytes."
  (let ((text (agentq-test-eval-ok "(sleep 0.2)" :capture-time t)))
    (should (string-match "; Timing: \\([0-9]+\\)ms real" text))
    (should (>= (string-to-number (match-string 1 text)) 190)))
  (let ((text (agentq-test-eval-ok "(length (make-list 100000))" :capture-time t)))
    (should (string-match ", \\([0-9]+\\) bytes consed" text))
    (should (>= (string-to-number (match-string 1 text)) 800000))))

(ert-deftest sly-agent-q-eval/capture-time-on-error ()
  "A failed evaluation with capture-time still reports the error first."
  (let ((text (agentq-test-eval-fails "(error \"timed failure\")" :capture-time t)))
    (should (string-prefix-p "[ERROR] SIMPLE-ERROR\ntimed failure" text))
    (should (string-match-p agentq-test--timing-line text))))

;;;; Printing

(ert-deftest sly-agent-q-eval/circular-list ()
  (should (equal (agentq-test-eval-ok "(let ((l (list 1 2 3))) (setf (cdr (last l)) l) l)")
                 "=> #1=(1 2 3 . #1#)"))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-eval/print-length-100 ()
  (let ((text (agentq-test-eval-ok "(loop for i below 200 collect i)")))
    (should (string-prefix-p "=> (0 1 2 3" text))
    (should (string-match-p "\\_<99 \\.\\.\\.)\\'" text))
    (should-not (string-match-p "\\_<100\\_>" text))))

(ert-deftest sly-agent-q-eval/print-level-10 ()
  (let ((text (agentq-test-eval-ok "(let ((x :bottom)) (dotimes (i 20) (setf x (list x))) x)")))
    (should (string-match-p "#" text))
    (should-not (string-match-p "BOTTOM" text))
    (should (<= (cl-count ?\( text) 10))))

;;;; Errors

(defun agentq-test--backtrace-frames (text)
  "The numbered frame lines of the [Backtrace] section of TEXT."
  (when (string-match "\n\n\\[Backtrace\\]\n" text)
    (let ((lines (split-string (substring text (match-end 0)) "\n")))
      (cl-loop for line in lines
               while (string-match-p "\\`[0-9]+: (" line)
               collect line))))

(ert-deftest sly-agent-q-eval/error-format ()
  "[ERROR] TYPE\\nmessage\\n\\n[Backtrace]\\n0: (… with the user's function in it."
  (let ((text (agentq-test-eval-fails "(defun agentq-el-fails (x) (car x)) (agentq-el-fails 5)")))
    (should (string-match-p "\\`\\[ERROR\\] [A-Z:-]+\n.+\n\\(.*\n\\)*\n\\[Backtrace\\]\n0: (" text))
    (should (string-match-p "\\`\\[ERROR\\] [A-Z-]*TYPE-ERROR\n" text))
    (let ((frames (agentq-test--backtrace-frames text)))
      (should frames)
      (should (cl-some (lambda (frame) (string-match-p "AGENTQ-EL-FAILS" frame)) frames))
      (cl-loop for frame in frames
               for i from 0
               do (should (string-prefix-p (format "%d: (" i) frame)))))
  (let ((text (agentq-test-eval-fails "(nonexistent-function-abc)")))
    (should (string-prefix-p "[ERROR] UNDEFINED-FUNCTION\n" text))
    (should (string-match-p "NONEXISTENT-FUNCTION-ABC" text))
    (should (string-match-p "\n\n\\[Backtrace\\]\n" text)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-eval/backtrace-at-most-20-frames ()
  (let* ((text (agentq-test-eval-fails
                "(defun agentq-el-rec (n) (if (zerop n) (error \"bottom\") (1+ (agentq-el-rec (1- n))))) (agentq-el-rec 50)"))
         (frames (agentq-test--backtrace-frames text)))
    (should (string-prefix-p "[ERROR] SIMPLE-ERROR\nbottom\n\n[Backtrace]\n0: (" text))
    (should (<= (length frames) 20))
    (should (>= (length frames) 10))
    (should (string-match-p "AGENTQ-EL-REC" (car frames)))
    ;; Nothing after the 20th frame.
    (should (string-suffix-p (car (last frames)) text))))

(ert-deftest sly-agent-q-eval/reader-errors ()
  (dolist (code '("(+ 1" ")" "#<" "(list 1 . . 2)" "#.(error \"read-time\")"))
    (let ((result (agentq-test-eval code)))
      (should (eq (plist-get result :success) nil))
      (should (string-match-p "\\`\\[ERROR\\] [A-Z:-]+\n" (plist-get result :content)))
      (should (string-match-p "\n\n\\[Backtrace\\]\n" (plist-get result :content)))))
  (should (string-prefix-p "[ERROR] END-OF-FILE\n" (agentq-test-eval-fails "(+ 1")))
  (should (string-match-p "\\`\\[ERROR\\] [A-Z:-]*READER-ERROR\n" (agentq-test-eval-fails ")")))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-eval/forms-before-a-reader-error-ran ()
  "Forms are read one at a time: those before a reader error were evaluated."
  (agentq-test-eval-fails "(defparameter *agentq-el-before-read-error* :ran) (+ 1")
  (should (equal (agentq-test-eval-ok "*agentq-el-before-read-error*") "=> :RAN")))

(ert-deftest sly-agent-q-eval/storage-condition ()
  "A signalled STORAGE-CONDITION (a serious condition, not an error) is caught and reported."
  (let ((text (agentq-test-eval-fails "(signal (make-condition 'storage-condition))")))
    (should (string-prefix-p "[ERROR] STORAGE-CONDITION\n" text))
    (should (string-match-p "\n\n\\[Backtrace\\]\n" text)))
  (let ((text (agentq-test-eval-fails "(error 'storage-condition)")))
    (should (string-prefix-p "[ERROR] STORAGE-CONDITION\n" text)))
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-eval/other-serious-conditions ()
  (should (string-prefix-p "[ERROR] DIVISION-BY-ZERO\n" (agentq-test-eval-fails "(/ 1 0)")))
  (should (string-prefix-p "[ERROR] UNBOUND-VARIABLE\n" (agentq-test-eval-fails "agentq-el-unbound-xyz")))
  (should (string-match-p "\\`\\[ERROR\\] [A-Z-]*TYPE-ERROR\n" (agentq-test-eval-fails "(+ 1 \"a\")")))
  (agentq-test-should-be-alive))

;; ECL reports these as #<a STREAM-ERROR 0x…>, an empty line or a failed report.
(ert-deftest sly-agent-q-eval/conditions-without-a-report-still-say-something ()
  "A condition whose report says nothing gets a message that does."
  (pcase-dolist (`(,code . ,message)
                 '(("(let ((s (make-string-output-stream))) (close s) (write-string \"x\" s))"
                    . "\\`\\[ERROR\\] STREAM-ERROR\nThe stream is closed: #<closed string-output stream [^\n]*>\\.\n")
                   ("(error 'stream-error :stream *standard-output*)"
                    . "\\`\\[ERROR\\] STREAM-ERROR\nStream error on #<[^\n]*>\\.\n")
                   ("(error 'simple-error)" . "\\`\\[ERROR\\] SIMPLE-ERROR\nSIMPLE-ERROR was signalled\\.\n")
                   ("(error 'type-error)"
                    . "\\`\\[ERROR\\] TYPE-ERROR\nTYPE-ERROR was signalled (its report failed)\\.\n")))
    (should (equal (list code (string-match-p message (agentq-test-eval-fails code))) (list code 0))))
  ;; A report that says something is left as it is.
  (should (string-prefix-p "[ERROR] SIMPLE-ERROR\n#<a STREAM-ERROR> as text\n"
                           (agentq-test-eval-fails "(error \"#<a STREAM-ERROR> as text\")")))
  (agentq-test-should-be-alive))

;;;; Output limit

(ert-deftest sly-agent-q-eval/output-limit-truncates-with-marker ()
  "Output beyond sly-agent-q-output-limit is cut with a visible marker; the limit is restored after."
  (agentq-test-with-custom ((sly-agent-q-output-limit 1000))
    (let ((text (agentq-test-eval-ok "(dotimes (i 100000) (write-string \"0123456789\"))")))
      (should (string-prefix-p "[stdout]\n0123456789" text))
      (should (string-match-p "output truncated: 999000 more characters not shown (limit 1000)" text))
      (should (string-suffix-p "\n\n=> NIL" text))
      (should (< (length text) 1400)))
    ;; A long value is cut too.
    (let ((text (agentq-test-eval-ok "(make-string 5000 :initial-element #\\a)")))
      (should (string-prefix-p "=> \"aaaa" text))
      (should (string-match-p "truncated" text))
      (should (< (length text) 1400)))
    ;; Output at the limit is not cut.
    (should-not (string-match-p "truncated"
                                (agentq-test-eval-ok "(progn (write-string (make-string 900 :initial-element #\\x)) 1)"))))
  ;; Restored: 20000 characters come back whole.
  (should (= sly-agent-q-output-limit 1000000))
  (let ((text (agentq-test-eval-ok "(progn (write-string (make-string 20000 :initial-element #\\y)) 1)")))
    (should-not (string-match-p "truncated" text))
    (should (string-match-p (format "\\[stdout\\]\ny\\{%d\\}\n\n=> 1" 20000) text))))

(ert-deftest sly-agent-q-eval/output-limit-via-module-configure ()
  "The module's output-limit setting works directly too.
A call through `sly-agent-q-execute-tool-calls' brings the option's own
value, which the module gives the runtime again (see
sly-agent-q-api/options-as-each-call-has-them); the module's own entry
runs with what it was given last."
  (unwind-protect
      (progn
        (should (eq (sly-agent-q--module-configure "output-limit" 100) t))
        (let ((text (plist-get (car (let ((sly-agent-q-call-origin "user"))
                                      (sly-agent-q--module-execute
                                       (list (list :id "c" :name "evaluate_lisp"
                                                   :arguments '(:code "(progn (write-string (make-string 500 :initial-element #\\z)) 1)")))
                                       nil nil)))
                               :content)))
          (should (string-match-p "output truncated: 400 more characters not shown (limit 100)" text))))
    (sly-agent-q--module-configure "output-limit" sly-agent-q-output-limit))
  (should-not (string-match-p "truncated"
                              (agentq-test-eval-ok "(progn (write-string (make-string 500 :initial-element #\\z)) 1)"))))

(ert-deftest sly-agent-q-eval/configure-rejects-bad-settings ()
  (should-error (sly-agent-q--module-configure "no-such-setting" 1) :type 'sly-agent-q-error)
  (should-error (sly-agent-q--module-configure "output-limit" "lots") :type 'sly-agent-q-error)
  (agentq-test-should-be-alive))

;;;; Unicode

(ert-deftest sly-agent-q-eval/unicode-round-trip ()
  (should (equal (agentq-test-eval-ok "(list (length \"héllo→λ\") \"héllo→λ\")") "=> (7 \"héllo→λ\")"))
  (should (equal (agentq-test-eval-ok "(length \"😀\")") "=> 1"))
  (should (equal (agentq-test-eval-ok "(progn (princ \"日本語 ✓\") (char-code #\\λ))")
                 "[stdout]\n日本語 ✓\n\n=> 955"))
  (should (equal (agentq-test-eval-ok "(string (code-char 128512))") "=> \"😀\""))
  (let ((text (agentq-test-eval-fails "(error \"ünïcödé ~A\" \"→\")")))
    (should (string-prefix-p "[ERROR] SIMPLE-ERROR\nünïcödé →\n" text))))

(ert-deftest sly-agent-q-eval/an-error-lists-the-restarts-in-force ()
  "The [ERROR] text lists the restarts the code established, innermost
first and numbered as the REPL's debugger numbers them; an error with
none has no [Restarts] section; eval_form lists them too."
  (let ((text (agentq-test-eval-fails
               "(with-simple-restart (skip \"Skip it\")
                  (restart-case (error \"boom\") (use-it (v) :report \"Use a value\" v)))")))
    (should (string-match-p
             "\\`\\[ERROR\\] SIMPLE-ERROR\nboom\n\n\\[Restarts\\]\n0: \\[USE-IT\\] Use a value\n1: \\[SKIP\\] Skip it\n\n\\[Backtrace\\]\n"
             text)))
  (should-not (string-match-p "\\[Restarts\\]" (agentq-test-eval-fails "(car 1)")))
  ;; A restart whose report fails is still listed.
  (should (string-match-p "\\[Restarts\\]\n0: \\[BAD\\] "
                          (agentq-test-eval-fails
                           "(restart-case (error \"boom\") (bad () :report (lambda (s) (error \"no\")) 1))")))
  (let ((result (agentq-test-call "eval_form" (list :form "(restart-case (error \"x\") (use-it () 1))"))))
    (should-not (plist-get result :success))
    (should (string-match-p "\\[Restarts\\]\n0: \\[USE-IT\\] USE-IT\n" (plist-get result :content)))))

(provide 'sly-agent-q-eval-test)

;;; sly-agent-q-eval-test.el ends here
