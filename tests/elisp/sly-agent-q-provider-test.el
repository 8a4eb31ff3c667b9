;;; sly-agent-q-provider-test.el --- The providers, through real curl to a local server -*- lexical-binding: t; -*-

;;; Commentary:

;; `sly-agent-q-provider-start' against the fake provider on 127.0.0.1:
;; the requests it sends, the replies it reads in both formats, and the
;; errors it reports.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-fake-provider)
(require 'sly-agent-q-provider)

(defmacro agentq-provider-with-server (spec &rest body)
  "Run BODY with SERVER, a fake provider, and BACKEND of TYPE pointing at it.
SPEC is (SERVER BACKEND TYPE)."
  (declare (indent 1) (debug ((symbolp symbolp form) body)))
  (let ((server (nth 0 spec)) (backend (nth 1 spec)) (type (nth 2 spec)))
    `(let* ((,server (sly-agent-q-fake-provider-start))
            (,backend (list :name "fake" :type ,type :url (concat (sly-agent-q-fake-provider-url ,server) "/")
                            :model "fake-model" :key "sk-provider-test-key"))
            (sly-agent-q-provider-backoff-base 0.05))
       (unwind-protect (progn ,@body)
         (sly-agent-q-fake-provider-stop ,server)))))

(defun agentq-provider-run (backend &rest args)
  "Run a request to BACKEND with ARGS; return (:done RESULT :texts PIECES) or (:error MESSAGE)."
  (let* ((outcome nil) (texts nil) (statuses nil)
         (request (apply #'sly-agent-q-provider-start backend
                         (append args
                                 (list :on-text (lambda (text) (push text texts))
                                       :on-status (lambda (status) (push status statuses))
                                       :on-done (lambda (result) (setq outcome (list :done result)))
                                       :on-error (lambda (message) (setq outcome (list :error message))))))))
    (sly-agent-q-fake-provider-wait (lambda () outcome) 20)
    (should-not (sly-agent-q-provider-live-p request))
    (append outcome (list :texts (nreverse texts) :statuses (nreverse statuses)))))

(defconst agentq-provider--conversation
  (list (list :role "user" :content "Add them")
        (list :role "assistant" :content "Adding." :tool-calls
              (list (list :id "c1" :name "evaluate_lisp" :arguments "{\"code\":\"(+ 1 2)\"}")
                    (list :id "c2" :name "evaluate_lisp" :arguments "{\"code\":\"(car 1)\"}")))
        (list :role "tool" :results
              (list (list :id "c1" :name "evaluate_lisp" :content "=> 3" :error nil)
                    (list :id "c2" :name "evaluate_lisp" :content "[ERROR] TYPE-ERROR" :error t)))
        (list :role "user" :content "And?"))
  "A conversation with a tool round, for the conversion tests.")

(ert-deftest sly-agent-q-provider/openai-request-and-stream ()
  (agentq-provider-with-server (server backend 'openai)
    (sly-agent-q-fake-provider-push
     server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream
                                       :text "Three, and an error."
                                       :tool-calls '((:id "x1" :name "describe_symbol" :arguments "{\"symbol\":\"car\"}"))
                                       :split 3)))
    (let* ((outcome (agentq-provider-run backend :messages agentq-provider--conversation :system "Be brief."
                                         :tools (sly-agent-q-tools-schema 'openai)))
           (result (plist-get outcome :done))
           (request (car (sly-agent-q-fake-provider-requests server)))
           (body (plist-get request :json)))
      ;; The reply: text in pieces, in order; the call reassembled.
      (should (equal (plist-get result :text) "Three, and an error."))
      (should (equal (apply #'concat (plist-get outcome :texts)) "Three, and an error."))
      (should (> (length (plist-get outcome :texts)) 3))
      (should (equal (plist-get result :tool-calls)
                     '((:id "x1" :name "describe_symbol" :arguments "{\"symbol\":\"car\"}"))))
      (should (equal (plist-get result :usage) '(:input-tokens 11 :output-tokens 7)))
      ;; The request: path, key in a header, never on curl's command line.
      (should (equal (plist-get request :path) "/v1/chat/completions"))
      (should (equal (cdr (assoc "authorization" (plist-get request :headers))) "Bearer sk-provider-test-key"))
      (should (equal (gethash "model" body) "fake-model"))
      (should (eq (gethash "stream" body) t))
      (let ((messages (gethash "messages" body)))
        (should (equal (mapcar (lambda (m) (gethash "role" m)) messages)
                       '("system" "user" "assistant" "tool" "tool" "user")))
        (should (equal (gethash "content" (aref messages 0)) "Be brief."))
        (should (equal (agentq-test-get messages 2 "tool_calls" 1 "function" "arguments") "{\"code\":\"(car 1)\"}"))
        (should (equal (gethash "tool_call_id" (aref messages 4)) "c2"))
        (should (equal (gethash "content" (aref messages 4)) "[ERROR] TYPE-ERROR")))
      (should (> (length (gethash "tools" body)) 10)))))

(ert-deftest sly-agent-q-provider/anthropic-request-and-stream ()
  (agentq-provider-with-server (server backend 'anthropic)
    (sly-agent-q-fake-provider-push
     server (list :status 200 :chunks (sly-agent-q-fake-provider-anthropic-stream
                                       :text "On it."
                                       :tool-calls '((:id "t1" :name "evaluate_lisp" :arguments "{\"code\":\"(list 1 \\\"λ\\\")\"}")
                                                     (:id "t2" :name "apropos_search" :arguments "{\"pattern\":\"hash\"}"))
                                       :split 4)))
    (let* ((outcome (agentq-provider-run backend :messages agentq-provider--conversation :system "Be brief."))
           (result (plist-get outcome :done))
           (request (car (sly-agent-q-fake-provider-requests server)))
           (body (plist-get request :json)))
      (should (equal (plist-get result :text) "On it."))
      (should (equal (plist-get result :tool-calls)
                     '((:id "t1" :name "evaluate_lisp" :arguments "{\"code\":\"(list 1 \\\"λ\\\")\"}")
                       (:id "t2" :name "apropos_search" :arguments "{\"pattern\":\"hash\"}"))))
      (should (equal (plist-get result :stop-reason) "tool_use"))
      (should (equal (plist-get request :path) "/v1/messages"))
      (should (equal (cdr (assoc "x-api-key" (plist-get request :headers))) "sk-provider-test-key"))
      (should (cdr (assoc "anthropic-version" (plist-get request :headers))))
      (should (equal (gethash "system" body) "Be brief."))
      (should (= (gethash "max_tokens" body) sly-agent-q-max-tokens))
      (let ((messages (gethash "messages" body)))
        ;; The tool results and the next question merge into one user turn.
        (should (equal (mapcar (lambda (m) (gethash "role" m)) messages) '("user" "assistant" "user")))
        (should (equal (agentq-test-get messages 1 "content" 1 "input" "code") "(+ 1 2)"))
        (let ((blocks (gethash "content" (aref messages 2))))
          (should (equal (mapcar (lambda (b) (gethash "type" b)) blocks) '("tool_result" "tool_result" "text")))
          (should (equal (gethash "tool_use_id" (aref blocks 1)) "c2"))
          (should (eq (gethash "is_error" (aref blocks 0)) :false))
          (should (eq (gethash "is_error" (aref blocks 1)) t)))))))

(ert-deftest sly-agent-q-provider/non-streamed-replies ()
  (dolist (type '(openai anthropic))
    (agentq-provider-with-server (server backend type)
      (sly-agent-q-fake-provider-push
       server (list :status 200 :body (funcall (if (eq type 'openai)
                                                   #'sly-agent-q-fake-provider-openai-reply
                                                 #'sly-agent-q-fake-provider-anthropic-reply)
                                               :text "Whole."
                                               :tool-calls '((:id "n1" :name "evaluate_lisp" :arguments "{\"code\":\"1\"}")))))
      (let* ((outcome (agentq-provider-run backend :messages '((:role "user" :content "hi")) :stream nil))
             (result (plist-get outcome :done)))
        (should (equal (plist-get outcome :texts) '("Whole.")))
        (should (equal (plist-get result :tool-calls) '((:id "n1" :name "evaluate_lisp" :arguments "{\"code\":\"1\"}"))))
        (should (eq (gethash "stream" (plist-get (car (sly-agent-q-fake-provider-requests server)) :json)) :false))))))

(ert-deftest sly-agent-q-provider/key-stays-off-the-command-line ()
  (agentq-provider-with-server (server backend 'openai)
    (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "x")))
    (let* ((done nil)
           (request (sly-agent-q-provider-start backend :messages '((:role "user" :content "hi"))
                                                :on-done (lambda (_) (setq done t)))))
      (should-not (cl-some (lambda (word) (string-match-p "sk-provider" word))
                           (process-command (sly-agent-q-provider--request-process request))))
      (sly-agent-q-fake-provider-wait (lambda () done))
      ;; The body file is gone with the request.
      (should-not (file-exists-p (sly-agent-q-provider--request-body-file request))))))

(ert-deftest sly-agent-q-provider/keys ()
  (let ((backend (list :name "k" :type 'openai :url "https://api.example.test/v1" :model "m")))
    (should (equal (sly-agent-q-provider--key (plist-put (copy-sequence backend) :key "s1")) "s1"))
    (should (equal (sly-agent-q-provider--key (plist-put (copy-sequence backend) :key (lambda () "s2"))) "s2"))
    (let ((process-environment (cons "AGENTQ_TEST_KEY=s3" process-environment)))
      (should (equal (sly-agent-q-provider--key (plist-put (copy-sequence backend) :key '(:env "AGENTQ_TEST_KEY"))) "s3")))
    (let* ((file (make-temp-file "agentq-authinfo"))
           (auth-sources (list file)))
      (unwind-protect
          (progn
            (with-temp-file file (insert "machine api.example.test login apikey password s4\n"))
            (auth-source-forget-all-cached)
            (should (equal (sly-agent-q-provider--key backend) "s4"))
            (should (null (sly-agent-q-provider--key (plist-put (copy-sequence backend) :url "http://127.0.0.1:1/v1")))))
        (auth-source-forget-all-cached)
        (delete-file file)))
    (should-error (sly-agent-q-provider-backend "no-such-backend") :type 'user-error))
  ;; M-x sly-agent-q-select-backend switches by name.
  (let ((sly-agent-q-backends '((:name "one" :type openai :url "http://127.0.0.1:1/v1" :model "a")
                                (:name "two" :type anthropic :url "http://127.0.0.1:2/v1" :model "b")))
        (sly-agent-q-backend "one"))
    (sly-agent-q-select-backend "two")
    (should (equal sly-agent-q-backend "two"))
    (should (equal (plist-get (sly-agent-q-provider-backend) :model) "b"))
    (should-error (sly-agent-q-select-backend "three") :type 'user-error)))

(ert-deftest sly-agent-q-provider/http-errors ()
  (let ((sly-agent-q-provider-max-retries 1))
    (agentq-provider-with-server (server backend 'openai)
      (dolist (case '((401 "{\"error\":{\"message\":\"Incorrect API key\"}}" "authentication.*Incorrect API key.*:key")
                      (404 "{\"error\":{\"message\":\"The model does not exist\"}}" "404.*model \"fake-model\"")
                      (400 "{\"error\":{\"message\":\"bad tools\"}}" "HTTP 400: bad tools")))
        (sly-agent-q-fake-provider-push server (list :status (nth 0 case) :body (nth 1 case)))
        (let ((outcome (agentq-provider-run backend :messages '((:role "user" :content "hi")))))
          (should (string-match-p (nth 2 case) (plist-get outcome :error)))
          (should-not (string-match-p "sk-provider" (plist-get outcome :error)))))
      ;; 429 and 5xx are retried, Retry-After honoured, then succeed...
      (sly-agent-q-fake-provider-push server (list :status 429 :headers '(("Retry-After" . "0")) :body "{\"error\":{\"message\":\"slow down\"}}"))
      (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "after 429")))
      (let ((outcome (agentq-provider-run backend :messages '((:role "user" :content "hi")))))
        (should (equal (plist-get (plist-get outcome :done) :text) "after 429"))
        (should (string-match-p "429.*retrying" (car (plist-get outcome :statuses)))))
      (sly-agent-q-fake-provider-push server (list :status 503 :body "overloaded"))
      (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "after 503")))
      (should (equal (plist-get (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :done) :text)
                     "after 503"))
      ;; ... or give up with a clear message.
      (dotimes (_ 2) (sly-agent-q-fake-provider-push server (list :status 429 :body "{\"error\":{\"message\":\"quota\"}}")))
      (should (string-match-p "rate limiting (HTTP 429) after 1 retries: quota"
                              (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :error)))
      (dotimes (_ 2) (sly-agent-q-fake-provider-push server (list :status 500 :body "boom")))
      (should (string-match-p "failed (HTTP 500) after 1 retries: boom"
                              (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :error))))))

(ert-deftest sly-agent-q-provider/broken-replies ()
  (agentq-provider-with-server (server backend 'openai)
    ;; Cut short: the connection closes in mid-stream.
    (sly-agent-q-fake-provider-push server (list :status 200 :close-early t
                                                 :chunks (sly-agent-q-fake-provider-openai-stream :text "abcdefgh" :split 1)))
    (should (string-match-p "ended before it was complete"
                            (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :error)))
    ;; Not JSON, streamed or whole.
    (sly-agent-q-fake-provider-push server (list :status 200 :chunks '("data: {\"choices\": [\n\n")))
    (should (string-match-p "could not be read"
                            (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :error)))
    (sly-agent-q-fake-provider-push server (list :status 200 :body "<html>proxy error</html>"))
    (should (string-match-p "could not be read.*not JSON"
                            (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi")) :stream nil)
                                       :error)))))

(ert-deftest sly-agent-q-provider/multibyte-split-between-packets ()
  (agentq-provider-with-server (server backend 'openai)
    ;; The event with "λ→😀" goes out a byte at a time: each character's
    ;; UTF-8 bytes arrive in separate writes.
    (let* ((events (mapcar (lambda (event) (encode-coding-string event 'utf-8))
                           (sly-agent-q-fake-provider-openai-stream :text "λ→😀")))
           (text-event (nth 1 events)))
      (should (string-match-p "λ" (decode-coding-string text-event 'utf-8)))
      (sly-agent-q-fake-provider-push
       server (list :status 200 :raw t :chunk-delay 0.005
                    :chunks (append (list (nth 0 events))
                                    (cl-loop for i from 0 below (length text-event)
                                             collect (substring text-event i (1+ i)))
                                    (nthcdr 2 events))))
      (let ((outcome (agentq-provider-run backend :messages '((:role "user" :content "hi")))))
        (should (equal (plist-get (plist-get outcome :done) :text) "λ→😀"))))))

(ert-deftest sly-agent-q-provider/long-stream ()
  (agentq-provider-with-server (server backend 'anthropic)
    (let ((text (apply #'concat (make-list 4000 "0123456789 abcdefghijklmnopqrstuvwxyz ÀÉÎ λ\n"))))
      (sly-agent-q-fake-provider-push
       server (list :status 200 :chunks (sly-agent-q-fake-provider-anthropic-stream :text text :split 97)))
      (let ((outcome (agentq-provider-run backend :messages '((:role "user" :content "long")))))
        (should (equal (plist-get (plist-get outcome :done) :text) text))
        (should (> (length (plist-get outcome :texts)) 1000))))))

(ert-deftest sly-agent-q-provider/cancel-stops-everything ()
  (agentq-provider-with-server (server backend 'anthropic)
    (sly-agent-q-fake-provider-push server (list :status 200 :chunk-delay 0.2
                                                 :chunks (sly-agent-q-fake-provider-anthropic-stream :text "slowly, slowly" :split 1)))
    (let* ((calls 0)
           (request (sly-agent-q-provider-start backend :messages '((:role "user" :content "hi"))
                                                :on-text (lambda (_) (cl-incf calls))
                                                :on-done (lambda (_) (cl-incf calls 100))
                                                :on-error (lambda (_) (cl-incf calls 100)))))
      (sly-agent-q-fake-provider-wait (lambda () (> calls 0)))
      (sly-agent-q-provider-cancel request)
      (let ((seen calls))
        (sleep-for 0.7)
        (should (= calls seen)))
      (should-not (process-live-p (sly-agent-q-provider--request-process request)))
      (should-not (sly-agent-q-provider-live-p request)))))

(defun agentq-provider--header (server name)
  "Header NAME (lower case) of SERVER's last request, or nil."
  (cdr (assoc name (plist-get (car (last (sly-agent-q-fake-provider-requests server))) :headers))))

(ert-deftest sly-agent-q-provider/two-tool-calls-streamed-in-pieces ()
  ;; Both formats: the calls' arguments come in 2-character pieces, each
  ;; call's id and name once; :on-tool-call hears of each call once, in order.
  (dolist (type '(openai anthropic))
    (agentq-provider-with-server (server backend type)
      (let ((calls '((:id "call_a" :name "evaluate_lisp" :arguments "{\"code\":\"(mapcar #'1+ '(1 2 3))\"}")
                     (:id "call_b" :name "describe_symbol" :arguments "{\"symbol\":\"λ-list\",\"package\":\"CL-USER\"}")))
            (started nil))
        (sly-agent-q-fake-provider-push
         server (list :status 200 :chunks (funcall (if (eq type 'openai)
                                                       #'sly-agent-q-fake-provider-openai-stream
                                                     #'sly-agent-q-fake-provider-anthropic-stream)
                                                   :tool-calls calls :split 2)))
        (let* ((outcome (agentq-provider-run backend :messages '((:role "user" :content "go"))
                                             :on-tool-call (lambda (id name) (push (list id name) started))))
               (result (plist-get outcome :done)))
          (should (equal (plist-get result :tool-calls) calls))
          (should (equal (plist-get result :text) ""))
          (should (equal (nreverse started) '(("call_a" "evaluate_lisp") ("call_b" "describe_symbol"))))
          (should (equal (plist-get result :stop-reason) (if (eq type 'openai) "tool_calls" "tool_use")))
          (should (equal (plist-get result :usage) '(:input-tokens 11 :output-tokens 7))))))))

(ert-deftest sly-agent-q-provider/request-bodies ()
  ;; What goes out besides the conversation: tools (none when nil or
  ;; empty), the stream flag and its options, max_tokens, the headers.
  (agentq-provider-with-server (server backend 'anthropic)
    (let ((backend (append backend '(:max-tokens 123 :headers (("X-Extra" . "yes"))))))
      (sly-agent-q-fake-provider-push server (list :status 200 :body (sly-agent-q-fake-provider-anthropic-reply :text "ok")))
      (let* ((tools (sly-agent-q-tools-schema 'anthropic))
             (request (sly-agent-q-provider-start backend :messages '((:role "user" :content "hi")) :tools tools :stream nil
                                                  :on-done #'ignore))
             (command (process-command (sly-agent-q-provider--request-process request))))
        (should-not (cl-some (lambda (word) (string-search "sk-provider" word)) command))
        (should (member "--config" command))
        (sly-agent-q-fake-provider-wait (lambda () (not (sly-agent-q-provider-live-p request))))
        (let ((body (plist-get (car (sly-agent-q-fake-provider-requests server)) :json)))
          (should (= (gethash "max_tokens" body) 123))
          (should (eq (gethash "stream" body) :false))
          (should-not (gethash "system" body))
          (should (= (length (gethash "tools" body)) (length tools)))
          ;; Anthropic's schema: name and input_schema, no "function" wrapper.
          (should (gethash "input_schema" (aref (gethash "tools" body) 0)))
          (should (equal (agentq-provider--header server "x-extra") "yes"))
          (should (equal (agentq-provider--header server "anthropic-version") "2023-06-01"))
          (should (string-prefix-p "application/json" (agentq-provider--header server "content-type")))
          (should-not (agentq-provider--header server "authorization"))))))
  (agentq-provider-with-server (server backend 'openai)
    (dolist (tools '(nil []))
      (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "ok")))
      (agentq-provider-run backend :messages '((:role "user" :content "hi")) :tools tools)
      (let ((body (plist-get (car (last (sly-agent-q-fake-provider-requests server))) :json)))
        (should (eq (gethash "tools" body 'absent) 'absent))
        (should (eq (gethash "stream" body) t))
        (should (eq (agentq-test-get body "stream_options" "include_usage") t))
        ;; No system prompt: the conversation starts with the user.
        (should (equal (agentq-test-get body "messages" 0 "role") "user"))))
    (sly-agent-q-fake-provider-push server (list :status 200 :body (sly-agent-q-fake-provider-openai-reply :text "ok")))
    (agentq-provider-run backend :messages '((:role "user" :content "hi")) :stream nil)
    (should (eq (gethash "stream_options" (plist-get (car (last (sly-agent-q-fake-provider-requests server))) :json) 'absent)
                'absent))))

(ert-deftest sly-agent-q-provider/keys-reach-the-server ()
  ;; Each way of giving a key, through a real request; none on curl's
  ;; command line; no key at all for a local server without one.
  (let* ((directory (make-temp-file "agentq-auth" t))
         (authinfo (expand-file-name "authinfo" directory))
         (auth-sources (list authinfo))
         (process-environment (cons "AGENTQ_PROVIDER_TEST_KEY=sk-from-env" process-environment)))
    (unwind-protect
        (agentq-provider-with-server (server backend 'openai)
          (with-temp-file authinfo (insert "machine 127.0.0.1 login apikey password sk-from-authinfo\n"))
          (auth-source-forget-all-cached)
          (dolist (case '(("sk-as-string" . "sk-as-string")
                          ((:env "AGENTQ_PROVIDER_TEST_KEY") . "sk-from-env")
                          (nil . "sk-from-authinfo")))
            (let ((backend (plist-put (copy-sequence backend) :key (car case))))
              (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "ok")))
              (let* ((done nil)
                     (request (sly-agent-q-provider-start backend :messages '((:role "user" :content "hi"))
                                                          :on-done (lambda (_) (setq done t)))))
                (should-not (cl-some (lambda (word) (string-search (cdr case) word))
                                     (process-command (sly-agent-q-provider--request-process request))))
                (sly-agent-q-fake-provider-wait (lambda () done))
                (should (equal (agentq-provider--header server "authorization") (concat "Bearer " (cdr case)))))))
          (let ((backend (plist-put (copy-sequence backend) :key (lambda () "sk-from-function"))))
            (setf (plist-get backend :type) 'anthropic)
            (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-anthropic-stream :text "ok")))
            (agentq-provider-run backend :messages '((:role "user" :content "hi")))
            (should (equal (agentq-provider--header server "x-api-key") "sk-from-function")))
          ;; Nothing in auth-source for this host: no Authorization header.
          (with-temp-file authinfo (insert "machine elsewhere.example login apikey password sk-not-ours\n"))
          (auth-source-forget-all-cached)
          (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "ok")))
          (should (plist-get (agentq-provider-run (plist-put (copy-sequence backend) :key nil)
                                                  :messages '((:role "user" :content "hi")))
                             :done))
          (should-not (agentq-provider--header server "authorization")))
      (auth-source-forget-all-cached)
      (delete-directory directory t))))

(ert-deftest sly-agent-q-provider/anthropic-errors ()
  ;; Anthropic's error bodies, the 403 and 404 messages, an error event
  ;; in mid-stream.
  (agentq-provider-with-server (server backend 'anthropic)
    (dolist (case '((401 "authentication_error" "invalid x-api-key"
                         "backend \"fake\".*authentication.*invalid x-api-key.*:key")
                    (403 "permission_error" "not allowed"
                         "backend \"fake\".*HTTP 403, authentication.*not allowed.*:key")
                    (404 "not_found_error" "model: fake-model"
                         "404.*model \"fake-model\".*URL http://127\\.0\\.0\\.1:[0-9]+/v1")))
      (sly-agent-q-fake-provider-push
       server (list :status (nth 0 case)
                    :body (json-serialize `(:type "error" :error (:type ,(nth 1 case) :message ,(nth 2 case))))))
      (let ((message (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :error)))
        (should (string-match-p (nth 3 case) message))
        (should-not (string-search "sk-provider" message))))
    (sly-agent-q-fake-provider-push
     server (list :status 200
                  :chunks (append (butlast (sly-agent-q-fake-provider-anthropic-stream :text "partial answer") 3)
                                  (list "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))))
    (let ((outcome (agentq-provider-run backend :messages '((:role "user" :content "hi")))))
      (should (string-match-p "error in mid-reply: Overloaded" (plist-get outcome :error)))
      (should (equal (apply #'concat (plist-get outcome :texts)) "partial answer")))))

(ert-deftest sly-agent-q-provider/retries-wait-as-told ()
  (agentq-provider-with-server (server backend 'anthropic)
    ;; Retry-After: 1 is waited for.
    (sly-agent-q-fake-provider-push server (list :status 429 :headers '(("Retry-After" . "1"))
                                                 :body "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow\"}}"))
    (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-anthropic-stream :text "waited")))
    (let* ((start (float-time))
           (outcome (agentq-provider-run backend :messages '((:role "user" :content "hi")))))
      (should (>= (- (float-time) start) 0.9))
      (should (equal (plist-get (plist-get outcome :done) :text) "waited"))
      (should (equal (length (sly-agent-q-fake-provider-requests server)) 2))
      (should (string-match-p "rate limited.*retrying in 1 s (attempt 2 of 4)" (car (plist-get outcome :statuses)))))
    ;; Without Retry-After: 1, 2, 4... times the base, up to the limit.
    (dotimes (_ 4) (sly-agent-q-fake-provider-push server (list :status 502 :body "bad gateway")))
    (let ((outcome (agentq-provider-run backend :messages '((:role "user" :content "hi")))))
      (should (equal (mapcar (lambda (status)
                               (and (string-match "retrying in \\([0-9.]+\\) s (attempt \\([0-9]\\) of 4)" status)
                                    (list (string-to-number (match-string 1 status)) (match-string 2 status))))
                             (plist-get outcome :statuses))
                     '((0.05 "2") (0.1 "3") (0.2 "4"))))
      (should (string-match-p "failed (HTTP 502) after 3 retries: bad gateway" (plist-get outcome :error)))
      (should (equal (length (sly-agent-q-fake-provider-requests server)) 6)))))

(ert-deftest sly-agent-q-provider/nothing-listening ()
  (let* ((server (sly-agent-q-fake-provider-start))
         (url (sly-agent-q-fake-provider-url server)))
    ;; The port was the server's: nothing listens there once it stops.
    (sly-agent-q-fake-provider-stop server)
    (dolist (url (list url "http://no-such-host.invalid/v1"))
      (let ((message (plist-get (agentq-provider-run (list :name "gone" :type 'openai :url url :model "m" :key "k")
                                                     :messages '((:role "user" :content "hi")))
                                :error)))
        (should (string-match-p (concat "Nothing answered at " (regexp-quote url)) message))
        (should (string-match-p "curl exit [67]" message))))))

(ert-deftest sly-agent-q-provider/stream-without-done-or-usage ()
  ;; A server that ends the stream after the finish_reason, with no
  ;; usage chunk and no [DONE]: the reply is whole, its usage unknown.
  (agentq-provider-with-server (server backend 'openai)
    (sly-agent-q-fake-provider-push
     server (list :status 200 :chunks (butlast (sly-agent-q-fake-provider-openai-stream :text "short and sweet" :split 5) 2)))
    (let ((result (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :done)))
      (should (equal (plist-get result :text) "short and sweet"))
      (should (equal (plist-get result :stop-reason) "stop"))
      (should (equal (plist-get result :usage) '(:input-tokens nil :output-tokens nil))))
    ;; Without the finish_reason as well, it was cut short.
    (sly-agent-q-fake-provider-push
     server (list :status 200 :chunks (butlast (sly-agent-q-fake-provider-openai-stream :text "short and sweet" :split 5) 3)))
    (should (string-match-p "ended before it was complete"
                            (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :error)))))

(ert-deftest sly-agent-q-provider/failing-callbacks-and-cancel-from-a-callback ()
  (agentq-provider-with-server (server backend 'openai)
    ;; An error in the caller's :on-text is reported and the reply read on.
    (sly-agent-q-fake-provider-push server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "abcdef" :split 2)))
    (let* ((messages nil)
           (outcome (cl-letf* ((real-message (symbol-function 'message))
                               ((symbol-function 'message)
                                (lambda (format &rest args)
                                  (push (apply #'format-message format args) messages)
                                  (apply real-message format args))))
                      (agentq-provider-run backend :messages '((:role "user" :content "hi"))
                                           :on-text (lambda (_) (error "Callback bug"))))))
      (should (equal (plist-get (plist-get outcome :done) :text) "abcdef"))
      (should (cl-some (lambda (m) (string-match-p ":on-text callback failed: Callback bug" m)) messages))))
  (agentq-provider-with-server (server backend 'anthropic)
    ;; Cancelled from :on-text: nothing more, not even what was read with it.
    (sly-agent-q-fake-provider-push
     server (list :status 200 :body (sly-agent-q-fake-provider-anthropic-reply
                                     :text "first" :tool-calls '((:id "t1" :name "evaluate_lisp" :arguments "{}")))))
    (let* ((events nil)
           (request nil))
      (setq request (sly-agent-q-provider-start
                     backend :messages '((:role "user" :content "hi")) :stream nil
                     :on-text (lambda (text) (push (list :text text) events) (sly-agent-q-provider-cancel request))
                     :on-tool-call (lambda (id _name) (push (list :tool-call id) events))
                     :on-done (lambda (_) (push :done events))
                     :on-error (lambda (_) (push :error events))))
      (sly-agent-q-fake-provider-wait (lambda () events))
      (sleep-for 0.2)
      (should (equal events '((:text "first"))))
      (should-not (sly-agent-q-provider-live-p request)))))

(ert-deftest sly-agent-q-provider/failures-before-curl-runs ()
  ;; A key function that fails, or no curl: :on-error, after the handle
  ;; is returned, and no process left behind.
  (dolist (case (list (list :key (lambda () (error "Vault locked")) :expect "backend \"vault\".*could not be made: Vault locked")
                      (list :program "/nonexistent/curl" :expect "needs curl.*/nonexistent/curl")))
    (let* ((sly-agent-q-curl-program (or (plist-get case :program) sly-agent-q-curl-program))
           (processes (process-list))
           (outcome nil)
           (request (sly-agent-q-provider-start
                     (list :name "vault" :type 'openai :url "http://127.0.0.1:1/v1" :model "m" :key (plist-get case :key))
                     :messages '((:role "user" :content "hi"))
                     :on-done (lambda (_) (setq outcome :done))
                     :on-error (lambda (message) (setq outcome message)))))
      (should-not outcome)                ; not before the handle is returned
      (should (equal (process-list) processes))
      (sly-agent-q-fake-provider-wait (lambda () outcome))
      (should (string-match-p (plist-get case :expect) outcome))
      (should-not (sly-agent-q-provider-live-p request))
      (should-not (file-exists-p (sly-agent-q-provider--request-body-file request))))))

(ert-deftest sly-agent-q-provider/one-long-event-in-many-pieces ()
  ;; A 200 KB tool-call argument in a single event, cut every 1000 bytes
  ;; (and so inside characters): whole, and read without rescanning.
  (agentq-provider-with-server (server backend 'openai)
    (let* ((code (apply #'concat (make-list 5000 "(λ x) ;; 0123456789abcdefghij\n")))
           (arguments (json-serialize (list :code code)))
           (events (sly-agent-q-fake-provider-openai-stream
                    :text "Here: λ" :tool-calls (list (list :id "big" :name "evaluate_lisp" :arguments arguments)))))
      (should (> (length (nth 3 events)) 150000))
      (sly-agent-q-fake-provider-push server (list :status 200 :raw t :chunks (sly-agent-q-fake-provider-rechunk events 1000)))
      (let* ((start (float-time))
             (result (plist-get (agentq-provider-run backend :messages '((:role "user" :content "hi"))) :done)))
        (should (< (- (float-time) start) 5))
        (should (equal (plist-get result :text) "Here: λ"))
        (should (equal (plist-get (car (plist-get result :tool-calls)) :arguments) arguments))
        (should (equal (gethash "code" (json-parse-string (plist-get (car (plist-get result :tool-calls)) :arguments)))
                       code))))))

(provide 'sly-agent-q-provider-test)

;;; sly-agent-q-provider-test.el ends here
