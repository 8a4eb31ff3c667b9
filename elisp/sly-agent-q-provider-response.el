;;; sly-agent-q-provider-response.el --- A provider request's life and the reading of its response -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; A request to a model (`sly-agent-q-provider--request'), its callbacks
;; and its end, and the reading of what curl hands over: the HTTP header
;; block, the body as server-sent events or whole, each API's events
;; (text, tool calls, usage), HTTP and curl errors, and retries after a
;; rate limit or an overloaded server.  Part of sly-agent-q-provider.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-provider-backends)

;; Sending, in sly-agent-q-provider.el, which requires this file: a retry
;; sends again.
(declare-function sly-agent-q-provider--send "sly-agent-q-provider" (request))
(declare-function sly-agent-q-runtime-wake-ahead "sly-agent-q-runtime" ())


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
  ;; A call is on its way: the Lisp worker gets ready for it meanwhile.
  (when (fboundp 'sly-agent-q-runtime-wake-ahead)
    (sly-agent-q-runtime-wake-ahead))
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

(provide 'sly-agent-q-provider-response)

;;; sly-agent-q-provider-response.el ends here
