;;; tiering-meanwhile.el --- Evaluations beside a background native compile -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/tiering-meanwhile.el [ROUNDS [MODE]]
;;
;; Does a background native compile slow the session's evaluations?  Each
;; round evaluates a batch of 40 new DEFUNs (one gcc run of a few seconds
;; starts in the background), then evaluates two fixed workloads in turns
;; until that compile has ended ("during"), waits for it, and evaluates
;; them as many times again ("quiet").  Two workloads:
;;   small:  (+ 1 2): the round trip of evaluate_lisp;
;;   medium: a bytecodes loop that conses, a few ms of compute.
;; For each call: its round trip from Emacs (float-time, µs), its compute
;; time inside Lisp (the monotonic clock in µs: ECL's internal time has a
;; 1 ms unit) and the collections (GC_get_gc_no) it met.  A call counts as
;; "during" when the compiler thread compiled both when it began and when
;; it ended (of those, "gcc" when gcc ran at both ends).
;; Prints `bench: tiering_meanwhile_WORKLOAD …' lines: median and p90 of
;; each phase, their ratio, and collections per call; `…_split' lines:
;; where a call's time went (the worker's CPU time, the time it waited,
;; of which waiting for a CPU: the kernel's run delay; the time
;; collections held the world stopped); `…_gc' lines: the share of calls
;; that met a collection, and the calls with and without one apart; and
;; `tiering_meanwhile_gc': collections per second and where their time
;; went (stopping the world, marking, restarting it, sweeping), in each
;; phase, and the heap's size.
;;
;; MODE in-session: as the default, but the compiler's Lisp half runs in
;; the session's own heap, not in a compile child (as before 2026-11-26).
;;
;; MODE gcc or spin: no compile in the session; instead, each round, an
;; unrelated process on the CPUs the worker is not pinned to, at nice 10:
;; gcc on the C file ECL makes of such a batch (written by a separate
;; `ecl' first), or a shell loop for 4 s.  "During" is then while it runs.
;; What a compile costs beyond a busy other CPU shows against these.

(require 'cl-lib)
(require 'sly-agent-q)
;; The calls measured are the person's own (as from the REPL): an agent's
;; code is read first, which bench/hot-process.el measures apart.
(setq sly-agent-q-call-origin "user")

(setq sly-agent-q-eval-timeout 600)

(require 'bench-eval (expand-file-name "bench-eval.el" (file-name-directory load-file-name)))

(defconst bench-meanwhile--sampler
  "(defun bench-sample (work)
     \"Run WORK: (phase compute-us collections cpu-us stopped-us delay-us),
PHASE 2 when gcc ran at both ends, 1 when the compiler thread compiled at
both ends, else 0; STOPPED-US the time collections held the world
stopped, DELAY-US the time the worker waited for a CPU.\"
     (let* ((c0 agent-q::*tiering-compiling*) (g0 agent-q::*tiering-in-gcc*)
            (p0 (agent-q::%gc-phase-us)) (d0 (agent-q::%thread-run-delay-us))
            (n0 (agent-q::%gc-count)) (u0 (agent-q::%thread-cpu-us)) (t0 (agent-q::%monotonic-us)))
       (funcall work)
       (let ((t1 (agent-q::%monotonic-us)) (u1 (agent-q::%thread-cpu-us)) (p1 (agent-q::%gc-phase-us))
             (d1 (agent-q::%thread-run-delay-us)))
         (list (cond ((and g0 agent-q::*tiering-in-gcc*) 2)
                     ((and c0 agent-q::*tiering-compiling*) 1)
                     (t 0))
               (- t1 t0) (- (agent-q::%gc-count) n0) (- u1 u0)
               (loop for a in p1 for b in p0 repeat 3 sum (- a b))
               (if (and d0 d1) (- d1 d0) 0)))))"
  "The Lisp side of one sample.")

(defconst bench-meanwhile--workloads
  '((small . "(bench-sample (lambda () (+ 1 2)))")
    (medium . "(bench-sample (lambda () (let ((l '())) (dotimes (i 40000) (push (cons i (* i i)) l)) (reduce #'+ l :key #'cdr))))"))
  "Name → the code evaluated for one sample.")

(defun bench-meanwhile--defuns (round)
  "The text of ROUND's batch of DEFUNs (distinct names each round)."
  (mapconcat
   (lambda (i)
     (format "(defun bench-m%d-%d (x &optional (y %d))
  (let ((acc '()) (h (make-hash-table :test 'equal)))
    (dotimes (i x)
      (let ((key (format nil \"~a-~a\" i y)))
        (setf (gethash key h) (list i (* i y) (string-upcase key)))
        (when (evenp i) (push (cons key (length (gethash key h))) acc))))
    (loop for (k . v) in acc
          when (> v 1) collect (concatenate 'string k (princ-to-string (+ v y))) into out
          finally (return (values out (hash-table-count h) (reduce #'+ (mapcar #'cdr acc)))))))"
             round i i))
   (number-sequence 1 40) "\n"))

(defun bench-meanwhile--sample (code)
  "One sample: (PHASE ROUND-TRIP-US COMPUTE-US COLLECTIONS CPU-US STOPPED-US DELAY-US)."
  (let* ((start (float-time))
         (content (bench-eval code))
         (us (* 1e6 (- (float-time) start))))
    (unless (string-match "=> (\\([0-9]+\\) \\([0-9]+\\) \\([0-9]+\\) \\([0-9]+\\) \\([0-9]+\\) \\([0-9]+\\))" content)
      (error "No sample in %S" content))
    (list (string-to-number (match-string 1 content)) us
          (string-to-number (match-string 2 content))
          (string-to-number (match-string 3 content))
          (string-to-number (match-string 4 content))
          (string-to-number (match-string 5 content))
          (string-to-number (match-string 6 content)))))

(defun bench-meanwhile--compiling-p ()
  (equal (bench-eval "(if (or agent-q::*tiering-compiling* agent-q::*tiering-queue*) t nil)") "=> T"))

(defun bench-meanwhile--gc ()
  "(SECONDS COLLECTIONS GC-MS STOPPING-US MARKING-US STARTING-US
RECLAIMING-US BY-WORKER BY-OTHERS HEAP-BYTES) now."
  (let ((content (bench-eval "(list* (agent-q::%gc-count) (agent-q::%gc-time-ms) (agent-q::%gc-phase-us))")))
    (unless (string-match "=> (\\([0-9 ]+\\))" content)
      (error "No collection counts in %S" content))
    (cons (float-time) (mapcar #'string-to-number (split-string (match-string 1 content))))))

(defun bench-meanwhile--add-gc (totals start)
  "Add the time, collections, GC ms and phase totals since START to TOTALS (a vector)."
  (let ((now (bench-meanwhile--gc)))
    (dotimes (i (length totals)) (cl-incf (aref totals i) (- (nth i now) (nth i start))))))

(defun bench-meanwhile--quantile (values q)
  (if values
      (let ((sorted (sort (copy-sequence values) #'<)))
        (nth (min (1- (length sorted)) (floor (* q (length sorted)))) sorted))
    0))

(defun bench-meanwhile--worker-other-cpus ()
  "The CPUs (a taskset list) the session's worker thread is not pinned
to, or NIL when no thread of this Emacs is pinned to fewer CPUs than the
rest."
  (let ((lists '()))
    (dolist (status (file-expand-wildcards (format "/proc/%d/task/*/status" (emacs-pid))))
      (with-temp-buffer
        (insert-file-contents status)
        (when (re-search-forward "^Cpus_allowed_list:\\s-*\\(.*\\)$" nil t)
          (push (match-string 1) lists))))
    (let* ((all (car (sort (copy-sequence lists) (lambda (a b) (> (length a) (length b))))))
           (pinned (cl-find-if (lambda (l) (not (equal l all))) lists)))
      (when pinned
        (let ((cpus (cl-set-difference (bench-meanwhile--cpus all) (bench-meanwhile--cpus pinned))))
          (and cpus (mapconcat #'number-to-string (sort cpus #'<) ",")))))))

(defun bench-meanwhile--cpus (list)
  "The CPU numbers of a Cpus_allowed_list LIST (\"0-1,3\")."
  (cl-loop for range in (split-string list ",")
           for ends = (mapcar #'string-to-number (split-string range "-"))
           append (number-sequence (car ends) (or (cadr ends) (car ends)))))

(defvar bench-meanwhile--c-dir nil "Where the external mode's C file is.")
(defvar bench-meanwhile--cc nil "The external mode's gcc command (a shell line).")

(defun bench-meanwhile--prepare-c ()
  "Write the C file ECL makes of one batch of DEFUNs (by a separate ECL),
and the gcc line ECL's compiler would run on it."
  (setq bench-meanwhile--c-dir (make-temp-file "bench-meanwhile" t))
  (let ((default-directory (file-name-as-directory bench-meanwhile--c-dir)))
    (with-temp-file "defs.lisp" (insert (bench-meanwhile--defuns 999)))
    (with-temp-buffer
      (unless (eql 0 (call-process "ecl" nil t nil "--norc" "--eval"
                                   "(progn (require :cmp) (let ((*compile-verbose* nil)) (compile-file \"defs.lisp\" :c-file t :h-file t :data-file t)) (format t \"~%CC: ~A ~A ~A -I. \\\"-I~A\\\" -w -c defs.c -o defs.o~%\" c::*cc* c::*cc-flags* c::*cc-optimize* c::*ecl-include-directory*) (ext:quit 0))"))
        (error "ecl failed: %s" (buffer-string)))
      (goto-char (point-min))
      (unless (re-search-forward "^CC: \\(.*\\)$" nil t) (error "No gcc line from ecl: %s" (buffer-string)))
      (setq bench-meanwhile--cc (match-string 1)))))

(defun bench-meanwhile--start-external (mode)
  "Start MODE's process (gcc: ECL's gcc line on a batch's C file; spin: a
shell loop for 4 s) at nice 10 on the CPUs the worker is not pinned to."
  (let* ((other (bench-meanwhile--worker-other-cpus))
         (command (pcase mode
                    ("gcc" bench-meanwhile--cc)
                    ("spin" "end=$(( $(date +%s) + 4 )); while [ $(date +%s) -lt $end ]; do :; done")))
         (default-directory (file-name-as-directory bench-meanwhile--c-dir)))
    (apply #'start-process "bench-external" nil
           `("nice" "-n" "10" ,@(and other (list "taskset" "-c" other)) "sh" "-c" ,command))))

(defun bench-meanwhile-run (rounds &optional mode)
  "ROUNDS rounds; MODE \"tiering\" (the default): a batch of DEFUNs
compiled in the background; \"gcc\" or \"spin\": no compile in the
session, an unrelated process (gcc on the C file of such a batch, or a
shell loop) on the other CPUs meanwhile."
  (setq mode (or mode "tiering"))
  (when (equal mode "in-session")
    (bench-eval "(setf agent-q::*compile-in-child* nil)")
    (setq mode "tiering"))
  (bench-eval bench-meanwhile--sampler)
  (bench-eval "(agent-q::wait-for-native-compiles 120)")
  ;; Warm up (CMP loaded, the sampler native).
  (bench-eval (bench-meanwhile--defuns 0))
  (bench-eval "(agent-q::wait-for-native-compiles 120)")
  (dotimes (_ 20) (dolist (w bench-meanwhile--workloads) (bench-meanwhile--sample (cdr w))))
  (let ((samples (make-hash-table :test 'equal))  ; (workload . phase) → list of samples
        (compile-s '())
        (gc-during (make-vector 9 0)) (gc-quiet (make-vector 9 0)) (heap-start (car (last (bench-meanwhile--gc)))))
    (dotimes (round rounds)
      (let ((start (float-time)) (during 0) (gc-start (bench-meanwhile--gc)))
        (if (equal mode "tiering")
            (progn
              (bench-eval (bench-meanwhile--defuns (1+ round)))
              ;; During: until the compile ended (samples before it began are dropped).
              (while (bench-meanwhile--compiling-p)
                (dolist (w bench-meanwhile--workloads)
                  (let ((s (bench-meanwhile--sample (cdr w))))
                    (when (> (car s) 0)
                      (cl-incf during)
                      (push s (gethash (cons (car w) 'during) samples))
                      (when (= (car s) 2) (push s (gethash (cons (car w) 'gcc) samples))))))))
          ;; The worker and the process kept apart as the session keeps
          ;; its own compiles (a throwaway thread takes the compiler's part).
          (bench-eval "(mp:process-join (mp:process-run-function \"bench pin\" #'agent-q::%keep-off-worker-cpus))")
          (let ((process (bench-meanwhile--start-external mode)))
            (while (process-live-p process)
              (dolist (w bench-meanwhile--workloads)
                (let ((s (bench-meanwhile--sample (cdr w))))
                  (when (process-live-p process)
                    (cl-incf during)
                    (push s (gethash (cons (car w) 'during) samples))))))
            (bench-eval "(agent-q::%release-compile-cpus)")))
        (bench-eval "(agent-q::wait-for-native-compiles 120)")
        (push (- (float-time) start) compile-s)
        (bench-meanwhile--add-gc gc-during gc-start)
        (setq gc-start (bench-meanwhile--gc))
        ;; Quiet: as many calls again, nothing compiling.
        (dotimes (_ (max 10 (/ during (length bench-meanwhile--workloads))))
          (dolist (w bench-meanwhile--workloads)
            (let ((s (bench-meanwhile--sample (cdr w))))
              (when (= (car s) 0)
                (push s (gethash (cons (car w) 'quiet) samples))))))
        (bench-meanwhile--add-gc gc-quiet gc-start)))
    ;; Collections per second and the share of the time spent in them.
    (cl-flet ((rate (v) (let ((n (max 1 (aref v 1))))
                          (format "collections_per_s=%.1f gc_ms_per_s=%.1f by_worker=%d by_others=%d us_per_collection_stopping=%.0f marking=%.0f starting=%.0f reclaiming=%.0f"
                                  (/ (aref v 1) (max 0.001 (aref v 0))) (/ (aref v 2) (max 0.001 (aref v 0)))
                                  (aref v 7) (aref v 8)
                                  (/ (aref v 3) (float n)) (/ (aref v 4) (float n))
                                  (/ (aref v 5) (float n)) (/ (aref v 6) (float n))))))
      (princ (format "bench: tiering_meanwhile_gc quiet %s during_compile %s heap_mb_start=%.1f end=%.1f\n" (rate gc-quiet) (rate gc-during)
                     (/ heap-start 1048576.0) (/ (car (last (bench-meanwhile--gc))) 1048576.0))))
    (dolist (w bench-meanwhile--workloads)
      (let* ((quiet (gethash (cons (car w) 'quiet) samples))
             (during (gethash (cons (car w) 'during) samples))
             (gcc (gethash (cons (car w) 'gcc) samples)))
        (cl-flet ((q (list index p) (bench-meanwhile--quantile (mapcar (lambda (s) (nth index s)) list) p))
                  (gcs (list) (if list (/ (float (apply #'+ (mapcar (lambda (s) (nth 3 s)) list))) (length list)) 0)))
          (princ (format "bench: tiering_meanwhile_%s n_quiet=%d n_during=%d n_gcc=%d rt_us_quiet_p50=%.0f p90=%.0f rt_us_during_p50=%.0f p90=%.0f rt_us_gcc_p50=%.0f compute_us_quiet_p50=%d p90=%d compute_us_during_p50=%d p90=%d compute_us_gcc_p50=%d cpu_us_quiet_p50=%d cpu_us_during_p50=%d ratio_rt_p50=%.2f ratio_rt_p90=%.2f ratio_compute_p50=%.2f gc_per_call_quiet=%.3f during=%.3f compile_s_median=%.1f\n"
                         (car w) (length quiet) (length during) (length gcc)
                         (q quiet 1 0.5) (q quiet 1 0.9) (q during 1 0.5) (q during 1 0.9) (q gcc 1 0.5)
                         (q quiet 2 0.5) (q quiet 2 0.9) (q during 2 0.5) (q during 2 0.9) (q gcc 2 0.5)
                         (q quiet 4 0.5) (q during 4 0.5)
                         (/ (q during 1 0.5) (max 1 (q quiet 1 0.5)))
                         (/ (q during 1 0.9) (max 1 (q quiet 1 0.9)))
                         (/ (float (q during 2 0.5)) (max 1 (q quiet 2 0.5)))
                         (gcs quiet) (gcs during)
                         (bench-meanwhile--quantile compile-s 0.5)))
          ;; Where the time of a call went: on the worker's CPU, waiting
          ;; (compute minus CPU), and held by collections (stopped).
          (cl-flet ((waits (list) (mapcar (lambda (s) (list 0 0 (- (nth 2 s) (nth 4 s)))) list))
                    (mean (list index) (if list (/ (float (apply #'+ (mapcar (lambda (s) (nth index s)) list))) (length list)) 0)))
            (princ (format "bench: tiering_meanwhile_%s_split cpu_us_quiet_p50=%d p90=%d cpu_us_during_p50=%d p90=%d wait_us_quiet_p50=%d p90=%d wait_us_during_p50=%d p90=%d stopped_us_per_call_quiet=%.0f during=%.0f run_delay_us_quiet_p50=%d p90=%d run_delay_us_during_p50=%d p90=%d rt_us_quiet_mean=%.0f during_mean=%.0f ratio_rt_mean=%.2f\n"
                           (car w) (q quiet 4 0.5) (q quiet 4 0.9) (q during 4 0.5) (q during 4 0.9)
                           (q (waits quiet) 2 0.5) (q (waits quiet) 2 0.9) (q (waits during) 2 0.5) (q (waits during) 2 0.9)
                           (mean quiet 5) (mean during 5)
                           (q quiet 6 0.5) (q quiet 6 0.9) (q during 6 0.5) (q during 6 0.9)
                           (mean quiet 1) (mean during 1) (/ (mean during 1) (max 1 (mean quiet 1)))))
            ;; Calls that met a collection and those that did not.
            (cl-flet ((with-gc (list) (cl-remove-if (lambda (s) (zerop (nth 3 s))) list))
                      (without-gc (list) (cl-remove-if-not (lambda (s) (zerop (nth 3 s))) list)))
              (princ (format "bench: tiering_meanwhile_%s_gc share_with_gc_quiet=%.3f during=%.3f gcc=%.3f compute_us_no_gc_quiet_p50=%d p90=%d during_p50=%d p90=%d compute_us_gc_quiet_p50=%d during_p50=%d stopped_us_gc_quiet_p50=%d during_p50=%d\n"
                             (car w)
                             (/ (float (length (with-gc quiet))) (max 1 (length quiet)))
                             (/ (float (length (with-gc during))) (max 1 (length during)))
                             (/ (float (length (with-gc gcc))) (max 1 (length gcc)))
                             (q (without-gc quiet) 2 0.5) (q (without-gc quiet) 2 0.9)
                             (q (without-gc during) 2 0.5) (q (without-gc during) 2 0.9)
                             (q (with-gc quiet) 2 0.5) (q (with-gc during) 2 0.5)
                             (q (with-gc quiet) 5 0.5) (q (with-gc during) 5 0.5))))))))))

(let ((mode (cadr command-line-args-left)))
  (when (member mode '("gcc" "spin")) (bench-meanwhile--prepare-c))
  (unwind-protect
      (bench-meanwhile-run (string-to-number (or (car command-line-args-left) "4")) mode)
    (when bench-meanwhile--c-dir (delete-directory bench-meanwhile--c-dir t))))
(setq command-line-args-left nil)

;;; tiering-meanwhile.el ends here
