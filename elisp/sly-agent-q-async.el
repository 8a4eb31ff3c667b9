;;; sly-agent-q-async.el --- Tool calls that do not block Emacs, and their questions -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `sly-agent-q-execute-tool-calls-async' and
;; `sly-agent-q-mcp-request-async': jobs that run on the Lisp runner while
;; Emacs goes on, served from a pipe process's filter (what they need of
;; Emacs, their output, their callbacks); `sly-agent-q-cancel'; and the
;; questions about a job's dangerous calls, asked before it takes the
;; runner, one at a time, each caller's jobs in order
;; (`sly-agent-q-caller').  The synchronous half, the module and its
;; options are in sly-agent-q-runtime.el.

;;; Code:

(require 'cl-lib)
(require 'sly-agent-q-runtime)

(declare-function sly-agent-q--module-open-channel "sly-agent-q-module" (process))
(declare-function sly-agent-q--module-submit "sly-agent-q-module"
                  (calls approval hooks &optional with-debugger interactive hold))
(declare-function sly-agent-q--module-mcp-submit "sly-agent-q-module" (json approval hooks &optional hold))
(declare-function sly-agent-q--module-mcp-line "sly-agent-q-module"
                  (json approval hooks hold &optional channel on-worker refusal))
(declare-function sly-agent-q--module-release "sly-agent-q-module" (job decisions))
(declare-function sly-agent-q--module-cancel "sly-agent-q-module" (job))
(declare-function sly-agent-q--module-withdraw "sly-agent-q-module" (job))
(declare-function sly-agent-q--module-async-serve "sly-agent-q-module" (&optional no-questions))
(declare-function sly-agent-q--module-direct-request-running-p "sly-agent-q-module" ())


;;;; The door and approval function of each job

(defvar sly-agent-q--job-askers (make-hash-table)
  "Asynchronous jobs not finished yet → (APPROVE . ORIGIN).
The approval function and the door each was submitted with.")

(defun sly-agent-q--approve-agent-code-of-job (job name json)
  "`sly-agent-q--approve-agent-code' for asynchronous JOB's call of NAME.
JSON holds the call's arguments.  With the approval function and door
JOB was submitted with (the chat's,
an MCP client's), not those in force when Lisp asks."
  (let* ((asker (gethash job sly-agent-q--job-askers))
         (sly-agent-q-approval-function (if asker (car asker) sly-agent-q-approval-function))
         (sly-agent-q-call-origin (or (cdr asker) sly-agent-q-call-origin)))
    (sly-agent-q--approve-agent-code name json)))

;;;; Asynchronous calls

(defvar sly-agent-q--async-callbacks (make-hash-table)
  "Callbacks of the asynchronous jobs not finished yet, by job id.")

(defvar sly-agent-q--held-jobs)         ; below

(defun sly-agent-q--lisp-busy-p ()
  "Non-nil while an asynchronous call (an evaluation, the REPL) has Lisp.
What asks Lisp synchronously then (completion, eldoc, \\[xref-find-definitions])
would wait behind it: such callers answer nothing, or say Lisp is busy.
A job held back while the person is asked about it holds nothing.  An MCP
request the Lisp thread read from a bridge itself (no job of Elisp's)
holds Lisp too."
  (or (> (hash-table-count sly-agent-q--async-callbacks)
         (hash-table-count sly-agent-q--held-jobs))
      (and sly-agent-q--module-ready (sly-agent-q--module-direct-request-running-p))))

(defvar sly-agent-q--async-output-functions (make-hash-table)
  "The ON-OUTPUT functions of the interactive jobs not finished yet, by job id.")

(defvar sly-agent-q--async-process nil
  "The pipe process whose filter serves asynchronous calls.")

(defun sly-agent-q--async-channel ()
  "Open the pipe that serves asynchronous work, once."
  (unless (process-live-p sly-agent-q--async-process)
    (setq sly-agent-q--async-process
          (make-pipe-process :name "sly-agent-q-async" :buffer nil :noquery t
                             :coding 'binary :filter #'sly-agent-q--async-filter))
    (sly-agent-q--module-open-channel sly-agent-q--async-process)))

(defvar sly-agent-q--async-deferred-timer nil
  "The timer that serves asynchronous calls once no minibuffer is active.")

(defun sly-agent-q--serve-after-minibuffer ()
  "Serve the asynchronous work put off while a minibuffer or question was up."
  (unless (or (> (minibuffer-depth) 0) (sly-agent-q--question-up-p))
    (when (timerp sly-agent-q--async-deferred-timer)
      (cancel-timer sly-agent-q--async-deferred-timer))
    (setq sly-agent-q--async-deferred-timer nil)
    (sly-agent-q--async-filter nil nil)))

(defun sly-agent-q--defer-async ()
  "Serve the asynchronous work again once no minibuffer or question is up."
  (unless sly-agent-q--async-deferred-timer
    (setq sly-agent-q--async-deferred-timer
          (run-with-timer 0.25 0.25 #'sly-agent-q--serve-after-minibuffer))))

(defun sly-agent-q--async-filter (_process _output)
  "Serve asynchronous work: what it needs of Emacs, finished jobs' callbacks.
While the person types in a minibuffer nothing is served (no approval
question, no callback takes the echo area or the keyboard from them): it
is put off until the minibuffer exits.  While they answer an approval
question, everything but other questions is served, with messages kept
out of the echo area (the question stays in sight): other jobs' work and
callbacks go on, their questions wait."
  (cond ((> (minibuffer-depth) 0)
         (sly-agent-q--defer-async))
        ((sly-agent-q--question-up-p)
         (let ((inhibit-message t))
           (sly-agent-q--serve-async t))
         (sly-agent-q--defer-async))
        (t (sly-agent-q--serve-async))))

(defun sly-agent-q--async-output (job text)
  "Hand TEXT, output of the interactive JOB, to its ON-OUTPUT function."
  (let ((function (gethash job sly-agent-q--async-output-functions)))
    (when function
      (condition-case err
          (funcall function text)
        (error (message "sly-agent-q: the output function of job %d failed: %s"
                        job (error-message-string err)))))))

(defun sly-agent-q--serve-async (&optional no-questions)
  "Run the work queued for Emacs and finished jobs' callbacks.
NO-QUESTIONS non-nil: approval questions stay queued."
  (dolist (finished (sly-agent-q--module-async-serve no-questions))
    (if (and (consp (cdr finished)) (eq (cadr finished) :output))
        (sly-agent-q--async-output (car finished) (nth 2 finished))
      (remhash (car finished) sly-agent-q--async-output-functions)
      (sly-agent-q--async-finished finished))))

(defun sly-agent-q--async-finished (finished)
  "Call the callback of the job FINISHED, (ID . RESULTS)."
  ;; A load_system it ran may have left its progress in the echo area.
  (when sly-agent-q--progress-detail
    (setq sly-agent-q--progress-detail nil)
    (when sly-agent-q--progress
      (sly-agent-q--clear-progress)))
  (let ((callback (gethash (car finished) sly-agent-q--async-callbacks)))
    (remhash (car finished) sly-agent-q--async-callbacks)
    (remhash (car finished) sly-agent-q--job-askers)
    (when callback
      (condition-case err
          (funcall callback (cdr finished))
        (error (message "sly-agent-q: the callback of job %d failed: %s"
                        (car finished) (error-message-string err)))))))

(defun sly-agent-q--async-approval (approve origin)
  "Return the approval function APPROVE as an asynchronous job asks it.
The question is asked from a process filter, where `inhibit-quit' is t:
\\[keyboard-quit] is let quit it (which denies), as it does a synchronous call's.
`sly-agent-q-call-origin' is ORIGIN, the door the job came through,
unless nil."
  (and approve
       (lambda (name args)
         (let ((inhibit-quit nil)
               (sly-agent-q-call-origin (or origin sly-agent-q-call-origin)))
           (sly-agent-q--asking
             (funcall approve name args))))))

;;;; Questions asked before a job takes the runner

;; A job with dangerous calls is held back from the one runner while the
;; person is asked about them, so that its questions hold back no other
;; caller's calls: the module checks those calls when the job is
;; submitted (their checks run then, once) and holds the job; the
;; questions are asked here, one at a time and only when no other
;; question is up; the answers then go with the job to the runner, which
;; takes them in place of asking.  A caller's jobs still run in the order
;; it made them: those behind a held job are held too until it goes.

(defvar sly-agent-q-caller nil
  "Who makes the asynchronous jobs submitted now, or nil for the current buffer.
A caller's jobs run in the order it submitted them: while one of them
waits for the answer to a question, its later jobs wait too, and other
callers' jobs run.  The MCP server binds this to the client's
connection, the chat to its buffer.")

(cl-defstruct (sly-agent-q--held (:constructor sly-agent-q--held-create)
                                 (:copier nil))
  "An asynchronous job held back from the runner until its questions are answered."
  job lane
  questions        ; ((TOOL ARGS) ...) not answered yet, in order
  decisions        ; the answers given so far, newest first
  approve origin   ; the approval function and door in force when it came
  withdrawn)       ; why its question was withdrawn (a text), or nil

(defvar sly-agent-q--held-jobs (make-hash-table)
  "The held jobs, by job id.")

(defvar sly-agent-q--lanes (make-hash-table :test 'eq)
  "Each caller's held jobs in order, by caller (see `sly-agent-q-caller').")

(defvar sly-agent-q--ask-queue nil
  "Held jobs waiting for their next question to be asked, oldest first.")

(defvar sly-agent-q--asking-job nil
  "The held job whose question is up, or nil.")

(defvar sly-agent-q--ask-timer nil
  "The timer that asks the next question of `sly-agent-q--ask-queue'.")

(defun sly-agent-q--submit-held (submit callback approve origin)
  "Submit a job with SUBMIT, held back from the runner while it has questions.
SUBMIT is called with HOLD, as the module's submit functions take it,
and returns their answer: the job id, or (ID . QUESTIONS) for a held
job.  CALLBACK is the job's callback.  APPROVE, the approval function,
asks the questions, with `sly-agent-q-call-origin' bound to ORIGIN.
The caller is `sly-agent-q-caller' or the current buffer.  Returns the
job id."
  (let ((lane (or sly-agent-q-caller (current-buffer))))
    (sly-agent-q--track-submitted (funcall submit (sly-agent-q--lane-hold lane))
                                  lane callback approve origin)))

(defun sly-agent-q--lane-hold (lane)
  "The HOLD argument of the module's submit functions for a job of LANE.
A lane with jobs held already holds the next one too (its calls run in
order); else a job is held when it has a question to ask."
  (if (gethash lane sly-agent-q--lanes) t 'ask))

(defun sly-agent-q--track-submitted (answer lane callback approve origin)
  "Keep track of a job the module queued for LANE; return its id.
ANSWER is what the module's submit function returned: the job id, or
\(ID . QUESTIONS) for a job held while APPROVE asks QUESTIONS with
`sly-agent-q-call-origin' bound to ORIGIN.  CALLBACK is the job's."
  (if (integerp answer)
      (progn (puthash answer callback sly-agent-q--async-callbacks)
             answer)
    (let* ((job (car answer))
           (held (sly-agent-q--held-create :job job :lane lane :questions (cdr answer)
                                           :approve approve :origin origin)))
      (puthash job callback sly-agent-q--async-callbacks)
      (puthash job held sly-agent-q--held-jobs)
      (puthash lane (append (gethash lane sly-agent-q--lanes) (list held)) sly-agent-q--lanes)
      (sly-agent-q--advance-lane lane)
      job)))

(defun sly-agent-q--advance-lane (lane)
  "Hand LANE's held jobs to the runner in order, up to one with a question left.
That one's question is queued, to be asked when no other is up."
  (let ((jobs (gethash lane sly-agent-q--lanes)))
    (while (and jobs (null (sly-agent-q--held-questions (car jobs))))
      (let ((held (pop jobs)))
        (remhash (sly-agent-q--held-job held) sly-agent-q--held-jobs)
        (sly-agent-q--module-release (sly-agent-q--held-job held)
                                     (reverse (sly-agent-q--held-decisions held)))))
    (if jobs
        (puthash lane jobs sly-agent-q--lanes)
      (remhash lane sly-agent-q--lanes))
    (let ((head (car jobs)))
      (when (and head (not (eq head sly-agent-q--asking-job))
                 (not (memq head sly-agent-q--ask-queue)))
        (setq sly-agent-q--ask-queue (append sly-agent-q--ask-queue (list head)))
        (sly-agent-q--ask-soon 0)))))

(defun sly-agent-q--ask-soon (seconds)
  "Ask the next waiting question in SECONDS, unless that is planned already."
  (unless (timerp sly-agent-q--ask-timer)
    (setq sly-agent-q--ask-timer
          (run-at-time seconds nil #'sly-agent-q--ask-next))))

(defun sly-agent-q--ask-next ()
  "Ask the next question of the first job in `sly-agent-q--ask-queue'.
Not while another question or a minibuffer is up: then a little later."
  (setq sly-agent-q--ask-timer nil)
  (cond ((null sly-agent-q--ask-queue))
        ((or sly-agent-q--asking-job (> (minibuffer-depth) 0) (sly-agent-q--question-up-p))
         (sly-agent-q--ask-soon 0.25))
        (t
         (sly-agent-q--ask-held (pop sly-agent-q--ask-queue))
         ;; Taking turns: a question the runner put off meanwhile (Lisp's
         ;; own execute-tool-calls, say) comes before the next one here.
         (when sly-agent-q--async-deferred-timer
           (sly-agent-q--serve-after-minibuffer))
         (when sly-agent-q--ask-queue
           (sly-agent-q--ask-soon 0)))))

(defun sly-agent-q--ask-held (held)
  "Ask HELD's next question, then let its caller's jobs go on.
\\[keyboard-quit] at the question denies, as an error in the approval function does.
A withdrawn question (see `sly-agent-q--drop-held') ends at once, and
the person is told why in the echo area."
  (let* ((approve (sly-agent-q--held-approve held))
         (question (car (sly-agent-q--held-questions held)))
         (decision
          (catch held
            (setq sly-agent-q--asking-job held)
            (unwind-protect
                (if (not approve)
                    :denied
                  (let ((inhibit-quit nil)
                        (sly-agent-q-call-origin (sly-agent-q--held-origin held)))
                    (sly-agent-q--asking
                      (condition-case nil
                          (funcall approve (car question) (cadr question))
                        ((error quit) :denied)))))
              (setq sly-agent-q--asking-job nil)))))
    (if (sly-agent-q--held-withdrawn held)
        (message "%s" (sly-agent-q--held-withdrawn held))
      (push (or decision :denied) (sly-agent-q--held-decisions held))
      (pop (sly-agent-q--held-questions held))
      (sly-agent-q--advance-lane (sly-agent-q--held-lane held)))))

(defun sly-agent-q--drop-held (held why)
  "Take HELD, a job not handed to the runner yet, out of its caller's line.
If its question is up, it is withdrawn, and WHY is shown in its place.
The caller's later jobs go on."
  (let* ((lane (sly-agent-q--held-lane held))
         (jobs (delq held (gethash lane sly-agent-q--lanes))))
    (setq sly-agent-q--ask-queue (delq held sly-agent-q--ask-queue))
    (remhash (sly-agent-q--held-job held) sly-agent-q--held-jobs)
    (if jobs
        (puthash lane jobs sly-agent-q--lanes)
      (remhash lane sly-agent-q--lanes))
    (when (eq held sly-agent-q--asking-job)
      (setf (sly-agent-q--held-withdrawn held) why)
      ;; Thrown from a timer, as `with-timeout' does: from within the
      ;; question's own wait for input, whatever called this.
      (run-at-time 0 nil #'sly-agent-q--withdraw-question held))
    (sly-agent-q--advance-lane lane)))

(defun sly-agent-q--withdraw-question (held)
  "End the question about HELD, if it is still up."
  (when (eq held sly-agent-q--asking-job)
    (throw held nil)))

(defun sly-agent-q-execute-tool-calls-async (tool-calls callback &optional with-debugger on-output)
  "Run the tool requests in TOOL-CALLS without blocking Emacs; return the job id.
CALLBACK is called later on the main thread, from a process filter,
with the list of results that `sly-agent-q-execute-tool-calls' would
have returned.  Jobs run one after another on one runner, each caller's
in the order it submitted them (see `sly-agent-q-caller'); the approval
function and hooks are those in force now.  `sly-agent-q-cancel' stops
a job.

Dangerous calls are asked about before the job takes the runner, so
that other callers' jobs (and MCP clients' calls) run while the person
thinks: the calls' checks run when the job is submitted, then each
question is asked in turn, when no other question is up, and the job
runs with the answers given.  \\[keyboard-quit] at a question denies that call.

WITH-DEBUGGER non-nil (the REPL's own evaluations, never a model's calls):
an unhandled error in an evaluate_lisp call shows the debugger, where the
person chooses a restart, instead of ending the call with [ERROR].

ON-OUTPUT non-nil makes the job's evaluate_lisp calls interactive, as
the REPL's are: ON-OUTPUT is called on the main thread with each piece
of text they write to their standard and error output, in order, while
they run (Lisp hands it over every few milliseconds, Emacs takes it when
it is free), and with the last piece before CALLBACK.  That output is
then left out of the results (an [stdout] section only says how much
was cut, past `sly-agent-q-output-limit' characters), and their values
are kept in the session: (agent-q::repl-value JOB N) is the Nth value,
from 0, of the last evaluation of job JOB (the last 100 such jobs)."
  (sly-agent-q--async-channel)
  (sly-agent-q--sync-options)
  (sly-agent-q--lisp-used)
  (let* ((approve sly-agent-q-approval-function)
         (origin sly-agent-q-call-origin)
         (hooks (sly-agent-q--hooks-for-origin sly-agent-q-tool-execution-functions origin t))
         (job (sly-agent-q--submit-held
               (lambda (hold)
                 (sly-agent-q--module-submit tool-calls (sly-agent-q--async-approval approve origin)
                                             hooks with-debugger (and on-output t) hold))
               callback approve origin)))
    (puthash job (cons approve origin) sly-agent-q--job-askers)
    (when on-output
      (puthash job on-output sly-agent-q--async-output-functions))
    job))

(defun sly-agent-q-cancel (job)
  "Cancel the asynchronous JOB (an id from `sly-agent-q-execute-tool-calls-async').
A running evaluation is interrupted and its result is [ERROR] INTERRUPTED;
calls not run yet fail the same way, and a question waiting for the
person about one of them is withdrawn.  The callback still gets the
results and the Lisp session keeps its definitions.  Returns nil if JOB
has already finished."
  (let ((held (gethash job sly-agent-q--held-jobs)))
    (if (not held)
        (sly-agent-q--module-cancel job)
      ;; Queued at once, cancelled: its calls answer INTERRUPTED unrun.
      (sly-agent-q--module-cancel job)
      (sly-agent-q--module-release job nil)
      (sly-agent-q--drop-held held (format "sly-agent-q: job %d cancelled; question withdrawn" job))
      t)))

(defun sly-agent-q--withdraw (job &optional why)
  "Take the asynchronous JOB off the queue if it has not started yet.
It then never runs and its callback is never called: non-nil.  nil when
JOB runs already (`sly-agent-q-cancel' stops it), has finished or is
unknown.  A question waiting for the person about it is withdrawn, and
WHY (a text) is shown in its place."
  (let ((held (gethash job sly-agent-q--held-jobs)))
    (when held
      (sly-agent-q--drop-held held (or why (format "sly-agent-q: job %d withdrawn; so is its question" job)))))
  (when (sly-agent-q--module-withdraw job)
    (remhash job sly-agent-q--async-callbacks)
    (remhash job sly-agent-q--job-askers)
    (remhash job sly-agent-q--async-output-functions)
    t))

;;;; MCP messages

(defun sly-agent-q-mcp-request-async (json-string callback)
  "Handle the MCP JSON-RPC 2.0 message JSON-STRING without blocking Emacs.
Return the job id at once.  CALLBACK is called later on the main thread,
from a process filter, with the response as a JSON string (nil when
nothing is to be answered, as for a notification).  The message runs as
the jobs of `sly-agent-q-execute-tool-calls-async' do, in turn with
them: its dangerous calls (one request's, or a batch's) are asked about
before it takes the runner, with `sly-agent-q-call-origin' \"MCP\" unless
it is bound to a more precise text now.  `sly-agent-q-cancel' stops the
job: its calls answer [ERROR] INTERRUPTED, and CALLBACK still gets the
response."
  (sly-agent-q--async-channel)
  (sly-agent-q--sync-options)
  (sly-agent-q--lisp-used)
  (let* ((approve sly-agent-q-approval-function)
         (origin (or sly-agent-q-call-origin "MCP"))
         (hooks (sly-agent-q--hooks-for-origin sly-agent-q-tool-execution-functions origin t)))
    (let ((job (sly-agent-q--submit-held
                (lambda (hold)
                  (sly-agent-q--module-mcp-submit json-string (sly-agent-q--async-approval approve origin)
                                                  hooks hold))
                callback approve origin)))
      (puthash job (cons approve origin) sly-agent-q--job-askers)
      job)))

(defun sly-agent-q--mcp-line (line callback &optional answer-channel on-worker refusal)
  "Handle LINE, one JSON-RPC message of the socket server, in one module call.
Returns (:answer . RESPONSE) when it was answered at once (RESPONSE the
JSON text, or nil for a notification), (:cancel . ID) for a cancellation
of request ID, or (:queue ID JOB . QUESTIONS) for a tools/call request or
a batch (ID nil) queued as `sly-agent-q-mcp-request-async' queues it,
CALLBACK getting its response; QUESTIONS, when it waits for the person's
approval first, are its calls to be asked about, each (TOOL ARGUMENTS).
ANSWER-CHANNEL, a bridge's (`sly-agent-q--module-open-answer-channel'):
the runner writes a queued request's answer there itself when it can,
and CALLBACK then gets nil.  ON-WORKER non-nil: a plain evaluate_lisp
request may run on the Lisp thread itself (`sly-agent-q-mcp-lisp-on-worker').
REFUSAL, a string: a request that would be queued is answered at once
with error -32029 and this message instead."
  (sly-agent-q--async-channel)
  (sly-agent-q--lisp-used)
  (let* ((approve sly-agent-q-approval-function)
         (origin (or sly-agent-q-call-origin "MCP"))
         (sly-agent-q-call-origin origin)
         (hooks (sly-agent-q--hooks-for-origin sly-agent-q-tool-execution-functions origin t))
         (lane (or sly-agent-q-caller (current-buffer)))
         (route (sly-agent-q--calling-module
                  (sly-agent-q--module-mcp-line line (sly-agent-q--async-approval approve origin)
                                                hooks (sly-agent-q--lane-hold lane) answer-channel
                                                on-worker refusal))))
    (if (not (eq (car route) :queue))
        route
      (let* ((submitted (cddr route))
             (job (sly-agent-q--track-submitted submitted lane callback approve origin)))
        (puthash job (cons approve origin) sly-agent-q--job-askers)
        (cl-list* :queue (cadr route) job (and (consp submitted) (cdr submitted)))))))

(provide 'sly-agent-q-async)

;;; sly-agent-q-async.el ends here
