;;; sly-agent-q-repl-tools-test.el --- eval_form, compile_form and their records -*- lexical-binding: t; -*-

;;; Commentary:

;; The execution tools: eval_form and compile_form run code and record the
;; REPL history and the last error, which get_repl_history and
;; get_last_error show; reset_session clears them.

;;; Code:

(require 'sly-agent-q-test-helpers)

(ert-deftest sly-agent-q-repl-tools/eval-form-and-records ()
  (agentq-test-call "reset_session" nil)
  (should (string-prefix-p "No error recorded" (agentq-test-tool-ok "get_last_error" nil)))
  (should (string-prefix-p "The REPL history is empty" (agentq-test-tool-ok "get_repl_history" nil)))
  (should (equal (plist-get (agentq-test-call "eval_form" '(:form "(defun agentq-add (a b) (+ a b)) (print (agentq-add 1 2))")) :content)
                 "[stdout]\n\n3 \n\n=> 3"))
  (let ((failed (agentq-test-call "eval_form" '(:form "(agentq-add 1)"))))
    (should-not (plist-get failed :success))
    (should (string-prefix-p "[ERROR] " (plist-get failed :content))))
  (should (string-match-p "\\`Last error (eval_form of (agentq-add 1)):\n\\[ERROR\\] .*PROGRAM-ERROR"
                          (agentq-test-tool-ok "get_last_error" nil)))
  (should (string-prefix-p "The argument \"form\" is empty"
                           (plist-get (agentq-test-call "eval_form" '(:form "  ")) :content)))
  (should (equal (plist-get (agentq-test-call "eval_form" '(:form "(+ 1 2)" :package "no-such-pkg")) :content)
                 "[ERROR] PACKAGE-ERROR\nPackage \"no-such-pkg\" does not exist."))
  (let ((history (agentq-test-tool-ok "get_repl_history" '(:limit 2))))
    (should (string-prefix-p "The last 2 of 3 entries:\n\n2. eval_form (failed): (agentq-add 1)\n" history))
    (should (string-match-p "3. eval_form (failed): (\\+ 1 2)\n\\[ERROR\\] PACKAGE-ERROR" history)))
  (should (string-prefix-p "The last 3 of 3 entries:" (agentq-test-tool-ok "get_repl_history" '(:limit 50))))
  ;; Beyond the maximum its schema says: refused, saying it.
  (should (equal (plist-get (agentq-test-call "get_repl_history" '(:limit 500)) :content)
                 "Invalid argument 'limit': at most 50, got 500"))
  (should (equal (plist-get (agentq-test-call "get_repl_history" '(:limit "ten")) :content)
                 "Invalid argument 'limit': expected integer, got string"))
  ;; evaluate_lisp records nothing; reset_session forgets everything.
  (agentq-test-eval-ok "(+ 1 1)")
  (should (string-prefix-p "The last 3 of 3" (agentq-test-tool-ok "get_repl_history" '(:limit 10))))
  (agentq-test-call "reset_session" nil)
  (should (string-prefix-p "No error recorded" (agentq-test-tool-ok "get_last_error" nil)))
  (should (string-prefix-p "The REPL history is empty" (agentq-test-tool-ok "get_repl_history" nil))))

(ert-deftest sly-agent-q-repl-tools/over-mcp ()
  (dolist (case '(("eval_form" (:form "(* 6 7)") "=> 42" :false)
                  ("eval_form" (:form "(car 1)") "[ERROR] " t)
                  ("compile_form" (:form "(defun agentq-mcp-compiled (x) x)") "; Compiled with ECL's " :false)
                  ("compile_form" (:form "(defun agentq-mcp-bad (x) (car x 1))") "[ERROR] COMPILE-ERROR" t)))
    (pcase-let ((`(,name ,arguments ,prefix ,is-error) case))
      (let ((response (agentq-test-mcp `(:jsonrpc "2.0" :id 5 :method "tools/call"
                                                  :params (:name ,name :arguments ,arguments)))))
        (should (string-prefix-p prefix (agentq-test-get response "result" "content" 0 "text")))
        (should (eq (agentq-test-get response "result" "isError") is-error)))))
  (should (string-match-p "compile_form (failed): (defun agentq-mcp-bad"
                          (agentq-test-tool-ok "get_repl_history" '(:limit 1)))))

(ert-deftest sly-agent-q-repl-tools/compile-form-reports-the-compilers-findings ()
  (let ((compiled (agentq-test-call "compile_form"
                                    '(:form "(defun agentq-compiled (x)\n  (agentq-nowhere x)\n  (+ agentq-free-var x))"))))
    (should (plist-get compiled :success))
    (should (string-match-p "^\\[warnings\\]$" (plist-get compiled :content)))
    (should (string-match-p "STYLE-WARNING: Variable AGENTQ-FREE-VAR was undefined" (plist-get compiled :content)))
    (should (string-match-p "STYLE-WARNING: Undefined function COMMON-LISP-USER::AGENTQ-NOWHERE, called by COMMON-LISP-USER::AGENTQ-COMPILED"
                            (plist-get compiled :content)))
    (should-not (string-match-p "never used" (plist-get compiled :content)))
    (should (string-match-p "; Compiled with ECL's C compiler (native code) and loaded.\\'" (plist-get compiled :content))))
  ;; Unused variables: bound and never used, unless declared ignored.
  (let ((content (plist-get (agentq-test-call "compile_form"
                                              '(:form "(defun agentq-unused (a b c)\n  (declare (ignore c))\n  (let ((d 1) (e 2))\n    (dolist (x (list a)) (print x))\n    e))"))
                            :content)))
    (should (string-match-p "STYLE-WARNING: The variable B is defined but never used (in COMMON-LISP-USER::AGENTQ-UNUSED)" content))
    (should (string-match-p "STYLE-WARNING: The variable D is defined but never used" content))
    (should-not (string-match-p "variable \\(A\\|C\\|E\\|X\\) is defined" content)))
  ;; Loaded: callable, compiled.
  (agentq-test-call "compile_form" '(:form "(defun agentq-twice (x) (* 2 x))"))
  (should (equal (agentq-test-eval-ok "(list (agentq-twice 21) (compiled-function-p #'agentq-twice))") "=> (42 T)"))
  ;; Errors: wrong argument count, unreadable code; recorded as the last error.
  (let ((failed (agentq-test-call "compile_form" '(:form "(defun agentq-bad (x) (car x 1))"))))
    (should-not (plist-get failed :success))
    (should (equal (plist-get failed :content)
                   "[ERROR] COMPILE-ERROR\nThe code did not compile:\nERROR: Wrong number of arguments for function CAR (line 1)")))
  (should (equal (plist-get (agentq-test-call "compile_form" '(:form "(defun agentq-open (x) (+ x")) :content)
                 "[ERROR] COMPILE-ERROR\nThe code did not compile:\nERROR: Unexpected end of file on the text. (line 1)"))
  (should (string-match-p "\\`Last error (compile_form of (defun agentq-open (x) (\\+ x):"
                          (agentq-test-tool-ok "get_last_error" nil)))
  (should (string-prefix-p "Package NOPE not found."
                           (plist-get (agentq-test-call "compile_form" '(:form "(+ 1 2)" :package "nope")) :content)))
  ;; Without a C compiler on PATH: the bytecodes compiler, which says so.
  (let ((path (agentq-test-eval-ok "(ext:getenv \"PATH\")")))
    (unwind-protect
        (progn
          (agentq-test-eval-ok "(ext:setenv \"PATH\" \"/nonexistent\")")
          (should (string-match-p "Compiled with ECL's bytecodes compiler (no C compiler found) and loaded"
                                  (plist-get (agentq-test-call "compile_form" '(:form "(defun agentq-bytes (x) x)")) :content)))
          (should (equal (agentq-test-eval-ok "(agentq-bytes 7)") "=> 7")))
      (agentq-test-eval-ok (format "(ext:setenv \"PATH\" %s)" (substring path 3))))))

;;; sly-agent-q-repl-tools-test.el ends here
