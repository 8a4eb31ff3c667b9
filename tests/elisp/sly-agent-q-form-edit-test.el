;;; sly-agent-q-form-edit-test.el --- edit_form and insert_form on real files -*- lexical-binding: t; -*-

;;; Commentary:

;; edit_form and insert_form against real files in temporary directories,
;; the real module and session: a method among several of one generic
;; function changed alone, the compiler's notes under the review's hunk,
;; one undo, the definition reloaded; a file full of Common Lisp syntax
;; that an Emacs Lisp reader would trip on; the refusals, which ask
;; nobody.

;;; Code:

(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-form-edit)

(defun agentq-fe--text (path)
  "The text of the file PATH."
  (with-temp-buffer (insert-file-contents path) (buffer-string)))

(defun agentq-fe--args (&rest plist)
  "PLIST as a tool's arguments, a hash table."
  (let ((args (make-hash-table :test 'equal)))
    (cl-loop for (key value) on plist by #'cddr
             do (puthash (substring (symbol-name key) 1) value args))
    args))

(defun agentq-fe--review (tool args marks)
  "Review the call of TOOL with ARGS, marking hunk I with (nth I MARKS).
Returns (ANSWER NOTES-TEXT HEADER): the approval answer, what is shown
under the first hunk, and the header line."
  (let ((buffer (sly-agent-q--form-edit-review-buffer tool args)))
    (with-current-buffer buffer
      (unwind-protect
          (let ((notes (mapconcat (lambda (overlay) (overlay-get overlay 'after-string))
                                  (cl-remove-if-not (lambda (overlay) (overlay-get overlay 'sly-agent-q-review-notes))
                                                    (overlays-in (point-min) (point-max)))
                                  ""))
                (header header-line-format))
            (cl-loop for mark in marks
                     for start in (sly-agent-q--hunk-starts)
                     do (goto-char start)
                        (pcase mark (?a (sly-agent-q-review-accept)) (?r (sly-agent-q-review-reject))))
            (list (sly-agent-q--form-edit-review-answer args buffer) notes header))
        (kill-buffer buffer)))))

(defun agentq-fe--call (tool args answer)
  "Call TOOL with ARGS (a hash table) from the chat's door, the approval answering ANSWER."
  (let ((sly-agent-q-call-origin "chat")
        (sly-agent-q-approval-function (lambda (_name _args) answer)))
    (agentq-test-call tool (let ((plist '()))
                             (maphash (lambda (key value) (setq plist (append plist (list (intern (concat ":" key)) value))))
                                      args)
                             plist))))

(defun agentq-fe--refused (tool &rest plist)
  "Call TOOL with PLIST from the chat's door, asking nobody; the failure's text."
  (let* ((sly-agent-q-call-origin "chat")
         (sly-agent-q-approval-function #'agentq-test-fail-if-asked)
         (result (agentq-test-call tool plist)))
    (should-not (plist-get result :success))
    (plist-get result :content)))

(defconst agentq-fe--shapes
  "(defpackage :agentq-fe (:use :cl))
(in-package :agentq-fe)

(defclass shape () ())
(defclass circle (shape) ((r :initarg :r :reader r)))
(defclass square (shape) ((side :initarg :side :initform 2 :reader side)))

(defgeneric area (shape))

(defmethod area ((c circle))
  (* pi (r c) (r c)))

(defmethod area ((s square))
  (* (side s) (side s)))

(defmethod area :around ((s shape))
  (call-next-method))

(defmethod area ((s (eql :unit)))
  1)
"
  "A generic function with four methods.")

(ert-deftest sly-agent-q-form-edit/one-method-among-several ()
  "edit_form of one defmethod: only it changes, the compiler's notes are
under the hunk before the decision, the file is saved, one undo takes it
back, and the new method runs in the session."
  (agentq-test-with-lisp-file (path agentq-fe--shapes)
    (agentq-test-eval-ok (format "(load %S)" path))
    (let* ((new "(defmethod area ((s square))\n  (list :new *agentq-fe-unit* (side s)))")
           (args (agentq-fe--args :path path :kind "defmethod" :name "area (square)" :new_source new)))
      ;; The review: one hunk, the undefined variable noted under it.
      (pcase-let ((`(,answer ,notes ,header) (agentq-fe--review "edit_form" args '(?a))))
        (should (string-match-p "STYLE-WARNING: Variable .*AGENTQ-FE-UNIT\\* was undefined" notes))
        (should (string-match-p "1 compiler note" header))
        (should (string-match-p "defmethod area (square)" header))
        (should (eq (car answer) :modified))
        ;; Checked and compiled, not accepted yet: nothing of it is in the session.
        (should (equal (agentq-test-eval-ok "(list (find-symbol \"*AGENTQ-FE-UNIT*\" \"AGENTQ-FE\") (agentq-fe::area (make-instance 'agentq-fe::square)))")
                       "=> (NIL 4)"))
        (with-current-buffer (find-file-noselect path)
          (buffer-enable-undo)
          (undo-boundary)
          (let ((content (plist-get (agentq-fe--call "edit_form" args answer) :content)))
            (should (string-prefix-p "accepted\nThe edit is applied to" content))
            (should (string-match-p "Compiler notes on the new form:\n  STYLE-WARNING: Variable" content))
            (should (string-match-p "Reloaded in the session:" content)))
          ;; Only that method changed, in the file and its buffer.
          (let ((expected (replace-regexp-in-string
                           (regexp-quote "(defmethod area ((s square))\n  (* (side s) (side s)))")
                           new agentq-fe--shapes t t)))
            (should-not (equal expected agentq-fe--shapes))
            (should (equal (agentq-fe--text path) expected))
            (should (equal (buffer-string) expected)))
          (should-not (buffer-modified-p))
          ;; The new method is the session's.
          (should (equal (agentq-test-eval-ok "(let ((agentq-fe::*agentq-fe-unit* 3)) (declare (special agentq-fe::*agentq-fe-unit*)) (agentq-fe::area (make-instance 'agentq-fe::square)))")
                         "=> (:NEW 3 2)"))
          (should (equal (agentq-test-eval-ok "(agentq-fe::area :unit)") "=> 1"))
          ;; One undo: the file's text as it was.
          (primitive-undo 1 (if (car buffer-undo-list) buffer-undo-list (cdr buffer-undo-list)))
          (should (equal (buffer-string) agentq-fe--shapes)))))
    (agentq-test-forget-systems '() '("AGENTQ-FE"))))

(ert-deftest sly-agent-q-form-edit/methods-by-qualifier-and-eql ()
  "A method is named by its qualifiers and specializers; (eql …) too."
  (agentq-test-with-lisp-file (path agentq-fe--shapes)
    (let ((sly-agent-q-allowed-directories (list (file-name-directory path))))
      (with-temp-buffer
        (insert agentq-fe--shapes)
        (set-syntax-table lisp-mode-syntax-table)
        (let ((forms (sly-agent-q--form-edit-forms)))
          (should (= (length forms) 10))
          (should (equal (sly-agent-q--form-kind (sly-agent-q--form-edit-find forms "defmethod" "area :around (shape)" path))
                         "defmethod"))
          (should (equal (sly-agent-q--form-specializers (sly-agent-q--form-edit-find forms "defmethod" "AGENTQ-FE::AREA ((EQL :UNIT))" path))
                         '("(eql :unit)")))
          (should (equal (sly-agent-q--form-package (sly-agent-q--form-edit-find forms "defclass" "square" path))
                         "AGENTQ-FE"))
          ;; (square) names the primary method only: not the :around one.
          (should (equal (sly-agent-q--form-specializers (sly-agent-q--form-edit-find forms "defmethod" "area (square)" path))
                         '("square"))))))))

(ert-deftest sly-agent-q-form-edit/a-reader-hostile-file ()
  "#| |# comments, #\\( and #\\), strings and |names| with parentheses,
#+ feature expressions: the forms are found where Common Lisp has them."
  (let ((text "#| (defun agentq-fe-h () :in-a-comment)
   #| nested |# (defun agentq-fe-h () :still) |#
(defun agentq-fe-open () #\\()
(defun agentq-fe-close () (list #\\) \")) (\" '|a ) b|))
#+agentq-fe-never (defun agentq-fe-h () :feature)
;; (defun agentq-fe-h () :line-comment)
(defun agentq-fe-h () \"(defun agentq-fe-h ()\" :the-one)
(defvar *agentq-fe-after* '(#\\( #\\)))
"))
    (agentq-test-with-lisp-file (path text)
      (let* ((new "(defun agentq-fe-h () :new)")
             (args (agentq-fe--args :path path :kind "defun" :name "agentq-fe-h" :new_source new)))
        ;; Two candidates: the #+ one and the real one.
        (should (string-match-p "2 top-level forms .* match defun agentq-fe-h.*\n  line 5: (defun agentq-fe-h) under #\\+agentq-fe-never\n  line 7: (defun agentq-fe-h)"
                                (agentq-fe--refused "edit_form" :path path :kind "defun" :name "agentq-fe-h" :new_source new)))
        ;; Without the #+ form: the one at line 7 only.
        (with-temp-file path (insert (replace-regexp-in-string "^#\\+agentq-fe-never .*\n" "" text)))
        (pcase-let ((`(,answer ,_notes ,_header) (agentq-fe--review "edit_form" args '(?a))))
          (should (string-prefix-p "accepted" (plist-get (agentq-fe--call "edit_form" args answer) :content))))
        (should (equal (agentq-fe--text path)
                       (replace-regexp-in-string
                        "^#\\+agentq-fe-never .*\n" ""
                        (replace-regexp-in-string (regexp-quote "(defun agentq-fe-h () \"(defun agentq-fe-h ()\" :the-one)")
                                                  new text t t))))
        (should (equal (agentq-test-eval-ok "(agentq-fe-h)") "=> :NEW"))
        (agentq-test-eval-ok "(fmakunbound 'agentq-fe-h)")))))

(ert-deftest sly-agent-q-form-edit/refusals-ask-nobody ()
  "Ambiguous, not found, unreadable new source, a path outside the roots,
a file that does not read, keys only the review sets: each fails before
anyone is asked, saying why."
  (agentq-test-with-lisp-file (path "(defmethod agentq-fe-g ((x integer)) x)\n(defmethod agentq-fe-g ((x string)) x)\n(defun agentq-fe-k () 1)\n")
    (let ((before (agentq-fe--text path)))
      (should (string-match-p "2 top-level forms of .* match defmethod agentq-fe-g.*\n  line 1: (defmethod agentq-fe-g (integer))\n  line 2: (defmethod agentq-fe-g (string))"
                              (agentq-fe--refused "edit_form" :path path :kind "defmethod" :name "agentq-fe-g" :new_source "(defmethod agentq-fe-g ((x integer)) 1)")))
      (should (string-match-p "No top-level (defun agentq-fe-nothing) in .*; nothing was proposed. Its defun forms:\n  line 3: (defun agentq-fe-k)"
                              (agentq-fe--refused "edit_form" :path path :kind "defun" :name "agentq-fe-nothing" :new_source "(defun agentq-fe-nothing () 2)")))
      (should (string-match-p "No top-level (defun agentq-fe-g) .* The forms named so:\n  line 1: (defmethod agentq-fe-g (integer))"
                              (agentq-fe--refused "edit_form" :path path :kind "defun" :name "agentq-fe-g" :new_source "(defun agentq-fe-g () 2)")))
      (should (string-match-p "does not read.*\n  line 1, column 1: this ( is never closed"
                              (agentq-fe--refused "edit_form" :path path :kind "defun" :name "agentq-fe-k" :new_source "(defun agentq-fe-k () 2")))
      (should (string-match-p "holds 2 top-level forms"
                              (agentq-fe--refused "edit_form" :path path :kind "defun" :name "agentq-fe-k" :new_source "(defun agentq-fe-k () 2) (defun agentq-fe-k2 () 3)")))
      (should (string-match-p "Access denied: .* outside the allowed directories"
                              (agentq-fe--refused "edit_form" :path "/etc/hostname" :kind "defun" :name "x" :new_source "(defun x ())")))
      (should (string-match-p "Access denied"
                              (agentq-fe--refused "insert_form" :path "../outside.lisp" :new_source "(defun x ())")))
      ;; The review's own arguments are no parameter: a model cannot pass them.
      (should (string-match-p "Unknown argument 'reviewed_lines' for edit_form"
                              (agentq-fe--refused "edit_form" :path path :kind "defun" :name "agentq-fe-k" :new_source "(defun agentq-fe-k () 2)" :reviewed_lines "x")))
      (should (string-match-p "after \"defun\" names no form"
                              (agentq-fe--refused "insert_form" :path path :new_source "(defun x ())" :after "defun")))
      (should (equal (agentq-fe--text path) before))
      (with-temp-file path (insert "(defun agentq-fe-k () 1)\n(defun agentq-fe-broken (\n"))
      (should (string-match-p "the form that begins at line 2 does not end"
                              (agentq-fe--refused "edit_form" :path path :kind "defun" :name "agentq-fe-k" :new_source "(defun agentq-fe-k () 2)"))))))

(ert-deftest sly-agent-q-form-edit/insert-after-a-form-and-at-the-end ()
  "insert_form after a named form, and at the end; the forms are defined."
  (agentq-test-with-lisp-file (path "(in-package :cl-user)\n(defun agentq-fe-a () 1)\n\n(defun agentq-fe-z () 26)\n")
    (let ((args (agentq-fe--args :path path :new_source "(defun agentq-fe-b () (1+ (agentq-fe-a)))" :after "defun agentq-fe-a")))
      (pcase-let ((`(,answer ,_notes ,_header) (agentq-fe--review "insert_form" args '(?a))))
        (should (string-prefix-p "accepted" (plist-get (agentq-fe--call "insert_form" args answer) :content)))))
    (should (equal (agentq-fe--text path)
                   "(in-package :cl-user)\n(defun agentq-fe-a () 1)\n\n(defun agentq-fe-b () (1+ (agentq-fe-a)))\n\n(defun agentq-fe-z () 26)\n"))
    (let ((args (agentq-fe--args :path path :new_source "(defun agentq-fe-end () :end)")))
      ;; Approved without a review (a standing rule): applied as proposed.
      (should (string-prefix-p "accepted" (plist-get (agentq-fe--call "insert_form" args :approved) :content))))
    (should (string-suffix-p "(defun agentq-fe-z () 26)\n\n(defun agentq-fe-end () :end)\n" (agentq-fe--text path)))
    (should (equal (agentq-test-eval-ok "(list (agentq-fe-end) (fboundp 'agentq-fe-b))") "=> (:END T)"))
    (agentq-test-eval-ok "(mapc #'fmakunbound '(agentq-fe-b agentq-fe-end))")))


(ert-deftest sly-agent-q-form-edit/partly-accepted-and-rejected-reviews ()
  "All hunks rejected: the rejection, the file unchanged.  Hunks accepted
that leave the form unreadable: nothing is applied, saying why.  The
other hunk alone, when it reads: partially accepted."
  (let* ((middle (mapconcat (lambda (n) (format "        %d\n" n)) (number-sequence 1 12) ""))
         (old (concat "(defun agentq-fe-long (x)\n  (list x\n" middle "        x))\n"))
         (new (concat "(defun agentq-fe-long (x)\n  (progn (list x\n" middle "        x)))\n")))
    (agentq-test-with-lisp-file (path old)
      (let ((args (agentq-fe--args :path path :kind "defun" :name "agentq-fe-long" :new_source new)))
        (pcase-let ((`(,answer ,_notes ,_header) (agentq-fe--review "edit_form" args '(?r ?r))))
          (should (eq answer :denied))
          (should (equal (plist-get (agentq-fe--call "edit_form" args answer) :content)
                         "rejected — STOP: do not retry this edit.")))
        (pcase-let ((`(,answer ,_notes ,_header) (agentq-fe--review "edit_form" args '(?a ?r))))
          (should (equal (gethash "hunks_applied" (cadr answer)) 1))
          (should (string-match-p "\\`Nothing was applied: the hunks accepted in the review make text that does not read:\n  line 1, column 1: this ( is never closed"
                                  (plist-get (agentq-fe--call "edit_form" args answer) :content))))
        (should (equal (agentq-fe--text path) old))
        ;; A change in two places that each read alone.
        (let ((args (agentq-fe--args :path path :kind "defun" :name "agentq-fe-long"
                                     :new_source (replace-regexp-in-string "(list x" "(list :a x"
                                                                           (replace-regexp-in-string "x))\n\\'" ":z))" old)))))
          (pcase-let ((`(,answer ,_notes ,_header) (agentq-fe--review "edit_form" args '(?a ?r))))
            (should (string-prefix-p "partially accepted: 1 of 2 hunks applied\n"
                                     (plist-get (agentq-fe--call "edit_form" args answer) :content)))))
        (should (equal (agentq-fe--text path) (replace-regexp-in-string "(list x" "(list :a x" old)))
        (agentq-test-eval-ok "(fmakunbound 'agentq-fe-long)")))))

(ert-deftest sly-agent-q-form-edit/a-buffer-with-unsaved-changes ()
  "The buffer visiting the file has unsaved changes: the form is found in
its text, edited there and left unsaved with the user's changes; the
file is untouched."
  (agentq-test-with-lisp-file (path "(defun agentq-fe-u1 () 1)\n(defun agentq-fe-u2 () 2)\n")
    (with-current-buffer (find-file-noselect path)
      (goto-char (point-min))
      (insert ";; the user's note\n(defun agentq-fe-u0 () 0)\n")
      (let ((args (agentq-fe--args :path path :kind "defun" :name "agentq-fe-u2" :new_source "(defun agentq-fe-u2 () :two)")))
        (should (string-match-p "applied in buffer code.lisp, which visits .*; it is not saved"
                                (plist-get (agentq-fe--call "edit_form" args :approved) :content))))
      (should (equal (buffer-string) ";; the user's note\n(defun agentq-fe-u0 () 0)\n(defun agentq-fe-u1 () 1)\n(defun agentq-fe-u2 () :two)\n"))
      (should (buffer-modified-p)))
    (should (equal (agentq-fe--text path) "(defun agentq-fe-u1 () 1)\n(defun agentq-fe-u2 () 2)\n"))
    (agentq-test-eval-ok "(fmakunbound 'agentq-fe-u2)")))

;;;; The chat: tests fail, edit_form fixes the function, tests pass

(defconst agentq-fe--system
  '(("agentq-fe-rt.asd" . "(defsystem \"agentq-fe-rt\" :components ((:file \"code\"))
  :in-order-to ((test-op (test-op \"agentq-fe-rt/tests\"))))
(defsystem \"agentq-fe-rt/tests\" :depends-on (\"agentq-fe-rt\" \"fiveam\") :components ((:file \"tests\"))
  :perform (test-op (o c) (symbol-call :fiveam :run! (find-symbol \"ALL\" \"AGENTQ-FE-RT-TESTS\"))))")
    ("code.lisp" . "(defpackage :agentq-fe-rt (:use :cl) (:export #:add #:twice))
(in-package :agentq-fe-rt)

(defun twice (x) (* 2 x))

(defun add (a b)
  (- a b))
")
    ("tests.lisp" . "(defpackage :agentq-fe-rt-tests (:use :cl :fiveam))
(in-package :agentq-fe-rt-tests)
(def-suite all)
(in-suite all)
(test adds (is (= 3 (agentq-fe-rt:add 1 2))))
(test twice (is (= 4 (agentq-fe-rt:twice 2))))"))
  "A FiveAM system whose ADD is wrong.")

(ert-deftest sly-agent-q-form-edit/the-chat-fixes-a-failing-test ()
  "The chat's model runs the tests (one fails), fixes the function with
edit_form through the review (accepted), and runs them again: green."
  (skip-unless (file-directory-p "/usr/share/common-lisp/source/fiveam"))
  (require 'sly-agent-q-chat)
  (require 'sly-agent-q-fake-provider)
  (let* ((directory (file-name-as-directory (make-temp-file "agentq-fe-chat" t)))
         (home (expand-file-name "agentq-fe-rt/" directory))
         (code (expand-file-name "code.lisp" home))
         (server (sly-agent-q-fake-provider-start))
         (sessions (make-temp-file "agentq-fe-sessions" t))
         (done nil)
         (reviews nil)
         (sly-agent-q-chat-done-functions (list (lambda (text) (push text done))))
         (sly-agent-q-backends (list (list :name "fake" :type 'openai
                                           :url (sly-agent-q-fake-provider-url server)
                                           :model "fake-model" :key "sk-test")))
         (sly-agent-q-backend "fake")
         (sly-agent-q-stream t)
         (sly-agent-q-session-directory sessions)
         (sly-agent-q-system-directories (list directory))
         (sly-agent-q-allowed-directories (list home))
         ;; The review, its one hunk accepted with a; nothing else may ask.
         (sly-agent-q-approval-function
          (lambda (name args)
            (should (equal name "edit_form"))
            (pcase-let ((`(,answer ,_notes ,header) (agentq-fe--review name args '(?a))))
              (push header reviews)
              answer)))
         (fixed "(defun add (a b)\n  (+ a b))"))
    (make-directory home)
    (dolist (file agentq-fe--system)
      (with-temp-file (expand-file-name (car file) home) (insert (cdr file))))
    (cl-flet ((reply (&rest args)
                (sly-agent-q-fake-provider-push
                 server (list :status 200 :chunks (apply #'sly-agent-q-fake-provider-openai-stream args))))
              (tool-result (n id)
                ;; The content of tool result ID in the Nth request the model got.
                (let ((body (agentq-test-json (plist-get (nth n (sly-agent-q-fake-provider-requests server)) :text))))
                  (seq-some (lambda (message)
                              (and (equal (gethash "role" message) "tool")
                                   (equal (gethash "tool_call_id" message) id)
                                   (gethash "content" message)))
                            (gethash "messages" body)))))
      (unwind-protect
          (progn
            (sly-agent-q-new-conversation)
            (reply :tool-calls '((:id "t1" :name "run_tests" :arguments "{\"system\": \"agentq-fe-rt\"}")))
            (reply :tool-calls `((:id "e1" :name "edit_form"
                                      :arguments ,(json-serialize (list :path code :kind "defun" :name "add"
                                                                        :new_source fixed)))))
            (reply :tool-calls '((:id "t2" :name "run_tests" :arguments "{\"system\": \"agentq-fe-rt\"}")))
            (reply :text "ADD adds now; the tests pass.")
            (sly-agent-q-send "Make the tests of agentq-fe-rt pass.")
            (sly-agent-q-fake-provider-wait (lambda () done) 120)
            (should (equal (car done) "ADD adds now; the tests pass."))
            (should (string-match-p "^FAILED: 2 checks, 1 passed, 1 failed.*\n\\(?:.*\n\\)*FAILED AGENTQ-FE-RT-TESTS::ADDS\n  reason: (AGENTQ-FE-RT:ADD 1 2) evaluated to -1"
                                    (tool-result 1 "t1")))
            (should (= (length reviews) 1))
            (should (string-match-p "edit_form: (defun add)" (car reviews)))
            (should (string-prefix-p (format "accepted\nThe edit is applied to %s and saved" code)
                                     (tool-result 2 "e1")))
            (should (string-match-p "Reloaded in the session:\n=> ADD" (tool-result 2 "e1")))
            (should (string-match-p "^PASSED: 2 checks, 2 passed, 0 failed" (tool-result 3 "t2")))
            (should (equal (agentq-fe--text code)
                           (replace-regexp-in-string (regexp-quote "(defun add (a b)\n  (- a b))") fixed
                                                     (cdr (assoc "code.lisp" agentq-fe--system)) t t))))
        (when (sly-agent-q-chat-busy-p) (sly-agent-q-cancel-chat))
        (sly-agent-q-fake-provider-stop server)
        (when (get-buffer sly-agent-q-chat-buffer-name)
          (kill-buffer sly-agent-q-chat-buffer-name))
        (when-let ((buffer (get-file-buffer code)))
          (with-current-buffer buffer (set-buffer-modified-p nil))
          (kill-buffer buffer))
        (setq sly-agent-q-chat--id nil sly-agent-q-chat--messages nil)
        (agentq-test-forget-systems '("agentq-fe-rt" "agentq-fe-rt/tests") '("AGENTQ-FE-RT-TESTS" "AGENTQ-FE-RT"))
        (delete-directory sessions t)
        (delete-directory directory t)))))

(provide 'sly-agent-q-form-edit-test)

;;; sly-agent-q-form-edit-test.el ends here
