;;;; systems.lisp — the load_system tool: ASDF systems loaded into the session;
;;;; describe_system, and list_systems (what is loaded, from memory alone).
;;;;
;;;; ASDF is ECL's bundled one, required on the first call rather than at
;;;; boot (it brings ECL's C compiler with it: 0.3-0.6 s).  Systems are
;;;; found in ASDF's standard source registry, which has Debian's cl-*
;;;; packages (/usr/share/common-lisp/source/), and in the directories of
;;;; the Emacs option sly-agent-q-system-directories, asked of the Emacs
;;;; that waits for the call each time (none when no Emacs waits).
;;;;
;;;; Whose definitions are they?  A system whose .asd lies in one of those
;;;; directories, or that has no file at all, is the user's: its packages
;;;; are the session's, which list_definitions shows and reset_session
;;;; deletes (and ASDF then forgets the system, so that it loads again).
;;;; Any other system (Debian's, ~/common-lisp/'s) becomes part of the
;;;; image, as if it had been there at boot: the packages it makes join
;;;; the boot snapshot of session.lisp, so reset_session keeps it usable.
;;;;
;;;; The ASDF package does not exist when this file is compiled, so ASDF's
;;;; symbols are looked up when the code runs (ASDF-SYMBOL).

(in-package "AGENT-Q")

(defvar *asdf-ready* nil
  "True once ASDF is loaded and our PERFORM method is in place.")
(defvar *image-systems* (make-hash-table :test 'equal)
  "Names of the ASDF systems that count as the image's (see the header).")
(defvar *load-tracking* nil
  "The running load_system's LOAD-TRACKING, or NIL (the PERFORM method
does nothing then: an ASDF:LOAD-SYSTEM in evaluate_lisp is not tracked).")
(defparameter *debian-source-tree* #p"/usr/share/common-lisp/source/"
  "Where Debian's cl-* packages put their sources (common-lisp-controller).")
(defparameter *progress-interval* 0.25
  "Seconds between two messages sent to Emacs about files being loaded.")
(defparameter *load-warning-limit* 100
  "Warnings shown at most; more are counted.")

(defstruct (load-tracking (:constructor make-load-tracking (name user-directories)))
  "What a running load_system knows about itself."
  (name "" :type string)
  ;; Truenames (strings ending in /) of the user's system directories.
  (user-directories '() :type list)
  ;; Packages made inside a PERFORM of a user system: the session's.
  (session-packages '() :type list)
  ;; Internal real time of the last progress message; NIL: none sent.
  (last-progress nil)
  ;; NIL once Emacs could not be reached: no more progress messages.
  (emacs t))

;;;; The fasl cache
;;;;
;;;; Compiled files go under $XDG_CACHE_HOME/sly-agent-q/fasl/ (else
;;;; ~/.cache/…), in a directory named for the implementation and its
;;;; version (ASDF's :IMPLEMENTATION), then the source's own path; each
;;;; file's name carries a hash of the source's content.  An edited
;;;; source is compiled again even when its time stamp says otherwise
;;;; (two writes within one second); the same source is loaded from the
;;;; cache in any later session.

(defun fasl-cache-root ()
  "The fasl cache's directory, as a string ending in /."
  (let ((xdg (ext:getenv "XDG_CACHE_HOME")))
    (concatenate 'string
                 (if (and xdg (plusp (length xdg)) (char= (char xdg 0) #\/))
                     (string-right-trim "/" xdg)
                     (concatenate 'string (string-right-trim "/" (namestring (user-homedir-pathname))) "/.cache"))
                 "/sly-agent-q/fasl/")))

(defvar *content-hashes* (make-hash-table :test 'equal)
  "Source namestring → (write-date size hash), so a file is read once.")

(defun content-hash (file)
  "16 hex digits of a hash of FILE's bytes (two 32-bit FNV-1a hashes)."
  (let* ((name (namestring file))
         (date (file-write-date file))
         (cached (gethash name *content-hashes*)))
    (with-open-file (in file :element-type '(unsigned-byte 8))
      (let ((size (file-length in)))
        (if (and cached (eql (first cached) date) (eql (second cached) size))
            (third cached)
            (let ((buffer (make-array size :element-type '(unsigned-byte 8)))
                  (a 2166136261) (b 3735928559))
              (declare (type (unsigned-byte 32) a b))
              (read-sequence buffer in)
              (loop for byte of-type (unsigned-byte 8) across buffer
                    do (setf a (logand #xffffffff (* (logxor a byte) 16777619))
                             b (logand #xffffffff (* (logxor b byte) 16777619))))
              (let ((hash (format nil "~(~8,'0x~8,'0x~)" a b)))
                (setf (gethash name *content-hashes*) (list date size hash))
                hash)))))))

(defun hashed-output-files (files source)
  "FILES, the compiled files of SOURCE, named with SOURCE's content hash
when they lie in the fasl cache."
  (let ((root (fasl-cache-root))
        (hash (ignore-errors (content-hash source))))
    (if (null hash)
        files
        (mapcar (lambda (file)
                  (let ((name (namestring file)))
                    (if (and (> (length name) (length root)) (string= root name :end2 (length root)))
                        (make-pathname :name (format nil "~A-~A" (pathname-name file) hash) :defaults file)
                        file)))
                files))))

(defun configure-fasl-cache ()
  "Send ASDF's compiled files to the fasl cache (see above)."
  (asdf-call "INITIALIZE-OUTPUT-TRANSLATIONS"
             `(:output-translations
               (t (,(fasl-cache-root) :implementation))
               :ignore-inherited-configuration)))

;;;; ASDF, looked up at run time

(defun asdf-symbol (name &optional (package "ASDF"))
  "The symbol NAME of ASDF's PACKAGE; an error when ASDF lacks it."
  (or (and (find-package package) (find-symbol name package))
      (error "ASDF has no ~A:~A (is ECL's ASDF older than 3.1?)" package name)))

(defun asdf-call (name &rest arguments)
  (apply (asdf-symbol name) arguments))

(defun asdf-own-package-p (package)
  "True for the packages of ASDF and UIOP themselves, which reset_session
keeps even when evaluated code, not load_system, required ASDF."
  (let ((name (package-name package)))
    (and name
         (or (and (> (length name) 5) (member (subseq name 0 5) '("ASDF/" "UIOP/") :test #'string=))
             (member name '("ASDF" "UIOP") :test #'string=)))))

(defun ensure-asdf ()
  "Load ASDF the first time, as part of the image: its packages and the
systems it comes with survive reset_session.  Then put in the PERFORM
method that reports progress and sorts the packages a load makes."
  (unless *asdf-ready*
    (let ((packages (list-all-packages))
          (required-here (not (member "ASDF" *modules* :test #'string-equal))))
      (let ((*load-verbose* nil) (*load-print* nil) (*compile-verbose* nil) (*compile-print* nil))
        (mp:with-lock (*require-lock*) (require "ASDF")))
      (dolist (package (list-all-packages))
        (unless (member package packages)
          (push package *image-packages*)))
      (dolist (name (if required-here
                        (asdf-call "REGISTERED-SYSTEMS")
                        '("asdf" "uiop" "asdf-defsystem" "asdf-package-system")))
        (setf (gethash name *image-systems*) t))
      ;; One method for every operation on every component; it does nothing
      ;; outside load_system.  Evaluated here, where the classes exist.
      (eval `(defmethod ,(asdf-symbol "PERFORM") :around
                 ((operation ,(asdf-symbol "OPERATION")) (component ,(asdf-symbol "COMPONENT")))
               (tracked-perform operation component (lambda () (call-next-method)))))
      ;; Compiled files named with their source's content hash.
      (eval `(defmethod ,(asdf-symbol "OUTPUT-FILES") :around
                 ((operation ,(asdf-symbol "COMPILE-OP")) (component ,(asdf-symbol "CL-SOURCE-FILE")))
               (multiple-value-bind (files translated) (call-next-method)
                 (let ((source (ignore-errors (,(asdf-symbol "COMPONENT-PATHNAME") component))))
                   (values (if (and source translated (probe-file source))
                               (hashed-output-files files source)
                               files)
                           translated)))))
      (configure-fasl-cache)
      (setf *asdf-ready* t))))

;;;; The user's system directories, asked of Emacs

(defun read-emacs-directories (text)
  "The list of directory names in TEXT, Emacs's printed value of
\(sly-agent-q--system-directories): read with the standard readtable and
no #. evaluation; anything but a list of strings is an error."
  (let ((value (with-standard-io-syntax
                 (let ((*read-eval* nil) (*package* (printing-package)))
                   (read-from-string text)))))
    (unless (and (listp value) (every #'stringp value))
      (error "sly-agent-q-system-directories is not a list of directory names: ~A" text))
    value))

(defun user-system-directories ()
  "The directories of sly-agent-q-system-directories, as the Emacs that
waits for this call has it now (so a LET around the call counts), and a
warning text when it could not be read.  No Emacs waiting (MCP from
elsewhere, say): none."
  (let ((text (handler-case (eval-in-emacs "(sly-agent-q--system-directories)")
                (emacs-error () nil))))
    (if (null text)
        (values '() nil)
        (handler-case (values (read-emacs-directories text) nil)
          (error (condition)
            (values '() (format nil "WARNING: ~A; searched without them." (condition-message condition))))))))

(defun prepare-system-search ()
  "Load ASDF, and make it search the user's system directories first (at
each call: the directories may differ from one call to the next).
Returns their truenames, then a warning when they could not be read, then
the directories as the user named them."
  (ensure-asdf)
  (multiple-value-bind (names warning) (user-system-directories)
    (let ((truenames (remove nil (mapcar (lambda (n) (directory-truename n)) names))))
      (configure-source-registry truenames)
      (values truenames warning names))))

(defun directory-truename (name)
  "NAME's truename as a string ending in /, or NIL when it does not exist."
  (let ((found (ignore-errors (probe-file (uiop-directory-pathname name)))))
    (and found (namestring found))))

(defun uiop-directory-pathname (name)
  (funcall (asdf-symbol "ENSURE-DIRECTORY-PATHNAME" "UIOP") name))

(defun under-directory-p (file directories)
  "True when the file FILE (a pathname) lies in one of DIRECTORIES."
  (let ((path (namestring (or (ignore-errors (probe-file file)) file))))
    (some (lambda (directory)
            (and (<= (length directory) (length path))
                 (string= directory path :end2 (length directory))))
          directories)))

(defun configure-source-registry (directories)
  "Search DIRECTORIES (each with its subdirectories) first, then ASDF's
standard configuration; Debian's tree too, should that configuration
miss it (XDG_DATA_DIRS without /usr/share/, say).  Done at every call:
a new .asd in a tree is found, and DIRECTORIES may differ each time."
  (let ((debian (and (probe-file *debian-source-tree*)
                     (notany (lambda (data) (equal (namestring data) "/usr/share/"))
                             (ignore-errors (funcall (asdf-symbol "XDG-DATA-DIRS" "UIOP"))))
                     (list (list :tree *debian-source-tree*)))))
    (asdf-call "INITIALIZE-SOURCE-REGISTRY"
               `(:source-registry
                 ,@(mapcar (lambda (directory) (list :tree (pathname directory))) directories)
                 ,@debian
                 :inherit-configuration))))

;;;; Which compiler

(defun program-on-path-p (program)
  "True when PROGRAM (a name, or a path) is an existing file on PATH."
  (if (find #\/ program)
      (probe-file program)
      (let ((path (or (ext:getenv "PATH") "")))
        (loop for start = 0 then (1+ end)
              for end = (or (position #\: path :start start) (length path))
              for directory = (subseq path start end)
                thereis (probe-file (concatenate 'string (if (string= directory "") "." directory) "/" program))
              while (< end (length path))))))

(defun c-compiler-available-p ()
  "True when the C compiler ECL's compiler runs (C::*CC*, gcc) is found;
the one sly-agent-q-run-compiler runs when C::*CC* is that program
\(USE-COMPILER-KEEPER)."
  (let* ((symbol (find-symbol "*CC*" "C"))
         (cc (and symbol (boundp symbol) (stringp (symbol-value symbol)) (symbol-value symbol)))
         (command (cond ((null cc) "cc")
                        ((equal cc (%compiler-keeper)) (or (ext:getenv "SLY_AGENT_Q_CC") "gcc"))
                        (t cc)))
         (program (subseq command 0 (or (position #\Space command) (length command)))))
    (and (plusp (length program)) (program-on-path-p program) t)))

(defun bytecodes-compiler-p ()
  (and (member :ecl-bytecmp *features*) t))

(defun install-compiler (bytecodes)
  "Make COMPILE, COMPILE-FILE and friends ECL's bytecodes compiler, or its
C compiler, unless they already are."
  (mp:with-lock (*require-lock*)        ; not while the background compiler loads CMP
    (unless (or bytecodes (member "CMP" *modules* :test #'string-equal))
      ;; Loaded now, not by COMPILE-FILE's first call inside the caller's
      ;; handlers: its hundreds of "Duplicate proclamation" warnings are
      ;; its own.
      (handler-bind ((warning #'muffle-warning))
        (require :cmp)))
    (unless (eq bytecodes (bytecodes-compiler-p))
      (if bytecodes (ext:install-bytecodes-compiler) (ext:install-c-compiler)))))

(defmacro with-load-compiler ((bytecodes) &body body)
  "Run BODY with the compiler BYTECODES says, and give the session back
the one it had (also when BODY is interrupted)."
  (let ((before (gensym "BEFORE")))
    `(let ((,before (bytecodes-compiler-p)))
       (unwind-protect
            (progn (install-compiler ,bytecodes) ,@body)
         (install-compiler ,before)))))

;;;; Progress and package bookkeeping, from the PERFORM method

(defun component-text (component)
  (format nil "~{~A~^/~}" (ignore-errors (asdf-call "COMPONENT-FIND-PATH" component))))

(defun send-progress (tracking text)
  "Show TEXT in Emacs's echo area, unless Emacs cannot be reached."
  (when (load-tracking-emacs tracking)
    (setf (load-tracking-last-progress tracking) (get-internal-real-time))
    (handler-case (eval-in-emacs (list 'sly-agent-q--load-progress text))
      (emacs-error () (setf (load-tracking-emacs tracking) nil)))))

(defun note-progress (tracking operation component)
  "Tell Emacs which file is being compiled, and which loaded at most every
*PROGRESS-INTERVAL* seconds.  Without a timer, a message held back could
not be sent later: compiling, the slow step, is always shown, so that a
long compile never shows the file before it."
  (let* ((compiling (typep operation (asdf-symbol "COMPILE-OP")))
         (loading (and (not compiling) (typep operation (asdf-symbol "LOAD-OP"))))
         (last (load-tracking-last-progress tracking)))
    (when (and (or compiling loading)
               (typep component (asdf-symbol "SOURCE-FILE"))
               (or compiling
                   (null last)
                   (>= (- (get-internal-real-time) last)
                       (* *progress-interval* internal-time-units-per-second))))
      (send-progress tracking (format nil "Loading ~A: ~:[loading~;compiling~] ~A"
                                      (load-tracking-name tracking) compiling (component-text component))))))

(defun image-system-p (system directories)
  "True when SYSTEM counts as the image's: it came with ASDF or was loaded
as the image's before, or its .asd is a file outside the user's system
DIRECTORIES."
  (or (gethash (ignore-errors (asdf-call "COMPONENT-NAME" system)) *image-systems*)
      (let ((file (ignore-errors (asdf-call "SYSTEM-SOURCE-FILE" system))))
        (and file (not (under-directory-p file directories))))))

(defun tracked-perform (operation component next)
  "Around every ASDF PERFORM: during load_system, report progress, and
record the packages NEXT makes as the image's or the session's after the
system the component belongs to.  Also when NEXT fails or is interrupted:
a half-loaded Debian system must survive reset_session just the same."
  (let ((tracking *load-tracking*))
    (if (null tracking)
        (funcall next)
        (let ((before (list-all-packages)))
          (note-progress tracking operation component)
          (unwind-protect (funcall next)
            (let* ((system (ignore-errors (asdf-call "COMPONENT-SYSTEM" component)))
                   (image (and system (image-system-p system (load-tracking-user-directories tracking)))))
              (when (and system image)
                (setf (gethash (asdf-call "COMPONENT-NAME" system) *image-systems*) t))
              ;; A source file just loaded: into the xref index, with its lines.
              (when (and system (typep operation (asdf-symbol "LOAD-OP"))
                         (typep component (asdf-symbol "CL-SOURCE-FILE")))
                (let ((file (ignore-errors (asdf-call "COMPONENT-PATHNAME" component))))
                  (when file (xref-index-file file (not image)))))
              (dolist (package (list-all-packages))
                (unless (member package before)
                  (if image
                      (pushnew package *image-packages*)
                      (push package (load-tracking-session-packages tracking)))))))))))

(defun settle-new-packages (tracking packages)
  "After a load: packages made outside any PERFORM (by an .asd file, say)
and not the session's follow the system asked for: the image's unless it
is a user system.  PACKAGES: those that existed before the load."
  ;; REGISTERED-SYSTEM, not FIND-SYSTEM: this runs while an interrupt
  ;; unwinds too, and must not load an .asd file.
  (let* ((system (ignore-errors (asdf-call "REGISTERED-SYSTEM" (load-tracking-name tracking))))
         (image (or (null system) (image-system-p system (load-tracking-user-directories tracking)))))
    (when image
      (dolist (package (list-all-packages))
        (unless (or (member package packages)
                    (member package (load-tracking-session-packages tracking)))
          (pushnew package *image-packages*))))))

(defun forget-session-systems ()
  "For reset_session: make ASDF forget every system that is not the
image's, so that loading one again after its packages were deleted
really loads it."
  (when (and *asdf-ready* (find-package "ASDF"))
    (dolist (name (ignore-errors (asdf-call "REGISTERED-SYSTEMS")))
      (unless (gethash name *image-systems*)
        (ignore-errors (asdf-call "CLEAR-SYSTEM" name))))))

;;;; Warnings and errors

(defun one-line (text)
  "TEXT with each run of whitespace made one space, trimmed."
  (let ((out (make-string-output-stream)) (space nil))
    (loop for char across (string-trim '(#\Space #\Tab #\Newline #\Return) text)
          do (if (member char '(#\Space #\Tab #\Newline #\Return))
                 (setf space t)
                 (progn (when space (write-char #\Space out) (setf space nil))
                        (write-char char out))))
    (get-output-stream-string out)))

(defun file-line (file position)
  "The line number of the first non-blank character at or after character
POSITION of FILE, or NIL."
  (ignore-errors
   (with-open-file (in file :external-format :utf-8)
     (let ((line 1))
       (loop for index from 0
             for char = (read-char in nil nil)
             while char
             do (cond ((and (>= index position) (not (member char '(#\Space #\Tab #\Newline #\Return #\Page))))
                       (return line))
                      ((char= char #\Newline) (incf line))))))))

(defun compiler-message-body (condition)
  "What an ECL compiler message says, without where: its format control
and arguments, or (when those are empty, as for an undefined variable)
the last \"! …\" or \"* …\" line of its report."
  (let ((message (handler-case (apply #'format nil (simple-condition-format-control condition)
                                      (simple-condition-format-arguments condition))
                   (error () ""))))
    (if (plusp (length (string-trim " " message)))
        message
        (let* ((report (condition-message condition))
               (lines (with-input-from-string (in report)
                        (loop for line = (read-line in nil) while line collect (string-trim " " line))))
               (said (find-if (lambda (line) (and (> (length line) 2) (member (char line 0) '(#\! #\*))
                                                   (char= (char line 1) #\Space)))
                              lines :from-end t)))
          (if said (subseq said 2) report)))))

(defun compiler-message-text (condition)
  "An ECL compiler message as one line, MESSAGE (FILE:LINE)."
  (let* ((message (compiler-message-body condition))
         (file (ignore-errors (slot-value condition (find-symbol "FILE" "C"))))
         (position (ignore-errors (slot-value condition 'position)))
         (line (and file (integerp position) (>= position 0) (file-line file position))))
    (format nil "~A~@[ (~A~@[:~D~])~]" (one-line message) (and file (namestring file)) line)))

(defun compiler-message-p (condition)
  (let ((class (find-symbol "COMPILER-MESSAGE" "C")))
    (and class (find-class class nil) (typep condition class))))

(defun asdf-summary-warning-p (condition)
  "UIOP's warnings that a file had warnings: the warnings themselves are shown."
  (some (lambda (name)
          (let ((symbol (and (find-package "UIOP") (find-symbol name "UIOP"))))
            (and symbol (find-class symbol nil) (typep condition symbol))))
        '("COMPILE-WARNED-WARNING" "COMPILE-FAILED-WARNING")))

(defun record-load-warning (condition)
  "Handler for warnings during a load: into [warnings], then muffled."
  (unless (asdf-summary-warning-p condition)
    (push (if (compiler-message-p condition)
              (format nil "~:[WARNING~;STYLE-WARNING~]: ~A"
                      (typep condition 'style-warning) (compiler-message-text condition))
              (format nil "~A: ~A" (type-name condition) (one-line (condition-message condition))))
          *warnings*))
  (let ((restart (find-restart 'muffle-warning condition)))
    (when restart (invoke-restart restart))))

(defun load-type-name (condition)
  "CONDITION's type, as ASDF:NAME or UIOP:NAME when the symbol is exported
from there (its home is one of ASDF's inner packages), else as TYPE-NAME."
  (let ((type (type-of condition)))
    (or (and (symbolp type)
             (loop for package in '("ASDF" "UIOP")
                   thereis (and (find-package package)
                                (multiple-value-bind (symbol status) (find-symbol (symbol-name type) package)
                                  (and (eq symbol type) (eq status :external)
                                       (format nil "~A:~A" package (symbol-name type)))))))
        (type-name condition))))

(defun load-error-text (condition tracking compiler-errors directories)
  "The [ERROR] text of a failed load: the condition, the C compiler's own
error messages (the condition only says that compiling failed), and for a
system that is not found, where it was looked for."
  (with-output-to-string (out)
    (format out "[ERROR] ~A~%~A" (load-type-name condition) (condition-message condition))
    (dolist (text (reverse compiler-errors))
      (format out "~%~A" text))
    (when (and tracking
               (typep condition (asdf-symbol "MISSING-COMPONENT"))
               (equal (ignore-errors (funcall (asdf-symbol "MISSING-REQUIRES") condition))
                      (load-tracking-name tracking)))
      (format out "~%Looked in ASDF's source registry (Debian's ~A, ~~/common-lisp/, …) and in ~
                   sly-agent-q-system-directories (~:[none~;~:*~{~A~^, ~}~])."
              (namestring *debian-source-tree*) directories))))

(defun take-output-sections ()
  "The [stdout], [stderr] and [warnings] sections of what the load printed
and warned, emptied from the job's records (they come after the result
here, not before as CALL-TOOL-HANDLER would put them)."
  (let ((warnings (remove-duplicates *warnings* :test #'string=)))
    (when (> (length warnings) *load-warning-limit*)
      (let ((more (- (length warnings) *load-warning-limit*)))
        (setf warnings (cons (format nil "… and ~D more warnings not shown." more)
                             (last warnings *load-warning-limit*)))))
    (let ((text (let ((*warnings* warnings))
                  (with-output-to-string (out) (output-sections out)))))
      (capture-reset *stdout-capture* (capture-limit *stdout-capture*))
      (capture-reset *stderr-capture* (capture-limit *stderr-capture*))
      (setf *warnings* '())
      (string-right-trim '(#\Newline) text))))

;;;; The tool

(defun load-system-1 (name)
  "Load the system NAME; return its version text, or signal."
  (asdf-call "LOAD-SYSTEM" name)
  ;; Loaded: the session may define more than before.
  (%note-definitions-changed)
  (let ((version (ignore-errors (asdf-call "COMPONENT-VERSION" (asdf-call "FIND-SYSTEM" name)))))
    (if (and (stringp version) (plusp (length version))) version "unknown")))

(defun load-system (arguments)
  "The load_system tool: load the ASDF system named by the argument
\"name\".  Returns \"Loading system: NAME\\nLoaded: NAME (version V)\" and
then any [stdout], [stderr] and [warnings] sections; or NIL and the
[ERROR] text."
  (let ((name (gethash "name" arguments))
        (packages (list-all-packages))
        (compiler-errors '())
        (result nil) (failure nil) (tracking nil) (directories '()))
    (unless (and (stringp name) (plusp (length (string-trim " " name))))
      (return-from load-system
        (values nil (format nil "[ERROR] INVALID-ARGUMENT~%The argument \"name\" must name a system, ~
                                 such as \"alexandria\"."))))
    (setf name (string-trim " " name))
    (handler-case
        (handler-bind ((warning (lambda (c) (record-load-warning c)))
                       (condition (lambda (condition)
                                    ;; ECL's C compiler signals its errors as
                                    ;; conditions, not errors, then fails the file.
                                    (when (and (compiler-message-p condition)
                                               (not (typep condition 'warning))
                                               (not (typep condition (find-symbol "COMPILER-NOTE" "C"))))
                                      (push (compiler-message-text condition) compiler-errors)))))
          (multiple-value-bind (truenames warning names) (prepare-system-search)
            (when warning (push warning *warnings*))
            (setf directories names
                  tracking (make-load-tracking (funcall (asdf-symbol "COERCE-NAME") name) truenames)))
          (let ((*load-tracking* tracking)
                (*package* (printing-package))
                (*readtable* (copy-readtable nil))
                (*read-base* 10) (*read-eval* t) (*read-suppress* nil)
                (*read-default-float-format* 'single-float)
                (*print-readably* nil)
                (*compile-verbose* nil) (*compile-print* nil) (*load-verbose* nil) (*load-print* nil))
            ;; The C compiler's own messages are in [warnings] or the error:
            ;; not printed too.
            (progv (let ((symbol (find-symbol "*SUPPRESS-COMPILER-MESSAGES*" "C")))
                     (and symbol (list symbol)))
                (list (find-symbol "COMPILER-MESSAGE" "C"))
              (with-load-compiler ((not (c-compiler-available-p)))
                (unwind-protect
                     (setf result (load-system-1 name))
                  (settle-new-packages tracking packages))))))
      (error (condition)
        (setf failure (load-error-text condition tracking compiler-errors directories))))
    (when (and tracking (load-tracking-last-progress tracking))
      (send-progress tracking nil))
    (let ((sections (take-output-sections)))
      (flet ((with-sections (text)
               (if (plusp (length sections)) (format nil "~A~%~%~A" text sections) text)))
        (if failure
            (values nil (with-sections failure))
            (with-sections (format nil "Loading system: ~A~%Loaded: ~A (version ~A)"
                                   name (load-tracking-name tracking) result)))))))

(define-built-in-tool "load_system"
  "Load an ASDF system (a Common Lisp library or project) into this Lisp session, compiling it first when needed, so that evaluate_lisp can use its packages and functions. Systems are found in ASDF's standard source registry (Debian cl-* packages in /usr/share/common-lisp/source/, ~/common-lisp/) and in the directories the user configured. Compiled files are cached outside the sources (~/.cache/common-lisp/), so loading again is fast. Returns `Loading system: NAME` and `Loaded: NAME (version V)`, followed by any compiler [warnings]; a system that is not found, or a file that does not compile, gives an [ERROR] report. Libraries loaded from the system registry stay through reset_session; systems from the user's directories are session definitions."
  '((:name "name" :type :string
     :description "The system's name, as in its .asd file, e.g. \"alexandria\" (case does not matter)."))
  :required '("name")
  :safety-level :cautious
  :categories '(:execution :session)
  :own t
  ;; Its time limit is the user's ceiling, as for evaluate_lisp: a first
  ;; compile of a big system may need more, but an interrupted load keeps
  ;; the files compiled so far, so calling again goes on from there.
  :abort-note "The files compiled so far are kept in ASDF's cache: load_system again goes on from there."
  :handler #'load-system)

;;;; describe_system

(defun dependency-name (spec)
  "The system name in a dependency SPEC of DEFSYSTEM's :DEPENDS-ON (a
name, (:VERSION name v), (:FEATURE f name), (:REQUIRE name)), or NIL."
  (cond ((or (stringp spec) (symbolp spec)) (ignore-errors (asdf-call "COERCE-NAME" spec)))
        ((and (consp spec) (member (first spec) '(:version :require))) (dependency-name (second spec)))
        ((and (consp spec) (eq (first spec) :feature)) (dependency-name (third spec)))))

(defun component-lines (component depth out)
  "Write COMPONENT's children to OUT, one a line, indented by DEPTH."
  (dolist (child (ignore-errors (asdf-call "COMPONENT-CHILDREN" component)))
    (format out "~%~vT~A~:[~; (module)~]~@[  ~A~]" (* 2 depth)
            (asdf-call "COMPONENT-NAME" child)
            (typep child (asdf-symbol "MODULE"))
            ;; The file, when its name is not the component's own.
            (let ((path (ignore-errors (asdf-call "COMPONENT-PATHNAME" child))))
              (and path (not (typep child (asdf-symbol "MODULE")))
                   (not (string-equal (pathname-name path) (asdf-call "COMPONENT-NAME" child)))
                   (not (string-equal (file-namestring path) (asdf-call "COMPONENT-NAME" child)))
                   (file-namestring path))))
    (when (typep child (asdf-symbol "MODULE"))
      (component-lines child (1+ depth) out))))

(defun cached-build-text (system)
  "How many of SYSTEM's source files have a compiled file in the cache."
  (let ((files 0) (cached 0)
        (operation (ignore-errors (funcall (asdf-symbol "MAKE-OPERATION") (asdf-symbol "COMPILE-OP")))))
    (labels ((walk (component)
               (dolist (child (ignore-errors (asdf-call "COMPONENT-CHILDREN" component)))
                 (cond ((typep child (asdf-symbol "MODULE")) (walk child))
                       ((typep child (asdf-symbol "CL-SOURCE-FILE"))
                        (incf files)
                        (let ((output (first (ignore-errors (asdf-call "OUTPUT-FILES" operation child)))))
                          (when (and output (probe-file output)) (incf cached))))))))
      (walk system))
    (cond ((zerop files) "no Lisp source files")
          ((= cached files) (format nil "all ~D compiled file~:P are cached: loading is fast" files))
          ((zerop cached) (format nil "none of its ~D file~:P is compiled yet" files))
          (t (format nil "~D of its ~D files are compiled and cached" cached files)))))

(defun describe-system-text (system directories)
  (with-output-to-string (out)
    (let ((name (asdf-call "COMPONENT-NAME" system))
          (file (ignore-errors (asdf-call "SYSTEM-SOURCE-FILE" system))))
      (format out "System ~A~@[ (version ~A)~]~@[: ~A~]" name
              (ignore-errors (asdf-call "COMPONENT-VERSION" system))
              (let ((description (ignore-errors (asdf-call "SYSTEM-DESCRIPTION" system))))
                (and (stringp description) (one-line description))))
      (format out "~%Defined in: ~:[no file (defined in the session)~;~:*~A~]" (and file (namestring file)))
      (format out "~%Whose: ~:[the user's (its definitions are the session's)~;the image's (a library: kept through reset_session)~]"
              (image-system-p system directories))
      (format out "~%Loaded: ~:[no~;yes~]" (ignore-errors (asdf-call "COMPONENT-LOADED-P" system)))
      (let ((dependencies (ignore-errors (asdf-call "SYSTEM-DEPENDS-ON" system))))
        (format out "~%Depends on: ~:[nothing~;~:*~{~A~^, ~}~]"
                (loop for spec in dependencies
                      for dependency = (dependency-name spec)
                      for found = (and dependency (ignore-errors (asdf-call "FIND-SYSTEM" dependency nil)))
                      collect (cond ((null dependency) (princ-to-string spec))
                                    ((null found) (format nil "~A (not found)" dependency))
                                    ((ignore-errors (asdf-call "COMPONENT-LOADED-P" found))
                                     (format nil "~A (loaded)" dependency))
                                    (t (format nil "~A (not loaded)" dependency))))))
      (format out "~%Compiled: ~A" (cached-build-text system))
      (format out "~%Components:")
      (component-lines system 1 out))))

(define-built-in-tool "describe_system"
  "Describe an ASDF system (a library or project) without loading it: its version and description, the .asd file that defines it, whether it is the user's or a library, whether it is loaded, its dependencies (each found, loaded or not), whether a compiled build is cached, and its components (modules and files). Systems are found as load_system finds them. Finding a system reads its .asd file, which is Lisp code, as load_system does."
  '((:name "name" :type :string :description "The system's name, as in its .asd file, e.g. \"alexandria\" (case does not matter)."))
  :required '("name")
  :safety-level :cautious
  :categories '(:execution :session)
  :handler (lambda (arguments)
             (let ((name (string-trim " " (or (gethash "name" arguments) ""))))
               (if (string= name "")
                   (values nil "The argument \"name\" must name a system, such as \"alexandria\".")
                   (handler-case
                       (let* ((directories (prepare-system-search))
                              ;; Finding systems loads their .asd files, quietly.
                              (*load-verbose* nil) (*load-print* nil)
                              (*package* (printing-package)) (*read-eval* t)
                              (system (asdf-call "FIND-SYSTEM" name nil)))
                         (if system
                             (describe-system-text system directories)
                             (values nil (format nil "No system named ~S was found (ASDF's source registry, Debian's cl-* packages, and the user's system directories were searched)." name))))
                     (error (condition)
                       (values nil (format nil "[ERROR] ~A~%~A" (type-name condition)
                                           (one-line (condition-message condition))))))))))

;;;; list_systems
;;;;
;;;; Safe, so that it may back the MCP resource lisp://session/systems:
;;;; it reads ASDF's tables in memory and nothing else.  It never loads
;;;; ASDF, and never calls FIND-SYSTEM (which reads an .asd file, and
;;;; reads it again when it changed) nor ALREADY-LOADED-SYSTEMS (which
;;;; goes from each name through FIND-SYSTEM): each registered system is
;;;; taken by REGISTERED-SYSTEM, and asked with the object itself whether
;;;; it is loaded, its version, and its .asd's name.

(defparameter +list-systems-output-schema+
  "{\"type\":\"object\",\"properties\":{
     \"asdf_loaded\":{\"type\":\"boolean\",\"description\":\"False when ASDF is not loaded in the session: then no system is loaded either.\"},
     \"asdf_version\":{\"type\":\"string\"},
     \"total\":{\"type\":\"integer\",\"description\":\"How many loaded systems match the filter; more than systems holds when cut at limit.\"},
     \"systems\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{
        \"name\":{\"type\":\"string\"},
        \"version\":{\"type\":\"string\",\"description\":\"Absent when the system has none.\"},
        \"directory\":{\"type\":\"string\",\"description\":\"The directory of its .asd file; absent for a system without one (ASDF's own, one defined in the session).\"}},
        \"required\":[\"name\"],\"additionalProperties\":false}},
     \"filter\":{\"type\":\"string\",\"description\":\"The filter asked for, when one was.\"}},
   \"required\":[\"asdf_loaded\",\"total\",\"systems\"]}"
  "The JSON schema of list_systems's structured result.")

(defun loaded-system-entries ()
  "The ASDF systems loaded in the session, sorted by name, each as
\(NAME VERSION DIRECTORY) (VERSION and DIRECTORY strings or NIL), from
ASDF's tables in memory alone: no file is read or probed, no system
searched for.  ASDF must be loaded."
  (let ((entries '()))
    (dolist (name (asdf-call "REGISTERED-SYSTEMS"))
      (let ((system (ignore-errors (asdf-call "REGISTERED-SYSTEM" name))))
        (when (and system (ignore-errors (asdf-call "COMPONENT-LOADED-P" system)))
          (let ((version (ignore-errors (asdf-call "COMPONENT-VERSION" system)))
                (file (ignore-errors (asdf-call "SYSTEM-SOURCE-FILE" system))))
            (push (list (string name)
                        (and (stringp version) (plusp (length version)) version)
                        ;; The .asd's directory, by taking its name apart.
                        (and (pathnamep file)
                             (ignore-errors
                              (namestring (make-pathname :name nil :type nil :version nil :defaults file)))))
                  entries)))))
    (sort entries #'string< :key #'first)))

(defun list-systems (arguments)
  "The list_systems tool: its text and, for a caller that takes one, the
same as a structured result (+LIST-SYSTEMS-OUTPUT-SCHEMA+)."
  (let* ((filter (let ((given (gethash "filter" arguments)))
                   (and (stringp given) (plusp (length (string-trim " " given))) (string-trim " " given))))
         (limit (max 1 (min 1000 (or (gethash "limit" arguments) 100)))))
    (unless (find-package "ASDF")
      (when *want-structure*
        (note-structured-result (append (list :asdf_loaded :false :total 0 :systems (vector))
                                        (and filter (list :filter filter)))))
      (return-from list-systems
        "ASDF is not loaded in this session, so no ASDF system is loaded. list_systems does not load it; load_system does (then the system asked for)."))
    (let* ((asdf-version (let ((version (ignore-errors (asdf-call "ASDF-VERSION"))))
                           (and (stringp version) version)))
           (loaded (loaded-system-entries))
           (matching (if filter
                         (remove-if-not (lambda (entry) (search filter (first entry) :test #'char-equal)) loaded)
                         loaded))
           (shown (subseq matching 0 (min limit (length matching)))))
      (when *want-structure*
        (note-structured-result
         (append (list :asdf_loaded t)
                 (and asdf-version (list :asdf_version asdf-version))
                 (list :total (length matching)
                       :systems (coerce (mapcar (lambda (entry)
                                                  (destructuring-bind (name version directory) entry
                                                    (append (list :name name)
                                                            (and version (list :version version))
                                                            (and directory (list :directory directory)))))
                                                shown)
                                        'vector))
                 (and filter (list :filter filter)))))
      (if (null matching)
          (format nil "No loaded ASDF system~:[~;~:* matches ~S~] (~D loaded~:[~;; list_systems without filter lists them~])."
                  filter (length loaded) (and filter loaded))
          (with-output-to-string (out)
            (format out "~D ASDF system~:P loaded~@[ matching ~S~]~@[ (ASDF ~A)~]~:[~;, showing the first ~D~]:"
                    (length matching) filter asdf-version (> (length matching) limit) limit)
            (loop for (name version directory) in shown
                  do (format out "~%- ~A ~:[(no version)~;~:*~A~] ~:[(no .asd file)~;~:*in ~A~]"
                             name version directory)))))))

(define-built-in-tool "list_systems"
  "List the ASDF systems (libraries and projects) loaded in this Lisp session, by name, each with its version and the directory of its .asd file. Use it to see which libraries the session can use before load_system, or what a project pulled in. Reads only what the session holds in memory: it never loads ASDF, never reads an .asd file, and does not list systems that are installed but not loaded (describe_system and load_system find those). Returns `N ASDF systems loaded (ASDF V):` then `- NAME VERSION in DIRECTORY` lines, or says that ASDF is not loaded."
  '((:name "filter" :type :string
     :description "Only systems whose name contains this text, ignoring case, e.g. \"alex\" (default: every loaded system).")
    (:name "limit" :type :integer :minimum 1 :maximum 1000 :default 100
     :description "At most this many systems (default 100, at most 1000); the first line says how many there are."))
  :safety-level :safe
  :categories '(:introspection :session)
  :own t
  :output-schema +list-systems-output-schema+
  :handler #'list-systems)
