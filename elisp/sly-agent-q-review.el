;;; sly-agent-q-review.el --- Per-hunk review of a proposed edit -*- lexical-binding: t; -*-

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
;; The review blocks the tool call (a recursive edit) while Emacs stays
;; usable.  Its answer follows propose_file_edit's approval contract:
;; (:modified ARGS) with `modified' made of the accepted hunks and
;; `hunks_total' / `hunks_applied', or :denied when none was accepted.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'diff-mode)

(defface sly-agent-q-hunk-accepted '((t :inherit success))
  "Face of the header of an accepted hunk."
  :group 'sly-agent-q)

(defface sly-agent-q-hunk-rejected '((t :inherit error :strike-through t))
  "Face of the header of a rejected hunk."
  :group 'sly-agent-q)

;;;; Hunks: parsing and applying

(defun sly-agent-q--diff-text (old new)
  "The unified diff (3 lines of context) from OLD to NEW, two strings."
  (let ((old-file (make-temp-file "agentq-old")) (new-file (make-temp-file "agentq-new")))
    (unwind-protect
        (progn
          (with-temp-file old-file (insert old))
          (with-temp-file new-file (insert new))
          (with-temp-buffer
            (call-process "diff" nil t nil "-U" "3" "--label" "original" "--label" "proposed"
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

;;;; The review buffer

(defvar-local sly-agent-q--review-states nil
  "Vector of the hunks' states: `accepted', `rejected' or nil (unmarked).")
(defvar-local sly-agent-q--review-result nil)
(defvar-local sly-agent-q--review-file nil)
(defvar-local sly-agent-q--review-description nil)
(defvar-local sly-agent-q--review-first-line 1
  "The line of the file where the proposal's `original' text begins.")

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
  "Keys of `sly-agent-q-diff-mode'.")

(define-derived-mode sly-agent-q-diff-mode diff-mode "Agent-Q Diff"
  "Review an edit the agent proposes, hunk by hunk.
\\{sly-agent-q-diff-mode-map}"
  (setq buffer-read-only t)
  ;; diff-mode gives a read-only buffer its own keys (r, a, …) through
  ;; this alist, ahead of the major mode's: the review's keys win here.
  (setq-local minor-mode-overriding-map-alist
              (list (cons 'buffer-read-only sly-agent-q-diff-mode-map))))

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
                (when state
                  (overlay-put overlay 'face (if (eq state 'accepted)
                                                 'sly-agent-q-hunk-accepted
                                               'sly-agent-q-hunk-rejected)))))
  (let ((total (length sly-agent-q--review-states))
        (accepted (cl-count 'accepted sly-agent-q--review-states)))
    (setq header-line-format
          (format " %s — %s: %d hunk%s, %d accepted, %d rejected   (a/r/SPC mark, C-c C-c all, q finish, ? help)"
                  (file-name-nondirectory sly-agent-q--review-file)
                  (or sly-agent-q--review-description "proposed edit")
                  total (if (= total 1) "" "s") accepted
                  (cl-count 'rejected sly-agent-q--review-states)))))

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
        (line (save-excursion
                (goto-char (nth (or (sly-agent-q--hunk-index) 0) (sly-agent-q--hunk-starts)))
                (and (looking-at "@@ -\\([0-9]+\\)") (string-to-number (match-string 1)))))
        (first sly-agent-q--review-first-line))
    ;; The hunk's line counts from the start of `original', not of the file.
    (with-selected-window (display-buffer (or (get-file-buffer file) (find-file-noselect file)))
      (goto-char (point-min))
      (forward-line (max 0 (+ (1- first) (1- (or line 1))))))))

(defun sly-agent-q-review-edit ()
  "Edit the hunk at point in place: its `+' lines are what is applied.
Mark it accepted (a) and finish as usual."
  (interactive)
  (setq buffer-read-only nil)
  (message "Edit the hunk's lines (keep their \" \", \"-\", \"+\" prefixes); mark it with a, then finish"))

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

(defun sly-agent-q-review-help ()
  "Show the keys of the review."
  (interactive)
  (with-help-window (get-buffer-create "*Agent-Q Diff Help*")
    (princ (substitute-command-keys
            "Review of an edit the agent proposes.\n\n\\{sly-agent-q-diff-mode-map}"))))

(defun sly-agent-q--review-decision (args)
  "The approval answer of the review of ARGS, from the review buffer's state."
  (let* ((hunks (sly-agent-q--parse-hunks (buffer-substring-no-properties (point-min) (point-max))))
         (accepted (cl-loop for state across sly-agent-q--review-states
                            for index from 0
                            when (eq state 'accepted) collect index))
         (total (length hunks)))
    (if (null accepted)
        :denied
      (let ((new (copy-hash-table args)))
        (puthash "modified" (sly-agent-q--apply-hunks (gethash "original" args) hunks accepted) new)
        (puthash "hunks_total" total new)
        (puthash "hunks_applied" (length accepted) new)
        (list :modified new)))))

(defun sly-agent-q--first-line-of (file text)
  "The line where TEXT begins in FILE (its visiting buffer's text first), or 1."
  (with-temp-buffer
    (let ((buffer (get-file-buffer file)))
      (if buffer
          (insert-buffer-substring-no-properties buffer)
        (ignore-errors (insert-file-contents file))))
    (goto-char (point-min))
    (if (and (stringp text) (search-forward text nil t))
        (line-number-at-pos (match-beginning 0))
      1)))

(defun sly-agent-q--review-buffer (args)
  "The *Agent-Q Diff* buffer showing the edit of ARGS, every hunk unmarked."
  (let ((diff (sly-agent-q--diff-text (gethash "original" args) (gethash "modified" args)))
        (buffer (get-buffer-create "*Agent-Q Diff*")))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert diff))
      (sly-agent-q-diff-mode)
      (setq sly-agent-q--review-first-line (sly-agent-q--first-line-of (expand-file-name (gethash "path" args))
                                                                       (gethash "original" args)))
      (setq sly-agent-q--review-file (expand-file-name (gethash "path" args))
            sly-agent-q--review-description (gethash "description" args)
            sly-agent-q--review-states (make-vector (length (sly-agent-q--hunk-starts)) nil)
            sly-agent-q--review-result nil)
      (sly-agent-q--review-redisplay)
      (goto-char (or (car (sly-agent-q--hunk-starts)) (point-min))))
    buffer))

(defun sly-agent-q-review-edit-proposal (args)
  "Let the person review the edit that propose_file_edit's ARGS propose.
ARGS has `path', `original', `modified' and `description'.  Returns the
approval answer: (:modified NEW-ARGS) with the accepted hunks, or :denied."
  (let ((buffer (sly-agent-q--review-buffer args)))
    (save-window-excursion
      (pop-to-buffer buffer)
      (condition-case nil
          (recursive-edit)
        (quit (with-current-buffer buffer (setq sly-agent-q--review-result nil)))))
    (with-current-buffer buffer
      (prog1 (if (eq sly-agent-q--review-result 'finish)
                 (sly-agent-q--review-decision args)
               :denied)
        (kill-buffer buffer)))))

(provide 'sly-agent-q-review)

;;; sly-agent-q-review.el ends here
