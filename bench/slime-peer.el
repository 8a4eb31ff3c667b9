;;; slime-peer.el --- Peer benchmark: SLIME -> SBCL round trip  -*- lexical-binding: t; -*-

;; Usage:  emacs -Q --batch -l bench/slime-peer.el
;;
;; Measures the wall-clock round trip of (slime-eval '(cl:+ 1 2)) from
;; Emacs to an SBCL running swank over 127.0.0.1, and prints exactly one
;; line to stdout:
;;
;;   peer: slime-sbcl hot_median_us=.. hot_p99_us=.. cold_median_us=.. cold_p99_us=..
;;         after_10ms_idle_median_us=.. after_10ms_idle_p90_us=.. calls=N
;;
;; or, when SLIME/SBCL/swank are missing or anything goes wrong:
;;
;;   peer: slime-sbcl unavailable reason="..."
;;
;; It always exits 0.  Environment:
;;   SLIME_PEER_CALLS      hot calls (default 2000); cold calls = N/4 (1 ms idle
;;                         before each), N/20 after 10 ms idle
;;   SLIME_PEER_TIMEOUT    global watchdog in seconds (default 120)
;;   SLIME_PEER_SLIME_DIR  directory containing slime.el (default: search)
;;   SLIME_PEER_SBCL       sbcl executable (default: "sbcl" on PATH)
;;   SLIME_PEER_STYLE      swank communication style: unset = swank's default
;;                         (:spawn on threaded SBCL, what M-x slime uses),
;;                         or :fd-handler / :sigio (see README-peers.md)

;;; Code:

(require 'cl-lib)

;; Provided by slime.el, which is loaded at run time from the Debian install.
(defvar slime-contribs)
(defvar slime-protocol-version)
(defvar slime-backend)
(defvar slime-path)
(defvar slime-net-processes)
(declare-function slime-connect "slime")
(declare-function slime-eval "slime")
(declare-function slime-net-close "slime")

(defvar slime-peer--self (or load-file-name buffer-file-name)
  "Absolute path of this file (so the script works from any cwd).")

(defvar slime-peer--done nil "Non-nil once the result line has been printed.")
(defvar slime-peer--sbcl nil "The SBCL subprocess running swank.")
(defvar slime-peer--conn nil "The SLIME network connection.")
(defvar slime-peer--connected nil "Set by `slime-connected-hook'.")

(defun slime-peer--env-int (name default)
  (let ((v (getenv name)))
    (if (and v (string-match-p "\\`[0-9]+\\'" v) (> (string-to-number v) 0))
        (string-to-number v)
      default)))

(defun slime-peer--timeout ()
  (slime-peer--env-int "SLIME_PEER_TIMEOUT" 120))

(defun slime-peer--style ()
  "Swank communication style from SLIME_PEER_STYLE, e.g. \":fd-handler\"."
  (let ((st (getenv "SLIME_PEER_STYLE")))
    (cond ((or (null st) (string= st "")) nil)
          ((member st '(":spawn" ":fd-handler" ":sigio")) st)
          (t (error "bad SLIME_PEER_STYLE %s (use :spawn, :fd-handler or :sigio)" st)))))

(defun slime-peer--say (line)
  "Print LINE to stdout once."
  (unless slime-peer--done
    (setq slime-peer--done t)
    (princ line)
    (terpri)))

(defun slime-peer--unavailable (reason)
  (slime-peer--say
   (format "peer: slime-sbcl unavailable reason=\"%s\""
           (replace-regexp-in-string
            "[\"\n\r\t]+" " " (string-trim (format "%s" reason))))))

(defun slime-peer--cleanup ()
  "Close the SLIME connection and make sure SBCL is gone."
  (ignore-errors
    (when (and (fboundp 'slime-net-close) (boundp 'slime-net-processes))
      (dolist (p slime-net-processes)
        (ignore-errors (slime-net-close p t)))))
  (when (and slime-peer--conn (process-live-p slime-peer--conn))
    (ignore-errors (delete-process slime-peer--conn)))
  (let ((p slime-peer--sbcl))
    (when (and p (process-live-p p))
      ;; SBCL's main thread exits on stdin EOF; give it a moment, then kill.
      (ignore-errors (process-send-eof p))
      (let ((deadline (+ (float-time) 2.0)))
        (while (and (process-live-p p) (< (float-time) deadline))
          (accept-process-output p 0.05)))
      (when (process-live-p p)
        (ignore-errors (signal-process p 'KILL))
        (ignore-errors (delete-process p))))))

(add-hook 'kill-emacs-hook #'slime-peer--cleanup)

;;;; Locating SLIME

(defun slime-peer--slime-dir ()
  "Directory holding slime.el, preferring one with a byte-compiled slime.elc."
  (let* ((env (getenv "SLIME_PEER_SLIME_DIR"))
         (patterns
          (append
           (and env (list (expand-file-name "slime.el" env)))
           '("/usr/share/emacs/site-lisp/elpa/slime-*/slime.el"
             "/usr/share/emacs/site-lisp/elpa-src/slime-*/slime.el"
             "/usr/share/emacs/site-lisp/slime/slime.el"
             "/usr/local/share/emacs/site-lisp/slime/slime.el"
             "~/.emacs.d/elpa/slime-*/slime.el")))
         (found (cl-loop for pat in patterns
                         append (sort (file-expand-wildcards
                                       (expand-file-name pat))
                                      #'string>))))
    (when found
      (file-name-directory
       (or (cl-find-if (lambda (f) (file-exists-p (concat f "c"))) found)
           (car found))))))

;;;; Starting SBCL + swank

(defun slime-peer--sbcl-output ()
  (if (and slime-peer--sbcl (buffer-live-p (process-buffer slime-peer--sbcl)))
      (with-current-buffer (process-buffer slime-peer--sbcl) (buffer-string))
    ""))

(defun slime-peer--start-swank (sbcl loader style deadline)
  "Start SBCL running swank on a free 127.0.0.1 port; return the port.
STYLE is nil (swank default, :spawn on threaded SBCL) or a keyword string."
  (let* ((process-environment (copy-sequence process-environment))
         (cache (or (getenv "XDG_CACHE_HOME") (expand-file-name "~/.cache"))))
    ;; swank-loader compiles fasls via ASDF's output translations
    ;; ($XDG_CACHE_HOME/common-lisp/...).  Fall back to /tmp if unwritable.
    (unless (file-writable-p cache)
      (let ((tmp (expand-file-name
                  (format "slime-peer-cache-%s" (user-uid))
                  temporary-file-directory)))
        (make-directory tmp t)
        (setenv "XDG_CACHE_HOME" tmp)))
    (setq slime-peer--sbcl
          (make-process
           :name "slime-peer-sbcl"
           :buffer (generate-new-buffer " *slime-peer-sbcl*")
           :connection-type 'pipe
           :noquery t
           :coding 'utf-8-unix
           :command
           (list sbcl "--noinform" "--no-sysinit" "--no-userinit"
                 "--disable-debugger"
                 "--eval" (format "(load %S)" loader)
                 "--eval" "(swank-loader:init)"
                 ;; Watchdog: SBCL never outlives the benchmark by much,
                 ;; even if Emacs is SIGKILLed.
                 "--eval" (format "(sb-thread:make-thread (lambda () (sleep %d) (sb-ext:exit :code 3 :abort t)) :name \"slime-peer-watchdog\")"
                                  (+ 30 (slime-peer--timeout)))
                 "--eval" (format "(format t \"~&SLIME-PEER-PORT=~D~%%\" (swank:create-server :port 0 :interface \"127.0.0.1\" :dont-close nil%s))"
                                  (if style (concat " :style " style) ""))
                 "--eval" "(finish-output)"
                 ;; Main thread: exit as soon as Emacs closes our stdin (or dies).
                 "--eval" "(loop (unless (read-line *standard-input* nil nil) (sb-ext:exit :code 0 :abort t)))")))
    (let (port)
      (while (not port)
        (let ((out (slime-peer--sbcl-output)))
          (cond
           ((string-match "^SLIME-PEER-PORT=\\([0-9]+\\)" out)
            (setq port (string-to-number (match-string 1 out))))
           ((not (process-live-p slime-peer--sbcl))
            (error "sbcl exited while loading swank: %s"
                   (if (string-match "^Unhandled \\([A-Z-]+\\)[^>]*>:[ \t\n]*\\([^\n]*\\)" out)
                       (concat (match-string 1 out) ": " (match-string 2 out))
                     (let ((s (string-trim out)))
                       (substring s (max 0 (- (length s) 200)))))))
           ((> (float-time) deadline)
            (error "timed out waiting for swank to start"))
           (t (accept-process-output slime-peer--sbcl 0.05)))))
      port)))

;;;; Statistics

(defun slime-peer--percentile (sorted p)
  "Nearest-rank percentile P (0-100) of SORTED vector."
  (let* ((n (length sorted))
         (rank (max 1 (min n (ceiling (* (/ p 100.0) n))))))
    (aref sorted (1- rank))))

(defun slime-peer--median (sorted)
  (let ((n (length sorted)))
    (if (cl-oddp n)
        (aref sorted (/ n 2))
      (/ (+ (aref sorted (1- (/ n 2))) (aref sorted (/ n 2))) 2.0))))

(defun slime-peer--measure (n idle)
  "Time N calls of (slime-eval '(cl:+ 1 2)); sleep IDLE seconds before each.
Return a sorted vector of latencies in microseconds."
  (let ((t0s (make-vector n nil))
        (t1s (make-vector n nil))
        (out (make-vector n 0.0)))
    (dotimes (i n)
      (when idle (sleep-for idle))
      (let ((t0 (current-time))
            (r (slime-eval '(cl:+ 1 2))))
        (aset t1s i (current-time))
        (aset t0s i t0)
        (unless (eql r 3) (error "unexpected result %S" r))))
    (dotimes (i n)
      (aset out i (* 1e6 (float-time (time-subtract (aref t1s i) (aref t0s i))))))
    (sort out #'<)))

;;;; Main

(defun slime-peer--main ()
  (let* ((calls (slime-peer--env-int "SLIME_PEER_CALLS" 2000))
         (cold-calls (max 1 (/ calls 4)))
         (sbcl (or (executable-find (or (getenv "SLIME_PEER_SBCL") "sbcl"))
                   (error "sbcl not found (install: %s)"
                          (expand-file-name "install-peers.sh"
                                            (file-name-directory slime-peer--self)))))
         (dir (or (slime-peer--slime-dir)
                  (error "slime.el not found (Debian package slime)")))
         (deadline (+ (float-time) 60)))
    (add-to-list 'load-path (directory-file-name dir))
    (let ((inhibit-message t))
      (require 'slime))
    ;; Core SLIME only: no REPL/fancy contribs (Debian defaults to slime-fancy).
    (setq slime-contribs nil)
    (setq slime-protocol-version 'ignore)
    (add-hook 'slime-connected-hook (lambda () (setq slime-peer--connected t)))
    (let ((loader (expand-file-name slime-backend slime-path)))
      (unless (file-readable-p loader)
        (error "swank-loader.lisp not found at %s (Debian package cl-swank)"
               loader))
      (let ((port (slime-peer--start-swank sbcl loader (slime-peer--style) deadline)))
        ;; Batch mode: never prompt (version mismatch, "close old connections").
        (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) t))
                  ((symbol-function 'yes-or-no-p) (lambda (&rest _) t))
                  (inhibit-message t))
          (setq slime-peer--conn (slime-connect "127.0.0.1" port))
          (let ((cdeadline (+ (float-time) 30)))
            (while (not slime-peer--connected)
              (unless (process-live-p slime-peer--conn)
                (error "swank connection closed during handshake"))
              (when (> (float-time) cdeadline)
                (error "timed out waiting for SLIME connection"))
              (accept-process-output nil 0.05))))))
    (with-temp-buffer
      ;; Empty buffer: slime-current-package finds no in-package form.
      (slime-peer--measure 200 nil)                 ; warm-up
      (let ((hot (slime-peer--measure calls nil))
            (cold (slime-peer--measure cold-calls 0.001))
            ;; As an agent's calls come, as bench.el's evaluate_after_10ms_idle.
            (idle (slime-peer--measure (max 1 (/ calls 20)) 0.01)))
        (slime-peer--say
         (format "peer: slime-sbcl hot_median_us=%.1f hot_p99_us=%.1f cold_median_us=%.1f cold_p99_us=%.1f after_10ms_idle_median_us=%.1f after_10ms_idle_p90_us=%.1f calls=%d"
                 (slime-peer--median hot) (slime-peer--percentile hot 99)
                 (slime-peer--median cold) (slime-peer--percentile cold 99)
                 (slime-peer--median idle) (slime-peer--percentile idle 90)
                 calls))))))

(let ((watchdog
       (run-at-time (slime-peer--timeout) nil
                    (lambda ()
                      (slime-peer--unavailable "global timeout")
                      (slime-peer--cleanup)
                      (kill-emacs 0)))))
  (condition-case err
      (slime-peer--main)
    (t (slime-peer--unavailable (error-message-string err))))
  (cancel-timer watchdog)
  (slime-peer--cleanup)
  (kill-emacs 0))

;;; slime-peer.el ends here
