;;; sly-agent-q-provider-backends.el --- The chat's backends, their keys, and the conversation as each API wants it -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; The options of the chat's providers, the backends (`sly-agent-q-backends',
;; `sly-agent-q-select-backend') and their keys, and the conversation,
;; kept in a neutral form, converted to OpenAI's Chat Completions or to
;; Anthropic's Messages API.  Part of sly-agent-q-provider.el.

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

;;;###autoload (autoload 'sly-agent-q-select-backend "sly-agent-q-provider" nil t)
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

(provide 'sly-agent-q-provider-backends)

;;; sly-agent-q-provider-backends.el ends here
