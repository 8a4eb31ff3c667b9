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

(let* ((server (sly-agent-q-fake-provider-start))
       (sly-agent-q-backends (list (list :name "bench" :type 'openai
                                         :url (sly-agent-q-fake-provider-url server)
                                         :model "bench" :key "k")))
       (sly-agent-q-backend "bench")
       (sly-agent-q-chat-autosave nil)
       (text (let ((line "(defun f (x) \"A line of a long streamed answer.\" (* x x))\n"))
               (apply #'concat (make-list (/ 200000 (length line)) line))))
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
  (sly-agent-q-fake-provider-push
   server (list :status 200
                :chunks (sly-agent-q-fake-provider-openai-stream
                         :text text :split (/ (length text) 2000))))
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
    (sly-agent-q-fake-provider-stop server)
    (princ (format "bench: chat_stream_200kb bytes=%d chunks=2000 total_ms=%.0f complete=%s timer_lag_p50_ms=%.1f timer_lag_p99_ms=%.1f timer_lag_max_ms=%.1f target_max_lag_ms=50\n"
                   (length text) (* 1000 total)
                   (if (= received (/ 200000 (length "(defun f (x) \"A line of a long streamed answer.\" (* x x))\n"))) "yes" "NO")
                   (* 1000 (max 0 (aref sorted (/ n 2))))
                   (* 1000 (max 0 (aref sorted (min (1- n) (/ (* 99 n) 100)))))
                   (* 1000 (max 0 (aref sorted (1- n))))))))

;;; chat-stream.el ends here
