;;; sly-agent-q-profile-test.el --- profile_form: where a form's time goes -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; profile_form counts the calls of the session's functions while a form
;; runs, with their inclusive time or allocation, puts every definition
;; back, and evaluates as evaluate_lisp does: an agent's code that
;; touches the world is asked about first.

;;; Code:

(require 'ert)
(require 'sly-agent-q-test-helpers)

(defun agentq-pf-ok (arguments)
  "profile_form with ARGUMENTS, asserted to succeed; its text.  (Not
`agentq-test-tool-ok', which compares two runs: times differ.)"
  (let ((result (agentq-test-call "profile_form" arguments)))
    (should (eq (plist-get result :success) t))
    (plist-get result :content)))

(ert-deftest sly-agent-q-profile/counts-times-and-puts-definitions-back ()
  ;; Bytecodes, so that every call goes through the function's name.
  (unwind-protect
      (progn
        (let ((sly-agent-q-native-tiering nil)) (sly-agent-q--sync-options))
        (agentq-test-eval-ok "(defun agentq-pf-leaf (x) (make-list x))
                              (defun agentq-pf-loop (n) (dotimes (i n) (agentq-pf-leaf 10)) n)
                              (defun agentq-pf-top (n) (agentq-pf-loop n) (agentq-pf-leaf 1) :done)
                              (defun agentq-pf-unused () nil)")
        (let ((sly-agent-q-call-origin "chat")
              (sly-agent-q-approval-function #'agentq-test-fail-if-asked))
          (let ((text (agentq-pf-ok '(:code "(agentq-pf-top 200)"))))
            (should (string-match-p "\\`profile_form (time): the form took [0-9.]+ ms; functions of the session's called: 3 of [0-9]+\\.\n" text))
            (should (string-match-p "^AGENTQ-PF-TOP +1 +[0-9.]+ +[0-9.]+$" text))
            (should (string-match-p "^AGENTQ-PF-LOOP +1 " text))
            (should (string-match-p "^AGENTQ-PF-LEAF +201 " text))
            (should-not (string-match-p "AGENTQ-PF-UNUSED" text))
            ;; The outermost function holds (nearly) all the time.
            (should (string-match-p "\\[result\\]\n=> :DONE\\'" text)))
          (should (string-match-p "^AGENTQ-PF-LEAF +31$"
                                  (agentq-pf-ok '(:code "(agentq-pf-top 30)" :mode "calls"))))
          (should (string-match-p "^AGENTQ-PF-LEAF +11 +[0-9,]+ +[0-9.]+$"
                                  (agentq-pf-ok '(:code "(agentq-pf-top 10)" :mode "alloc"))))
          ;; A failing form: the table, then its [ERROR].
          (let ((result (agentq-test-call "profile_form" '(:code "(progn (agentq-pf-top 1) (error \"late\"))"))))
            (should-not (plist-get result :success))
            (should (string-match-p "^AGENTQ-PF-LEAF +2 .*\n\n\\[result\\]\n\\[ERROR\\] SIMPLE-ERROR\nlate" (plist-get result :content))))
          (should (string-match-p "\"mode\" must be time, calls or alloc"
                                  (plist-get (agentq-test-call "profile_form" '(:code "(+ 1 2)" :mode "bogus")) :content))))
        ;; Every definition is back, and one the form replaced stays replaced.
        (agentq-pf-ok '(:code "(defun agentq-pf-unused () :new)"))
        (should (equal (agentq-test-eval-ok "(list (agentq-pf-top 3) (agentq-pf-unused)
                                                   (every (lambda (f) (typep (fdefinition f) 'compiled-function))
                                                          '(agentq-pf-leaf agentq-pf-loop agentq-pf-top)))")
                       "=> (:DONE :NEW T)")))
    (sly-agent-q--sync-options)))

(ert-deftest sly-agent-q-profile/an-agents-code-is-asked-about ()
  "profile_form runs code: what touches the world asks, as evaluate_lisp."
  (let* ((asked nil)
         (sly-agent-q-call-origin "chat")
         (sly-agent-q-approval-function (lambda (&rest _) (setq asked t) nil))
         (file (make-temp-name (expand-file-name "agentq-pf-" temporary-file-directory)))
         (result (agentq-test-call "profile_form"
                                   (list :code (format "(with-open-file (s %S :direction :output) (print 1 s))" file)))))
    (should asked)
    (should-not (plist-get result :success))
    (should (string-match-p "\\[ERROR\\] DENIED" (plist-get result :content)))
    (should-not (file-exists-p file))))

(provide 'sly-agent-q-profile-test)

;;; sly-agent-q-profile-test.el ends here
