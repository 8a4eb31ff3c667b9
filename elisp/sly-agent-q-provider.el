;;; sly-agent-q-provider.el --- LLM providers for the chat: OpenAI-compatible and Anthropic -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; One request to a model, without blocking Emacs: `sly-agent-q-provider-start'
;; runs curl as an asynchronous process (as gptel does) and calls back with
;; the reply's text as it streams in, then once with the whole reply (its
;; text, tool calls, usage) or once with an error message for the person.
;;
;; Two wire formats: OpenAI's Chat Completions (which OpenAI, OpenRouter,
;; llama.cpp's server, vLLM, LM Studio and Ollama's /v1 all speak) and
;; Anthropic's Messages API, both streamed as server-sent events or not.
;; The conversation comes in a neutral form (see `sly-agent-q-provider-start')
;; and is converted here, so the chat knows nothing of either format.
;;
;; Keys: never on curl's command line (other users' `ps' shows that) and
;; never in a buffer or message.  curl reads its URL and headers from its
;; standard input (`--config -'); the request body, which holds no key,
;; goes through a temporary file deleted when the request ends.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'url-parse)
(require 'auth-source)

(defgroup sly-agent-q-provider nil
  "The LLM providers of the sly-agent-q chat."
  :group 'sly-agent-q
  :prefix "sly-agent-q-")

(defcustom sly-agent-q-backends
  '((:name "openai" :type openai :url "https://api.openai.com/v1" :model "gpt-4o" :key nil)
    (:name "anthropic" :type anthropic :url "https://api.anthropic.com/v1"
     :model "claude-sonnet-4-5" :key nil))
  "The LLM servers the chat can use; `sly-agent-q-backend' picks one.
Each is a plist:
  :name   what `sly-agent-q-backend' calls it
  :type   `openai' for any OpenAI-compatible Chat Completions server
          (OpenAI, OpenRouter, llama.cpp's server, vLLM, LM Studio,
          Ollama's /v1), or `anthropic' for the Messages API
  :url    the API's base URL, e.g. \"https://api.openai.com/v1\" or
          \"http://127.0.0.1:8080/v1\" for a local llama.cpp server
  :model  the model's name
  :key    the API key: a string, a function returning one, (:env
          \"VARIABLE\"), or nil to look it up with `auth-source' by the
          URL's host (a line such as \"machine api.openai.com login
          apikey password sk-...\"); local servers need none
  :max-tokens  (optional) the reply's length limit, which Anthropic
          requires; default `sly-agent-q-max-tokens'
  :headers     (optional) more HTTP headers, an alist of strings.

More servers, for example (local ones need no key):
  (:name \"llama.cpp\" :type openai :url \"http://127.0.0.1:8080/v1\"
   :model \"local\")
  (:name \"ollama\" :type openai :url \"http://127.0.0.1:11434/v1\"
   :model \"qwen2.5-coder\")
  (:name \"openrouter\" :type openai :url \"https://openrouter.ai/api/v1\"
   :model \"anthropic/claude-sonnet-4.5\" :key (:env \"OPENROUTER_API_KEY\"))"
  :type '(repeat
          (plist :tag "Backend"
                 :key-type symbol :value-type sexp
                 :options ((:name string)
                           (:type (choice (const :tag "OpenAI-compatible Chat Completions" openai)
                                          (const :tag "Anthropic Messages" anthropic)))
                           (:url string)
                           (:model string)
                           (:key (choice (const :tag "From auth-source (or none)" nil)
                                         (string :tag "Key")
                                         (list :tag "From an environment variable"
                                               (const :format "" :env) (string :tag "Variable"))
                                         (function :tag "Function returning the key")))
                           (:max-tokens natnum)
                           (:headers (alist :key-type string :value-type string)))))
  :group 'sly-agent-q-provider)

(defcustom sly-agent-q-backend "openai"
  "The :name of the entry of `sly-agent-q-backends' the chat uses."
  :type 'string
  :group 'sly-agent-q-provider)

(defcustom sly-agent-q-stream t
  "Non-nil means replies stream in as the model writes them."
  :type 'boolean
  :group 'sly-agent-q-provider)

(defcustom sly-agent-q-max-tokens 4096
  "The length limit of a reply, for servers that need one (Anthropic)."
  :type 'natnum
  :group 'sly-agent-q-provider)

(defcustom sly-agent-q-provider-max-retries 3
  "How often a request is retried after HTTP 429 (rate limit) or 5xx."
  :type 'natnum
  :group 'sly-agent-q-provider)

(defcustom sly-agent-q-provider-timeout 30
  "Seconds curl waits to connect to the server.
There is no limit on the whole reply: a long answer takes its time."
  :type 'natnum
  :group 'sly-agent-q-provider)

(defcustom sly-agent-q-curl-program "curl"
  "The curl program."
  :type 'string
  :group 'sly-agent-q-provider)

(defvar sly-agent-q-provider-backoff-base 1.0
  "Seconds before the first retry without a Retry-After header; doubled each time.")

(defconst sly-agent-q-provider--max-retry-delay 60
  "The longest wait before a retry, whatever the server asks, in seconds.")

;;;; Backends and keys

(defun sly-agent-q-provider-backend (&optional name)
  "The plist of backend NAME in `sly-agent-q-backends'.
NAME defaults to `sly-agent-q-backend'."
  (let ((name (or name sly-agent-q-backend)))
    (or (cl-find name sly-agent-q-backends
                 :key (lambda (backend) (plist-get backend :name)) :test #'equal)
        (user-error "No backend is named %S in `sly-agent-q-backends' (there are: %s)"
                    name (mapconcat (lambda (b) (format "%s" (plist-get b :name))) sly-agent-q-backends ", ")))))

;;;###autoload
(defun sly-agent-q-select-backend (name)
  "Make the backend NAME the chat's."
  (interactive
   (list (completing-read (format "Backend (now %s): " sly-agent-q-backend)
                          (mapcar (lambda (b) (plist-get b :name)) sly-agent-q-backends)
                          nil t)))
  (let ((backend (sly-agent-q-provider-backend name)))
    (setq sly-agent-q-backend name)
    (message "sly-agent-q: the chat now uses %s (%s, model %s)"
             name (plist-get backend :type) (plist-get backend :model))))

(defun sly-agent-q-provider--url-host (url)
  "The host of URL."
  (url-host (url-generic-parse-url url)))

(defun sly-agent-q-provider--key (backend)
  "BACKEND's API key, or nil when it has none."
  (let ((key (plist-get backend :key)))
    (cond ((stringp key) key)
          ((functionp key) (funcall key))
          ((and (consp key) (eq (car key) :env)) (getenv (cadr key)))
          ((null key)
           (let* ((found (car (auth-source-search :host (sly-agent-q-provider--url-host (plist-get backend :url))
                                                  :max 1)))
                  (secret (plist-get found :secret)))
             (if (functionp secret) (funcall secret) secret))))))

;;;; Converting the conversation

(defun sly-agent-q-provider--json-object (text)
  "TEXT parsed as a JSON object (a hash table); an empty one if it is not one."
  (let ((object (and text (not (string-empty-p (string-trim text)))
                     (condition-case nil (json-parse-string text) (error nil)))))
    (if (hash-table-p object) object (make-hash-table :test #'equal))))

(defun sly-agent-q-provider--openai-messages (messages system)
  "MESSAGES and SYSTEM in OpenAI's format: a vector of message objects."
  (let ((out (and system (list (list :role "system" :content system)))))
    (dolist (message messages)
      (pcase (plist-get message :role)
        ("user" (push (list :role "user" :content (plist-get message :content)) out))
        ("assistant"
         (let ((calls (plist-get message :tool-calls))
               (text (plist-get message :content)))
           (push (append (list :role "assistant"
                               :content (if (and text (not (string-empty-p text))) text :null))
                         (and calls
                              (list :tool_calls
                                    (vconcat (mapcar (lambda (call)
                                                       (list :id (plist-get call :id) :type "function"
                                                             :function (list :name (plist-get call :name)
                                                                             :arguments (or (plist-get call :arguments) "{}"))))
                                                     calls)))))
                 out)))
        ("tool"
         (dolist (result (plist-get message :results))
           (push (list :role "tool" :tool_call_id (plist-get result :id)
                       :content (or (plist-get result :content) ""))
                 out)))))
    (vconcat (nreverse out))))

(defun sly-agent-q-provider--anthropic-messages (messages)
  "MESSAGES in Anthropic's format, same-role neighbours merged."
  (let ((out nil))
    (dolist (message messages)
      (let* ((role (if (equal (plist-get message :role) "assistant") "assistant" "user"))
             (blocks
              (pcase (plist-get message :role)
                ("user" (list (list :type "text" :text (plist-get message :content))))
                ("assistant"
                 (let ((text (plist-get message :content)))
                   (append (and text (not (string-empty-p text)) (list (list :type "text" :text text)))
                           (mapcar (lambda (call)
                                     (list :type "tool_use" :id (plist-get call :id) :name (plist-get call :name)
                                           :input (sly-agent-q-provider--json-object (plist-get call :arguments))))
                                   (plist-get message :tool-calls)))))
                ("tool"
                 (mapcar (lambda (result)
                           (list :type "tool_result" :tool_use_id (plist-get result :id)
                                 :content (or (plist-get result :content) "")
                                 :is_error (if (plist-get result :error) t :false)))
                         (plist-get message :results))))))
        (when blocks
          (if (equal (caar out) role)
              (setcdr (car out) (append (cdar out) blocks))
            (push (cons role blocks) out)))))
    (vconcat (mapcar (lambda (entry) (list :role (car entry) :content (vconcat (cdr entry))))
                     (nreverse out)))))

(defun sly-agent-q-provider--body (backend messages system tools stream)
  "The JSON text of a request to BACKEND.
MESSAGES is the conversation, SYSTEM the system prompt, TOOLS the tool
definitions offered, and STREAM non-nil to ask for a streamed answer."
  (let ((tools (and tools (> (length tools) 0) (vconcat tools))))
    (json-serialize
     (if (eq (plist-get backend :type) 'anthropic)
         (append (list :model (plist-get backend :model)
                       :max_tokens (or (plist-get backend :max-tokens) sly-agent-q-max-tokens)
                       :messages (sly-agent-q-provider--anthropic-messages messages)
                       :stream (if stream t :false))
                 (and system (list :system system))
                 (and tools (list :tools tools)))
       (append (list :model (plist-get backend :model)
                     :messages (sly-agent-q-provider--openai-messages messages system)
                     :stream (if stream t :false))
               (and stream (list :stream_options (list :include_usage t)))
               (and tools (list :tools tools)))))))

;;;; The request

(cl-defstruct (sly-agent-q-provider--request (:constructor sly-agent-q-provider--make-request)
                                             (:copier nil))
  "One request to a model and where its reply stands."
  backend args body-file process stderr timer (attempt 0)
  ;; The HTTP response: `headers' until the header block has been read.
  (phase 'headers) status headers (pending "") body-chunks sse-p
  ;; The bytes of the unfinished line of an event stream, newest first.
  (line-pieces nil)
  ;; The reply so far.
  (text-pieces nil) (calls nil) input-tokens output-tokens stop-reason
  ended)

(defun sly-agent-q-provider--callback (request key &rest arguments)
  "Call REQUEST's callback KEY with ARGUMENTS; its errors become a message.
Only :on-done and :on-error are called once REQUEST has ended (they end
it): a callback may cancel the request, and nothing of the reply being
read may reach the caller after that, not even the rest of the chunk.
An error in the caller's function is shown, not passed on, so that the
parser, which called it from a process filter, keeps its place."
  (let ((function (plist-get (sly-agent-q-provider--request-args request) key)))
    (when (and function
               (or (memq key '(:on-done :on-error))
                   (not (sly-agent-q-provider--request-ended request))))
      (condition-case err
          (apply function arguments)
        (error (message "sly-agent-q: the chat's %s callback failed: %s" key (error-message-string err)))))))

(defun sly-agent-q-provider--end (request)
  "Free the resources of REQUEST; no callback comes after this."
  (setf (sly-agent-q-provider--request-ended request) t)
  (let ((process (sly-agent-q-provider--request-process request))
        (stderr (sly-agent-q-provider--request-stderr request))
        (timer (sly-agent-q-provider--request-timer request))
        (file (sly-agent-q-provider--request-body-file request)))
    (when (timerp timer) (cancel-timer timer))
    (when (process-live-p process) (delete-process process))
    (when (buffer-live-p stderr) (kill-buffer stderr))
    (when (and file (file-exists-p file)) (delete-file file))))

(defun sly-agent-q-provider--fail (request message)
  "End REQUEST with the error MESSAGE."
  (unless (sly-agent-q-provider--request-ended request)
    (sly-agent-q-provider--end request)
    (sly-agent-q-provider--callback request :on-error message)))

(defun sly-agent-q-provider--succeed (request)
  "End REQUEST with the reply it has read."
  (unless (sly-agent-q-provider--request-ended request)
    (sly-agent-q-provider--end request)
    (sly-agent-q-provider--callback
     request :on-done
     (list :text (apply #'concat (reverse (sly-agent-q-provider--request-text-pieces request)))
           :tool-calls (mapcar (lambda (entry)
                                 (let ((call (cdr entry)))
                                   (list :id (plist-get call :id) :name (plist-get call :name)
                                         :arguments (apply #'concat (reverse (plist-get call :pieces))))))
                               (sort (copy-sequence (sly-agent-q-provider--request-calls request))
                                     (lambda (a b) (< (car a) (car b)))))
           :usage (list :input-tokens (sly-agent-q-provider--request-input-tokens request)
                        :output-tokens (sly-agent-q-provider--request-output-tokens request))
           :stop-reason (sly-agent-q-provider--request-stop-reason request)))))

(defun sly-agent-q-provider--curl-quote (text)
  "TEXT as a double-quoted value of a curl config file."
  (concat "\"" (replace-regexp-in-string "[\"\\\\]" "\\\\\\&" (replace-regexp-in-string "[\r\n]" "" text)) "\""))

(defun sly-agent-q-provider--config (backend)
  "Return curl's config for BACKEND: URL and headers, the key among them."
  (let* ((anthropic (eq (plist-get backend :type) 'anthropic))
         (base (string-remove-suffix "/" (plist-get backend :url)))
         (key (sly-agent-q-provider--key backend))
         (headers (append (list "Content-Type: application/json" "Expect:")
                          (cond ((and anthropic key) (list (concat "x-api-key: " key)))
                                (key (list (concat "Authorization: Bearer " key))))
                          (and anthropic (list "anthropic-version: 2023-06-01"))
                          (mapcar (lambda (h) (format "%s: %s" (car h) (cdr h)))
                                  (plist-get backend :headers)))))
    (concat "url = " (sly-agent-q-provider--curl-quote (concat base (if anthropic "/messages" "/chat/completions")))
            "\n"
            (mapconcat (lambda (h) (concat "header = " (sly-agent-q-provider--curl-quote h) "\n")) headers ""))))

;;;###autoload
(defun sly-agent-q-provider-start (backend &rest args)
  "Ask BACKEND's model for its next reply; return a request handle at once.
BACKEND is a plist of `sly-agent-q-backends'.  ARGS:
  :messages  the conversation, oldest first, each a plist:
             (:role \"user\" :content TEXT)
             (:role \"assistant\" :content TEXT :tool-calls CALLS), CALLS a
               list of (:id ID :name NAME :arguments JSON-TEXT)
             (:role \"tool\" :results RESULTS), RESULTS a list of
               (:id ID :name NAME :content TEXT :error FAILED-P)
  :system    the system prompt, or nil
  :tools     tool schemas in the provider's format (hash tables, as
             `sly-agent-q-tools-schema' gives them), or nil
  :stream    stream the reply (default `sly-agent-q-stream')
  :on-text   called with each new piece of the reply's text
  :on-tool-call  called with (ID NAME) when a tool call begins
  :on-status called with a progress message (a retry after a rate limit)
  :on-done   called once with (:text TEXT :tool-calls CALLS :usage
             (:input-tokens N :output-tokens N) :stop-reason REASON)
  :on-error  called once instead, with a message for the person.
After `sly-agent-q-provider-cancel' no callback comes.  Errors in a
callback are shown with `message' and do not stop the request.
Callbacks run from curl's process filter and sentinel or from timers,
never before this function has returned: a request that cannot even
start (no curl, a :key function that fails) ends with :on-error from a
timer.  Token counts the server did not send are nil in :usage."
  (let* ((stream (if (plist-member args :stream) (plist-get args :stream) sly-agent-q-stream))
         (args (plist-put (copy-sequence args) :stream stream))
         ;; The body before the file: a body that cannot be made (tools
         ;; `json-serialize' refuses, the caller's mistake) signals here and
         ;; leaves no file behind.
         (body (sly-agent-q-provider--body backend (plist-get args :messages) (plist-get args :system)
                                           (plist-get args :tools) stream))
         (file (make-temp-file "sly-agent-q-request" nil ".json"))
         (request (sly-agent-q-provider--make-request :backend backend :args args :body-file file)))
    (let ((coding-system-for-write 'utf-8-unix))
      (write-region body nil file nil 'silent))
    (sly-agent-q-provider--send request)
    request))

(defun sly-agent-q-provider--fail-later (request message)
  "End REQUEST with the error MESSAGE from a timer.
For failures found while starting: the caller gets its handle before
any callback, as it would from a request that reached the network."
  (setf (sly-agent-q-provider--request-timer request)
        (run-at-time 0 nil #'sly-agent-q-provider--fail request message)))

(defun sly-agent-q-provider--send (request)
  "Start curl for REQUEST (again, for a retry)."
  (let* ((backend (sly-agent-q-provider--request-backend request))
         ;; The config (the key among it) is made before curl starts: a
         ;; :key function or an auth-source lookup that fails must not
         ;; leave a curl waiting on its standard input forever.
         (config (condition-case err
                     (sly-agent-q-provider--config backend)
                   (error (sly-agent-q-provider--fail-later
                           request (format "The request to %s could not be made: %s"
                                           (sly-agent-q-provider--name request) (error-message-string err)))
                          nil))))
    (cond
     ((null config))
     ((not (executable-find sly-agent-q-curl-program))
      (sly-agent-q-provider--fail-later
       request (format "The chat needs curl, and there is no %S (`sly-agent-q-curl-program'); on Debian: apt-get install curl"
                       sly-agent-q-curl-program)))
     (t
      ;; A retry's curl gets a fresh buffer for its errors; the last one's goes.
      (let ((old (sly-agent-q-provider--request-stderr request)))
        (when (buffer-live-p old) (kill-buffer old)))
      (let* ((stderr (generate-new-buffer " *sly-agent-q curl errors*"))
             (process
              (make-process
               :name "sly-agent-q-llm" :buffer nil :noquery t :connection-type 'pipe :coding 'binary
               :stderr stderr
               :command (list sly-agent-q-curl-program "--silent" "--show-error" "--no-buffer" "--include"
                              "--connect-timeout" (number-to-string sly-agent-q-provider-timeout)
                              "--request" "POST"
                              "--data-binary" (concat "@" (sly-agent-q-provider--request-body-file request))
                              "--config" "-")
               :filter (lambda (_process output) (sly-agent-q-provider--filter request output))
               :sentinel (lambda (process _event) (sly-agent-q-provider--sentinel request process)))))
        (when-let ((stderr-process (get-buffer-process stderr)))
          (set-process-query-on-exit-flag stderr-process nil))
        (cl-incf (sly-agent-q-provider--request-attempt request))
        (setf (sly-agent-q-provider--request-process request) process
              (sly-agent-q-provider--request-stderr request) stderr
              (sly-agent-q-provider--request-phase request) 'headers
              (sly-agent-q-provider--request-pending request) ""
              (sly-agent-q-provider--request-line-pieces request) nil
              (sly-agent-q-provider--request-body-chunks request) nil
              (sly-agent-q-provider--request-status request) nil
              (sly-agent-q-provider--request-headers request) nil)
        ;; URL and headers through curl's standard input: the key is never
        ;; in its arguments, which every user's `ps' shows.
        (process-send-string process config)
        (process-send-eof process))))))

;;;###autoload
(defun sly-agent-q-provider-cancel (request)
  "Stop REQUEST at once; none of its callbacks is called afterwards."
  (when request (sly-agent-q-provider--end request)))

(defun sly-agent-q-provider-live-p (request)
  "Non-nil while REQUEST has not ended."
  (and request (not (sly-agent-q-provider--request-ended request))))

;;;; Reading the response

(defun sly-agent-q-provider--filter (request output)
  "Take OUTPUT, bytes of REQUEST's HTTP response, as far as they go."
  (unless (sly-agent-q-provider--request-ended request)
    (if (eq (sly-agent-q-provider--request-phase request) 'headers)
        (let ((pending (concat (sly-agent-q-provider--request-pending request) output)))
          (setf (sly-agent-q-provider--request-pending request) pending)
          (sly-agent-q-provider--read-headers request))
      (sly-agent-q-provider--body-bytes request output))))

(defun sly-agent-q-provider--read-headers (request)
  "Read the header blocks in REQUEST's pending bytes, skipping 1xx ones."
  (let ((pending (sly-agent-q-provider--request-pending request))
        end)
    (while (and (eq (sly-agent-q-provider--request-phase request) 'headers)
                (setq end (string-match "\r?\n\r?\n" pending)))
      (let* ((block (substring pending 0 end))
             (rest (substring pending (match-end 0)))
             (lines (split-string block "\r?\n"))
             (status (and (string-match "\\`HTTP/[0-9.]+ \\([0-9]+\\)" (car lines))
                          (string-to-number (match-string 1 (car lines))))))
        (setq pending rest)
        (cond ((or (null status) (< status 200) (string-match-p "\\`HTTP/[0-9.]+ 200 Connection established" (car lines)))
               nil)                     ; 100 Continue, a proxy's answer: the real one follows
              (t
               (setf (sly-agent-q-provider--request-status request) status
                     (sly-agent-q-provider--request-headers request)
                     (delq nil (mapcar (lambda (line)
                                         (when (string-match "\\`\\([^:]+\\):[ \t]*\\(.*\\)\\'" line)
                                           (cons (downcase (match-string 1 line)) (match-string 2 line))))
                                       (cdr lines)))
                     (sly-agent-q-provider--request-phase request) 'body
                     (sly-agent-q-provider--request-sse-p request)
                     (and (<= 200 status 299)
                          (string-match-p "text/event-stream"
                                          (or (cdr (assoc "content-type" (sly-agent-q-provider--request-headers request))) ""))))))))
    (setf (sly-agent-q-provider--request-pending request) (if (eq (sly-agent-q-provider--request-phase request) 'body) "" pending))
    (when (and (eq (sly-agent-q-provider--request-phase request) 'body) (not (string-empty-p pending)))
      (sly-agent-q-provider--body-bytes request pending))))

(defun sly-agent-q-provider--body-bytes (request bytes)
  "Take BYTES of REQUEST's response body."
  (if (not (sly-agent-q-provider--request-sse-p request))
      (push bytes (sly-agent-q-provider--request-body-chunks request))
    ;; Server-sent events, a line at a time.  A line ends with a newline
    ;; byte, which no UTF-8 sequence contains: whole lines decode whole
    ;; (a character split between two outputs is joined first).  Only
    ;; the new bytes are searched, and the bytes of an unfinished line
    ;; are only kept, not copied, until its end comes: a long event sent
    ;; in many pieces costs no more than a short one.
    (let ((first (string-search "\n" bytes)))
      (if (null first)
          (push bytes (sly-agent-q-provider--request-line-pieces request))
        (let* ((kept (sly-agent-q-provider--request-line-pieces request))
               (data (if kept (apply #'concat (nreverse (cons bytes kept))) bytes))
               (start 0)
               (newline (+ first (- (length data) (length bytes)))))
          (setf (sly-agent-q-provider--request-line-pieces request) nil)
          (while (and newline (not (sly-agent-q-provider--request-ended request)))
            (let ((line (substring data start (if (and (> newline start) (eq (aref data (1- newline)) ?\r))
                                                   (1- newline)
                                                 newline))))
              (setq start (1+ newline))
              (when (string-prefix-p "data:" line)
                (sly-agent-q-provider--sse-data
                 request (string-trim-left (decode-coding-string (substring line 5) 'utf-8)))))
            (setq newline (string-search "\n" data start)))
          (when (< start (length data))
            (push (substring data start) (sly-agent-q-provider--request-line-pieces request))))))))

(defun sly-agent-q-provider--parse (text)
  "TEXT parsed as JSON with plists, vectors and nil for null and false."
  (json-parse-string text :object-type 'plist :array-type 'array :null-object nil :false-object nil))

(defun sly-agent-q-provider--add-text (request text)
  "Add TEXT to REQUEST's reply and pass it on."
  (when (and text (not (string-empty-p text)))
    (push text (sly-agent-q-provider--request-text-pieces request))
    (sly-agent-q-provider--callback request :on-text text)))

(defun sly-agent-q-provider--call-piece (request index &optional id name arguments)
  "Add to REQUEST's tool call INDEX its ID, NAME or a piece of ARGUMENTS."
  (let ((entry (assq index (sly-agent-q-provider--request-calls request))))
    (unless entry
      (setq entry (list index :id nil :name nil :pieces nil))
      (push entry (sly-agent-q-provider--request-calls request)))
    (when (and id (not (string-empty-p id))) (setf (plist-get (cdr entry) :id) id))
    (when (and name (not (string-empty-p name)))
      (unless (plist-get (cdr entry) :name)
        (setf (plist-get (cdr entry) :name) name)
        (sly-agent-q-provider--callback request :on-tool-call (plist-get (cdr entry) :id) name)))
    (when (and arguments (not (string-empty-p arguments)))
      (push arguments (plist-get (cdr entry) :pieces)))))

(defun sly-agent-q-provider--sse-data (request data)
  "Take the DATA of one server-sent event of REQUEST."
  (if (equal data "[DONE]")
      (sly-agent-q-provider--succeed request)
    (let ((event (condition-case nil (sly-agent-q-provider--parse data) (error :malformed))))
      (cond
       ((eq event :malformed)
        (sly-agent-q-provider--fail
         request (format "The reply of %s could not be read: a streamed event is not JSON (%s)."
                         (sly-agent-q-provider--name request) (truncate-string-to-width data 80 nil nil "..."))))
       ((plist-get event :error)
        (sly-agent-q-provider--fail
         request (format "%s reported an error in mid-reply: %s" (sly-agent-q-provider--name request)
                         (sly-agent-q-provider--error-text event))))
       ((eq (plist-get (sly-agent-q-provider--request-backend request) :type) 'anthropic)
        (sly-agent-q-provider--anthropic-event request event))
       (t (sly-agent-q-provider--openai-event request event))))))

(defun sly-agent-q-provider--openai-event (request event)
  "Take one streamed OpenAI chunk EVENT of REQUEST."
  (let ((usage (plist-get event :usage)))
    (when usage
      (setf (sly-agent-q-provider--request-input-tokens request) (plist-get usage :prompt_tokens)
            (sly-agent-q-provider--request-output-tokens request) (plist-get usage :completion_tokens))))
  (seq-doseq (choice (plist-get event :choices))
    (let ((delta (plist-get choice :delta)))
      (sly-agent-q-provider--add-text request (plist-get delta :content))
      (seq-doseq (call (plist-get delta :tool_calls))
        (let ((function (plist-get call :function)))
          (sly-agent-q-provider--call-piece request (or (plist-get call :index) 0) (plist-get call :id)
                                            (plist-get function :name) (plist-get function :arguments))))
      (when (plist-get choice :finish_reason)
        (setf (sly-agent-q-provider--request-stop-reason request) (plist-get choice :finish_reason))))))

(defun sly-agent-q-provider--anthropic-event (request event)
  "Take one streamed Anthropic EVENT of REQUEST."
  (pcase (plist-get event :type)
    ("message_start"
     (let ((usage (plist-get (plist-get event :message) :usage)))
       (setf (sly-agent-q-provider--request-input-tokens request) (plist-get usage :input_tokens)
             (sly-agent-q-provider--request-output-tokens request) (plist-get usage :output_tokens))))
    ("content_block_start"
     (let ((block (plist-get event :content_block)))
       (pcase (plist-get block :type)
         ("text" (sly-agent-q-provider--add-text request (plist-get block :text)))
         ("tool_use" (sly-agent-q-provider--call-piece request (plist-get event :index)
                                                       (plist-get block :id) (plist-get block :name))))))
    ("content_block_delta"
     (let ((delta (plist-get event :delta)))
       (pcase (plist-get delta :type)
         ("text_delta" (sly-agent-q-provider--add-text request (plist-get delta :text)))
         ("input_json_delta" (sly-agent-q-provider--call-piece request (plist-get event :index) nil nil
                                                               (plist-get delta :partial_json))))))
    ("message_delta"
     (let ((usage (plist-get event :usage)))
       (when (plist-get usage :output_tokens)
         (setf (sly-agent-q-provider--request-output-tokens request) (plist-get usage :output_tokens)))
       (when (plist-get (plist-get event :delta) :stop_reason)
         (setf (sly-agent-q-provider--request-stop-reason request)
               (plist-get (plist-get event :delta) :stop_reason)))))
    ("message_stop" (sly-agent-q-provider--succeed request))))

(defun sly-agent-q-provider--name (request)
  "REQUEST's backend, named for a message."
  (format "backend \"%s\"" (plist-get (sly-agent-q-provider--request-backend request) :name)))

(defun sly-agent-q-provider--error-text (object)
  "The error message in the parsed error OBJECT (OpenAI's or Anthropic's)."
  (let ((error (plist-get object :error)))
    (cond ((stringp error) error)
          ((plist-get error :message))
          (t (format "%S" object)))))

(defun sly-agent-q-provider--whole-reply (request event)
  "Take REQUEST's non-streamed reply, the parsed EVENT."
  (if (eq (plist-get (sly-agent-q-provider--request-backend request) :type) 'anthropic)
      (let ((usage (plist-get event :usage)))
        (setf (sly-agent-q-provider--request-input-tokens request) (plist-get usage :input_tokens)
              (sly-agent-q-provider--request-output-tokens request) (plist-get usage :output_tokens)
              (sly-agent-q-provider--request-stop-reason request) (plist-get event :stop_reason))
        (let ((index 0))
          (seq-doseq (block (plist-get event :content))
            (pcase (plist-get block :type)
              ("text" (sly-agent-q-provider--add-text request (plist-get block :text)))
              ("tool_use"
               (sly-agent-q-provider--call-piece
                request index (plist-get block :id) (plist-get block :name)
                (json-serialize (or (plist-get block :input) (make-hash-table))))))
            (cl-incf index))))
    (let ((usage (plist-get event :usage))
          (choice (and (> (length (plist-get event :choices)) 0) (aref (plist-get event :choices) 0))))
      (setf (sly-agent-q-provider--request-input-tokens request) (plist-get usage :prompt_tokens)
            (sly-agent-q-provider--request-output-tokens request) (plist-get usage :completion_tokens)
            (sly-agent-q-provider--request-stop-reason request) (plist-get choice :finish_reason))
      (let ((message (plist-get choice :message))
            (index 0))
        (sly-agent-q-provider--add-text request (plist-get message :content))
        (seq-doseq (call (plist-get message :tool_calls))
          (let ((function (plist-get call :function)))
            (sly-agent-q-provider--call-piece request index (plist-get call :id) (plist-get function :name)
                                              (plist-get function :arguments)))
          (cl-incf index)))))
  (sly-agent-q-provider--succeed request))

(defun sly-agent-q-provider--body-text (request)
  "REQUEST's response body read so far, decoded."
  (decode-coding-string (apply #'concat (reverse (sly-agent-q-provider--request-body-chunks request))) 'utf-8))

(defun sly-agent-q-provider--retry-delay (request)
  "Seconds to wait before retrying REQUEST: Retry-After, else a backoff."
  (let ((after (cdr (assoc "retry-after" (sly-agent-q-provider--request-headers request)))))
    (min sly-agent-q-provider--max-retry-delay
         (if (and after (string-match-p "\\`[0-9.]+\\'" (string-trim after)))
             (string-to-number after)
           (* sly-agent-q-provider-backoff-base
              (expt 2 (1- (sly-agent-q-provider--request-attempt request))))))))

(defun sly-agent-q-provider--http-error (request)
  "Retry REQUEST after a 429 or 5xx, or end it with its HTTP error."
  (let* ((status (sly-agent-q-provider--request-status request))
         (backend (sly-agent-q-provider--request-backend request))
         (body (sly-agent-q-provider--body-text request))
         (detail (let ((parsed (condition-case nil (sly-agent-q-provider--parse body) (error nil))))
                   (if (and parsed (plist-get parsed :error))
                       (sly-agent-q-provider--error-text parsed)
                     (truncate-string-to-width (string-trim body) 200 nil nil "..."))))
         (retries (1- (sly-agent-q-provider--request-attempt request)))
         (retryable (or (= status 429) (>= status 500))))
    (if (and retryable (< retries sly-agent-q-provider-max-retries))
        (let ((delay (sly-agent-q-provider--retry-delay request)))
          (sly-agent-q-provider--callback
           request :on-status
           (format "%s answered HTTP %d (%s); retrying in %s s (attempt %d of %d)"
                   (sly-agent-q-provider--name request) status (if (= status 429) "rate limited" "server error")
                   delay (+ 2 retries) (1+ sly-agent-q-provider-max-retries)))
          (setf (sly-agent-q-provider--request-timer request)
                (run-with-timer delay nil
                                (lambda ()
                                  (unless (sly-agent-q-provider--request-ended request)
                                    (sly-agent-q-provider--send request))))))
      (sly-agent-q-provider--fail
       request
       (pcase status
         ((or 401 403)
          (format "%s refused the request (HTTP %d, authentication): %s. Check its :key in `sly-agent-q-backends' (or the auth-source entry for %s)."
                  (sly-agent-q-provider--name request) status detail
                  (sly-agent-q-provider--url-host (plist-get backend :url))))
         (404
          (format "%s answered HTTP 404: %s. Check the model \"%s\" and the URL %s."
                  (sly-agent-q-provider--name request) detail (plist-get backend :model) (plist-get backend :url)))
         (429
          (format "%s is still rate limiting (HTTP 429) after %d retries: %s"
                  (sly-agent-q-provider--name request) retries detail))
         ((pred (<= 500))
          (format "The server of %s failed (HTTP %d) after %d retries: %s"
                  (sly-agent-q-provider--name request) status retries detail))
         (_ (format "%s answered HTTP %d: %s" (sly-agent-q-provider--name request) status detail)))))))

(defun sly-agent-q-provider--curl-error (request process)
  "End REQUEST, whose curl PROCESS failed before any response."
  (let* ((code (process-exit-status process))
         (url (plist-get (sly-agent-q-provider--request-backend request) :url))
         (said (let ((buffer (sly-agent-q-provider--request-stderr request)))
                 (if (buffer-live-p buffer)
                     (string-trim (with-current-buffer buffer
                                    (replace-regexp-in-string "^Process .*\n?" "" (buffer-string))))
                   ""))))
    (sly-agent-q-provider--fail
     request
     (pcase code
       ((or 6 7) (format "Nothing answered at %s (%s, curl exit %d). Is the server running, and is the URL right?"
                         url said code))
       (28 (format "%s did not answer within %d s (curl: %s)." url sly-agent-q-provider-timeout said))
       (_ (format "The request to %s failed (curl exit %d: %s)." url code said))))))

(defun sly-agent-q-provider--sentinel (request process)
  "Finish REQUEST when its curl PROCESS has exited."
  (when (and (memq (process-status process) '(exit signal))
             (eq process (sly-agent-q-provider--request-process request))
             (not (sly-agent-q-provider--request-ended request)))
    ;; Let the stderr pipe deliver what curl said.
    (when-let ((stderr (get-buffer-process (sly-agent-q-provider--request-stderr request))))
      (accept-process-output stderr 0.05))
    (let ((status (sly-agent-q-provider--request-status request)))
      (cond
       ((null status) (sly-agent-q-provider--curl-error request process))
       ((not (<= 200 status 299)) (sly-agent-q-provider--http-error request))
       ((and (sly-agent-q-provider--request-sse-p request)
             (not (eq (plist-get (sly-agent-q-provider--request-backend request) :type) 'anthropic))
             (sly-agent-q-provider--request-stop-reason request))
        ;; Some OpenAI-compatible servers end the stream after the chunk
        ;; with the finish_reason, without "data: [DONE]": the reply is
        ;; whole (its usage, sent after the finish_reason, may be missing).
        (sly-agent-q-provider--succeed request))
       ((sly-agent-q-provider--request-sse-p request)
        ;; A stream ends with [DONE] or message_stop, which succeed at once.
        (sly-agent-q-provider--fail
         request (format "The reply of %s ended before it was complete: the connection closed in mid-stream%s."
                         (sly-agent-q-provider--name request)
                         (if (zerop (process-exit-status process)) ""
                           (format " (curl exit %d)" (process-exit-status process))))))
       (t
        (let* ((body (sly-agent-q-provider--body-text request))
               (event (condition-case nil (sly-agent-q-provider--parse body) (error :malformed))))
          (cond ((or (eq event :malformed) (not (listp event)))
                 (sly-agent-q-provider--fail
                  request (format "The reply of %s could not be read: it is not JSON (%s)."
                                  (sly-agent-q-provider--name request)
                                  (truncate-string-to-width (string-trim body) 80 nil nil "..."))))
                ((plist-get event :error)
                 (sly-agent-q-provider--fail
                  request (format "%s reported an error: %s" (sly-agent-q-provider--name request)
                                  (sly-agent-q-provider--error-text event))))
                (t (sly-agent-q-provider--whole-reply request event)))))))))

(provide 'sly-agent-q-provider)

;;; sly-agent-q-provider.el ends here
