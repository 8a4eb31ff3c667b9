;;; tiering-meanwhile.el --- Evaluations beside a background native compile -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/tiering-meanwhile.el [ROUNDS]
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
;; each phase, their ratio, and collections per call.

(require 'cl-lib)
(require 'sly-agent-q)

(setq sly-agent-q-eval-timeout 600)

(require 'bench-eval (expand-file-name "bench-eval.el" (file-name-directory load-file-name)))

(defconst bench-meanwhile--sampler
  "(defun bench-sample (work)
     \"Run WORK: (phase compute-us collections cpu-us), PHASE 2 when gcc ran at
both ends, 1 when the compiler thread compiled at both ends, else 0.\"
     (let* ((c0 agent-q::*tiering-compiling*) (g0 agent-q::*tiering-in-gcc*)
            (n0 (agent-q::%gc-count)) (u0 (agent-q::%thread-cpu-us)) (t0 (agent-q::%monotonic-us)))
       (funcall work)
       (let ((t1 (agent-q::%monotonic-us)) (u1 (agent-q::%thread-cpu-us)))
         (list (cond ((and g0 agent-q::*tiering-in-gcc*) 2)
                     ((and c0 agent-q::*tiering-compiling*) 1)
                     (t 0))
               (- t1 t0) (- (agent-q::%gc-count) n0) (- u1 u0)))))"
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
  "One sample: (PHASE ROUND-TRIP-US COMPUTE-US COLLECTIONS CPU-US)."
  (let* ((start (float-time))
         (content (bench-eval code))
         (us (* 1e6 (- (float-time) start))))
    (unless (string-match "=> (\\([0-9]+\\) \\([0-9]+\\) \\([0-9]+\\) \\([0-9]+\\))" content)
      (error "No sample in %S" content))
    (list (string-to-number (match-string 1 content)) us
          (string-to-number (match-string 2 content))
          (string-to-number (match-string 3 content))
          (string-to-number (match-string 4 content)))))

(defun bench-meanwhile--compiling-p ()
  (equal (bench-eval "(if (or agent-q::*tiering-compiling* agent-q::*tiering-queue*) t nil)") "=> T"))

(defun bench-meanwhile--gc ()
  "(SECONDS COLLECTIONS GC-MS) now."
  (let ((content (bench-eval "(list (agent-q::%gc-count) (agent-q::%gc-time-ms))")))
    (string-match "=> (\\([0-9]+\\) \\([0-9]+\\))" content)
    (list (float-time) (string-to-number (match-string 1 content)) (string-to-number (match-string 2 content)))))

(defun bench-meanwhile--add-gc (totals start)
  "Add the time, collections and GC ms since START to TOTALS (a vector)."
  (let ((now (bench-meanwhile--gc)))
    (dotimes (i 3) (cl-incf (aref totals i) (- (nth i now) (nth i start))))))

(defun bench-meanwhile--quantile (values q)
  (if values
      (let ((sorted (sort (copy-sequence values) #'<)))
        (nth (min (1- (length sorted)) (floor (* q (length sorted)))) sorted))
    0))

(defun bench-meanwhile-run (rounds)
  (bench-eval bench-meanwhile--sampler)
  (bench-eval "(agent-q::wait-for-native-compiles 120)")
  ;; Warm up (CMP loaded, the sampler native).
  (bench-eval (bench-meanwhile--defuns 0))
  (bench-eval "(agent-q::wait-for-native-compiles 120)")
  (dotimes (_ 20) (dolist (w bench-meanwhile--workloads) (bench-meanwhile--sample (cdr w))))
  (let ((samples (make-hash-table :test 'equal))  ; (workload . phase) → list of samples
        (compile-s '())
        (gc-during (make-vector 3 0)) (gc-quiet (make-vector 3 0)))
    (dotimes (round rounds)
      (let ((start (float-time)) (during 0) (gc-start (bench-meanwhile--gc)))
        (bench-eval (bench-meanwhile--defuns (1+ round)))
        ;; During: until the compile ended (samples before it began are dropped).
        (while (bench-meanwhile--compiling-p)
          (dolist (w bench-meanwhile--workloads)
            (let ((s (bench-meanwhile--sample (cdr w))))
              (when (> (car s) 0)
                (cl-incf during)
                (push s (gethash (cons (car w) 'during) samples))
                (when (= (car s) 2) (push s (gethash (cons (car w) 'gcc) samples)))))))
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
    (cl-flet ((rate (v) (format "collections_per_s=%.1f gc_ms_per_s=%.1f"
                                (/ (aref v 1) (max 0.001 (aref v 0))) (/ (aref v 2) (max 0.001 (aref v 0))))))
      (princ (format "bench: tiering_meanwhile_gc quiet %s during_compile %s\n" (rate gc-quiet) (rate gc-during))))
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
                         (bench-meanwhile--quantile compile-s 0.5))))))))

(bench-meanwhile-run (string-to-number (or (car command-line-args-left) "4")))
(setq command-line-args-left nil)

;;; tiering-meanwhile.el ends here
