;;; sly-agent-q-mcp-test.el --- The MCP server in Emacs, over its socket -*- lexical-binding: t; -*-

;;; Commentary:

;; `sly-agent-q-mcp-server-start' with the real module and ECL, driven by
;; real connections to its local socket made from this Emacs: the
;; socket's mode and directory, the quick methods, tools/call without
;; blocking Emacs, approvals, cancellation, clients going away, several
;; clients at once.  tests/mcp/sdk-client-emacs.test.mjs drives the same
;; server through sly-agent-q-mcp --emacs with the official SDK.

;;; Code:

(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-mcp)

(defmacro agentq-mcp-test-with-directory (var &rest body)
  "Run BODY with VAR a fresh private directory, removed afterwards."
  (declare (indent 1))
  `(let ((,var (file-name-as-directory (make-temp-file "agentq-mcp-" t))))
     (unwind-protect
         (progn (set-file-modes ,var #o700) ,@body)
       (ignore-errors (sly-agent-q-mcp-server-stop))
       (delete-directory ,var t))))

(defmacro agentq-mcp-test-with-server (&rest body)
  "Run BODY with the MCP server listening on a socket in a fresh directory.
`socket' is bound to the socket's file name in BODY."
  (declare (indent 0))
  (let ((dir (make-symbol "dir")))
    `(agentq-mcp-test-with-directory ,dir
       (let* ((sly-agent-q-mcp-socket (expand-file-name "mcp.sock" ,dir))
              (socket (sly-agent-q-mcp-server-start)))
         (ignore socket)
         ,@body))))

(defun agentq-mcp-test-collect-lines (process output)
  "Filter of a test client PROCESS: OUTPUT's lines collect, parsed, in `lines'."
  (let ((text (concat (process-get process 'partial) output)))
    (while (string-match "\n" text)
      (process-put process 'lines
                   (append (process-get process 'lines)
                           (list (agentq-test-json (substring text 0 (match-beginning 0))))))
      (setq text (substring text (match-end 0))))
    (process-put process 'partial text)))

(defun agentq-mcp-test-connect (socket)
  "A client connection to SOCKET; its answers collect in its `lines' property."
  (make-network-process
   :name "agentq-mcp-test-client" :family 'local :service socket
   :coding 'utf-8-unix :noquery t :buffer nil
   :filter #'agentq-mcp-test-collect-lines))

(defun agentq-mcp-test-send (client message)
  "Send MESSAGE (a string, or data for `json-serialize') to CLIENT."
  (process-send-string client (concat (if (stringp message) message (json-serialize message)) "\n")))

(defun agentq-mcp-test-answer (client id &optional seconds)
  "Wait for CLIENT's answer with ID (SECONDS, default 20); return it, removed."
  (let ((end (+ (float-time) (or seconds 20)))
        found)
    (while (and (not found) (< (float-time) end))
      (setq found (cl-find id (process-get client 'lines)
                           :key (lambda (m) (gethash "id" m)) :test #'equal))
      (unless found (accept-process-output nil 0.01)))
    (should found)
    (process-put client 'lines (delq found (process-get client 'lines)))
    found))

(defun agentq-mcp-test-request (client id method &optional params)
  "Send request ID METHOD PARAMS on CLIENT and return its answer."
  (agentq-mcp-test-send client `(:jsonrpc "2.0" :id ,id :method ,method
                                          :params ,(or params (make-hash-table))))
  (agentq-mcp-test-answer client id))

(defun agentq-mcp-test-call (client id name arguments)
  "tools/call NAME with ARGUMENTS (a plist) on CLIENT as request ID; the answer."
  (agentq-mcp-test-request client id "tools/call" `(:name ,name :arguments ,arguments)))

(defun agentq-mcp-test-text (answer)
  "The text of the tools/call ANSWER."
  (agentq-test-get answer "result" "content" 0 "text"))

;;;; The socket

(ert-deftest sly-agent-q-mcp/socket-is-private-and-goes-when-stopped ()
  (agentq-mcp-test-with-server
    (should (sly-agent-q-mcp-server-running-p))
    (should (equal (file-modes socket) #o600))
    (should (eq (file-attribute-type (file-attributes socket)) nil)) ; not a file or directory…
    (sly-agent-q-mcp-server-stop)
    (should-not (sly-agent-q-mcp-server-running-p))
    (should-not (file-exists-p socket))))

(ert-deftest sly-agent-q-mcp/starting-the-server-starts-booting-lisp ()
  ;; So that the first client's initialize does not wait for the boot.
  (let ((started 0))
    (cl-letf (((symbol-function 'sly-agent-q--module-start-boot)
               (lambda () (cl-incf started) t)))
      (agentq-mcp-test-with-server
        (should (= started 1))
        (sly-agent-q-mcp-server-start)  ; already listening: no second start
        (should (= started 1))))))

(ert-deftest sly-agent-q-mcp/the-default-socket-is-under-the-runtime-directory ()
  (let ((sly-agent-q-mcp-socket "sly-agent-q/mcp.sock")
        (process-environment (cons "XDG_RUNTIME_DIR=/run/user/4242" process-environment)))
    (should (equal (sly-agent-q-mcp-socket-file) "/run/user/4242/sly-agent-q/mcp.sock")))
  (let ((sly-agent-q-mcp-socket "sly-agent-q/mcp.sock")
        (temporary-file-directory "/var/tmp/")
        (process-environment (cons "XDG_RUNTIME_DIR" process-environment)))
    (should (equal (sly-agent-q-mcp-socket-file)
                   (format "/var/tmp/sly-agent-q-%d/sly-agent-q/mcp.sock" (user-uid))))))

(ert-deftest sly-agent-q-mcp/a-missing-directory-is-made-private ()
  (agentq-mcp-test-with-directory dir
    (let ((sly-agent-q-mcp-socket (expand-file-name "a/b/mcp.sock" dir)))
      (sly-agent-q-mcp-server-start)
      (should (equal (file-modes (expand-file-name "a/b" dir)) #o700))
      (should (equal (file-modes sly-agent-q-mcp-socket) #o600)))))

(ert-deftest sly-agent-q-mcp/refuses-a-directory-others-may-write ()
  (agentq-mcp-test-with-directory dir
    (let ((sly-agent-q-mcp-socket (expand-file-name "mcp.sock" dir)))
      (dolist (mode '(#o777 #o770 #o702))
        (set-file-modes dir mode)
        (let ((err (should-error (sly-agent-q-mcp-server-start) :type 'user-error)))
          (should (string-match-p "others may write to" (cadr err))))
        (should-not (sly-agent-q-mcp-server-running-p))
        (should-not (file-exists-p sly-agent-q-mcp-socket)))
      (set-file-modes dir #o700))))

(ert-deftest sly-agent-q-mcp/refuses-a-directory-of-another-user ()
  (agentq-mcp-test-with-directory dir
    ;; Root owns /usr; root itself gives a directory away to nobody (65534).
    (let ((theirs (if (/= (user-uid) 0)
                      "/usr"
                    (let ((given (expand-file-name "theirs" dir)))
                      (make-directory given)
                      (set-file-modes given #o755)
                      (should (= 0 (call-process "chown" nil nil nil "65534" given)))
                      given))))
      (let* ((sly-agent-q-mcp-socket (expand-file-name "mcp.sock" theirs))
             (err (should-error (sly-agent-q-mcp-server-start) :type 'user-error)))
        (should (string-match-p "belongs to another user" (cadr err)))
        (should-not (sly-agent-q-mcp-server-running-p))))))

(ert-deftest sly-agent-q-mcp/refuses-a-symbolic-link ()
  (agentq-mcp-test-with-directory dir
    (let ((link (expand-file-name "link" dir)))
      (make-directory (expand-file-name "real" dir))
      (make-symbolic-link (expand-file-name "real" dir) link)
      (let* ((sly-agent-q-mcp-socket (expand-file-name "mcp.sock" link))
             (err (should-error (sly-agent-q-mcp-server-start) :type 'user-error)))
        (should (string-match-p "symbolic link" (cadr err)))))))

(ert-deftest sly-agent-q-mcp/a-stale-socket-is-replaced-a-live-one-refused ()
  (agentq-mcp-test-with-directory dir
    (let* ((sly-agent-q-mcp-socket (expand-file-name "mcp.sock" dir))
           (other (make-network-process :name "agentq-other-server" :family 'local
                                        :service sly-agent-q-mcp-socket :server t :noquery t)))
      (unwind-protect
          (let ((err (should-error (sly-agent-q-mcp-server-start) :type 'user-error)))
            (should (string-match-p "already listens" (cadr err))))
        (delete-process other))
      ;; The socket file stays behind with nobody listening: a stale one.
      (should (file-exists-p sly-agent-q-mcp-socket))
      ;; So do the answer channels of bridges killed before Emacs opened
      ;; them: removed, but a live bridge's and anything not a FIFO stay.
      (let* ((dead (let ((process (make-process :name "agentq-dead" :command '("true"))))
                     (while (process-live-p process) (accept-process-output process 0.05))
                     (process-id process)))
             (stale (expand-file-name (format "answers-%d-1" dead) dir))
             (live (expand-file-name (format "answers-%d-1" (emacs-pid)) dir))
             (not-fifo (expand-file-name (format "answers-%d-2" dead) dir)))
        (should (zerop (call-process "mkfifo" nil nil nil "-m" "600" stale live)))
        (with-temp-file not-fifo (insert "not a FIFO"))
        (sly-agent-q-mcp-server-start)
        (should-not (file-exists-p stale))
        (should (file-exists-p live))
        (should (file-exists-p not-fifo))
        (sly-agent-q-mcp-server-stop))
      (sly-agent-q-mcp-server-start)
      (let ((client (agentq-mcp-test-connect sly-agent-q-mcp-socket)))
        (should (= 0 (hash-table-count (agentq-test-get (agentq-mcp-test-request client 1 "ping")
                                                        "result"))))
        (delete-process client)))))

;;;; The protocol over a connection

(ert-deftest sly-agent-q-mcp/initialize-and-tools-list-with-the-emacs-tools ()
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket)))
      (let ((init (agentq-mcp-test-request
                   client 1 "initialize"
                   '(:protocolVersion "2025-03-26" :capabilities #s(hash-table)
                                      :clientInfo (:name "ert" :version "1")))))
        (should (equal (agentq-test-get init "result" "protocolVersion") "2025-03-26"))
        (should (equal (agentq-test-get init "result" "serverInfo" "name") "sly-agent-q")))
      (agentq-mcp-test-send client '(:jsonrpc "2.0" :method "notifications/initialized"))
      (let* ((list (agentq-mcp-test-request client 2 "tools/list"))
             (names (mapcar (lambda (tool) (gethash "name" tool))
                            (agentq-test-get list "result" "tools"))))
        (dolist (name '("evaluate_lisp" "read_file" "write_file" "read_buffer"
                        "search_in_buffer" "propose_file_edit"))
          (should (member name names))))
      ;; Unreadable JSON: one parse error; the connection goes on.
      (agentq-mcp-test-send client "{\"jsonrpc\":")
      (should (equal (agentq-test-get (agentq-mcp-test-answer client :null) "error" "code") -32700))
      (should (agentq-mcp-test-request client 3 "ping"))
      ;; Invalid UTF-8: one parse error too.
      (set-process-coding-system client 'binary 'binary)
      (process-send-string client "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}\n")
      (should (equal (agentq-test-get (agentq-mcp-test-answer client :null) "error" "code") -32700))
      (set-process-coding-system client 'utf-8-unix 'utf-8-unix)
      (should (agentq-mcp-test-request client 5 "ping"))
      (delete-process client))))

(ert-deftest sly-agent-q-mcp/a-batch-is-answered-with-a-batch ()
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket)))
      (agentq-mcp-test-send client "[{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"name\":\"evaluate_lisp\",\"arguments\":{\"code\":\"(+ 1 1)\"}}},{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"ping\"}]")
      (let ((end (+ (float-time) 20)))
        (while (and (null (process-get client 'lines)) (< (float-time) end))
          (accept-process-output nil 0.01)))
      (let ((batch (car (process-get client 'lines))))
        (should (vectorp batch))
        (should (= (length batch) 2))
        (should (equal (agentq-test-get batch 0 "result" "content" 0 "text") "=> 2"))
        (should (equal (agentq-test-get batch 1 "id") "b")))
      (delete-process client))))

(ert-deftest sly-agent-q-mcp/tools-call-runs-without-blocking-emacs ()
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket)))
      (should (equal (agentq-mcp-test-text
                      (agentq-mcp-test-call client 1 "evaluate_lisp" '(:code "(+ 1 2)")))
                     "=> 3"))
      (let* ((ticks 0)
             (timer (run-at-time 0.05 0.05 (lambda () (cl-incf ticks))))
             (start (float-time)))
        (unwind-protect
            (progn
              (agentq-mcp-test-send client '(:jsonrpc "2.0" :id "slow" :method "tools/call"
                                                      :params (:name "evaluate_lisp"
                                                               :arguments (:code "(progn (sleep 2) :slept)"))))
              ;; A ping is answered while the call runs.
              (should (agentq-mcp-test-request client "p" "ping"))
              (should (< (- (float-time) start) 1.5)) ; not the 2 s of the call
              (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client "slow")) "=> :SLEPT")))
          (cancel-timer timer))
        (should (> ticks 10)))
      ;; The method written with a JSON escape is still a tools/call: queued.
      (let ((start (float-time)))
        (agentq-mcp-test-send client "{\"jsonrpc\":\"2.0\",\"id\":\"esc\",\"method\":\"tools\\/call\",\"params\":{\"name\":\"evaluate_lisp\",\"arguments\":{\"code\":\"(progn (sleep 2) :escaped)\"}}}")
        (should (agentq-mcp-test-request client "p2" "ping"))
        (should (< (- (float-time) start) 1.5)) ; not the 2 s of the call
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client "esc")) "=> :ESCAPED")))
      ;; A tool that fails is a result with isError, as the dispatcher has it.
      (let ((failed (agentq-mcp-test-call client 2 "evaluate_lisp" '(:code "(error \"boom\")"))))
        (should (eq (agentq-test-get failed "result" "isError") t))
        (should (string-prefix-p "[ERROR] SIMPLE-ERROR" (agentq-mcp-test-text failed))))
      (let ((unknown (agentq-mcp-test-call client 3 "no_such_tool" '(:x 1))))
        (should (equal (agentq-test-get unknown "error" "code") -32602)))
      (delete-process client))))

(ert-deftest sly-agent-q-mcp/dangerous-calls-ask-the-approval-function ()
  (agentq-mcp-test-with-server
    (let* ((name (agentq-test-fresh-name "agentq_mcp_danger"))
           (asked nil)
           (answer :approved)
           (sly-agent-q-approval-function
            (lambda (tool args)
              ;; Asked from a process filter, yet C-g may quit the question.
              (push (list tool (gethash "path" args) sly-agent-q-call-origin inhibit-quit) asked)
              answer))
           (client (agentq-mcp-test-connect socket)))
      (sly-agent-q-define-tool name "Dangerous." '((:name "path" :type :string))
                               :safety-level :dangerous
                               :handler (lambda (args) (format "ran %s" (gethash "path" args))))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client 1 name '(:path "/tmp/a")))
                     "ran /tmp/a"))
      (should (equal asked `((,name "/tmp/a" "MCP" nil))))
      (setq answer '(:denied "not today"))
      (let ((denied (agentq-mcp-test-call client 2 name '(:path "/tmp/b"))))
        (should (eq (agentq-test-get denied "result" "isError") t))
        (should (string-match-p "not today" (agentq-mcp-test-text denied))))
      (should (equal (length asked) 2))
      (delete-process client))))

(ert-deftest sly-agent-q-mcp/notifications-cancelled-interrupts-the-call ()
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket)))
      (agentq-mcp-test-send client '(:jsonrpc "2.0" :id 41 :method "tools/call"
                                              :params (:name "evaluate_lisp" :arguments (:code "(loop)" :timeout 30))))
      (sleep-for 0.3)
      (agentq-mcp-test-send client '(:jsonrpc "2.0" :method "notifications/cancelled"
                                              :params (:requestId 41 :reason "test")))
      ;; As the headless server (test_binary.cpp
      ;; CancelledNotificationInterruptsTheRunningEvaluationWhichIsNotAnswered):
      ;; a running call is interrupted (the next call is served, not queued
      ;; behind the loop's 30 s) and never answered.
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client 42 "evaluate_lisp" '(:code "(+ 40 2)")))
                     "=> 42"))
      (should (agentq-mcp-test-unanswered client 41 0.3))
      (delete-process client))))

;;;; Cancellation and approval questions, as a person and the headless server have them

(defun agentq-mcp-test-wait (seconds &optional until)
  "Serve events for SECONDS, or until UNTIL (a function) returns non-nil."
  (let ((end (+ (float-time) seconds)))
    (while (and (< (float-time) end) (not (and until (funcall until))))
      (accept-process-output nil 0.02))))

(defun agentq-mcp-test-no-answer (client id seconds)
  "Non-nil when CLIENT gets no answer with ID within SECONDS."
  (agentq-mcp-test-wait seconds (lambda () (cl-find id (process-get client 'lines)
                                                   :key (lambda (m) (gethash "id" m)) :test #'equal)))
  (not (cl-find id (process-get client 'lines) :key (lambda (m) (gethash "id" m)) :test #'equal)))

(defun agentq-mcp-test-unanswered (client id seconds)
  "t when CLIENT gets no answer with ID within SECONDS.
One that comes fails the test, with what it said."
  (unless (agentq-mcp-test-no-answer client id seconds)
    (ert-fail (list "an answer came" :id id
                    :answer (json-serialize (cl-find id (process-get client 'lines)
                                                     :key (lambda (m) (gethash "id" m)) :test #'equal)))))
  t)

(defvar agentq-mcp-test--scripts nil
  "What the test's person does while each question is up: (PATH . FUNCTION).
FUNCTION's value is the answer; it runs inside the question.")

(defvar agentq-mcp-test--log nil
  "What happened to the questions, newest first: (asked PATH ORIGIN),
\(answered PATH) or (unwound PATH) for a question that ended without an answer.")

(defun agentq-mcp-test--person (_tool args)
  "An approval function standing for the person: runs the path's script."
  (let* ((path (gethash "path" args))
         (script (cdr (assoc path agentq-mcp-test--scripts)))
         (answered nil))
    (push (list 'asked path sly-agent-q-call-origin) agentq-mcp-test--log)
    (unwind-protect
        (prog1 (if script (funcall script) :approved)
          (setq answered t)
          (push (list 'answered path) agentq-mcp-test--log))
      (unless answered (push (list 'unwound path) agentq-mcp-test--log)))))

(defun agentq-mcp-test--asked-p (path)
  "Non-nil when the question about PATH has been asked."
  (cl-some (lambda (entry) (and (eq (car entry) 'asked) (equal (nth 1 entry) path)))
           agentq-mcp-test--log))

(defmacro agentq-mcp-test-with-person (&rest body)
  "Run BODY with the test's person answering, and a dangerous tool `name'.
The tool records the paths it ran with in `ran'."
  (declare (indent 0))
  `(let* ((agentq-mcp-test--scripts nil)
          (agentq-mcp-test--log nil)
          (ran nil)
          (name (agentq-test-fresh-name "agentq_mcp_q"))
          (sly-agent-q-approval-function #'agentq-mcp-test--person))
     (sly-agent-q-define-tool name "Dangerous." '((:name "path" :type :string))
                              :safety-level :dangerous
                              :handler (lambda (args) (push (gethash "path" args) ran)
                                         (format "ran %s" (gethash "path" args))))
     ,@body))

(defun agentq-mcp-test-send-call (client id name arguments)
  "Send tools/call NAME ARGUMENTS as request ID on CLIENT, not waiting."
  (agentq-mcp-test-send client `(:jsonrpc "2.0" :id ,id :method "tools/call"
                                          :params (:name ,name :arguments ,arguments))))

(defun agentq-mcp-test-cancel (client id)
  (agentq-mcp-test-send client `(:jsonrpc "2.0" :method "notifications/cancelled"
                                          :params (:requestId ,id :reason "test"))))

;;;; Limits: a client cannot fill Emacs's memory

(ert-deftest sly-agent-q-mcp/a-line-too-long-is-counted-not-kept ()
  (agentq-mcp-test-with-server
    (let* ((sly-agent-q-mcp-max-message-bytes 1000)
           (inhibit-message t)
           (client (agentq-mcp-test-connect socket))
           (served nil))
      (should (agentq-mcp-test-request client 1 "ping"))
      (setq served (car sly-agent-q--mcp-clients))
      ;; 5,000 bytes in pieces, no newline yet: what Emacs keeps stays
      ;; under the limit however long the line grows.
      (dotimes (_ 10)
        (process-send-string client (make-string 500 ?a))
        (accept-process-output nil 0.02))
      (agentq-mcp-test-wait 5 (lambda () (process-get served 'sly-agent-q-mcp-skipped)))
      (should (>= (process-get served 'sly-agent-q-mcp-skipped) 1000))
      (should-not (process-get served 'sly-agent-q-mcp-partial))
      (should (<= (or (process-get served 'sly-agent-q-mcp-partial-bytes) 0) 1000))
      ;; Its end: one parse error that says how long it was; the
      ;; connection goes on.
      (process-send-string client "aaa\n")
      (let ((error (agentq-test-get (agentq-mcp-test-answer client :null) "error")))
        (should (equal (gethash "code" error) -32700))
        (should (string-match-p "5003 bytes long, more than the 1000" (gethash "message" error))))
      (should (agentq-mcp-test-request client 2 "ping"))
      ;; A long line and a short one in one piece: the long refused, the
      ;; short answered.
      (process-send-string client (concat (make-string 1500 ?b) "\n"
                                          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n"))
      (should (equal (agentq-test-get (agentq-mcp-test-answer client :null) "error" "code") -32700))
      (should (agentq-mcp-test-answer client 3))
      ;; A message of exactly the limit is read.
      (let* ((head "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"pad\":\"")
             (tail "\"}}")
             (line (concat head (make-string (- 1000 (length head) (length tail)) ?c) tail)))
        (should (= (string-bytes line) 1000))
        (agentq-mcp-test-send client line)
        (should (gethash "result" (agentq-mcp-test-answer client 4))))
      (should-not (process-get served 'sly-agent-q-mcp-skipped))
      (delete-process client))))

(ert-deftest sly-agent-q-mcp/a-client-s-requests-past-the-limit-are-refused-at-once ()
  (agentq-mcp-test-with-server
    (let* ((sly-agent-q-mcp-max-queued-requests 3)
           (flag (intern (format "*%s*" (agentq-test-fresh-name "agentq-mcp-flood")))))
      (let ((client (agentq-mcp-test-connect socket))
            (other (agentq-mcp-test-connect socket)))
        (agentq-mcp-test-send-call client 1 "evaluate_lisp" '(:code "(progn (sleep 1) :first)"))
        (agentq-mcp-test-send-call client 2 "evaluate_lisp" '(:code "(+ 1 1)"))
        (agentq-mcp-test-send-call client 3 "evaluate_lisp" '(:code "(+ 1 2)"))
        ;; The fourth waits for nothing: an error now, and it never runs.
        (agentq-mcp-test-send-call client 4 "evaluate_lisp" `(:code ,(format "(defparameter %s t)" flag)))
        (let ((start (float-time))
              (refused (agentq-mcp-test-answer client 4)))
          (should (< (- (float-time) start) 0.8))
          (should (equal (agentq-test-get refused "error" "code") -32029))
          (should (string-match-p "Too many requests: 3 " (agentq-test-get refused "error" "message"))))
        ;; A batch is refused too; pings and another client are served.
        (agentq-mcp-test-send client "[{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"tools/call\",\"params\":{\"name\":\"evaluate_lisp\",\"arguments\":{\"code\":\"1\"}}}]")
        (should (equal (agentq-test-get (agentq-mcp-test-answer client :null) "error" "code") -32029))
        (should (agentq-mcp-test-request client 5 "ping"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-call other 1 "evaluate_lisp" '(:code "(+ 2 2)")))
                       "=> 4"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client 1)) "=> :FIRST"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client 2)) "=> 2"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client 3)) "=> 3"))
        ;; Answered, they make room again; the refused one never ran.
        (should (equal (agentq-mcp-test-text
                        (agentq-mcp-test-call client 6 "evaluate_lisp" `(:code ,(format "(boundp '%s)" flag))))
                       "=> NIL"))
        (delete-process client)
        (delete-process other)))))

(ert-deftest sly-agent-q-mcp/a-queued-call-cancelled-is-dropped-unanswered ()
  ;; As the headless server: tests/mcp/test_binary.cpp CancellingAQueuedCallDropsIt.
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket))
          (flag (intern (format "*%s*" (agentq-test-fresh-name "agentq-mcp-ran")))))
      (agentq-mcp-test-send-call client 1 "evaluate_lisp" '(:code "(progn (sleep 0.5) :first)"))
      (agentq-mcp-test-send-call client 2 "evaluate_lisp" `(:code ,(format "(defparameter %s :second)" flag)))
      (agentq-mcp-test-cancel client 2)
      (agentq-mcp-test-send-call client 3 "evaluate_lisp" `(:code ,(format "(boundp '%s)" flag)))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client 1)) "=> :FIRST"))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client 3)) "=> NIL")) ; 2 never ran
      (should (agentq-mcp-test-unanswered client 2 0.3))                                   ; nor is answered
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client 4 "evaluate_lisp" '(:code "(+ 2 2)")))
                     "=> 4"))
      (should (= (hash-table-count (process-get (car sly-agent-q--mcp-clients) 'sly-agent-q-mcp-jobs)) 0))
      (delete-process client))))

(ert-deftest sly-agent-q-mcp/a-fifo-request-cancelled-before-it-reached-emacs-is-dropped ()
  ;; A request the Lisp thread read from a bridge's FIFO and handed to
  ;; Emacs's thread (Lisp was busy) can come after its cancellation, which
  ;; came on the socket and found nothing to stop: it is then not run.
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket))
          (flag (intern (format "*%s*" (agentq-test-fresh-name "agentq-mcp-late")))))
      (should (agentq-mcp-test-request client 1 "ping"))
      (let ((served (car sly-agent-q--mcp-clients))
            (direct (lambda (id code)
                      (sly-agent-q--mcp-direct-line
                       4242 (json-serialize `(:jsonrpc "2.0" :id ,id :method "tools/call"
                                                       :params (:name "evaluate_lisp" :arguments (:code ,code))))))))
        (process-put served 'sly-agent-q-mcp-answer-channel 4242)
        (unwind-protect
            (progn
              (agentq-mcp-test-cancel client "late")
              (agentq-mcp-test-wait 5 (lambda () (process-get served 'sly-agent-q-mcp-unmatched-cancels)))
              (funcall direct "late" (format "(defparameter %s t)" flag))
              (funcall direct "other" "(+ 1 2)")
              (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client "other")) "=> 3"))
              (should (agentq-mcp-test-unanswered client "late" 0.3))
              (should (equal (agentq-mcp-test-text
                              (agentq-mcp-test-call client 2 "evaluate_lisp" `(:code ,(format "(boundp '%s)" flag))))
                             "=> NIL"))
              ;; Forgotten once used: the same id later runs (ids are not
              ;; to be reused, but a client that does is not refused for ever).
              (funcall direct "late" "(+ 2 2)")
              (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client "late")) "=> 4")))
          (process-put served 'sly-agent-q-mcp-answer-channel nil))
        (delete-process client)))))

(ert-deftest sly-agent-q-mcp/a-client-s-safe-call-runs-while-another-s-question-waits ()
  (agentq-mcp-test-with-server
    (agentq-mcp-test-with-person
      (let ((a (agentq-mcp-test-connect socket))
            (b (agentq-mcp-test-connect socket))
            (b-text nil) (a-second-early nil))
        (setq agentq-mcp-test--scripts
              `(("/a" . ,(lambda ()
                           ;; While A's question is up: B's read-only call is answered;
                           ;; A's own next call waits behind its question.
                           (agentq-mcp-test-send-call b 1 "evaluate_lisp" '(:code "(+ 1 2)"))
                           (setq b-text (agentq-mcp-test-text (agentq-mcp-test-answer b 1 10)))
                           (setq a-second-early (not (agentq-mcp-test-no-answer a 2 0.3)))
                           :approved))))
        (agentq-mcp-test-send-call a 1 name '(:path "/a"))
        (agentq-mcp-test-send-call a 2 "evaluate_lisp" '(:code ":after"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer a 1)) "ran /a"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer a 2)) "=> :AFTER"))
        (should (equal b-text "=> 3"))
        (should-not a-second-early)
        (should (equal (reverse agentq-mcp-test--log) '((asked "/a" "MCP") (answered "/a"))))
        ;; Denied and modified answers given before the call runs still shape its result.
        (setq agentq-mcp-test--scripts `(("/d" . ,(lambda () '(:denied "not there")))
                                         ("/m" . ,(lambda () (list :modified (let ((h (make-hash-table :test 'equal)))
                                                                              (puthash "path" "/m2" h) h))))))
        (let ((denied (agentq-mcp-test-call a 3 name '(:path "/d"))))
          (should (eq (agentq-test-get denied "result" "isError") t))
          (should (equal (agentq-mcp-test-text denied) "Denied by user: not there")))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-call a 4 name '(:path "/m"))) "ran /m2"))
        (should (equal ran '("/m2" "/a")))
        (delete-process a)
        (delete-process b)))))

(ert-deftest sly-agent-q-mcp/a-gone-client-s-question-is-withdrawn-others-stay ()
  (agentq-mcp-test-with-server
    (agentq-mcp-test-with-person
      (let ((a (agentq-mcp-test-connect socket))
            (b (agentq-mcp-test-connect socket))
            (e1 nil) (e2 nil) (a-asked-during-e1 'unset))
        (setq agentq-mcp-test--scripts
              `(;; The question of an Elisp call is up; client A's waits, then A goes away.
                ("/e1" . ,(lambda ()
                            (agentq-mcp-test-send-call a 1 name '(:path "/a1"))
                            (agentq-mcp-test-wait 0.5)
                            (delete-process a)
                            (agentq-mcp-test-wait 0.5)
                            (setq a-asked-during-e1 (agentq-mcp-test--asked-p "/a1"))
                            :approved))
                ;; Client B's question is up; an Elisp call's waits; B goes away.
                ("/b1" . ,(lambda ()
                            ;; Submitted inside the question, where the origin
                            ;; is bound to "MCP": its own door is named.
                            (let ((sly-agent-q-call-origin "elisp"))
                              (sly-agent-q-execute-tool-calls-async
                               (list (list :id "e2" :name name :arguments '(:path "/e2")))
                               (lambda (results) (setq e2 results))))
                            (agentq-mcp-test-wait 0.5)
                            (delete-process b)
                            ;; Withdrawn: this never returns.
                            (agentq-mcp-test-wait 10)
                            :approved))))
        (sly-agent-q-execute-tool-calls-async
         (list (list :id "e1" :name name :arguments '(:path "/e1")))
         (lambda (results) (setq e1 results)))
        (agentq-mcp-test-wait 20 (lambda () e1))
        (should (equal (plist-get (car e1) :content) "ran /e1"))
        (should-not a-asked-during-e1)
        (agentq-mcp-test-wait 0.5)
        (should-not (agentq-mcp-test--asked-p "/a1")) ; dropped, never asked
        (agentq-mcp-test-send-call b 1 name '(:path "/b1"))
        (agentq-mcp-test-wait 20 (lambda () e2))
        (should (equal (plist-get (car e2) :content) "ran /e2"))
        (should (equal (reverse agentq-mcp-test--log)
                       '((asked "/e1" nil) (answered "/e1")
                         (asked "/b1" "MCP") (unwound "/b1")
                         (asked "/e2" "elisp") (answered "/e2"))))
        (should (equal ran '("/e2" "/e1")))
        (should (with-current-buffer "*Messages*"
                  (save-excursion
                    (goto-char (point-max))
                    (search-backward "[MCP] client went away; question withdrawn" nil t))))
        (should-not sly-agent-q--ask-queue)
        (should-not sly-agent-q--asking-job)))))

(ert-deftest sly-agent-q-mcp/questions-take-turns-with-the-runner-s ()
  ;; An Elisp job's question put off while a client's was up comes before
  ;; the next client's.
  (agentq-mcp-test-with-server
    (agentq-mcp-test-with-person
      (let ((a (agentq-mcp-test-connect socket))
            (b (agentq-mcp-test-connect socket))
            (e nil))
        (setq agentq-mcp-test--scripts
              `(("/a" . ,(lambda ()
                           (let ((sly-agent-q-call-origin "elisp"))
                             (sly-agent-q-execute-tool-calls-async
                              (list (list :id "e" :name name :arguments '(:path "/e")))
                              (lambda (results) (setq e results))))
                           (agentq-mcp-test-send-call b 1 name '(:path "/b"))
                           (agentq-mcp-test-wait 0.5)
                           :approved))))
        (agentq-mcp-test-send-call a 1 name '(:path "/a"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer a 1)) "ran /a"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer b 1)) "ran /b"))
        (agentq-mcp-test-wait 20 (lambda () e))
        (should (equal (plist-get (car e) :content) "ran /e"))
        (should (equal (reverse agentq-mcp-test--log)
                       '((asked "/a" "MCP") (answered "/a")
                         (asked "/e" "elisp") (answered "/e")
                         (asked "/b" "MCP") (answered "/b"))))
        (delete-process a)
        (delete-process b)))))

(ert-deftest sly-agent-q-mcp/a-call-cancelled-during-its-question-is-dropped ()
  (agentq-mcp-test-with-server
    (agentq-mcp-test-with-person
      (let ((client (agentq-mcp-test-connect socket)))
        (setq agentq-mcp-test--scripts
              `(("/c" . ,(lambda ()
                           (agentq-mcp-test-cancel client 7)
                           (agentq-mcp-test-wait 10)
                           :approved))))
        (agentq-mcp-test-send-call client 7 name '(:path "/c"))
        (agentq-mcp-test-send-call client 8 "evaluate_lisp" '(:code ":next"))
        ;; The call behind it goes on; the cancelled one is never answered.
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client 8)) "=> :NEXT"))
        (should (agentq-mcp-test-unanswered client 7 0.3))
        (should (equal (reverse agentq-mcp-test--log) '((asked "/c" "MCP") (unwound "/c"))))
        (should-not ran)
        (should (with-current-buffer "*Messages*"
                  (save-excursion
                    (goto-char (point-max))
                    (search-backward "[MCP] call cancelled by the client; question withdrawn" nil t))))
        (delete-process client)))))

(ert-deftest sly-agent-q-mcp/a-client-going-away-cancels-its-calls ()
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket))
          (other (agentq-mcp-test-connect socket)))
      (agentq-mcp-test-send client '(:jsonrpc "2.0" :id 1 :method "tools/call"
                                              :params (:name "evaluate_lisp" :arguments (:code "(loop)" :timeout 30))))
      (sleep-for 0.3)
      (should (= (hash-table-count sly-agent-q--async-callbacks) 1))
      (delete-process client)
      ;; The other client's call runs at once: the loop was interrupted.
      (let ((start (float-time)))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-call other 2 "evaluate_lisp" '(:code "(+ 1 1)")))
                       "=> 2"))
        (should (< (- (float-time) start) 3)))
      (should (= (hash-table-count sly-agent-q--async-callbacks) 0))
      (should (= (length sly-agent-q--mcp-clients) 1))
      (delete-process other))))

(ert-deftest sly-agent-q-mcp/several-clients-at-once ()
  (agentq-mcp-test-with-server
    (let ((clients (list (agentq-mcp-test-connect socket)
                         (agentq-mcp-test-connect socket)
                         (agentq-mcp-test-connect socket))))
      ;; The same id on each: answers go to the connection that asked.
      (cl-loop for client in clients for n from 1
               do (agentq-mcp-test-send client `(:jsonrpc "2.0" :id 1 :method "tools/call"
                                                          :params (:name "evaluate_lisp"
                                                                   :arguments (:code ,(format "(* %d 10)" n))))))
      (cl-loop for client in clients for n from 1
               do (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer client 1))
                                 (format "=> %d" (* n 10))))
               (delete-process client)))))

;;;; Over HTTP (sly-agent-q-mcp-http-port)

(defun agentq-mcp-test-http (url token body &optional session)
  "POST BODY to URL with TOKEN (and SESSION's id); the whole raw answer."
  (let* ((port (and (string-match ":\\([0-9]+\\)/" url) (string-to-number (match-string 1 url))))
         (answer "")
         (closed nil)
         (connection (make-network-process
                      :name "agentq-mcp-http-client" :host "127.0.0.1" :service port
                      :coding 'binary :noquery t :buffer nil
                      :filter (lambda (_process output) (setq answer (concat answer output)))
                      :sentinel (lambda (_process _event) (setq closed t))))
         (end (+ (float-time) 60)))
    (process-send-string
     connection
     (concat "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
             (if token (format "Authorization: Bearer %s\r\n" token) "")
             (if session (format "Mcp-Session-Id: %s\r\n" session) "")
             (format "Content-Length: %d\r\n\r\n" (string-bytes body))
             body))
    (while (and (not closed) (< (float-time) end))
      (accept-process-output nil 0.01))
    (delete-process connection)
    answer))

(ert-deftest sly-agent-q-mcp/http-port-serves-mcp-over-http-through-this-emacs ()
  "With `sly-agent-q-mcp-http-port', Emacs starts sly-agent-q-mcp --emacs --http.
Its URL is noted, the token file is private, a call with the token runs
in this Emacs (one of its buffers is read), one without is refused, and
stopping the server ends the program and removes the token file."
  (let ((program (expand-file-name "build/sly-agent-q-mcp" agentq-test-root)))
    (skip-unless (file-executable-p program))
    (let ((sly-agent-q-mcp-http-port 0)
          (sly-agent-q-mcp-program program))
      (agentq-mcp-test-with-server
        (let ((process sly-agent-q--mcp-http-process)
              (end (+ (float-time) 60)))
          (should (process-live-p process))
          (while (and (not sly-agent-q-mcp-http-url) (process-live-p process) (< (float-time) end))
            (accept-process-output nil 0.05))
          (should (string-match-p "\\`http://127\\.0\\.0\\.1:[0-9]+/mcp\\'" sly-agent-q-mcp-http-url))
          (should (equal (file-name-directory sly-agent-q-mcp-http-token-file) (file-name-directory socket)))
          (should (= (file-modes sly-agent-q-mcp-http-token-file) #o600))
          (let* ((token (string-trim (with-temp-buffer
                                       (insert-file-contents sly-agent-q-mcp-http-token-file)
                                       (buffer-string))))
                 (init "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"ert\",\"version\":\"1\"}}}")
                 (refused (agentq-mcp-test-http sly-agent-q-mcp-http-url nil init))
                 (answer (agentq-mcp-test-http sly-agent-q-mcp-http-url token init))
                 (session (and (string-match "Mcp-Session-Id: \\([0-9a-f]+\\)" answer) (match-string 1 answer))))
            (should (string-prefix-p "HTTP/1.1 401" refused))
            (should (string-prefix-p "HTTP/1.1 200" answer))
            (should session)
            (with-current-buffer (get-buffer-create "agentq-mcp-http-buffer")
              (erase-buffer)
              (insert "text only this Emacs has"))
            (let ((call (agentq-mcp-test-http
                         sly-agent-q-mcp-http-url token
                         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"read_buffer\",\"arguments\":{\"buffer\":\"agentq-mcp-http-buffer\"}}}"
                         session)))
              (should (string-prefix-p "HTTP/1.1 200" call))
              (should (string-match-p "text only this Emacs has" call))))
          (let ((token-file sly-agent-q-mcp-http-token-file))
            (sly-agent-q-mcp-server-stop)
            (setq end (+ (float-time) 60))
            (while (and (process-live-p process) (< (float-time) end))
              (accept-process-output nil 0.05))
            (should-not (process-live-p process))
            (should (zerop (process-exit-status process)))
            (should-not (file-exists-p token-file))
            (should-not sly-agent-q-mcp-http-url)))))))

;;;; The answer channel of a bridge

(defun agentq-mcp-test-bridge (socket)
  "sly-agent-q-mcp --emacs SOCKET as a process; its lines collect in `lines'."
  (make-process
   :name "agentq-mcp-test-bridge" :noquery t :connection-type 'pipe
   :command (list (expand-file-name "build/sly-agent-q-mcp" agentq-test-root) "--emacs" socket)
   :stderr (get-buffer-create " *agentq-mcp-test-bridge-stderr*")
   :coding 'utf-8-unix :filter #'agentq-mcp-test-collect-lines))

(defun agentq-mcp-test-ready-lisp (client)
  "Wait until Lisp answers on CLIENT (the server boots it in the background)."
  (should (equal (agentq-mcp-test-text
                  (agentq-mcp-test-call client "ready" "evaluate_lisp" '(:code "(+ 1 2)")))
                 "=> 3")))

(defmacro agentq-mcp-test-with-bridge (&rest body)
  "Run BODY with `bridge', the real bridge to a fresh server, initialized.
Lisp has answered one call when BODY starts."
  (declare (indent 0))
  `(progn
     (skip-unless (file-executable-p (expand-file-name "build/sly-agent-q-mcp" agentq-test-root)))
     (agentq-mcp-test-with-server
       (let ((bridge (agentq-mcp-test-bridge socket)))
         (unwind-protect
             (progn
               (should (gethash "result" (agentq-mcp-test-request
                                          bridge 1 "initialize"
                                          '(:protocolVersion "2025-11-25" :capabilities #s(hash-table)
                                            :clientInfo (:name "ert" :version "1")))))
               (agentq-mcp-test-ready-lisp bridge)
               ,@body)
           (when (process-live-p bridge) (delete-process bridge)))))))

(ert-deftest sly-agent-q-mcp/a-bridge-s-answers-skip-emacs-s-thread ()
  "Through the real bridge, a call's answer is written by the runner on the
bridge's answer channel; one that sent progress first goes through Emacs,
after its progress; both reach the client once, and no FIFO is left."
  (agentq-mcp-test-with-bridge
    (let ((before (sly-agent-q--module-answer-counts)))
      (should (equal (agentq-mcp-test-text
                      (agentq-mcp-test-call bridge 2 "evaluate_lisp" '(:code "(+ 1 2)")))
                     "=> 3"))
      (let ((after (sly-agent-q--module-answer-counts)))
        (should (= (car after) (1+ (car before))))
        (should (= (cdr after) (cdr before))))
      ;; Progress went through Emacs: so does the answer, after it.
      (let ((answer (agentq-mcp-test-request
                     bridge 3 "tools/call"
                     '(:name "evaluate_lisp"
                       :arguments (:code "(progn (print 1) (finish-output) (sleep 0.3) :done)")
                       :_meta (:progressToken "t3")))))
        (should (string-suffix-p "=> :DONE" (agentq-mcp-test-text answer)))
        (should (cl-some (lambda (line) (equal (gethash "method" line) "notifications/progress"))
                         (process-get bridge 'lines)))
        (should (= (cdr (sly-agent-q--module-answer-counts)) (1+ (cdr before)))))
      ;; No second answer comes for either.
      (accept-process-output nil 0.3)
      (should-not (cl-find-if (lambda (line) (member (gethash "id" line) '(2 3)))
                              (process-get bridge 'lines)))
      (should-not (directory-files (file-name-directory socket) nil "\\`\\(?:answers\\|requests\\)-")))))
(ert-deftest sly-agent-q-mcp/an-answer-channel-is-only-a-private-fifo-beside-the-socket ()
  "A client that asks for an answer channel itself gets it only for a FIFO
of the user's own, mode 0600, in the socket's directory; a symbolic link,
a file (left as it was), a FIFO others may open or one elsewhere is
refused with the reason, and the client's calls are answered as before."
  (agentq-mcp-test-with-server
    (let* ((dir (file-name-directory socket))
           (client (agentq-mcp-test-connect socket))
           (elsewhere (make-temp-file "agentq-elsewhere-" t))
           (readers nil)
           (id 0))
      (cl-labels ((fifo (path mode)
                    (should (zerop (call-process "mkfifo" nil nil nil "-m" mode path)))
                    ;; A reader, as the bridge has one.
                    (push (make-process :name "agentq-fifo-reader" :command (list "cat" path)
                                        :noquery t :buffer nil)
                          readers)
                    (accept-process-output nil 0.1)
                    path)
                  (ask (path)
                    (agentq-mcp-test-request client (cl-incf id) "sly-agent-q/answer-channel"
                                             `(:path ,path)))
                  (refused (path why)
                    (let ((answer (ask path)))
                      (should (equal (agentq-test-get answer "error" "code") -32602))
                      (should (string-match-p why (agentq-test-get answer "error" "message"))))))
        (unwind-protect
            (progn
              (fifo (expand-file-name "open" dir) "622")
              (refused (expand-file-name "open" dir) "other users")
              (make-symbolic-link (fifo (expand-file-name "real" dir) "600") (expand-file-name "link" dir))
              (refused (expand-file-name "link" dir) "symbolic link")
              (with-temp-file (expand-file-name "notes" dir) (insert "keep me"))
              (refused (expand-file-name "notes" dir) "not a FIFO")
              (should (equal (with-temp-buffer (insert-file-contents (expand-file-name "notes" dir))
                                               (buffer-string))
                             "keep me"))
              (fifo (expand-file-name "far" elsewhere) "600")
              (refused (expand-file-name "far" elsewhere) "socket's directory")
              (refused "answers" "socket's directory")
              (let ((answer (agentq-mcp-test-request client (cl-incf id) "sly-agent-q/answer-channel"
                                                     '(:path 42))))
                (should (equal (agentq-test-get answer "error" "code") -32602)))
              (should-not (process-get client 'sly-agent-q-mcp-answer-channel))
              ;; Calls are answered on the socket still.
              (should (equal (agentq-mcp-test-text
                              (agentq-mcp-test-call client 100 "evaluate_lisp" '(:code "(+ 1 2)")))
                             "=> 3"))
              ;; The one that qualifies is opened.
              (should (gethash "result" (ask (expand-file-name "real" dir)))))
          (dolist (reader readers) (delete-process reader))
          (delete-process client)
          (delete-directory elsewhere t))))))

;;;; A plain evaluation run by the Lisp thread itself

(defun agentq-mcp-test-inline-since (before)
  "(ON-WORKER TAKEN-OVER DIRECT DECLINED) since BEFORE.
BEFORE is a `sly-agent-q--module-inline-counts'."
  (cl-mapcar #'- (sly-agent-q--module-inline-counts) before))

(defun agentq-mcp-test-world-touching-forms (file)
  "Forms that touch FILE, each another way: directly, computed, a program,
a stream, Emacs, another thread."
  (let ((f (prin1-to-string file)))
    (list (format "(delete-file %s)" f)
          (format "(funcall (intern \"DELETE-FILE\") %s)" f)
          (format "(ext:run-program \"rm\" '(%s))" f)
          (format "(with-open-file (s %s :direction :output :if-exists :supersede) (print 1 s))" f)
          (format "(agent-q:eval-in-emacs %s)" (prin1-to-string (format "(delete-file %s)" f)))
          (format "(mp:process-join (mp:process-run-function \"t\" (lambda () (delete-file %s))))" f))))

(ert-deftest sly-agent-q-mcp/a-plain-evaluation-runs-whole-on-the-lisp-thread ()
  "Through the real bridge, a plain evaluate_lisp is run by the Lisp thread
itself, which writes the answer to the bridge; one that lasts is taken over
by the runner, and answered once; a request sent while it runs waits its
turn, and a ping is answered meanwhile."
  (agentq-mcp-test-with-bridge
    (let ((before (sly-agent-q--module-inline-counts))
          (direct (car (sly-agent-q--module-answer-counts))))
      (dotimes (i 5)
        (should (equal (agentq-mcp-test-text
                        (agentq-mcp-test-call bridge (+ 10 i) "evaluate_lisp" `(:code ,(format "(* %d 2)" i))))
                       (format "=> %d" (* i 2)))))
      ;; Read from the bridge's request FIFO by the Lisp thread.
      (should (equal (agentq-mcp-test-inline-since before) '(5 0 5 0)))
      (should (= (car (sly-agent-q--module-answer-counts)) (+ direct 5)))
      ;; Lasting: taken over, while a ping and the next call come.
      (agentq-mcp-test-send-call bridge 20 "evaluate_lisp" '(:code "(progn (sleep 0.4) :slept)"))
      (agentq-mcp-test-send-call bridge 21 "evaluate_lisp" '(:code "(+ 20 1)"))
      (should (agentq-mcp-test-request bridge "p" "ping"))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer bridge 20)) "=> :SLEPT"))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer bridge 21)) "=> 21"))
      (should (equal (cadr (agentq-mcp-test-inline-since before)) 1))
      ;; Nothing is answered twice.
      (accept-process-output nil 0.3)
      (should-not (cl-find-if (lambda (line) (member (gethash "id" line) '(10 11 12 13 14 20 21)))
                              (process-get bridge 'lines))))))

(defun agentq-mcp-test-busy-wait (seconds)
  "Spin SECONDS without serving any process (no filter runs meanwhile)."
  (let ((end (+ (float-time) seconds)))
    (while (< (float-time) end))))

(defmacro agentq-mcp-test-with-global (symbol value &rest body)
  "Run BODY with SYMBOL's global value VALUE (set, not let-bound), then restore it."
  (declare (indent 2))
  (let ((old (make-symbol "old")))
    `(let ((,old (default-value ',symbol)))
       (unwind-protect (progn (setq-default ,symbol ,value) ,@body)
         (setq-default ,symbol ,old)))))

(defun agentq-mcp-test-asks-before-touching (client counts)
  "Check that CLIENT's world-touching evaluations ask first (origin MCP).
Denied, the file is untouched and the client told; approved, it runs.
COUNTS is what `agentq-mcp-test-inline-since' says of each denied one."
  (let* ((dir (make-temp-file "agentq-mcp-asks-" t))
         (file (expand-file-name "x" dir))
         (asked nil)
         (answer '(:denied "not that"))
         (id 100))
    ;; Set, not let-bound: a FIFO's request asks the global function.
    (unwind-protect
        (agentq-mcp-test-with-global sly-agent-q-approval-function
            (lambda (tool _args) (push (list tool sly-agent-q-call-origin) asked) answer)
          (with-temp-file file (insert "hi"))
          (dolist (code (agentq-mcp-test-world-touching-forms file))
            (let ((before (sly-agent-q--module-inline-counts)))
              (setq asked nil)
              (let ((result (agentq-mcp-test-call client (cl-incf id) "evaluate_lisp" `(:code ,code))))
                (ert-info ((format "%s: %s" code (agentq-mcp-test-text result)))
                  (should (equal asked '(("evaluate_lisp" "MCP"))))
                  (should (eq (agentq-test-get result "result" "isError") t))
                  (should (string-match-p "DENIED\\|REFUSED" (agentq-mcp-test-text result)))
                  (should (equal (with-temp-buffer (insert-file-contents file) (buffer-string)) "hi"))
                  (should (equal (agentq-mcp-test-inline-since before) counts))))))
          (setq answer :approved)
          (should (equal (agentq-mcp-test-text
                          (agentq-mcp-test-call client (cl-incf id) "evaluate_lisp"
                                                `(:code ,(format "(progn (delete-file %S) :gone)" file))))
                         "=> :GONE"))
          (should-not (file-exists-p file)))
      (delete-directory dir t))))

(ert-deftest sly-agent-q-mcp/the-lisp-thread-s-evaluation-asks-before-it-touches-the-world ()
  "World-touching code the Lisp thread runs for an MCP client (handed by
Emacs's thread) asks the approval function once, as the runner's would.
Every such call was taken over: asking is the owner's."
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket)))
      (unwind-protect
          (progn
            (agentq-mcp-test-ready-lisp client)
            (agentq-mcp-test-asks-before-touching client '(0 1 0 0)))
        (delete-process client)))))

(ert-deftest sly-agent-q-mcp/the-lisp-thread-s-evaluation-keeps-its-limits ()
  "A time limit below the moment of the take-over, a loop that ignores
interrupts, and a cancelled loop: each ends as on the runner, and the
next plain call runs on the Lisp thread again."
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket)))
      (unwind-protect
          (progn
            (agentq-mcp-test-ready-lisp client)
            (let* ((start (float-time))
                   (result (agentq-mcp-test-call client 1 "evaluate_lisp" '(:code "(loop)" :timeout 0.001))))
              (should (eq (agentq-test-get result "result" "isError") t))
              (should (string-match-p "TIMEOUT\\|timed out\\|time limit" (agentq-mcp-test-text result)))
              (should (< (- (float-time) start) 5)))
            (let ((result (agentq-mcp-test-call client 2 "evaluate_lisp"
                                                '(:code "(mp:without-interrupts (loop))" :timeout 0.3))))
              (should (eq (agentq-test-get result "result" "isError") t)))
            (agentq-mcp-test-send-call client 3 "evaluate_lisp" '(:code "(loop)"))
            (sleep-for 0.1)
            (agentq-mcp-test-cancel client 3)
            (let ((before (sly-agent-q--module-inline-counts)))
              (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client 4 "evaluate_lisp" '(:code "(+ 2 2)")))
                             "=> 4"))
              (should (agentq-mcp-test-unanswered client 3 0.3))
              (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client 5 "evaluate_lisp" '(:code "(+ 2 3)")))
                             "=> 5"))
              (should (>= (car (agentq-mcp-test-inline-since before)) 1))))
        (delete-process client)))))

(defun agentq-mcp-test-hooked-call (client id counts)
  "With a tool-call hook set, CLIENT's plain evaluation ID runs with it.
COUNTS is what `agentq-mcp-test-inline-since' says of the call."
  (let* ((phases nil)
         (before (sly-agent-q--module-inline-counts))
         (sly-agent-q-tool-execution-functions
          (list (lambda (phase name _args _result) (push (list phase name) phases)))))
    (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client id "evaluate_lisp" '(:code "(+ 1 1)")))
                   "=> 2"))
    (should (equal (reverse phases) '((:before "evaluate_lisp") (:after "evaluate_lisp"))))
    (should (equal (agentq-mcp-test-inline-since before) counts))))

(ert-deftest sly-agent-q-mcp/hooks-or-the-option-keep-calls-off-the-lisp-thread ()
  "With a hook for MCP calls, or `sly-agent-q-mcp-lisp-on-worker' nil, a plain
evaluation goes through the runner: the hook runs on Emacs's thread."
  (agentq-mcp-test-with-server
    (let ((client (agentq-mcp-test-connect socket)))
      (unwind-protect
          (progn
            (agentq-mcp-test-ready-lisp client)
            (agentq-mcp-test-hooked-call client 1 '(0 0 0 0))
            (let ((before (sly-agent-q--module-inline-counts))
                  (sly-agent-q-mcp-lisp-on-worker nil))
              (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client 2 "evaluate_lisp" '(:code "(+ 1 2)")))
                             "=> 3"))
              (should (equal (agentq-mcp-test-inline-since before) '(0 0 0 0))))
            (let ((before (sly-agent-q--module-inline-counts)))
              (should (equal (agentq-mcp-test-text (agentq-mcp-test-call client 3 "evaluate_lisp" '(:code "(+ 1 3)")))
                             "=> 4"))
              (should (equal (agentq-mcp-test-inline-since before) '(1 0 0 0)))))
        (delete-process client)))))

;;;; Requests the Lisp thread reads from the bridge itself

(ert-deftest sly-agent-q-mcp/the-bridge-s-request-fifo-asks-before-it-touches-the-world ()
  "A plain evaluation the Lisp thread read from the bridge's FIFO asks the
approval function (origin MCP) before it touches a file, as Emacs's own
path does; it was read from the FIFO, and taken over to ask."
  (agentq-mcp-test-with-bridge
    (agentq-mcp-test-asks-before-touching bridge '(0 1 1 0))))

(ert-deftest sly-agent-q-mcp/the-bridge-s-direct-request-keeps-order-cancel-and-limits ()
  "While a request read from the FIFO runs, the client's next calls wait in
the bridge and run after it, in order; a ping is answered meanwhile.  A
cancelled one is interrupted and not answered; a loop that ignores
interrupts is abandoned at its limit; each time the next call runs."
  (agentq-mcp-test-with-bridge
    (let ((flag (intern (format "*%s*" (agentq-test-fresh-name "agentq-fifo")))))
      (agentq-mcp-test-send-call bridge 10 "evaluate_lisp"
                                 `(:code ,(format "(progn (sleep 0.3) (defparameter %s :first) :slept)" flag)))
      (agentq-mcp-test-send-call bridge 11 "evaluate_lisp" `(:code ,(format "(symbol-value '%s)" flag)))
      (agentq-mcp-test-send-call bridge 12 "read_buffer" '(:buffer "*scratch*"))
      (should (agentq-mcp-test-request bridge "p" "ping"))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer bridge 10)) "=> :SLEPT"))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer bridge 11)) "=> :FIRST"))
      (should (agentq-mcp-test-answer bridge 12))
      ;; Cancelled while it runs: interrupted, never answered.
      (let ((start (float-time)))
        (agentq-mcp-test-send-call bridge 20 "evaluate_lisp" '(:code "(loop)"))
        (sleep-for 0.2)
        (agentq-mcp-test-cancel bridge 20)
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-call bridge 21 "evaluate_lisp" '(:code "(+ 20 1)")))
                       "=> 21"))
        (should (< (- (float-time) start) 10))
        (should (agentq-mcp-test-unanswered bridge 20 0.3)))
      ;; A cancelled request still waiting in the bridge is never sent.
      (agentq-mcp-test-send-call bridge 30 "evaluate_lisp" '(:code "(progn (sleep 0.3) :a)"))
      (agentq-mcp-test-send-call bridge 31 "evaluate_lisp" `(:code ,(format "(defparameter %s :never)" flag)))
      (agentq-mcp-test-cancel bridge 31)
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer bridge 30)) "=> :A"))
      (should (agentq-mcp-test-unanswered bridge 31 0.3))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-call bridge 32 "evaluate_lisp"
                                                                 `(:code ,(format "(symbol-value '%s)" flag))))
                     "=> :FIRST"))
      (let ((stuck (agentq-mcp-test-call bridge 40 "evaluate_lisp"
                                         '(:code "(mp:without-interrupts (loop))" :timeout 0.3))))
        (should (eq (agentq-test-get stuck "result" "isError") t)))
      (let ((before (sly-agent-q--module-inline-counts)))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-call bridge 41 "evaluate_lisp" '(:code "(+ 40 1)")))
                       "=> 41"))
        (should (equal (nth 2 (agentq-mcp-test-inline-since before)) 1))))))

(ert-deftest sly-agent-q-mcp/the-bridge-s-fifo-hands-on-what-emacs-must-see ()
  "A request read from the FIFO goes to Emacs's thread, as if sent on the
socket, while a hook for tool calls is set, or another client's call is
held for its question; once the hook is gone it is read directly again."
  (agentq-mcp-test-with-bridge
    (progn
      ;; Read, and handed to Emacs's thread, which ran it with its hook.
      (agentq-mcp-test-hooked-call bridge 2 '(0 0 0 1))
      (let ((before (sly-agent-q--module-inline-counts)))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-call bridge 3 "evaluate_lisp" '(:code "(+ 1 2)")))
                       "=> 3"))
        (should (equal (agentq-mcp-test-inline-since before) '(1 0 1 0)))))
    (agentq-mcp-test-with-person
      (let ((other (agentq-mcp-test-connect socket))
            (during nil))
        (setq agentq-mcp-test--scripts
              `(("/held" . ,(lambda ()
                              (let ((before (sly-agent-q--module-inline-counts)))
                                (setq during (list (agentq-mcp-test-text
                                                    (agentq-mcp-test-call bridge 4 "evaluate_lisp" '(:code "(+ 2 2)")))
                                                   (agentq-mcp-test-inline-since before))))
                              :approved))))
        (unwind-protect
            (progn
              (agentq-mcp-test-send-call other 1 name '(:path "/held"))
              (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer other 1)) "ran /held"))
              (should (equal (car during) "=> 4"))
              ;; Declined by the Lisp thread, run by Emacs's way.
              (should (equal (nthcdr 2 (cadr during)) '(0 1))))
          (delete-process other))))))

(ert-deftest sly-agent-q-mcp/a-gone-bridge-s-direct-request-is-stopped ()
  "A bridge that goes away while the Lisp thread runs its request: the
request is interrupted, and another client's call runs at once."
  (agentq-mcp-test-with-bridge
    (agentq-mcp-test-send-call bridge 5 "evaluate_lisp" '(:code "(loop)"))
    (sleep-for 0.2)
    (delete-process bridge)
    (let ((other (agentq-mcp-test-connect socket))
          (start (float-time)))
      (unwind-protect
          (progn
            (should (equal (agentq-mcp-test-text (agentq-mcp-test-call other 1 "evaluate_lisp" '(:code "(+ 3 4)")))
                           "=> 7"))
            (should (< (- (float-time) start) 10)))
        (delete-process other)))))

(ert-deftest sly-agent-q-mcp/a-request-fifo-is-only-a-private-fifo-beside-the-socket ()
  "A request channel asked for elsewhere, as a symbolic link, or when
`sly-agent-q-mcp-lisp-on-worker' is nil is not opened: the answer channel
is, and the result does not say \"requests\"."
  (agentq-mcp-test-with-server
    (let* ((dir (file-name-directory socket))
           (client (agentq-mcp-test-connect socket))
           (elsewhere (make-temp-file "agentq-elsewhere-" t))
           (readers nil)
           (id 0))
      (cl-labels ((fifo (path)
                    (should (zerop (call-process "mkfifo" nil nil nil "-m" "600" path)))
                    path)
                  (answer-reader (path)
                    (push (make-process :name "agentq-fifo-reader" :command (list "cat" path)
                                        :noquery t :buffer nil)
                          readers)
                    (accept-process-output nil 0.1)
                    path)
                  (ask (answers requests)
                    (agentq-mcp-test-request client (cl-incf id) "sly-agent-q/answer-channel"
                                             `(:path ,answers :requests ,requests))))
        (unwind-protect
            (let ((target (fifo (expand-file-name "real-requests" dir))))
              (make-symbolic-link target (expand-file-name "link-requests" dir))
              (fifo (expand-file-name "far-requests" elsewhere))
              (dolist (requests (list (expand-file-name "link-requests" dir)
                                      (expand-file-name "far-requests" elsewhere)))
                (let ((result (agentq-test-get (ask (answer-reader (fifo (expand-file-name (format "a%d" id) dir)))
                                                    requests)
                                               "result")))
                  (should (hash-table-p result))
                  (should-not (gethash "requests" result))))
              (let ((sly-agent-q-mcp-lisp-on-worker nil))
                (should-not (gethash "requests" (agentq-test-get
                                                 (ask (answer-reader (fifo (expand-file-name "b" dir))) target)
                                                 "result"))))
              (should (eq (gethash "requests" (agentq-test-get
                                              (ask (answer-reader (fifo (expand-file-name "c" dir))) target)
                                              "result"))
                          t)))
          (dolist (reader readers) (delete-process reader))
          (delete-process client)
          (delete-directory elsewhere t))))))

(ert-deftest sly-agent-q-mcp/the-bridge-s-fifo-runs-with-the-options-as-set-now ()
  "Options set with `setq' hold for the next requests read from the FIFO
(asking before every agent evaluation, the time limit), and a caller's
let-binding, given to Lisp by its own call, does not leak into them."
  (agentq-mcp-test-with-bridge
    (let* ((asked nil)
           (timeout sly-agent-q-eval-timeout))
     (agentq-mcp-test-with-global sly-agent-q-approval-function
         (lambda (tool _args) (push tool asked) '(:denied "asked"))
      (unwind-protect
          (progn
            (setq sly-agent-q-ask-before-agent-code t)
            (dotimes (i 2)
              (setq asked nil)
              (let ((result (agentq-mcp-test-call bridge (+ 10 i) "evaluate_lisp" '(:code "(+ 1 2)"))))
                (should (equal asked '("evaluate_lisp")))
                (should (eq (agentq-test-get result "result" "isError") t)))))
        (setq sly-agent-q-ask-before-agent-code nil))
      (setq asked nil)
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-call bridge 20 "evaluate_lisp" '(:code "(+ 1 2)")))
                     "=> 3"))
      (should-not asked)
      (let ((sly-agent-q-eval-timeout 0.2))
        (sly-agent-q-execute-tool-calls (list (list :id "s" :name "evaluate_lisp" :arguments '(:code "(+ 1 1)")))))
      (should (equal (agentq-mcp-test-text (agentq-mcp-test-call bridge 30 "evaluate_lisp"
                                                                 '(:code "(progn (sleep 0.5) :slept)")))
                     "=> :SLEPT"))
      (unwind-protect
          (progn
            (setq sly-agent-q-eval-timeout 0.2)
            (dotimes (i 2)
              (let ((result (agentq-mcp-test-call bridge (+ 40 i) "evaluate_lisp" '(:code "(progn (sleep 3) :slept)"))))
                (should (eq (agentq-test-get result "result" "isError") t)))))
        (setq sly-agent-q-eval-timeout timeout))
      (let ((before (sly-agent-q--module-inline-counts)))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-call bridge 50 "evaluate_lisp" '(:code "(+ 2 3)")))
                       "=> 5"))
        (should (equal (agentq-mcp-test-text (agentq-mcp-test-call bridge 51 "evaluate_lisp" '(:code "(+ 2 4)")))
                       "=> 6"))
        ;; Back on the FIFO once Lisp was given the global values again.
        (should (>= (nth 2 (agentq-mcp-test-inline-since before)) 1)))))))

(ert-deftest sly-agent-q-mcp/a-fifo-request-s-question-is-the-global-approval-function-s ()
  "The question of a request read from the FIFO goes to the global approval
function, even when it is served inside someone's synchronous call that
let-binds another (one that approves everything)."
  (let* ((dir (make-temp-file "agentq-mcp-global-" t))
         (file (expand-file-name "x" dir))
         (asked nil))
    (unwind-protect
        (agentq-mcp-test-with-global sly-agent-q-approval-function
            (lambda (tool _args) (push (list 'global tool) asked) '(:denied "the global one says no"))
          (agentq-mcp-test-with-bridge
            (with-temp-file file (insert "hi"))
            (let ((before (sly-agent-q--module-inline-counts)))
              (agentq-mcp-test-send-call bridge 20 "evaluate_lisp"
                                         `(:code ,(format "(progn (delete-file %S) :deleted)" file)))
              (agentq-mcp-test-busy-wait 0.5)
              (let ((sly-agent-q-approval-function
                     (lambda (tool _args) (push (list 'let-bound tool) asked) :approved)))
                (sly-agent-q-execute-tool-calls
                 (list (list :id "s" :name "evaluate_lisp" :arguments '(:code "(+ 1 1)")))))
              (let ((answer (agentq-mcp-test-answer bridge 20)))
                (should (string-match-p "DENIED\\|REFUSED" (agentq-mcp-test-text answer)))
                (should (file-exists-p file))
                (should (equal asked '((global "evaluate_lisp"))))
                (should (equal (nth 2 (agentq-mcp-test-inline-since before)) 1))))))
      (delete-directory dir t))))

(ert-deftest sly-agent-q-mcp/a-let-bound-option-is-never-a-fifo-request-s ()
  "An option let-bound by some caller (while another is set) is not taken
for its global value: with `sly-agent-q-ask-before-agent-code' t globally,
a request read from the FIFO asks, before and after such a binding."
  (let ((asked nil))
    (agentq-mcp-test-with-bridge
      (agentq-mcp-test-with-global sly-agent-q-approval-function
          (lambda (tool _args) (push tool asked) '(:denied "asked"))
        (agentq-mcp-test-with-global sly-agent-q-ask-before-agent-code t
          (dolist (id '(50 51))
            (setq asked nil)
            (should (eq (agentq-test-get (agentq-mcp-test-call bridge id "evaluate_lisp" '(:code "(+ 1 2)"))
                                         "result" "isError")
                        t))
            (should (equal asked '("evaluate_lisp"))))
          (let ((sly-agent-q-ask-before-agent-code nil))
            (setq sly-agent-q-output-limit sly-agent-q-output-limit)
            (sly-agent-q-execute-tool-calls
             (list (list :id "s" :name "evaluate_lisp" :arguments '(:code "(+ 1 1)")))))
          (dolist (id '(52 53))
            (setq asked nil)
            (should (eq (agentq-test-get (agentq-mcp-test-call bridge id "evaluate_lisp" '(:code "(+ 1 2)"))
                                         "result" "isError")
                        t))
            (should (equal asked '("evaluate_lisp")))))))))

(ert-deftest sly-agent-q-mcp/a-fifo-request-cancelled-before-it-was-read-never-runs ()
  "A request the Lisp thread had not read yet (Lisp was busy) that the
client cancels never runs, and is never answered."
  (agentq-mcp-test-with-bridge
    (let ((flag (intern (format "*%s*" (agentq-test-fresh-name "agentq-unread")))))
      (sly-agent-q-execute-tool-calls-async
       (list (list :id "a" :name "evaluate_lisp" :arguments '(:code "(progn (sleep 0.6) :a)")))
       #'ignore)
      (agentq-mcp-test-busy-wait 0.1)
      (agentq-mcp-test-send-call bridge 30 "evaluate_lisp" `(:code ,(format "(progn (defparameter %s :ran) :ran)" flag)))
      (agentq-mcp-test-busy-wait 0.1)
      (agentq-mcp-test-cancel bridge 30)
      (should (agentq-mcp-test-unanswered bridge 30 1.5))
      (should (equal (agentq-mcp-test-text
                      (agentq-mcp-test-call bridge 31 "evaluate_lisp" `(:code ,(format "(boundp '%s)" flag))))
                     "=> NIL")))))

(ert-deftest sly-agent-q-mcp/a-fifo-request-holds-lisp-for-emacs-s-own-calls ()
  "While the Lisp thread runs a request it read from a bridge, Emacs's
synchronous callers (completion, eldoc) see Lisp busy, as for any job."
  (agentq-mcp-test-with-bridge
    (agentq-mcp-test-send-call bridge 10 "evaluate_lisp" '(:code "(progn (sleep 1) :done)"))
    (agentq-mcp-test-busy-wait 0.3)
    (should (sly-agent-q--lisp-busy-p))
    (should (equal (agentq-mcp-test-text (agentq-mcp-test-answer bridge 10)) "=> :DONE"))
    (agentq-mcp-test-wait 0.5 (lambda () (not (sly-agent-q--lisp-busy-p))))
    (should-not (sly-agent-q--lisp-busy-p))))

(provide 'sly-agent-q-mcp-test)

;;; sly-agent-q-mcp-test.el ends here
