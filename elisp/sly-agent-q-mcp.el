;;; sly-agent-q-mcp.el --- Serve the tools to outside MCP clients -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `M-x sly-agent-q-mcp-server-start' makes this Emacs an MCP server on a
;; local (Unix) socket, `sly-agent-q-mcp-socket'.  An outside agent
;; (Claude Code, Cursor...) starts `sly-agent-q-mcp --emacs', which
;; forwards its requests here: every tool runs in this Emacs — its Lisp
;; session, its buffers and files — and dangerous calls are approved in
;; its minibuffer, as any call is.
;;
;; Each connection carries newline-delimited JSON-RPC 2.0.  The quick
;; methods (initialize, ping, tools/list) are answered at once; tools/call
;; (and batches) run without blocking Emacs, as with
;; `sly-agent-q-mcp-request-async'.  Each line is one module call, which
;; parses it once and answers, queues or cancels; the dispatcher that
;; shapes every answer is the module's, the same as for the headless
;; server.
;;
;; A dangerous call (alone or in a batch) is asked about before it takes
;; the one runner, as every asynchronous job's is (see
;; `sly-agent-q-execute-tool-calls-async'), so that its question holds
;; back no other client's calls (nor the chat's).  Each client is its own
;; caller (`sly-agent-q-caller'): its calls still run in the order it sent
;; them, those behind a call waiting for an answer waiting too.
;;
;; notifications/cancelled, as in the headless server: a call not
;; running yet (waiting for its question, or queued) is dropped, a
;; running one interrupted; neither is answered (the spec: a cancelled
;; request gets no response).  A client that goes away cancels its calls
;; the same way.
;; The question of a dropped call is withdrawn, saying so in the echo area.
;;
;; With `sly-agent-q-mcp-http-port' set, the server also listens on HTTP
;; (MCP's Streamable HTTP transport, 127.0.0.1 only): Emacs starts
;; `sly-agent-q-mcp --emacs SOCKET --http PORT' as a process, which serves
;; each HTTP client as one more client of the socket, and stops it with
;; the server (or when Emacs exits: its stdin ends).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-async)

(declare-function sly-agent-q--module-json-text "sly-agent-q-module" (value))
(declare-function sly-agent-q--module-start-boot "sly-agent-q-module" ())
(declare-function sly-agent-q--module-open-answer-channel "sly-agent-q-module" (path))
(declare-function sly-agent-q--module-close-answer-channel "sly-agent-q-module" (channel))
(declare-function sly-agent-q--module-open-request-channel "sly-agent-q-module" (path channel))
(declare-function sly-agent-q--module-allow-direct-requests "sly-agent-q-module" (flag))
(declare-function sly-agent-q--module-global-options "sly-agent-q-module" (&rest values))

(defcustom sly-agent-q-mcp-socket "sly-agent-q/mcp.sock"
  "The local socket `sly-agent-q-mcp-server-start' listens on.
A relative name is under the user's runtime directory: $XDG_RUNTIME_DIR,
or else sly-agent-q-UID, a directory of the user's own under the
variable `temporary-file-directory'.  `sly-agent-q-mcp --emacs' uses the
same default.
The directory holding the socket must belong to the user and not be
writable by others; it is made (mode 0700) when missing."
  :type 'string
  :group 'sly-agent-q)

(defcustom sly-agent-q-mcp-http-port nil
  "Also serve MCP over HTTP on this port of 127.0.0.1, or nil for not.
When a number, `sly-agent-q-mcp-server-start' also starts
`sly-agent-q-mcp-program' with --emacs and --http: MCP's Streamable HTTP
transport at http://127.0.0.1:PORT/mcp, each request with a bearer token
written (mode 0600) to http-token beside the socket.  0 picks a free port;
`sly-agent-q-mcp-http-url' then says which."
  :type '(choice (const :tag "Off" nil) (natnum :tag "Port"))
  :group 'sly-agent-q)

(defcustom sly-agent-q-mcp-program nil
  "The sly-agent-q-mcp program that serves HTTP, or nil for the one built.
nil means build/sly-agent-q-mcp next to the elisp/ directory."
  :type '(choice (const :tag "Found in build/" nil) file)
  :group 'sly-agent-q)

(defcustom sly-agent-q-mcp-max-message-bytes (* 16 1024 1024)
  "The longest JSON-RPC message, in bytes, the MCP socket server reads.
A longer line is not kept: its pieces are counted and dropped as they
come, and the client gets a parse error (id null) when it ends, as from
the headless server, whose limit is the same.  A client cannot fill
Emacs's memory with a line that never ends."
  :type 'natnum
  :group 'sly-agent-q)

(defcustom sly-agent-q-mcp-max-queued-requests 64
  "How many requests of one MCP client may wait or run at once.
One request more (a tools/call, resources/read, prompts/get or a batch)
is answered at once with error -32029 instead of queued: a client that
floods the socket cannot fill Emacs's memory, and the person's approval
questions do not pile up.  Pings, cancellations and the quick methods
are answered as always."
  :type 'natnum
  :group 'sly-agent-q)

(defcustom sly-agent-q-mcp-lisp-on-worker t
  "Non-nil: a plain evaluate_lisp request runs on the Lisp thread itself.
A tools/call of evaluate_lisp with no progress to follow, no entry of
`sly-agent-q-tool-execution-functions' for it and nothing to ask, that
finds the Lisp session and the asynchronous runner idle, is run whole by
the Lisp thread, which writes the answer straight to the bridge.  From
`sly-agent-q-mcp --emacs', such a request comes on a FIFO of its own that
the idle Lisp thread reads itself, so Emacs's own thread is not woken for
it at all.  An evaluation that lasts more than 2 ms, or asks for an
approval or Emacs, is taken over by the runner as any other call.  nil:
every request goes through Emacs's thread and the runner (two more
hand-offs each way).  Set it with `setq' or `customize' at any time; a
buffer-local hook turns the FIFO off until the hook's global value is
set again."
  :type 'boolean
  :group 'sly-agent-q)

(defvar sly-agent-q-mcp-server-start-on-load nil
  "Obsolete: loading sly-agent-q starts nothing.
Call `sly-agent-q-mcp-server-start' in the init file instead.")
(make-obsolete-variable 'sly-agent-q-mcp-server-start-on-load
                        "call `sly-agent-q-mcp-server-start' in your init file."
                        "0.1.0")

(defvar sly-agent-q--mcp-server nil
  "The listening process of the MCP server, or nil.")

(defvar sly-agent-q--mcp-clients nil
  "The live client connections of the MCP server.")

(defvar sly-agent-q--mcp-http-process nil
  "The sly-agent-q-mcp process serving HTTP, or nil.")

(defvar sly-agent-q-mcp-http-url nil
  "The URL MCP is served at over HTTP, once the server said; else nil.")

(defvar sly-agent-q-mcp-http-token-file nil
  "The file holding the bearer token of the HTTP server, or nil.")

;;;; Where the socket is

(defun sly-agent-q--mcp-runtime-directory ()
  "The user's runtime directory: $XDG_RUNTIME_DIR or a per-user temporary one."
  (let ((xdg (getenv "XDG_RUNTIME_DIR")))
    (if (and xdg (file-name-absolute-p xdg))
        (file-name-as-directory xdg)
      (file-name-as-directory
       (expand-file-name (format "sly-agent-q-%d" (user-uid)) temporary-file-directory)))))

(defun sly-agent-q-mcp-socket-file ()
  "The absolute file name of the socket, from `sly-agent-q-mcp-socket'."
  (expand-file-name sly-agent-q-mcp-socket (sly-agent-q--mcp-runtime-directory)))

(defun sly-agent-q--mcp-check-directory (directory)
  "Make DIRECTORY (mode 0700) if missing; refuse it unless it is the user's own.
The user must own it, and neither group nor others may write to it; a
symbolic link is refused too."
  (let ((directory (directory-file-name directory)))
    (unless (file-exists-p directory)
      (with-file-modes #o700
        (make-directory directory t)))
    (let ((attributes (file-attributes directory 'integer)))
      (cond ((stringp (file-attribute-type attributes))
             (user-error "sly-agent-q: %s is a symbolic link; the MCP socket needs a directory of your own"
                         directory))
            ((not (eq (file-attribute-type attributes) t))
             (user-error "sly-agent-q: %s is not a directory" directory))
            ((/= (file-attribute-user-id attributes) (user-uid))
             (user-error "sly-agent-q: %s belongs to another user; the MCP socket needs a directory of your own"
                         directory))
            ((/= 0 (logand (file-modes directory 'nofollow) #o022))
             (user-error "The MCP socket's directory is not private: others may write to %s (mode %o); make it private (chmod 700) or choose another `sly-agent-q-mcp-socket'"
                         directory (file-modes directory 'nofollow)))))))

(defun sly-agent-q--mcp-prepare-socket (file)
  "Check the directories of FILE, and remove a stale socket at FILE.
Refuse when another server listens there."
  (let ((runtime (sly-agent-q--mcp-runtime-directory)))
    ;; The per-user temporary directory is ours to check as well.
    (when (and (not (getenv "XDG_RUNTIME_DIR"))
               (string-prefix-p runtime (file-name-directory file)))
      (sly-agent-q--mcp-check-directory runtime)))
  (sly-agent-q--mcp-check-directory (file-name-directory file))
  (when (file-exists-p file)
    (let ((listening (condition-case nil
                         (let ((probe (make-network-process
                                       :name "sly-agent-q-mcp-probe" :family 'local
                                       :service file :noquery t)))
                           (delete-process probe)
                           t)
                       (file-error nil))))
      (when listening
        (user-error "An MCP server already listens at %s" file))
      (delete-file file)))
  (sly-agent-q--mcp-remove-stale-fifos (file-name-directory file)))

(defun sly-agent-q--mcp-remove-stale-fifos (directory)
  "Remove the answer channels in DIRECTORY left by bridges that are gone.
A bridge removes its FIFO, answers-PID-N, once Emacs opened it; one
killed before that leaves it behind."
  (dolist (name (directory-files directory nil "\\`answers-\\([0-9]+\\)-[0-9]+\\'" t))
    (let* ((path (expand-file-name name directory))
           (pid (and (string-match "\\`answers-\\([0-9]+\\)-" name)
                     (string-to-number (match-string 1 name))))
           (attributes (file-attributes path 'integer)))
      (when (and pid attributes
                 (string-prefix-p "p" (file-attribute-modes attributes))
                 (= (file-attribute-user-id attributes) (user-uid))
                 (not (process-attributes pid)))
        (ignore-errors (delete-file path))))))

;;;; The server

;;;###autoload
(defun sly-agent-q-mcp-server-start ()
  "Serve sly-agent-q's tools to MCP clients on `sly-agent-q-mcp-socket'.
Outside agents reach it through `sly-agent-q-mcp --emacs' (see the
user guide, docs/user-guide.md).  Every tool runs in this Emacs;
dangerous calls ask `sly-agent-q-approval-function', which prompts in
the minibuffer.  With `sly-agent-q-mcp-http-port' set, MCP is also served
over HTTP (see `sly-agent-q-mcp-http-url').
Returns the socket's file name."
  (interactive)
  (let ((file (sly-agent-q-mcp-socket-file)))
    (if (process-live-p sly-agent-q--mcp-server)
        (when (called-interactively-p 'interactive)
          (message "sly-agent-q: the MCP server already listens at %s" file))
      (sly-agent-q--mcp-prepare-socket file)
      (setq sly-agent-q--mcp-server
            (with-file-modes #o600
              (make-network-process
               :name "sly-agent-q-mcp" :family 'local :service file :server t
               :noquery t :coding 'utf-8-unix :buffer nil
               :filter #'sly-agent-q--mcp-filter
               :sentinel #'sly-agent-q--mcp-sentinel
               :log #'sly-agent-q--mcp-accept)))
      (set-file-modes file #o600 'nofollow)
      (process-put sly-agent-q--mcp-server 'sly-agent-q-mcp-file file)
      ;; Lisp boots now, in the background, not at the first client's
      ;; initialize, which would wait for it (150 ms on a quiet machine,
      ;; seconds on a loaded one).  A module that cannot load says so at
      ;; that first call.
      (ignore-errors (sly-agent-q--module-start-boot))
      ;; No socket left behind for the bridge to find.
      (add-hook 'kill-emacs-hook #'sly-agent-q-mcp-server-stop)
      (when (called-interactively-p 'interactive)
        (message "sly-agent-q: MCP server listening at %s" file)))
    (when (and sly-agent-q-mcp-http-port
               (not (process-live-p sly-agent-q--mcp-http-process)))
      (sly-agent-q--mcp-http-start file))
    file))

;;;; Over HTTP: sly-agent-q-mcp --emacs --http, started by Emacs

(defun sly-agent-q--mcp-program ()
  "The sly-agent-q-mcp program to start."
  (or sly-agent-q-mcp-program
      (expand-file-name "../build/sly-agent-q-mcp" sly-agent-q--directory)))

(defun sly-agent-q--mcp-http-start (socket)
  "Start sly-agent-q-mcp serving HTTP, forwarding to SOCKET."
  (let ((program (sly-agent-q--mcp-program))
        (token-file (expand-file-name "http-token" (file-name-directory socket))))
    (unless (file-executable-p program)
      (user-error "sly-agent-q: %s is not there: build it (make build) or set `sly-agent-q-mcp-program'"
                  program))
    (setq sly-agent-q-mcp-http-url nil
          sly-agent-q-mcp-http-token-file token-file)
    (setq sly-agent-q--mcp-http-process
          (make-process
           :name "sly-agent-q-mcp-http"
           :buffer (get-buffer-create " *sly-agent-q-mcp-http*")
           :command (list program "--emacs" socket
                          "--http" (number-to-string sly-agent-q-mcp-http-port)
                          "--http-token-file" token-file)
           ;; A pipe: when Emacs goes, the program's stdin ends and it stops.
           :connection-type 'pipe
           :noquery t
           :coding 'utf-8-unix
           :filter #'sly-agent-q--mcp-http-filter
           :sentinel #'sly-agent-q--mcp-http-sentinel))))

(defun sly-agent-q--mcp-http-filter (process output)
  "Keep PROCESS's OUTPUT in its buffer; note the URL once it is printed."
  (when (buffer-live-p (process-buffer process))
    (with-current-buffer (process-buffer process)
      (goto-char (point-max))
      (insert output)
      (goto-char (point-min))
      (when (and (eq process sly-agent-q--mcp-http-process)
                 (not sly-agent-q-mcp-http-url)
                 (re-search-forward "serving MCP (Streamable HTTP) at \\(http://[^ \n]+\\)" nil t))
        (setq sly-agent-q-mcp-http-url (match-string 1))
        (message "sly-agent-q: MCP over HTTP at %s (bearer token in %s)"
                 sly-agent-q-mcp-http-url sly-agent-q-mcp-http-token-file)))))

(defun sly-agent-q--mcp-http-sentinel (process event)
  "Say when PROCESS, the HTTP server, ended unasked (EVENT)."
  (unless (process-live-p process)
    (when (eq process sly-agent-q--mcp-http-process)
      (setq sly-agent-q--mcp-http-process nil
            sly-agent-q-mcp-http-url nil)
      (unless (process-get process 'sly-agent-q-stopping)
        (message "sly-agent-q: the MCP HTTP server ended (%s); see buffer %s"
                 (string-trim event) (buffer-name (process-buffer process)))))))

(defun sly-agent-q--mcp-http-stop ()
  "Stop the HTTP server, if running: the end of its stdin stops it."
  (let ((process sly-agent-q--mcp-http-process))
    (setq sly-agent-q--mcp-http-process nil
          sly-agent-q-mcp-http-url nil)
    (when (process-live-p process)
      (process-put process 'sly-agent-q-stopping t)
      (process-send-eof process))))

;;;###autoload
(defun sly-agent-q-mcp-server-stop ()
  "Stop the MCP server: close its clients, its socket and its HTTP server.
The clients' pending calls are cancelled."
  (interactive)
  (sly-agent-q--mcp-http-stop)
  (dolist (client sly-agent-q--mcp-clients)
    (sly-agent-q--mcp-forget client)
    (delete-process client))
  (setq sly-agent-q--mcp-clients nil)
  (when sly-agent-q--mcp-server
    (let ((file (process-get sly-agent-q--mcp-server 'sly-agent-q-mcp-file)))
      (delete-process sly-agent-q--mcp-server)
      (setq sly-agent-q--mcp-server nil)
      (when (and file (file-exists-p file))
        (delete-file file))
      (when (called-interactively-p 'interactive)
        (message "sly-agent-q: MCP server stopped")))))

(defun sly-agent-q-mcp-server-running-p ()
  "Non-nil when the MCP server listens."
  (process-live-p sly-agent-q--mcp-server))

(defun sly-agent-q--mcp-accept (_server client _message)
  "Set up the new connection CLIENT."
  ;; A client inherits the server's plist: its own table of calls.
  (process-put client 'sly-agent-q-mcp-jobs (make-hash-table :test 'equal))
  (process-put client 'sly-agent-q-mcp-partial nil)
  ;; Running calls the client cancelled: their answers are not sent.
  (process-put client 'sly-agent-q-mcp-cancelled nil)
  ;; Cancellations that found no call: (KEY . TIME), newest first.
  (process-put client 'sly-agent-q-mcp-unmatched-cancels nil)
  ;; Quitting Emacs does not ask about an agent's connection.
  (set-process-query-on-exit-flag client nil)
  (push client sly-agent-q--mcp-clients))

(defun sly-agent-q--mcp-forget (client)
  "Cancel what CLIENT is waiting for, and drop it."
  (let ((jobs (process-get client 'sly-agent-q-mcp-jobs))
        (ids nil))
    (when jobs
      (maphash (lambda (_key job) (push job ids)) jobs)
      (clrhash jobs)
      ;; The newest first: no call waiting behind a dropped one starts.
      (dolist (job (sort ids #'>))
        (sly-agent-q--mcp-stop-job job "[MCP] client went away; question withdrawn"))))
  (sly-agent-q--mcp-close-answer-channel client)
  (setq sly-agent-q--mcp-clients (delq client sly-agent-q--mcp-clients)))

(defun sly-agent-q--mcp-stop-job (job why)
  "Stop JOB as the headless server stops a cancelled request.
Not started yet: dropped; the question waiting about it is withdrawn,
WHY shown in its place.  Running: interrupted.  Either way it is never
answered (the caller forgets it).  Non-nil when it was dropped."
  (or (sly-agent-q--withdraw job why)
      (progn (sly-agent-q-cancel job) nil)))

(defun sly-agent-q--mcp-sentinel (process _event)
  "Cancel the pending work of PROCESS, a connection that closed."
  (unless (or (process-live-p process) (eq process sly-agent-q--mcp-server))
    (sly-agent-q--mcp-forget process)))

(defun sly-agent-q--mcp-filter (client output)
  "Handle each complete line of OUTPUT from CLIENT.
A line longer than `sly-agent-q-mcp-max-message-bytes' is not kept: its
pieces are counted, not stored, and it is answered with a parse error."
  (let ((newline (string-search "\n" output))
        (skipped (process-get client 'sly-agent-q-mcp-skipped))
        (start 0))
    (cond
     ((not newline)
      (if skipped
          (process-put client 'sly-agent-q-mcp-skipped (+ skipped (string-bytes output)))
        (sly-agent-q--mcp-keep-partial client output)))
     (t
      (when skipped
        ;; The end of a line too long to keep.
        (process-put client 'sly-agent-q-mcp-skipped nil)
        (sly-agent-q--mcp-refuse-long-line
         client (+ skipped (string-bytes (substring output 0 newline))))
        (setq start (1+ newline)))
      (let* ((pieces (process-get client 'sly-agent-q-mcp-partial))
             (text (if pieces (apply #'concat (nreverse (cons output pieces))) output)))
        (process-put client 'sly-agent-q-mcp-partial nil)
        (process-put client 'sly-agent-q-mcp-partial-bytes 0)
        (while (setq newline (string-search "\n" text start))
          (let ((end (if (and (> newline start) (eq (aref text (1- newline)) ?\r)) (1- newline) newline)))
            (when (> end start)
              (let ((line (substring text start end)))
                (cond
                 ((> (string-bytes line) sly-agent-q-mcp-max-message-bytes)
                  (sly-agent-q--mcp-refuse-long-line client (string-bytes line)))
                 ;; A message starts with { or [: only other lines need the blank test.
                 ((or (memq (aref line 0) '(?{ ?\[))
                      (not (string-blank-p line)))
                  (let ((channel-request (sly-agent-q--mcp-answer-channel-request line)))
                    (if channel-request
                        (sly-agent-q--mcp-open-answer-channel client channel-request)
                      (sly-agent-q--mcp-handle client line))))))))
          (setq start (1+ newline)))
        (when (< start (length text))
          (sly-agent-q--mcp-keep-partial client (substring text start))))))))

(defun sly-agent-q--mcp-keep-partial (client piece)
  "Keep PIECE, the start of CLIENT's next line, unless the line is too long.
Pieces are kept as a list, joined once when the line ends; once they
pass `sly-agent-q-mcp-max-message-bytes', they are dropped and only
counted (`sly-agent-q--mcp-filter' answers the line when it ends)."
  (let ((bytes (+ (or (process-get client 'sly-agent-q-mcp-partial-bytes) 0) (string-bytes piece))))
    (if (> bytes sly-agent-q-mcp-max-message-bytes)
        (progn
          (process-put client 'sly-agent-q-mcp-partial nil)
          (process-put client 'sly-agent-q-mcp-partial-bytes 0)
          (process-put client 'sly-agent-q-mcp-skipped bytes))
      (process-put client 'sly-agent-q-mcp-partial
                   (cons piece (process-get client 'sly-agent-q-mcp-partial)))
      (process-put client 'sly-agent-q-mcp-partial-bytes bytes))))

(defun sly-agent-q--mcp-refuse-long-line (client bytes)
  "Tell CLIENT its message of BYTES bytes was too long, and skipped."
  (message "sly-agent-q: skipped an MCP message of %d bytes (`sly-agent-q-mcp-max-message-bytes' is %d)"
           bytes sly-agent-q-mcp-max-message-bytes)
  (sly-agent-q--mcp-send
   client
   (sly-agent-q--mcp-error
    :null -32700
    (format "Parse error: the message is %d bytes long, more than the %d bytes this server reads; it was skipped"
            bytes sly-agent-q-mcp-max-message-bytes))))

(defun sly-agent-q--mcp-send (client response)
  "Send RESPONSE, a JSON text or nil, to CLIENT if it is still connected."
  (when (and response (process-live-p client))
    (condition-case nil
        (process-send-string client (concat response "\n"))
      (error nil))))

(defun sly-agent-q--mcp-id-key (id)
  "The key of request ID in a client's table: 1 and \"1\" differ."
  (if (fixnump id) id (prin1-to-string id)))

(defun sly-agent-q--mcp-error (id code text)
  "A JSON-RPC error response to request ID (:null for none): CODE, TEXT."
  (sly-agent-q--module-json-text
   `(("jsonrpc" . "2.0") ("id" . ,id)
     ("error" . (("code" . ,code) ("message" . ,text))))))

;;;; Log messages (MCP's notifications/message)

;; Each client gets the log messages about its own calls at the level it
;; chose with logging/setLevel or above, none before it chose one (the
;; dispatcher checks and answers the request; the level is kept here, on
;; the connection).

(defconst sly-agent-q--mcp-log-levels
  '("debug" "info" "notice" "warning" "error" "critical" "alert" "emergency")
  "MCP's log levels, least severe first.")

(defun sly-agent-q--mcp-note-log-level (client line response)
  "Keep on CLIENT the level of LINE, a logging/setLevel request RESPONSE answered.
Nothing when it was refused (RESPONSE an error)."
  (when (and response (string-search "\"logging/setLevel\"" line)
             (not (string-search "\"error\":" response)))
    (let* ((message (ignore-errors (json-parse-string line)))
           (params (and (hash-table-p message) (gethash "params" message)))
           (level (and (hash-table-p params) (gethash "level" params))))
      (when (and (stringp level) (member level sly-agent-q--mcp-log-levels))
        (process-put client 'sly-agent-q-mcp-log-level level)))))

(defun sly-agent-q--mcp-log-wanted-p (client level)
  "Non-nil when CLIENT chose a log level at or below LEVEL."
  (let ((chosen (process-get client 'sly-agent-q-mcp-log-level)))
    (and chosen
         (>= (length (member chosen sly-agent-q--mcp-log-levels))
             (length (member level sly-agent-q--mcp-log-levels))))))

(defun sly-agent-q--mcp-log-text (level id tool message)
  "The notifications/message text at LEVEL about request ID of TOOL: MESSAGE."
  (sly-agent-q--module-json-text
   `(("jsonrpc" . "2.0") ("method" . "notifications/message")
     ("params" . (("level" . ,level) ("logger" . "sly-agent-q")
                  ("data" . (("message" . ,message) ("requestId" . ,id)
                             ("tool" . ,tool))))))))

(defun sly-agent-q--mcp-job-log (job level text)
  "Send TEXT, a notifications/message at LEVEL, to the client whose call is JOB.
The module calls this for a running call's log message; nothing is sent
when JOB is no client's any more, or its client did not ask for LEVEL."
  (catch 'sent
    (dolist (client sly-agent-q--mcp-clients)
      (let ((jobs (process-get client 'sly-agent-q-mcp-jobs)))
        (when jobs
          (maphash (lambda (_key queued)
                     (when (eql queued job)
                       (when (sly-agent-q--mcp-log-wanted-p client level)
                         (sly-agent-q--mcp-send client text))
                       (throw 'sent t)))
                   jobs))))))

;;;; The answer channel of a bridge

;; `sly-agent-q-mcp --emacs' makes a FIFO beside the socket and asks, with
;; the method below (its own: it refuses it from its clients), that the
;; answers to its connection's calls be written there by the runner, which
;; saves them a trip through Emacs's thread.  The module opens only a FIFO
;; of the user's own that nobody else may open, and only in the socket's
;; directory; anything else is refused, and the answers come as before.

(defconst sly-agent-q--mcp-answer-channel-method "sly-agent-q/answer-channel"
  "The method by which a bridge asks for an answer channel.")

(defun sly-agent-q--mcp-close-answer-channel (client)
  "Close the answer channel of CLIENT, if it has one."
  (let ((channel (process-get client 'sly-agent-q-mcp-answer-channel)))
    (when channel
      (process-put client 'sly-agent-q-mcp-answer-channel nil)
      (ignore-errors (sly-agent-q--module-close-answer-channel channel)))))

(defun sly-agent-q--mcp-open-answer-channel (client message)
  "Open the answer channel MESSAGE, a parsed request, asks for CLIENT.
The answer (or the reason it was refused) goes back to CLIENT."
  (let* ((id (gethash "id" message))
         (params (gethash "params" message))
         (path (and (hash-table-p params) (gethash "path" params)))
         (server-file (and sly-agent-q--mcp-server
                           (process-get sly-agent-q--mcp-server 'sly-agent-q-mcp-file)))
         (requests (and (hash-table-p params) (gethash "requests" params)))
         (in-directory (lambda (file)
                         (and server-file (stringp file) (file-name-absolute-p file)
                              (equal (file-name-directory (expand-file-name file))
                                     (file-name-directory server-file)))))
         (direct nil)
         (refused
          (cond ((not (stringp path)) "params.path must be a string")
                ((not (funcall in-directory path))
                 "the answer channel must be in the socket's directory")
                (t (condition-case err
                       (let ((channel (sly-agent-q--module-open-answer-channel path)))
                         (sly-agent-q--mcp-close-answer-channel client)
                         (process-put client 'sly-agent-q-mcp-answer-channel channel)
                         ;; The request FIFO beside it, when asked for and
                         ;; in the same directory (else just not opened).
                         (when (funcall in-directory requests)
                           (sly-agent-q--async-channel)
                           (setq direct (sly-agent-q--mcp-open-request-channel channel requests)))
                         nil)
                     (error (error-message-string err)))))))
    (when id
      (sly-agent-q--mcp-send
       client
       (if refused
           (sly-agent-q--mcp-error id -32602 (concat "Invalid params: " refused))
         (let ((result (make-hash-table :test #'equal)))
           (when direct (puthash "requests" t result))
           (sly-agent-q--module-json-text
            `(("jsonrpc" . "2.0") ("id" . ,id) ("result" . ,result)))))))))

(defvar sly-agent-q--mcp-globals nil
  "What the FIFO's requests run with: (SYMBOL DEPTH . GLOBAL-VALUE) entries.
For `sly-agent-q-approval-function', the hook, `sly-agent-q-mcp-lisp-on-worker'
and the module's options: the global value (set outside any `let'), and
how many `let' bindings of the variable are active now.  A request read
from a bridge's FIFO has no caller whose bindings count, so it runs with
the global values, and only while none of them is let-bound; variable
watchers (`sly-agent-q--mcp-global-watch') keep this current.")


(defun sly-agent-q--mcp-client-of-channel (channel)
  "The connected client whose answer channel is CHANNEL, or nil."
  (cl-find channel sly-agent-q--mcp-clients
           :key (lambda (client) (process-get client 'sly-agent-q-mcp-answer-channel))))

(defconst sly-agent-q--mcp-unmatched-cancel-seconds 5
  "How long a cancellation that found no call still drops a FIFO request.")

(defun sly-agent-q--mcp-note-unmatched-cancel (client key)
  "Remember that CLIENT cancelled request KEY, which was not found.
A request the Lisp thread read from the FIFO and handed to this thread
may come after its cancellation (`sly-agent-q--mcp-direct-line')."
  (let ((now (float-time))
        (kept nil))
    (dolist (entry (process-get client 'sly-agent-q-mcp-unmatched-cancels))
      (when (and (< (length kept) 15)
                 (< (- now (cdr entry)) sly-agent-q--mcp-unmatched-cancel-seconds))
        (push entry kept)))
    (process-put client 'sly-agent-q-mcp-unmatched-cancels (cons (cons key now) (nreverse kept)))))

(defun sly-agent-q--mcp-cancelled-before-p (client line)
  "Non-nil when CLIENT cancelled LINE's request before it came here.
The cancellation is then forgotten."
  (let* ((entries (process-get client 'sly-agent-q-mcp-unmatched-cancels))
         (id (and entries
                  (ignore-errors (gethash "id" (json-parse-string line :null-object nil)))))
         (entry (and id (assoc (sly-agent-q--mcp-id-key id) entries))))
    (when (and entry (< (- (float-time) (cdr entry)) sly-agent-q--mcp-unmatched-cancel-seconds))
      (process-put client 'sly-agent-q-mcp-unmatched-cancels (delq entry entries))
      t)))

(defun sly-agent-q--mcp-direct-line (channel line)
  "Handle LINE, which the Lisp thread read on CHANNEL's request FIFO.
It runs as if its client had sent it on the socket (Lisp was busy, or it
was not a plain evaluation).  Dropped when the client has gone, or has
cancelled it already: the cancellation came on the socket while the
line was on its way here, and found nothing to stop."
  (let ((client (sly-agent-q--mcp-client-of-channel channel)))
    ;; From the async filter, as a socket line from the connection's
    ;; (never inside a synchronous call's wait: the module sees to it).
    (when (and (process-live-p client)
               (not (sly-agent-q--mcp-cancelled-before-p client line)))
      (sly-agent-q--mcp-handle client line))))

(defun sly-agent-q--mcp-direct-answer (channel text)
  "Send TEXT, the answer to a request read on CHANNEL's FIFO, to its client."
  (sly-agent-q--mcp-send (sly-agent-q--mcp-client-of-channel channel) text))

(defun sly-agent-q--mcp-direct-log (channel level text)
  "Send TEXT, a log message at LEVEL about a request read on CHANNEL's FIFO.
Only when its client chose LEVEL or lower."
  (let ((client (sly-agent-q--mcp-client-of-channel channel)))
    (when (and client (sly-agent-q--mcp-log-wanted-p client level))
      (sly-agent-q--mcp-send client text))))

(defun sly-agent-q--mcp-global-symbols ()
  "The variables whose global values the FIFO's requests run with."
  (append '(sly-agent-q-approval-function sly-agent-q-tool-execution-functions
            sly-agent-q-mcp-lisp-on-worker)
          (mapcar #'car sly-agent-q--module-options)))

(defun sly-agent-q--mcp-global (symbol)
  "SYMBOL's global value, as `sly-agent-q--mcp-globals' recorded it."
  (cddr (assq symbol sly-agent-q--mcp-globals)))

(defun sly-agent-q--mcp-direct-allowed-p ()
  "Whether a request read from a FIFO may run without Emacs's thread.
`sly-agent-q-mcp-lisp-on-worker' on, no tool-call hook, and nothing it
depends on let-bound (or buffer-local, for the hook) anywhere now."
  (and (sly-agent-q--mcp-global 'sly-agent-q-mcp-lisp-on-worker)
       (null (sly-agent-q--mcp-global 'sly-agent-q-tool-execution-functions))
       (cl-every (lambda (entry) (zerop (cadr entry))) sly-agent-q--mcp-globals)))

(defun sly-agent-q--mcp-tell-module ()
  "Give the module the global options and whether FIFO requests may run."
  (apply #'sly-agent-q--module-global-options
         (mapcar (lambda (option) (sly-agent-q--mcp-global (car option))) sly-agent-q--module-options))
  (sly-agent-q--module-allow-direct-requests (sly-agent-q--mcp-direct-allowed-p)))

(defun sly-agent-q--mcp-global-watch (symbol value operation where)
  "Record SYMBOL becoming VALUE by OPERATION (see `add-variable-watcher').
A `let' counts up, its end down; a `set' outside any `let' is the new
global value.  WHERE, a buffer, says the value is buffer-local there: a
buffer-local hook counts as a binding while it is set.  The module then
hears of it."
  (let ((entry (assq symbol sly-agent-q--mcp-globals)))
    (when entry
      (pcase operation
        ('let (setcar (cdr entry) (1+ (cadr entry))))
        ('unlet
         (if (zerop (cadr entry))
             ;; A binding made before recording began ends: VALUE is the
             ;; global one it hid.
             (setcdr (cdr entry) value)
           (setcar (cdr entry) (1- (cadr entry)))))
        ((or 'set 'makunbound)
         (cond (where
                ;; A buffer-local value: a hook there is one more binding
                ;; to respect until its global value is set again.
                (when (and value (eq symbol 'sly-agent-q-tool-execution-functions))
                  (setcar (cdr entry) (1+ (cadr entry)))))
               ((zerop (cadr entry))
                (setcdr (cdr entry) (and (eq operation 'set) value))))))
      (when sly-agent-q--module-ready
        (sly-agent-q--mcp-tell-module)))))

(defun sly-agent-q--mcp-watch-globals ()
  "Start recording the global values FIFO requests run with, once.
Called outside any `let' of them (opening a bridge's channel, from the
connection's filter)."
  (unless sly-agent-q--mcp-globals
    (dolist (symbol (sly-agent-q--mcp-global-symbols))
      (push (cons symbol (cons 0 (and (default-boundp symbol) (default-value symbol))))
            sly-agent-q--mcp-globals)
      (add-variable-watcher symbol #'sly-agent-q--mcp-global-watch))))

(defun sly-agent-q--mcp-direct-approve (name args)
  "Ask the global approval function about NAME ARGS of a FIFO's request.
As an MCP client's call is asked (`sly-agent-q-call-origin' \"MCP\"); a
`let' binding of `sly-agent-q-approval-function' active at this moment
is some other caller's, not this request's."
  (let ((approve (sly-agent-q--mcp-global 'sly-agent-q-approval-function)))
    (funcall (or (sly-agent-q--async-approval approve "MCP")
                 (lambda (_name _args) '(:denied "no approval function")))
             name args)))

(defun sly-agent-q--mcp-direct-approve-agent-code (name json)
  "`sly-agent-q--approve-agent-code' for NAME JSON of a request read on a FIFO.
With the global approval function, as `sly-agent-q--mcp-direct-approve'."
  (let ((sly-agent-q-approval-function (sly-agent-q--mcp-global 'sly-agent-q-approval-function))
        (sly-agent-q-call-origin "MCP"))
    (sly-agent-q--approve-agent-code name json)))

(defun sly-agent-q--mcp-open-request-channel (channel path)
  "Open PATH, a bridge's request FIFO beside answer CHANNEL; t when opened.
Not when `sly-agent-q-mcp-lisp-on-worker' is nil; a refusal is logged."
  (when sly-agent-q-mcp-lisp-on-worker
    (condition-case err
        (progn
          (sly-agent-q--module-open-request-channel path channel)
          (sly-agent-q--mcp-watch-globals)
          (sly-agent-q--mcp-tell-module)
          t)
      (error (message "sly-agent-q: no request channel (%s)" (error-message-string err))
             nil))))

(defun sly-agent-q--mcp-answer-channel-request (line)
  "LINE parsed when it is a request for an answer channel, else nil."
  (when (string-search sly-agent-q--mcp-answer-channel-method line)
    (let ((message (ignore-errors (json-parse-string line))))
      (and (hash-table-p message)
           (equal (gethash "method" message) sly-agent-q--mcp-answer-channel-method)
           message))))

;;;; Messages

(defun sly-agent-q--mcp-handle (client line)
  "Handle LINE, one JSON-RPC message from CLIENT, in one module call.
Quick methods are answered at once; a cancellation stops the call it
names; a tools/call request or a batch is queued, its dangerous calls
asked about first without holding the runner.  A batch has no id to
cancel it by; it is kept under a key of its own, so that its client
going away still drops it."
  (let ((jobs (process-get client 'sly-agent-q-mcp-jobs))
        (sly-agent-q-caller client)
        (key nil)
        (job nil))
    (condition-case err
        (pcase (sly-agent-q--mcp-line
                line
                (lambda (response)
                  (when (and key (eql (gethash key jobs) job))
                    (remhash key jobs))
                  ;; A cancelled request gets no response (the spec).
                  (unless (memql job (process-get client 'sly-agent-q-mcp-cancelled))
                    (sly-agent-q--mcp-send client response))
                  (process-put client 'sly-agent-q-mcp-cancelled
                               (delq job (process-get client 'sly-agent-q-mcp-cancelled))))
                (process-get client 'sly-agent-q-mcp-answer-channel)
                sly-agent-q-mcp-lisp-on-worker
                (let ((waiting (hash-table-count jobs)))
                  (and (>= waiting sly-agent-q-mcp-max-queued-requests)
                       (format "Too many requests: %d of this client's wait or run already (the most \
`sly-agent-q-mcp-max-queued-requests' allows); send it again when one is answered"
                               waiting))))
          (`(:answer . ,response)
           (sly-agent-q--mcp-note-log-level client line response)
           (sly-agent-q--mcp-send client response))
          (`(:cancel . ,id)
           (let* ((cancelled (sly-agent-q--mcp-id-key id))
                  (running (gethash cancelled jobs)))
             (unless running
               (sly-agent-q--mcp-note-unmatched-cancel client cancelled))
             (when running
               (remhash cancelled jobs)
               (unless (sly-agent-q--mcp-stop-job
                        running "[MCP] call cancelled by the client; question withdrawn")
                 ;; Running, interrupted: its answer is not sent.
                 (process-put client 'sly-agent-q-mcp-cancelled
                              (cons running (process-get client 'sly-agent-q-mcp-cancelled)))))))
          (`(:queue ,id ,queued . ,questions)
           (when (and questions id (sly-agent-q--mcp-log-wanted-p client "info"))
             (sly-agent-q--mcp-send
              client (sly-agent-q--mcp-log-text
                      "info" id (caar questions)
                      (format "%s waits for the person's approval in Emacs"
                              (mapconcat #'car questions ", ")))))
           ;; Its progress notifications, handed back as its output.
           (puthash queued
                    (lambda (lines)
                      (unless (memql queued (process-get client 'sly-agent-q-mcp-cancelled))
                        (sly-agent-q--mcp-send client (string-trim-right lines "\n"))))
                    sly-agent-q--async-output-functions)
           (setq job queued
                 ;; No id prints as this: ids are numbers or quoted strings.
                 key (if (or (stringp id) (numberp id))
                         (sly-agent-q--mcp-id-key id)
                       (format "batch %d" queued)))
           (puthash key job jobs)))
      (error
       (when key (remhash key jobs))
       ;; Still the one answer the request is owed (text Emacs cannot hand
       ;; over, such as invalid UTF-8, is a parse error).
       (let ((id (ignore-errors (gethash "id" (json-parse-string line)))))
         (sly-agent-q--mcp-send
          client
          (if id
              (sly-agent-q--mcp-error id -32603 (concat "Internal error: " (error-message-string err)))
            (sly-agent-q--mcp-error :null -32700 (concat "Parse error: " (error-message-string err))))))))))

(provide 'sly-agent-q-mcp)

;;; sly-agent-q-mcp.el ends here
