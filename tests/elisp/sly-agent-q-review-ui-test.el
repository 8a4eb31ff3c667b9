;;; sly-agent-q-review-ui-test.el --- Per-hunk review of propose_file_edit -*- lexical-binding: t; -*-

;;; Commentary:

;; The review buffer's marks turned into propose_file_edit's approval
;; answer, and that answer applied by the real tool to a real file: the
;; accepted hunks exactly, nothing when all are rejected, one undo step.

;;; Code:

(require 'sly-agent-q-test-helpers)
(require 'sly-agent-q-review)

(defconst agentq-review--original
  (mapconcat (lambda (n) (format "(defun f%d () %d)\n" n n)) (number-sequence 1 30) ""))

(defun agentq-review--modified ()
  "ORIGINAL with three changes far apart: three hunks."
  (replace-regexp-in-string
   "(defun f25 () 25)" "(defun f25 () :twenty-five)"
   (replace-regexp-in-string
    "(defun f14 () 14)" "(defun f14 () :fourteen)"
    (replace-regexp-in-string "(defun f2 () 2)" "(defun f2 () :two)" agentq-review--original))))

(defun agentq-review--args (path &optional original modified)
  "propose_file_edit's arguments for PATH: ORIGINAL and MODIFIED, or the
file's functions with keywords."
  (let ((args (make-hash-table :test 'equal)))
    (puthash "path" path args)
    (puthash "original" (or original agentq-review--original) args)
    (puthash "modified" (or modified (agentq-review--modified)) args)
    (puthash "description" "Return keywords" args)
    args))

(defun agentq-review--decide (args marks)
  "Review ARGS in the buffer, marking hunk I with (nth I MARKS): ?a, ?r or nil."
  (with-current-buffer (sly-agent-q--review-buffer args)
    (unwind-protect
        (progn
          (cl-loop for mark in marks
                   for start in (sly-agent-q--hunk-starts)
                   do (goto-char start)
                      (pcase mark (?a (sly-agent-q-review-accept)) (?r (sly-agent-q-review-reject))))
          (sly-agent-q--review-decision args))
      (kill-buffer))))

(ert-deftest sly-agent-q-review-ui/hunks-split-and-apply ()
  (let* ((hunks (sly-agent-q--parse-hunks (sly-agent-q--diff-text agentq-review--original (agentq-review--modified)))))
    (should (= (length hunks) 3))
    (should (equal (sly-agent-q--apply-hunks agentq-review--original hunks '(0 1 2)) (agentq-review--modified)))
    (should (equal (sly-agent-q--apply-hunks agentq-review--original hunks '()) agentq-review--original))
    (let ((first-and-last (sly-agent-q--apply-hunks agentq-review--original hunks '(0 2))))
      (should (string-match-p "(defun f2 () :two)" first-and-last))
      (should (string-match-p "(defun f14 () 14)" first-and-last))
      (should (string-match-p "(defun f25 () :twenty-five)" first-and-last))))
  ;; Insertions, deletions, and a last line without a newline.
  (dolist (case '(("a\nb\nc" "a\nX\nb\nc") ("a\nb\nc\n" "b\nc\n") ("" "new\n") ("a\n" "") ("x" "y")))
    (let ((hunks (sly-agent-q--parse-hunks (sly-agent-q--diff-text (car case) (cadr case)))))
      (should (equal (sly-agent-q--apply-hunks (car case) hunks (number-sequence 0 (1- (length hunks))))
                     (cadr case))))))

(ert-deftest sly-agent-q-review-ui/review-decides-propose-file-edit ()
  (let* ((dir (file-name-as-directory (make-temp-file "agentq-review" t)))
         (path (expand-file-name "code.lisp" dir))
         (sly-agent-q-allowed-directories (list dir)))
    (unwind-protect
        (progn
          ;; Accept 1 and 3 of 3: exactly those applied.
          (with-temp-file path (insert agentq-review--original))
          (let* ((args (agentq-review--args path))
                 (decision (agentq-review--decide args '(?a ?r ?a)))
                 (sly-agent-q-approval-function (lambda (_name _args) decision)))
            (should (equal (car decision) :modified))
            (should (equal (plist-get (agentq-test-call "propose_file_edit" (agentq-review--args path)) :content)
                           (concat "partially accepted: 2 of 3 hunks applied\n"
                                   (format "The edit is applied to %s and saved; buffer code.lisp shows it. The other hunks were rejected: do not propose them again." path)))))
          (let ((text (with-temp-buffer (insert-file-contents path) (buffer-string))))
            (should (string-match-p "(defun f2 () :two)" text))
            (should (string-match-p "(defun f14 () 14)" text))
            (should (string-match-p "(defun f25 () :twenty-five)" text)))
          ;; No buffer visited the file: the review opened one, where one
          ;; `undo' takes the edit back.
          (with-current-buffer (get-file-buffer path)
            (should (equal (buffer-string) (with-temp-buffer (insert-file-contents path) (buffer-string))))
            (should-not (buffer-modified-p))
            (primitive-undo 1 (if (car buffer-undo-list) buffer-undo-list (cdr buffer-undo-list)))
            (should (equal (buffer-string) agentq-review--original))
            (set-buffer-modified-p nil)
            (kill-buffer))
          ;; Reject all (or leave all unmarked): denied, the file unchanged.
          (with-temp-file path (insert agentq-review--original))
          (dolist (marks '((?r ?r ?r) (nil nil nil)))
            (let* ((decision (agentq-review--decide (agentq-review--args path) marks))
                   (sly-agent-q-approval-function (lambda (_name _args) decision)))
              (should (eq decision :denied))
              (should (equal (plist-get (agentq-test-call "propose_file_edit" (agentq-review--args path)) :content)
                             "rejected — STOP: do not retry this edit."))
              (should (equal (with-temp-buffer (insert-file-contents path) (buffer-string)) agentq-review--original))))
          ;; Into a visiting buffer: one undo step takes it back.
          (with-current-buffer (find-file-noselect path)
            (buffer-enable-undo)
            (let* ((decision (agentq-review--decide (agentq-review--args path) '(?a ?a ?a)))
                   (sly-agent-q-approval-function (lambda (_name _args) decision)))
              (undo-boundary)
              (should (string-prefix-p "accepted" (plist-get (agentq-test-call "propose_file_edit" (agentq-review--args path)) :content)))
              (should (equal (buffer-string) (agentq-review--modified)))
              ;; One undo step: the changes back to the boundary before the call.
              (primitive-undo 1 (if (car buffer-undo-list) buffer-undo-list (cdr buffer-undo-list)))
              (should (equal (buffer-string) agentq-review--original)))
            (set-buffer-modified-p nil)
            (kill-buffer)))
      (delete-directory dir t))))

(ert-deftest sly-agent-q-review-ui/a-lisp-file-that-would-not-read-shows-check-syntaxs-problems ()
  "A proposed edit of a Lisp file is checked whole with check_syntax
before the person decides: what would not read shows under the hunk
with its line and column in the file as proposed, counted in the header.
A problem the file has already is not the edit's and is not shown; an
edit that reads, or of a file that is not Lisp, shows none."
  (let* ((dir (file-name-as-directory (make-temp-file "agentq-review-syntax" t)))
         (path (expand-file-name "code.lisp" dir))
         (text "(in-package :cl-user)\n(defun g0 () (agentq-review-gone::x))\n(defun g1 () 1)\n(defun g2 () 2)\n")
         (sly-agent-q-allowed-directories (list dir)))
    (unwind-protect
        (progn
          (with-temp-file path (insert text))
          (cl-flet ((review (original modified &optional file)
                      (let ((buffer (sly-agent-q--proposal-review-buffer
                                     (agentq-review--args (or file path) original modified))))
                        (with-current-buffer buffer
                          (unwind-protect
                              (list (mapconcat (lambda (overlay) (overlay-get overlay 'after-string))
                                               (cl-remove-if-not (lambda (overlay) (overlay-get overlay 'sly-agent-q-review-notes))
                                                                 (overlays-in (point-min) (point-max)))
                                               "")
                                    header-line-format)
                            (kill-buffer buffer))))))
            ;; An unknown package prefix and a stray parenthesis in g2.
            (pcase-let ((`(,notes ,header)
                         (review "(defun g2 () 2)\n" "(defun g2 () (list 2 agentq-review-nopkg::y)))\n")))
              (should (string-match-p "SYNTAX: line 4, column 43: .*AGENTQ-REVIEW-NOPKG" notes))
              (should (string-match-p "SYNTAX: line 4, column 46: .*[Uu]nmatched" notes))
              ;; g0's unknown package was there before the edit.
              (should-not (string-match-p "AGENTQ-REVIEW-GONE" notes))
              (should (string-match-p "2 syntax problems" header))
              (should-not (string-match-p "compiler note" header)))
            ;; A string never closed: where it opens.
            (pcase-let ((`(,notes ,_) (review "(defun g1 () 1)\n" "(defun g1 () \"one)\n")))
              (should (string-match-p "SYNTAX: line 3, column 14: a string opened here is never closed" notes)))
            ;; An edit that reads: nothing shown.
            (pcase-let ((`(,notes ,header) (review "(defun g1 () 1)\n" "(defun g1 () :one)\n")))
              (should (equal notes ""))
              (should-not (string-match-p "syntax" header)))
            ;; Not a Lisp file: not checked.
            (let ((other (expand-file-name "notes.txt" dir)))
              (with-temp-file other (insert "(a\n"))
              (pcase-let ((`(,notes ,_) (review "(a\n" "(a))\n" other)))
                (should (equal notes "")))))
          (should (equal (with-temp-buffer (insert-file-contents path) (buffer-string)) text)))
      (delete-directory dir t))))

(ert-deftest sly-agent-q-review-ui/ret-goes-to-the-hunk-in-the-file ()
  (let* ((dir (file-name-as-directory (make-temp-file "agentq-review-goto" t)))
         (path (expand-file-name "code.lisp" dir))
         (args (make-hash-table :test 'equal)))
    (unwind-protect
        (progn
          ;; `original' begins at line 4 of the file; its change is its line 2.
          (with-temp-file path (insert ";; a\n;; b\n;; c\n(defun g1 () 1)\n(defun g2 () 2)\n"))
          (puthash "path" path args)
          (puthash "original" "(defun g1 () 1)\n(defun g2 () 2)\n" args)
          (puthash "modified" "(defun g1 () 1)\n(defun g2 () :two)\n" args)
          (save-window-excursion
            (with-current-buffer (sly-agent-q--review-buffer args)
              (goto-char (car (sly-agent-q--hunk-starts)))
              (sly-agent-q-review-goto)
              (kill-buffer))
            (with-current-buffer (get-file-buffer path)
              ;; The hunk starts at `original''s line 1: the file's line 4.
              (should (= (line-number-at-pos (window-point (get-buffer-window (current-buffer)))) 4))
              (kill-buffer))))
      (delete-directory dir t))))

;;;; Issue 36: editing a hunk, the keys, line numbers, undo, the chat

(defun agentq-review--file-text (path)
  "The text of the file PATH."
  (with-temp-buffer (insert-file-contents path) (buffer-string)))

(defun agentq-review--apply (args decision)
  "The content of propose_file_edit of ARGS, the approval answering DECISION."
  (let ((sly-agent-q-approval-function (lambda (_name _args) decision)))
    (plist-get (agentq-test-call "propose_file_edit" args) :content)))

(defun agentq-review--keys (keys)
  "Type KEYS (a `kbd' string) as a person would, through the keymaps."
  (execute-kbd-macro (kbd keys)))

(ert-deftest sly-agent-q-review-ui/editing-a-hunk-is-an-editing-state ()
  "e edits the hunk in a buffer of its own: q and the review's keys are text
there, C-c C-c puts the edited hunk in the review, accepted, and C-c C-k
drops an edit."
  (agentq-test-with-lisp-file (path agentq-review--original)
    (let* ((args (agentq-review--args path))
           (review (sly-agent-q--review-buffer args)))
      (unwind-protect
          (save-window-excursion
            (switch-to-buffer review)
            ;; Hunk 1: e, then text with every key of the review in it.
            (goto-char (car (sly-agent-q--hunk-starts)))
            (agentq-review--keys "e")
            (should-not (eq (current-buffer) review))
            (should sly-agent-q-hunk-edit-mode)
            (let ((header header-line-format))  ; a string (format-mode-line gives "" in batch)
              (should (string-match-p "Editing hunk 1 of 3" header))
              (should (string-match-p "C-c C-c" header))
              (should (string-match-p "C-c C-k" header)))
            ;; Point is on the hunk's first proposed line.
            (should (equal (thing-at-point 'line t) "(defun f2 () :two)\n"))
            (agentq-review--keys "C-e SPC ; SPC q u i c k SPC q ? SPC a SPC r SPC n SPC p SPC e")
            (should (string-match-p "^(defun f2 () :two) ; quick q\\? a r n p e$" (buffer-string)))
            ;; The review goes on: nothing was marked, nothing ended.
            (with-current-buffer review
              (should (equal (append sly-agent-q--review-states nil) '(nil nil nil))))
            (agentq-review--keys "C-c C-c")
            (should (eq (current-buffer) review))
            (should (equal (append sly-agent-q--review-states nil) '(accepted nil nil)))
            (should (string-match-p "^\\+(defun f2 () :two) ; quick q\\? a r n p e$" (buffer-string)))
            (should-not (string-match-p "^\\+(defun f2 () :two)$" (buffer-string)))
            ;; Hunk 2: an edit dropped with C-c C-k leaves it as proposed.
            (goto-char (nth 1 (sly-agent-q--hunk-starts)))
            (agentq-review--keys "e")
            (should sly-agent-q-hunk-edit-mode)
            (let ((edit (current-buffer)))
              (agentq-review--keys "C-e SPC q q q")
              (agentq-review--keys "C-c C-k")
              (should-not (buffer-live-p edit)))
            (should (eq (current-buffer) review))
            (should (equal (append sly-agent-q--review-states nil) '(accepted nil nil)))
            (should (string-match-p "^\\+(defun f14 () :fourteen)$" (buffer-string)))
            (should-not (string-match-p "qqq" (buffer-string)))
            ;; What is applied is the edited hunk 1, and nothing else.
            (let ((decision (sly-agent-q--review-decision args)))
              (should (string-prefix-p "partially accepted: 1 of 3 hunks applied"
                                       (agentq-review--apply args decision))))
            (let ((text (agentq-review--file-text path)))
              (should (string-match-p "^(defun f2 () :two) ; quick q\\? a r n p e$" text))
              (should (string-match-p "^(defun f14 () 14)$" text))
              (should (string-match-p "^(defun f25 () 25)$" text))
              (should (= (length (split-string text "\n" t)) 30))))
        (kill-buffer review)))))

(ert-deftest sly-agent-q-review-ui/an-edit-may-change-the-rest-of-the-line ()
  "`original' is part of a line; an edit of the text around it on that line
is applied too (the whole line is then replaced)."
  (agentq-test-with-lisp-file (path "(a)\n(list 1 2 3) ; end\n(c)\n")
    (let ((args (agentq-review--args path "1 2 3" "1 2 3 4")))
      (let ((review (sly-agent-q--review-buffer args)))
        (unwind-protect
            (save-window-excursion
              (switch-to-buffer review)
              (goto-char (car (sly-agent-q--hunk-starts)))
              (sly-agent-q-review-edit)
              ;; The hunk's proposed lines: the whole line.
              (should (equal (buffer-string) "(list 1 2 3 4) ; end\n"))
              (goto-char (point-min))
              (delete-region (point) (line-end-position))
              (insert "(vector 1 2 3 4) ; the end")
              (sly-agent-q-hunk-edit-finish)
              (should (eq (current-buffer) review))
              (should (string-prefix-p "accepted" (agentq-review--apply args (sly-agent-q--review-decision args)))))
          (kill-buffer review)))
      (should (equal (agentq-review--file-text path) "(a)\n(vector 1 2 3 4) ; the end\n(c)\n")))))

(ert-deftest sly-agent-q-review-ui/help-and-describe-mode-list-the-keys ()
  "? and C-h m in the review show its keys."
  (agentq-test-with-lisp-file (path agentq-review--original)
    (let ((review (sly-agent-q--review-buffer (agentq-review--args path))))
      (unwind-protect
          (save-window-excursion
            (switch-to-buffer review)
            (dolist (keys '("?" "C-h m"))
              (when (get-buffer "*Help*") (kill-buffer "*Help*"))
              (with-current-buffer review (agentq-review--keys keys))
              (let ((help (with-current-buffer "*Help*" (buffer-string))))
                (dolist (binding '(("a" . "sly-agent-q-review-accept")
                                   ("r" . "sly-agent-q-review-reject")
                                   ("SPC" . "sly-agent-q-review-toggle")
                                   ("e" . "sly-agent-q-review-edit")
                                   ("q" . "sly-agent-q-review-finish")
                                   ("C-c C-c" . "sly-agent-q-review-accept-all")
                                   ("C-c C-k" . "sly-agent-q-review-reject-all")))
                  (should (string-match-p (format "^%s[ \t]+%s$" (regexp-quote (car binding)) (cdr binding))
                                          help))))))
        (kill-buffer review)))))

(ert-deftest sly-agent-q-review-ui/hunks-number-the-lines-of-the-file ()
  "@@ lines count the file's lines; \"No newline\" only at the file's real end."
  ;; `original' is lines 7 and 8 of the file; the change is on line 8.
  (agentq-test-with-lisp-file (path ";; 1\n;; 2\n;; 3\n;; 4\n;; 5\n;; 6\n(defun g1 () 1)\n(defun g2 () 2)\n(defun g3 () 3)\n")
    (let ((args (agentq-review--args path "(defun g1 () 1)\n(defun g2 () 2)\n" "(defun g1 () 1)\n(defun g2 () :two)\n(defun g2b () 2)\n")))
      (with-current-buffer (sly-agent-q--review-buffer args)
        (unwind-protect
            (progn
              (should (string-match-p "^@@ -7,2 \\+7,3 @@$" (buffer-string)))
              (should-not (string-match-p "^@@ -1," (buffer-string))))
          (kill-buffer)))))
  ;; Hunks after one that adds lines: the new side is shifted by them.
  (agentq-test-with-lisp-file (path (concat ";; header\n" agentq-review--original))
    (let ((args (agentq-review--args path)))
      (puthash "modified" (replace-regexp-in-string "(defun f2 () :two)\n" "(defun f2 () :two)\n(defun f2b () :new)\n"
                                                    (agentq-review--modified))
               args)
      (with-current-buffer (sly-agent-q--review-buffer args)
        (unwind-protect
            (should (equal (mapcar (lambda (start) (goto-char start) (buffer-substring (point) (line-end-position)))
                                   (sly-agent-q--hunk-starts))
                           '("@@ -2,5 +2,6 @@" "@@ -12,7 +13,7 @@" "@@ -23,7 +24,7 @@")))
          (kill-buffer)))))
  ;; `original' ends in the middle of the file without its newline: no
  ;; "No newline at end of file", and the edit applies as proposed.
  (agentq-test-with-lisp-file (path "(defun g1 () 1)\n(defun g2 () 2)\n(defun g3 () 3)\n")
    (let ((args (agentq-review--args path "(defun g2 () 2)" "(defun g2 () :two)")))
      (with-current-buffer (sly-agent-q--review-buffer args)
        (unwind-protect
            (progn
              (should-not (string-match-p "No newline" (buffer-string)))
              (should (string-match-p "^@@ -2 \\+2 @@$" (buffer-string)))
              (should (string-match-p "^-(defun g2 () 2)\n\\+(defun g2 () :two)\n" (buffer-string)))
              (sly-agent-q-review-accept)
              (should (string-prefix-p "accepted" (agentq-review--apply args (sly-agent-q--review-decision args)))))
          (kill-buffer)))
      (should (equal (agentq-review--file-text path) "(defun g1 () 1)\n(defun g2 () :two)\n(defun g3 () 3)\n"))))
  ;; `original' part of a line: the @@ line still numbers the file's lines.
  (agentq-test-with-lisp-file (path "(a)\n(b)\n(list 1 2 3) ; end\n(c)\n")
    (let ((args (agentq-review--args path "1 2 3" "1 2 3 4")))
      (with-current-buffer (sly-agent-q--review-buffer args)
        (unwind-protect
            (progn
              (should (string-match-p "^@@ -3 \\+3 @@$" (buffer-string)))
              (should-not (string-match-p "No newline" (buffer-string)))
              (sly-agent-q-review-accept)
              (should (string-prefix-p "accepted" (agentq-review--apply args (sly-agent-q--review-decision args)))))
          (kill-buffer)))
      (should (equal (agentq-review--file-text path) "(a)\n(b)\n(list 1 2 3 4) ; end\n(c)\n"))))
  ;; The file really ends without a newline: then it is said.
  (agentq-test-with-lisp-file (path "(defun g1 () 1)\n(defun g2 () 2)")
    (let ((args (agentq-review--args path "(defun g2 () 2)" "(defun g2 () :two)")))
      (with-current-buffer (sly-agent-q--review-buffer args)
        (unwind-protect
            (progn
              (should (string-match-p "^-(defun g2 () 2)\n\\\\ No newline at end of file\n" (buffer-string)))
              (sly-agent-q-review-accept)
              (should (string-prefix-p "accepted" (agentq-review--apply args (sly-agent-q--review-decision args)))))
          (kill-buffer)))
      (should (equal (agentq-review--file-text path) "(defun g1 () 1)\n(defun g2 () :two)")))))

(ert-deftest sly-agent-q-review-ui/undo-after-an-accepted-edit-leaves-the-buffer-modified ()
  "Accept into an unmodified visiting buffer, undo: the buffer is modified,
and saving writes the undone text."
  (agentq-test-with-lisp-file (path agentq-review--original)
    (let ((make-backup-files nil)
          (args (agentq-review--args path)))
      (with-current-buffer (find-file-noselect path)
        (should-not (buffer-modified-p))
        (let ((decision (agentq-review--decide args '(?a ?a ?a))))
          (undo-boundary)
          (should (string-prefix-p "accepted\nThe edit is applied to" (agentq-review--apply args decision))))
        (should (equal (buffer-string) (agentq-review--modified)))
        (should (equal (agentq-review--file-text path) (agentq-review--modified)))
        (should-not (buffer-modified-p))
        ;; C-/ as a person types it.
        (undo-boundary)
        (let ((last-command nil)) (undo))
        (should (equal (buffer-string) agentq-review--original))
        (should (buffer-modified-p))
        (save-buffer)
        (should-not (buffer-modified-p))
        (should (equal (agentq-review--file-text path) agentq-review--original))))))

(ert-deftest sly-agent-q-review-ui/a-rejected-review-is-denied-in-the-chat ()
  "The chat shows a review that rejected every hunk as denied, not failed."
  (require 'sly-agent-q-chat)
  (require 'sly-agent-q-fake-provider)
  (agentq-test-with-lisp-file (path agentq-review--original)
    (let* ((server (sly-agent-q-fake-provider-start))
           (sessions (make-temp-file "agentq-review-sessions" t))
           (done nil)
           (sly-agent-q-chat-done-functions (list (lambda (text) (push text done))))
           (sly-agent-q-backends (list (list :name "fake" :type 'openai
                                             :url (sly-agent-q-fake-provider-url server)
                                             :model "fake-model" :key "sk-test")))
           (sly-agent-q-backend "fake")
           (sly-agent-q-stream t)
           (sly-agent-q-session-directory sessions)
           ;; The review, every hunk rejected with r.
           (sly-agent-q-approval-function
            (lambda (_name args) (agentq-review--decide args '(?r ?r ?r)))))
      (unwind-protect
          (progn
            (sly-agent-q-new-conversation)
            (sly-agent-q-fake-provider-push
             server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream
                                               :tool-calls `((:id "p1" :name "propose_file_edit"
                                                                  :arguments ,(json-serialize
                                                                               (list :path path
                                                                                     :original agentq-review--original
                                                                                     :modified (agentq-review--modified))))))))
            (sly-agent-q-fake-provider-push
             server (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text "I will not retry.")))
            (sly-agent-q-send "Return keywords")
            (sly-agent-q-fake-provider-wait (lambda () done) 30)
            (should (equal (car done) "I will not retry."))
            (should (equal (agentq-review--file-text path) agentq-review--original))
            (let ((id sly-agent-q-chat--id))
              ;; As it ran, and as a saved conversation shows it again.
              (dotimes (_ 2)
                (let ((text (with-current-buffer sly-agent-q-chat-buffer-name
                              (buffer-substring-no-properties (point-min) (point-max)))))
                  (should (string-match-p "propose_file_edit .*  denied" text))
                  (should-not (string-match-p "propose_file_edit .*  failed" text)))
                (sly-agent-q-new-conversation)
                (sly-agent-q-chat-open id))))
        (when (sly-agent-q-chat-busy-p) (sly-agent-q-cancel-chat))
        (sly-agent-q-fake-provider-stop server)
        (when (get-buffer sly-agent-q-chat-buffer-name)
          (kill-buffer sly-agent-q-chat-buffer-name))
        (setq sly-agent-q-chat--id nil sly-agent-q-chat--messages nil)
        (delete-directory sessions t)))))

;;; sly-agent-q-review-ui-test.el ends here
