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
;;
;; The parts: sly-agent-q-provider-backends.el (options, backends, keys,
;; the conversation converted), sly-agent-q-provider-response.el (a
;; request's life, reading the response); this file starts, sends and
;; cancels a request.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'url-parse)
(require 'auth-source)
(require 'sly-agent-q-provider-backends)
(require 'sly-agent-q-provider-response)

;;;; Sending the request

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

(provide 'sly-agent-q-provider)

;;; sly-agent-q-provider.el ends here
