;;; sly-agent-q-inspector-test.el --- The inspector: drill in, back, forward, refresh -*- lexical-binding: t; -*-

;;; Commentary:

;; Issue "A newcomer's first hour": `C-c C-v i' and RET on a REPL value gave a
;; describe dump that could not be drilled into.  Now they open
;; *sly-agent-q inspector*, whose parts are buttons.  The keys are pressed
;; as the person presses them (`execute-kbd-macro' in the buffer).

;;; Code:

(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-inspector)
(require 'sly-agent-q-lisp-mode)

(defun agentq-inspector-test-wait-for (predicate)
  "Wait (at most 20 s) until PREDICATE, called in the inspector buffer, is true."
  (let ((deadline (+ (float-time) 20)) (done nil))
    (while (and (not done) (< (float-time) deadline))
      (setq done (let ((buffer (get-buffer sly-agent-q-inspector-buffer-name)))
                   (and buffer (with-current-buffer buffer (funcall predicate)))))
      (unless done (accept-process-output nil 0.02)))
    (should done)))

(defun agentq-inspector-test-title ()
  "The first line of the inspector, the object printed."
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (save-excursion (goto-char (point-min)) (buffer-substring-no-properties (point) (line-end-position)))))

(defun agentq-inspector-test-press (keys label)
  "In the inspector, go to the part LABEL (nil: stay) and press KEYS; wait for a new page."
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (let ((before (plist-get sly-agent-q-inspector--page :id))
          (old-page sly-agent-q-inspector--page))
      (when label
        (goto-char (point-min))
        (should (re-search-forward (concat "^  " (regexp-quote label) " +") nil t)))
      (execute-kbd-macro (kbd keys))
      (ignore before)
      (agentq-inspector-test-wait-for (lambda () (not (eq sly-agent-q-inspector--page old-page)))))))

(ert-deftest sly-agent-q-inspector/drill-from-a-list-to-a-slot-to-a-hash-entry ()
  "C-c C-v i on a list; RET on its element (a structure), on its slot (a hash
table), on its entry; `l' back, `n' forward, `g' shows the object as it is now."
  (agentq-test-eval-ok "(defstruct agentq-ipt x y)
                        (defparameter *agentq-ih* (make-hash-table :test 'equal))
                        (setf (gethash \"key\" *agentq-ih*) (list :deep 42))
                        (defparameter *agentq-il* (list 1 (make-agentq-ipt :x *agentq-ih* :y 'a) \"s\"))")
  (when (get-buffer sly-agent-q-inspector-buffer-name) (kill-buffer sly-agent-q-inspector-buffer-name))
  (with-temp-buffer
    (lisp-mode)
    (sly-agent-q-inspect "*agentq-il*"))
  (agentq-inspector-test-wait-for (lambda () sly-agent-q-inspector--page))
  (should (string-prefix-p "(1 #S(AGENTQ-IPT" (agentq-inspector-test-title)))
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (should (derived-mode-p 'sly-agent-q-inspector-mode))
    (should (string-match-p "A proper list of 3 elements" (buffer-string))))
  (agentq-inspector-test-press "RET" "1")
  (should (string-prefix-p "#S(AGENTQ-IPT" (agentq-inspector-test-title)))
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (should (string-match-p "An instance of AGENTQ-IPT" (buffer-string)))
    (should (string-match-p "^  Y +A$" (buffer-string))))
  (agentq-inspector-test-press "RET" "X")
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (should (string-match-p "A hash table (EQUAL) of 1 entry" (buffer-string))))
  (agentq-inspector-test-press "RET" "\"key\"")
  (should (equal (agentq-inspector-test-title) "(:DEEP 42)"))
  ;; Back to the table, forward to the entry again.
  (agentq-inspector-test-press "l" nil)
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (should (string-match-p "A hash table" (buffer-string))))
  (agentq-inspector-test-press "n" nil)
  (should (equal (agentq-inspector-test-title) "(:DEEP 42)"))
  ;; The object changes in the session; g shows it as it is now.
  (agentq-test-eval-ok "(setf (second (gethash \"key\" *agentq-ih*)) 43)")
  (agentq-inspector-test-press "g" nil)
  (should (equal (agentq-inspector-test-title) "(:DEEP 43)"))
  ;; Inspecting leaves the REPL's history alone.
  (agentq-test-eval-ok ":agentq-marker")
  (agentq-inspector-test-press "g" nil)
  (should (equal (agentq-test-eval-ok "*") "=> :AGENTQ-MARKER"))
  ;; q leaves the inspector.
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (should (eq (key-binding (kbd "q")) 'quit-window))
    (should (string-match-p "back" (format "%s" header-line-format)))))

(ert-deftest sly-agent-q-inspector/symbols-functions-and-errors ()
  "A symbol's parts lead to its function; a failing form says why."
  (when (get-buffer sly-agent-q-inspector-buffer-name) (kill-buffer sly-agent-q-inspector-buffer-name))
  (sly-agent-q-inspector-show "'mapcar")
  (agentq-inspector-test-wait-for (lambda () sly-agent-q-inspector--page))
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (should (string-match-p "A symbol of COMMON-LISP" (buffer-string))))
  (agentq-inspector-test-press "RET" "function")
  (with-current-buffer sly-agent-q-inspector-buffer-name
    (should (string-match-p "lambda list +(FUNCTION LIST &REST" (buffer-string))))
  (let ((shown nil))
    (cl-letf (((symbol-function 'message) (lambda (&rest args) (setq shown (apply #'format args)))))
      (sly-agent-q-inspector-show "(error \"no such thing\")")
      (let ((deadline (+ (float-time) 20)))
        (while (and (null shown) (< (float-time) deadline)) (accept-process-output nil 0.02))))
    (should (string-match-p "ERROR" shown))))

(ert-deftest sly-agent-q-inspector/inspect-object-drills-for-a-model ()
  "inspect_object, called by an agent, asks nothing and runs no code of
the object's: from a symbol's value (a list) to a structure's slot to a
hash table's entry, by path and then by id; bad starts and labels say
what is wrong."
  (agentq-test-eval-ok "(defstruct agentq-insp-pt x y)
    (defparameter *agentq-insp-data*
      (list 1 (make-agentq-insp-pt :x (let ((h (make-hash-table :test 'equal)))
                                        (setf (gethash \"key\" h) (list :found 42)) h)
                                   :y 2)))")
  (let* ((sly-agent-q-call-origin "chat")
         (sly-agent-q-approval-function #'agentq-test-fail-if-asked))
    (let ((page (agentq-test-tool-ok "inspect_object" '(:symbol "*agentq-insp-data*" :path ["value"]))))
      (should (string-match-p "\\`Object [0-9]+: (1 #S(AGENTQ-INSP-PT " page))
      (should (string-match-p "^A proper list of 2 elements$" page))
      (should (string-match-p "^  0 = 1$" page))
      (should (string-match-p "^  1 = #S(AGENTQ-INSP-PT .*\\[id \\([0-9]+\\)\\]$" page)))
    (let* ((slot (agentq-test-tool-ok "inspect_object" '(:symbol "*agentq-insp-data*" :path ["value" 1 "x"])))
           (id (and (string-match "^  \"key\" = (:FOUND 42) \\[id \\([0-9]+\\)\\]$" slot)
                    (string-to-number (match-string 1 slot)))))
      (should (string-match-p "^A hash table (EQUAL) of 1 entry$" slot))
      (should id)
      ;; The entry's value by its id, then one step further by path.
      (should (string-match-p "^  1 = 42$" (agentq-test-tool-ok "inspect_object" (list :id id))))
      (should (string-match-p "\\`Object [0-9]+: 42\n"
                              (agentq-test-tool-ok "inspect_object" (list :id id :path ["1"])))))
    (dolist (case '(((:symbol "*agentq-insp-data*" :path ["value" 1 "z"]) . "has no part \"z\" to inspect\\. Its parts: X, Y\\.")
                    ((:id 987654321) . "No inspected object has the id 987654321")
                    ((:symbol "agentq-no-such-symbol") . "Symbol AGENTQ-NO-SUCH-SYMBOL not found")
                    (() . "Give \"id\"")))
      (let ((result (agentq-test-call "inspect_object" (car case))))
        (should-not (plist-get result :success))
        (should (string-match-p (cdr case) (plist-get result :content))))))
  ;; Looking up a name interned nothing.
  (should (equal (agentq-test-eval-ok "(find-symbol \"AGENTQ-NO-SUCH-SYMBOL\")") "=> NIL\n=> NIL")))

(provide 'sly-agent-q-inspector-test)
;;; sly-agent-q-inspector-test.el ends here
