;;; chat-stream.el --- a 200 KB streamed answer in the chat -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -L tests/elisp -l bench/chat-stream.el
;;
;; The fake provider (a real HTTP server on 127.0.0.1, reached through
;; real curl) streams a 200 KB answer in 2,000 SSE chunks into the chat.
;; A 10 ms repeating timer stands for the person typing: how late it
;; fires while the answer streams says whether Emacs stays responsive.
;; Prints one "bench: chat_stream_200kb ..." line.

(require 'sly-agent-q)
(require 'sly-agent-q-chat)
(require 'sly-agent-q-fake-provider)

(defconst chat-stream--line "(defun f (x) \"A line of a long streamed answer.\" (* x x))\n"
  "One line of the streamed answer.")

(defconst chat-stream--lines (/ 200000 (length chat-stream--line))
  "How many lines the answer has.")

;; The server runs in its own Emacs, as a real one runs elsewhere: its
;; writing does not count against this Emacs's responsiveness.
(defun chat-stream--start-server ()
  "Start the fake provider in a child Emacs; return (PROCESS . URL)."
  (let* ((output "")
         (process (make-process
                   :name "chat-stream-server" :noquery t :connection-type 'pipe
                   :command (list (expand-file-name invocation-name invocation-directory)
                                  "-Q" "--batch" "-L" "tests/elisp"
                                  "--eval"
                                  (format "%S"
                                          `(progn
                                             (require 'sly-agent-q-fake-provider)
                                             (let* ((server (sly-agent-q-fake-provider-start))
                                                    (text (apply #'concat (make-list ,chat-stream--lines ,chat-stream--line))))
                                               (sly-agent-q-fake-provider-push
                                                server (list :status 200
                                                             :chunks (sly-agent-q-fake-provider-openai-stream
                                                                      :text text :split (/ (length text) 2000))))
                                               (message "%s" (sly-agent-q-fake-provider-url server)) ; stderr: unbuffered
                                               (while t (accept-process-output nil 1))))))
                   :filter (lambda (_p s) (setq output (concat output s))))))
    (while (not (string-match "\\(http://[^\n]*\\)\n" output))
      (accept-process-output process 0.1))
    (cons process (match-string 1 output))))

;; Lisp boots on the first request (for the tools' schemas): not part of
;; what is measured here.
(sly-agent-q-tools-schema 'openai)

(let* ((child (chat-stream--start-server))
       (sly-agent-q-backends (list (list :name "bench" :type 'openai
                                         :url (cdr child)
                                         :model "bench" :key "k")))
       (sly-agent-q-backend "bench")
       (sly-agent-q-chat-autosave nil)
       (text (apply #'concat (make-list chat-stream--lines chat-stream--line)))
       (done nil)
       (sly-agent-q-chat-done-functions (list (lambda (answer) (setq done answer))))
       (lags nil)
       (last (float-time))
       (ticker (run-with-timer 0.01 0.01
                               (lambda ()
                                 (let ((now (float-time)))
                                   (push (- now last 0.01) lags)
                                   (setq last now)))))
       (start nil))
  (setq start (float-time))
  (sly-agent-q-send "Stream a long answer.")
  (while (not done) (accept-process-output nil 0.005))
  (let* ((total (- (float-time) start))
         (sorted (sort (vconcat lags) #'<))
         (n (length sorted))
         (received (with-current-buffer sly-agent-q-chat-buffer-name
                     (save-excursion
                       (goto-char (point-min))
                       (let ((count 0))
                         (while (search-forward "A line of a long streamed answer." nil t)
                           (setq count (1+ count)))
                         count)))))
    (cancel-timer ticker)
    (delete-process (car child))
    (princ (format "bench: chat_stream_200kb bytes=%d chunks=2000 total_ms=%.0f complete=%s timer_lag_p50_ms=%.1f timer_lag_p99_ms=%.1f timer_lag_max_ms=%.1f target_max_lag_ms=50\n"
                   (length text) (* 1000 total)
                   (if (= received chat-stream--lines) "yes" "NO")
                   (* 1000 (max 0 (aref sorted (/ n 2))))
                   (* 1000 (max 0 (aref sorted (min (1- n) (/ (* 99 n) 100)))))
                   (* 1000 (max 0 (aref sorted (1- n))))))))

;;; chat-stream.el ends here
