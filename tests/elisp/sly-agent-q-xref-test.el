;;; sly-agent-q-xref-test.el --- who_calls and who_references on ECL -*- lexical-binding: t; -*-

;;; Commentary:

;; The xref index: definitions evaluated in the session and the files of a
;; small multi-file system loaded with load_system, with their lines.

;;; Code:

(require 'sly-agent-q-test-helpers)

(ert-deftest sly-agent-q-xref/session-definitions ()
  (agentq-test-eval-ok "(defvar *agentq-limit* 10)
                        (defun agentq-helper (x) (* x *agentq-limit*))
                        (defun agentq-shadowing (y) (flet ((agentq-helper (z) z)) (agentq-helper y)))
                        (defun agentq-mapper (y) (mapcar #'agentq-helper y))
                        (defmethod agentq-area ((s string)) (when (> (length s) *agentq-limit*) (agentq-helper 2)))
                        (defmacro agentq-with-limit (n &body body) `(let ((*agentq-limit* ,n)) ,@body))
                        (defun agentq-limited () (agentq-with-limit 3 (agentq-helper 1)))")
  (let ((callers (agentq-test-tool-ok "who_calls" '(:function "agentq-helper"))))
    (should (string-match-p "\\`3 definitions call COMMON-LISP-USER::AGENTQ-HELPER (among [0-9,]+ indexed):\n" callers))
    (should (string-match-p "^- function COMMON-LISP-USER::AGENTQ-MAPPER (evaluated in the session)$" callers))
    (should (string-match-p "^- method COMMON-LISP-USER::AGENTQ-AREA (STRING) (evaluated in the session)$" callers))
    (should (string-match-p "^- function COMMON-LISP-USER::AGENTQ-LIMITED " callers))
    ;; A local function of the same name is not a call of the global one.
    (should-not (string-match-p "AGENTQ-SHADOWING" callers)))
  (let ((references (agentq-test-tool-ok "who_references" '(:symbol "*agentq-limit*"))))
    ;; Through the macro's expansion too.
    (should (string-match-p "\\`3 definitions reference COMMON-LISP-USER::\\*AGENTQ-LIMIT\\*" references))
    (should (string-match-p "AGENTQ-LIMITED" references)))
  ;; Redefining replaces: no stale callers.
  (agentq-test-eval-ok "(defun agentq-mapper (y) y)")
  (should (string-prefix-p "2 definitions call" (agentq-test-tool-ok "who_calls" '(:function "agentq-helper"))))
  ;; Known but uncalled, and unknown.
  (should (string-match-p "\\`No callers of COMMON-LISP-USER::AGENTQ-MAPPER among [0-9,]+ indexed definitions\\.\\'"
                          (agentq-test-tool-ok "who_calls" '(:function "agentq-mapper"))))
  ;; (ED: nothing indexed calls it, whatever other tests loaded.)
  (should (string-match-p "\\`COMMON-LISP:ED is not defined by any indexed code, so its callers are unknown"
                          (agentq-test-tool-ok "who_calls" '(:function "ed"))))
  (should (string-prefix-p "Symbol AGENTQ-NOTHING-SUCH not found in package COMMON-LISP-USER."
                           (agentq-test-tool-fails "who_calls" '(:function "agentq-nothing-such"))))
  ;; reset_session forgets the session's definitions.
  (agentq-test-call "reset_session" nil)
  (agentq-test-eval-ok "(defun agentq-helper (x) x)")
  (should (string-match-p "\\`No callers of COMMON-LISP-USER::AGENTQ-HELPER"
                          (agentq-test-tool-ok "who_calls" '(:function "agentq-helper")))))

(ert-deftest sly-agent-q-xref/a-system-loaded-with-load-system ()
  (let ((dir (file-name-as-directory (make-temp-file "agentq-xref" t))))
    (unwind-protect
        (progn
          (with-temp-file (expand-file-name "agentq-xref-demo.asd" dir)
            (insert "(asdf:defsystem \"agentq-xref-demo\" :serial t\n  :components ((:file \"package\") (:file \"core\") (:file \"use\")))\n"))
          (with-temp-file (expand-file-name "package.lisp" dir)
            (insert "(defpackage \"AGENTQ-XREF-DEMO\" (:use \"CL\") (:export \"PARSE\" \"RUN\" \"*VERBOSE*\"))\n"))
          (with-temp-file (expand-file-name "core.lisp" dir)
            (insert "(in-package \"AGENTQ-XREF-DEMO\")\n\n(defvar *verbose* nil)\n\n;; Parsing.\n(defun parse (text)\n  (when *verbose* (print text))\n  (read-from-string text))\n"))
          (with-temp-file (expand-file-name "use.lisp" dir)
            (insert "(in-package \"AGENTQ-XREF-DEMO\")\n\n(defun run (text)\n  (eval (parse text)))\n\n(defun run-quietly (text)\n  (let ((*verbose* nil))\n    (run text)))\n"))
          (let ((sly-agent-q-system-directories (list dir)))
            (should (string-prefix-p "Loading system: agentq-xref-demo"
                                     (plist-get (agentq-test-call "load_system" '(:name "agentq-xref-demo")) :content))))
          (let ((core (file-truename (expand-file-name "core.lisp" dir)))
                (use (file-truename (expand-file-name "use.lisp" dir))))
            (should (string-match-p (concat "\\`1 definition calls AGENTQ-XREF-DEMO:PARSE (among [0-9,]+ indexed):\n"
                                            "- function AGENTQ-XREF-DEMO:RUN (" (regexp-quote use) ":3)\\'")
                                    (agentq-test-tool-ok "who_calls" '(:function "agentq-xref-demo:parse"))))
            (let ((references (agentq-test-tool-ok "who_references" '(:symbol "*verbose*" :package "agentq-xref-demo"))))
              (should (string-prefix-p "2 definitions reference AGENTQ-XREF-DEMO:*VERBOSE*" references))
              (should (string-match-p (concat "^- function AGENTQ-XREF-DEMO:PARSE (" (regexp-quote core) ":6)$") references))
              (should (string-match-p (concat "^- function AGENTQ-XREF-DEMO::RUN-QUIETLY (" (regexp-quote use) ":6)$") references))))
          ;; The user's system is the session's: reset_session forgets it.
          (agentq-test-call "reset_session" nil)
          (should (string-prefix-p "Package AGENTQ-XREF-DEMO not found."
                                   (agentq-test-tool-fails "who_calls" '(:function "agentq-xref-demo:parse")))))
      (agentq-test-call "reset_session" nil)
      (delete-directory dir t))))

;;; sly-agent-q-xref-test.el ends here
