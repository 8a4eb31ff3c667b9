;;; sly-agent-q-profile-test.el --- profile_form: where a form's time goes -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; profile_form counts the calls of the session's functions while a form
;; runs, with their inclusive time or allocation, puts every definition
;; back, and evaluates as evaluate_lisp does: an agent's code that
;; touches the world is asked about first.

;;; Code:

(require 'ert)
(require 'sly-agent-q-test-helpers)

(defun agentq-pf-ok (arguments)
  "profile_form with ARGUMENTS, asserted to succeed; its text.  (Not
`agentq-test-tool-ok', which compares two runs: times differ.)"
  (let ((result (agentq-test-call "profile_form" arguments)))
    (should (eq (plist-get result :success) t))
    (plist-get result :content)))

(ert-deftest sly-agent-q-profile/counts-times-and-puts-definitions-back ()
  ;; Bytecodes, so that every call goes through the function's name.
  (unwind-protect
      (progn
        (let ((sly-agent-q-native-tiering nil)) (sly-agent-q--sync-options))
        (agentq-test-eval-ok "(defun agentq-pf-leaf (x) (make-list x))
                              (defun agentq-pf-loop (n) (dotimes (i n) (agentq-pf-leaf 10)) n)
                              (defun agentq-pf-top (n) (agentq-pf-loop n) (agentq-pf-leaf 1) :done)
                              (defun agentq-pf-unused () nil)")
        (let ((sly-agent-q-call-origin "chat")
              (sly-agent-q-approval-function #'agentq-test-fail-if-asked))
          (let ((text (agentq-pf-ok '(:code "(agentq-pf-top 200)"))))
            (should (string-match-p "\\`profile_form (time): the form took [0-9.]+ ms; functions of the session's called: 3 of [0-9]+\\.\n" text))
            (should (string-match-p "^AGENTQ-PF-TOP +1 +[0-9.]+ +[0-9.]+$" text))
            (should (string-match-p "^AGENTQ-PF-LOOP +1 " text))
            (should (string-match-p "^AGENTQ-PF-LEAF +201 " text))
            (should-not (string-match-p "AGENTQ-PF-UNUSED" text))
            ;; The outermost function holds (nearly) all the time.
            (should (string-match-p "\\[result\\]\n=> :DONE\\'" text)))
          (should (string-match-p "^AGENTQ-PF-LEAF +31$"
                                  (agentq-pf-ok '(:code "(agentq-pf-top 30)" :mode "calls"))))
          (should (string-match-p "^AGENTQ-PF-LEAF +11 +[0-9,]+ +[0-9.]+$"
                                  (agentq-pf-ok '(:code "(agentq-pf-top 10)" :mode "alloc"))))
          ;; A failing form: the table, then its [ERROR].
          (let ((result (agentq-test-call "profile_form" '(:code "(progn (agentq-pf-top 1) (error \"late\"))"))))
            (should-not (plist-get result :success))
            ;; (The rows' order follows their times, which may tie.)
            (should (string-match-p "^AGENTQ-PF-LEAF +2 .*\n\\(.+\n\\)*\n\\[result\\]\n\\[ERROR\\] SIMPLE-ERROR\nlate" (plist-get result :content))))
          (should (string-match-p "Invalid argument 'mode': one of \"time\", \"calls\", \"alloc\", \"sample\", got \"bogus\""
                                  (plist-get (agentq-test-call "profile_form" '(:code "(+ 1 2)" :mode "bogus")) :content))))
        ;; Every definition is back, and one the form replaced stays replaced.
        (agentq-pf-ok '(:code "(defun agentq-pf-unused () :new)"))
        (should (equal (agentq-test-eval-ok "(list (agentq-pf-top 3) (agentq-pf-unused)
                                                   (every (lambda (f) (typep (fdefinition f) 'compiled-function))
                                                          '(agentq-pf-leaf agentq-pf-loop agentq-pf-top)))")
                       "=> (:DONE :NEW T)")))
    (sly-agent-q--sync-options)))

(ert-deftest sly-agent-q-profile/an-agents-code-is-asked-about ()
  "profile_form runs code: what touches the world asks, as evaluate_lisp."
  (let* ((asked nil)
         (sly-agent-q-call-origin "chat")
         (sly-agent-q-approval-function (lambda (&rest _) (setq asked t) nil))
         (file (make-temp-name (expand-file-name "agentq-pf-" temporary-file-directory)))
         (result (agentq-test-call "profile_form"
                                   (list :code (format "(with-open-file (s %S :direction :output) (print 1 s))" file)))))
    (should asked)
    (should-not (plist-get result :success))
    (should (string-match-p "\\[ERROR\\] DENIED" (plist-get result :content)))
    (should-not (file-exists-p file))))

;;; Mode sample: the worker's stacks, sampled on its CPU-time clock.

(defun agentq-pf-sample-count (text)
  "The number of samples profile_form's mode sample says it took in TEXT."
  (should (string-match "; \\([0-9]+\\) samples?, one every [0-9]+ us of CPU time asked" text))
  (string-to-number (match-string 1 text)))

(defun agentq-pf-first-row (text)
  "The first function of the table of mode sample's TEXT."
  (should (string-match "^function +self +% +inclusive +%\n\\([^ \n]+\\) +[0-9]+ " text))
  (match-string 1 text))

(defun agentq-pf-self (name text)
  "The self samples of function NAME in mode sample's TEXT, or nil."
  (and (string-match (format "^%s +\\([0-9]+\\) +[0-9.]+ +[0-9]+ +[0-9.]+$" (regexp-quote name)) text)
       (string-to-number (match-string 1 text))))

(defun agentq-pf-inclusive (name text)
  "The inclusive samples of function NAME in mode sample's TEXT, or nil."
  (and (string-match (format "^%s +[0-9]+ +[0-9.]+ +\\([0-9]+\\) +[0-9.]+$" (regexp-quote name)) text)
       (string-to-number (match-string 1 text))))

(defun agentq-pf-sampler-timers ()
  "The thread-directed POSIX timers of this process (the sampler's kind),
as /proc/self/timers lists them."
  (with-temp-buffer
    (insert-file-contents "/proc/self/timers")
    (let ((found 0))
      (while (re-search-forward "^notify: signal/tid" nil t) (setq found (1+ found)))
      found)))

(ert-deftest sly-agent-q-profile/sample-names-a-recursive-hot-spot-first ()
  "Natively compiled (a top-level DEFUN, which the background compiler
compiles before profile_form runs) and bytecodes (a DEFUN inside a LET,
which stays bytecodes): the recursive function is named first, and
counted once per sample however deep it recurses."
  (dolist (case '(("AGENTQ-PF-FIB-NATIVE" "(defun %s (n) (if (< n 2) n (+ (%s (- n 1)) (%s (- n 2)))))" 31)
                  ("AGENTQ-PF-FIB-BYTECODES" "(let () (defun %s (n) (if (< n 2) n (+ (%s (- n 1)) (%s (- n 2))))))" 26)))
    (pcase-let* ((`(,name ,definition ,n) case)
                 (text (progn
                         (agentq-test-eval-ok (format definition name name name))
                         (agentq-pf-ok (list :code (format "(%s %d)" name n) :mode "sample"))))
                 (samples (agentq-pf-sample-count text)))
      (should (> samples 0))
      (should (equal (agentq-pf-first-row text) name))
      ;; Nearly every sample is in it, innermost.
      (should (>= (* 2 (agentq-pf-self name text)) samples))
      (should (<= (agentq-pf-inclusive name text) samples))
      (should (string-match-p "\\[result\\]\n=> [0-9]+\\'" text)))))

(ert-deftest sly-agent-q-profile/sample-sees-ecls-own-functions ()
  "SORT is ECL's (no wrapper of the session's could count it): sampling
finds it on the stack, with the predicate it calls."
  (let* ((text (agentq-pf-ok '(:code "(let ((list (loop repeat 300000 collect (random 1000000))))
                                         (length (sort list #'<)))"
                               :mode "sample")))
         (samples (agentq-pf-sample-count text)))
    (should (> samples 0))
    (should (> (or (agentq-pf-inclusive "SORT" text) 0) 0))
    (should (<= (agentq-pf-inclusive "SORT" text) samples))
    (should (string-match-p "\\[result\\]\n=> 300000\\'" text))))

(ert-deftest sly-agent-q-profile/sample-stops-on-timeouts-and-errors ()
  "The sampler's timer exists while the code runs and is gone however it
ended: normally, by the time limit, by an error.  The session serves the
next calls, and nothing interrupts them."
  (agentq-test-eval-ok "(defun agentq-pf-spin (n) (if (< n 2) n (+ (agentq-pf-spin (- n 1)) (agentq-pf-spin (- n 2)))))")
  (should (= (agentq-pf-sampler-timers) 0))
  ;; Seen from inside: the timer is there.
  (should (string-match-p "notify: signal/tid"
                          (agentq-pf-ok '(:code "(with-open-file (s \"/proc/self/timers\")
                                                   (loop for line = (read-line s nil) while line collect line))"
                                          :mode "sample"))))
  (should (= (agentq-pf-sampler-timers) 0))
  ;; An endless loop: the time limit still interrupts it.
  (let ((result (let ((sly-agent-q-eval-timeout 2))
                  (agentq-test-call "profile_form" '(:code "(loop (agentq-pf-spin 12))" :mode "sample")))))
    (should-not (plist-get result :success))
    (should (string-match-p "\\`\\[ERROR\\] TIMEOUT" (plist-get result :content))))
  (should (= (agentq-pf-sampler-timers) 0))
  ;; An error: reported after the table.
  (let ((result (agentq-test-call "profile_form" '(:code "(progn (agentq-pf-spin 25) (error \"late ~A\" 1))" :mode "sample"))))
    (should-not (plist-get result :success))
    (should (string-match-p "\\`profile_form (sample): .*\n\\(.\\|\n\\)*\\[result\\]\n\\[ERROR\\] SIMPLE-ERROR\nlate 1"
                            (plist-get result :content))))
  (should (= (agentq-pf-sampler-timers) 0))
  ;; The next calls: normal, uninterrupted, sampled again when asked.
  (should (equal (agentq-test-eval-ok "(progn (sleep 0.2) (agentq-pf-spin 25))") "=> 75025"))
  (should (equal (agentq-pf-first-row (agentq-pf-ok '(:code "(agentq-pf-spin 30)" :mode "sample")))
                 "AGENTQ-PF-SPIN"))
  (should (= (agentq-pf-sampler-timers) 0))
  ;; Bad intervals: a clear refusal.
  (dolist (interval '(0 999 100001))
    (should (string-match-p "interval_us"
                            (plist-get (agentq-test-call "profile_form" (list :code "(+ 1 2)" :mode "sample" :interval_us interval))
                                       :content)))))

;; sly-agent-q-hostile-test.el's simulated C-g: `quit-flag' set by a wait
;; function, as C-g sets it while Emacs waits for the worker.
(ert-deftest sly-agent-q-profile/sample-stops-on-C-g ()
  "C-g interrupts a sampled endless loop as it interrupts evaluate_lisp;
the sampler is gone once the worker is back, and the next call is normal."
  (agentq-test-eval-ok "(defun agentq-pf-spin-q (n) (if (< n 2) n (+ (agentq-pf-spin-q (- n 1)) (agentq-pf-spin-q (- n 2)))))")
  (let* ((done nil)
         (outcome (condition-case nil
                      (let ((sly-agent-q-wait-functions
                             (list (lambda (seconds)
                                     (when (and (not done) (>= seconds 0.5))
                                       (setq done t quit-flag t))))))
                        (sly-agent-q-execute-tool-calls
                         '((:id "q" :name "profile_form" :arguments (:code "(loop (agentq-pf-spin-q 12))" :mode "sample"))))
                        'returned)
                    (quit 'quitted))))
    (should (eq outcome 'quitted))
    (should-not quit-flag))
  ;; Queued behind the interrupted job: the worker has left it.
  (should (equal (agentq-test-eval-ok "(progn (sleep 0.2) (agentq-pf-spin-q 20))") "=> 6765"))
  (should (= (agentq-pf-sampler-timers) 0))
  (should (equal (agentq-pf-first-row (agentq-pf-ok '(:code "(agentq-pf-spin-q 30)" :mode "sample")))
                 "AGENTQ-PF-SPIN-Q")))

(provide 'sly-agent-q-profile-test)

;;; sly-agent-q-profile-test.el ends here
