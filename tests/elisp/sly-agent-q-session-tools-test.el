;;; sly-agent-q-session-tools-test.el --- list_definitions and reset_session -*- lexical-binding: t; -*-

;;; Commentary:

;; The session tools in a fresh Emacs each (reset_session clears what the
;; rest of the suite defined): the contract's listing, the package filter,
;; and the list/reset round trip, which also mends a broken readtable.

;;; Code:

(require 'sly-agent-q-test-helpers)

(defun agentq-session-tools-run (forms)
  "In a fresh Emacs, run FORMS, each (TOOL . ARGUMENTS), printing each content and a line \"--\"."
  (pcase-let ((`(,code ,stdout ,stderr ,_seconds)
               (agentq-test-run-emacs
                `((require 'sly-agent-q)
                  (dolist (form ',forms)
                    (princ (plist-get (car (sly-agent-q-execute-tool-calls
                                            (list (list :id "t" :name (car form) :arguments (cdr form)))))
                                      :content))
                    (princ "\n--\n"))
                  (kill-emacs 0))
                :timeout 40)))
    (unless (equal code 0) (ert-fail (list :exit code :stdout stdout :stderr stderr)))
    (butlast (split-string stdout "\n--\n"))))

(ert-deftest sly-agent-q-session-tools/list-reset-round-trip ()
  (let ((out (agentq-session-tools-run
              '(("list_definitions")
                ("evaluate_lisp" :code "(defun my-function (a b &optional c) (list a b c))
                                        (defun helper (x) x) (defun helper (x) (1+ x))
                                        (defvar *my-var* 42) (defconstant +my-constant+ \"hello\")
                                        (defmacro with-timing (form) form) (defgeneric shape-area (shape))
                                        (defpackage :agentq-mine (:use :cl)) (in-package :agentq-mine)
                                        (defun inner () 1)")
                ("list_definitions")
                ("list-definitions" :package "agentq-mine")
                ("list_definitions" :package "no-such-package")
                ("evaluate_lisp" :code "(set-macro-character #\\( (lambda (s c) (declare (ignore s c)) :broken))")
                ("evaluate_lisp" :code "(+ 1 2)")
                ("reset-session")
                ("evaluate_lisp" :code "(list (+ 1 2) (package-name *package*) (find-package :agentq-mine))")
                ("list_definitions")
                ("evaluate_lisp" :code "(helper 1)")
                ("evaluate_lisp" :code "(boundp '+my-constant+)")))))
    (should (equal (nth 0 out) "No definitions in this session yet."))
    ;; Sorted by name, whatever the package.
    (should (equal (nth 2 out) "[Functions]
- HELPER (X)
- AGENTQ-MINE::INNER ()
- MY-FUNCTION (A B &OPTIONAL C)
- SHAPE-AREA (SHAPE)

[Variables]
- *MY-VAR* = 42
- +MY-CONSTANT+ = \"hello\"

[Macros]
- WITH-TIMING (FORM)"))
    (should (equal (nth 3 out) "[Functions]\n- AGENTQ-MINE::INNER ()"))
    (should (string-match-p "Package \"no-such-package\" does not exist" (nth 4 out)))
    (should (string-prefix-p "[ERROR]" (nth 6 out)))     ; the readtable is broken
    (should (equal (nth 7 out) "Session reset. All definitions cleared."))
    (should (equal (nth 8 out) "=> (3 \"COMMON-LISP-USER\" NIL)"))
    (should (equal (nth 9 out) "No definitions in this session yet."))
    (should (string-prefix-p "[ERROR] UNDEFINED-FUNCTION" (nth 10 out)))
    (should (equal (nth 11 out) "=> NIL"))))

(ert-deftest sly-agent-q-session-tools/are-listed-with-their-safety ()
  (let ((schema (sly-agent-q-tools-schema 'mcp)))
    (dolist (name '("list_definitions" "reset_session"))
      (should (seq-find (lambda (tool) (equal (gethash "name" tool) name)) schema))))
  (should (equal (plist-get (plist-get (agentq-test-call "list_definitions" '(:package "CL-USER")) :metadata)
                            :safety_level)
                 "safe"))
  ;; Their names cannot be taken by a tool defined in Lisp.
  (should (string-match-p "runtime's own tool"
                          (agentq-test-eval-fails
                           "(agent-q:define-tool \"reset_session\" \"x\" nil :handler #'identity)"))))

;; The session tools are declared once, in Lisp, beside their handlers:
;; what marks them the runtime's own cannot be used again after boot, and
;; their handlers cannot be replaced.
(ert-deftest sly-agent-q-session-tools/own-tools-stay-own-after-boot ()
  ;; %DEFINE-TOOL answers a failure's text.
  (should (string-match-p "agentq_new_own cannot become one of the runtime's own tools after boot"
                          (plist-get (agentq-test-eval
                                      "(agent-q::%define-tool \"agentq_new_own\" \"x\" nil nil :safe nil :own nil)")
                                     :content)))
  (should (string-match-p "evaluate_lisp cannot become one of the runtime's own tools"
                          (plist-get (agentq-test-eval
                                      "(agent-q::%define-tool \"evaluate_lisp\" \"x\" nil nil :safe nil :own nil)")
                                     :content)))
  (should (string-match-p "load_system is the runtime's own tool"
                          (agentq-test-eval-fails
                           "(agent-q::register-job-handler \"load_system\" #'identity)")))
  (should-not (member "agentq_new_own" (sly-agent-q-list-tools)))
  ;; Still the real tools.
  (let ((result (agentq-test-call "list_definitions" '(:package "AGENTQ-NO-SUCH-PACKAGE"))))
    (should (string-prefix-p "Package \"AGENTQ-NO-SUCH-PACKAGE\" does not exist" (plist-get result :content)))))

;;; sly-agent-q-session-tools-test.el ends here
