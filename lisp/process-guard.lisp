;;;; process-guard.lisp — child processes never get Emacs's terminal, and a
;;;; child the evaluation waits for is ended, with the processes it started,
;;;; when the wait is interrupted.

(in-package "AGENT-Q")

(defun exit-status-word (process code)
  "What C's system() returns for PROCESS that ended with CODE."
  (if (eq (ext:external-process-status process) :exited) (* 256 code) code))

(defvar *sink* (make-broadcast-stream)
  "Where output of ours outside an evaluation goes: nowhere.")

(defun terminal-bound-p (stream direction &optional (depth 0))
  "True when STREAM reads (DIRECTION :INPUT) or writes the process's own
standard input, output or error: Emacs's terminal.  Synonym, two-way, echo
and broadcast streams are looked through."
  (and (< depth 16)
       (typecase stream
         (synonym-stream
          (let ((symbol (synonym-stream-symbol stream)))
            (and (boundp symbol) (terminal-bound-p (symbol-value symbol) direction (1+ depth)))))
         (two-way-stream
          (terminal-bound-p (if (eq direction :input)
                                (two-way-stream-input-stream stream)
                                (two-way-stream-output-stream stream))
                            direction (1+ depth)))
         (echo-stream
          (or (terminal-bound-p (echo-stream-output-stream stream) :output (1+ depth))
              (and (eq direction :input)
                   (terminal-bound-p (echo-stream-input-stream stream) :input (1+ depth)))))
         (broadcast-stream
          (some (lambda (s) (terminal-bound-p s direction (1+ depth))) (broadcast-stream-streams stream)))
         (stream
          (let ((fd (ignore-errors (ext:file-stream-fd stream))))
            (and (integerp fd) (<= 0 fd 2)))))))

(defun child-stream (value default direction)
  "What a child process gets for VALUE of its :INPUT, :OUTPUT or :ERROR
\(DIRECTION).  T means DEFAULT, the current standard stream, as in
EXT:RUN-PROGRAM itself.  Emacs's terminal is replaced by the evaluation's
captured output, or by the null device; so is our sink."
  (let ((stream (if (eq value t) default value)))
    (cond ((not (streamp stream)) value)
          ((eq stream *sink*) nil)
          ((not (terminal-bound-p stream direction)) stream)
          ((and (not (eq direction :input)) (eq (%runtime-thread-p) :worker))
           (if (eq direction :output) *stdout* *stderr*))
          (t nil))))

(defun copied-by-ecl-p (value)
  "True when EXT:RUN-PROGRAM would start a thread to copy VALUE (a stream
with no file descriptor, such as the evaluation's captures or a string
stream) to or from the child."
  (and (streamp value) (not (ignore-errors (ext:file-stream-fd value)))))

(defun drain (pipe)
  "Copy what PIPE's stream holds now to its destination, without waiting.
True at its end.  PIPE is (STREAM DESTINATION . CARRY), CARRY the bytes
of a character the pipe cut in two.  Bytes that are not UTF-8 come out as
U+FFFD, one for each."
  (let ((stream (first pipe)) (destination (second pipe)))
    (loop
      (multiple-value-bind (text rest state) (%read-pipe (ext:file-stream-fd stream) (cddr pipe))
        (setf (cddr pipe) rest)
        (when (plusp (length text))
          (write-string text destination))
        (unless (eq state :more)
          (return (eq state :end)))))))

(defstruct (input-copy (:constructor make-input-copy
                            (stream source
                             &aux (buffer (make-array 65536 :element-type (input-element-type source)
                                                            :fill-pointer 0)))))
  "A Lisp stream SOURCE copied into a child's input pipe STREAM: BUFFER
holds the part read last, of which START is where writing goes on."
  stream source buffer (start 0))

(defun input-element-type (stream)
  "CHARACTER or (UNSIGNED-BYTE 8) as STREAM gives, or NIL for other elements."
  (let ((type (ignore-errors (stream-element-type stream))))
    (cond ((null type) nil)
          ((subtypep type 'character) 'character)
          ((subtypep type '(unsigned-byte 8)) '(unsigned-byte 8)))))

(defun copy-input (copy)
  "Write to COPY's pipe what its source has, as far as the pipe takes it
now.  True when no more is to be written: the source is at its end (the
pipe is then closed, so that the child reads its end) or the child reads
no more."
  (let ((buffer (input-copy-buffer copy)))
    (flet ((done ()
             (mp:without-interrupts (ignore-errors (close (input-copy-stream copy))))
             (return-from copy-input t)))
      (loop
        (when (>= (input-copy-start copy) (length buffer))
          (setf (fill-pointer buffer) (array-dimension buffer 0)
                (fill-pointer buffer) (read-sequence buffer (input-copy-source copy))
                (input-copy-start copy) 0)
          (when (zerop (length buffer))
            (done)))
        (multiple-value-bind (next state)
            (%write-pipe (ext:file-stream-fd (input-copy-stream copy)) buffer (input-copy-start copy))
          (setf (input-copy-start copy) next)
          (case state
            (:full (return nil))
            (:closed (done))))))))

(defun ended-p (process)
  (member (ext:external-process-status process) '(:exited :signaled :signalled :abort :error)))

(defun end-child (process)
  "Terminate PROCESS and the processes it started, kill what lingers, and
reap PROCESS: within about 0.3 s; a fork loop's thousands take about 2 s.
Called with interrupts kept out.  (Ending /bin/sh alone would leave the
make it runs, and make's compilers, running.)"
  (let* ((family '())
         (give-up (+ (get-internal-real-time) internal-time-units-per-second)))
    (flet ((ms-left (at-most)
             (max 0 (min at-most (round (* 1000 (- give-up (get-internal-real-time)))
                                        internal-time-units-per-second))))
           (ended-within-p (ms)
             (loop with deadline = (+ (get-internal-real-time)
                                      (round (* ms internal-time-units-per-second) 1000))
                   when (and (ignore-errors (ended-p process))
                             (not (%any-running-p family)))
                     return t
                   while (< (get-internal-real-time) deadline)
                   do (sleep 0.002))))
      (unless (ended-within-p 0)
        ;; Stopped first, all of them: a stopped process starts no more,
        ;; and once a parent is gone its children belong to init.
        (let ((pid (ignore-errors (ext:external-process-pid process))))
          (when (integerp pid)
            (setf family (%stop-family pid (ms-left 400)))))
        (if family
            (%end-processes family :terminate)
            (ignore-errors (ext:terminate-process process)))
        (unless (ended-within-p (ms-left 100))
          (setf family (%stop-family family (ms-left 200))) ; with any started meanwhile
          (%end-processes family :kill)
          (ignore-errors (ext:terminate-process process t))
          (ended-within-p 100))))))

(defun thread-children ()
  "PIDs of the child processes this thread started and has not reaped.
Linux keeps the list per thread: the children of Emacs, which its main
thread starts, are never among a Lisp thread's."
  (with-open-file (in "/proc/thread-self/children" :if-does-not-exist nil)
    (when in
      (let ((line (or (read-line in nil) "")) (pids '()) (start 0))
        (loop (multiple-value-bind (pid end) (parse-integer line :start start :junk-allowed t)
                (unless pid (return (nreverse pids)))
                (push pid pids)
                (setf start end)))))))

(defun end-orphan (pid)
  "Kill child PID, which no EXT:EXTERNAL-PROCESS holds, with the processes
it started, and reap it (waiting at most a second)."
  (ignore-errors (%end-processes (%stop-family pid 200) :kill))
  (ignore-errors (si:killpid pid ext:+sigkill+))
  (loop repeat 500
        until (handler-case (si:waitpid pid nil) (error () t))
        do (sleep 0.002)))

(defun end-orphans (before)
  "Kill and reap this thread's children that are not among BEFORE."
  (dolist (pid (set-difference (thread-children) before))
    (end-orphan pid)))

(defmacro starting-child (&body body)
  "Run BODY, ECL's EXT:RUN-PROGRAM starting a child, with interrupts let
in (opening a file or FIFO it was given may wait); used inside
MP:WITHOUT-INTERRUPTS.  An interrupt that lands after ECL's fork and
before it returns the process leaves a child nothing holds: that child,
one of this thread's children that was not there before, is killed and
reaped rather than left running or as a zombie."
  (let ((before (gensym "BEFORE")) (returned (gensym "RETURNED")))
    `(let ((,before (thread-children)) (,returned nil))
       (unwind-protect
            (multiple-value-prog1 (mp:with-restored-interrupts ,@body)
              (setf ,returned t))
         (unless ,returned (end-orphans ,before))))))

(defun run-and-wait (original command argv input output error keys)
  "EXT:RUN-PROGRAM with :WAIT T: the child's INPUT, OUTPUT and ERROR,
where they are Lisp streams with no file descriptor (the
evaluation's captures, a string stream), are copied here rather than by
ECL's copying threads, and a non-local exit (C-g, a timeout) ends and
reaps the child.  (ECL 21.2's copying thread can reap the child
itself and then wait for itself forever, and an interrupted wait leaves
the child running with nothing to end it.)"
  ;; Interrupts are let in only while ECL starts the child and while we
  ;; wait for it: not between the two (the child would be left running),
  ;; nor while opening or closing streams (an interrupt inside CLOSE left a
  ;; stream half closed, and its later flush failed), nor in the cleanup.
  (mp:without-interrupts
    (let* ((input-copied (copied-by-ecl-p input))
           (output-copied (copied-by-ecl-p output))
           (error-copied (copied-by-ecl-p error))
           (results
            (let ((null-devices '()))
              ;; ECL opens /dev/null for a NIL stream and leaves it open
              ;; until collected; ours are closed at once.
              (flet ((null-device-for (value direction)
                       (or value
                           (car (push (open "/dev/null" :direction direction :if-exists :append)
                                      null-devices)))))
                (unwind-protect
                     (let ((input (if input-copied :stream (null-device-for input :input)))
                           (output (if output-copied :stream (null-device-for output :output)))
                           (error (if error-copied :stream (null-device-for error :output))))
                       (multiple-value-list
                        (starting-child
                          ;; The first of repeated keys wins: ours come first.
                          (apply original command argv
                                 :input input :output output :error error :wait nil keys))))
                  (mapc #'close null-devices))))))
      (destructuring-bind (&optional stream code process &rest more) results
        (declare (ignore code more))
        (unless process                 ; nothing run (say :IF-OUTPUT-EXISTS NIL)
          (return-from run-and-wait (values-list results)))
        (let* ((ours (remove nil (list (and output-copied
                                            (list* (ext:external-process-output process) output ""))
                                       (and error-copied
                                            (list* (ext:external-process-error-stream process) error "")))))
               (pipes ours)
               (feed (and input-copied (make-input-copy (ext:external-process-input process) input)))
               (copying feed)
               (waited nil))
          (unwind-protect
               (mp:with-restored-interrupts
                 (loop (setf pipes (remove-if (lambda (p) (drain p)) pipes))
                       (when (and copying (copy-input copying))
                         (setf copying nil))
                       (when (or (and (null pipes) (null copying)) (ended-p process))
                         (return))
                       (sleep 0.001))
                 ;; What the child wrote just before it ended (a child of its
                 ;; own may keep the pipe open: not waited for, as in ECL).
                 (mapc (lambda (p) (drain p)) pipes)
                 (let ((code (nth-value 1 (ext:external-process-wait process t))))
                   (setf waited t)
                   (values stream code process)))
            ;; The pipes are ours: closed now rather than when collected, so
            ;; a loop of calls cannot use up the process's descriptors.
            (dolist (pipe ours) (ignore-errors (close (car pipe))))
            (when feed (ignore-errors (close (input-copy-stream feed))))
            (unless waited
              (end-child process))))))))

(defun install-process-guards ()
  "Child processes never get Emacs's terminal.  EXT:RUN-PROGRAM gives them
the evaluation's [stdout]/[stderr] or the null device where they would
inherit it, also when the caller bound *STANDARD-OUTPUT* to the process's
own stream; EXT:SYSTEM runs /bin/sh the same way.  (A child reading
Emacs's terminal takes the keystrokes away from Emacs; one writing to it
scrambles the display.)  A child waited for (:WAIT T) is ended when the
wait is interrupted (C-g, a timeout), with the processes it started (say
the make that /bin/sh runs, and make's compilers).  Not covered: a child
whose input is a Lisp stream with no file descriptor whose elements are
neither characters nor octets, which ECL copies on a thread of its own.
\(ECL's native compiler reads gcc's messages itself and prints them into
the evaluation's output.)"
  (let* ((original (fdefinition 'ext:run-program))
         (guarded (lambda (command argv &rest keys &key (input :stream) (output :stream)
                           (error :output) (wait t) &allow-other-keys)
                    (let ((input (child-stream input *standard-input* :input))
                          (output (child-stream output *standard-output* :output))
                          (error (child-stream error *error-output* :error)))
                      (if (and wait (or (not (copied-by-ecl-p input)) (input-element-type input)))
                          (run-and-wait original command argv input output error keys)
                          (mp:without-interrupts
                            (starting-child
                              ;; The first of repeated keys wins: ours come first.
                              (apply original command argv
                                     :input input :output output :error error keys))))))))
    (setf (fdefinition 'ext:run-program) guarded)
    ;; GUARDED itself, not EXT:RUN-PROGRAM: compiled code may call ECL's
    ;; own function directly, past the new definition.
    (setf (fdefinition 'ext:system)
          (lambda (command)
            (multiple-value-bind (stream code process)
                (funcall guarded "/bin/sh" (list "-c" command) :input nil :output t :error t)
              (declare (ignore stream))
              (exit-status-word process code))))))
