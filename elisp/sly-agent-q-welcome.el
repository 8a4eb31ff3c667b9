;;; sly-agent-q-welcome.el --- The welcome buffer and the user's settings file -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; `sly-agent-q-welcome' (what `make run' shows) walks a newcomer through
;; a first session: a Lisp file, SLY's evaluation keys in it, the REPL,
;; the chat, and an LLM backend with its API key.  Every key it names is
;; looked up in the keymap that binds it, so the text says what is bound.
;;
;; `make run' starts `emacs -Q', which reads no init file and where
;; customize cannot save.  `sly-agent-q-load-user-init', which it calls,
;; loads $XDG_CONFIG_HOME/sly-agent-q/init.el (~/.config/sly-agent-q/ by
;; default) and points `custom-file' at custom.el next to it, so settings
;; outlive the session.
;;
;; This definition of `sly-agent-q-welcome' replaces the older one of
;; sly-agent-q-commands.el, which this file loads first.

;;; Code:

(require 'button)
(require 'sly-agent-q-commands)

(defvar sly-agent-q-lisp-mode-map)
(defvar sly-agent-q-mode-map)
(defvar sly-agent-q-backend)
(defvar sly-agent-q-backends)
(declare-function sly-agent-q-mode "sly-agent-q-mode" (&optional arg))
(declare-function sly-agent-q-lisp-mode "sly-agent-q-lisp-mode" (&optional arg))
(declare-function sly-agent-q-lisp-mode-maybe "sly-agent-q-lisp-mode" ())
(declare-function global-sly-agent-q-lisp-mode "sly-agent-q-lisp-mode" (&optional arg))
(declare-function sly-agent-q-repl "sly-agent-q-repl" ())
(declare-function sly-agent-q-chat "sly-agent-q-chat" ())
(declare-function sly-agent-q-select-backend "sly-agent-q-provider" (name))
(declare-function sly-agent-q-provider-backend "sly-agent-q-provider" (&optional name))
(declare-function sly-agent-q-provider--url-host "sly-agent-q-provider" (url))

(defcustom sly-agent-q-scratch-file nil
  "The Lisp file the welcome buffer's scratch button opens.
nil means scratch.lisp in $XDG_DATA_HOME/sly-agent-q/ (by default
~/.local/share/sly-agent-q/), or sly-agent-q-scratch.lisp in
variable `temporary-file-directory' when that file cannot be written."
  :type '(choice (const :tag "scratch.lisp in $XDG_DATA_HOME/sly-agent-q/" nil)
                 (file :tag "File"))
  :group 'sly-agent-q)

;;;; The user's settings

(defun sly-agent-q--xdg-directory (variable default)
  "Return $VARIABLE if it is an absolute directory name, else DEFAULT.
This is the rule of the XDG base directory specification."
  (let ((value (getenv variable)))
    (file-name-as-directory
     (expand-file-name (if (and value (file-name-absolute-p value)) value default)))))

(defun sly-agent-q-user-directory ()
  "The directory of the user's sly-agent-q settings.
$XDG_CONFIG_HOME/sly-agent-q/, or ~/.config/sly-agent-q/ when
XDG_CONFIG_HOME is unset or not absolute."
  (expand-file-name "sly-agent-q/" (sly-agent-q--xdg-directory "XDG_CONFIG_HOME" "~/.config")))

(defun sly-agent-q-user-init-file ()
  "The settings file of `make run'.
init.el in `sly-agent-q-user-directory'."
  (expand-file-name "init.el" (sly-agent-q-user-directory)))

(defun sly-agent-q-user-custom-file ()
  "The custom file under `make run'.
custom.el in `sly-agent-q-user-directory'."
  (expand-file-name "custom.el" (sly-agent-q-user-directory)))

(defvar sly-agent-q--user-init-loaded nil
  "Non-nil once `sly-agent-q-load-user-init' ran in this Emacs.")

;;;###autoload
(defun sly-agent-q-load-user-init ()
  "Load the user's sly-agent-q settings, for `emacs -Q' (`make run').
When `custom-file' is nil (as under -Q, where customize cannot save),
set it to `sly-agent-q-user-custom-file' and load that file if it
exists; then load `sly-agent-q-user-init-file' if it exists.  Both live
in `sly-agent-q-user-directory'.  Under -Q, `user-init-file' is nil,
and customize refuses to save while it is: it becomes that init file.
The chat's provider is loaded first, so the init file can change
`sly-agent-q-backends'."
  (interactive)
  (require 'sly-agent-q-provider)
  (unless custom-file
    (setq custom-file (sly-agent-q-user-custom-file))
    (unless user-init-file
      (setq user-init-file (sly-agent-q-user-init-file)))
    (when (file-exists-p custom-file)
      (load custom-file nil t)))
  (let ((init (sly-agent-q-user-init-file)))
    (when (file-exists-p init)
      (load init nil t)))
  (setq sly-agent-q--user-init-loaded t))

(defconst sly-agent-q--init-file-template
  ";;; init.el --- sly-agent-q's settings, loaded by `make run' -*- lexical-binding: t; -*-

;; `make run' starts `emacs -Q' and loads this file after sly-agent-q.
;; M-x customize saves to custom.el, next to this file.  The welcome
;; buffer (M-x sly-agent-q-welcome) shows backends to copy here.

"
  "What a new `sly-agent-q-user-init-file' starts with.")

(defun sly-agent-q-open-user-init-file ()
  "Open `sly-agent-q-user-init-file', starting it when it does not exist."
  (interactive)
  (let ((file (sly-agent-q-user-init-file)))
    (make-directory (file-name-directory file) t)
    (find-file file)
    (when (and (not (file-exists-p file)) (= (buffer-size) 0))
      (insert sly-agent-q--init-file-template))))

;;;; The scratch file

(defun sly-agent-q--scratch-file ()
  "The file `sly-agent-q-open-scratch-file' opens.
See `sly-agent-q-scratch-file'."
  (or sly-agent-q-scratch-file
      (expand-file-name "sly-agent-q/scratch.lisp"
                        (sly-agent-q--xdg-directory "XDG_DATA_HOME" "~/.local/share"))))

(defun sly-agent-q--scratch-text ()
  "The text of a new scratch file: a few forms to evaluate."
  (concat ";;;; A scratch file: evaluated by the ECL inside this Emacs.\n"
          ";;;; " (sly-agent-q--key-text 'sly-agent-q-eval-last-sexp 'sly-agent-q-lisp-mode-map)
          " after a form evaluates it, "
          (sly-agent-q--key-text 'sly-agent-q-compile-defun 'sly-agent-q-lisp-mode-map)
          " compiles the\n;;;; form around point, "
          (sly-agent-q--key-text 'sly-agent-q-compile-and-load-file 'sly-agent-q-lisp-mode-map)
          " compiles and loads the file, "
          (sly-agent-q--key-text 'sly-agent-q-switch-to-repl 'sly-agent-q-lisp-mode-map)
          " shows the REPL.\n\n"
          "(in-package :cl-user)\n\n"
          ";; 1. With point after the defun's last parenthesis, "
          (sly-agent-q--key-text 'sly-agent-q-eval-last-sexp 'sly-agent-q-lisp-mode-map)
          " defines it.\n"
          "(defun square (x)\n  (* x x))\n\n"
          ";; 2. Then after this form, "
          (sly-agent-q--key-text 'sly-agent-q-eval-last-sexp 'sly-agent-q-lisp-mode-map)
          " shows 144.\n"
          "(square 12)\n"))

(defun sly-agent-q-open-scratch-file ()
  "Open a scratch Lisp file in `lisp-mode' with `sly-agent-q-lisp-mode'.
The file, `sly-agent-q-scratch-file', is made with a few forms to try
when it does not exist.  Return its buffer."
  (interactive)
  (let ((file (sly-agent-q--scratch-file)))
    (unless (file-exists-p file)
      (condition-case nil
          (progn (make-directory (file-name-directory file) t)
                 (with-temp-file file (insert (sly-agent-q--scratch-text))))
        ;; A data directory that cannot be written: a temporary file.
        (file-error
         (setq file (expand-file-name "sly-agent-q-scratch.lisp" temporary-file-directory))
         (unless (file-exists-p file)
           (with-temp-file file (insert (sly-agent-q--scratch-text)))))))
    (find-file file)
    (unless (derived-mode-p 'lisp-mode) (lisp-mode))
    (unless (bound-and-true-p sly-agent-q-lisp-mode) (sly-agent-q-lisp-mode-maybe))
    (when (and (= (point) (point-min)) (search-forward "(* x x))" nil t))
      (message "Type %s to define square, then after (square 12)"
               (sly-agent-q--key-text 'sly-agent-q-eval-last-sexp 'sly-agent-q-lisp-mode-map)))
    (current-buffer)))

;;;; The welcome buffer

(defvar sly-agent-q-welcome-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'forward-button)
    (define-key map (kbd "<backtab>") #'backward-button)
    map)
  "Keymap of the welcome buffer: TAB and S-TAB move between its buttons.")

(define-derived-mode sly-agent-q-welcome-mode special-mode "AgentQ-Welcome"
  "The welcome buffer of sly-agent-q, `sly-agent-q-welcome'.
\\{sly-agent-q-welcome-mode-map}")

(defun sly-agent-q--key-text (command map)
  "The keys of COMMAND in the keymap MAP (a symbol), as text.
When MAP binds it to no key, `execute-extended-command' and COMMAND."
  (let ((keys (and (boundp map) (where-is-internal command (symbol-value map) t))))
    (if keys (key-description keys) (format "M-x %s" command))))

(defun sly-agent-q--insert-key (command map)
  "Insert the keys of COMMAND in MAP (a symbol), marked as a key.
The text property `sly-agent-q-welcome-binding' holds (MAP . COMMAND),
so what the welcome says can be checked against the keymaps."
  (let ((text (sly-agent-q--key-text command map)))
    (insert (if (string-prefix-p "M-x " text)
                text
              (propertize text 'face 'help-key-binding
                          'sly-agent-q-welcome-binding (cons map command))))))

(defun sly-agent-q--insert-button (label action help)
  "Insert a button [LABEL] calling ACTION (no argument), with tooltip HELP."
  (insert-text-button (concat "[" label "]")
                      'action (lambda (_button) (funcall action))
                      'follow-link t
                      'help-echo help))

(defun sly-agent-q--insert-rows (rows)
  "Insert ROWS, each (COMMAND MAP DESCRIPTION), as aligned lines of keys."
  (dolist (row rows)
    (insert "      ")
    (let ((start (point)))
      (sly-agent-q--insert-key (nth 0 row) (nth 1 row))
      (insert (make-string (max 1 (- 10 (- (point) start))) ?\s)))
    (insert (nth 2 row) "\n")))

(defun sly-agent-q--abbreviate (file)
  "FILE with ~ for the home directory."
  (abbreviate-file-name file))

(defconst sly-agent-q--backend-examples
  ";; OpenAI (the default); its key: ~/.authinfo, below
(setq sly-agent-q-backend \"openai\")

;; Anthropic
(setq sly-agent-q-backend \"anthropic\")

;; Ollama on this machine, no key (first: ollama pull qwen2.5-coder)
(add-to-list 'sly-agent-q-backends
             '(:name \"ollama\" :type openai :url \"http://127.0.0.1:11434/v1\"
               :model \"qwen2.5-coder\"))
(setq sly-agent-q-backend \"ollama\")
"
  "The backend settings the welcome buffer offers to copy.")

(defun sly-agent-q--insert-backend-status ()
  "Insert which backend the chat talks to now."
  (let ((backend (ignore-errors (sly-agent-q-provider-backend))))
    (if backend
        (insert (format "    The chat uses the backend %S now (%s at %s).\n"
                        sly-agent-q-backend (plist-get backend :model) (plist-get backend :url)))
      (insert (format "    No backend is named %S in `sly-agent-q-backends': see step 5.\n"
                      sly-agent-q-backend)))))

(defun sly-agent-q--insert-first-session ()
  "Insert what to do in a first session."
  (let ((init (sly-agent-q--abbreviate (sly-agent-q-user-init-file))))
    (insert "First session\n")
    (insert " 1. Open a Lisp file: ")
    (sly-agent-q--insert-button "Open a scratch Lisp file" #'sly-agent-q-open-scratch-file
                                "Open (or make) scratch.lisp, with SLY's keys on")
    (insert "\n    (" (sly-agent-q--abbreviate (sly-agent-q--scratch-file)) "), or ")
    (sly-agent-q--insert-key 'find-file 'global-map)
    (insert " any .lisp file.\n"
            "    Lisp files get SLY's keys (sly-agent-q-lisp-mode), on the ECL in this Emacs.\n")
    (insert " 2. Evaluate, in the Lisp file:\n")
    (sly-agent-q--insert-rows
     '((sly-agent-q-eval-last-sexp sly-agent-q-lisp-mode-map "the form before point")
       (sly-agent-q-compile-defun sly-agent-q-lisp-mode-map "compile the top-level form around point")
       (sly-agent-q-compile-and-load-file sly-agent-q-lisp-mode-map "compile and load the whole file")))
    (insert " 3. The REPL, on the same Lisp session: ")
    (sly-agent-q--insert-key 'sly-agent-q-switch-to-repl 'sly-agent-q-lisp-mode-map)
    (insert " in a Lisp file, or ")
    (sly-agent-q--insert-button "Open the REPL" #'sly-agent-q-repl "M-x sly-agent-q-repl")
    (insert "\n 4. The chat with the agent: ")
    (sly-agent-q--insert-key 'sly-agent-q-show-conversation 'sly-agent-q-mode-map)
    (insert ", or ")
    (sly-agent-q--insert-button "Open the chat" #'sly-agent-q-chat "M-x sly-agent-q-chat")
    (insert "\n")
    (sly-agent-q--insert-backend-status)
    (insert " 5. Set a backend for the chat: copy one of these into the settings file ")
    (sly-agent-q--insert-button "Open it" #'sly-agent-q-open-user-init-file
                                "Open sly-agent-q's settings file, loaded by make run")
    (insert "\n    " init ", read by the next make run, or now: ")
    (sly-agent-q--insert-button "Load it" #'sly-agent-q--load-user-init-file
                                "Load the settings file in this Emacs")
    (insert "\n\n")
    (insert (replace-regexp-in-string "^\\(.\\)" "    \\1" sly-agent-q--backend-examples))
    (insert "\n    The API key goes in ~/.authinfo ")
    (sly-agent-q--insert-button "Open it" (lambda () (find-file "~/.authinfo"))
                                "Open ~/.authinfo, where auth-source finds API keys")
    (insert ", a line for each server (chmod 600):\n")
    (let ((hosts '("api.openai.com" "api.anthropic.com"))
          (current (ignore-errors (sly-agent-q-provider--url-host
                                   (plist-get (sly-agent-q-provider-backend) :url)))))
      (when (and current (not (member current hosts)) (not (member current '("127.0.0.1" "localhost"))))
        (setq hosts (append hosts (list current))))
      (dolist (host hosts)
        (insert (format "      machine %s login apikey password %s\n" host
                        (if (equal host "api.anthropic.com") "sk-ant-..." "sk-...")))))
    (insert "    or in the backend's :key, e.g. :key (:env \"OPENAI_API_KEY\") in `sly-agent-q-backends'.\n"
            "    ")
    (sly-agent-q--insert-button "Choose a backend"
                                (lambda () (call-interactively #'sly-agent-q-select-backend))
                                "M-x sly-agent-q-select-backend: for this session")
    (insert " for this session only.\n\n")))

(defun sly-agent-q--load-user-init-file ()
  "Load `sly-agent-q-user-init-file' now and show the welcome again."
  (let ((file (sly-agent-q-user-init-file)))
    (if (not (file-exists-p file))
        (message "sly-agent-q: %s does not exist yet" (sly-agent-q--abbreviate file))
      (load file nil t)
      (sly-agent-q-welcome)
      (message "sly-agent-q: loaded %s" (sly-agent-q--abbreviate file)))))

(defun sly-agent-q--insert-settings ()
  "Insert where the settings are kept."
  (let ((init (sly-agent-q-user-init-file)))
    (insert "Settings\n"
            "  make run loads " (sly-agent-q--abbreviate init)
            (if (file-exists-p init) "" " (not made yet)") " ")
    (sly-agent-q--insert-button "Open it" #'sly-agent-q-open-user-init-file
                                "Open sly-agent-q's settings file, loaded by make run")
    (insert "\n")
    (insert (if custom-file
                (format "  M-x customize saves to %s (`custom-file').\n"
                        (sly-agent-q--abbreviate custom-file))
              (format "  M-x customize cannot save here (no `custom-file'); under make run it saves to\n  %s.\n"
                      (sly-agent-q--abbreviate (sly-agent-q-user-custom-file)))))
    (unless sly-agent-q--user-init-loaded
      (insert "  In your own Emacs, put settings in your init file after (require 'sly-agent-q).\n"))
    (insert "  Customize: M-x customize-group RET sly-agent-q RET\n\n")))

(defun sly-agent-q--insert-more ()
  "Insert the other things to try."
  (insert "More to try\n"
          "  M-x sly-agent-q-evaluate RET (+ 1 2) RET       evaluate in the embedded ECL\n"
          "  M-x sly-agent-q-evaluate RET (loop) RET        then ")
  (sly-agent-q--insert-key 'keyboard-quit 'global-map)
  (insert ": interrupted, Emacs lives\n"
          "  M-x sly-agent-q-evaluate RET (ext:quit) RET    intercepted: Lisp cannot exit Emacs\n"
          "  M-x sly-agent-q-describe-runtime               runtime state, tools, counters\n"
          "  ")
  (let ((start (point)))
    (sly-agent-q--insert-key 'sly-agent-q-show-tools 'sly-agent-q-mode-map)
    (insert " / ")
    (sly-agent-q--insert-key 'sly-agent-q-show-log 'sly-agent-q-mode-map)
    (insert " / ")
    (sly-agent-q--insert-key 'sly-agent-q-menu 'sly-agent-q-mode-map)
    (insert (make-string (max 1 (- 47 (- (point) start))) ?\s)))
  (insert "the tools, the audit log, every command\n  ")
  (sly-agent-q--insert-key 'forward-button 'sly-agent-q-welcome-mode-map)
  (insert " moves to the next button of this buffer.\n\n"
          "From Lisp code (Elisp):\n"
          "  (sly-agent-q-execute-tool-calls\n"
          "   '((:id \"c1\" :name \"evaluate_lisp\" :arguments (:code \"(+ 1 2)\"))))\n"))

;;;###autoload
(defun sly-agent-q-welcome ()
  "Show a first session with sly-agent-q in a buffer, with `sly-agent-q-mode' on.
It turns on `global-sly-agent-q-lisp-mode' too, for the Lisp file's keys.
A Lisp file and its keys, the REPL, the chat, a backend for it and where
the settings are kept (`sly-agent-q-load-user-init')."
  (interactive)
  (require 'sly-agent-q-mode)
  (sly-agent-q-mode 1)
  (global-sly-agent-q-lisp-mode 1)
  (require 'sly-agent-q-provider)
  (with-current-buffer (get-buffer-create "*sly-agent-q*")
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert "sly-agent-q — Common Lisp (ECL) inside this Emacs\n\n")
      (sly-agent-q--insert-first-session)
      (sly-agent-q--insert-settings)
      (sly-agent-q--insert-more)
      (sly-agent-q-welcome-mode)
      (goto-char (point-min)))
    (pop-to-buffer-same-window (current-buffer))))

(provide 'sly-agent-q-welcome)

;;; sly-agent-q-welcome.el ends here
