;;;; package.lisp — the AGENT-Q package inside the embedded ECL.
;;;;
;;;; Compiled to native code at build time and linked into the Emacs module
;;;; (see cmake/runtime.cmake), so nothing here is interpreted on the hot path.

(defpackage "AGENT-Q"
  (:use "CL")
  (:export "*SESSION-PACKAGE*"
           "EVALUATE-STRING"
           "EXIT-INTERCEPTED"
           "OPERATION-REFUSED"
           ;; The tool API is exported by tools.lisp (+TOOL-API+).
           "TOOL-DEFINITION-ERROR"
           "EVAL-IN-EMACS"
           "EMACS-ERROR"
           "EMACS-ERROR-MESSAGE"))
