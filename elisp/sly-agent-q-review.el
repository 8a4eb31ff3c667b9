;;; sly-agent-q-review.el --- Per-hunk review of a proposed edit -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; When the agent calls propose_file_edit, `sly-agent-q-approve' shows the
;; edit as a unified diff in *Agent-Q Diff* (`sly-agent-q-diff-mode',
;; derived from `diff-mode') and lets the person accept or reject each
;; hunk, and edit the proposed side, before anything is applied:
;;
;;   n/p next/previous hunk   a accept   r reject   SPC toggle
;;   RET go to the hunk's place in the file   e edit the hunk
;;   C-c C-c accept all and finish   C-c C-k reject all and finish
;;   q finish with the marks (unmarked hunks are rejected)   ? help
;;
;; `e' opens the hunk's proposed lines in a buffer of their own, in the
;; file's major mode with `sly-agent-q-hunk-edit-mode': everything typed
;; there is text; C-c C-c puts the edited lines in the review as that
;; hunk, accepted, and C-c C-k drops the edit.
;;
;; The diff is made over whole lines of the file and numbered by the
;; file's lines: `original' may begin or end in the middle of a line, and
;; the rest of those lines is context (and "\ No newline at end of file"
;; is shown only where the file really ends without one).
;;
;; The review blocks the tool call (a recursive edit) while Emacs stays
;; usable.  Its answer follows propose_file_edit's approval contract:
;; (:modified ARGS) with `modified' made of the accepted hunks and
;; `hunks_total' / `hunks_applied', or :denied when none was accepted.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'diff-mode)
(require 'sly-agent-q-runtime)

(defface sly-agent-q-hunk-accepted '((t :inherit success))
  "Face of the header of an accepted hunk."
  :group 'sly-agent-q)

(defface sly-agent-q-hunk-rejected '((t :inherit error :strike-through t))
  "Face of the header of a rejected hunk."
  :group 'sly-agent-q)

;;;; Hunks: parsing and applying

(defun sly-agent-q--diff-text (old new &optional context)
  "The unified diff from OLD to NEW, two strings, with CONTEXT lines (3)."
  (let ((old-file (make-temp-file "agentq-old")) (new-file (make-temp-file "agentq-new")))
    (unwind-protect
        (progn
          (with-temp-file old-file (insert old))
          (with-temp-file new-file (insert new))
          (with-temp-buffer
            (call-process "diff" nil t nil "-U" (number-to-string (or context 3))
                          "--label" "original" "--label" "proposed"
                          old-file new-file)
            (buffer-string)))
      (delete-file old-file)
      (delete-file new-file))))

(defun sly-agent-q--split-lines (text)
  "TEXT as a list of lines, each with its newline (the last may lack one)."
  (let ((lines '()) (start 0))
    (while (< start (length text))
      (let ((end (string-search "\n" text start)))
        (push (substring text start (if end (1+ end) nil)) lines)
        (setq start (if end (1+ end) (length text)))))
    (nreverse lines)))

(defun sly-agent-q--parse-hunks (diff)
  "The hunks of the unified DIFF text: a list of (OLD-START . LINES).
LINES are the hunk's body lines as they are (with their \" \", \"-\",
\"+\" prefix); OLD-START is the 1-based line of the old text the hunk
begins at."
  (let ((hunks '()) (current nil))
    (dolist (line (sly-agent-q--split-lines diff))
      (cond ((string-match "\\`@@ -\\([0-9]+\\)\\(?:,\\([0-9]+\\)\\)? \\+[0-9]+\\(?:,[0-9]+\\)? @@" line)
             (when current (push (cons (car current) (nreverse (cdr current))) hunks))
             ;; A hunk that removes nothing starts after its line: the
             ;; index of OLD's first line it stands for is START itself.
             (let ((start (string-to-number (match-string 1 line)))
                   (count (if (match-string 2 line) (string-to-number (match-string 2 line)) 1)))
               (setq current (list (if (= count 0) (1+ start) start)))))
            ((and current (> (length line) 0) (memq (aref line 0) '(?\s ?- ?+)))
             (push line (cdr current)))
            ((and current (string-prefix-p "\\" line))
             ;; "\ No newline at end of file": the line before has none.
             (let ((previous (cadr current)))
               (when (and previous (string-suffix-p "\n" previous))
                 (setcar (cdr current) (substring previous 0 -1)))))))
    (when current (push (cons (car current) (nreverse (cdr current))) hunks))
    (nreverse hunks)))

(defun sly-agent-q--apply-hunks (old hunks accepted)
  "OLD (a string) with the hunks whose indices are in ACCEPTED applied.
HUNKS as `sly-agent-q--parse-hunks' gives them; a hunk's `-' and ` '
lines stand for OLD's lines from its start, which its ` ' and `+' lines
replace."
  (let ((old-lines (vconcat (sly-agent-q--split-lines old)))
        (out '())
        (next 0))                       ; index of OLD's next line to copy
    (cl-loop for (start . lines) in hunks
             for index from 0
             when (memq index accepted)
             do (let ((from (max 0 (1- start))))
                  (while (< next from)
                    (push (aref old-lines next) out)
                    (setq next (1+ next)))
                  (dolist (line lines)
                    (pcase (aref line 0)
                      (?\s (push (substring line 1) out) (setq next (1+ next)))
                      (?- (setq next (1+ next)))
                      (?+ (push (substring line 1) out))))))
    (while (< next (length old-lines))
      (push (aref old-lines next) out)
      (setq next (1+ next)))
    (apply #'concat (nreverse out))))

(defun sly-agent-q--hunk-side (lines side)
  "The text of one SIDE of a hunk's LINES: ?- the old one, ?+ the new one."
  (mapconcat (lambda (line) (substring line 1))
             (cl-remove-if-not (lambda (line) (memq (aref line 0) (list ?\s side))) lines)
             ""))

(defun sly-agent-q--hunk-lines (old new)
  "Return the body lines of one hunk from the text OLD to NEW.
Every line of OLD is in it, as context or removed: a hunk that stands
for the same lines of the file as the hunk OLD came from."
  (let ((hunks (sly-agent-q--parse-hunks
                (sly-agent-q--diff-text old new (max 3 (length (sly-agent-q--split-lines old))
                                                     (length (sly-agent-q--split-lines new)))))))
    (if hunks
        (cdar hunks)
      (mapcar (lambda (line) (concat " " line)) (sly-agent-q--split-lines old)))))

(defun sly-agent-q--hunk-counts (lines)
  "The number of old and of new lines of a hunk's LINES: (OLD . NEW)."
  (cons (cl-count-if (lambda (line) (memq (aref line 0) '(?\s ?-))) lines)
        (cl-count-if (lambda (line) (memq (aref line 0) '(?\s ?+))) lines)))

(defun sly-agent-q--hunk-text (hunk offset shift)
  "Return the text of HUNK, (OLD-START . LINES), as in a unified diff.
OFFSET is added to its old line numbers, OFFSET + SHIFT to its new ones
\(SHIFT: the lines the hunks before it add)."
  (pcase-let* ((`(,start . ,lines) hunk)
               (`(,old . ,new) (sly-agent-q--hunk-counts lines))
               (range (lambda (first count)
                        ;; As diff writes them: an empty range names the line before.
                        (let ((first (if (= count 0) (1- first) first)))
                          (if (= count 1) (number-to-string first) (format "%d,%d" first count))))))
    (concat (format "@@ -%s +%s @@\n" (funcall range (+ start offset) old)
                    (funcall range (+ start offset shift) new))
            (mapconcat (lambda (line)
                         (if (string-suffix-p "\n" line)
                             line
                           (concat line "\n\\ No newline at end of file\n")))
                       lines ""))))

(defun sly-agent-q--insert-file-text (file)
  "Insert the text of FILE, the one propose_file_edit's check sees.
That is the buffer visiting FILE when it has unsaved changes, else the
file's."
  (let ((buffer (get-file-buffer file)))
    (if (and buffer (or (buffer-modified-p buffer) (not (file-readable-p file))))
        (insert-buffer-substring-no-properties buffer)
      (ignore-errors (insert-file-contents file)))))

(defun sly-agent-q--snippet-context (file text)
  "Where TEXT stands in FILE: (LINE PREFIX SUFFIX).
LINE is the file's line where TEXT begins, PREFIX the part of that line
before TEXT, SUFFIX the rest of TEXT's last line after it, with its
newline.  The text of FILE is `sly-agent-q--insert-file-text''s.  When
TEXT is not found: (1 \"\" \"\")."
  (with-temp-buffer
    (sly-agent-q--insert-file-text file)
    (goto-char (point-min))
    (let ((case-fold-search nil))
      (if (and (stringp text) (not (string-empty-p text)) (search-forward text nil t))
          (let ((begin (match-beginning 0)) (end (match-end 0)))
            (list (line-number-at-pos begin)
                  (buffer-substring-no-properties (save-excursion (goto-char begin) (line-beginning-position))
                                                  begin)
                  (buffer-substring-no-properties end (save-excursion
                                                        (goto-char end)
                                                        (if (bolp) end (min (point-max) (1+ (line-end-position))))))))
        (list 1 "" "")))))

;;;; Keymaps

(defvar sly-agent-q-diff-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "n") #'diff-hunk-next)
    (define-key map (kbd "p") #'diff-hunk-prev)
    (define-key map (kbd "a") #'sly-agent-q-review-accept)
    (define-key map (kbd "r") #'sly-agent-q-review-reject)
    (define-key map (kbd "SPC") #'sly-agent-q-review-toggle)
    (define-key map (kbd "RET") #'sly-agent-q-review-goto)
    (define-key map (kbd "e") #'sly-agent-q-review-edit)
    (define-key map (kbd "C-c C-c") #'sly-agent-q-review-accept-all)
    (define-key map (kbd "C-c C-k") #'sly-agent-q-review-reject-all)
    (define-key map (kbd "q") #'sly-agent-q-review-finish)
    (define-key map (kbd "?") #'sly-agent-q-review-help)
    map)
  "Keys of `sly-agent-q-diff-mode', the review of a proposed edit.")

(defvar sly-agent-q-hunk-edit-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'sly-agent-q-hunk-edit-finish)
    (define-key map (kbd "C-c C-k") #'sly-agent-q-hunk-edit-drop)
    map)
  "Keys of `sly-agent-q-hunk-edit-mode', the edit of one hunk.")

;;;; The review buffer

(defvar-local sly-agent-q--review-states nil
  "Vector of the hunks' states: `accepted', `rejected' or nil (unmarked).")
(defvar-local sly-agent-q--review-hunks nil
  "Vector of the hunks, (OLD-START . LINES), as they are now (edits included).
OLD-START counts the lines of the text reviewed: `original' with the
rest of its first and last lines (`sly-agent-q--review-prefix' and
`sly-agent-q--review-suffix').")
(defvar-local sly-agent-q--review-proposed nil
  "Vector of the hunks as the agent proposed them.")
(defvar-local sly-agent-q--review-prefix ""
  "The part of the file's line before `original'.")
(defvar-local sly-agent-q--review-suffix ""
  "The rest of the file's line after `original', with its newline.")
(defvar-local sly-agent-q--review-result nil)
(defvar-local sly-agent-q--review-file nil)
(defvar-local sly-agent-q--review-description nil)
(defvar-local sly-agent-q--review-first-line 1
  "The line of the file where the text reviewed (and `original') begins.")
(defvar-local sly-agent-q--review-edit-buffer nil
  "The buffer where a hunk of this review is being edited, if any.")
(defvar-local sly-agent-q--review-notes nil
  "Notes on the proposed text, shown under the first hunk: a list of strings.
edit_form and insert_form give the compiler's findings on the new form
\(\"STYLE-WARNING: …\"), so that they are seen before the person decides;
a Lisp file proposed that would not read has check_syntax's problems
\(\"SYNTAX: line L, column C: …\", see `sly-agent-q--review-syntax-notes').")

(define-derived-mode sly-agent-q-diff-mode diff-mode "Agent-Q Diff"
  "Review an edit the agent proposes, hunk by hunk.

Each hunk shows its mark, [accept] or [reject] (or none yet), and
its @@ line numbers the lines of the file.  Mark the hunks, then
finish: exactly the accepted hunks are applied to the file, in one
undo step, and the agent is told which.
\\<sly-agent-q-diff-mode-map>
\\[sly-agent-q-review-accept] accepts the hunk at point, \\[sly-agent-q-review-reject] rejects it,
\\[sly-agent-q-review-toggle] toggles it; each goes on to the next hunk.
\\[diff-hunk-next] and \\[diff-hunk-prev] go to the next and the previous hunk.
\\[sly-agent-q-review-goto] shows the hunk's place in the file.
\\[sly-agent-q-review-edit] edits the hunk's proposed lines, in a buffer of their own
  where everything typed is text (`sly-agent-q-hunk-edit-mode'):
  \\<sly-agent-q-hunk-edit-mode-map>\\[sly-agent-q-hunk-edit-finish] finishes the edit, and the edited hunk is accepted;
  \\[sly-agent-q-hunk-edit-drop] drops the edit.\\<sly-agent-q-diff-mode-map>
\\[sly-agent-q-review-finish] finishes: unmarked hunks are rejected.
\\[sly-agent-q-review-accept-all] accepts every hunk and finishes.
\\[sly-agent-q-review-reject-all] rejects every hunk and finishes.
\\[sly-agent-q-review-help] shows this help.

\\{sly-agent-q-diff-mode-map}"
  (setq buffer-read-only t)
  ;; diff-mode gives a read-only buffer its own one-key commands (k, R,
  ;; W, q, ? …) through this alist, ahead of the major mode's keys:
  ;; here the review's keys are the ones, so that entry goes.
  (setq-local minor-mode-overriding-map-alist
              (cl-remove 'buffer-read-only minor-mode-overriding-map-alist :key #'car)))

(defun sly-agent-q--hunk-starts ()
  "Positions of the hunks' @@ lines, in order."
  (save-excursion
    (goto-char (point-min))
    (let ((starts '()))
      (while (re-search-forward "^@@ " nil t)
        (push (line-beginning-position) starts))
      (nreverse starts))))

(defun sly-agent-q--hunk-index ()
  "The index of the hunk at point, or nil before the first one."
  (let ((index nil) (i 0))
    (dolist (start (sly-agent-q--hunk-starts) index)
      (when (<= start (point)) (setq index i))
      (setq i (1+ i)))))

(defun sly-agent-q--review-render ()
  "Write the hunks into the review buffer, numbered by the file's lines."
  (let ((inhibit-read-only t)
        (offset (1- sly-agent-q--review-first-line))
        (shift 0))
    (erase-buffer)
    (insert "--- original\n+++ proposed\n")
    (cl-loop for hunk across sly-agent-q--review-hunks
             do (insert (sly-agent-q--hunk-text hunk offset shift))
                (let ((counts (sly-agent-q--hunk-counts (cdr hunk))))
                  (setq shift (+ shift (- (cdr counts) (car counts))))))
    (set-buffer-modified-p nil))
  (sly-agent-q--review-redisplay))

(defun sly-agent-q--review-redisplay ()
  "Show each hunk's state on its @@ line, and the counts in the header line."
  (remove-overlays (point-min) (point-max) 'sly-agent-q-review t)
  (cl-loop for start in (sly-agent-q--hunk-starts)
           for index from 0
           for state = (aref sly-agent-q--review-states index)
           do (let ((overlay (make-overlay start (save-excursion (goto-char start) (line-end-position)))))
                (overlay-put overlay 'sly-agent-q-review t)
                (overlay-put overlay 'before-string
                             (pcase state
                               ('accepted (propertize "[accept] " 'face 'sly-agent-q-hunk-accepted))
                               ('rejected (propertize "[reject] " 'face 'sly-agent-q-hunk-rejected))
                               (_ "[      ] ")))
                (unless (equal (aref sly-agent-q--review-hunks index) (aref sly-agent-q--review-proposed index))
                  (overlay-put overlay 'after-string " (edited)"))
                (when state
                  (overlay-put overlay 'face (if (eq state 'accepted)
                                                 'sly-agent-q-hunk-accepted
                                               'sly-agent-q-hunk-rejected)))
                (when (and (= index 0) sly-agent-q--review-notes)
                  (let ((notes (make-overlay (overlay-end overlay) (overlay-end overlay))))
                    (overlay-put notes 'sly-agent-q-review t)
                    (overlay-put notes 'sly-agent-q-review-notes t)
                    (overlay-put notes 'after-string (sly-agent-q--review-notes-text))))))
  (let* ((total (length sly-agent-q--review-states))
         (accepted (cl-count 'accepted sly-agent-q--review-states))
         (syntax (cl-count-if (lambda (note) (string-prefix-p "SYNTAX: " note)) sly-agent-q--review-notes))
         (notes (- (length sly-agent-q--review-notes) syntax)))
    (setq header-line-format
          (format " %s — %s: %d hunk%s, %d accepted, %d rejected%s   (a/r/SPC mark, e edit, C-c C-c all, q finish, ? help)"
                  (string-replace "%" "%%" (file-name-nondirectory sly-agent-q--review-file))
                  (string-replace "%" "%%" (or sly-agent-q--review-description "proposed edit"))
                  total (if (= total 1) "" "s") accepted
                  (cl-count 'rejected sly-agent-q--review-states)
                  (concat
                   (if (> syntax 0) (format ", %d syntax problem%s" syntax (if (= syntax 1) "" "s")) "")
                   (if (> notes 0) (format ", %d compiler note%s" notes (if (= notes 1) "" "s")) ""))))))

(defun sly-agent-q--review-notes-text ()
  "The notes of the review, one a line, as shown under the first hunk's @@ line."
  (mapconcat (lambda (note)
               (concat "\n  " (propertize note 'face (cond ((string-prefix-p "STYLE-WARNING" note) 'warning)
                                                           ((string-prefix-p "NOTE" note) 'shadow)
                                                           (t 'error)))))
             sly-agent-q--review-notes ""))

(defun sly-agent-q--review-mark (state)
  "Mark the hunk at point with STATE, a function of its old state.
Then go to the next hunk."
  (let ((index (or (sly-agent-q--hunk-index) (user-error "Not on a hunk: n goes to the first"))))
    (aset sly-agent-q--review-states index (funcall state (aref sly-agent-q--review-states index)))
    (sly-agent-q--review-redisplay)
    (let ((next (nth (1+ index) (sly-agent-q--hunk-starts))))
      (when next (goto-char next)))))

(defun sly-agent-q-review-accept ()
  "Accept the hunk at point."
  (interactive)
  (sly-agent-q--review-mark (lambda (_) 'accepted)))

(defun sly-agent-q-review-reject ()
  "Reject the hunk at point."
  (interactive)
  (sly-agent-q--review-mark (lambda (_) 'rejected)))

(defun sly-agent-q-review-toggle ()
  "Accept the hunk at point, or reject it when it is accepted."
  (interactive)
  (sly-agent-q--review-mark (lambda (state) (if (eq state 'accepted) 'rejected 'accepted))))

(defun sly-agent-q-review-goto ()
  "Show the place of the hunk at point in the file."
  (interactive)
  (let ((file sly-agent-q--review-file)
        (line (+ (1- sly-agent-q--review-first-line)
                 (car (aref sly-agent-q--review-hunks (or (sly-agent-q--hunk-index) 0))))))
    (with-selected-window (display-buffer (or (get-file-buffer file) (find-file-noselect file)))
      (goto-char (point-min))
      (forward-line (max 0 (1- line))))))

(defun sly-agent-q-review-help ()
  "Show what the review's keys do."
  (interactive)
  (let ((text (documentation 'sly-agent-q-diff-mode)))
    (with-help-window (help-buffer)
      (princ text))))

;;;; Editing a hunk

(defvar-local sly-agent-q--hunk-edit-review nil
  "The review buffer of the hunk this buffer edits.")
(defvar-local sly-agent-q--hunk-edit-index nil
  "The index of the hunk this buffer edits.")

(define-minor-mode sly-agent-q-hunk-edit-mode
  "Editing the proposed lines of one hunk of a review.
The buffer holds the lines the hunk proposes (its context lines
included); change them as you like, everything typed is text.

\\{sly-agent-q-hunk-edit-mode-map}"
  :lighter " Hunk-Edit"
  (if (not sly-agent-q-hunk-edit-mode)
      (progn
        (setq-local minor-mode-overriding-map-alist
                    (assq-delete-all 'sly-agent-q-hunk-edit-mode (copy-sequence minor-mode-overriding-map-alist)))
        (setq header-line-format nil))
    ;; Ahead of other minor modes' C-c C-c (SLY's, say).
    (setq-local minor-mode-overriding-map-alist
                (cons (cons 'sly-agent-q-hunk-edit-mode sly-agent-q-hunk-edit-mode-map)
                      minor-mode-overriding-map-alist))
    (let ((review sly-agent-q--hunk-edit-review))
      (setq header-line-format
            (concat (if (buffer-live-p review)
                        (format " Editing hunk %d of %d" (1+ sly-agent-q--hunk-edit-index)
                                (length (buffer-local-value 'sly-agent-q--review-hunks review)))
                      " Editing a hunk")
                    (substitute-command-keys
                     " — \\<sly-agent-q-hunk-edit-mode-map>\\[sly-agent-q-hunk-edit-finish]: finish (accepts it), \\[sly-agent-q-hunk-edit-drop]: drop the edit")
                    (if (buffer-live-p review)
                        (concat " — " (string-replace "%" "%%" (file-name-nondirectory
                                                               (buffer-local-value 'sly-agent-q--review-file review))))
                      ""))))))

(defun sly-agent-q--file-major-mode (file)
  "The major mode for the text of FILE: its buffer's, else by its name."
  (let* ((buffer (get-file-buffer file))
         (mode (if buffer
                   (buffer-local-value 'major-mode buffer)
                 (let ((entry (assoc-default file auto-mode-alist #'string-match)))
                   (if (consp entry) (car entry) entry)))))
    (if (functionp mode) mode #'fundamental-mode)))

(defun sly-agent-q-review-edit ()
  "Edit the proposed lines of the hunk at point, in a buffer of their own.
There \\<sly-agent-q-hunk-edit-mode-map>\\[sly-agent-q-hunk-edit-finish] \
finishes the edit: the hunk becomes the edited lines,
accepted; \\[sly-agent-q-hunk-edit-drop] drops the edit."
  (interactive)
  (let ((index (or (sly-agent-q--hunk-index) (user-error "Not on a hunk: n goes to the first")))
        (review (current-buffer)))
    (if (buffer-live-p sly-agent-q--review-edit-buffer)
        (progn
          (pop-to-buffer sly-agent-q--review-edit-buffer)
          (message (substitute-command-keys
                    "A hunk is being edited: \\<sly-agent-q-hunk-edit-mode-map>\\[sly-agent-q-hunk-edit-finish] finishes the edit, \\[sly-agent-q-hunk-edit-drop] drops it")))
      (let* ((lines (cdr (aref sly-agent-q--review-hunks index)))
             (mode (sly-agent-q--file-major-mode sly-agent-q--review-file))
             (buffer (generate-new-buffer (format "*Agent-Q Hunk %d*" (1+ index))))
             ;; The first proposed line, or the first line.
             (line (or (cl-loop for l in (cl-remove-if (lambda (l) (eq (aref l 0) ?-)) lines)
                                for n from 0
                                when (eq (aref l 0) ?+) return n)
                       0)))
        (with-current-buffer buffer
          (insert (sly-agent-q--hunk-side lines ?+))
          (condition-case nil
              (funcall mode)
            (error (fundamental-mode)))
          (setq sly-agent-q--hunk-edit-review review
                sly-agent-q--hunk-edit-index index)
          (sly-agent-q-hunk-edit-mode 1)
          (set-buffer-modified-p nil)
          (goto-char (point-min))
          (forward-line line))
        (setq sly-agent-q--review-edit-buffer buffer)
        (pop-to-buffer buffer)))))

(defun sly-agent-q--hunk-edit-close ()
  "Kill this edit buffer and go back to its review."
  (let ((review sly-agent-q--hunk-edit-review)
        (buffer (current-buffer)))
    (when (buffer-live-p review)
      (with-current-buffer review (setq sly-agent-q--review-edit-buffer nil)))
    (if (eq (window-buffer) buffer) (quit-window t) (kill-buffer buffer))
    (when (buffer-live-p review)
      (pop-to-buffer review))))

(defun sly-agent-q-hunk-edit-finish ()
  "Finish the edit: the hunk becomes the edited lines, and is accepted."
  (interactive)
  (let ((review sly-agent-q--hunk-edit-review)
        (index sly-agent-q--hunk-edit-index)
        (text (buffer-substring-no-properties (point-min) (point-max))))
    (unless (buffer-live-p review)
      (user-error "The review of this hunk has ended"))
    (with-current-buffer review
      (let* ((hunk (aref sly-agent-q--review-hunks index))
             (old (sly-agent-q--hunk-side (cdr hunk) ?-))
             (proposed (sly-agent-q--hunk-side (cdr hunk) ?+)))
        ;; A last newline lost while editing would join the next line to it.
        (when (and (string-suffix-p "\n" proposed)
                   (not (string-empty-p text))
                   (not (string-suffix-p "\n" text)))
          (setq text (concat text "\n")))
        (aset sly-agent-q--review-hunks index (cons (car hunk) (sly-agent-q--hunk-lines old text)))
        (aset sly-agent-q--review-states index 'accepted)
        (sly-agent-q--review-render)))
    (sly-agent-q--hunk-edit-close)
    ;; In the review's window: on the hunk just edited.
    (goto-char (nth index (sly-agent-q--hunk-starts)))
    (message "Hunk %d edited and accepted" (1+ index))))

(defun sly-agent-q-hunk-edit-drop ()
  "Drop the edit: the hunk stays as it was."
  (interactive)
  (sly-agent-q--hunk-edit-close)
  (message "Edit dropped"))

;;;; Finishing

(defun sly-agent-q--review-done (result)
  "End the review with RESULT."
  (setq sly-agent-q--review-result result)
  (exit-recursive-edit))

(defun sly-agent-q-review-accept-all ()
  "Accept every hunk and finish."
  (interactive)
  (fillarray sly-agent-q--review-states 'accepted)
  (sly-agent-q--review-done 'finish))

(defun sly-agent-q-review-reject-all ()
  "Reject every hunk and finish."
  (interactive)
  (fillarray sly-agent-q--review-states 'rejected)
  (sly-agent-q--review-done 'finish))

(defun sly-agent-q-review-finish ()
  "Finish: the accepted hunks are applied, unmarked ones are rejected."
  (interactive)
  (sly-agent-q--review-done 'finish))

(defun sly-agent-q--review-decision (args)
  "The approval answer of the review of ARGS, from the review buffer's state."
  (let* ((hunks (append sly-agent-q--review-hunks nil))
         (accepted (cl-loop for state across sly-agent-q--review-states
                            for index from 0
                            when (eq state 'accepted) collect index))
         (original (gethash "original" args))
         (prefix sly-agent-q--review-prefix)
         (suffix sly-agent-q--review-suffix)
         (whole (concat prefix original suffix))
         (result (sly-agent-q--apply-hunks whole hunks accepted)))
    (if (or (null accepted) (equal result whole))
        :denied
      (let ((new (copy-hash-table args)))
        (if (and (string-prefix-p prefix result)
                 (string-suffix-p suffix result)
                 (>= (length result) (+ (length prefix) (length suffix))))
            (puthash "modified" (substring result (length prefix) (- (length result) (length suffix))) new)
          ;; An edit changed the rest of `original''s first or last line:
          ;; those whole lines are replaced.
          (puthash "original" whole new)
          (puthash "modified" result new))
        (puthash "hunks_total" (length hunks) new)
        (puthash "hunks_applied" (length accepted) new)
        (list :modified new)))))

(defun sly-agent-q--review-buffer (args &optional context notes)
  "The *Agent-Q Diff* buffer showing the edit of ARGS, every hunk unmarked.
CONTEXT, when given, is where `original' stands in the file, (LINE
PREFIX SUFFIX) as `sly-agent-q--snippet-context' finds it, for a caller
that knows the place (edit_form).  NOTES, a list of strings, are shown
under the first hunk (`sly-agent-q--review-notes')."
  (let ((buffer (get-buffer-create "*Agent-Q Diff*"))
        (file (expand-file-name (gethash "path" args))))
    (with-current-buffer buffer
      (sly-agent-q-diff-mode)
      (pcase-let* ((`(,line ,prefix ,suffix) (or context
                                                 (sly-agent-q--snippet-context file (gethash "original" args))))
                   (hunks (vconcat (sly-agent-q--parse-hunks
                                    (sly-agent-q--diff-text (concat prefix (gethash "original" args) suffix)
                                                            (concat prefix (gethash "modified" args) suffix))))))
        (setq sly-agent-q--review-first-line line
              sly-agent-q--review-prefix prefix
              sly-agent-q--review-suffix suffix
              sly-agent-q--review-hunks hunks
              sly-agent-q--review-proposed (copy-sequence hunks)
              sly-agent-q--review-file file
              sly-agent-q--review-description (gethash "description" args)
              sly-agent-q--review-states (make-vector (length hunks) nil)
              sly-agent-q--review-notes notes
              sly-agent-q--review-result nil))
      (sly-agent-q--review-render)
      (goto-char (or (car (sly-agent-q--hunk-starts)) (point-min))))
    buffer))

(defun sly-agent-q--run-review (buffer decide)
  "Let the person review in BUFFER, a review buffer, until they finish or quit.
Finished: the answer is what DECIDE returns, called in BUFFER; else
:denied.  BUFFER (and an edit of a hunk not finished) goes after."
  (save-window-excursion
    (pop-to-buffer buffer)
    (condition-case nil
        (recursive-edit)
      (quit (with-current-buffer buffer (setq sly-agent-q--review-result nil)))))
  (with-current-buffer buffer
    (prog1 (if (eq sly-agent-q--review-result 'finish)
               (funcall decide)
             :denied)
      ;; An edit not finished when the review ends is dropped.
      (when (buffer-live-p sly-agent-q--review-edit-buffer)
        (kill-buffer sly-agent-q--review-edit-buffer))
      (kill-buffer buffer))))

(defcustom sly-agent-q-review-syntax-files "\\.\\(?:lisp\\|lsp\\|cl\\|asd\\)\\'"
  "The files whose proposed text the review checks with check_syntax.
A regexp matched against the file's name; nil checks none."
  :type '(choice (const :tag "None" nil) regexp)
  :group 'sly-agent-q)

(defconst sly-agent-q--review-syntax-limit (* 2 1024 1024)
  "The largest file, in characters, whose proposed text the review reads.")

(cl-defun sly-agent-q--review-syntax-notes (args)
  "The review's notes on whether the file ARGS' edit proposes would read.
For a Lisp file (`sly-agent-q-review-syntax-files'): the file's whole text
with `original' replaced by `modified', checked with check_syntax, read
but never evaluated.  Problems the file has already, before the edit,
are not the edit's and are left out.  Each note is \"SYNTAX: line L,
column C: …\", L and C in the file as proposed.  A file larger than
`sly-agent-q--review-syntax-limit' is not checked."
  (let ((file (expand-file-name (gethash "path" args)))
        (original (or (gethash "original" args) ""))
        (modified (or (gethash "modified" args) "")))
    (when (and sly-agent-q-review-syntax-files
               (string-match-p sly-agent-q-review-syntax-files file)
               (not (string-empty-p (string-trim modified))))
      (let* ((now (with-temp-buffer (sly-agent-q--insert-file-text file) (buffer-string)))
             (_ (when (> (+ (length now) (length modified)) sly-agent-q--review-syntax-limit)
                  ;; Read twice while the review waits: not a file this big.
                  (cl-return-from sly-agent-q--review-syntax-notes nil)))
             (at (if (string-empty-p original) nil (string-search original now)))
             (proposed (if at
                           (concat (substring now 0 at) modified (substring now (+ at (length original))))
                         modified))
             (message-of (lambda (line) (replace-regexp-in-string "\\`line [0-9]+, column [0-9]+: " "" line)))
             (before (and (not (string-empty-p (string-trim now)))
                          (mapcar message-of (sly-agent-q--syntax-problems now)))))
        (cl-loop for line in (sly-agent-q--syntax-problems proposed)
                 for text = (funcall message-of line)
                 if (member text before)
                 do (setq before (cl-remove text before :test #'equal :count 1))
                 else collect (concat "SYNTAX: " line))))))

(defun sly-agent-q--proposal-review-buffer (args)
  "The review buffer of propose_file_edit's ARGS, every hunk unmarked.
Under the first hunk, the problems check_syntax finds in the file as
proposed, when it is Lisp (`sly-agent-q--review-syntax-notes')."
  (sly-agent-q--review-buffer args nil (sly-agent-q--review-syntax-notes args)))

(defun sly-agent-q-review-edit-proposal (args)
  "Let the person review the edit that propose_file_edit's ARGS propose.
ARGS has `path', `original', `modified' and `description'.  Returns the
approval answer: (:modified NEW-ARGS) with the accepted hunks, or :denied.
When the file is Lisp and would not read as proposed, check_syntax's
problems show under the first hunk (`sly-agent-q--review-syntax-notes')."
  (sly-agent-q--run-review (sly-agent-q--proposal-review-buffer args)
                           (lambda () (sly-agent-q--review-decision args))))

(provide 'sly-agent-q-review)

;;; sly-agent-q-review.el ends here
