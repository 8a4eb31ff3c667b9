;;;; capture.lisp — bounded output capture for evaluations.
;;;;
;;;; Evaluated code may print without end ((loop (print 1)) until the
;;;; timeout); a capture keeps the first LIMIT characters and counts the
;;;; rest, so output can never exhaust the heap and truncation is always
;;;; reported, never silent.  The state is a structure, so resetting and
;;;; inspecting it on every evaluation costs no generic-function calls; only
;;;; actual output goes through the Gray stream methods.
;;;;
;;;; A streaming capture (an evaluation the REPL asked for) hands what is
;;;; written to the host at once, through %STREAM-OUTPUT, instead of keeping
;;;; it: the host passes it on to Emacs while the evaluation runs.  The
;;;; limit counts the characters sent.

(in-package "AGENT-Q")

(defstruct (capture (:constructor make-capture ()))
  (buffer (make-array 256 :element-type 'character :adjustable t :fill-pointer 0))
  (limit 1000000 :type fixnum)
  (dropped 0 :type fixnum)
  (column 0 :type fixnum)
  (streaming nil)                       ; T: output goes to the host as written; :COPY: a copy goes too
  (sent 0 :type fixnum))                ; characters sent to the host so far

(defvar *output-written* t
  "NIL only while nothing was written to any output capture since the job's
captures were last emptied (RESET-JOB-STATE): the usual job, which prints
nothing, then neither empties nor inspects them.  Set before anything is
kept, so it errs on the side of T.")

(defclass capture-stream (gray:fundamental-character-output-stream)
  ((capture :initform (make-capture) :reader stream-capture))
  (:documentation "A character output stream that keeps at most LIMIT characters."))

(defun make-capture-stream ()
  "A new CAPTURE-STREAM, made with no INITIALIZE-INSTANCE method run: the
runtime makes these between evaluations, where a method evaluated code
defined on the class (one that loops, or signals) would break the session."
  (let ((stream (allocate-instance (find-class 'capture-stream))))
    (dolist (slot (clos:class-slots (find-class 'capture-stream)))
      (let ((name (clos:slot-definition-name slot))
            (initfunction (clos:slot-definition-initfunction slot)))
        (when initfunction
          (setf (slot-value stream name) (funcall initfunction)))))
    stream))

(declaim (inline capture-reset capture-empty-p))

(defun capture-reset (capture limit)
  "Empty CAPTURE and let it keep LIMIT characters from now on, keeping them."
  (setf (fill-pointer (capture-buffer capture)) 0
        (capture-limit capture) limit
        (capture-dropped capture) 0
        (capture-column capture) 0
        (capture-streaming capture) nil
        (capture-sent capture) 0)
  capture)

(defun capture-empty-p (capture)
  (and (zerop (fill-pointer (capture-buffer capture)))
       (zerop (capture-dropped capture))))

(defun truncation-marker (dropped limit)
  (format nil "[... output truncated: ~D more characters not shown (limit ~D) ...]" dropped limit))

(defun capture-contents (capture)
  "The captured text, with a visible marker when characters were dropped."
  (let ((text (coerce (capture-buffer capture) 'simple-string))
        (dropped (capture-dropped capture)))
    (cond ((zerop dropped) text)
          ((zerop (length text)) (truncation-marker dropped (capture-limit capture))) ; streamed
          (t (format nil "~A~%~A" text (truncation-marker dropped (capture-limit capture)))))))

(defun capture-send (capture output start end)
  "Send OUTPUT (a string from START to END, or a character) to the host for
a streaming CAPTURE, as far as its limit allows, counting the rest as
dropped.  False when the host takes nothing from this thread (only the
worker's output is streamed): the caller then keeps the output as usual."
  (let* ((room (max 0 (- (capture-limit capture) (capture-sent capture))))
         (keep (min room (- end start))))
    (when (or (zerop keep)
              (%stream-output output start (+ start keep)))
      (incf (capture-sent capture) keep)
      (incf (capture-dropped capture) (- end start keep))
      t)))

(defun capture-copy (capture output start end)
  "Send a copy of OUTPUT (a string from START to END, or a character) to
the host for a CAPTURE streaming :COPY, as far as its limit allows; the
capture keeps it as usual."
  (let ((keep (min (max 0 (- (capture-limit capture) (capture-sent capture))) (- end start))))
    (when (and (plusp keep) (%stream-output output start (+ start keep)))
      (incf (capture-sent capture) keep))))

(defun capture-write (capture string start end)
  (setf *output-written* t)
  (when (eq (capture-streaming capture) :copy)
    (capture-copy capture string start end))
  (unless (and (eq (capture-streaming capture) t) (capture-send capture string start end))
    (let* ((buffer (capture-buffer capture))
           (room (max 0 (- (capture-limit capture) (fill-pointer buffer))))
           (keep (min room (- end start))))
      (loop for i from start below (+ start keep)
            do (vector-push-extend (char string i) buffer (max 256 (fill-pointer buffer))))
      (incf (capture-dropped capture) (- end start keep))))
  (let ((newline (position #\Newline string :start start :end end :from-end t)))
    (setf (capture-column capture)
          (if newline
              (- end newline 1)
              (+ (capture-column capture) (- end start))))))

(defmethod gray:stream-write-char ((stream capture-stream) char)
  (setf *output-written* t)
  (let* ((capture (stream-capture stream))
         (buffer (capture-buffer capture)))
    (when (eq (capture-streaming capture) :copy)
      (capture-copy capture char 0 1))
    (cond ((and (eq (capture-streaming capture) t) (capture-send capture char 0 1)))
          ((< (fill-pointer buffer) (capture-limit capture))
           (vector-push-extend char buffer (max 256 (fill-pointer buffer))))
          (t (incf (capture-dropped capture))))
    (setf (capture-column capture)
          (if (char= char #\Newline) 0 (1+ (capture-column capture)))))
  char)

(defmethod gray:stream-write-string ((stream capture-stream) string &optional (start 0) end)
  (capture-write (stream-capture stream) string start (or end (length string)))
  string)

(defmethod gray:stream-line-column ((stream capture-stream))
  (capture-column (stream-capture stream)))

(defmethod gray:stream-start-line-p ((stream capture-stream))
  (zerop (capture-column (stream-capture stream))))

(defmethod gray:stream-force-output ((stream capture-stream)) nil)
(defmethod gray:stream-finish-output ((stream capture-stream)) nil)
(defmethod gray:stream-clear-output ((stream capture-stream)) nil)

;;; The streams an evaluation gets.

(defvar *null-input* (make-string-input-stream ""))
(defvar *null-io* (make-two-way-stream *null-input* (make-broadcast-stream))
  "Bound to the interactive streams: reading gives END-OF-FILE at once,
writing goes nowhere.  There is no terminal behind an embedded Lisp.")

(defvar *stdout* (make-capture-stream))
(defvar *stderr* (make-capture-stream))
(defvar *stdout-capture* (stream-capture *stdout*))
(defvar *stderr-capture* (stream-capture *stderr*))
