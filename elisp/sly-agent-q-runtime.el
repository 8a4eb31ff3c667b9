;;; sly-agent-q-runtime.el --- The module, its options and tool calls -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; Loads the compiled module (at its first call) and gives it the
;; options; runs tool calls synchronously (`sly-agent-q-execute-tool-calls',
;; `sly-agent-q-mcp-request'); serves what Lisp asks of Emacs.  Calls that
;; do not block Emacs are in sly-agent-q-async.el.

;;; Code:

(require 'cl-lib)

(defgroup sly-agent-q nil
  "AI coding agent tools for Common Lisp, running inside Emacs."
  :group 'tools
  :prefix "sly-agent-q-")

(define-error 'sly-agent-q-error "sly-agent-q error")

(define-error 'sly-agent-q-tool-failure "Tool failure")
;; Signalled by a tool's handler or check (see `sly-agent-q-tool-fail'):
;; the call fails with the message as its content, as written, where any
;; other error gives "Tool error: MESSAGE".

(defconst sly-agent-q-version
  (eval-when-compile
    (with-temp-buffer
      (insert-file-contents
       (expand-file-name "sly-agent-q.el"
                         (file-name-directory (or load-file-name byte-compile-current-file buffer-file-name))))
      (re-search-forward "^;; Version: *\\([0-9.]+\\)")
      (match-string 1)))
  "The version of sly-agent-q: the Version header of sly-agent-q.el.")

(defconst sly-agent-q--module-version (concat "sly-agent-q-module " sly-agent-q-version " abi 16")
  "The module interface this Elisp expects (see module/emacs/module.cpp).")

(defconst sly-agent-q--directory
  (file-name-directory (or load-file-name buffer-file-name default-directory))
  "Directory of sly-agent-q.el.")

;;;; Options the module keeps

(eval-and-compile
  (defconst sly-agent-q--module-options
    '((sly-agent-q-eval-timeout . "eval-timeout")
      (sly-agent-q-output-limit . "output-limit")
      (sly-agent-q-heap-limit . "heap-limit")
      (sly-agent-q-native-tiering . "native-tiering")
      (sly-agent-q-ask-before-agent-code . "ask-before-agent-code"))
    "The options the module keeps, each with the module's name for it.
The one list of them: adding an option here is all the Elisp side needs."))

;; The module keeps the values it last gave the runtime and compares: each
;; call brings the values it runs with, so `setq' and buffer-local values
;; count, and comparing costs the same whether this file is byte-compiled
;; or not (module/emacs/given_options.hpp).

(declare-function sly-agent-q--module-configure "sly-agent-q-module" (key value))
(declare-function sly-agent-q--module-sync-options "sly-agent-q-module" (&rest values))
(declare-function sly-agent-q--module-option-keys "sly-agent-q-module" ())
(defvar sly-agent-q-eval-timeout)
(defvar sly-agent-q-output-limit)
(defvar sly-agent-q-heap-limit)
(defvar sly-agent-q-native-tiering)
(defvar sly-agent-q-ask-before-agent-code)

(defmacro sly-agent-q--sync-options ()
  "Give the module the options set since the last call, with `setq' too.
Expanded from `sly-agent-q--module-options' into one module call with
their values."
  `(sly-agent-q--module-sync-options ,@(mapcar #'car sly-agent-q--module-options)))

(defun sly-agent-q--give-options ()
  "Give the module the options whose values it does not have yet."
  (apply #'sly-agent-q--module-sync-options
         (mapcar (lambda (option) (and (boundp (car option)) (symbol-value (car option))))
                 sly-agent-q--module-options)))

(defun sly-agent-q--set-option (symbol value)
  "Set SYMBOL's default VALUE and give it to the module, if loaded."
  (set-default symbol value)
  (when (featurep 'sly-agent-q-module)
    (sly-agent-q--give-options)))

(defcustom sly-agent-q-module-file nil
  "The compiled module, sly-agent-q-module.so.
nil means build/sly-agent-q-module.so next to the elisp/ directory, where
`make' puts it.  The module loads sly-agent-q-core.so from its own
directory, so keep the two files together."
  :type '(choice (const :tag "Found in build/" nil) file))

(defcustom sly-agent-q-eval-timeout 30
  "Seconds after which an evaluation is interrupted; nil or 0 for none.
This is a ceiling: a call's own `timeout' argument (from a model or an
MCP client, say) may only lower it; a larger one, or 0 or less, means
this value.  Like the other
options, it may be set with `setq' (or `setq-local' in a buffer whose
calls should differ) as well as with customize: calls use the value it
has when they are made."
  :type '(choice (number :tag "Seconds") (const :tag "No timeout" nil))
  :set #'sly-agent-q--set-option)

(defcustom sly-agent-q-heap-limit (* 1024 1024 1024)
  "Upper bound of the Lisp heap in bytes; nil for ECL's default.
Runaway allocation in evaluated code stops at this limit with a
STORAGE-CONDITION error instead of exhausting Emacs's memory."
  :type '(choice (integer :tag "Bytes") (const :tag "ECL's default" nil))
  :set #'sly-agent-q--set-option)

(defcustom sly-agent-q-output-limit 1000000
  "Characters of each output section an evaluation may return.
Longer output is cut with a visible \"output truncated\" marker."
  :type 'integer
  :set #'sly-agent-q--set-option)

(defcustom sly-agent-q-native-tiering t
  "Whether the session's functions are compiled natively in the background.
A DEFUN or DEFMETHOD evaluated at top level (evaluate_lisp, eval_form,
the REPL, the evaluate commands), also inside a top-level PROGN or
EVAL-WHEN, runs at once as ECL bytecodes; with this on, a background
Lisp thread then compiles it with ECL's C compiler (gcc) and swaps the
native function in, unless it was redefined meanwhile.
Nothing waits for it.  Without a C compiler on PATH it is off whatever
this says.  describe_symbol says how a function runs."
  :type 'boolean
  :set #'sly-agent-q--set-option)

(defcustom sly-agent-q-wake-ahead-window 0.05
  "Seconds the Lisp worker keeps ready once a model's tool call starts arriving.
While a model's reply streams in a tool call, the worker that will run it
is woken (it sleeps once it has had nothing to do for 2 ms) and runs a
throwaway evaluation, so that the call finds it awake with its code in
the CPU's caches, and then polls for the call for this long, extended by
each piece of the call that arrives; it yields to anything else that wants
its CPU.  nil turns this off: the call then wakes the worker itself.
See `sly-agent-q-runtime-wake-ahead'."
  :type '(choice (number :tag "Seconds") (const :tag "Off" nil)))

(declare-function sly-agent-q--module-wake-ahead "sly-agent-q-module" (window-ms warm))

(defun sly-agent-q-runtime-wake-ahead ()
  "Get the Lisp worker ready for a tool call on its way.
For what sees a call coming before it is made, such as a model's reply
streaming a tool call: see `sly-agent-q-wake-ahead-window'.  Cheap, and
never boots Lisp or waits for it: nothing happens unless the runtime is
running and idle.  Returns non-nil when the worker was told."
  (and sly-agent-q-wake-ahead-window
       (featurep 'sly-agent-q-module)
       (sly-agent-q--module-wake-ahead (round (* 1000 sly-agent-q-wake-ahead-window)) t)))

(defcustom sly-agent-q-ask-before-agent-code nil
  "Whether every evaluation an agent asks for waits for your approval.
An agent's code (the chat's model, an MCP client, the Lisp API) is read
before it runs, and asks only when it would touch the world (files,
processes, threads, Emacs) or cannot be read ahead.  Non-nil: it asks
before every evaluate_lisp, eval_form and compile_form of an agent's,
whatever the code does.  Your own evaluations never ask."
  :type 'boolean
  :set #'sly-agent-q--set-option)

(declare-function sly-agent-q-approve "sly-agent-q-approval" (tool-name args))

(defcustom sly-agent-q-approval-function #'sly-agent-q-approve
  "Function deciding whether a dangerous tool may run.
Called as (FUNCTION TOOL-NAME ARGS) with ARGS a hash table with string
keys; returns `:approved', `:denied', (:denied REASON) — the model is
told \"Denied by user: REASON\" — or (:modified NEW-ARGS).  nil means
dangerous tools are always denied."
  :type '(choice (const :tag "Deny every dangerous tool" nil) function))

(defvar sly-agent-q-tool-execution-functions nil
  "Abnormal hook run around every tool call.
Each function is called with (PHASE TOOL-NAME ARGS RESULT): PHASE is
`:before', `:after' or `:error', ARGS a hash table and RESULT the result
plist (nil for `:before').  An error in a hook is ignored.")

(defvar sly-agent-q-wait-functions nil
  "Abnormal hook run about every 0.1 s while Emacs waits for Lisp.
Each function gets the seconds waited so far.")

(defcustom sly-agent-q-progress-delay 1.0
  "Seconds of waiting for Lisp after which progress is shown."
  :type 'number)

(defcustom sly-agent-q-system-directories nil
  "Directories where the load_system tool looks for your ASDF systems.
Each directory is searched with all its subdirectories (ASDF's
`(:tree DIR)'), before ASDF's standard source registry, which has
Debian's cl-* packages (/usr/share/common-lisp/source/) and
~/common-lisp/.  The systems found here are yours: the packages they
make are session definitions, which list_definitions shows and
reset_session removes; systems from the standard registry stay as part
of the Lisp image.  The value is read when a load_system call runs, so
a `let' around a synchronous call counts (an asynchronous call sees the
value in force when it runs)."
  :type '(repeat directory)
  :group 'sly-agent-q)

(defun sly-agent-q--system-directories ()
  "`sly-agent-q-system-directories' as absolute directory names.
Called from Lisp by load_system; entries that are not strings are left out."
  (mapcar (lambda (directory)
            (file-name-as-directory (expand-file-name (substring-no-properties directory))))
          (cl-remove-if-not #'stringp sly-agent-q-system-directories)))

(declare-function sly-agent-q--module-execute "sly-agent-q-module" (calls approval hooks))
(declare-function sly-agent-q--module-run-tool-calls "sly-agent-q-module"
                  (calls approval hooks origin ui-origin progress-detail watched &rest options))
(declare-function sly-agent-q--module-mcp-request "sly-agent-q-module" (json approval hooks))
(declare-function sly-agent-q--module-status "sly-agent-q-module" ())
(declare-function sly-agent-q--module-shutdown "sly-agent-q-module" ())
(declare-function sly-agent-q--module-version "sly-agent-q-module" ())
(declare-function sly-agent-q--module-parse-json "sly-agent-q-module" (text))
(declare-function sly-agent-q--module-json-text "sly-agent-q-module" (value))

(defvar sly-agent-q--elisp-handlers (make-hash-table :test 'equal)
  "Handlers of tools defined with `sly-agent-q-define-tool', by name.")

(defvar sly-agent-q--elisp-checks (make-hash-table :test 'equal)
  "The :check functions of tools defined with `sly-agent-q-define-tool', by name.")

;;;; Loading the module

(defun sly-agent-q--module-path ()
  "Where the module is expected."
  (or sly-agent-q-module-file
      (expand-file-name "../build/sly-agent-q-module.so" sly-agent-q--directory)))

(defvar sly-agent-q--module-load-hook nil
  "Normal hook run once the module has loaded: what defines tools in it.
A file that defines tools when it loads adds its function here while the
module is not loaded yet (see sly-agent-q-buffer-tools.el).")

(defvar sly-agent-q--module-ready nil
  "Non-nil once the module has loaded and its version was found right.")

(defun sly-agent-q--load-module ()
  "Load the module once, with a clear error when it is missing or stale.
The first call of any of `sly-agent-q--module-functions' does.  Once
loaded, the module shuts the runtime down when Emacs exits, and
`sly-agent-q--module-load-hook' runs."
  (unless (featurep 'sly-agent-q-module)
    (let ((path (sly-agent-q--module-path))
          (top (expand-file-name ".." sly-agent-q--directory)))
      (unless module-file-suffix
        (user-error "This Emacs was built without dynamic module support, which sly-agent-q needs"))
      (unless (file-exists-p path)
        (user-error "The sly-agent-q module %s is not found; run `make' in %s" path top))
      (condition-case err
          (module-load path)
        (error (user-error "Run `make' in %s: Emacs cannot load the sly-agent-q module %s (%s)"
                           top path (error-message-string err))))))
  (let ((found (sly-agent-q--module-version)))
    (unless (equal found sly-agent-q--module-version)
      (user-error "The sly-agent-q module is stale (%s, expected %s); run `make' and restart Emacs"
                  found sly-agent-q--module-version)))
  ;; Calls give the options' values in this order.
  (cl-assert (equal (sly-agent-q--module-option-keys) (mapcar #'cdr sly-agent-q--module-options)))
  (sly-agent-q--give-options)
  (unless sly-agent-q--module-ready
    (setq sly-agent-q--module-ready t)
    (add-hook 'kill-emacs-hook #'sly-agent-q--module-shutdown)
    (run-hooks 'sly-agent-q--module-load-hook)))

;; Loading this file does not load the module: each of the module's
;; functions is first a stand-in that loads it and calls the module's own
;; definition, which `module-load' put in the stand-in's place.  The first
;; call, from whichever file, loads the module; the runtime itself boots
;; later still, at the first call that needs Lisp.

(defconst sly-agent-q--module-functions
  '(sly-agent-q--module-answer-later sly-agent-q--module-async-serve
    sly-agent-q--module-boot sly-agent-q--module-break sly-agent-q--module-cancel
    sly-agent-q--module-configure sly-agent-q--module-define-tool
    sly-agent-q--module-execute sly-agent-q--module-run-tool-calls
    sly-agent-q--module-sync-options sly-agent-q--module-option-keys
    sly-agent-q--module-json-text sly-agent-q--module-later-pending-p
    sly-agent-q--module-list-tools sly-agent-q--module-mcp-request
    sly-agent-q--module-mcp-line sly-agent-q--module-mcp-submit
    sly-agent-q--module-open-channel sly-agent-q--module-parse-json
    sly-agent-q--module-open-answer-channel sly-agent-q--module-close-answer-channel
    sly-agent-q--module-answer-counts sly-agent-q--module-inline-counts
    sly-agent-q--module-open-request-channel sly-agent-q--module-allow-direct-requests
    sly-agent-q--module-global-options sly-agent-q--module-direct-request-running-p
    sly-agent-q--module-release sly-agent-q--module-reset-stats
    sly-agent-q--module-restart-worker sly-agent-q--module-run-check
    sly-agent-q--module-run-handler sly-agent-q--module-shutdown
    sly-agent-q--module-start-boot
    sly-agent-q--module-stats sly-agent-q--module-status
    sly-agent-q--module-submit sly-agent-q--module-take-notes
    sly-agent-q--module-tools-schema sly-agent-q--module-version
    sly-agent-q--module-withdraw)
  "The functions the module defines (module/emacs/module.cpp).")

(defun sly-agent-q--module-stand-in (name)
  "Return a stand-in for the module's function NAME, to load the module first.
Then the stand-in calls NAME, which the module has defined meanwhile."
  (let (stand-in)
    (setq stand-in
          (lambda (&rest arguments)
            (sly-agent-q--load-module)
            (when (eq (symbol-function name) stand-in)
              (error "The sly-agent-q module defines no %s; run `make'" name))
            (apply name arguments)))))

(unless (featurep 'sly-agent-q-module)
  (dolist (name sly-agent-q--module-functions)
    (defalias name (sly-agent-q--module-stand-in name))))

;;;; Calls from the module

(defun sly-agent-q--failure-text (err)
  "The text of a failed call whose handler or check signalled ERR.
`sly-agent-q-tool-failure' gives its message as written; any other
error \"Tool error: MESSAGE\"."
  (if (and (eq (car err) 'sly-agent-q-tool-failure) (stringp (cadr err)))
      (cadr err)
    (concat "Tool error: " (error-message-string err))))

(defun sly-agent-q--call-elisp-handler (name args)
  "Run the Elisp handler of tool NAME with ARGS (a hash table).
Returns (t . CONTENT) or (nil . ERROR-MESSAGE)."
  (let ((handler (gethash name sly-agent-q--elisp-handlers)))
    (if (not handler)
        (cons nil (format "Tool error: no Elisp handler for %s" name))
      (condition-case err
          (let ((value (funcall handler args)))
            (cons t (if (stringp value) value (prin1-to-string value))))
        (error (cons nil (sly-agent-q--failure-text err)))))))

(defun sly-agent-q--call-elisp-check (name args)
  "Run the :check function of tool NAME with ARGS (a hash table).
Returns nil when the call may go on, or the text it fails with."
  (let ((check (gethash name sly-agent-q--elisp-checks)))
    (when check
      (condition-case err
          (progn (funcall check args) nil)
        (error (sly-agent-q--failure-text err))))))

(defun sly-agent-q--eval-for-lisp (text)
  "Evaluate TEXT, one Emacs Lisp form sent by `agent-q:eval-in-emacs'.
Returns (t . PRINTED-VALUE) or (nil . ERROR-MESSAGE), or (later . KEY)
when the form returned (:agent-q-answer-later . KEY): the person answers
later, with `sly-agent-q--module-answer-later' (the REPL's debugger).  A
quit is not caught: \\[keyboard-quit] here quits the evaluation that asked."
  (condition-case err
      (let* ((read (read-from-string text))
             (rest (substring text (cdr read))))
        (unless (string-match-p "\\`[ \t\n\r]*\\'" rest)
          (error "Only one form may be sent; text after it: %s" (string-trim rest)))
        ;; Printed for a Lisp reader: whatever the user's print settings.
        (let ((value (eval (car read) t))
              (print-escape-newlines nil) (print-escape-control-characters nil)
              (print-escape-nonascii nil) (print-escape-multibyte nil)
              (print-length nil) (print-level nil) (print-circle nil))
          (if (and (eq (car-safe value) :agent-q-answer-later) (natnump (cdr value)))
              (cons 'later (cdr value))
            (cons t (prin1-to-string value)))))
    (error (cons nil (error-message-string err)))))

;;;; What Lisp's `agent-q:execute-tool-calls' asks of Emacs

(defvar sly-agent-q-call-origin nil
  "Which door the running tool call came through.
The approval prompt shows it, and the audit log writes it on each line.
It is also policy: \"user\" marks the person's own calls (the REPL,
keys in Lisp buffers, \\[sly-agent-q-evaluate], \\[sly-agent-q-load-file]),
whose code runs as typed; every other call is an agent's, whose code
is read first and asks before it touches the world (files, processes,
threads, Emacs).  An integration binds it to \"user\" around calls it
knows are its user's.  nil, a call nobody marked, is an agent's.
\"Lisp\" for
`agent-q:execute-tool-calls', \"MCP\" for `sly-agent-q-mcp-request' (a
front end may bind a more precise text, such as \"MCP: claude-code\"),
\"chat\" for the chat's model, and `sly-agent-q-ui-origin' for the calls
the front end makes for itself (see there).  Bound around a submission,
it holds for the job's approval questions and hooks, whenever they run.")

(defconst sly-agent-q-ui-origin "UI"
  "The `sly-agent-q-call-origin' of the calls the front end makes for itself.
Eldoc's arglists, completion, \\[xref-find-definitions]'s look-up, the
REPL asking for its prompt's package or inspecting a value it printed,
\\[sly-agent-q-compile-and-load-file]'s indexing: none is a call of the
person's or a model's.  The audit log leaves them out, and their look-ups
of names that exist nowhere are not counted as failed calls (see
`sly-agent-q-tool-stats').")

(defmacro sly-agent-q--as-user (&rest body)
  "Run BODY, the person's own doing, with `sly-agent-q-call-origin' \"user\".
An origin already bound (the front end's own, an integration's) stays."
  (declare (indent 0) (debug t))
  `(let ((sly-agent-q-call-origin (or sly-agent-q-call-origin "user")))
     ,@body))

(defvar sly-agent-q--not-found-lookups (make-hash-table :test 'equal)
  "Tool name → how many of the front end's own look-ups found no such name.")

(defconst sly-agent-q--not-found-regexp
  (concat "\\`\\(?:Symbol .* not found in package "
          "\\|Package .* not found\\."
          "\\|[^ \n]+ is not a function or macro\\)")
  "What the introspection tools answer for a name that names nothing there.")

(defun sly-agent-q--count-not-found (phase name _args result)
  "Count a front end's look-up of tool NAME that found no such name.
A function of `sly-agent-q-tool-execution-functions' (PHASE and RESULT
as it gets them), added to the hooks of calls made with
`sly-agent-q-ui-origin'."
  (when (and (eq phase :error) result
             (string-match-p sly-agent-q--not-found-regexp (or (plist-get result :error) "")))
    (puthash name (1+ (gethash name sly-agent-q--not-found-lookups 0))
             sly-agent-q--not-found-lookups)))

(defun sly-agent-q--hooks-for-origin (hooks origin &optional later)
  "Return HOOKS, the hook functions for ORIGIN as a call's door.
For the front end's own calls (`sly-agent-q-ui-origin'),
`sly-agent-q--count-not-found' comes first.  LATER non-nil: the hooks
run later, for an asynchronous job, where ORIGIN is not bound any more;
each then binds `sly-agent-q-call-origin' to ORIGIN around itself."
  (let ((hooks (if later
                   (mapcar (lambda (hook)
                             (if (eq hook t)
                                 t
                               (lambda (&rest arguments)
                                 (let ((sly-agent-q-call-origin origin))
                                   (apply hook arguments)))))
                           hooks)
                 hooks)))
    (if (equal origin sly-agent-q-ui-origin)
        (cons #'sly-agent-q--count-not-found hooks)
      hooks)))

(defvar sly-agent-q-approval-pending)   ; sly-agent-q-approval.el

(defvar sly-agent-q--questions 0
  "How many approval questions are being asked now (nested ones count too).
Counted by the wrappers of `sly-agent-q-approval-function' for
asynchronous jobs, for Lisp and for MCP clients; `sly-agent-q-approve'
also sets `sly-agent-q-approval-pending'.")

(defmacro sly-agent-q--asking (&rest body)
  "Run BODY, which asks the approval function: a question is up meanwhile."
  (declare (indent 0) (debug t))
  `(progn
     (setq sly-agent-q--questions (1+ sly-agent-q--questions))
     (unwind-protect (progn ,@body)
       (setq sly-agent-q--questions (max 0 (1- sly-agent-q--questions))))))

(defun sly-agent-q--question-up-p ()
  "Non-nil while the person may be answering an approval question."
  (or sly-agent-q-approval-pending (> sly-agent-q--questions 0)))

(defun sly-agent-q--lisp-api-origin ()
  "The door of a call made through the Lisp API (`agent-q:execute-tool-calls').
\"Lisp\" when the code that made it is the person's (or nobody marked
it): such a call is an agent's, not theirs.  Code an agent sent keeps
its door (\"chat\", \"MCP\")."
  (if (member sly-agent-q-call-origin (list nil "user" sly-agent-q-ui-origin))
      "Lisp"
    sly-agent-q-call-origin))

(defun sly-agent-q--approve-for-lisp (name json)
  "Ask `sly-agent-q-approval-function' whether Lisp may run tool NAME.
JSON is the arguments as JSON text.  For `agent-q:execute-tool-calls'
when `agent-q:*approval-handler*' is nil.  Returns \"approved\",
\"denied\" or (\"modified\" . NEW-ARGUMENTS-JSON); an approval
function that fails denies."
  (let ((decision (and sly-agent-q-approval-function
                       (condition-case nil
                           (let ((sly-agent-q-call-origin (sly-agent-q--lisp-api-origin)))
                             (sly-agent-q--asking
                               (funcall sly-agent-q-approval-function name
                                        (sly-agent-q--module-parse-json json))))
                         (error :denied)))))
    (pcase decision
      (:approved "approved")
      (`(:modified ,arguments)
       (let ((text (ignore-errors (sly-agent-q--module-json-text arguments))))
         (if (stringp text) (cons "modified" text) "denied")))
      (`(:denied ,(and (pred stringp) reason)) (cons "denied" reason))
      (_ "denied"))))

(defun sly-agent-q--approve-agent-code (name json)
  "Ask whether an agent's call of tool NAME may run code that touches the world.
JSON is the call's arguments as JSON text, with \"touches\": what reading
the code found it would do.  Asked from Lisp (agent-code.lisp) for the
code of `evaluate_lisp', `eval_form' and `compile_form', before it runs
or while it runs.  Returns \"approved\", \"denied\", (\"denied\" . REASON)
or (\"modified\" . CODE), the code as the person edited it."
  (let ((answer (sly-agent-q--approve-for-lisp name json)))
    (if (and (consp answer) (equal (car answer) "modified"))
        (let* ((arguments (ignore-errors (sly-agent-q--module-parse-json (cdr answer))))
               (code (and (hash-table-p arguments)
                          (or (gethash "code" arguments) (gethash "form" arguments)))))
          (if (stringp code) (cons "modified" code) "denied"))
      answer)))

(defun sly-agent-q--run-hooks-for-lisp (phase name json result)
  "Run `sly-agent-q-tool-execution-functions' for a call Lisp made.
PHASE, tool NAME, the arguments as JSON text and the RESULT plist (nil
for `:before') are as for calls made from Emacs."
  (let ((sly-agent-q-call-origin (sly-agent-q--lisp-api-origin)))
    (dolist (function sly-agent-q-tool-execution-functions)
      (unless (eq function t)
        (condition-case nil
            (funcall function phase name (sly-agent-q--module-parse-json json) result)
          (error nil)))))
  nil)

(defvar sly-agent-q--progress nil
  "The progress message shown while waiting for Lisp, or nil.")

(defvar sly-agent-q--progress-detail nil
  "What the running call said it is doing (load_system: the file), or nil.")

(defun sly-agent-q--waiting (seconds)
  "Show progress after waiting SECONDS for Lisp.
The module invokes this every 0.1 s."
  (run-hook-with-args 'sly-agent-q-wait-functions seconds)
  (when (and (>= seconds sly-agent-q-progress-delay) (not noninteractive))
    (let ((message-log-max nil))
      (setq sly-agent-q--progress
            (message "sly-agent-q: %s… %.1fs (C-g to interrupt)"
                     (or sly-agent-q--progress-detail "Lisp is working") seconds)))))

(defun sly-agent-q--load-progress (text)
  "Show TEXT, the step a running load_system is at, in the echo area.
Called from Lisp through `agent-q:eval-in-emacs'; nil TEXT ends it.
The message is also what the wait's progress message shows from then on."
  (setq sly-agent-q--progress-detail text)
  (cond ((and text (not noninteractive))
         (let ((message-log-max nil))
           (setq sly-agent-q--progress
                 (message "sly-agent-q: %s… (C-g to interrupt)" text))))
        ((and (null text) sly-agent-q--progress)
         (sly-agent-q--clear-progress)))
  nil)

(defun sly-agent-q--clear-progress ()
  "Take the progress message away, unless another message replaced it."
  (when (equal (current-message) sly-agent-q--progress)
    (message nil))
  (setq sly-agent-q--progress nil))

(declare-function sly-agent-q--watch-notes "sly-agent-q-log" ())

(defvar sly-agent-q--lisp-watched t
  "Nil when the next call into Lisp must say so (`sly-agent-q--lisp-used').
sly-agent-q-log.el makes it nil while its timer, which collects the
runtime's notes while Lisp works, is not running: the module then calls
`sly-agent-q--lisp-used' at the next call, not at every call.")

(defsubst sly-agent-q--lisp-used ()
  "Note a call into Lisp: the log collects the runtime's notes while it works.
See `sly-agent-q--watch-notes' (sly-agent-q-log.el, when loaded)."
  (when (fboundp 'sly-agent-q--watch-notes)
    (sly-agent-q--watch-notes)))

(defmacro sly-agent-q--calling-module (&rest body)
  "Run BODY, a call into the module, with the options as they are now.
Any progress message the call showed goes when it ends."
  (declare (indent 0) (debug t))
  `(progn
     (sly-agent-q--sync-options)
     (sly-agent-q--lisp-used)
     (when sly-agent-q--progress-detail   ; left by an asynchronous load
       (setq sly-agent-q--progress-detail nil))
     (unwind-protect
         (progn ,@body)
       (when sly-agent-q--progress
         (sly-agent-q--clear-progress))
       (when sly-agent-q--progress-detail
         (setq sly-agent-q--progress-detail nil)))))

;;;; Public API

(defmacro sly-agent-q--run-in-module (tool-calls)
  "Run TOOL-CALLS in one module call, with the variables' values now.
All the work is the module's, so a call costs the same whether this
file is byte-compiled or not: the origin's hooks, the options that
changed, the progress message left behind."
  `(sly-agent-q--module-run-tool-calls
    ,tool-calls sly-agent-q-approval-function sly-agent-q-tool-execution-functions
    sly-agent-q-call-origin sly-agent-q-ui-origin sly-agent-q--progress-detail
    sly-agent-q--lisp-watched ,@(mapcar #'car sly-agent-q--module-options)))

(defun sly-agent-q-execute-tool-calls (tool-calls)
  "Run the tool requests in TOOL-CALLS and return their results, in order.
TOOL-CALLS is a list of plists (:id ID :name NAME :arguments ARGS); ARGS is a
plist with keyword keys, an alist, a hash table or a JSON object string.
Each result is a plist
  (:id ID :success t/nil :content STRING :error nil/STRING
   :metadata (:execution_time_ms N :safety_level LEVEL :approved t/nil)).
Dangerous tools ask `sly-agent-q-approval-function'; every call runs
`sly-agent-q-tool-execution-functions'.  \\[keyboard-quit] interrupts a
running call."
  (sly-agent-q--run-in-module tool-calls))

(defun sly-agent-q--module-call-ended ()
  "Take away the progress a call into the module left in the echo area.
The module calls this after a call that ran Elisp (the wait's message, a
load's steps), and before one when an asynchronous load left its step."
  (when sly-agent-q--progress
    (sly-agent-q--clear-progress))
  (setq sly-agent-q--progress-detail nil))

(defun sly-agent-q--syntax-problems (text)
  "Return check_syntax's problems in TEXT, Lisp source: \"line L, column C: …\".
Nil when it reads, or when the check could not be made."
  (let* ((result (car (let ((sly-agent-q-call-origin sly-agent-q-ui-origin)) ; the front end's own
                        (sly-agent-q-execute-tool-calls
                         (list (list :id "syntax" :name "check_syntax" :arguments (list :code text)))))))
         (content (or (plist-get result :content) "")))
    (and (plist-get result :success)
         (string-match-p "\\`[0-9]+ problems? (" content)
         (cl-remove-if-not (lambda (line) (string-prefix-p "line " line))
                           (split-string content "\n" t)))))

(defun sly-agent-q-mcp-request (json-string)
  "Handle one MCP JSON-RPC 2.0 message JSON-STRING.
Returns the response as a JSON string, or nil for a notification."
  (let ((sly-agent-q-call-origin (or sly-agent-q-call-origin "MCP")))
    (sly-agent-q--calling-module
      (sly-agent-q--module-mcp-request json-string sly-agent-q-approval-function
                                       sly-agent-q-tool-execution-functions))))

(defun sly-agent-q-runtime-status ()
  "A plist describing the embedded Lisp runtime."
  (sly-agent-q--module-status))

(provide 'sly-agent-q-runtime)

;;; sly-agent-q-runtime.el ends here
