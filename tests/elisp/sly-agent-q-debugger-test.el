;;; sly-agent-q-debugger-test.el --- The REPL's debugger: restarts -*- lexical-binding: t; -*-

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-repl)
(require 'sly-agent-q-debugger)
(require 'sly-agent-q-inspector-test)

(defun agentq-dbg-send (text)
  "Type TEXT at the REPL's prompt and press RET; return where its output starts."
  (goto-char (point-max))
  (insert text)
  (prog1 (point-max)
    (sly-agent-q-repl-return)
    (should sly-agent-q-repl--job)))

(defun agentq-dbg-wait-debugger ()
  "Wait for the debugger to ask; return its buffer."
  (let ((deadline (+ (float-time) 20)) buffer)
    (while (and (not (and (setq buffer (get-buffer sly-agent-q-debugger-buffer-name))
                          (buffer-local-value 'sly-agent-q-debugger--key buffer)))
                (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (should (buffer-live-p buffer))
    (should (buffer-local-value 'sly-agent-q-debugger--key buffer))
    buffer))

(defun agentq-dbg-wait-output (repl start)
  "Wait for REPL's evaluation to end; return what it printed from START."
  (with-current-buffer repl
    (let ((deadline (+ (float-time) 20)))
      (while (and sly-agent-q-repl--job (< (float-time) deadline))
        (accept-process-output nil 0.02)))
    (should-not sly-agent-q-repl--job)
    (string-trim (replace-regexp-in-string "[^ \n>]*> \\'" ""
                                           (buffer-substring-no-properties (min start (point-max)) (point-max))))))

(defun agentq-dbg-restart-index (buffer name)
  "The index of the restart NAME (\"[USE-VALUE]\"…) shown in BUFFER."
  (cl-position-if (lambda (restart) (string-prefix-p name (car restart)))
                  (buffer-local-value 'sly-agent-q-debugger--restarts buffer)))

(ert-deftest sly-agent-q-debugger/use-value-for-an-unbound-variable ()
  (agentq-test-with-repl
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send "(+ agentq-dbg-unbound 1)"))
           (dbg (agentq-dbg-wait-debugger)))
      (with-current-buffer dbg
        (should (derived-mode-p 'sly-agent-q-debugger-mode))
        (should (string-match-p "\\`UNBOUND-VARIABLE: The variable AGENTQ-DBG-UNBOUND is unbound" (buffer-string)))
        (should (string-match-p "^Backtrace:" (buffer-string)))
        ;; The REPL's own restarts, ABORT last.
        (should (agentq-dbg-restart-index dbg "[USE-VALUE]"))
        (should (agentq-dbg-restart-index dbg "[STORE-VALUE]"))
        (should (equal (sly-agent-q-debugger--abort-index)
                       (1- (length sly-agent-q-debugger--restarts))))
        ;; Emacs is not blocked meanwhile: this very loop runs, and the
        ;; REPL still waits.
        (should (buffer-local-value 'sly-agent-q-repl--job repl))
        (sly-agent-q-debugger-invoke-restart (agentq-dbg-restart-index dbg "[USE-VALUE]") "(* 6 7)"))
      (should-not (buffer-live-p dbg))
      (should (equal (agentq-dbg-wait-output repl start) "=> 43"))
      ;; USE-VALUE was for that evaluation only.
      (should (equal (agentq-test-content "(boundp 'agentq-dbg-unbound)") "=> NIL")))))

(ert-deftest sly-agent-q-debugger/store-value-and-a-failing-value ()
  (agentq-test-with-repl
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send "(list agentq-dbg-stored)"))
           (dbg (agentq-dbg-wait-debugger)))
      ;; A value whose form fails: the debugger asks again, saying why.
      (with-current-buffer dbg
        (sly-agent-q-debugger-invoke-restart (agentq-dbg-restart-index dbg "[STORE-VALUE]") "(car 5)"))
      (setq dbg (agentq-dbg-wait-debugger))
      (with-current-buffer dbg
        (should (string-match-p "The value could not be had (SIMPLE-TYPE-ERROR)" (buffer-string)))
        (sly-agent-q-debugger-invoke-restart (agentq-dbg-restart-index dbg "[STORE-VALUE]") ":kept"))
      (should (equal (agentq-dbg-wait-output repl start) "=> (:KEPT)"))
      (should (equal (agentq-test-content "agentq-dbg-stored") "=> :KEPT"))
      (agentq-test-eval-ok "(makunbound 'agentq-dbg-stored)"))))

(ert-deftest sly-agent-q-debugger/q-aborts-and-the-session-goes-on ()
  (agentq-test-with-repl
    (agentq-test-eval-ok "(defvar *agentq-dbg-kept* 17)")
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send "(progn (print :before) (agentq-dbg-no-such-function 1))"))
           (dbg (agentq-dbg-wait-debugger)))
      (with-current-buffer dbg
        (should (string-match-p "\\`UNDEFINED-FUNCTION" (buffer-string)))
        (call-interactively (key-binding "q")))
      (should-not (buffer-live-p dbg))
      (let ((output (agentq-dbg-wait-output repl start)))
        (should (string-match-p "; Evaluation aborted on UNDEFINED-FUNCTION" output))
        ;; What the form printed before the error is kept.
        (should (string-match-p ":BEFORE" output)))
      (with-current-buffer repl
        (let ((next (agentq-dbg-send "(+ *agentq-dbg-kept* 1)")))
          (should (equal (agentq-dbg-wait-output repl next) "=> 18")))))))

(ert-deftest sly-agent-q-debugger/the-codes-own-restarts-and-a-digit ()
  (agentq-test-with-repl
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send "(restart-case (error \"agentq boom\")
  (agentq-try-again () :report \"Agentq's own restart\" (list :seven))
  (agentq-other () :report \"Another\" (list :other)))"))
           (dbg (agentq-dbg-wait-debugger)))
      (with-current-buffer dbg
        (should (string-match-p "\\`SIMPLE-ERROR: agentq boom" (buffer-string)))
        (should (string-match-p "^ 0: \\[AGENTQ-TRY-AGAIN\\] Agentq's own restart$" (buffer-string)))
        (should (string-match-p "^ 1: \\[AGENTQ-OTHER\\] Another$" (buffer-string)))
        (should (string-match-p "^ 2: \\[ABORT\\] Return to the REPL's prompt" (buffer-string)))
        ;; Neither USE-VALUE nor STORE-VALUE: no unbound variable here;
        ;; nor the runtime's restarts outside the form.
        (should (= (length sly-agent-q-debugger--restarts) 3))
        ;; RET anywhere on a restart's line chooses it.
        (goto-char (point-min))
        (search-forward " 1: ")
        (beginning-of-line)
        (should (= (sly-agent-q-debugger--restart-on-line) 1))
        (let ((last-command-event ?\r)) (call-interactively (key-binding (kbd "RET")))))
      (should (equal (agentq-dbg-wait-output repl start) "=> (:OTHER)")))))

(ert-deftest sly-agent-q-debugger/never-for-a-tool-call ()
  ;; evaluate_lisp called as a tool (synchronously, asynchronously as the
  ;; chat calls it, and over MCP) keeps the contract's [ERROR] text.
  (when (get-buffer sly-agent-q-debugger-buffer-name) (kill-buffer sly-agent-q-debugger-buffer-name))
  (should (string-prefix-p "[ERROR] UNBOUND-VARIABLE" (agentq-test-content "agentq-dbg-tool-unbound")))
  (let ((results nil))
    (sly-agent-q-execute-tool-calls-async
     (list (list :id "t" :name "evaluate_lisp" :arguments (list :code "(agentq-dbg-tool-undefined)")))
     (lambda (r) (setq results r)))
    (let ((deadline (+ (float-time) 20)))
      (while (and (null results) (< (float-time) deadline)) (accept-process-output nil 0.02)))
    (should (string-prefix-p "[ERROR] UNDEFINED-FUNCTION" (plist-get (car results) :content))))
  (let ((response (json-parse-string
                   (sly-agent-q-mcp-request
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"evaluate_lisp\",\"arguments\":{\"code\":\"(error \\\"agentq mcp\\\")\"}}}")
                   :object-type 'plist)))
    (should (eq (plist-get (plist-get response :result) :isError) t)))
  (should-not (get-buffer sly-agent-q-debugger-buffer-name)))

(ert-deftest sly-agent-q-debugger/killing-the-buffer-aborts ()
  (agentq-test-with-repl
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send "(error \"agentq killed\")"))
           (dbg (agentq-dbg-wait-debugger)))
      (let ((kill-buffer-query-functions nil)) (kill-buffer dbg))
      (should (string-match-p "; Evaluation aborted on SIMPLE-ERROR: agentq killed"
                              (agentq-dbg-wait-output repl start))))))

(ert-deftest sly-agent-q-debugger/interrupting-the-repl-while-it-asks ()
  (agentq-test-with-repl
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send "(error \"agentq waiting\")")))
      (agentq-dbg-wait-debugger)
      (sly-agent-q-repl-interrupt)
      (should (string-match-p "agentq waiting\\|INTERRUPTED" (agentq-dbg-wait-output repl start)))
      ;; The debugger closes: nothing waits for it any more.
      (let ((deadline (+ (float-time) 5)))
        (while (and (get-buffer sly-agent-q-debugger-buffer-name) (< (float-time) deadline))
          (accept-process-output nil 0.05)))
      (should-not (get-buffer sly-agent-q-debugger-buffer-name))
      (let ((next (agentq-dbg-send "(+ 1 2)")))
        (should (equal (agentq-dbg-wait-output repl next) "=> 3"))))))

(ert-deftest sly-agent-q-debugger/break-and-cerror-continue ()
  (agentq-test-with-repl
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send "(list (break \"agentq hi\") (cerror \"Go on anyway\" \"agentq cerror\") :after)"))
           (dbg (agentq-dbg-wait-debugger)))
      (with-current-buffer dbg
        (should (string-match-p "\\`SIMPLE-CONDITION: agentq hi" (buffer-string)))
        (should (string-match-p "^ 0: \\[CONTINUE\\] Return from BREAK" (buffer-string)))
        ;; The digit 0, as typed.
        (let ((last-command-event ?0)) (call-interactively (key-binding "0"))))
      (setq dbg (agentq-dbg-wait-debugger))
      (with-current-buffer dbg
        (should (string-match-p "^ 0: \\[CONTINUE\\] Go on anyway$" (buffer-string)))
        (sly-agent-q-debugger-invoke-restart 0))
      (should (equal (agentq-dbg-wait-output repl start) "=> (NIL NIL :AFTER)")))))

(ert-deftest sly-agent-q-debugger/the-time-limit-waits-for-the-person ()
  ;; A 1 s limit; the person takes 1.5 s to choose: no TIMEOUT, the
  ;; evaluation goes on with the value.  Set as a person sets it (the
  ;; REPL's own calls, its input's check among them, give the module the
  ;; options as they are).
  (unwind-protect
      (agentq-test-with-repl
        (setq sly-agent-q-eval-timeout 1)
        ;; The limit is in force: Lisp's own 1.5 s is too long.
        (let ((start (agentq-dbg-send "(sleep 1.5)")))
          (should (string-match-p "TIMEOUT" (agentq-dbg-wait-output (current-buffer) start))))
        (let* ((repl (current-buffer))
               (start (agentq-dbg-send "(progn (defun agentq-dbg-inner (x) (+ x agentq-dbg-late))
  (defun agentq-dbg-outer (x) (* 2 (agentq-dbg-inner x)))
  (agentq-dbg-outer 1))"))
               (dbg (agentq-dbg-wait-debugger)))
          (let ((deadline (+ (float-time) 1.5)))
            (while (< (float-time) deadline) (accept-process-output nil 0.05)))
          (with-current-buffer dbg
            ;; The frames of the user's functions, innermost first.
            (should (string-match-p "Backtrace:\n  0: (AGENTQ-DBG-INNER)\n  1: (AGENTQ-DBG-OUTER)" (buffer-string)))
            (sly-agent-q-debugger-invoke-restart (agentq-dbg-restart-index dbg "[USE-VALUE]") "20"))
          (should (equal (agentq-dbg-wait-output repl start) "=> 42"))))
    (setq sly-agent-q-eval-timeout (eval (car (get 'sly-agent-q-eval-timeout 'standard-value)) t))
    (sly-agent-q--sync-options)))

(ert-deftest sly-agent-q-debugger/c-c-c-c-stops-in-the-debugger-and-continue-resumes ()
  "C-c C-c in the REPL stops the running form in the debugger, as in SLY:
CONTINUE lets it go on from where it was, ABORT (q) goes back to the
prompt; the session works after either."
  (agentq-test-with-repl
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send
                   "(let ((n 0) (end (+ (get-internal-real-time) (* 1 internal-time-units-per-second))))
                      (loop until (> (get-internal-real-time) end) do (incf n))
                      (list :resumed (plusp n)))")))
      (sleep-for 0.2)
      (call-interactively (key-binding (kbd "C-c C-c")))
      (let ((dbg (agentq-dbg-wait-debugger)))
        (should (eq (window-buffer (selected-window)) dbg))
        (with-current-buffer dbg
          (should (derived-mode-p 'sly-agent-q-debugger-mode))
          (should (string-match-p "\\`AGENT-Q::REPL-INTERRUPT: Interrupted by C-c C-c in the REPL" (buffer-string)))
          (should (string-match-p "^ 0: \\[CONTINUE\\] Continue the evaluation from where it was interrupted"
                                  (buffer-string)))
          (should (string-match-p "\\[ABORT\\] Return to the REPL's prompt" (buffer-string)))
          ;; The evaluation waits meanwhile: it has not answered.
          (with-current-buffer repl (should sly-agent-q-repl--job))
          (let ((last-command-event ?0)) (call-interactively (key-binding "0")))))
      (should (equal (agentq-dbg-wait-output repl start) "=> (:RESUMED T)")))
    ;; ABORT after C-c C-c on a (loop).
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send "(loop)")))
      (sleep-for 0.1)
      (sly-agent-q-repl-interrupt)
      (let ((dbg (agentq-dbg-wait-debugger)))
        (with-current-buffer dbg (call-interactively (key-binding "q"))))
      (should (string-match-p "; Evaluation aborted on AGENT-Q::REPL-INTERRUPT: Interrupted by C-c C-c" (agentq-dbg-wait-output repl start)))
      (should-not (get-buffer sly-agent-q-debugger-buffer-name))
      (let ((next (agentq-dbg-send "(+ 1 2)")))
        (should (equal (agentq-dbg-wait-output repl next) "=> 3"))))))

(ert-deftest sly-agent-q-debugger/c-c-c-c-twice-aborts-an-evaluation-that-holds-interrupts-off ()
  "A form inside MP:WITHOUT-INTERRUPTS cannot stop in the debugger: the
first C-c C-c waits for a place to stop it, the second aborts it (when it
lets interrupts in), and the first does not stop it later either."
  (agentq-test-with-repl
    (let* ((repl (current-buffer))
           (start (agentq-dbg-send
                   "(mp:without-interrupts
                      (let ((end (+ (get-internal-real-time) (* 1.5 internal-time-units-per-second))))
                        (loop until (> (get-internal-real-time) end))))
                    (sleep 0.5)
                    :not-aborted")))
      (sleep-for 0.2)
      (should (equal (call-interactively #'sly-agent-q-repl-interrupt)
                     "Interrupting: the debugger shows where"))
      (sleep-for 0.6)
      (should (equal (call-interactively #'sly-agent-q-repl-interrupt) "Interrupting..."))
      (let ((output (agentq-dbg-wait-output repl start)))
        (should (string-match-p "\\[ERROR\\] INTERRUPTED" output))
        (should-not (string-match-p "NOT-ABORTED" output)))
      ;; The interrupt shows with ABORT only; no REPL-INTERRUPT with CONTINUE.
      (let ((dbg (get-buffer sly-agent-q-debugger-buffer-name)))
        (should (buffer-live-p dbg))
        (with-current-buffer dbg
          (should-not (string-match-p "\\[CONTINUE\\]" (buffer-string)))
          (call-interactively (key-binding "q"))))
      (let ((next (agentq-dbg-send "(+ 1 2)")))
        (should (equal (agentq-dbg-wait-output repl next) "=> 3"))))))

(ert-deftest sly-agent-q-debugger/frames-show-locals-source-and-evaluate ()
  "In the backtrace, as in SLY: n/p move between frames, t shows a
bytecodes frame's locals, v its function's source line in the file it
was loaded from, e evaluates a form with the frame's locals (the
debugger stays, the value at its top)."
  (let ((file (make-temp-file "agentq-dbg-src" nil ".lisp"
                              "(defun agentq-dbg-src-inner (x)
  (let ((y (* x 2)))
    (error \"inner ~A\" y)))
(defun agentq-dbg-src-outer (a)
  (agentq-dbg-src-inner (+ a 1)))
")))
    (unwind-protect
        (progn
          ;; Bytecodes, which keep their locals: no native compile meanwhile.
          (let ((sly-agent-q-native-tiering nil)) (sly-agent-q--sync-options))
          (agentq-test-eval-ok (format "(progn (agent-q::load-source %S) (agent-q::xref-index-file %S t) t)" file file))
          (agentq-test-with-repl
            (let* ((repl (current-buffer))
                   (start (agentq-dbg-send "(agentq-dbg-src-outer 5)"))
                   (dbg (agentq-dbg-wait-debugger)))
              (with-current-buffer dbg
                (call-interactively #'sly-agent-q-debugger-next-frame)
                (should (looking-at-p "0: (AGENTQ-DBG-SRC-INNER)"))
                ;; t shows the locals, and hides them again.
                (call-interactively (key-binding "t"))
                (should (string-match-p "0: (AGENTQ-DBG-SRC-INNER)\n +Y = 12\n +X = 6\n +1: (AGENTQ-DBG-SRC-OUTER)"
                                        (buffer-string)))
                (call-interactively (key-binding "t"))
                (should (string-match-p "0: (AGENTQ-DBG-SRC-INNER)\n +1: (AGENTQ-DBG-SRC-OUTER)" (buffer-string)))
                ;; v: the source line of each frame's function.
                (call-interactively (key-binding "v"))
                (with-current-buffer (find-buffer-visiting file)
                  (should (= (line-number-at-pos (window-point (get-buffer-window))) 1)))
                (should (eq (current-buffer) dbg))
                (call-interactively (key-binding "n"))
                (should (looking-at-p "1: (AGENTQ-DBG-SRC-OUTER)"))
                (call-interactively (key-binding "v"))
                (with-current-buffer (find-buffer-visiting file)
                  (should (= (line-number-at-pos (window-point (get-buffer-window))) 4)))
                (call-interactively (key-binding "p"))
                (should (looking-at-p "0: (AGENTQ-DBG-SRC-INNER)"))
                ;; e: evaluated with the frame's locals; the debugger stays.
                (sly-agent-q-debugger-eval-in-frame "(list x y (+ x y))"))
              (should (eq (agentq-dbg-wait-debugger) dbg))
              (with-current-buffer dbg
                (should (string-match-p "^Frame 0: (list x y (\\+ x y)) => (6 12 18)$" (buffer-string)))
                ;; Point stays on the frame; an error in the form is a note too.
                (should (looking-at-p "0: (AGENTQ-DBG-SRC-INNER)"))
                (call-interactively #'sly-agent-q-debugger-next-frame)
                (sly-agent-q-debugger-eval-in-frame "(car a)"))
              (with-current-buffer (agentq-dbg-wait-debugger)
                (should (string-match-p "^Frame 1: evaluating (car a) failed: .*TYPE-ERROR" (buffer-string)))
                (call-interactively (key-binding "q")))
              (should (string-match-p "; Evaluation aborted on SIMPLE-ERROR: inner 12"
                                      (agentq-dbg-wait-output repl start)))))
          (let ((buffer (find-buffer-visiting file))) (when buffer (kill-buffer buffer))))
      (sly-agent-q--sync-options)
      (delete-file file))))

(ert-deftest sly-agent-q-debugger/i-inspects-a-local-and-the-condition-r-says-ecl-cannot ()
  "i on a frame inspects a form's value with the frame's locals (the
local on the line offered); off the frames, the condition.  The
evaluation holds the worker, so the inspector drills into parts through
the debugger: a part that came back at all came that way.  r says in
the echo area that ECL cannot restart a frame, and changes nothing."
  (let ((file (make-temp-file "agentq-dbg-insp" nil ".lisp"
                              "(defun agentq-dbg-insp-inner (x)
  (let ((y (list x (* x 2))))
    (error \"inner ~A\" y)))
(defun agentq-dbg-insp-outer (a)
  (agentq-dbg-insp-inner (+ a 1)))
")))
    (unwind-protect
        (progn
          (let ((sly-agent-q-native-tiering nil)) (sly-agent-q--sync-options))
          (agentq-test-eval-ok (format "(progn (agent-q::load-source %S) t)" file))
          (when (get-buffer sly-agent-q-inspector-buffer-name) (kill-buffer sly-agent-q-inspector-buffer-name))
          (agentq-test-with-repl
            (let* ((repl (current-buffer))
                   (start (agentq-dbg-send "(agentq-dbg-insp-outer 5)"))
                   (dbg (agentq-dbg-wait-debugger)))
              (with-current-buffer dbg
                (call-interactively #'sly-agent-q-debugger-next-frame)
                (should (looking-at-p "0: (AGENTQ-DBG-INSP-INNER)"))
                ;; The local offered: the frame's first, or the one on the line.
                (should (equal (sly-agent-q-debugger--local-at-point) "Y"))
                (call-interactively (key-binding "t"))
                (forward-line 2)
                (should (equal (sly-agent-q-debugger--local-at-point) "X"))
                (forward-line -2)
                (cl-letf (((symbol-function 'read-from-minibuffer)
                           (lambda (_prompt initial &rest _) initial)))
                  (call-interactively (key-binding "i"))))
              (agentq-inspector-test-wait-for (lambda () sly-agent-q-inspector--page))
              (should (equal (agentq-inspector-test-title) "(6 12)"))
              (with-current-buffer sly-agent-q-inspector-buffer-name
                (should (string-match-p "A proper list of 2 elements" (buffer-string))))
              ;; The debugger still waits, unchanged.
              (should (buffer-local-value 'sly-agent-q-debugger--key dbg))
              (should (buffer-local-value 'sly-agent-q-repl--job repl))
              ;; Off the frames: the condition.
              (with-current-buffer dbg
                (goto-char (point-min))
                (let ((old (with-current-buffer sly-agent-q-inspector-buffer-name sly-agent-q-inspector--page)))
                  (call-interactively (key-binding "i"))
                  (agentq-inspector-test-wait-for (lambda () (not (eq sly-agent-q-inspector--page old))))))
              (with-current-buffer sly-agent-q-inspector-buffer-name
                (should (string-match-p "An instance of SIMPLE-ERROR" (buffer-string)))
                (should (string-match-p "SIMPLE-ERROR" (agentq-inspector-test-title))))
              ;; Drilling into a part: through the waiting evaluation.
              (agentq-inspector-test-press "RET" "FORMAT-ARGUMENTS")
              (should (equal (agentq-inspector-test-title) "((6 12))"))
              (agentq-inspector-test-press "RET" "0")
              (should (equal (agentq-inspector-test-title) "(6 12)"))
              (agentq-inspector-test-press "l" nil)
              (should (equal (agentq-inspector-test-title) "((6 12))"))
              ;; A form that fails: the debugger says why, in its note.
              (with-current-buffer dbg
                (goto-char (point-min))
                (call-interactively #'sly-agent-q-debugger-next-frame)
                (sly-agent-q-debugger-inspect "(car x)"))
              (with-current-buffer (agentq-dbg-wait-debugger)
                (should (string-match-p "^Frame 0: evaluating (car x) failed: .*TYPE-ERROR" (buffer-string)))
                ;; r: ECL cannot; said in the echo area, nothing sent.
                (let ((key sly-agent-q-debugger--key)
                      (err (should-error (call-interactively (key-binding "r")) :type 'user-error)))
                  (should (string-match-p "ECL cannot restart a frame" (error-message-string err)))
                  (should (string-match-p "(e)" (error-message-string err)))
                  (should (eq sly-agent-q-debugger--key key)))
                (should (string-match-p "Say that ECL cannot restart the frame"
                                        (documentation (key-binding "r"))))
                (call-interactively (key-binding "q")))
              (should (string-match-p "; Evaluation aborted on SIMPLE-ERROR: inner (6 12)"
                                      (agentq-dbg-wait-output repl start))))))
      (sly-agent-q--sync-options)
      (when (get-buffer sly-agent-q-inspector-buffer-name) (kill-buffer sly-agent-q-inspector-buffer-name))
      (delete-file file))))

(provide 'sly-agent-q-debugger-test)

;;; sly-agent-q-debugger-test.el ends here
