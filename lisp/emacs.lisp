;;;; emacs.lisp — Lisp asks Emacs: EVAL-IN-EMACS.
;;;;
;;;; The Emacs caller that waits for the running evaluation evaluates the
;;;; form on Emacs's main thread and sends back the printed value.  While
;;;; Emacs works on it (a prompt waiting on the person, say) the
;;;; evaluation's time limit is paused; C-g in Emacs quits the evaluation.

(in-package "AGENT-Q")

(define-condition emacs-error (error)
  ((message :initarg :message :reader emacs-error-message))
  (:report (lambda (condition stream)
             (format stream "Emacs: ~A" (emacs-error-message condition))))
  (:documentation "Signalled by EVAL-IN-EMACS when the Emacs Lisp form
signals an error, or when Emacs cannot evaluate it."))

(defun elisp-text (object)
  "OBJECT as Emacs Lisp source text: symbols by their lower-case names
\(keywords keep their colon), strings, numbers and characters in Emacs's
syntax, lists as lists and other vectors as Emacs vectors."
  (with-output-to-string (out)
    (labels ((emit (object depth)
               (when (> depth 200)
                 (error 'emacs-error :message "the form nests too deeply to send to Emacs"))
               (typecase object
                 (null (write-string "nil" out))
                 (keyword (format out ":~(~A~)" (symbol-name object)))
                 (symbol (write-string (string-downcase (symbol-name object)) out))
                 (string (write-char #\" out)
                  (loop for char across object
                        do (when (member char '(#\" #\\)) (write-char #\\ out))
                           (write-char char out))
                  (write-char #\" out))
                 (character (format out "?~:[~;\\~]~C" (member object '(#\( #\) #\\ #\; #\" #\' #\Space)) object))
                 (integer (format out "~D" object))
                 (ratio (emit (float object 1d0) depth))
                 (float (let ((*read-default-float-format* (type-of object)))
                          (format out "~F" object)))
                 (cons (write-char #\( out)
                  (loop for rest = object then (cdr rest)
                        for first = t then nil
                        while (consp rest)
                        do (unless first (write-char #\Space out))
                           (emit (car rest) (1+ depth))
                        finally (when rest
                                  (write-string " . " out)
                                  (emit rest (1+ depth))))
                  (write-char #\) out))
                 (vector (write-char #\[ out)
                  (loop for element across object
                        for first = t then nil
                        do (unless first (write-char #\Space out))
                           (emit element (1+ depth)))
                  (write-char #\] out))
                 (t (error 'emacs-error :message (format nil "~S cannot be sent to Emacs" (type-of object)))))))
      (emit object 0))))

(defun eval-in-emacs (form)
  "Evaluate FORM in the Emacs that waits for this evaluation and return its
value as printed by Emacs (PRIN1-TO-STRING), a string.  FORM is Emacs Lisp
source text, or a Lisp list written as Emacs Lisp (see ELISP-TEXT):
  (eval-in-emacs \"(buffer-name)\")
  (eval-in-emacs '(+ 1 2))                     ; => \"3\"
An Emacs error comes back as the condition EMACS-ERROR.  While Emacs
evaluates FORM the evaluation's time limit is paused; C-g in Emacs quits
the evaluation.  Only the evaluation's own thread may ask."
  (let* ((text (if (stringp form) form (elisp-text form)))
         (ticket (%ask-host text)))
    (unless ticket
      (error 'emacs-error
             :message "no Emacs caller is waiting for this evaluation (only the evaluation's own thread, ~
                       in a call made from Emacs, may ask Emacs)"))
    (multiple-value-bind (ok answer) (await-host-answer ticket)
      (if ok
          answer
          (error 'emacs-error :message answer)))))

(defun await-host-answer (ticket)
  "Wait for the host's answer to TICKET (%ASK-HOST, %ASK-APPROVAL):
\(values OK TEXT).  C-g and the time limit still reach the job meanwhile."
  (unwind-protect
       (loop
         (multiple-value-bind (done ok answer) (%host-answer ticket 20)
           (when done (return (values ok answer)))))
    (%forget-host-request ticket)))
