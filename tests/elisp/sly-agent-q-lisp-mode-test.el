;;; sly-agent-q-lisp-mode-test.el --- SLY's keys in Lisp buffers -*- lexical-binding: t; -*-

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-lisp-mode)
(require 'sly-agent-q-log)

(defmacro agentq-lm-with-buffer (text &rest body)
  "Run BODY in a `lisp-mode' buffer holding TEXT, point at its end."
  (declare (indent 1) (debug (form body)))
  `(with-temp-buffer
     (insert ,text)
     (lisp-mode)
     ,@body))

(defun agentq-lm-shown (command &rest args)
  "Run COMMAND with ARGS; wait for the result it shows and return its text."
  (let ((shown nil))
    (cl-letf (((symbol-function 'sly-agent-q--show-result)
               (lambda (result) (setq shown (plist-get result :content))))
              ((symbol-function 'sly-agent-q-lisp--show-in)
               (lambda (_buffer result &optional _lisp) (setq shown (or (plist-get result :content) (plist-get result :error))))))
      (apply command args)
      (let ((deadline (+ (float-time) 20)))
        (while (and (null shown) (< (float-time) deadline))
          (accept-process-output nil 0.02))))
    shown))

(ert-deftest sly-agent-q-lisp-mode/on-in-lisp-buffers-unless-sly ()
  (agentq-lm-with-buffer ""
    (should sly-agent-q-lisp-mode)
    (dolist (key '(("C-x C-e" . sly-agent-q-eval-last-sexp) ("C-M-x" . sly-agent-q-eval-defun)
                   ("C-c C-r" . sly-agent-q-eval-region) ("C-c C-c" . sly-agent-q-compile-defun)
                   ("C-c C-k" . sly-agent-q-compile-and-load-file) ("C-c C-l" . sly-agent-q-load-file)
                   ("C-c C-d d" . sly-agent-q-describe-symbol) ("C-c C-d a" . sly-agent-q-apropos)
                   ("C-c C-d h" . sly-agent-q-hyperspec-lookup) ("C-c RET" . sly-agent-q-macroexpand-1)
                   ("C-c M-m" . sly-agent-q-macroexpand-all) ("C-c C-w c" . sly-agent-q-who-calls)
                   ("C-c C-w r" . sly-agent-q-who-references) ("C-c C-v i" . sly-agent-q-inspect)
                   ("C-c M-q" . sly-agent-q-reindent-defun)
                   ("M-." . xref-find-definitions)))
      (should (eq (key-binding (kbd (car key))) (cdr key)))
      (should (or (eq (cdr key) 'xref-find-definitions) (documentation (cdr key))))))
  ;; Where SLY is on, SLY keeps its keys.
  (with-temp-buffer
    (setq-local sly-mode t)
    (lisp-mode)
    (setq-local sly-mode t)
    (sly-agent-q-lisp-mode -1)
    (sly-agent-q-lisp-mode-maybe)
    (should-not sly-agent-q-lisp-mode))
  (with-temp-buffer
    (emacs-lisp-mode)
    (sly-agent-q-lisp-mode-maybe)
    (should-not sly-agent-q-lisp-mode)))

(ert-deftest sly-agent-q-lisp-mode/evaluate-keys-use-the-buffers-package ()
  (agentq-lm-with-buffer "(defpackage :agentq-lm (:use :cl))\n(in-package :agentq-lm)\n\n(defun lm-twice (x)\n  (* 2 x))\n\n(lm-twice 21)"
    (should (equal (agentq-lm-shown #'sly-agent-q-eval-region (point-min) (line-end-position -4)) "=> #<\"AGENTQ-LM\" package>"))
    (goto-char (point-min))
    (search-forward "(* 2")
    (should (equal (agentq-lm-shown #'sly-agent-q-eval-defun) "=> LM-TWICE"))
    (goto-char (point-max))
    (should (equal (agentq-lm-shown #'sly-agent-q-eval-last-sexp) "=> 42"))
    (should (string-match-p "AQ\\[agentq-lm\\]" (sly-agent-q-lisp--lighter)))
    ;; The region's in-package moved the session: the next tests expect CL-USER.
    (agentq-test-eval-ok "(in-package :cl-user)")))

(ert-deftest sly-agent-q-lisp-mode/incomplete-input-is-not-sent ()
  (agentq-lm-with-buffer "(+ 1 (foo \"bar"
    (should-error (sly-agent-q-eval-region (point-min) (point-max)) :type 'user-error)
    (should-error (sly-agent-q-inspect "(list 1") :type 'user-error))
  ;; At the M-x sly-agent-q-evaluate prompt too.
  (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "(string-up \"a")))
    (should-error (call-interactively #'sly-agent-q-evaluate) :type 'user-error))
  (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "(string-upcase \"a\")")))
    (should (equal (call-interactively #'sly-agent-q-evaluate) "=> \"A\""))))

(ert-deftest sly-agent-q-lisp-mode/compile-defun-shows-warnings ()
  (agentq-lm-with-buffer "(defun agentq-lm-bad (x)\n  (let ((unused 1))\n    (agentq-lm-no-such-function x)))"
    (goto-char (point-min))
    (when (get-buffer "*sly-agent-q compilation*") (kill-buffer "*sly-agent-q compilation*"))
    (let ((done nil))
      (cl-letf (((symbol-function 'sly-agent-q-lisp--show-compilation)
                 (let ((original (symbol-function 'sly-agent-q-lisp--show-compilation)))
                   (lambda (&rest args) (apply original args) (setq done t)))))
        (save-window-excursion (sly-agent-q-compile-defun))
        (let ((deadline (+ (float-time) 20)))
          (while (and (not done) (< (float-time) deadline)) (accept-process-output nil 0.02)))))
    (with-current-buffer "*sly-agent-q compilation*"
      (should (derived-mode-p 'compilation-mode))
      (should (string-match-p "AGENTQ-LM-NO-SUCH-FUNCTION" (buffer-string)))
      (should (string-match-p "UNUSED" (buffer-string)))
      ;; Each note at its own line: the unused variable's, the call's.
      (should (string-match-p ":2:[0-9]+: warning: STYLE-WARNING: The variable UNUSED" (buffer-string)))
      (should (string-match-p ":3:[0-9]+: warning: STYLE-WARNING: Undefined function" (buffer-string))))))

(ert-deftest sly-agent-q-lisp-mode/find-definition ()
  ;; Evaluated from a buffer: M-. goes to the buffer and position.
  (agentq-lm-with-buffer ";; header\n\n(defun agentq-lm-here (x)\n  x)\n"
    (goto-char (point-min))
    (search-forward "agentq-lm-here")
    (should (equal (agentq-lm-shown #'sly-agent-q-eval-defun) "=> AGENTQ-LM-HERE"))
    (let* ((xrefs (xref-backend-definitions 'sly-agent-q "agentq-lm-here"))
           (location (xref-item-location (car xrefs))))
      (should (= (length xrefs) 1))
      (should (eq (xref-buffer-location-buffer location) (current-buffer)))
      (should (= (xref-buffer-location-position location) 12))))
  ;; Loaded from a file: M-. goes to the file and line.
  (let* ((dir (make-temp-file "agentq-lm" t))
         (file (expand-file-name "defs.lisp" dir)))
    (unwind-protect
        (progn
          (with-temp-file file (insert "(in-package :cl-user)\n\n;; two\n(defun agentq-lm-from-file (y)\n  (1+ y))\n"))
          (let ((loaded nil))
            (cl-letf (((symbol-function 'message) (lambda (&rest args) (when (string-prefix-p "Loaded" (car args)) (setq loaded t)))))
              (sly-agent-q-load-file file)
              (let ((deadline (+ (float-time) 20)))
                (while (and (not loaded) (< (float-time) deadline)) (accept-process-output nil 0.02))))
            (should loaded))
          (agentq-lm-with-buffer "(agentq-lm-from-file 1)"
            (let* ((xrefs (xref-backend-definitions 'sly-agent-q "agentq-lm-from-file"))
                   (location (xref-item-location (car xrefs))))
              (should (equal (file-truename (xref-file-location-file location)) (file-truename file)))
              (should (= (xref-file-location-line location) 4))))
          (should-error (xref-backend-definitions 'sly-agent-q "agentq-lm-nowhere-defined") :type 'user-error))
      (delete-directory dir t))))

(ert-deftest sly-agent-q-lisp-mode/find-definition-in-the-files-package ()
  "C-c C-k on a file in its own package, then M-. on a name in it: found
in that package (the buffer's, as its `in-package' names it), and looking
it up interns nothing in CL-USER."
  (let* ((dir (make-temp-file "agentq-lm" t))
         (file (expand-file-name "bb.lisp" dir)))
    ;; Left by an older run, it would hide what this test looks for.
    (agentq-test-eval-ok "(let ((s (find-symbol \"HELPER\" \"CL-USER\"))) (when s (unintern s \"CL-USER\")))")
    (unwind-protect
        (progn
          (with-temp-file file
            (insert "(defpackage :agentq-bb (:use :cl))\n(in-package :agentq-bb)\n\n"
                    "(defun helper () 1)\n\n(defun agentq-bb-user ()\n  (helper))\n"))
          (with-current-buffer (find-file-noselect file)
            (should sly-agent-q-lisp-mode)
            ;; C-c C-k: compile_form, then the index job its callback submits.
            (sly-agent-q-compile-and-load-file file)
            (let ((deadline (+ (float-time) 30)))
              (while (and sly-agent-q-lisp--jobs (< (float-time) deadline))
                (accept-process-output nil 0.02)))
            (should (null sly-agent-q-lisp--jobs))
            (should (equal (agentq-test-content "(agentq-bb::helper)") "=> 1"))
            ;; M-. with point on `helper' in the call.
            (goto-char (point-min))
            (search-forward "(help")
            (let ((identifier (xref-backend-identifier-at-point 'sly-agent-q)))
              (should (equal identifier "helper"))
              (let* ((xrefs (xref-backend-definitions 'sly-agent-q identifier))
                     (location (xref-item-location (car xrefs))))
                (should (= (length xrefs) 1))
                (should (equal (file-truename (xref-file-location-file location)) (file-truename file)))
                (should (= (xref-file-location-line location) 4))))
            ;; A name that exists nowhere: no source, and still not interned.
            (should-error (xref-backend-definitions 'sly-agent-q "agentq-bb-nowhere") :type 'user-error))
          (should (equal (agentq-test-content "(find-symbol \"HELPER\" \"CL-USER\")") "=> NIL\n=> NIL"))
          (should (equal (agentq-test-content "(find-symbol \"AGENTQ-BB-NOWHERE\" \"CL-USER\")") "=> NIL\n=> NIL"))
          (should (equal (agentq-test-content "(find-symbol \"AGENTQ-BB-NOWHERE\" \"AGENTQ-BB\")") "=> NIL\n=> NIL")))
      (let ((buffer (find-buffer-visiting file)))
        (when buffer (kill-buffer buffer)))
      (delete-directory dir t))))

;; C-u M-. prompts with the live image's symbols, in the buffer's package.
(ert-deftest sly-agent-q-lisp-mode/find-definition-prompt-completes ()
  (agentq-lm-with-buffer "(in-package :cl-user)\n"
    (agentq-test-eval-ok "(defun cl-user::agentq-lm-prompted (x) x) (defun cl-user::agentq-lm-prompted-too () 2)")
    (let ((table (xref-backend-identifier-completion-table 'sly-agent-q)))
      (should (equal (sort (all-completions "agentq-lm-prompt" table) #'string<)
                     '("agentq-lm-prompted" "agentq-lm-prompted-too")))
      (should (member "mapcar" (all-completions "mapc" table)))
      (should (member "cl:mapcar" (all-completions "cl:mapc" table))))))

(ert-deftest sly-agent-q-lisp-mode/documentation-keys ()
  (agentq-lm-with-buffer "(when x y)"
    (should (string-match-p "CAR" (agentq-lm-shown #'sly-agent-q-describe-symbol "car")))
    (should (string-match-p "HASH-TABLE-COUNT" (agentq-lm-shown #'sly-agent-q-apropos "hash-table-count")))
    (goto-char (point-min))
    (should (string-match-p "IF" (agentq-lm-shown #'sly-agent-q-macroexpand-1)))
    (when (get-buffer "*sly-agent-q inspector*") (kill-buffer "*sly-agent-q inspector*"))
    (sly-agent-q-inspect "(+ 1 2)")
    (let ((deadline (+ (float-time) 20)))
      (while (and (not (get-buffer "*sly-agent-q inspector*")) (< (float-time) deadline))
        (accept-process-output nil 0.02)))
    (should (string-match-p "\\`3\n.*integer" (with-current-buffer "*sly-agent-q inspector*" (buffer-string))))
    ;; C-c C-w c and C-c C-w r answer in *xref*: see who-calls-in-xref.
    (let ((url nil))
      (cl-letf (((symbol-function 'browse-url) (lambda (u &rest _) (setq url u))))
        (sly-agent-q-hyperspec-lookup "cl:mapcar"))
      (should (equal url "https://l1sp.org/cl/mapcar")))))

(ert-deftest sly-agent-q-lisp-mode/completion-from-the-image ()
  (agentq-test-eval-ok "(defpackage :agentq-cmp (:use :cl)) (in-package :agentq-cmp) (defun agentq-cmp-frobnicate (x) x) (defvar *agentq-cmp-level* 3) (in-package :cl-user)")
  (agentq-lm-with-buffer "(in-package :agentq-cmp)\n(string-upc"
    (let* ((capf (sly-agent-q-completion-at-point))
           (candidates (nth 2 capf)))
      (should (= (nth 0 capf) (- (point) (length "string-upc"))))
      (should (member "string-upcase" candidates))
      (should-not (member "nstring-upcase" candidates))
      (should (equal (funcall (plist-get (nthcdr 3 capf) :annotation-function) (car (member "string-upcase" candidates)))
                     " function")))
    ;; The buffer package's own symbols, unqualified; qualified names too.
    (insert "\n(agentq-cmp-fro")
    (should (equal (nth 2 (sly-agent-q-completion-at-point)) '("agentq-cmp-frobnicate")))
    (insert "\n(cl:hash-table-cou")
    (should (equal (nth 2 (sly-agent-q-completion-at-point)) '("cl:hash-table-count")))
    (insert "\n*agentq-cmp-lev")
    (let ((capf (sly-agent-q-completion-at-point)))
      (should (equal (nth 2 capf) '("*agentq-cmp-level*")))
      (should (eq (funcall (plist-get (nthcdr 3 capf) :company-kind) (car (nth 2 capf))) 'variable)))
    ;; While Lisp is busy, nothing (and no waiting).
    (let ((job (sly-agent-q-execute-tool-calls-async
                '((:id "busy" :name "evaluate_lisp" :arguments (:code "(sleep 0.5)"))) #'ignore)))
      (should (null (sly-agent-q-completion-at-point)))
      (sly-agent-q-cancel job)
      (let ((deadline (+ (float-time) 10)))
        (while (and (sly-agent-q--lisp-busy-p) (< (float-time) deadline))
          (accept-process-output nil 0.02))))))

(ert-deftest sly-agent-q-lisp-mode/completion-follows-the-package ()
  ;; Prefix completion searches an index of the package's names: a symbol
  ;; made after the last completion is offered, an uninterned one is not.
  (agentq-test-eval-ok "(defpackage :agentq-cmp2 (:use :cl)) (intern \"AGENTQ-CMP2-ALPHA\" :agentq-cmp2)")
  (agentq-lm-with-buffer "(in-package :agentq-cmp2)\n(agentq-cmp2-"
    (should (equal (nth 2 (sly-agent-q-completion-at-point)) '("agentq-cmp2-alpha")))
    (agentq-test-eval-ok "(intern \"AGENTQ-CMP2-BETA\" :agentq-cmp2) (intern \"AGENTQ-CMP2-AARDVARK\" :agentq-cmp2)")
    (should (equal (nth 2 (sly-agent-q-completion-at-point))
                   '("agentq-cmp2-aardvark" "agentq-cmp2-alpha" "agentq-cmp2-beta")))
    (agentq-test-eval-ok "(unintern (find-symbol \"AGENTQ-CMP2-ALPHA\" :agentq-cmp2) :agentq-cmp2)")
    (should (equal (nth 2 (sly-agent-q-completion-at-point)) '("agentq-cmp2-aardvark" "agentq-cmp2-beta")))
    ;; Uninterned then another interned: the counts are as before.
    (agentq-test-eval-ok "(unintern (find-symbol \"AGENTQ-CMP2-BETA\" :agentq-cmp2) :agentq-cmp2) (intern \"AGENTQ-CMP2-GAMMA\" :agentq-cmp2)")
    (should (equal (nth 2 (sly-agent-q-completion-at-point)) '("agentq-cmp2-aardvark" "agentq-cmp2-gamma"))))
  ;; The tool's prefix mode, for the model too: starts with, not contains.
  (should (equal (agentq-test-tool-ok "apropos_search" '(:pattern "hash-table-c" :prefix t :package "CL"))
                 "1 symbol matches 'hash-table-c':\nCOMMON-LISP:HASH-TABLE-COUNT [function]"))
  (should (equal (agentq-test-tool-ok "apropos_search" '(:pattern "table-count" :prefix t :package "CL"))
                 "No symbols match 'table-count' in package COMMON-LISP.")))

(defun agentq-lm-completions ()
  "The completion candidates at point, each as (CANDIDATE . ANNOTATION)."
  (let ((capf (sly-agent-q-completion-at-point)))
    (mapcar (lambda (candidate)
              (cons candidate (funcall (plist-get (nthcdr 3 capf) :annotation-function) candidate)))
            (nth 2 capf))))

(ert-deftest sly-agent-q-lisp-mode/completion-right-after-an-evaluation ()
  ;; What an evaluation defines is offered, with what it names, by the
  ;; very next completion: the package's index is brought up to date, not
  ;; left as the last completion saw it.
  (agentq-test-eval-ok "(defpackage :agentq-cmp3 (:use :cl))")
  (agentq-lm-with-buffer "(in-package :agentq-cmp3)\n(agentq-cmp3-"
    (should (null (agentq-lm-completions)))
    (agentq-test-eval-ok "(defun agentq-cmp3::agentq-cmp3-run (x) x)")
    (should (equal (agentq-lm-completions) '(("agentq-cmp3-run" . " function"))))
    (agentq-test-eval-ok "(defvar agentq-cmp3::agentq-cmp3-level 3)")
    (should (equal (agentq-lm-completions)
                   '(("agentq-cmp3-level" . " variable") ("agentq-cmp3-run" . " function"))))
    (agentq-test-eval-ok "(defmacro agentq-cmp3::agentq-cmp3-with (&body b) `(progn ,@b)) (defclass agentq-cmp3::agentq-cmp3-shape () ())")
    (should (equal (agentq-lm-completions)
                   '(("agentq-cmp3-level" . " variable") ("agentq-cmp3-run" . " function")
                     ("agentq-cmp3-shape" . " class") ("agentq-cmp3-with" . " macro"))))
    ;; A symbol already offered that the evaluation now defines: its
    ;; annotation follows.
    (agentq-test-eval-ok "(intern \"AGENTQ-CMP3-LATER\" :agentq-cmp3)")
    (should (assoc "agentq-cmp3-later" (agentq-lm-completions)))
    (should-not (cdr (assoc "agentq-cmp3-later" (agentq-lm-completions))))
    (agentq-test-eval-ok "(defun agentq-cmp3::agentq-cmp3-later () 1)")
    (should (equal (cdr (assoc "agentq-cmp3-later" (agentq-lm-completions))) " function"))
    ;; Uninterned: gone at once, also when another symbol took its place
    ;; in the same evaluation (the package's counts as before).
    (agentq-test-eval-ok "(unintern 'agentq-cmp3::agentq-cmp3-later :agentq-cmp3)")
    (should-not (assoc "agentq-cmp3-later" (agentq-lm-completions)))
    (agentq-test-eval-ok "(unintern 'agentq-cmp3::agentq-cmp3-level :agentq-cmp3) (defvar agentq-cmp3::agentq-cmp3-depth 1)")
    (should (equal (mapcar #'car (agentq-lm-completions))
                   '("agentq-cmp3-depth" "agentq-cmp3-run" "agentq-cmp3-shape" "agentq-cmp3-with")))
    ;; Exported, then unexported: still offered, once.
    (agentq-test-eval-ok "(export 'agentq-cmp3::agentq-cmp3-run :agentq-cmp3)")
    (should (equal (sort (mapcar #'car (agentq-lm-completions)) #'string<)
                   '("agentq-cmp3-depth" "agentq-cmp3-run" "agentq-cmp3-shape" "agentq-cmp3-with")))
    (agentq-test-eval-ok "(unexport 'agentq-cmp3::agentq-cmp3-run :agentq-cmp3)")
    (should (equal (sort (mapcar #'car (agentq-lm-completions)) #'string<)
                   '("agentq-cmp3-depth" "agentq-cmp3-run" "agentq-cmp3-shape" "agentq-cmp3-with")))))

(ert-deftest sly-agent-q-lisp-mode/completion-follows-packages ()
  ;; A package made by the last evaluation: its symbols by qualified
  ;; prefix at once; gone with the package.
  (agentq-lm-with-buffer "(in-package :agentq-cmp4)\n(agentq-cmp5:"
    (should (null (agentq-lm-completions)))
    (agentq-test-eval-ok "(defpackage :agentq-cmp5 (:use :cl) (:export #:agentq-cmp5-go)) (defun agentq-cmp5:agentq-cmp5-go () t) (defvar agentq-cmp5::*agentq-cmp5-depth* 0)")
    (should (equal (agentq-lm-completions)
                   '(("agentq-cmp5:*agentq-cmp5-depth*" . " variable") ("agentq-cmp5:agentq-cmp5-go" . " function"))))
    ;; Used, then imported: what the buffer's package can name unqualified.
    (insert "\n(agentq-cmp5-")
    ;; The buffer's package does not exist yet: CL's symbols, none of these.
    (should (null (agentq-lm-completions)))
    (agentq-test-eval-ok "(defpackage :agentq-cmp4 (:use :cl))")
    (should (null (agentq-lm-completions)))
    (agentq-test-eval-ok "(use-package :agentq-cmp5 :agentq-cmp4)")
    (should (equal (agentq-lm-completions) '(("agentq-cmp5-go" . " function"))))
    (insert "\n(*agentq-cmp5-")
    (should (null (agentq-lm-completions)))
    (agentq-test-eval-ok "(import 'agentq-cmp5::*agentq-cmp5-depth* :agentq-cmp4)")
    (should (equal (agentq-lm-completions) '(("*agentq-cmp5-depth*" . " variable"))))
    (insert "\n(agentq-cmp5-")
    (agentq-test-eval-ok "(unuse-package :agentq-cmp5 :agentq-cmp4)")
    (should (null (agentq-lm-completions)))
    ;; Deleted: nothing by its name (and nothing imported from it has a home).
    (insert "\n(agentq-cmp5:")
    (agentq-test-eval-ok "(delete-package :agentq-cmp5)")
    (should (null (agentq-lm-completions)))))

(ert-deftest sly-agent-q-lisp-mode/eldoc-shows-the-arglist ()
  (agentq-lm-with-buffer "(subseq x 1 "
    (let ((shown nil))
      (should (sly-agent-q-eldoc-function (lambda (text &rest _) (setq shown text))))
      (let ((deadline (+ (float-time) 10)))
        (while (and (null shown) (< (float-time) deadline)) (accept-process-output nil 0.02)))
      (should (string-prefix-p "(subseq sequence start &optional (end" shown))
      ;; The third argument, END, is the current one.
      (let ((at (string-search "(end" shown)))
        (should (memq 'eldoc-highlight-function-argument
                      (ensure-list (get-text-property (1+ at) 'face shown))))
        (should-not (get-text-property (string-search "start" shown) 'face shown))))))

(defun agentq-lm-arglist-row ()
  "The counters of function_arglist: (CALLS FAILURES NOT-FOUND)."
  (let ((row (cdr (assoc "function_arglist" (sly-agent-q-tool-stats)))))
    (list (or (plist-get row :calls) 0) (or (plist-get row :failures) 0) (or (plist-get row :not-found) 0))))

(ert-deftest sly-agent-q-lisp-mode/eldoc-asking-about-unknown-names-fails-no-call ()
  "Eldoc's arglist look-ups of operators that name no function (unknown,
or a special operator) count as calls but not as failed calls; a person's
or a model's call that finds nothing still fails, and counts so."
  (let ((before (agentq-lm-arglist-row)))
    (dolist (text '("(agentq-lm-no-such-operator 1 " "(let ((x 1)) "))
      (agentq-lm-with-buffer text
        (backward-char 1)
        (let ((shown nil) (calls (car (agentq-lm-arglist-row))))
          (should (sly-agent-q-eldoc-function (lambda (text &rest _) (setq shown text))))
          (let ((deadline (+ (float-time) 10)))
            (while (and (or (= (car (agentq-lm-arglist-row)) calls) (sly-agent-q--lisp-busy-p))
                        (< (float-time) deadline))
              (accept-process-output nil 0.02)))
          (should-not shown))))
    (let ((after (agentq-lm-arglist-row)))
      (should (= (nth 0 after) (+ 2 (nth 0 before))))
      (should (= (nth 1 after) (nth 1 before)))
      (should (= (nth 2 after) (+ 2 (nth 2 before)))))
    (should-not (plist-get (agentq-test-call "function_arglist" '(:function "agentq-lm-no-such-operator")) :success))
    (should (= (nth 1 (agentq-lm-arglist-row)) (1+ (nth 1 before))))
    (should (string-match-p "function_arglist +[0-9]+ calls, [0-9]+ failed, .* ([0-9]+ look-ups of eldoc, completion or M-\\. found no such name)"
                            (progn
                              (save-window-excursion (sly-agent-q-describe-runtime))
                              (with-current-buffer "*sly-agent-q runtime*" (buffer-string)))))))

(ert-deftest sly-agent-q-lisp-mode/the-front-ends-own-calls-are-not-in-the-audit-log ()
  "M-.'s look-up, C-c C-k's indexing and the REPL inspecting a value it
printed are the front end's calls, not the person's: the audit log leaves
them out, and has the person's own (C-c C-k's compile_form, an evaluation)."
  (let ((sly-agent-q-tool-execution-functions (list #'sly-agent-q-log-call))
        (dir (make-temp-file "agentq-lm" t)))
    (when (get-buffer "*Agent-Q Log*") (kill-buffer "*Agent-Q Log*"))
    (unwind-protect
        (let ((file (expand-file-name "ui.lisp" dir)))
          (with-temp-file file (insert "(in-package :cl-user)\n(defun agentq-lm-ui-fn () 1)\n"))
          (with-current-buffer (find-file-noselect file)
            (sly-agent-q-compile-and-load-file file)
            (let ((deadline (+ (float-time) 30)))
              (while (and sly-agent-q-lisp--jobs (< (float-time) deadline))
                (accept-process-output nil 0.02)))
            (should (xref-backend-definitions 'sly-agent-q "agentq-lm-ui-fn"))
            (kill-buffer))
          ;; An evaluation whose values the session keeps, as the REPL's, then inspected.
          (let* ((done nil)
                 (job (let ((sly-agent-q-call-origin "user")) ; as the REPL marks its own
                        (sly-agent-q-execute-tool-calls-async
                         '((:id "v" :name "evaluate_lisp" :arguments (:code "(list :agentq-lm-inspected)")))
                         (lambda (_) (setq done t)) nil #'ignore))))
            (let ((deadline (+ (float-time) 20)))
              (while (and (not done) (< (float-time) deadline)) (accept-process-output nil 0.02)))
            (when (get-buffer "*sly-agent-q inspector*") (kill-buffer "*sly-agent-q inspector*"))
            (save-window-excursion (sly-agent-q-repl-inspect-value job 0))
            (let ((deadline (+ (float-time) 20)))
              (while (and sly-agent-q-lisp--jobs (< (float-time) deadline)) (accept-process-output nil 0.02)))
            (should (string-match-p "AGENTQ-LM-INSPECTED"
                                    (with-current-buffer "*sly-agent-q inspector*" (buffer-string)))))
          (let ((log (with-current-buffer "*Agent-Q Log*" (buffer-string))))
            (should (string-match-p "^[-0-9]+ [:0-9]+ user +compile_form +cautious .* form=(in-package :cl-user)" log))
            (should (string-match-p "^[-0-9]+ [:0-9]+ user +evaluate_lisp +cautious .* code=(list :agentq-lm-inspected)" log))
            (should-not (string-match-p "xref-index-file\\|definition-locations\\|repl-value\\| UI " log))))
      (when (get-buffer "*sly-agent-q inspector*") (kill-buffer "*sly-agent-q inspector*"))
      (delete-directory dir t))))

(ert-deftest sly-agent-q-lisp-mode/reindent-defun ()
  ;; C-c M-q reindents the whole top-level form around point, as SLY's
  ;; sly-reindent-defun; the forms around it stay as they were.
  (agentq-lm-with-buffer "(defun agentq-lm-before ()\n        1)\n\n(defun agentq-lm-indent (x)\n      (let ((y x))\n (when y\n         (print y))))\n"
    (setq indent-tabs-mode nil)
    (should (eq (key-binding (kbd "C-c M-q")) #'sly-agent-q-reindent-defun))
    (goto-char (point-min))
    (search-forward "(print")
    (let ((point (point-marker)))
      (call-interactively (key-binding (kbd "C-c M-q")))
      (should (= (point) point)))
    (should (equal (buffer-string)
                   "(defun agentq-lm-before ()\n        1)\n\n(defun agentq-lm-indent (x)\n  (let ((y x))\n    (when y\n      (print y))))\n")))
  ;; In a comment it fills the paragraph instead.
  (agentq-lm-with-buffer ";; one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen\n"
    (goto-char 5)
    (let ((fill-column 30))
      (sly-agent-q-reindent-defun))
    (should (string-match-p "\\`;; one two three four five six\n;; seven" (buffer-string)))))

(defun agentq-lm-wait-xref ()
  "Wait for the Lisp buffers' jobs to end and *xref* to show; return it."
  (let ((deadline (+ (float-time) 20)))
    (while (and (or sly-agent-q-lisp--jobs (not (get-buffer "*xref*"))) (< (float-time) deadline))
      (accept-process-output nil 0.02)))
  (should (get-buffer "*xref*"))
  (get-buffer "*xref*"))

(ert-deftest sly-agent-q-lisp-mode/who-calls-in-xref ()
  ;; C-c C-w c and C-c C-w r list the definitions in *xref*, as SLY does:
  ;; RET goes to each one's file and line, or to the buffer it was
  ;; evaluated from.
  (let* ((dir (make-temp-file "agentq-lm-xref" t))
         (file (expand-file-name "callers.lisp" dir)))
    (unwind-protect
        (save-window-excursion
          (when (get-buffer "*xref*") (kill-buffer "*xref*"))
          (with-temp-file file
            (insert "(in-package :cl-user)\n\n(defvar *agentq-lm-xlimit* 3)\n\n(defun agentq-lm-xcallee (x)\n  (* x *agentq-lm-xlimit*))\n\n;; the caller\n(defun agentq-lm-xcaller-in-file (y)\n  (agentq-lm-xcallee y))\n"))
          (should (agentq-test-load-file file))
          (let ((lisp-buffer (generate-new-buffer "agentq-lm-xref.lisp")))
            (unwind-protect
                (with-current-buffer lisp-buffer
                  (insert ";; from a buffer\n(defun agentq-lm-xcaller-here (z)\n  (list (agentq-lm-xcallee z)))\n")
                  (lisp-mode)
                  (goto-char (point-max))
                  (backward-sexp)
                  (should (equal (agentq-lm-shown #'sly-agent-q-eval-defun) "=> AGENTQ-LM-XCALLER-HERE"))
                  (goto-char (point-min))
                  (search-forward "(agentq-lm-xcallee")
                  (should (eq (key-binding (kbd "C-c C-w c")) #'sly-agent-q-who-calls))
                  (sly-agent-q-who-calls (sly-agent-q-lisp--symbol-at-point)))
              nil)
            (let ((xref (agentq-lm-wait-xref)))
              (with-current-buffer xref
                (should (derived-mode-p 'xref--xref-buffer-mode))
                (should (string-match-p "function COMMON-LISP-USER::AGENTQ-LM-XCALLER-IN-FILE" (buffer-string)))
                (should (string-match-p "function COMMON-LISP-USER::AGENTQ-LM-XCALLER-HERE" (buffer-string)))
                ;; RET on the file's caller: its file, at its line.
                (goto-char (point-min))
                (search-forward "AGENTQ-LM-XCALLER-IN-FILE")
                (xref-goto-xref)
                (should (equal (file-truename buffer-file-name) (file-truename file)))
                (should (= (line-number-at-pos) 9)))
              (with-current-buffer xref
                (goto-char (point-min))
                (search-forward "AGENTQ-LM-XCALLER-HERE")
                (xref-goto-xref)
                (should (eq (current-buffer) lisp-buffer))
                (should (looking-at "(defun agentq-lm-xcaller-here"))))
            ;; Who references: *xref* too, going to the file's line.
            (kill-buffer "*xref*")
            (with-current-buffer lisp-buffer
              (sly-agent-q-who-references "*agentq-lm-xlimit*"))
            (with-current-buffer (agentq-lm-wait-xref)
              (goto-char (point-min))
              (search-forward "AGENTQ-LM-XCALLEE")
              (xref-goto-xref)
              (should (equal (file-truename buffer-file-name) (file-truename file)))
              (should (= (line-number-at-pos) 5)))
            ;; An answer that lists nothing is a message, not an empty *xref*.
            (kill-buffer "*xref*")
            (let ((said nil))
              (cl-letf (((symbol-function 'message) (lambda (&rest args) (setq said (apply #'format args)))))
                (with-current-buffer lisp-buffer
                  (sly-agent-q-who-calls "agentq-lm-xcaller-here"))
                (let ((deadline (+ (float-time) 20)))
                  (while (and (null said) (< (float-time) deadline)) (accept-process-output nil 0.02))))
              (should (string-match-p "\\`No callers of COMMON-LISP-USER::AGENTQ-LM-XCALLER-HERE" said))
              (should-not (get-buffer "*xref*")))
            (let ((kill-buffer-query-functions nil)) (kill-buffer lisp-buffer))))
      (when (get-buffer "*xref*") (kill-buffer "*xref*"))
      (when (find-buffer-visiting file) (kill-buffer (find-buffer-visiting file)))
      (delete-directory dir t))))

(provide 'sly-agent-q-lisp-mode-test)

;;; sly-agent-q-lisp-mode-test.el ends here
