;;;; capture.lisp — bounded output capture for evaluations.
;;;;
;;;; Evaluated code may print without end ((loop (print 1)) until the
;;;; timeout); a capture stream keeps the first LIMIT characters and counts
;;;; the rest, so output can never exhaust the heap and truncation is always
;;;; reported, never silent.

(in-package "AGENT-Q")

(defclass capture-stream (gray:fundamental-character-output-stream)
  ((buffer :initform (make-array 256 :element-type 'character
                                     :adjustable t :fill-pointer 0)
           :reader capture-buffer)
   (limit :initform 1000000 :accessor capture-limit)
   (dropped :initform 0 :accessor capture-dropped)
   (column :initform 0 :accessor capture-column))
  (:documentation "A character output stream that keeps at most LIMIT characters."))

(defun capture-reset (stream limit)
  "Empty STREAM and let it keep LIMIT characters from now on."
  (setf (fill-pointer (capture-buffer stream)) 0
        (capture-limit stream) limit
        (capture-dropped stream) 0
        (capture-column stream) 0)
  stream)

(defun capture-empty-p (stream)
  (and (zerop (fill-pointer (capture-buffer stream)))
       (zerop (capture-dropped stream))))

(defun capture-contents (stream)
  "The captured text, with a visible marker when characters were dropped."
  (let ((text (coerce (capture-buffer stream) 'simple-string))
        (dropped (capture-dropped stream)))
    (if (plusp dropped)
        (format nil "~A~%[... output truncated: ~D more characters not shown (limit ~D) ...]"
                text dropped (capture-limit stream))
        text)))

(defmethod gray:stream-write-char ((stream capture-stream) char)
  (let ((buffer (capture-buffer stream)))
    (if (< (fill-pointer buffer) (capture-limit stream))
        (vector-push-extend char buffer (max 256 (fill-pointer buffer)))
        (incf (capture-dropped stream))))
  (setf (capture-column stream)
        (if (char= char #\Newline) 0 (1+ (capture-column stream))))
  char)

(defmethod gray:stream-write-string ((stream capture-stream) string &optional (start 0) end)
  (let* ((end (or end (length string)))
         (buffer (capture-buffer stream))
         (room (max 0 (- (capture-limit stream) (fill-pointer buffer))))
         (keep (min room (- end start))))
    (loop for i from start below (+ start keep)
          do (vector-push-extend (char string i) buffer (max 256 (fill-pointer buffer))))
    (incf (capture-dropped stream) (- end start keep))
    (let ((newline (position #\Newline string :start start :end end :from-end t)))
      (setf (capture-column stream)
            (if newline
                (- end newline 1)
                (+ (capture-column stream) (- end start))))))
  string)

(defmethod gray:stream-line-column ((stream capture-stream))
  (capture-column stream))

(defmethod gray:stream-start-line-p ((stream capture-stream))
  (zerop (capture-column stream)))

(defmethod gray:stream-force-output ((stream capture-stream)) nil)
(defmethod gray:stream-finish-output ((stream capture-stream)) nil)
(defmethod gray:stream-clear-output ((stream capture-stream)) nil)
