;;; sly-agent-q-notes-test.el --- Compiler notes as overlays; M-. for ECL's own -*- lexical-binding: t; -*-

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-lisp-mode)

(defun agentq-notes-wait-compiled (command &rest args)
  "Run COMMAND with ARGS and wait until its compilation has been shown."
  (let ((done nil))
    (cl-letf (((symbol-function 'sly-agent-q-lisp--show-compilation)
               (let ((original (symbol-function 'sly-agent-q-lisp--show-compilation)))
                 (lambda (&rest args) (apply original args) (setq done t)))))
      (save-window-excursion (apply command args))
      (let ((deadline (+ (float-time) 30)))
        (while (and (not done) (< (float-time) deadline)) (accept-process-output nil 0.02))))
    (should done)))

(defun agentq-notes-here ()
  "The notes of this buffer as (TEXT-UNDER-OVERLAY . MESSAGE), in order."
  (mapcar (lambda (overlay)
            (cons (buffer-substring-no-properties (overlay-start overlay) (overlay-end overlay))
                  (overlay-get overlay 'help-echo)))
          (sly-agent-q-notes--overlays)))

(defconst agentq-notes-file-text
  "(in-package :cl-user)

(defun agentq-notes-fine (a)
  (* a 2))

(defun agentq-notes-calls-nothing (x)
  (agentq-notes-undefined-fn x 1))

(defun agentq-notes-unused (y)
  (let ((agentq-unused-var 3))
    (agentq-notes-fine y)))
"
  "A file with one undefined function and one unused variable.")

(ert-deftest sly-agent-q-notes/compile-file-puts-exactly-two-notes ()
  (let* ((dir (make-temp-file "agentq-notes" t))
         (file (expand-file-name "notes.lisp" dir)))
    (unwind-protect
        (progn
          (with-temp-file file (insert agentq-notes-file-text))
          (with-current-buffer (find-file-noselect file)
            (should sly-agent-q-lisp-mode)
            (agentq-notes-wait-compiled #'sly-agent-q-compile-and-load-file file)
            (let ((notes (agentq-notes-here)))
              (should (= (length notes) 2))
              ;; The call of the undefined function, and the unused variable.
              (should (equal (car (nth 0 notes)) "(agentq-notes-undefined-fn x 1)"))
              (should (string-match-p "STYLE-WARNING: Undefined function \\(COMMON-LISP-USER::\\)?AGENTQ-NOTES-UNDEFINED-FN" (cdr (nth 0 notes))))
              (should (equal (car (nth 1 notes)) "agentq-unused-var"))
              (should (string-match-p "STYLE-WARNING: The variable AGENTQ-UNUSED-VAR is defined but never used"
                                      (cdr (nth 1 notes))))
              (should (memq (get-char-property (1+ (overlay-start (car (sly-agent-q-notes--overlays)))) 'face)
                            '(sly-agent-q-note-style-warning-face))))
            ;; The compilation buffer lists them with links to the lines.
            (with-current-buffer "*sly-agent-q compilation*"
              (should (derived-mode-p 'compilation-mode))
              (should (string-match-p (concat (regexp-quote file) ":7:3: warning: STYLE-WARNING: Undefined function")
                                      (buffer-string)))
              (should (string-match-p (concat (regexp-quote file) ":10:10: warning: STYLE-WARNING: The variable")
                                      (buffer-string))))
            ;; M-n and M-p go from note to note and say what they are.
            (goto-char (point-min))
            (let ((said nil))
              (cl-letf (((symbol-function 'message) (lambda (&rest args) (setq said (apply #'format args)))))
                (call-interactively (key-binding (kbd "M-n")))
                (should (looking-at "(agentq-notes-undefined-fn"))
                (should (string-match-p "Undefined function" said))
                (call-interactively (key-binding (kbd "M-n")))
                (should (looking-at "agentq-unused-var"))
                (should (string-match-p "never used" said))
                (call-interactively (key-binding (kbd "M-n")))
                (should (looking-at "agentq-unused-var"))
                (should (string-match-p "No more compiler notes" said))
                (call-interactively (key-binding (kbd "M-p")))
                (should (looking-at "(agentq-notes-undefined-fn"))))
            ;; Fixing the form and compiling it again (C-c C-c) clears its note.
            (goto-char (point-min))
            (search-forward "agentq-notes-undefined-fn")
            (replace-match "agentq-notes-fine")
            (search-forward "x 1)")
            (replace-match "x)")
            (agentq-notes-wait-compiled #'sly-agent-q-compile-defun)
            (should (equal (mapcar #'car (agentq-notes-here)) '("agentq-unused-var")))
            ;; The file's definitions are loaded and indexed for M-.
            (should (equal (agentq-test-content "(agentq-notes-fine 4)") "=> 8"))
            (set-buffer-modified-p nil)
            (kill-buffer)))
      (delete-directory dir t))))

(ert-deftest sly-agent-q-notes/compile-defun-notes-on-the-form ()
  (with-temp-buffer
    (insert ";; a header\n(defun agentq-notes-bad (x)\n  (let ((agentq-notes-unused 1))\n    (agentq-notes-no-such-function x)))\n")
    (lisp-mode)
    (goto-char (point-min))
    (search-forward "(let")
    (agentq-notes-wait-compiled #'sly-agent-q-compile-defun)
    (should (equal (mapcar #'car (agentq-notes-here))
                   '("agentq-notes-unused" "(agentq-notes-no-such-function x)")))))

(ert-deftest sly-agent-q-notes/wrong-argument-count-and-undefined-variable ()
  (with-temp-buffer
    (insert ";; a header\n\n(defun agentq-notes-argc (x)\n  (list x)\n  (car x 1))\n\n(defun agentq-notes-uv ()\n  (list agentq-notes-nowhere))\n")
    (lisp-mode)
    (goto-char (point-min))
    (search-forward "(list x)")
    (agentq-notes-wait-compiled #'sly-agent-q-compile-defun)
    (let ((notes (agentq-notes-here)))
      (should (equal (mapcar #'car notes) '("(car x 1)")))
      (should (string-match-p "\\`ERROR: Wrong number of arguments for function CAR" (cdar notes)))
      (should (eq (get-char-property (1+ (overlay-start (car (sly-agent-q-notes--overlays)))) 'face)
                  'sly-agent-q-note-warning-face)))
    (search-forward "agentq-notes-nowhere")
    (agentq-notes-wait-compiled #'sly-agent-q-compile-defun)
    ;; The other form's note stays; this one gets its own.
    (should (equal (mapcar #'car (agentq-notes-here)) '("(car x 1)" "agentq-notes-nowhere")))
    (should (string-match-p "STYLE-WARNING: Variable AGENTQ-NOTES-NOWHERE was undefined"
                            (cdr (nth 1 (agentq-notes-here)))))))

(ert-deftest sly-agent-q-notes/find-definition-of-ecls-own-function ()
  (with-temp-buffer
    (lisp-mode)
    (let ((err (should-error (xref-backend-definitions 'sly-agent-q "mapcar") :type 'user-error)))
      (should (string-match-p "mapcar is part of ECL itself (package COMMON-LISP): ECL records no source location"
                              (cadr err))))))

(ert-deftest sly-agent-q-notes/find-definition-does-not-wait-behind-an-evaluation ()
  (with-temp-buffer
    (lisp-mode)
    (let* ((results nil)
           (job (sly-agent-q-execute-tool-calls-async
                 (list (list :id "busy" :name "evaluate_lisp" :arguments (list :code "(sleep 60)")))
                 (lambda (r) (setq results r)))))
      (unwind-protect
          (let ((err (should-error (xref-backend-definitions 'sly-agent-q "agentq-notes-anything") :type 'user-error)))
            ;; Had it waited for the evaluation, it would have looked up.
            (should (string-match-p "Lisp is busy" (cadr err))))
        (sly-agent-q-cancel job)
        (let ((deadline (+ (float-time) 10)))
          (while (and (null results) (< (float-time) deadline)) (accept-process-output nil 0.02)))))))

(provide 'sly-agent-q-notes-test)

;;; sly-agent-q-notes-test.el ends here
