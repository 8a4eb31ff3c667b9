;;; sly-agent-q-fake-provider.el --- An LLM server on 127.0.0.1 for the chat's tests -*- lexical-binding: t; -*-

;;; Commentary:

;; A real HTTP server (`make-network-process' :server t on 127.0.0.1, a
;; port the system picks) that answers each request with the next
;; scripted response and records the requests.  The chat reaches it
;; through real curl, as it would reach OpenAI or Anthropic.
;;
;;   (let ((server (sly-agent-q-fake-provider-start)))
;;     (sly-agent-q-fake-provider-push
;;      server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "Hi" :split 1)))
;;     ... (sly-agent-q-fake-provider-url server) => "http://127.0.0.1:PORT/v1"
;;     (sly-agent-q-fake-provider-requests server) ; => ((:method "POST" :path ... :headers ... :text ... :json ...))
;;     (sly-agent-q-fake-provider-stop server))
;;
;; A response is (:status N :headers ALIST :body TEXT) or (:status N
;; :chunks (TEXT ...) :chunk-delay SECONDS :close-early BOOL :raw BOOL):
;; chunks are written one by one, UTF-8 encoded unless :raw says they are
;; bytes already; :close-early closes the connection after half of them
;; (a reply cut short).  With no response
;; queued the server answers 500.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'ert)

(cl-defstruct (sly-agent-q-fake-provider (:constructor sly-agent-q-fake-provider--make) (:copier nil))
  "A fake LLM server."
  process port (responses nil) (log nil))

(defun sly-agent-q-fake-provider-start ()
  "Start a fake provider on 127.0.0.1; return it."
  (let* ((server (sly-agent-q-fake-provider--make))
         (process (make-network-process
                   :name "agentq-fake-provider" :server t :host "127.0.0.1" :service t
                   :family 'ipv4 :coding 'binary :noquery t
                   :filter (lambda (connection bytes) (sly-agent-q-fake-provider--input server connection bytes)))))
    (setf (sly-agent-q-fake-provider-process server) process
          (sly-agent-q-fake-provider-port server) (process-contact process :service))
    server))

(defun sly-agent-q-fake-provider-url (server)
  "The base URL of SERVER's API."
  (format "http://127.0.0.1:%d/v1" (sly-agent-q-fake-provider-port server)))

(defun sly-agent-q-fake-provider-stop (server)
  "Stop SERVER and close its connections."
  (dolist (process (process-list))
    (when (and (eq (process-get process 'agentq-fake-server) server) (process-live-p process))
      (delete-process process)))
  (when (process-live-p (sly-agent-q-fake-provider-process server))
    (delete-process (sly-agent-q-fake-provider-process server))))

(defun sly-agent-q-fake-provider-push (server response)
  "Queue RESPONSE as SERVER's answer to a coming request."
  (setf (sly-agent-q-fake-provider-responses server)
        (append (sly-agent-q-fake-provider-responses server) (list response))))

(defun sly-agent-q-fake-provider-requests (server)
  "SERVER's requests so far, oldest first.
Each is (:method M :path P :headers ALIST :text BODY :json HASH-TABLE),
header names in lower case, :json nil when the body is not JSON."
  (reverse (sly-agent-q-fake-provider-log server)))

(defun sly-agent-q-fake-provider-wait (predicate &optional timeout)
  "Process input until PREDICATE is true; fail the test after TIMEOUT s (10)."
  (let ((deadline (+ (float-time) (or timeout 10))))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (unless (funcall predicate)
      (ert-fail (list "sly-agent-q-fake-provider-wait: timed out" predicate)))))

;;;; Serving

(defun sly-agent-q-fake-provider--input (server connection bytes)
  "Take BYTES from CONNECTION, a client of SERVER.
Once the request is whole (its Content-Length read, in however many
pieces it came), record it and answer with SERVER's next response."
  (process-put connection 'agentq-fake-server server)
  (let ((data (concat (or (process-get connection 'agentq-data) "") bytes)))
    (process-put connection 'agentq-data data)
    (when-let ((end (string-search "\r\n\r\n" data)))
      (let* ((head (split-string (substring data 0 end) "\r\n"))
             (headers (mapcar (lambda (line)
                                (when (string-match "\\`\\([^:]+\\):[ \t]*\\(.*\\)\\'" line)
                                  (cons (downcase (match-string 1 line)) (match-string 2 line))))
                              (cdr head)))
             (length (string-to-number (or (cdr (assoc "content-length" headers)) "0")))
             (body-start (+ end 4)))
        (when (and (>= (- (length data) body-start) length)
                   (not (process-get connection 'agentq-answered)))
          (process-put connection 'agentq-answered t)
          (let* ((request-line (split-string (car head) " "))
                 (text (decode-coding-string (substring data body-start (+ body-start length)) 'utf-8)))
            (push (list :method (nth 0 request-line) :path (nth 1 request-line)
                        :headers (delq nil headers) :text text
                        :json (condition-case nil (json-parse-string text) (error nil)))
                  (sly-agent-q-fake-provider-log server)))
          (let ((response (or (pop (sly-agent-q-fake-provider-responses server))
                              (list :status 500 :body "{\"error\":{\"message\":\"no response scripted\"}}"))))
            (sly-agent-q-fake-provider--respond connection response)))))))

(defun sly-agent-q-fake-provider--respond (connection response)
  "Write RESPONSE on CONNECTION."
  (let* ((status (plist-get response :status))
         (chunks (plist-get response :chunks))
         (body (and (not chunks) (encode-coding-string (or (plist-get response :body) "") 'utf-8))))
    (process-send-string
     connection
     (concat (format "HTTP/1.1 %d %s\r\n" status (if (<= 200 status 299) "OK" "Error"))
             (if chunks "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
               (format "Content-Type: application/json\r\nContent-Length: %d\r\n" (length body)))
             (mapconcat (lambda (h) (format "%s: %s\r\n" (car h) (cdr h))) (plist-get response :headers) "")
             "Connection: close\r\n\r\n"))
    (if (not chunks)
        (progn (process-send-string connection body)
               (sly-agent-q-fake-provider--close connection))
      (let ((chunks (if (plist-get response :raw)
                        chunks          ; bytes already
                      (mapcar (lambda (c) (encode-coding-string c 'utf-8)) chunks))))
        (when (plist-get response :close-early)
          (setq chunks (cl-subseq chunks 0 (/ (length chunks) 2))))
        (sly-agent-q-fake-provider--send-chunks connection chunks (or (plist-get response :chunk-delay) 0))))))

(defun sly-agent-q-fake-provider--send-chunks (connection chunks delay)
  "Write CHUNKS on CONNECTION, DELAY seconds apart, then close it."
  (if (zerop delay)
      (progn (dolist (chunk chunks)
               (when (process-live-p connection) (process-send-string connection chunk)))
             (sly-agent-q-fake-provider--close connection))
    (cl-labels ((next (rest)
                  (cond ((not (process-live-p connection)) nil)
                        ((null rest) (sly-agent-q-fake-provider--close connection))
                        (t (process-send-string connection (car rest))
                           (run-with-timer delay nil #'next (cdr rest))))))
      (next chunks))))

(defun sly-agent-q-fake-provider--close (connection)
  "Close CONNECTION once what was written has gone out."
  (when (process-live-p connection)
    (process-send-eof connection)
    (run-with-timer 0.05 nil (lambda () (when (process-live-p connection) (delete-process connection))))))

;;;; Replies in both formats

(defun sly-agent-q-fake-provider-rechunk (chunks size)
  "CHUNKS (strings) joined, UTF-8 encoded and cut every SIZE bytes.
For a response with :raw t: the pieces fall anywhere, inside an event's
line or a character's bytes, as TCP may cut them."
  (let ((bytes (encode-coding-string (apply #'concat chunks) 'utf-8)))
    (cl-loop for start from 0 below (length bytes) by size
             collect (substring bytes start (min (length bytes) (+ start size))))))

(defun sly-agent-q-fake-provider--pieces (text size)
  "TEXT cut into pieces of SIZE characters (all of it when SIZE is nil)."
  (if (or (null size) (<= size 0) (<= (length text) size))
      (list text)
    (cl-loop for start from 0 below (length text) by size
             collect (substring text start (min (length text) (+ start size))))))

(defun sly-agent-q-fake-provider--sse (data &optional event)
  "DATA (serialized to JSON unless a string) as one server-sent event EVENT."
  (concat (if event (format "event: %s\n" event) "")
          "data: " (if (stringp data) data (json-serialize data)) "\n\n"))

(cl-defun sly-agent-q-fake-provider-openai-stream (&key text tool-calls split (input-tokens 11) (output-tokens 7))
  "A streamed OpenAI reply: TEXT, then TOOL-CALLS ((:id :name :arguments) ...).
Text and arguments are cut into pieces of SPLIT characters, one event each."
  (let ((events (list (sly-agent-q-fake-provider--sse
                       '(:id "chatcmpl-1" :object "chat.completion.chunk"
                             :choices [(:index 0 :delta (:role "assistant" :content ""))])))))
    (when text
      (dolist (piece (sly-agent-q-fake-provider--pieces text split))
        (push (sly-agent-q-fake-provider--sse
               `(:id "chatcmpl-1" :choices [(:index 0 :delta (:content ,piece))]))
              events)))
    (cl-loop for call in tool-calls for index from 0
             do (push (sly-agent-q-fake-provider--sse
                       `(:id "chatcmpl-1"
                             :choices [(:index 0 :delta (:tool_calls [(:index ,index :id ,(plist-get call :id) :type "function"
                                                                              :function (:name ,(plist-get call :name) :arguments ""))]))]))
                      events)
             (dolist (piece (sly-agent-q-fake-provider--pieces (plist-get call :arguments) split))
               (push (sly-agent-q-fake-provider--sse
                      `(:id "chatcmpl-1"
                            :choices [(:index 0 :delta (:tool_calls [(:index ,index :function (:arguments ,piece))]))]))
                     events)))
    (push (sly-agent-q-fake-provider--sse
           `(:id "chatcmpl-1" :choices [(:index 0 :delta (:content :null) :finish_reason ,(if tool-calls "tool_calls" "stop"))]))
          events)
    (push (sly-agent-q-fake-provider--sse
           `(:id "chatcmpl-1" :choices [] :usage (:prompt_tokens ,input-tokens :completion_tokens ,output-tokens)))
          events)
    (push (sly-agent-q-fake-provider--sse "[DONE]") events)
    (nreverse events)))

(cl-defun sly-agent-q-fake-provider-anthropic-stream (&key text tool-calls split (input-tokens 11) (output-tokens 7))
  "A streamed Anthropic reply: TEXT, then TOOL-CALLS ((:id :name :arguments) ...).
Text and arguments are cut into pieces of SPLIT characters, one event each."
  (let ((events (list (sly-agent-q-fake-provider--sse
                       `(:type "message_start"
                               :message (:id "msg_1" :type "message" :role "assistant" :content []
                                             :usage (:input_tokens ,input-tokens :output_tokens 1)))
                       "message_start")))
        (index 0))
    (when text
      (push (sly-agent-q-fake-provider--sse `(:type "content_block_start" :index 0 :content_block (:type "text" :text ""))
                                            "content_block_start")
            events)
      (push (sly-agent-q-fake-provider--sse '(:type "ping") "ping") events)
      (dolist (piece (sly-agent-q-fake-provider--pieces text split))
        (push (sly-agent-q-fake-provider--sse `(:type "content_block_delta" :index 0 :delta (:type "text_delta" :text ,piece))
                                              "content_block_delta")
              events))
      (push (sly-agent-q-fake-provider--sse '(:type "content_block_stop" :index 0) "content_block_stop") events)
      (setq index 1))
    (dolist (call tool-calls)
      (push (sly-agent-q-fake-provider--sse
             `(:type "content_block_start" :index ,index
                     :content_block (:type "tool_use" :id ,(plist-get call :id) :name ,(plist-get call :name)
                                           :input ,(make-hash-table)))
             "content_block_start")
            events)
      (dolist (piece (sly-agent-q-fake-provider--pieces (plist-get call :arguments) split))
        (push (sly-agent-q-fake-provider--sse
               `(:type "content_block_delta" :index ,index :delta (:type "input_json_delta" :partial_json ,piece))
               "content_block_delta")
              events))
      (push (sly-agent-q-fake-provider--sse `(:type "content_block_stop" :index ,index) "content_block_stop") events)
      (cl-incf index))
    (push (sly-agent-q-fake-provider--sse
           `(:type "message_delta" :delta (:stop_reason ,(if tool-calls "tool_use" "end_turn"))
                   :usage (:output_tokens ,output-tokens))
           "message_delta")
          events)
    (push (sly-agent-q-fake-provider--sse '(:type "message_stop") "message_stop") events)
    (nreverse events)))

(cl-defun sly-agent-q-fake-provider-openai-reply (&key text tool-calls (input-tokens 11) (output-tokens 7))
  "A non-streamed OpenAI reply body: TEXT and TOOL-CALLS."
  (json-serialize
   `(:id "chatcmpl-1" :object "chat.completion"
         :choices [(:index 0
                           :message (:role "assistant" :content ,(or text :null)
                                           ,@(and tool-calls
                                                  (list :tool_calls
                                                        (vconcat (mapcar (lambda (call)
                                                                           `(:id ,(plist-get call :id) :type "function"
                                                                                 :function (:name ,(plist-get call :name)
                                                                                                  :arguments ,(plist-get call :arguments))))
                                                                         tool-calls)))))
                           :finish_reason ,(if tool-calls "tool_calls" "stop"))]
         :usage (:prompt_tokens ,input-tokens :completion_tokens ,output-tokens))))

(cl-defun sly-agent-q-fake-provider-anthropic-reply (&key text tool-calls (input-tokens 11) (output-tokens 7))
  "A non-streamed Anthropic reply body: TEXT and TOOL-CALLS."
  (json-serialize
   `(:id "msg_1" :type "message" :role "assistant"
         :content ,(vconcat (and text (list (list :type "text" :text text)))
                            (mapcar (lambda (call)
                                      `(:type "tool_use" :id ,(plist-get call :id) :name ,(plist-get call :name)
                                              :input ,(json-parse-string (plist-get call :arguments))))
                                    tool-calls))
         :stop_reason ,(if tool-calls "tool_use" "end_turn")
         :usage (:input_tokens ,input-tokens :output_tokens ,output-tokens))))

(provide 'sly-agent-q-fake-provider)

;;; sly-agent-q-fake-provider.el ends here
