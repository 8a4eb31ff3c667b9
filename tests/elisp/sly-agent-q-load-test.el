;;; sly-agent-q-load-test.el --- Loading the module, and shutting down -*- lexical-binding: t; -*-

;;; Commentary:

;; Module loading errors (missing, not a module, stale) and the shutdown on
;; kill-emacs, mostly in fresh `emacs -Q --batch' subprocesses.

;;; Code:

(require 'sly-agent-q-test-helpers)

(ert-deftest sly-agent-q-load/module-version-matches ()
  "The loaded module reports the interface version the Elisp expects."
  (should (featurep 'sly-agent-q-module))
  (should (stringp sly-agent-q--module-version))
  (should (equal (sly-agent-q--module-version) sly-agent-q--module-version)))

(ert-deftest sly-agent-q-load/default-module-path ()
  "Without sly-agent-q-module-file the module is build/sly-agent-q-module.so of the checkout."
  (let ((sly-agent-q-module-file nil))
    (should (equal (file-truename (sly-agent-q--module-path))
                   (file-truename (expand-file-name "build/sly-agent-q-module.so" agentq-test-root))))))

(ert-deftest sly-agent-q-load/stale-module-is-refused ()
  "A module whose version differs from the Elisp's is refused with a user-error that says `make'."
  (let ((err (let ((sly-agent-q--module-version "sly-agent-q-module 0.0.0 abi 0"))
               (should-error (sly-agent-q--load-module) :type 'user-error))))
    (should (string-match-p "stale" (cadr err)))
    (should (string-match-p (regexp-quote (sly-agent-q--module-version)) (cadr err)))
    (should (string-match-p "make" (cadr err))))
  ;; With the right version it loads (again) without complaint.
  (sly-agent-q--load-module)
  (agentq-test-should-be-alive))

(ert-deftest sly-agent-q-load/missing-module-says-make ()
  "A module file that does not exist: the first call fails with a message mentioning make."
  (pcase-let ((`(,code ,_stdout ,stderr ,_seconds)
               (agentq-test-run-emacs
                '((setq sly-agent-q-module-file "/nonexistent/dir/sly-agent-q-module.so")
                  (require 'sly-agent-q)
                  (sly-agent-q-runtime-status)
                  (princ "LOADED")))))
    (should (integerp code))
    (should (/= code 0))
    (should (string-match-p "/nonexistent/dir/sly-agent-q-module.so" stderr))
    (should (string-match-p "not found" stderr))
    (should (string-match-p "make" stderr))))

(ert-deftest sly-agent-q-load/missing-module-is-a-user-error ()
  "The missing-module error is a user-error (caught as such in a subprocess)."
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((setq sly-agent-q-module-file "/nonexistent/sly-agent-q-module.so")
                  (require 'sly-agent-q)
                  (princ (condition-case err (progn (sly-agent-q-runtime-status) "LOADED")
                           (user-error (concat "USER-ERROR: " (error-message-string err)))
                           (error (concat "OTHER-ERROR: " (error-message-string err)))))))))
    (should (equal code 0))
    (should (string-prefix-p "USER-ERROR: " stdout))
    (should (string-match-p "make" stdout))))

(ert-deftest sly-agent-q-load/not-a-module-says-make ()
  "A file that is not a loadable module gives a user-error that says `make', not a crash."
  (let ((bogus (make-temp-file "agentq-bogus-" nil ".so" "this is not an ELF shared object\n")))
    (unwind-protect
        (pcase-let ((`(,code ,_stdout ,stderr ,_seconds)
                     (agentq-test-run-emacs
                      `((setq sly-agent-q-module-file ,bogus)
                        (require 'sly-agent-q)
                        (sly-agent-q-runtime-status)))))
          (should (integerp code))
          (should (/= code 0))
          (should (string-match-p "cannot load" stderr))
          (should (string-match-p "make" stderr)))
      (delete-file bogus))))

(defun agentq-test--run-with-placed-module (place forms)
  "Run FORMS in a fresh Emacs loading the build's module from a temporary directory.
PLACE, `copy-file' or `make-symbolic-link', puts it there (without
sly-agent-q-core.so).  Returns what `agentq-test-run-emacs' returns."
  (let* ((dir (make-temp-file "agentq-placed-" t))
         (module (expand-file-name "sly-agent-q-module.so" dir)))
    (unwind-protect
        (progn
          (funcall place (expand-file-name "build/sly-agent-q-module.so" agentq-test-root) module)
          (agentq-test-run-emacs (cons `(setq sly-agent-q-module-file ,module) forms)))
      (delete-directory dir t))))

(ert-deftest sly-agent-q-load/loader-without-core-says-make ()
  "The loader alone, without sly-agent-q-core.so beside it: a user-error naming the missing file."
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test--run-with-placed-module
                #'copy-file
                '((require 'sly-agent-q)
                  (princ (condition-case err (progn (sly-agent-q-runtime-status) "LOADED")
                           (user-error (concat "USER-ERROR: " (error-message-string err)))
                           (error (concat "OTHER-ERROR: " (error-message-string err)))))))))
    (should (equal code 0))
    (should (string-prefix-p "USER-ERROR: " stdout))
    (should (string-match-p "sly-agent-q-core\\.so" stdout))
    (should (string-match-p "make" stdout))))

(ert-deftest sly-agent-q-load/module-through-a-symbolic-link ()
  "A symbolic link to the module elsewhere still finds sly-agent-q-core.so of the build."
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test--run-with-placed-module
                #'make-symbolic-link
                '((require 'sly-agent-q)
                  (princ (plist-get (sly-agent-q--evaluate "(+ 1 2)") :content))))))
    (should (equal code 0))
    (should (equal stdout "=> 3"))))

(ert-deftest sly-agent-q-load/require-has-no-side-effects ()
  "`(require \='sly-agent-q)' in a fresh Emacs defines and starts nothing:
no timer, no hook on `lisp-mode-hook' (nor `after-change-major-mode-hook',
`kill-emacs-hook'), no module loaded, no process, no MCP server.  The
first call then loads the module."
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((let ((timers (append timer-list timer-idle-list))
                        (hooks (list (default-value 'lisp-mode-hook)
                                     (default-value 'after-change-major-mode-hook)
                                     (default-value 'kill-emacs-hook)))
                        (processes (process-list)))
                    (require 'sly-agent-q)
                    (prin1 (list :timers (cl-set-difference (append timer-list timer-idle-list) timers)
                                 :hooks (list (not (equal hooks
                                                          (list (default-value 'lisp-mode-hook)
                                                                (default-value 'after-change-major-mode-hook)
                                                                (default-value 'kill-emacs-hook))))
                                              (default-value 'lisp-mode-hook))
                                 :module (featurep 'sly-agent-q-module)
                                 :processes (cl-set-difference (process-list) processes)
                                 :lisp-mode (with-temp-buffer (lisp-mode) sly-agent-q-lisp-mode)))
                    (princ " ")
                    (sly-agent-q-runtime-status)
                    (prin1 (list (featurep 'sly-agent-q-module)
                                 (and (memq 'sly-agent-q--module-shutdown kill-emacs-hook) t))))))))
    (should (equal code 0))
    (should (equal stdout
                   "(:timers nil :hooks (nil nil) :module nil :processes nil :lisp-mode nil) (t t)"))))

(ert-deftest sly-agent-q-load/notes-timer-runs-while-lisp-works ()
  "A call into Lisp starts the timer that logs the runtime's notes; once
Lisp is idle (no job, nothing waiting for the background compiler), two
collections in a row stop it."
  (agentq-test-eval-ok "(defun agentq-notes-timer-probe (x) (1+ x))")
  (should (timerp sly-agent-q--notes-timer))
  (should (memq sly-agent-q--notes-timer timer-list))
  (let ((deadline (+ (float-time) 60)))
    (while (and sly-agent-q--notes-timer (< (float-time) deadline))
      (sly-agent-q--collect-notes)
      (when sly-agent-q--notes-timer (accept-process-output nil 0.2))))
  (should-not sly-agent-q--notes-timer)
  (should-not (cl-find #'sly-agent-q--collect-notes timer-list :key #'timer--function))
  ;; The next call starts it again.
  (agentq-test-eval-ok "(+ 1 2)")
  (should (timerp sly-agent-q--notes-timer)))

(ert-deftest sly-agent-q-load/generated-autoloads ()
  "`make build' writes elisp/sly-agent-q-autoloads.el from the ;;;###autoload
cookies: loaded alone, it makes the commands autoloads and loads nothing
of sly-agent-q itself."
  (skip-unless (file-exists-p (expand-file-name "elisp/sly-agent-q-autoloads.el" agentq-test-root)))
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q-autoloads)
                  (prin1 (list (mapcar (lambda (command) (autoloadp (symbol-function command)))
                                         '(sly-agent-q-mode sly-agent-q-chat sly-agent-q-send
                                           sly-agent-q-show-log sly-agent-q-show-tools
                                           sly-agent-q-select-backend sly-agent-q-welcome
                                           sly-agent-q-load-user-init sly-agent-q-repl
                                           sly-agent-q-evaluate sly-agent-q-mcp-server-start
                                           global-sly-agent-q-lisp-mode))
                               (featurep 'sly-agent-q-runtime)))))))
    (should (equal code 0))
    (should (equal stdout "((t t t t t t t t t t t t) nil)"))))

(ert-deftest sly-agent-q-load/shutdown-hook-installed ()
  (should (memq 'sly-agent-q--module-shutdown kill-emacs-hook)))

(ert-deftest sly-agent-q-load/kill-emacs-after-use-exits-cleanly ()
  "kill-emacs after using the runtime exits with code 0 within 5 s."
  (pcase-let ((`(,code ,stdout ,stderr ,seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (princ (plist-get (sly-agent-q--evaluate "(+ 1 2)") :content))
                  (terpri)
                  (kill-emacs 0))
                :timeout 10)))
    (should (equal code 0))
    (should (equal stdout "=> 3\n"))
    (should (< seconds 5))
    (should-not (string-match-p "[Ff]atal\\|[Aa]bort\\|[Ss]egmentation" stderr))))

(ert-deftest sly-agent-q-load/kill-emacs-keeps-exit-code ()
  "The shutdown hook does not change the exit code."
  (pcase-let ((`(,code ,_stdout ,_stderr ,seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (sly-agent-q--evaluate "(defun f () 1)")
                  (kill-emacs 7))
                :timeout 10)))
    (should (equal code 7))
    (should (< seconds 5))))

(ert-deftest sly-agent-q-load/kill-emacs-without-booting ()
  "Exiting before the runtime ever booted is clean too."
  (pcase-let ((`(,code ,_stdout ,_stderr ,seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (unless (null (plist-get (sly-agent-q-runtime-status) :booted)) (kill-emacs 3))
                  (kill-emacs 0))
                :timeout 10)))
    (should (equal code 0))
    (should (< seconds 5))))

(ert-deftest sly-agent-q-load/kill-emacs-with-busy-lisp-threads ()
  "Exiting while Lisp threads spin (started by evaluated code) still ends within 5 s."
  (pcase-let ((`(,code ,stdout ,_stderr ,seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (princ (plist-get (sly-agent-q--evaluate
                                     "(dotimes (i 2) (mp:process-run-function \"spinner\" (lambda () (loop)))) :spinning")
                                    :content))
                  (kill-emacs 0))
                :timeout 15)))
    (should (equal stdout "=> :SPINNING"))
    (should (equal code 0))
    (should (< seconds 5))))

(ert-deftest sly-agent-q-load/runtime-boots-lazily ()
  "Requiring the package does not boot ECL; the first evaluation does."
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (prin1 (plist-get (sly-agent-q-runtime-status) :booted))
                  (princ " ")
                  (princ (plist-get (sly-agent-q--evaluate "(+ 1 2)") :content))
                  (princ " ")
                  (prin1 (plist-get (sly-agent-q-runtime-status) :alive))))))
    (should (equal code 0))
    (should (equal stdout "nil => 3 t"))))

(ert-deftest sly-agent-q-load/use-after-shutdown-is-an-error-not-a-crash ()
  "After the runtime was shut down, evaluating gives an error (result or signal), and Emacs lives."
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (sly-agent-q--evaluate "(+ 1 2)")
                  (sly-agent-q--module-shutdown)
                  (princ (condition-case err
                             (let ((result (sly-agent-q--evaluate "(+ 1 2)")))
                               (if (plist-get result :success) "STILL-RAN" (concat "RESULT: " (plist-get result :error))))
                           (error (concat "SIGNAL: " (error-message-string err)))))
                  (princ " ALIVE")
                  (kill-emacs 0))
                :timeout 15)))
    (should (equal code 0))
    (should (string-match-p "\\`\\(RESULT\\|SIGNAL\\): .*shut down.* ALIVE\\'" stdout))))

(ert-deftest sly-agent-q-load/make-run-builds-only-what-running-needs ()
  "`make run' builds the module, the MCP server and gcc's keeper, not every
test and benchmark (11 min 39 s on a fresh 2-CPU machine before Emacs
appeared).  Read from `make -n': nothing is built."
  (skip-unless (executable-find "make"))
  (let* ((default-directory agentq-test-root)
         (commands (with-temp-buffer
                     (call-process "make" nil t nil "-n" "run" "BUILD_DIR=agentq-no-such-build")
                     (split-string (buffer-string) "\n" t)))
         (builds (seq-filter (lambda (line) (string-match-p "\\`cmake --build " line)) commands)))
    (should (equal (length builds) 1))
    (should (string-match-p "--target sly-agent-q-module sly-agent-q-mcp sly-agent-q-run-compiler\\'"
                            (car builds)))
    (should (seq-some (lambda (line) (string-match-p "sly-agent-q-welcome" line)) commands))))

(provide 'sly-agent-q-load-test)

;;; sly-agent-q-load-test.el ends here
