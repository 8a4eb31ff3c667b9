;;; bench.el --- sly-agent-q round-trip benchmark -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/bench.el
;; Prints one `bench: NAME key=value …' line per measurement.  Calls are
;; timed one by one; medians and 99th percentiles are in microseconds.

(require 'cl-lib)
(require 'sly-agent-q)
;; The calls measured are the person's own (as from the REPL): an agent's
;; code is read first, which bench/hot-process.el measures apart.
(setq sly-agent-q-call-origin "user")
;; The module loads at its first call; first_result_ms is the runtime's
;; boot and first evaluation, as when `require' loaded the module.
(sly-agent-q--load-module)

(defvar bench-calls (string-to-number (or (getenv "BENCH_CALLS") "20000")))

(defun bench--percentile (sorted p)
  (aref sorted (min (1- (length sorted)) (floor (* p (length sorted))))))

(defun bench--median (values)
  "The median of VALUES."
  (let ((sorted (sort (vconcat values) #'<)))
    (aref sorted (/ (length sorted) 2))))

(defun bench--report (name times &rest extra)
  (let ((sorted (sort (vconcat times) #'<)))
    (princ (format "bench: %s median_us=%.2f p99_us=%.2f calls=%d%s\n" name
                   (* 1e6 (bench--percentile sorted 0.5)) (* 1e6 (bench--percentile sorted 0.99))
                   (length sorted)
                   (mapconcat (lambda (kv) (format " %s=%s" (car kv) (cdr kv))) extra "")))))

(defmacro bench--time (n &rest body)
  "Time BODY N times, one by one; return the list of durations in seconds."
  `(let ((times nil))
     (dotimes (_ ,n)
       (let ((start (float-time)))
         ,@body
         (push (- (float-time) start) times)))
     times))

(defmacro bench--time-after-idle (n &rest body)
  "Time BODY N times, each after 1 ms idle; return the durations in seconds."
  `(bench--time-after-idle-of 0.001 ,n ,@body))

(defmacro bench--time-after-idle-of (seconds n &rest body)
  "Time BODY N times, each after SECONDS idle; return the durations in seconds."
  `(let ((times nil))
     (dotimes (_ ,n)
       (sleep-for ,seconds)
       (let ((start (float-time)))
         ,@body
         (push (- (float-time) start) times)))
     times))

(let* ((call (list (list :id "b" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))
       (t0 (float-time))
       (first (sly-agent-q-execute-tool-calls call))
       (first-ms (* 1000 (- (float-time) t0)))
       (boot-ms (plist-get (sly-agent-q-runtime-status) :boot-ms))
       (cl-boot-ms (plist-get (sly-agent-q-runtime-status) :cl-boot-ms)))
  (unless (equal (plist-get (car first) :content) "=> 3")
    (error "Unexpected result %S" first))
  (princ (format "bench: ecl_boot boot_ms=%.1f cl_boot_ms=%.1f agent_q_init_ms=%.1f first_result_ms=%.1f target_ms=40\n"
                 boot-ms cl-boot-ms (- boot-ms cl-boot-ms) first-ms))
  ;; Warm up, then back to back ("hot") and after 1 ms idle ("cold").
  (dotimes (_ 2000) (sly-agent-q-execute-tool-calls call))
  (bench--report "evaluate_hot" (bench--time bench-calls (sly-agent-q-execute-tool-calls call))
                 '(target_median_us . 8) '(target_p99_us . 20))
  (bench--report "evaluate_cold" (bench--time-after-idle (/ bench-calls 4) (sly-agent-q-execute-tool-calls call))
                 '(target_median_us . 12)))

(let ((request "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"))
  (dotimes (_ 1000) (sly-agent-q-mcp-request request))
  (bench--report "mcp_tools_list_from_elisp" (bench--time (/ bench-calls 4) (sly-agent-q-mcp-request request))
                 '(target_us . 50)))

(sly-agent-q-define-tool "bench_echo" "Return its argument." '((:name "x" :type :string))
                         :handler (lambda (args) (gethash "x" args)))
(let ((call (list (list :id "e" :name "bench_echo" :arguments (list :x "hi")))))
  (dotimes (_ 1000) (sly-agent-q-execute-tool-calls call))
  (bench--report "elisp_tool_execute" (bench--time bench-calls (sly-agent-q-execute-tool-calls call)))
  ;; The same after 1 ms idle: what Emacs alone pays after sleeping, with no
  ;; thread hand-off at all, to read evaluate_cold against.
  (bench--report "elisp_tool_cold"
                 (bench--time-after-idle (/ bench-calls 4) (sly-agent-q-execute-tool-calls call))))

;; An asynchronous call: from submitting it to its callback, through the
;; runner thread, the worker and the notification pipe's process filter.
;; (Waiting on that process, as Emacs's idle loop does: with a nil process,
;; `accept-process-output' sleeps out its whole timeout.)
(let ((call (list (list :id "a" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))
      (done nil))
  (dotimes (_ 200)
    (setq done nil)
    (sly-agent-q-execute-tool-calls-async call (lambda (_) (setq done t)))
    (while (not done) (accept-process-output sly-agent-q--async-process 0.05)))
  (bench--report "async_round_trip"
                 (bench--time (/ bench-calls 10)
                   (setq done nil)
                   (sly-agent-q-execute-tool-calls-async call (lambda (_) (setq done t)))
                   (while (not done) (accept-process-output sly-agent-q--async-process 0.05)))
                 '(target_median_us . 50)))

;; Calls seconds apart, as an agent makes them: the worker has stopped
;; polling (after 2 ms) and sleeps, and waking it is a futex wake-up, which
;; costs far more on a VM than the call itself.  No target; for the record.
(let ((evaluate (list (list :id "b" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))
      (floor (list (list :id "e" :name "bench_echo" :arguments (list :x "hi")))))
  (bench--report "evaluate_after_10ms_idle"
                 (bench--time-after-idle-of 0.01 (/ bench-calls 40) (sly-agent-q-execute-tool-calls evaluate)))
  (bench--report "elisp_tool_after_10ms_idle"
                 (bench--time-after-idle-of 0.01 (/ bench-calls 40) (sly-agent-q-execute-tool-calls floor)))
  ;; The policy for such calls: a wake-ahead when the call starts arriving
  ;; (`sly-agent-q-runtime-wake-ahead', which a streaming model's tool call
  ;; triggers), here 1 ms before the call, as its last piece would be; and
  ;; plain, in turns, in the same minutes.
  (let ((plain nil) (ahead nil))
    (dotimes (_ (/ bench-calls 40))
      (sleep-for 0.01)
      (let ((start (float-time)))
        (sly-agent-q-execute-tool-calls evaluate)
        (push (- (float-time) start) plain))
      (sleep-for 0.009)
      (sly-agent-q-runtime-wake-ahead)
      (sleep-for 0.001)
      (let ((start (float-time)))
        (sly-agent-q-execute-tool-calls evaluate)
        (push (- (float-time) start) ahead)))
    (bench--report "evaluate_after_10ms_idle_plain" plain)
    (bench--report "evaluate_after_10ms_idle_wake_ahead" ahead '(target_median_us . 60))))

;; What the policy costs while nothing is called: the CPU time of all of
;; this process's threads (the kernel's schedstat, in ns) over a second of
;; idle Emacs, as a share of one CPU: after a call (the worker polls for
;; 2 ms, then sleeps), and after a wake-ahead (it polls for
;; `sly-agent-q-wake-ahead-window').
(defun bench--process-cpu-ns ()
  "CPU time of every thread of this process so far, in nanoseconds."
  (let ((total 0))
    (dolist (task (directory-files "/proc/self/task" nil "\\`[0-9]+\\'") total)
      (with-temp-buffer
        (when (ignore-errors (insert-file-contents (format "/proc/self/task/%s/schedstat" task)) t)
          (setq total (+ total (string-to-number (buffer-substring (point-min) (line-end-position))))))))))

(defun bench--idle-cpu-percent (before)
  "Run BEFORE, then sleep a second: the process's CPU time meanwhile, in % of a CPU."
  (funcall before)
  (let ((start (bench--process-cpu-ns)) (wall (float-time)))
    (sleep-for 1.0)
    (/ (* 100.0 (/ (- (bench--process-cpu-ns) start) 1e9)) (- (float-time) wall))))

(let ((evaluate (list (list :id "b" :name "evaluate_lisp" :arguments (list :code "(+ 1 2)"))))
      (runs 3))
  (princ (format "bench: idle_cpu after_call_percent=%.2f after_wake_ahead_percent=%.2f nothing_percent=%.2f wake_ahead_window_ms=%d target_percent=1 (median of %d seconds each)\n"
                 (bench--median (cl-loop repeat runs collect (bench--idle-cpu-percent (lambda () (sly-agent-q-execute-tool-calls evaluate)))))
                 (bench--median (cl-loop repeat runs collect (bench--idle-cpu-percent #'sly-agent-q-runtime-wake-ahead)))
                 (bench--median (cl-loop repeat runs collect (bench--idle-cpu-percent #'ignore)))
                 (round (* 1000 sly-agent-q-wake-ahead-window)) runs)))

