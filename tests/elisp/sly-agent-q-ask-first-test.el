;;; sly-agent-q-ask-first-test.el --- Questions asked before a job takes the runner -*- lexical-binding: t; -*-

;;; Commentary:

;; A dangerous call is asked about before its job takes the one runner,
;; whoever made it: an MCP client's batch, an Elisp job, the chat.  With
;; the real module and ECL, a person standing in as the approval
;; function (from sly-agent-q-mcp-test.el), real socket connections and
;; the fake provider: while a question is up another caller's evaluation
;; completes, the caller's own later calls wait; a denial, C-g and
;; cancelling behave as the contract says.  And a tool's :check runs
;; once per call.

;;; Code:

(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-mcp-test)
(require 'sly-agent-q-chat-test)

(defun agentq-ask-test-other-caller-evaluates ()
  "Run (+ 1 2) as another caller's Elisp job and wait (10 s at most).
Its content, or nil when it did not finish."
  (let ((results nil)
        (sly-agent-q-caller 'agentq-ask-test-other-caller))
    (sly-agent-q-execute-tool-calls-async '((:id "o" :name "evaluate_lisp" :arguments (:code "(+ 1 2)")))
                                          (lambda (r) (setq results r)))
    (agentq-mcp-test-wait 10 (lambda () results))
    (plist-get (car results) :content)))

(defun agentq-ask-test-batch-answer (client)
  "Wait for CLIENT's answer to a batch (a vector); return it, removed."
  (agentq-mcp-test-wait 20 (lambda () (cl-find-if #'vectorp (process-get client 'lines))))
  (let ((batch (cl-find-if #'vectorp (process-get client 'lines))))
    (should batch)
    (process-put client 'lines (delq batch (process-get client 'lines)))
    batch))

(defun agentq-ask-test-call (id name arguments)
  "A tools/call request ID of NAME with ARGUMENTS (a plist), as data."
  `(:jsonrpc "2.0" :id ,id :method "tools/call" :params (:name ,name :arguments ,arguments)))

(defun agentq-ask-test-message-p (text)
  "Non-nil when TEXT is the last of its kind in *Messages*."
  (with-current-buffer "*Messages*"
    (save-excursion
      (goto-char (point-max))
      (search-backward text nil t))))

(defun agentq-ask-test-nothing-held ()
  "Assert that no job is held and no question waits."
  (should-not sly-agent-q--ask-queue)
  (should-not sly-agent-q--asking-job)
  (should (= (hash-table-count sly-agent-q--held-jobs) 0))
  (should (= (hash-table-count sly-agent-q--lanes) 0)))

;;;; 1. A dangerous call inside an MCP batch

(ert-deftest sly-agent-q-ask-first/an-mcp-batch-asks-before-it-takes-the-runner ()
  (agentq-mcp-test-with-server
    (agentq-mcp-test-with-person
      (let ((a (agentq-mcp-test-connect socket))
            (b (agentq-mcp-test-connect socket))
            (b-text nil) (elisp-text nil) (a-next-early 'unset))
        (setq agentq-mcp-test--scripts
              `(("/1" . ,(lambda ()
                           ;; Another client's and another Elisp caller's
                           ;; evaluations complete; A's next call waits.
                           (agentq-mcp-test-send-call b 1 "evaluate_lisp" '(:code "(+ 1 2)"))
                           (setq b-text (agentq-mcp-test-text (agentq-mcp-test-answer b 1 10)))
                           (setq elisp-text (agentq-ask-test-other-caller-evaluates))
                           (setq a-next-early (not (agentq-mcp-test-no-answer a "next" 0.3)))
                           :approved))
                ("/2" . ,(lambda () '(:denied "not that one")))
                ("/3" . ,(lambda () (signal 'quit nil)))))  ; C-g at the question
        (agentq-mcp-test-send a (vector (agentq-ask-test-call "b1" name '(:path "/1"))
                                        (agentq-ask-test-call "b2" "evaluate_lisp" '(:code ":between"))
                                        (agentq-ask-test-call "b3" name '(:path "/2"))
                                        (agentq-ask-test-call "b4" name '(:path "/3"))))
        (agentq-mcp-test-send-call a "next" "evaluate_lisp" '(:code ":next"))
        (let ((batch (agentq-ask-test-batch-answer a)))
          (should (= (length batch) 4))
          (should (equal (mapcar (lambda (answer) (gethash "id" answer)) batch) '("b1" "b2" "b3" "b4")))
          (should (equal (agentq-mcp-test-text (aref batch 0)) "ran /1"))
          (should (equal (agentq-mcp-test-text (aref batch 1)) "=> :BETWEEN"))
          (should (equal (agentq-mcp-test-text (aref batch 2)) "Denied by user: not that one"))
          (should (eq (agentq-test-get (aref batch 2) "result" "isError") t))
          (should (equal (agentq-mcp-test-text (aref batch 3)) "User denied tool execution"))
          (should (eq (agentq-test-get (aref batch 3) "result" "isError") t)))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer a "next")) "=> :NEXT"))
        (should (equal b-text "=> 3"))
        (should (equal elisp-text "=> 3"))
        (should-not a-next-early)
        (should (equal (reverse agentq-mcp-test--log)
                       '((asked "/1" "MCP") (answered "/1")
                         (asked "/2" "MCP") (answered "/2")
                         (asked "/3" "MCP") (unwound "/3"))))
        (should (equal ran '("/1")))
        (agentq-ask-test-nothing-held)
        (delete-process a)
        (delete-process b)))))

(ert-deftest sly-agent-q-ask-first/an-mcp-batch-s-question-goes-with-its-client ()
  ;; A batch has no id to cancel it by: its client going away withdraws
  ;; its question, and none of it runs.
  (agentq-mcp-test-with-server
    (agentq-mcp-test-with-person
      (let ((a (agentq-mcp-test-connect socket))
            (flag (intern (format "*%s*" (agentq-test-fresh-name "agentq-ask-batch-ran")))))
        (setq agentq-mcp-test--scripts
              `(("/g" . ,(lambda ()
                           (delete-process a)
                           (agentq-mcp-test-wait 10) ; withdrawn: never returns
                           :approved))))
        (agentq-mcp-test-send a (vector (agentq-ask-test-call "g1" name '(:path "/g"))
                                        (agentq-ask-test-call "g2" "evaluate_lisp"
                                                              `(:code ,(format "(defparameter %s t)" flag)))))
        (agentq-mcp-test-wait 20 (lambda () (assoc 'unwound agentq-mcp-test--log)))
        (should (equal (reverse agentq-mcp-test--log) '((asked "/g" "MCP") (unwound "/g"))))
        (should (agentq-ask-test-message-p "[MCP] client went away; question withdrawn"))
        (agentq-mcp-test-wait 0.3)
        (should-not ran)
        (should (equal (agentq-test-eval-ok (format "(boundp '%s)" flag)) "=> NIL"))
        (agentq-ask-test-nothing-held)))))

;;;; 3. Elisp jobs

(ert-deftest sly-agent-q-ask-first/an-elisp-job-asks-before-it-takes-the-runner ()
  (agentq-mcp-test-with-server
    (agentq-mcp-test-with-person
      (let ((client (agentq-mcp-test-connect socket))
            (mcp-text nil) (elisp-text nil) (after-early 'unset) (busy 'unset)
            (first nil) (second nil))
        (setq agentq-mcp-test--scripts
              `(("/1" . ,(lambda ()
                           ;; An MCP client's and another caller's
                           ;; evaluations complete; this caller's next job waits.
                           (agentq-mcp-test-send-call client 1 "evaluate_lisp" '(:code "(+ 1 2)"))
                           (setq mcp-text (agentq-mcp-test-text (agentq-mcp-test-answer client 1 10)))
                           (setq elisp-text (agentq-ask-test-other-caller-evaluates))
                           (agentq-mcp-test-wait 0.3)
                           (setq after-early second)
                           ;; Held jobs hold no Lisp: completion and eldoc
                           ;; may ask it meanwhile.
                           (setq busy (sly-agent-q--lisp-busy-p))
                           :approved))
                ("/2" . ,(lambda () '(:denied "no")))
                ("/3" . ,(lambda () (signal 'quit nil)))))  ; C-g at the question
        (let ((sly-agent-q-caller 'agentq-ask-test-me))
          (sly-agent-q-execute-tool-calls-async
           `((:id "1" :name ,name :arguments (:path "/1"))
             (:id "2" :name "evaluate_lisp" :arguments (:code ":between"))
             (:id "3" :name ,name :arguments (:path "/2"))
             (:id "4" :name ,name :arguments (:path "/3")))
           (lambda (results) (setq first results)))
          (sly-agent-q-execute-tool-calls-async
           '((:id "5" :name "evaluate_lisp" :arguments (:code ":after")))
           (lambda (results) (setq second results))))
        (agentq-mcp-test-wait 30 (lambda () (and first second)))
        (should (equal (mapcar (lambda (result) (plist-get result :content)) first)
                       '("ran /1" "=> :BETWEEN" "Denied by user: no" "User denied tool execution")))
        (should (equal (mapcar (lambda (result) (plist-get (plist-get result :metadata) :approved)) first)
                       '(t t nil nil)))
        (should (equal (plist-get (car second) :content) "=> :AFTER"))
        (should (equal mcp-text "=> 3"))
        (should (equal elisp-text "=> 3"))
        (should-not after-early)
        (should-not busy)
        (should (equal (reverse agentq-mcp-test--log)
                       '((asked "/1" nil) (answered "/1")
                         (asked "/2" nil) (answered "/2")
                         (asked "/3" nil) (unwound "/3"))))
        (should (equal ran '("/1")))
        (agentq-ask-test-nothing-held)
        (delete-process client)))))

(ert-deftest sly-agent-q-ask-first/cancelling-an-elisp-job-withdraws-its-question ()
  (agentq-mcp-test-with-person
    (let ((flag (intern (format "*%s*" (agentq-test-fresh-name "agentq-ask-job-ran"))))
          (job nil) (first nil) (second nil))
      (setq agentq-mcp-test--scripts
            `(("/c" . ,(lambda ()
                         (should (sly-agent-q-cancel job))
                         (agentq-mcp-test-wait 10) ; withdrawn: never returns
                         :approved))))
      (let ((sly-agent-q-caller 'agentq-ask-test-me))
        (setq job (sly-agent-q-execute-tool-calls-async
                   `((:id "1" :name ,name :arguments (:path "/c"))
                     (:id "2" :name "evaluate_lisp" :arguments (:code ,(format "(defparameter %s t)" flag))))
                   (lambda (results) (setq first results))))
        (sly-agent-q-execute-tool-calls-async
         '((:id "3" :name "evaluate_lisp" :arguments (:code ":after")))
         (lambda (results) (setq second results))))
      (agentq-mcp-test-wait 30 (lambda () (and first second)))
      ;; The callback still gets its results: every call interrupted, unrun.
      (should (= (length first) 2))
      (dolist (result first)
        (should (string-match-p "\\`\\[ERROR\\] INTERRUPTED\n.*before it ran" (plist-get result :content))))
      (should (equal (plist-get (car second) :content) "=> :AFTER"))
      (should (equal (reverse agentq-mcp-test--log) '((asked "/c" nil) (unwound "/c"))))
      (should (agentq-ask-test-message-p (format "sly-agent-q: job %d cancelled; question withdrawn" job)))
      (should-not ran)
      (should (equal (agentq-test-eval-ok (format "(boundp '%s)" flag)) "=> NIL"))
      (should-not (sly-agent-q-cancel job))
      (agentq-ask-test-nothing-held))))

;;;; 2. The chat

(ert-deftest sly-agent-q-ask-first/the-chat-asks-before-it-takes-the-runner ()
  (agentq-chat-with-provider (server 'openai)
    (agentq-mcp-test-with-person
      (let ((elisp-text nil))
        (setq agentq-mcp-test--scripts
              `(("/1" . ,(lambda ()
                           (setq elisp-text (agentq-ask-test-other-caller-evaluates))
                           :approved))
                ("/2" . ,(lambda () '(:denied "no")))
                ("/3" . ,(lambda () (signal 'quit nil)))))  ; C-g at the question
        (agentq-chat--push server 'openai
                           :tool-calls (mapcar (lambda (n)
                                                 (list :id (format "c%d" n) :name name
                                                       :arguments (format "{\"path\":\"/%d\"}" n)))
                                               '(1 2 3)))
        (agentq-chat--push server 'openai :text "Done.")
        (sly-agent-q-send "Go")
        (should (equal (agentq-chat-wait-done) "Done."))
        (let ((results (agentq-chat--tool-results (agentq-chat-request-body server 1) 'openai)))
          (should (equal (mapcar #'car results) '("c1" "c2" "c3")))
          (should (equal (nth 1 (nth 0 results)) "ran /1"))
          (should (string-match-p "Denied by user: no" (nth 1 (nth 1 results))))
          (should (string-match-p "User denied tool execution" (nth 1 (nth 2 results)))))
        (should (equal elisp-text "=> 3"))
        (should (equal (reverse agentq-mcp-test--log)
                       '((asked "/1" "chat") (answered "/1")
                         (asked "/2" "chat") (answered "/2")
                         (asked "/3" "chat") (unwound "/3"))))
        (should (equal ran '("/1")))
        (agentq-ask-test-nothing-held)))))

(ert-deftest sly-agent-q-ask-first/cancelling-the-chat-withdraws-its-question ()
  (agentq-chat-with-provider (server 'openai)
    (agentq-mcp-test-with-person
      (setq agentq-mcp-test--scripts
            `(("/c" . ,(lambda ()
                         (sly-agent-q-cancel-chat)
                         (agentq-mcp-test-wait 10) ; withdrawn: never returns
                         :approved))))
      (agentq-chat--push server 'openai
                         :tool-calls `((:id "c1" :name ,name :arguments "{\"path\":\"/c\"}")))
      (sly-agent-q-send "Go")
      (should (equal (agentq-chat-wait-done) "Cancelled."))
      (agentq-mcp-test-wait 20 (lambda () (assoc 'unwound agentq-mcp-test--log)))
      (should (equal (reverse agentq-mcp-test--log) '((asked "/c" "chat") (unwound "/c"))))
      (should-not (sly-agent-q-chat-busy-p))
      (agentq-mcp-test-wait 0.3)
      (should-not ran)
      (should (= (length (sly-agent-q-fake-provider-requests server)) 1))
      (agentq-test-should-be-alive)
      (agentq-ask-test-nothing-held))))

;;;; 4. A tool's check runs once

(ert-deftest sly-agent-q-ask-first/a-check-runs-once-per-call ()
  (agentq-mcp-test-with-server
    (let* ((name (agentq-test-fresh-name "agentq_ask_checked"))
           (checked nil) (asked nil)
           (sly-agent-q-approval-function
            (lambda (_tool args) (push (gethash "path" args) asked) :approved))
           (client (agentq-mcp-test-connect socket))
           (results nil))
      (sly-agent-q-define-tool name "Dangerous, checked." '((:name "path" :type :string))
                               :safety-level :dangerous
                               :check (lambda (args)
                                        (push (gethash "path" args) checked)
                                        (when (string-prefix-p "/bad" (gethash "path" args))
                                          (sly-agent-q-tool-fail "refused %s" (gethash "path" args))))
                               :handler (lambda (args) (format "ran %s" (gethash "path" args))))
      ;; An MCP call, passing and failing its check.
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client 1 name '(:path "/ok"))) "ran /ok"))
      (let ((refused (agentq-mcp-test-call client 2 name '(:path "/bad"))))
        (should (eq (agentq-test-get refused "result" "isError") t))
        (should (equal (agentq-mcp-test-text refused) "refused /bad")))
      ;; A batch.
      (agentq-mcp-test-send client (vector (agentq-ask-test-call "b1" name '(:path "/b1"))
                                           (agentq-ask-test-call "b2" name '(:path "/bad2"))))
      (let ((batch (agentq-ask-test-batch-answer client)))
        (should (equal (agentq-mcp-test-text (aref batch 0)) "ran /b1"))
        (should (equal (agentq-mcp-test-text (aref batch 1)) "refused /bad2")))
      ;; An Elisp job.
      (sly-agent-q-execute-tool-calls-async `((:id "e" :name ,name :arguments (:path "/e"))
                                              (:id "f" :name ,name :arguments (:path "/bad3")))
                                            (lambda (r) (setq results r)))
      (agentq-mcp-test-wait 20 (lambda () results))
      (should (equal (mapcar (lambda (result) (plist-get result :content)) results) '("ran /e" "refused /bad3")))
      (should (equal (reverse checked) '("/ok" "/bad" "/b1" "/bad2" "/e" "/bad3")))
      ;; A call refused by its check is not asked about.
      (should (equal (reverse asked) '("/ok" "/b1" "/e")))
      (delete-process client))))

(provide 'sly-agent-q-ask-first-test)

;;; sly-agent-q-ask-first-test.el ends here
