;;; sly-agent-q-chat-test.el --- The chat and its tool loop, against a fake provider -*- lexical-binding: t; -*-

;;; Commentary:

;; The chat talks to a real HTTP server on 127.0.0.1 (the fake provider)
;; through real curl; the tools run in the real module's ECL.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-fake-provider)
(require 'sly-agent-q-chat)
(require 'sly-agent-q-log)

(defvar agentq-chat--done nil
  "What `sly-agent-q-chat-done-functions' got, newest first.")

(defun agentq-chat--record-done (text)
  "Record TEXT, the end of a chat request."
  (push text agentq-chat--done))

(defmacro agentq-chat-with-provider (spec &rest body)
  "Run BODY with a fake provider SERVER of TYPE in a fresh conversation.
SPEC is (SERVER TYPE).  The backend \"fake\" points at SERVER; sessions
go to a temporary directory; the chat buffer and the server go after."
  (declare (indent 1) (debug ((symbolp form) body)))
  (let ((server (car spec)) (type (cadr spec)) (sessions (make-symbol "sessions")))
    `(let* ((,server (sly-agent-q-fake-provider-start))
            (,sessions (make-temp-file "agentq-chat-sessions" t))
            (agentq-chat--done nil)
            (sly-agent-q-chat-done-functions (list #'agentq-chat--record-done))
            (sly-agent-q-backends (list (list :name "fake" :type ,type
                                              :url (sly-agent-q-fake-provider-url ,server)
                                              :model "fake-model" :key "sk-secret-test-key")))
            (sly-agent-q-backend "fake")
            (sly-agent-q-stream t)
            (sly-agent-q-session-directory ,sessions)
            (sly-agent-q-approval-function nil))
       (unwind-protect
           (progn
             (sly-agent-q-new-conversation)
             ,@body)
         (when (sly-agent-q-chat-busy-p) (sly-agent-q-cancel-chat))
         (sly-agent-q-fake-provider-stop ,server)
         (when (get-buffer sly-agent-q-chat-buffer-name)
           (kill-buffer sly-agent-q-chat-buffer-name))
         (setq sly-agent-q-chat--id nil sly-agent-q-chat--messages nil)
         (delete-directory ,sessions t)))))

(defun agentq-chat-wait-done (&optional count)
  "Wait until COUNT (default 1) chat requests have ended; return the last text."
  (sly-agent-q-fake-provider-wait (lambda () (>= (length agentq-chat--done) (or count 1))) 30)
  (car agentq-chat--done))

(defun agentq-chat-text ()
  "The chat buffer's text."
  (with-current-buffer sly-agent-q-chat-buffer-name
    (buffer-substring-no-properties (point-min) (point-max))))

(defun agentq-chat-request-body (server n)
  "The JSON body of SERVER's Nth request (0-based), as a hash table."
  (let ((request (nth n (sly-agent-q-fake-provider-requests server))))
    (agentq-test-json (plist-get request :text))))

(defun agentq-chat--stream (type &rest args)
  "A streamed reply in TYPE's format built from ARGS."
  (apply (if (eq type 'anthropic)
             #'sly-agent-q-fake-provider-anthropic-stream
           #'sly-agent-q-fake-provider-openai-stream)
         args))

(defun agentq-chat--push (server type &rest args)
  "Queue on SERVER a streamed 200 reply in TYPE's format built from ARGS."
  (sly-agent-q-fake-provider-push server (list :status 200 :chunks (apply #'agentq-chat--stream type args))))

(defun agentq-chat--tool-results (body type)
  "The tool results in request BODY: a list of (ID CONTENT ERRORP)."
  (let ((results nil))
    (seq-doseq (message (gethash "messages" body))
      (if (eq type 'anthropic)
          (let ((content (gethash "content" message)))
            (when (vectorp content)
              (seq-doseq (block content)
                (when (equal (gethash "type" block) "tool_result")
                  (push (list (gethash "tool_use_id" block)
                              (let ((c (gethash "content" block)))
                                (if (stringp c) c
                                  (mapconcat (lambda (b) (gethash "text" b)) c "")))
                              (eq (gethash "is_error" block) t))
                        results)))))
        (when (equal (gethash "role" message) "tool")
          (push (list (gethash "tool_call_id" message) (gethash "content" message) nil) results))))
    (nreverse results)))

;;;; The tool loop, in both formats

(defun agentq-chat--tool-loop (type)
  "Question, evaluate_lisp (+ 1 2), => 3 sent back, final answer: with TYPE."
  (agentq-chat-with-provider (server type)
    (agentq-chat--push server type
                       :text "Let me compute it."
                       :tool-calls '((:id "call_1" :name "evaluate_lisp" :arguments "{\"code\": \"(+ 1 2)\"}"))
                       :split 4)
    (agentq-chat--push server type :text "The answer is 3." :split 3)
    (should (null (sly-agent-q-send "What is 1 + 2?")))
    (should (sly-agent-q-chat-busy-p))
    (should (equal (agentq-chat-wait-done) "The answer is 3."))
    (should-not (sly-agent-q-chat-busy-p))
    (should (= (length (sly-agent-q-fake-provider-requests server)) 2))
    (let ((first (agentq-chat-request-body server 0))
          (second (agentq-chat-request-body server 1)))
      (should (equal (gethash "model" first) "fake-model"))
      (should (eq (gethash "stream" first) t))
      ;; The tools are offered, evaluate_lisp among them.
      (should (seq-find (lambda (tool) (equal (or (gethash "name" tool)
                                                  (gethash "name" (gethash "function" tool)))
                                              "evaluate_lisp"))
                        (gethash "tools" first)))
      ;; The system prompt says where the model works.
      (should (string-match-p "ECL" (if (eq type 'anthropic)
                                         (let ((system (gethash "system" first)))
                                           (if (stringp system) system (json-serialize system)))
                                       (gethash "content" (aref (gethash "messages" first) 0)))))
      ;; The result goes back with the call's id.
      (should (equal (agentq-chat--tool-results second type) '(("call_1" "=> 3" nil)))))
    (let ((text (agentq-chat-text)))
      (should (string-match-p "You:\nWhat is 1 \\+ 2\\?" text))
      (should (string-match-p "Let me compute it\\." text))
      (should (string-match-p "evaluate_lisp {\"code\": \"(\\+ 1 2)\"}  ok" text))
      (should (string-match-p "Agent:\nThe answer is 3\\." text)))
    ;; The last response is there for C-c ? i and C-c ? w.
    (should (equal (sly-agent-q-chat--last-response) "The answer is 3."))))

(ert-deftest sly-agent-q-chat/tool-loop-openai ()
  (agentq-chat--tool-loop 'openai))

(ert-deftest sly-agent-q-chat/tool-loop-anthropic ()
  (agentq-chat--tool-loop 'anthropic))

(ert-deftest sly-agent-q-chat/tool-loop-without-streaming ()
  (agentq-chat-with-provider (server 'openai)
    (let ((sly-agent-q-stream nil))
      (sly-agent-q-fake-provider-push
       server (list :status 200 :body (sly-agent-q-fake-provider-openai-reply
                                       :tool-calls '((:id "c9" :name "evaluate_lisp" :arguments "{\"code\":\"(* 6 7)\"}")))))
      (sly-agent-q-fake-provider-push server (list :status 200 :body (sly-agent-q-fake-provider-openai-reply :text "42.")))
      (sly-agent-q-send "6 times 7?")
      (should (equal (agentq-chat-wait-done) "42."))
      (should (equal (agentq-chat--tool-results (agentq-chat-request-body server 1) 'openai) '(("c9" "=> 42" nil)))))))

(ert-deftest sly-agent-q-chat/two-tool-calls-in-one-reply ()
  (dolist (type '(openai anthropic))
    (agentq-chat-with-provider (server type)
      (agentq-chat--push server type
                         :tool-calls '((:id "a1" :name "evaluate_lisp" :arguments "{\"code\":\"(defvar *chat-x* 10)\"}")
                                       (:id "a2" :name "evaluate_lisp" :arguments "{\"code\":\"(* *chat-x* 2)\"}"))
                         :split 5)
      (agentq-chat--push server type :text "Done: 20.")
      (sly-agent-q-send "Define x and double it.")
      (should (equal (agentq-chat-wait-done) "Done: 20."))
      (should (equal (agentq-chat--tool-results (agentq-chat-request-body server 1) type)
                     '(("a1" "=> *CHAT-X*" nil) ("a2" "=> 20" nil)))))))

(ert-deftest sly-agent-q-chat/denied-call-goes-back-as-an-error ()
  (dolist (type '(openai anthropic))
    (agentq-chat-with-provider (server type)
      (let* ((dir (make-temp-file "agentq-chat-deny" t))
             (file (expand-file-name "out.lisp" dir))
             (origins nil)
             (sly-agent-q-allowed-directories (list dir))
             (sly-agent-q-approval-function
              (lambda (_name _args) (push sly-agent-q-call-origin origins) '(:denied "write it under src/ instead"))))
        (unwind-protect
            (progn
              (agentq-chat--push server type
                                 :tool-calls `((:id "w1" :name "write_file"
                                                    :arguments ,(json-serialize (list :path file :content "(print 1)")))))
              (agentq-chat--push server type :text "Understood, I will not write there.")
              (sly-agent-q-send "Write out.lisp")
              ;; The loop goes on after the denial, to the model's answer.
              (should (equal (agentq-chat-wait-done) "Understood, I will not write there."))
              (should-not (file-exists-p file))
              (should (equal origins '("chat")))
              (let ((result (car (agentq-chat--tool-results (agentq-chat-request-body server 1) type))))
                (should (equal (car result) "w1"))
                (should (string-match-p "Denied by user: write it under src/ instead" (nth 1 result)))
                (when (eq type 'anthropic) (should (nth 2 result))))
              (should (string-match-p "write_file .*  denied" (agentq-chat-text))))
          (delete-directory dir t))))))

(ert-deftest sly-agent-q-chat/edited-arguments-show-and-go-to-the-model ()
  "Arguments the person edited at the question are those that run; the
call's line shows them, marked, and the model is told what ran instead
of what it sent.  The other call of the round is left as it was."
  (dolist (type '(openai anthropic))
    (agentq-chat-with-provider (server type)
      (let* ((dir (make-temp-file "agentq-chat-edit" t))
             (plain (expand-file-name "plain.lisp" dir))
             (asked (expand-file-name "asked.lisp" dir))
             (edited (expand-file-name "edited.lisp" dir))
             (sly-agent-q-allowed-directories (list dir))
             (sly-agent-q-approval-function
              (lambda (_name args)
                (if (equal (gethash "path" args) asked)
                    (list :modified (list :path edited :content "(print 2)"))
                  :approved))))
        (unwind-protect
            (progn
              (agentq-chat--push server type
                                 :tool-calls `((:id "w1" :name "write_file"
                                                    :arguments ,(json-serialize (list :path plain :content "(print 0)")))
                                               (:id "w2" :name "write_file"
                                                    :arguments ,(json-serialize (list :path asked :content "(print 1)")))))
              (agentq-chat--push server type :text "Written.")
              (sly-agent-q-send "Write two files")
              (should (equal (agentq-chat-wait-done) "Written."))
              ;; The edited call is what ran.
              (should (file-exists-p plain))
              (should-not (file-exists-p asked))
              (should (equal (with-temp-buffer (insert-file-contents edited) (buffer-string)) "(print 2)"))
              ;; The model is told, for the edited call only.
              (pcase-let ((`((,id1 ,content1 ,_) (,id2 ,content2 ,_))
                           (agentq-chat--tool-results (agentq-chat-request-body server 1) type)))
                (should (equal (list id1 id2) '("w1" "w2")))
                (should-not (string-match-p "Note:" content1))
                (should (string-match-p
                         (concat "\\`Note: the user edited the arguments of this call before it ran\\. "
                                 "It ran with: {[^\n]*" (regexp-quote edited) "[^\n]*} "
                                 "(you sent: {[^\n]*" (regexp-quote asked) "[^\n]*})\\.\n")
                         content2))
                (should (string-match-p (regexp-quote "(print 2)") content2))
                (should (string-match-p (regexp-quote "(print 1)") content2)))
              ;; The chat shows the arguments that ran, marked as edited.
              (let ((lines (split-string (agentq-chat-text) "\n")))
                (should (cl-some (lambda (line) (string-match-p "\\`\\[\\+\\] write_file .*plain\\.lisp.*  ok [0-9.]+ ms\\'" line))
                                 lines))
                (let ((line (cl-find-if (lambda (line) (string-match-p "  ok (edited)" line)) lines)))
                  (should line)
                  (should (string-match-p "\\`\\[\\+\\] write_file {" line))
                  (should-not (string-match-p "asked\\.lisp\\|print 1" line))))
              (with-current-buffer sly-agent-q-chat-buffer-name
                (goto-char (point-min))
                (search-forward "ok (edited)")
                (sly-agent-q-chat-toggle-tool)
                (let ((text (agentq-chat-text)))
                  (should (string-match-p (concat "arguments (edited by you): {[^\n]*" (regexp-quote edited)) text))
                  (should (string-match-p (concat "the model sent: {[^\n]*" (regexp-quote asked)) text))))
              ;; Resumed, the conversation still shows the edit.
              (sly-agent-q-chat-open sly-agent-q-chat--id)
              (should (string-match-p "write_file {[^\n]*  ok (edited)" (agentq-chat-text))))
          (delete-directory dir t))))))

(ert-deftest sly-agent-q-chat/edited-agent-code-runs-and-the-model-is-told ()
  "An agent's code that touches the world asks; the code the person wrote
in its place runs, and the model is told it ran instead of its own."
  (agentq-chat-with-provider (server 'openai)
    (let* ((file (make-temp-file "agentq-chat-code"))
           (code (format "(delete-file %S)" file))
           (asked nil)
           (sly-agent-q-approval-function
            (lambda (name args)
              (push (list name (gethash "code" args) (and (gethash "touches" args) t)) asked)
              '(:modified (:code "(list :edited)")))))
      (unwind-protect
          (progn
            (agentq-chat--push server 'openai
                               :tool-calls `((:id "c1" :name "evaluate_lisp"
                                                  :arguments ,(json-serialize (list :code code)))))
            (agentq-chat--push server 'openai :text "Done.")
            (sly-agent-q-send "Delete the file")
            (should (equal (agentq-chat-wait-done) "Done."))
            (should (equal asked `(("evaluate_lisp" ,code t))))
            (should (file-exists-p file))
            (let ((content (nth 1 (car (agentq-chat--tool-results (agentq-chat-request-body server 1) 'openai)))))
              (should (equal content
                             (format "Note: the user edited the arguments of this call before it ran. It ran with: %s (you sent: %s).\n=> (:EDITED)"
                                     "{\"code\":\"(list :edited)\"}" (json-serialize (list :code code))))))
            (should (string-match-p "evaluate_lisp {\"code\":\"(list :edited)\"}  ok (edited)" (agentq-chat-text))))
        (when (file-exists-p file) (delete-file file))))))

(ert-deftest sly-agent-q-chat/the-models-world-touching-code-asks-and-reading-does-not ()
  "Issue 35's forms from the chat's model (through the loopback provider):
each asks, with the chat's door, and denied does nothing; the reading and
defining forms run with no question."
  (agentq-chat-with-provider (server 'openai)
    (let* ((dir (make-temp-file "agentq-chat-world" t))
           (file (expand-file-name "keep" dir))
           (f (prin1-to-string file))
           (dangerous (list (format "(delete-file %s)" f)
                            (format "(funcall (intern \"DELETE-FILE\") %s)" f)
                            (format "(ext:run-program \"rm\" '(%s))" f)
                            (format "#.(delete-file %s)" f)
                            (format "(with-open-file (s %s :direction :output :if-exists :supersede) (print 1 s))" f)
                            (format "(agent-q:eval-in-emacs %S)" (format "(delete-file %s)" f))
                            (format "(mp:process-join (mp:process-run-function \"t\" (lambda () (delete-file %s))))" f)
                            "(setf agent-q:*approval-handler* (lambda (tl a) :approved))"))
           (harmless '("(+ 1 2)" "(describe 'car)" "(defun agentq-chat-f (x) (* x 2))" "(agentq-chat-f 21)"
                       "(mapcar #'1+ '(1 2 3))" "(apropos \"STRING-UP\")"))
           (asked nil)
           (sly-agent-q-approval-function
            (lambda (_name args)
              (push (list sly-agent-q-call-origin (gethash "code" args)) asked)
              '(:denied "not in this chat"))))
      (unwind-protect
          (progn
            (with-temp-file file (insert "hi"))
            (agentq-chat--push server 'openai
                               :tool-calls (cl-loop for code in (append dangerous harmless)
                                                    for n from 1
                                                    collect (list :id (format "w%d" n) :name "evaluate_lisp"
                                                                  :arguments (json-serialize (list :code code)))))
            (agentq-chat--push server 'openai :text "Done.")
            (sly-agent-q-send "Try everything")
            (should (equal (agentq-chat-wait-done) "Done."))
            (should (equal (reverse asked) (mapcar (lambda (code) (list "chat" code)) dangerous)))
            (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string)) "hi"))
            (let ((results (agentq-chat--tool-results (agentq-chat-request-body server 1) 'openai)))
              (should (= (length results) (+ (length dangerous) (length harmless))))
              (cl-loop for (_id content) in (cl-subseq results 0 (length dangerous))
                       do (should (string-match-p "not in this chat" content)))
              (should (equal (nth 1 (nth (length dangerous) results)) "=> 3"))
              (should (equal (nth 1 (nth (+ 3 (length dangerous)) results)) "=> 42"))))
        (delete-directory dir t)))))

(ert-deftest sly-agent-q-chat/unedited-calls-have-no-note ()
  "An approved call, and one whose arguments the person opened but left
as they were, run as sent: no note to the model, no mark in the chat."
  (agentq-chat-with-provider (server 'openai)
    (let* ((dir (make-temp-file "agentq-chat-noedit" t))
           (one (expand-file-name "one.lisp" dir))
           (two (expand-file-name "two.lisp" dir))
           (sly-agent-q-allowed-directories (list dir))
           (sly-agent-q-approval-function
            (lambda (_name args)
              (if (equal (gethash "path" args) two) (list :modified (copy-hash-table args)) :approved))))
      (unwind-protect
          (progn
            (agentq-chat--push server 'openai
                               :tool-calls `((:id "n1" :name "write_file"
                                                  :arguments ,(json-serialize (list :path one :content "1")))
                                             (:id "n2" :name "write_file"
                                                  :arguments ,(json-serialize (list :path two :content "2")))))
            (agentq-chat--push server 'openai :text "Both written.")
            (sly-agent-q-send "Write one and two")
            (should (equal (agentq-chat-wait-done) "Both written."))
            (should (file-exists-p one))
            (should (file-exists-p two))
            (let ((results (agentq-chat--tool-results (agentq-chat-request-body server 1) 'openai)))
              (should (= (length results) 2))
              (dolist (result results)
                (should-not (string-match-p "Note:\\|edited" (nth 1 result)))))
            (should (= (cl-count-if (lambda (line) (string-match-p "\\`\\[\\+\\] write_file .*  ok [0-9.]+ ms\\'" line))
                                    (split-string (agentq-chat-text) "\n"))
                       2))
            (should-not (string-match-p "edited" (agentq-chat-text))))
        (delete-directory dir t)))))

(ert-deftest sly-agent-q-chat/audit-log-names-the-chat ()
  "The chat's tool calls are logged as coming through the chat's door."
  (agentq-chat-with-provider (server 'openai)
    (let ((sly-agent-q-tool-execution-functions (list #'sly-agent-q-log-call)))
      (when (get-buffer "*Agent-Q Log*") (kill-buffer "*Agent-Q Log*"))
      (agentq-chat--push server 'openai
                         :tool-calls '((:id "g1" :name "evaluate_lisp" :arguments "{\"code\":\"(+ 40 2)\"}")))
      (agentq-chat--push server 'openai :text "It is 42.")
      (sly-agent-q-send "Add 40 and 2.")
      (should (equal (agentq-chat-wait-done) "It is 42."))
      (should (string-match-p "^[-0-9]+ [:0-9]+ chat +evaluate_lisp +cautious .* code=(\\+ 40 2)"
                              (with-current-buffer "*Agent-Q Log*" (buffer-string)))))))

;;;; Ending a request

(ert-deftest sly-agent-q-chat/cancel-mid-stream ()
  (agentq-chat-with-provider (server 'openai)
    (sly-agent-q-fake-provider-push
     server (list :status 200 :chunk-delay 0.3
                  :chunks (sly-agent-q-fake-provider-openai-stream :text (make-string 40 ?x) :split 2)))
    (sly-agent-q-send "Write many x")
    (sly-agent-q-fake-provider-wait (lambda () (string-match-p "xx" (agentq-chat-text))))
    (sly-agent-q-cancel-chat)
    (should-not (sly-agent-q-chat-busy-p))
    (should (equal agentq-chat--done '("Cancelled.")))
    (let ((text (agentq-chat-text)))
      ;; Nothing more arrives afterwards.
      (sleep-for 0.8)
      (should (equal (agentq-chat-text) text))
      (should (string-match-p "\\[Cancelled\\.\\]" text)))
    (should-not (cl-find-if (lambda (p) (and (process-live-p p) (string-match-p "curl" (format "%s" (process-command p)))))
                            (process-list)))
    ;; The conversation goes on.
    (agentq-chat--push server 'openai :text "Back.")
    (sly-agent-q-send "Again")
    (should (equal (agentq-chat-wait-done 2) "Back."))))

(ert-deftest sly-agent-q-chat/cancel-while-a-tool-runs ()
  (agentq-chat-with-provider (server 'openai)
    (agentq-chat--push server 'openai
                       :tool-calls '((:id "s1" :name "evaluate_lisp" :arguments "{\"code\":\"(sleep 20)\"}")))
    (sly-agent-q-send "Sleep")
    (sly-agent-q-fake-provider-wait (lambda () (eq sly-agent-q-chat--state 'tools)))
    (sleep-for 0.2)
    (sly-agent-q-cancel-chat)
    (should (equal agentq-chat--done '("Cancelled.")))
    ;; The Lisp session is free again at once.
    (agentq-test-should-be-alive)
    (should (= (length (sly-agent-q-fake-provider-requests server)) 1))))

(ert-deftest sly-agent-q-chat/http-errors-keep-the-conversation ()
  (let ((sly-agent-q-provider-max-retries 0))
    (agentq-chat-with-provider (server 'openai)
      (sly-agent-q-fake-provider-push server (list :status 401 :body "{\"error\":{\"message\":\"Incorrect API key provided\"}}"))
      (sly-agent-q-send "Hello?")
      (let ((message (agentq-chat-wait-done)))
        (should (string-match-p "401\\|key\\|authentic" message))
        (should (string-match-p (regexp-quote message) (agentq-chat-text))))
      (should-not (sly-agent-q-chat-busy-p))
      ;; The key is nowhere in the chat.
      (should-not (string-match-p "sk-secret-test-key" (agentq-chat-text)))
      ;; The question is kept, and the next one goes with it.
      (agentq-chat--push server 'openai :text "Hi.")
      (sly-agent-q-send "Hello again")
      (should (equal (agentq-chat-wait-done 2) "Hi."))
      (let ((messages (gethash "messages" (agentq-chat-request-body server 1))))
        (should (equal (mapcar (lambda (m) (gethash "content" m))
                               (seq-filter (lambda (m) (equal (gethash "role" m) "user")) messages))
                       '("Hello?" "Hello again")))))))

(ert-deftest sly-agent-q-chat/nothing-listening ()
  (let* ((port (let ((probe (make-network-process :name "agentq-probe" :server t :host "127.0.0.1" :service t)))
                 (prog1 (process-contact probe :service) (delete-process probe))))
         (sly-agent-q-provider-max-retries 0))
    (agentq-chat-with-provider (server 'openai)
      (setq sly-agent-q-backends (list (list :name "fake" :type 'openai
                                             :url (format "http://127.0.0.1:%d/v1" port)
                                             :model "m" :key "k")))
      (sly-agent-q-send "Anyone?")
      (should (string-match-p (format "127.0.0.1:%d" port) (agentq-chat-wait-done)))
      (should-not (sly-agent-q-chat-busy-p)))))

(ert-deftest sly-agent-q-chat/round-limit ()
  (let ((sly-agent-q-chat-max-rounds 2))
    (agentq-chat-with-provider (server 'openai)
      (dotimes (i 3)
        (agentq-chat--push server 'openai
                           :tool-calls `((:id ,(format "r%d" i) :name "evaluate_lisp" :arguments "{\"code\":\"1\"}"))))
      (sly-agent-q-send "Loop forever")
      (should (string-match-p "Stopped after 2 rounds" (agentq-chat-wait-done)))
      (should (= (length (sly-agent-q-fake-provider-requests server)) 2))
      (should (string-match-p "Stopped after 2 rounds" (agentq-chat-text))))))

;;;; Sessions

(ert-deftest sly-agent-q-chat/save-and-resume ()
  (agentq-chat-with-provider (server 'anthropic)
    (agentq-chat--push server 'anthropic
                       :tool-calls '((:id "t1" :name "evaluate_lisp" :arguments "{\"code\":\"(+ 40 2)\"}")))
    (agentq-chat--push server 'anthropic :text "It is 42.")
    (sly-agent-q-send "What is 40 + 2?")
    (should (equal (agentq-chat-wait-done) "It is 42."))
    (let* ((id sly-agent-q-chat--id)
           (file (sly-agent-q-chat--file id))
           (messages sly-agent-q-chat--messages))
      ;; Saved when the request ended, without the key.
      (should (file-exists-p file))
      (should-not (string-match-p "sk-secret" (with-temp-buffer (insert-file-contents file) (buffer-string))))
      (should (equal (plist-get (car (sly-agent-q-chat--sessions)) :title) "What is 40 + 2?"))
      ;; A new conversation starts empty; the old one resumes whole.
      (sly-agent-q-new-conversation)
      (should (null sly-agent-q-chat--messages))
      (should-not (string-match-p "It is 42" (agentq-chat-text)))
      (sly-agent-q-chat-open id)
      (should (equal sly-agent-q-chat--messages messages))
      (let ((text (agentq-chat-text)))
        (should (string-match-p "What is 40 \\+ 2\\?" text))
        (should (string-match-p "evaluate_lisp .*  ok" text))
        (should (string-match-p "It is 42\\." text)))
      ;; It goes on where it stopped: the next request carries the history.
      (agentq-chat--push server 'anthropic :text "Yes.")
      (sly-agent-q-send "Sure?")
      (should (equal (agentq-chat-wait-done 2) "Yes."))
      (should (= (length (gethash "messages" (agentq-chat-request-body server 2))) 5))
      ;; And it can be deleted.
      (sly-agent-q-chat-delete-session id)
      (should-not (file-exists-p file)))))

;;;; The buffer

(ert-deftest sly-agent-q-chat/typing-at-the-prompt-sends ()
  (agentq-chat-with-provider (server 'openai)
    (agentq-chat--push server 'openai :text "```lisp\n(defun f (x) x)\n```" :split 7)
    (with-current-buffer (sly-agent-q-chat--buffer)
      (goto-char (point-max))
      (insert "Show me a defun")
      (sly-agent-q-chat-return)
      ;; The prompt is empty again, and the input is in the history.
      (should (equal (sly-agent-q-chat--input) ""))
      (should (equal (agentq-chat-wait-done) "```lisp\n(defun f (x) x)\n```"))
      (sly-agent-q-chat-previous-input 1)
      (should (equal (sly-agent-q-chat--input) "Show me a defun"))
      ;; The transcript is read-only; the code block got Lisp's faces.
      (goto-char (point-min))
      (should-error (insert "x") :type 'text-read-only)
      (search-forward "defun f")
      (should (eq (get-text-property (- (point) 3) 'font-lock-face) 'font-lock-keyword-face)))))

(ert-deftest sly-agent-q-chat/tool-line-expands ()
  (agentq-chat-with-provider (server 'openai)
    (agentq-chat--push server 'openai
                       :tool-calls '((:id "e1" :name "evaluate_lisp" :arguments "{\"code\":\"(list 1 2)\"}")))
    (agentq-chat--push server 'openai :text "ok")
    (sly-agent-q-send "list")
    (agentq-chat-wait-done)
    (with-current-buffer sly-agent-q-chat-buffer-name
      (goto-char (point-min))
      (search-forward "evaluate_lisp")
      (should-not (string-match-p "result:" (agentq-chat-text)))
      (sly-agent-q-chat-toggle-tool)
      (should (string-match-p "arguments: {\"code\":\"(list 1 2)\"}\n    result:\n      => (1 2)" (agentq-chat-text)))
      (sly-agent-q-chat-toggle-tool)
      (should-not (string-match-p "result:" (agentq-chat-text))))))

(ert-deftest sly-agent-q-chat/context-goes-in-the-system-prompt ()
  (agentq-chat-with-provider (server 'openai)
    (let ((sly-agent-q-chat--context nil))
      (with-temp-buffer
        (insert "(defun helper (y) (* y 3))")
        (sly-agent-q-context-add-buffer))
      (agentq-chat--push server 'openai :text "Seen.")
      (sly-agent-q-send "Look at the context")
      (agentq-chat-wait-done)
      (should (string-match-p "(defun helper (y) (\\* y 3))"
                              (gethash "content" (aref (gethash "messages" (agentq-chat-request-body server 0)) 0))))
      (sly-agent-q-context-clear)
      (should (null sly-agent-q-chat--context)))))

(ert-deftest sly-agent-q-chat/busy-refuses-a-second-request ()
  (agentq-chat-with-provider (server 'openai)
    (sly-agent-q-fake-provider-push
     server (list :status 200 :chunk-delay 0.2
                  :chunks (sly-agent-q-fake-provider-openai-stream :text "slow answer" :split 2)))
    (sly-agent-q-send "one")
    (should (sly-agent-q-chat-busy-p))
    (should-error (sly-agent-q-send "two") :type 'user-error)
    (should (equal (agentq-chat-wait-done) "slow answer"))))

(ert-deftest sly-agent-q-chat/session-approvals-end-with-the-conversation ()
  (agentq-chat-with-provider (server 'openai)
    (let ((sly-agent-q--session-approved-tools (list "propose_file_edit")))
      (sly-agent-q-new-conversation)
      (should (null sly-agent-q--session-approved-tools))
      (setq sly-agent-q--session-approved-tools (list "propose_file_edit"))
      (agentq-chat--push server 'openai :text "hi")
      (sly-agent-q-send "hello")
      (agentq-chat-wait-done)
      ;; Kept within the conversation, gone when another is resumed.
      (should (equal sly-agent-q--session-approved-tools '("propose_file_edit")))
      (let ((id sly-agent-q-chat--id))
        (sly-agent-q-chat-open id)
        (should (null sly-agent-q--session-approved-tools))))))

(provide 'sly-agent-q-chat-test)

;;; sly-agent-q-chat-test.el ends here
