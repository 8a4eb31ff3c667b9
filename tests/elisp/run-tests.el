;;; run-tests.el --- Run the Elisp test suite of sly-agent-q -*- lexical-binding: t; -*-

;;; Commentary:

;; Used by `make test-elisp':
;;
;;   emacs -Q --batch -L elisp -L tests/elisp -l tests/elisp/run-tests.el
;;
;; Loads the real module (build/sly-agent-q-module.so, or
;; `sly-agent-q-module-file'), every tests/elisp/*-test.el, runs ERT and
;; ends with one line "ert: N passed, M failed[, K skipped]".  Exits 1 when
;; a test failed unexpectedly, 0 otherwise.
;;
;; SLY_AGENT_Q_TEST_SELECTOR, when set, is a regexp choosing the tests to
;; run (for working on one area); all tests run by default.

;;; Code:

(require 'cl-lib)
(require 'ert)

;; A .elc older than its .el (an edit since the last `make build') must
;; not hide the edit from the tests.
(setq load-prefer-newer t)

(let* ((here (file-name-directory (or load-file-name buffer-file-name default-directory)))
       (root (expand-file-name "../../" here)))
  (add-to-list 'load-path (expand-file-name "elisp" root))
  (add-to-list 'load-path here)
  ;; Batch Emacs would ask nobody: approvals are set by each test that
  ;; needs one; the default (sly-agent-q-approve) denies in batch.
  (require 'sly-agent-q)
  (require 'sly-agent-q-test-helpers)
  (dolist (file (directory-files here t "-test\\.el\\'"))
    (load file nil t)))

(defun sly-agent-q-run-tests--summary (stats)
  "The final line for STATS, and whether the run failed."
  (let ((passed (ert-stats-completed-expected stats))
        (failed (ert-stats-completed-unexpected stats))
        (skipped (ert-stats-skipped stats)))
    (cons (concat (format "ert: %d passed, %d failed" passed failed)
                  (if (> skipped 0) (format ", %d skipped" skipped) ""))
          (> failed 0))))

(let* ((selector (let ((regexp (getenv "SLY_AGENT_Q_TEST_SELECTOR")))
                   (if (and regexp (not (equal regexp ""))) regexp t)))
       (stats nil)
       (summary nil))
  ;; `debug' in the handler keeps ERT's own debugger working for errors
  ;; inside the tests; only a failure of ERT itself lands here.
  (setq stats (condition-case err
                  (ert-run-tests-batch selector)
                ((debug error)
                 (message "ert: the test run itself failed: %S" err)
                 nil)))
  (setq summary (if stats
                    (sly-agent-q-run-tests--summary stats)
                  (cons "ert: 0 passed, 1 failed" t)))
  (message "%s" (car summary))
  (kill-emacs (if (cdr summary) 1 0)))

;;; run-tests.el ends here
