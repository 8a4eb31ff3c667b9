;;; serve-emacs.el --- A batch Emacs serving MCP for sdk-client-emacs.test.mjs -*- lexical-binding: t; -*-

;;; Commentary:

;; emacs -Q --batch -L elisp -l tests/mcp/serve-emacs.el
;;
;; Loads sly-agent-q (the module: $SLY_AGENT_Q_MODULE when set), defines a
;; dangerous Elisp tool, scripts the approval (a path "approve-me", or a
;; file approve-me.lisp, is approved, any other denied), opens a buffer
;; only this Emacs has, allows the file tools $AGENTQ_ALLOWED_DIR (when
;; set), starts
;; the MCP server on $AGENTQ_MCP_SOCKET (whose appearing says it is ready)
;; and serves until killed.

;;; Code:

(when (getenv "SLY_AGENT_Q_MODULE")
  (setq sly-agent-q-module-file (getenv "SLY_AGENT_Q_MODULE")))
(require 'sly-agent-q)

(defvar agentq-serve-origins nil
  "The `sly-agent-q-call-origin' of each approval asked, newest first.")

(sly-agent-q-define-tool "sdk_emacs_dangerous" "A dangerous tool defined in Emacs, for the test."
                         '((:name "path" :type :string))
                         :required '("path")
                         :safety-level :dangerous
                         :handler (lambda (args)
                                    (format "ran in Emacs for %s, asked as %s"
                                            (gethash "path" args) (car agentq-serve-origins))))

(setq sly-agent-q-approval-function
      (lambda (_name args)
        (push sly-agent-q-call-origin agentq-serve-origins)
        (if (string-match-p "\\`\\(?:.*/\\)?approve-me\\(?:\\.lisp\\)?\\'" (or (gethash "path" args) ""))
            :approved
          '(:denied "the test's approval function says no"))))


(with-current-buffer (get-buffer-create "agentq-sdk-buffer")
  (insert "only this Emacs has this text"))

(when (getenv "AGENTQ_ALLOWED_DIR")
  (setq sly-agent-q-allowed-directories (list (getenv "AGENTQ_ALLOWED_DIR"))))

(setq sly-agent-q-mcp-socket (getenv "AGENTQ_MCP_SOCKET"))
(sly-agent-q-mcp-server-start)
(message "serve-emacs: serving MCP at %s" sly-agent-q-mcp-socket)
(while t
  (accept-process-output nil 0.1))

;;; serve-emacs.el ends here
