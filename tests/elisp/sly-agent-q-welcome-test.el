;;; sly-agent-q-welcome-test.el --- The welcome buffer and the settings file -*- lexical-binding: t; -*-

;;; Commentary:

;; The welcome buffer `make run' shows (issue 36, "the first hour"): it
;; names each step of a first session, every key it names is bound to the
;; command it stands for, its backend settings are ones that exist, its
;; scratch button opens a Lisp file with SLY's keys, and `make run' loads
;; the user's settings file and lets customize save next to it.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defmacro agentq-welcome--with-buffer (&rest body)
  "Run BODY in the welcome buffer, `sly-agent-q-mode' as it was afterwards."
  (declare (indent 0))
  `(let ((was sly-agent-q-mode))
     (unwind-protect
         (progn (save-window-excursion (sly-agent-q-welcome))
                (with-current-buffer "*sly-agent-q*" ,@body))
       (sly-agent-q-mode (if was 1 -1)))))

(defun agentq-welcome--bindings ()
  "The keys the welcome buffer names: a list of (KEY MAP COMMAND)."
  (let ((position (point-min)) (found nil))
    (while (setq position (text-property-not-all position (point-max) 'sly-agent-q-welcome-binding nil))
      (let ((end (next-single-property-change position 'sly-agent-q-welcome-binding nil (point-max)))
            (binding (get-text-property position 'sly-agent-q-welcome-binding)))
        (push (list (buffer-substring-no-properties position end) (car binding) (cdr binding)) found)
        (setq position end)))
    (nreverse found)))

(defun agentq-welcome--button (label)
  "The position of the welcome buffer's button [LABEL] (the first one)."
  (save-excursion
    (goto-char (point-min))
    (should (search-forward (concat "[" label "]") nil t))
    (let ((button (button-at (match-beginning 0))))
      (should button)
      (button-start button))))

(ert-deftest sly-agent-q-welcome/names-each-step-of-a-first-session ()
  (agentq-welcome--with-buffer
    (let ((text (buffer-string)))
      (should (string-prefix-p "sly-agent-q — Common Lisp (ECL) inside this Emacs\n" text))
      (dolist (expected (list "First session" "[Open a scratch Lisp file]" ".lisp file"
                              ;; The evaluation keys, the REPL, the chat.
                              "C-x C-e" "C-c C-c" "C-c C-k" "The REPL" "C-c C-z" "[Open the REPL]"
                              "The chat" "C-c ? v" "[Open the chat]"
                              ;; A backend and its key.
                              "(setq sly-agent-q-backend \"openai\")" "(setq sly-agent-q-backend \"anthropic\")"
                              "(setq sly-agent-q-backend \"ollama\")" "~/.authinfo"
                              "machine api.openai.com login apikey password"
                              "machine api.anthropic.com login apikey password"
                              ;; Where settings are kept.
                              (abbreviate-file-name (sly-agent-q-user-init-file))))
        (should (string-search expected text)))
      ;; The steps in order: file, evaluate, REPL, chat, backend.
      (should (string-match-p (concat "^ 1\\. Open a Lisp file.*\n\\(?:.*\n\\)*? 2\\. Evaluate"
                                      "\\(?:.*\n\\)*? 3\\. The REPL\\(?:.*\n\\)*? 4\\. The chat"
                                      "\\(?:.*\n\\)*? 5\\. Set a backend")
                              text)))))

(ert-deftest sly-agent-q-welcome/every-key-it-names-is-bound-to-its-command ()
  (agentq-welcome--with-buffer
    (let ((bindings (agentq-welcome--bindings)))
      ;; Each key is bound, in the keymap it is said to work in, to the
      ;; command the text stands for.
      (dolist (binding bindings)
        (pcase-let ((`(,key ,map ,command) binding))
          (ert-info ((format "%s in %s" key map))
            (should (keymapp (symbol-value map)))
            (should (eq (lookup-key (symbol-value map) (kbd key)) command))
            (should (member (key-description (kbd key))
                            (mapcar #'key-description (where-is-internal command (symbol-value map))))))))
      ;; The keys of the first session's steps are among them.
      (dolist (expected '(("C-x C-e" sly-agent-q-lisp-mode-map sly-agent-q-eval-last-sexp)
                          ("C-c C-c" sly-agent-q-lisp-mode-map sly-agent-q-compile-defun)
                          ("C-c C-k" sly-agent-q-lisp-mode-map sly-agent-q-compile-and-load-file)
                          ("C-c C-z" sly-agent-q-lisp-mode-map sly-agent-q-switch-to-repl)
                          ("C-c ? v" sly-agent-q-mode-map sly-agent-q-show-conversation)
                          ("C-x C-f" global-map find-file)))
        (should (member expected bindings)))
      ;; No key in the text escapes that check: every C-… or M-… is one of
      ;; them, or M-x (a command's name follows).
      (save-excursion
        (goto-char (point-min))
        (while (re-search-forward "\\(?:^\\|[^[:alnum:]-]\\)\\([CMs]-\\)" nil t)
          (let ((start (match-beginning 1)))
            (ert-info ((format "the key at %S" (buffer-substring start (line-end-position))))
              (should (or (get-text-property start 'sly-agent-q-welcome-binding)
                          (looking-at-p "x ")))))))
      ;; The chat's key follows the prefix option.
      (should (equal sly-agent-q-keymap-prefix "C-c ?")))))

(ert-deftest sly-agent-q-welcome/its-backend-settings-work ()
  "The setq block the welcome offers to copy sets options that exist,
and each of its backends is then the one the chat uses."
  (agentq-welcome--with-buffer
    (let* ((start (save-excursion (goto-char (point-min))
                                  (search-forward ";; OpenAI") (line-beginning-position)))
           (end (save-excursion (goto-char start) (search-forward "The API key goes in")
                                (line-beginning-position)))
           (block (buffer-substring-no-properties start end))
           (forms (with-temp-buffer
                    (insert block)
                    (goto-char (point-min))
                    (let ((forms nil))
                      (condition-case nil (while t (push (read (current-buffer)) forms))
                        (end-of-file nil))
                      (nreverse forms))))
           (sly-agent-q-backend sly-agent-q-backend)
           (sly-agent-q-backends sly-agent-q-backends))
      (should (= (length forms) 4))
      (dolist (form forms)
        (let ((variable (pcase form
                          (`(setq ,variable ,_) variable)
                          (`(add-to-list (quote ,variable) ,_) variable))))
          (ert-info ((format "%S" form))
            (should (custom-variable-p variable))
            (eval form t)
            (when (eq (car form) 'setq)
              (should (equal (plist-get (sly-agent-q-provider-backend) :name) sly-agent-q-backend))))))
      (should (equal sly-agent-q-backend "ollama"))
      (should (equal (plist-get (sly-agent-q-provider-backend) :url) "http://127.0.0.1:11434/v1")))))

(ert-deftest sly-agent-q-welcome/scratch-button-opens-a-lisp-file-with-slys-keys ()
  (let* ((directory (make-temp-file "agentq-scratch" t))
         (sly-agent-q-scratch-file (expand-file-name "new/scratch.lisp" directory))
         (buffer nil))
    (unwind-protect
        (agentq-welcome--with-buffer
          (save-window-excursion
            (push-button (agentq-welcome--button "Open a scratch Lisp file"))
            (setq buffer (current-buffer))
            (should (equal buffer-file-name sly-agent-q-scratch-file))
            (should (file-exists-p sly-agent-q-scratch-file))
            (should (derived-mode-p 'lisp-mode))
            (should sly-agent-q-lisp-mode)
            ;; Point is after the defun the file says to evaluate first
            ;; with C-x C-e.
            (should (looking-back "(\\* x x))" (line-beginning-position)))
            (should (eq (key-binding (kbd "C-x C-e")) #'sly-agent-q-eval-last-sexp))
            ;; What it holds is Lisp that evaluates.
            (should (equal (agentq-test-eval-ok (buffer-string)) "=> 144"))))
      (when (buffer-live-p buffer) (kill-buffer buffer))
      (delete-directory directory t))))

(ert-deftest sly-agent-q-welcome/load-user-init-keeps-a-custom-file-already-set ()
  "Outside `make run' (an Emacs with its own init file), the user's
`custom-file' stays; the settings file is still loaded."
  (let* ((directory (make-temp-file "agentq-config" t))
         (process-environment (cons (concat "XDG_CONFIG_HOME=" directory) process-environment))
         (custom-file "/nonexistent/agentq-own-custom.el")
         (sly-agent-q--user-init-loaded nil))
    (unwind-protect
        (progn
          (should (equal (sly-agent-q-user-init-file)
                         (expand-file-name "sly-agent-q/init.el" directory)))
          (make-directory (expand-file-name "sly-agent-q" directory))
          (with-temp-file (sly-agent-q-user-init-file)
            (insert "(defvar agentq-welcome-test-loaded nil)\n(setq agentq-welcome-test-loaded 'yes)\n"))
          (sly-agent-q-load-user-init)
          (should (equal custom-file "/nonexistent/agentq-own-custom.el"))
          (should (eq (symbol-value 'agentq-welcome-test-loaded) 'yes)))
      (makunbound 'agentq-welcome-test-loaded)
      (delete-directory directory t))))

(ert-deftest sly-agent-q-welcome/readme-first-screen-has-the-same-first-session ()
  "README.md's top, before the manual, lists the steps the welcome gives,
with the same keys and settings."
  (let ((top (with-temp-buffer
               (insert-file-contents (expand-file-name "README.md" agentq-test-root))
               (goto-char (point-min))
               (should (search-forward "\n## First session\n" nil t))
               (let ((start (point)))
                 (should (search-forward "\n## 30-second tour" nil t))
                 (buffer-substring-no-properties start (point))))))
    (agentq-welcome--with-buffer
      (let ((first-session (buffer-substring-no-properties
                            (point-min) (save-excursion (goto-char (point-min))
                                                        (search-forward "\nSettings\n")))))
        ;; Every key the welcome's first session names, in the same order.
        (let ((position 0))
          (dolist (binding (seq-filter (lambda (binding)
                                         (string-search (car binding) first-session))
                                       (agentq-welcome--bindings)))
            (ert-info ((car binding))
              (should (setq position (string-search (concat "`" (car binding) "`") top position))))))
        (should (string-search "~/.config/sly-agent-q/init.el" top))
        (dolist (expected '("sly-agent-q-lisp-mode" "custom.el"
                            "(setq sly-agent-q-backend \"anthropic\")" "(setq sly-agent-q-backend \"ollama\")"
                            "~/.authinfo" "machine api.openai.com login apikey password sk-..."
                            ":key (:env \"OPENAI_API_KEY\")"))
          (should (string-search expected top))
          (should (string-search expected (buffer-string))))))))

(defun agentq-welcome--make-run-forms ()
  "The Emacs command line of `make run', as forms for `agentq-test-run-emacs'.
Read from `make -n run' (nothing is built); each -L, -l and -f becomes
the form doing the same.  Asserts it starts Emacs with -Q."
  (let* ((default-directory agentq-test-root)
         (line (with-temp-buffer
                 (should (eq 0 (call-process "make" nil t nil "-n" "run" "EMACS=agentq-emacs"
                                             "BUILD_DIR=agentq-no-such-build")))
                 (seq-find (lambda (line) (string-prefix-p "agentq-emacs -Q -nw " line))
                           (split-string (buffer-string) "\n" t))))
         (arguments (nthcdr 3 (split-string-and-unquote line)))
         (forms nil))
    (should line)
    (while arguments
      (pcase (pop arguments)
        ("-L" (push `(push ,(expand-file-name (pop arguments) agentq-test-root) load-path) forms))
        ("-l" (push `(load ,(pop arguments) nil t) forms))
        ("-f" (push `(funcall #',(intern (pop arguments))) forms))
        (other (ert-fail (format "make run passes %S, which this test does not know" other)))))
    (nreverse forms)))

(defun agentq-welcome--run-make-run (environment)
  "Run `make run''s Emacs (in batch) with ENVIRONMENT added; return what it reports.
It reports, read back as a plist, `custom-file', the backend and the
reply limit after the settings are loaded, whether the welcome names the
settings file, and saves `sly-agent-q-stream' with customize."
  (let* ((default-directory agentq-test-root)
         (process-environment (append environment process-environment))
         (result (agentq-test-run-emacs
                  (append (agentq-welcome--make-run-forms)
                          '((let ((welcome (with-current-buffer "*sly-agent-q*" (buffer-string))))
                              (customize-save-variable 'sly-agent-q-stream nil)
                              (prin1 (list :custom-file custom-file
                                           :init-file (sly-agent-q-user-init-file)
                                           :backend sly-agent-q-backend
                                           :max-tokens sly-agent-q-max-tokens
                                           :welcome-names-init
                                           (and (string-search (abbreviate-file-name (sly-agent-q-user-init-file))
                                                               welcome)
                                                (string-search (abbreviate-file-name custom-file) welcome)
                                                t)))
                              (kill-emacs 0))))
                  :timeout 90)))
    (ert-info ((format "stderr: %s" (nth 2 result)))
      (should (equal (car result) 0)))
    (car (read-from-string (nth 1 result)))))

(defun agentq-welcome--write-settings (directory)
  "Write an init.el and a custom.el into DIRECTORY/sly-agent-q/."
  (let ((settings (expand-file-name "sly-agent-q" directory)))
    (make-directory settings t)
    (with-temp-file (expand-file-name "init.el" settings)
      (insert "(add-to-list 'sly-agent-q-backends\n"
              "             '(:name \"agentq-test\" :type openai :url \"http://127.0.0.1:9/v1\" :model \"m\"))\n"
              "(setq sly-agent-q-backend \"agentq-test\")\n"))
    (with-temp-file (expand-file-name "custom.el" settings)
      (insert "(custom-set-variables '(sly-agent-q-max-tokens 1234))\n"))
    settings))

(ert-deftest sly-agent-q-welcome/make-run-loads-the-settings-file-and-customize-saves-there ()
  "`make run' (emacs -Q) loads $XDG_CONFIG_HOME/sly-agent-q/init.el and
custom.el, and customize saves to that custom.el."
  (skip-unless (executable-find "make"))
  (let* ((root (make-temp-file "agentq-make-run" t))
         (config (expand-file-name "config" root)))
    (unwind-protect
        (let* ((settings (agentq-welcome--write-settings config))
               (report (agentq-welcome--run-make-run
                        (list (concat "XDG_CONFIG_HOME=" config)
                              (concat "XDG_DATA_HOME=" (expand-file-name "data" root))
                              (concat "HOME=" (expand-file-name "home" root)))))
               (custom (expand-file-name "custom.el" settings)))
          (should (equal (plist-get report :custom-file) custom))
          (should (equal (plist-get report :init-file) (expand-file-name "init.el" settings)))
          (should (equal (plist-get report :backend) "agentq-test"))
          (should (equal (plist-get report :max-tokens) 1234))
          (should (eq (plist-get report :welcome-names-init) t))
          ;; Customize saved there, keeping what was saved before.
          (let ((saved (with-temp-buffer (insert-file-contents custom) (buffer-string))))
            (should (string-match-p "'(sly-agent-q-stream nil)" saved))
            (should (string-match-p "'(sly-agent-q-max-tokens 1234)" saved))))
      (delete-directory root t))))

(ert-deftest sly-agent-q-welcome/make-run-settings-default-to-dot-config ()
  "Without XDG_CONFIG_HOME, the settings live in ~/.config/sly-agent-q/."
  (skip-unless (executable-find "make"))
  (let* ((home (make-temp-file "agentq-home" t)))
    (unwind-protect
        (let* ((settings (agentq-welcome--write-settings (expand-file-name ".config" home)))
               (report (agentq-welcome--run-make-run
                        (list "XDG_CONFIG_HOME" ; unset
                              (concat "XDG_DATA_HOME=" (expand-file-name "data" home))
                              (concat "HOME=" home)))))
          (should (equal (plist-get report :custom-file) (expand-file-name "custom.el" settings)))
          (should (equal (plist-get report :backend) "agentq-test"))
          (should (equal (plist-get report :max-tokens) 1234))
          (should (eq (plist-get report :welcome-names-init) t)))
      (delete-directory home t))))

(provide 'sly-agent-q-welcome-test)

;;; sly-agent-q-welcome-test.el ends here
