;;; sly-agent-q-held-errors-test.el --- evaluate_lisp with debug: held errors -*- lexical-binding: t; -*-

;; An unhandled error of an evaluation made with debug: true stays live:
;; the call answers at once with the condition id, the restarts and the
;; frames; invoke_restart goes on from where it stopped, backtrace and
;; eval_in_frame look at the frames; the worker serves other calls
;; meanwhile; held errors are bounded in time and number.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'sly-agent-q-test-helpers)

(defun agentq-held-eval (code)
  "Evaluate CODE with debug: true; assert it is held; return (ID . CONTENT)."
  (let* ((result (agentq-test-eval code :debug t))
         (content (plist-get result :content))
         (id (plist-get (plist-get result :metadata) :condition_id)))
    (should (eq (plist-get result :success) nil))
    (should (integerp id))
    (should (string-match-p (format "\\`\\[ERROR\\] [^\n]* (held: condition %d)" id) content))
    (cons id content)))

(defun agentq-held-forget-all ()
  "Abort every held error, so that the next test starts with none."
  (agentq-test-eval-ok
   "(dolist (h (mp:with-lock (agent-q::*held-errors-lock*) (copy-list agent-q::*held-errors*)))
      (agent-q::send-held-command h '(:abort \"test cleanup\")))")
  (let ((deadline (+ (float-time) 10)))
    (while (and (< (float-time) deadline)
                (not (string= (plist-get (agentq-test-eval "(length agent-q::*held-errors*)") :content) "=> 0")))
      (sleep-for 0.05))))

(ert-deftest sly-agent-q-held-errors/use-a-restart-and-get-the-rest-of-the-result ()
  (unwind-protect
      (let* ((held (agentq-held-eval
                    "(progn (print :before) (list :got (restart-case (error \"boom\") (use-it (v) :report \"Use a value\" v))))"))
             (id (car held)))
        (should (string-match-p "^boom$" (cdr held)))
        (should (string-match-p "\\[Restarts\\]\n0: \\[USE-IT\\] Use a value" (cdr held)))
        ;; The worker is free while the error is held.
        (should (equal (agentq-test-content "(+ 1 2)") "=> 3"))
        (let ((result (agentq-test-call "invoke_restart" (list :condition_id id :restart "USE-IT" :values "42"))))
          (should (eq (plist-get result :success) t))
          ;; The rest of the evaluation's result, its output included.
          (should (string-match-p ":BEFORE" (plist-get result :content)))
          (should (string-match-p "=> (:GOT 42)\\'" (plist-get result :content))))
        ;; Answered: no longer held.
        (should (string-match-p (format "No error is held as condition %d" id)
                                (plist-get (agentq-test-call "invoke_restart" (list :condition_id id :restart "0"))
                                           :content))))
    (agentq-held-forget-all)))

(ert-deftest sly-agent-q-held-errors/by-number-abort-and-a-second-error ()
  (unwind-protect
      (let* ((id (car (agentq-held-eval "(restart-case (error \"first\") (again () (error \"second\")))")))
             ;; The restart lets it go on; it stops at the next error, held too.
             (result (agentq-test-call "invoke_restart" (list :condition_id id :restart "0")))
             (second (plist-get (plist-get result :metadata) :condition_id)))
        (should (eq (plist-get result :success) nil))
        (should (string-match-p "^second$" (plist-get result :content)))
        (should (string-match-p (format "(held: condition %d)" (1+ id)) (plist-get result :content)))
        ;; ABORT, always there, ends it.
        (should (string-match-p "aborted"
                                (plist-get (agentq-test-call "invoke_restart" (list :condition_id (1+ id) :restart "ABORT"))
                                           :content)))
        (ignore second)
        (should (equal (agentq-test-content "(+ 1 2)") "=> 3")))
    (agentq-held-forget-all)))

(ert-deftest sly-agent-q-held-errors/five-at-once-the-worker-serves-the-oldest-goes ()
  (unwind-protect
      (let ((ids (cl-loop for i below 5
                          collect (car (agentq-held-eval (format "(error \"held %d\")" i))))))
        (should (equal (agentq-test-content "(+ 1 2)") "=> 3"))
        ;; The runtime's status counts the threads that hold one (the
        ;; oldest's ends as it unwinds).
        (let ((deadline (+ (float-time) 5)))
          (while (and (/= (plist-get (sly-agent-q-runtime-status) :held-errors) 4)
                      (< (float-time) deadline))
            (sleep-for 0.05)))
        (should (= (plist-get (sly-agent-q-runtime-status) :held-errors) 4))
        ;; At most four: the oldest was aborted to make room.
        (should (string-match-p "No error is held"
                                (plist-get (agentq-test-call "backtrace" (list :condition_id (car ids))) :content)))
        (should (string-match-p "held 4"
                                (plist-get (agentq-test-call "backtrace" (list :condition_id (car (last ids)))) :content))))
    (agentq-held-forget-all))
  (should (equal (agentq-test-content "(+ 1 2)") "=> 3")))

(ert-deftest sly-agent-q-held-errors/nobody-answers-it-is-aborted-after-the-timeout ()
  (unwind-protect
      (progn
        (agentq-test-eval-ok "(setf agent-q::*held-error-timeout* 1)")
        (let ((id (car (agentq-held-eval "(error \"forgotten\")"))))
          (sleep-for 2.5)
          (should (string-match-p "No error is held"
                                  (plist-get (agentq-test-call "backtrace" (list :condition_id id)) :content)))
          (should (equal (agentq-test-content "(+ 1 2)") "=> 3"))))
    (agentq-test-eval-ok "(setf agent-q::*held-error-timeout* 300)")
    (agentq-held-forget-all)))

(ert-deftest sly-agent-q-held-errors/backtrace-locals-and-eval-in-frame ()
  (unwind-protect
      (progn
        ;; Bytecodes, which keep their locals: no native compile meanwhile.
        (let ((sly-agent-q-native-tiering nil)) (sly-agent-q--sync-options))
        (agentq-test-eval-ok "(defun agentq-held-inner (x) (let ((y (* x 2))) (error \"inner ~A\" y)))")
        (agentq-test-eval-ok "(defun agentq-held-outer (a) (agentq-held-inner (+ a 1)))")
        (let* ((id (car (agentq-held-eval "(agentq-held-outer 5)")))
               (trace (plist-get (agentq-test-call "backtrace" (list :condition_id id)) :content)))
          (should (string-match-p "0: (AGENTQ-HELD-INNER)\n +Y = 12\n +X = 6" trace))
          (should (string-match-p "1: (AGENTQ-HELD-OUTER)\n +A = 5" trace))
          (should (equal (plist-get (agentq-test-call "eval_in_frame" (list :condition_id id :frame 0 :code "(+ x y)"))
                                    :content)
                         "Frame 0: (+ x y) => 18"))
          ;; A frame evaluation that never ends is stopped with its call.
          (let* ((sly-agent-q-eval-timeout 2)
                 (result (agentq-test-call "eval_in_frame" (list :condition_id id :frame 1 :code "(loop)"))))
            (should (string-match-p "TIMEOUT" (plist-get result :content))))
          (should (equal (plist-get (agentq-test-call "eval_in_frame" (list :condition_id id :frame 1 :code "a"))
                                    :content)
                         "Frame 1: a => 5"))))
    (let ((sly-agent-q-native-tiering t)) (sly-agent-q--sync-options))
    (agentq-held-forget-all)))

(ert-deftest sly-agent-q-held-errors/an-agent-is-asked-about-what-the-restart-runs ()
  "invoke_restart's values and eval_in_frame's code run code: from an
agent's door they follow evaluate_lisp's approval policy."
  (unwind-protect
      (let* ((id (car (agentq-held-eval "(restart-case (error \"boom\") (use-it (v) v))")))
             (file (make-temp-file "agentq-held-gate"))
             (asked nil))
        (delete-file file)
        (let ((sly-agent-q-call-origin "MCP")
              (sly-agent-q-approval-function (lambda (&rest question) (push question asked) :denied)))
          (let ((result (agentq-test-call "invoke_restart"
                                          (list :condition_id id :restart "USE-IT"
                                                :values (format "(with-open-file (s %S :direction :output) (print 1 s))" file)))))
            (should (eq (plist-get result :success) nil))
            (should (string-match-p "DENIED" (plist-get result :content))))
          (let ((result (agentq-test-call "eval_in_frame"
                                          (list :condition_id id :frame 0
                                                :code (format "(with-open-file (s %S :direction :output) (print 1 s))" file)))))
            (should (string-match-p "DENIED" (plist-get result :content)))))
        (should (= (length asked) 2))
        (should-not (file-exists-p file))
        ;; Reading asks nothing; a plain value neither.
        (let ((sly-agent-q-call-origin "MCP")
              (sly-agent-q-approval-function #'agentq-test-fail-if-asked))
          (should (plist-get (agentq-test-call "backtrace" (list :condition_id id)) :success))
          (should (string-match-p "=> 7\\'" (plist-get (agentq-test-call "invoke_restart"
                                                                         (list :condition_id id :restart "USE-IT" :values "7"))
                                                      :content)))))
    (agentq-held-forget-all)))

(ert-deftest sly-agent-q-held-errors/without-debug-nothing-is-held ()
  (let ((result (agentq-test-eval "(restart-case (error \"boom\") (use-it (v) v))")))
    (should-not (plist-get (plist-get result :metadata) :condition_id))
    (should (string-match-p "\\[Restarts\\]\n0: \\[USE-IT\\]" (plist-get result :content)))
    (should-not (string-match-p "held" (plist-get result :content)))))

(ert-deftest sly-agent-q-held-errors/the-person-answers-the-agents-held-error-in-the-debugger ()
  "A model's held error shows in the debugger buffer; the person picks
the restart there (with a value); the model's next call about it says
what the person chose."
  (require 'sly-agent-q-debugger)
  (unwind-protect
      (let* ((id (let ((sly-agent-q-call-origin "MCP"))
                   (car (agentq-held-eval "(list :got (restart-case (error \"boom\") (use-it (v) :report \"Use a value\" v)))"))))
             (buffer (sly-agent-q-debugger-show-held id))
             (messages nil))
        (with-current-buffer buffer
          (should (eq sly-agent-q-debugger--held id))
          (should (string-match-p "\\`SIMPLE-ERROR: boom\nHeld for the agent as condition" (buffer-string)))
          (should (string-match-p " 0: \\[USE-IT\\] Use a value" (buffer-string)))
          ;; e: evaluated in the frame, shown at the top; the buffer stays.
          (cl-letf (((symbol-function 'message) (lambda (&rest args) (push (apply #'format args) messages))))
            (sly-agent-q-debugger-invoke-restart 0 "(* 6 7)")
            (let ((deadline (+ (float-time) 10)))
              (while (and (null messages) (< (float-time) deadline))
                (accept-process-output nil 0.05)))))
        (should (string-match-p (format "Condition %d: => (:GOT 42)" id) (car messages)))
        (should-not (buffer-live-p buffer))
        ;; The model's next call sees what became of it.
        (let ((sly-agent-q-call-origin "MCP"))
          (should (string-match-p (format "No error is held as condition %d (The user chose the restart USE-IT with 42.)" id)
                                  (plist-get (agentq-test-call "invoke_restart" (list :condition_id id :restart "0"))
                                             :content)))))
    (agentq-held-forget-all)))

(ert-deftest sly-agent-q-held-errors/the-chat-line-of-a-held-error-opens-the-debugger ()
  (require 'sly-agent-q-chat)
  (let ((record (list :call (list :name "evaluate_lisp" :arguments "{\"code\":\"(error 1)\",\"debug\":true}"))))
    (with-temp-buffer
      (setf (plist-get record :begin) (point-marker)
            (plist-get record :end) (point-marker))
      (set-marker-insertion-type (plist-get record :end) t)
      (sly-agent-q-chat--tool-finished record '(:success nil :content "[ERROR] SIMPLE-ERROR (held: condition 7)"
                                                         :metadata (:execution_time_ms 1.0 :condition_id 7)))
      (should (string-match-p "\\[held: condition 7 — RET opens the debugger\\]" (buffer-string)))
      (goto-char (point-min))
      (search-forward "[held: condition 7")
      (let (shown)
        (cl-letf (((symbol-function 'sly-agent-q-debugger-show-held) (lambda (id) (setq shown id))))
          (call-interactively (lookup-key (get-text-property (point) 'keymap) (kbd "RET"))))
        (should (equal shown 7))))))

(ert-deftest sly-agent-q-held-errors/i-inspects-a-held-frames-local-and-the-condition-r-cannot ()
  "In held mode, i inspects a form's value in a frame (eval_in_frame) and
off the frames the condition, in the inspector, which drills into parts
on the worker (free while the error is held); r says ECL cannot restart
a frame.  The error stays held throughout."
  (require 'sly-agent-q-debugger)
  (require 'sly-agent-q-inspector-test)
  (unwind-protect
      (progn
        (let ((sly-agent-q-native-tiering nil)) (sly-agent-q--sync-options))
        (agentq-test-eval-ok "(defun agentq-held-insp-inner (x) (let ((y (list x (* x 2)))) (error \"inner ~A\" y)))")
        (agentq-test-eval-ok "(defun agentq-held-insp-outer (a) (agentq-held-insp-inner (+ a 1)))")
        (when (get-buffer sly-agent-q-inspector-buffer-name) (kill-buffer sly-agent-q-inspector-buffer-name))
        (let* ((id (let ((sly-agent-q-call-origin "MCP"))
                     (car (agentq-held-eval "(agentq-held-insp-outer 5)"))))
               (buffer (sly-agent-q-debugger-show-held id)))
          (with-current-buffer buffer
            (call-interactively #'sly-agent-q-debugger-next-frame)
            (should (looking-at-p "0: (AGENTQ-HELD-INSP-INNER)"))
            (should (equal (sly-agent-q-debugger--local-at-point) "Y"))
            (cl-letf (((symbol-function 'read-from-minibuffer)
                       (lambda (_prompt initial &rest _) initial)))
              (call-interactively (key-binding "i"))))
          (agentq-inspector-test-wait-for (lambda () sly-agent-q-inspector--page))
          (should (equal (agentq-inspector-test-title) "(6 12)"))
          (with-current-buffer sly-agent-q-inspector-buffer-name
            (should (string-match-p "A proper list of 2 elements" (buffer-string))))
          ;; Off the frames: the condition.
          (with-current-buffer buffer
            (goto-char (point-min))
            (let ((old (with-current-buffer sly-agent-q-inspector-buffer-name sly-agent-q-inspector--page)))
              (call-interactively (key-binding "i"))
              (agentq-inspector-test-wait-for (lambda () (not (eq sly-agent-q-inspector--page old))))))
          (with-current-buffer sly-agent-q-inspector-buffer-name
            (should (string-match-p "An instance of SIMPLE-ERROR" (buffer-string))))
          (agentq-inspector-test-press "RET" "FORMAT-ARGUMENTS")
          (should (equal (agentq-inspector-test-title) "((6 12))"))
          ;; A form that fails: the debugger shows why, the error still held.
          (with-current-buffer buffer
            (goto-char (point-min))
            (call-interactively #'sly-agent-q-debugger-next-frame)
            (sly-agent-q-debugger-inspect "(car x)"))
          (with-current-buffer buffer
            (should (string-match-p "^Frame 0: inspecting (car x) failed: .*TYPE-ERROR" (buffer-string)))
            (let ((err (should-error (call-interactively (key-binding "r")) :type 'user-error)))
              (should (string-match-p "ECL cannot restart a frame" (error-message-string err)))))
          ;; Still held, as it was: the agent's restart goes on.
          (should (string-match-p "inner (6 12)"
                                  (plist-get (agentq-test-call "backtrace" (list :condition_id id)) :content)))
          (when (buffer-live-p buffer) (kill-buffer buffer))))
    (let ((sly-agent-q-native-tiering t)) (sly-agent-q--sync-options))
    (when (get-buffer sly-agent-q-inspector-buffer-name) (kill-buffer sly-agent-q-inspector-buffer-name))
    (agentq-held-forget-all)))

;;; sly-agent-q-held-errors-test.el ends here
