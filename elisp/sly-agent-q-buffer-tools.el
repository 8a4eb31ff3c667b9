;;; sly-agent-q-buffer-tools.el --- Tools that read and edit buffers and files -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; The Emacs-side tools of the agent: read_file, read_buffer,
;; search_in_buffer, write_file and propose_file_edit.  They are
;; Elisp-handled tools, defined when this file is loaded (which does not
;; boot the Lisp runtime), and run on Emacs's main thread whoever calls
;; them: Elisp, Lisp's `execute-tool-calls' or an MCP client.
;;
;; read_file, write_file and propose_file_edit only touch files inside
;; `sly-agent-q-allowed-directories', and write atomically: see
;; elisp/sly-agent-q-files.el, which resolves their paths and reads and
;; writes their files.
;;
;; propose_file_edit replaces one exact occurrence of `original' with
;; `modified'.  Its check (run before the approval is asked) refuses a
;; proposal whose `original' does not occur exactly once.  The approval
;; function may answer (:modified NEW-ARGS) with a hunk-filtered
;; `modified' and the keys `hunks_total' and `hunks_applied' (the
;; approval UI's contract, see `sly-agent-q--propose-file-edit'); a
;; denial answers "rejected — STOP: do not retry this edit.".

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'sly-agent-q-runtime)
(require 'sly-agent-q-tools)
(require 'sly-agent-q-files)

;;;; Options

(defconst sly-agent-q--rejected-text "rejected — STOP: do not retry this edit."
  "What propose_file_edit answers when the person rejects the edit.")
;;;; read_file

(defvar sly-agent-q--read-file-chunk 262144
  "Bytes read_file reads of a file at a time.
A file no larger than this is read whole, and the answer says how many
lines it has.  A larger one is read a chunk at a time, only as far as
the lines asked for need: its lines are counted only when the reading
reached its end, and the answer says \"more follow\" otherwise.")

(defun sly-agent-q--pass-newlines (count)
  "Move past up to COUNT newlines from point; return how many were passed.
Point ends just after the last newline passed."
  (let ((left (forward-line count)))
    (if (bolp)
        (- count left)
      ;; `forward-line' went on into an unfinished last line, and counted it.
      (forward-line 0)
      (- count left 1))))

(defun sly-agent-q--line-end (read-more longest)
  "Where the line at the start of the buffer ends, reading on as needed.
READ-MORE appends the next bytes of the file, or returns nil at its end.
The answer is the position after the line's newline; `:last' for a last
line without one (it ends at `point-max'); `:none' when nothing is left;
`:long' when LONGEST bytes were read without finding the line's end
\(the file goes on)."
  (let ((scan (point-min)) (state nil))
    (while (not state)
      (goto-char scan)
      (cond ((search-forward "\n" nil t) (setq state (point)))
            ((>= (buffer-size) longest) (setq state :long))
            (t (setq scan (point-max))
               (unless (funcall read-more)
                 (setq state (if (= (point-min) (point-max)) :none :last))))))
    state))

(defun sly-agent-q--read-file-coding (file eof)
  "The coding system of FILE, whose first bytes are the current buffer's.
As Emacs would find it for those bytes' whole lines (all of them when
EOF): coding cookie, file name, contents; lines end at \\n."
  (let* ((bytes (buffer-substring-no-properties
                 (point-min)
                 (if eof (point-max)
                   (save-excursion (goto-char (point-max))
                                   (if (search-backward "\n" nil t) (1+ (point)) (point-max))))))
         (coding (sly-agent-q--usable-coding
                  (with-temp-buffer
                    (insert (string-to-multibyte bytes))
                    (decode-coding-inserted-region (point-min) (point-max) file)
                    last-coding-system-used))))
    ;; Old Mac line ends (\r) make one line.
    (if (eq (coding-system-eol-type coding) 2)
        (coding-system-change-eol-conversion coding 'unix)
      coding)))

(defun sly-agent-q--read-file-answer (file text cut after offset line total cap)
  "Return read_file's answer: TEXT, then the lines on what was left out.
TEXT holds the numbered lines of FILE from OFFSET to before LINE.
CUT is nil, `limit' (the read limit
CAP was reached) or `long' (line LINE was cut); AFTER whether lines
follow (`unknown': perhaps); TOTAL the file's lines when counted."
  (let ((visitor (find-buffer-visiting file))
        (lines-shown (lambda (first final)
                       (if total
                           (format "lines %d-%d of %d shown" first final total)
                         (format "lines %d-%d shown, and more follow (the file is %s; it was read only as far as these lines, so its lines were not counted)"
                                 first final (file-size-human-readable
                                              (file-attribute-size (sly-agent-q--local-files (file-attributes file)))))))))
    (concat
     (if (equal total 0) (format "[%s is empty]\n" file) "")
     (sly-agent-q--clean-text text)
     (pcase cut
       ('limit (format "[... truncated at the read limit of %d characters: %s. Call read_file with offset=%d to read more ...]\n"
                       cap (funcall lines-shown offset (1- line)) line))
       ('long (format "[... line %d is longer than the read limit of %d characters and was cut.%s ...]\n"
                      line cap (pcase after
                                 ('t (format " The lines after it: call read_file with offset=%d" (1+ line)))
                                 ('unknown (format " The lines after it, if any: call read_file with offset=%d" (1+ line)))
                                 (_ ""))))
       (_ (if after
              (format "[... %s. Call read_file with offset=%d to read more ...]\n"
                      (funcall lines-shown offset (1- line)) line)
            "")))
     (if (and visitor (buffer-modified-p visitor))
         (format "[note: buffer %s visits this file and has unsaved changes; this is the file as saved. read_buffer shows the buffer's text.]\n"
                 (buffer-name visitor))
       ""))))

(defun sly-agent-q--read-file (args)
  "The read_file tool: ARGS has path, and maybe offset and limit (lines).
Only what the answer needs is read: the file's bytes are read
`sly-agent-q--read-file-chunk' at a time into a unibyte buffer, the
lines before `offset' are passed over there, and only the lines shown
are decoded, with the coding system Emacs finds for the file's first
chunk.  The answer counts the file's lines when the reading reached the
end of the file, and says that more lines follow otherwise.  A file is
taken as binary when its first 8000 bytes, or a line shown, hold a NUL."
  (let* ((file (sly-agent-q--resolve-path (gethash "path" args)))
         (offset (sly-agent-q--integer-argument args "offset" 1 1))
         (limit (sly-agent-q--integer-argument args "limit" nil 1))
         (last (and limit (+ offset limit -1)))
         (cap (max 1 sly-agent-q-read-limit))
         (chunk (max 1 sly-agent-q--read-file-chunk))
         ;; A line this long (in bytes) is longer than the read limit in
         ;; any encoding a text file has: it is cut without reading on.
         (longest (* 4 (+ cap 16)))
         (read-to 0) (eof nil) (coding nil)
         (line 1)                        ; the number of the line the buffer starts with
         (parts nil) (size 0) (cut nil) (after nil) (total nil) (end nil))
    (sly-agent-q--check-readable file)
    (with-temp-buffer
      (set-buffer-multibyte nil)
      (cl-flet ((read-more ()
                  (unless eof
                    (let ((inserted
                           (save-excursion
                             (goto-char (point-max))
                             (condition-case err
                                 (sly-agent-q--local-files
                                   (cadr (insert-file-contents-literally file nil read-to (+ read-to chunk))))
                               (file-error
                                (sly-agent-q-tool-fail "%s cannot be read: %s." file (error-message-string err)))))))
                      (setq read-to (+ read-to inserted))
                      (when (< inserted chunk) (setq eof t))
                      (> inserted 0))))
                (count-total ()
                  (when eof
                    (setq total (+ line -1 (count-lines (point-min) (point-max)))))))
        (read-more)
        (goto-char (point-min))
        (when (search-forward "\0" (min (point-max) (+ (point-min) 8000)) t)
          (sly-agent-q-tool-fail "%s looks like a binary file (it contains NUL bytes); read_file reads text files only." file))
        (setq coding (sly-agent-q--read-file-coding file eof))
        ;; Pass over the lines before OFFSET.
        (goto-char (point-min))
        (while (and (< line offset) (not end))
          (setq line (+ line (sly-agent-q--pass-newlines (- offset line))))
          (delete-region (point-min) (point))
          (when (and (< line offset) (not (read-more)))
            (setq end :none)))
        ;; The lines shown.
        (while (and (not cut) (not (memq end '(:none :last))) (or (null last) (<= line last)))
          (setq end (sly-agent-q--line-end #'read-more longest))
          (unless (eq end :none)
            (let* ((stop (if (integerp end) end (point-max)))
                   (text (string-remove-suffix
                          "\n" (decode-coding-string (buffer-substring-no-properties (point-min) stop) coding)))
                   (entry (format "%6d\t%s\n" line text)))
              (when (string-search "\0" text)
                (sly-agent-q-tool-fail "%s looks like a binary file (line %d contains NUL bytes); read_file reads text files only."
                                       file line))
              (cond ((and (not (eq end :long)) (<= (+ size (length entry)) cap))
                     (push entry parts)
                     (setq size (+ size (length entry)))
                     (delete-region (point-min) stop)
                     (setq line (1+ line)))
                    (parts (setq cut 'limit))
                    (t (push (concat (substring entry 0 (min cap (length entry))) "\n") parts)
                       (setq cut 'long)
                       (setq after (cond ((eq end :last) nil)
                                         ((eq end :long) (if eof nil 'unknown))
                                         ((< stop (point-max)) t)
                                         ((read-more) t))))))))
        ;; Whether lines follow those shown, and how many lines there are.
        (unless (or cut (memq end '(:none :last)))
          (setq after (or (> (point-max) (point-min)) (and (read-more) t))))
        (count-total)
        (when (and total (> total 0) (> offset total))
          (sly-agent-q-tool-fail "offset %d is past the end of %s, which has %d line%s."
                                 offset file total (if (= total 1) "" "s"))))
      (sly-agent-q--read-file-answer file (apply #'concat (nreverse parts)) cut after
                                     offset line total cap))))

;;;; read_buffer

(defun sly-agent-q--read-buffer (args)
  "The read_buffer tool: ARGS has buffer, and maybe start and end positions."
  (let* ((buffer (sly-agent-q--find-buffer (gethash "buffer" args)))
         (cap (max 1 sly-agent-q-read-limit)))
    (with-current-buffer buffer
      (save-restriction
        (widen)
        (let* ((maximum (point-max))
               (start (sly-agent-q--integer-argument args "start" 1 1))
               (end (min maximum (sly-agent-q--integer-argument args "end" maximum 1))))
          (when (> start maximum)
            (sly-agent-q-tool-fail "start %d is past the end of buffer %s, whose last position is %d."
                                   start (buffer-name) maximum))
          (when (< end start)
            (sly-agent-q-tool-fail "end %d is before start %d; give end >= start (positions count characters from 1)."
                                   end start))
          (let ((cut (min end (+ start cap))))
            (cond ((= maximum 1) (format "[buffer %s is empty]" (buffer-name)))
                  ((< cut end)
                   (concat (sly-agent-q--clean-text (buffer-substring-no-properties start cut))
                           (format "\n[... truncated at the read limit of %d characters: positions %d-%d of %d-%d shown. Call read_buffer with start=%d to read more ...]"
                                   cap start cut 1 maximum cut)))
                  (t (sly-agent-q--clean-text (buffer-substring-no-properties start end))))))))))

;;;; search_in_buffer

(defun sly-agent-q--search-in-buffer (args)
  "The search_in_buffer tool.
ARGS has pattern, and maybe buffer, regex and all_matches."
  (let* ((pattern (gethash "pattern" args))
         (name (gethash "buffer" args))
         (buffer (if name (sly-agent-q--find-buffer name) (sly-agent-q--target-buffer)))
         (regex (sly-agent-q--boolean-argument args "regex" nil))
         (all (sly-agent-q--boolean-argument args "all_matches" t))
         (shown-limit (max 1 sly-agent-q-search-match-limit))
         (count 0) (lines nil))
    (when (string-empty-p pattern)
      (sly-agent-q-tool-fail "The pattern is empty. Give the text (or, with regex true, the regular expression) to search for."))
    (when regex
      (sly-agent-q--check-regexp-time pattern))
    (with-current-buffer buffer
      (save-excursion
        (save-restriction
          (widen)
          (goto-char (point-min))
          (let ((case-fold-search nil)
                (search-spaces-regexp nil))
            (condition-case err
                (let ((more t))
                  (while (and more
                              (if regex
                                  (re-search-forward pattern nil t)
                                (search-forward pattern nil t)))
                    (let ((begin (match-beginning 0))
                          (end (match-end 0)))
                      (setq count (1+ count))
                      (when (<= count shown-limit)
                        (push (format "Line %d, position %d: %s"
                                      (line-number-at-pos begin) begin (sly-agent-q--match-line begin))
                              lines))
                      (cond ((not all) (setq more nil))
                            ;; An empty match would be found again at the same place.
                            ((= begin end)
                             (if (eobp) (setq more nil) (forward-char 1)))))))
              (invalid-regexp
               (sly-agent-q-tool-fail
                "Invalid regular expression '%s': %s. Patterns use Emacs regexp syntax: \\( \\) group, \\| separates alternatives, [0-9] for a digit (no \\d), and ( ) | { } match themselves. Or pass regex false to search for the text as written."
                pattern (cadr err))))))))
    (let ((text
           (if (= count 0)
               (format "No matches found for '%s' in buffer %s." pattern (buffer-name buffer))
             (concat (format "Found %d match%s for '%s' in buffer %s%s:\n"
                             count (if (= count 1) "" "es") pattern (buffer-name buffer)
                             (if (sly-agent-q--boolean-argument args "all_matches" t)
                                 ""
                               " (all_matches false: only the first is shown)"))
                     (string-join (nreverse lines) "\n")
                     (if (> count shown-limit)
                         (format "\n[... %d more matches not shown; use a more specific pattern ...]"
                                 (- count shown-limit))
                       "")))))
      (setq text (sly-agent-q--clean-text text))
      (if (> (length text) (max 1 sly-agent-q-read-limit))
          (concat (substring text 0 sly-agent-q-read-limit)
                  "\n[... truncated at the read limit; use a more specific pattern ...]")
        text))))

;;;; write_file

(defun sly-agent-q--write-target (args &optional approved)
  "Where write_file's ARGS would write: (FILE BUFFER).
BUFFER is the buffer visiting FILE, or nil.  Fails the call when the
file is outside the allowed directories, is a directory, is read-only
\(see `sly-agent-q--check-writable'), or is visited by a buffer with
unsaved changes.  APPROVED non-nil: the call has been approved, and it
also fails when the path's true name changed since it was checked (see
`sly-agent-q--resolve-path')."
  (let ((file (sly-agent-q--resolve-path (gethash "path" args) approved)))
    (sly-agent-q--local-files
      (cond ((file-directory-p file)
             (sly-agent-q-tool-fail "%s is a directory; give the path of a file to write." file))
            ((directory-name-p file)
             (sly-agent-q-tool-fail "%s ends in a slash, so it names a directory; give the path of a file to write." file))
            ((and (file-exists-p file) (not (file-regular-p file)))
             (sly-agent-q-tool-fail "%s is not a regular file (it is a pipe, a socket or a device); it was left alone." file))))
    (sly-agent-q--check-writable file)
    (list file (sly-agent-q--unmodified-visitor file))))

(defun sly-agent-q--check-write-file (args)
  "The check of write_file, run before any approval.
See `sly-agent-q--write-target' for what ARGS may not be."
  (sly-agent-q--write-target args)
  nil)

(defun sly-agent-q--write-file (args)
  "The write_file tool: ARGS has path and content."
  (pcase-let ((`(,file ,visitor) (sly-agent-q--write-target args t))
              (content (gethash "content" args)))
    (let ((existed (sly-agent-q--local-files (file-exists-p file))))
      (sly-agent-q--write-atomically file content (sly-agent-q--file-coding file))
      (concat (format "Wrote %d characters to %s%s." (length content) file (if existed "" " (a new file)"))
              (if visitor
                  (condition-case err
                      (with-current-buffer visitor
                        (revert-buffer t t t)
                        (format " Buffer %s, which visits it, now shows the new content." (buffer-name)))
                    (error (format " Buffer %s visits it but could not be reverted (%s); it shows the old text."
                                   (buffer-name visitor) (error-message-string err))))
                "")))))

;;;; propose_file_edit

(defun sly-agent-q--count-occurrences (text)
  "How often TEXT occurs in the current buffer (overlaps count), at most 2."
  (let ((case-fold-search nil) (count 0))
    (save-excursion
      (save-restriction
        (widen)
        (goto-char (point-min))
        (while (and (< count 2) (search-forward text nil t))
          (setq count (1+ count))
          (goto-char (1+ (match-beginning 0))))))
    count))

(defun sly-agent-q--edit-target (args &optional reviewed)
  "Where propose_file_edit's ARGS would apply: (FILE BUFFER).
BUFFER is the buffer visiting FILE, or nil.  Fails the call unless
`original' occurs exactly once in the text that counts: the buffer's
when it has unsaved changes, else the file's.  REVIEWED non-nil: the
edit has been approved, and the messages say that nothing was applied."
  (let* ((path (gethash "path" args))
         (file (sly-agent-q--resolve-path path reviewed))
         (original (gethash "original" args))
         (modified (gethash "modified" args))
         (buffer (find-buffer-visiting file)))
    (when (string-empty-p original)
      (sly-agent-q-tool-fail "original is empty. Give the exact text to replace (copy it from read_file's lines, without the line numbers); to create or overwrite a whole file use write_file."))
    (when (equal original modified)
      (sly-agent-q-tool-fail "modified is the same as original: there is nothing to change."))
    (let ((count (if (and buffer (buffer-modified-p buffer))
                     (with-current-buffer buffer
                       (sly-agent-q--count-occurrences original))
                   (with-temp-buffer
                     (sly-agent-q--insert-file file)
                     (sly-agent-q--count-occurrences original))))
          (where (if (and buffer (buffer-modified-p buffer))
                     (format " (in the text of buffer %s, which has unsaved changes)" (buffer-name buffer))
                   "")))
      (cond ((and (= count 0) reviewed)
             (sly-agent-q-tool-fail
              "Nothing was applied: the original text is no longer in %s%s; the file changed while the edit was being reviewed. Read the file again (read_file) before proposing the edit again."
              file where))
            ((= count 0)
             (sly-agent-q-tool-fail
              "The original text was not found in %s%s. It must match the current text exactly, including whitespace, indentation and line breaks. Read the file again (read_file) and copy the text to replace exactly."
              file where))
            ((and (> count 1) reviewed)
             (sly-agent-q-tool-fail
              "Nothing was applied: the original text now occurs more than once in %s%s; the file changed while the edit was being reviewed. Read the file again (read_file) before proposing the edit again."
              file where))
            ((> count 1)
             (sly-agent-q-tool-fail
              "The original text occurs more than once in %s%s. Include more of the surrounding lines in original (and the same in modified) so that it matches exactly one place."
              file where))))
    (list file buffer)))

(defun sly-agent-q--check-file-edit (args)
  "The check of propose_file_edit, run before any approval.
ARGS may not set the approval's keys; see also `sly-agent-q--edit-target'."
  (dolist (key '("hunks_total" "hunks_applied"))
    (when (gethash key args)
      (sly-agent-q-tool-fail "%s is set by the approval of the edit, not by the caller; leave it out." key)))
  (sly-agent-q--edit-target args)
  nil)

(defun sly-agent-q--hunks (args)
  "The approval's (APPLIED . TOTAL) in ARGS, or nil when it sent none."
  (let ((total (gethash "hunks_total" args))
        (applied (gethash "hunks_applied" args)))
    (when (or total applied)
      (unless (and (natnump total) (natnump applied) (> total 0) (<= applied total))
        (sly-agent-q-tool-fail
         "The approval of this edit sent hunks_total %S and hunks_applied %S, which do not fit (0 <= hunks_applied <= hunks_total, hunks_total >= 1); nothing was applied. This is a fault of the approval function, not of the edit."
         total applied))
      (cons applied total))))

(defun sly-agent-q--replace-once (original modified)
  "Replace the one occurrence of ORIGINAL in the current buffer with MODIFIED."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (let ((case-fold-search nil))
        (search-forward original)
        (replace-match modified t t)))))

(defun sly-agent-q--propose-file-edit (args)
  "The propose_file_edit tool, run once the edit is approved.
ARGS has path, original, modified and maybe description.  The approval
function may have answered (:modified NEW-ARGS): NEW-ARGS are the
call's arguments with `modified' reduced to the hunks the person
accepted, and two more keys, the approval UI's contract:
  hunks_total    the number of hunks the proposal had (an integer >= 1),
  hunks_applied  how many of them `modified' keeps (0..hunks_total).
With them the result says \"partially accepted: K of N hunks applied\"
when K < N, and 0 hunks applied is a rejection.  The model may not send
them (the check refuses the call).

The edit goes into the buffer visiting the file, if any: saved at once
when it had no unsaved changes (written atomically, without the save
hooks), left unsaved otherwise, for the person to save.  An edit the
person reviewed hunk by hunk opens such a buffer when there is none, so
that `undo' there takes it back in one step.  Otherwise the file is
rewritten atomically."
  (let* ((hunks (sly-agent-q--hunks args))
         (original (gethash "original" args))
         (modified (gethash "modified" args)))
    (when (and hunks (= (car hunks) 0))
      (sly-agent-q-tool-fail "%s" sly-agent-q--rejected-text))
    ;; The file may have changed while the person looked at the edit.
    (pcase-let* ((`(,file ,visitor) (sly-agent-q--edit-target args t))
                 ;; A reviewed edit goes into a buffer, opened if need be,
                 ;; so that the person can undo it there as one step.
                 (buffer (or visitor (and hunks (find-file-noselect file))))
                 (detail
                  (cond
                   ((null buffer)
                    (let ((coding nil) (text nil))
                      (with-temp-buffer
                        (setq coding (sly-agent-q--insert-file file))
                        (sly-agent-q--replace-once original modified)
                        (setq text (buffer-string)))
                      (sly-agent-q--write-atomically file text coding)
                      (format "The edit is applied to %s." file)))
                   ((buffer-modified-p buffer)
                    (with-current-buffer buffer
                      (when buffer-read-only
                        (sly-agent-q-tool-fail "Buffer %s, which visits %s, is read-only; nothing was applied."
                                               (buffer-name) file))
                      (sly-agent-q--replace-once original modified))
                    (format "The edit is applied in buffer %s, which visits %s; it is not saved, because the buffer already had unsaved changes of the user's."
                            (buffer-name buffer) file))
                   (t
                    (with-current-buffer buffer
                      ;; Its text is the file's: the edit was checked against that.
                      (unless (verify-visited-file-modtime buffer)
                        (revert-buffer t t t))
                      (let ((text (with-temp-buffer
                                    (insert-buffer-substring-no-properties buffer)
                                    (sly-agent-q--replace-once original modified)
                                    (buffer-string)))
                            (coding (or buffer-file-coding-system 'utf-8-unix))
                            (old-time (visited-file-modtime)))
                        (when (vectorp (coding-system-eol-type coding))
                          (setq coding (coding-system-change-eol-conversion coding 'unix)))
                        ;; The file first: should that fail, the buffer is untouched.
                        (sly-agent-q--write-atomically file text coding)
                        ;; The buffer then matches the file just written, so
                        ;; changing it raises no "changed on disk" question.
                        (set-visited-file-modtime)
                        (let ((inhibit-read-only t)
                              (create-lockfiles nil))
                          (sly-agent-q--replace-once original modified))
                        ;; The undo entry (t . TIME) of that change says the
                        ;; buffer was unmodified at the new file's time, so
                        ;; undoing it would mark the old text unmodified: it
                        ;; was so at the old file's time.
                        (when (listp buffer-undo-list)
                          (let ((time (if (equal old-time (visited-file-modtime)) -1 old-time)))
                            (cl-loop for entry in buffer-undo-list
                                     while entry
                                     when (eq (car-safe entry) t) do (setcdr entry time))))
                        (set-buffer-modified-p nil)))
                    (format "The edit is applied to %s and saved; buffer %s shows it."
                            file (buffer-name buffer))))))
      (if (and hunks (< (car hunks) (cdr hunks)))
          (format "partially accepted: %d of %d hunks applied\n%s The other hunks were rejected: do not propose them again."
                  (car hunks) (cdr hunks) detail)
        (concat "accepted\n" detail)))))

;;;; The tools

(defun sly-agent-q--define-buffer-tools ()
  "Define the buffer tools.
They are read_file, read_buffer, search_in_buffer, write_file and
propose_file_edit."
  (sly-agent-q-define-tool
   "read_file"
   "Read a text file from disk, with line numbers. Use it to look at source files, configuration or \
documentation before changing them, or to copy the exact text that propose_file_edit's `original` \
needs. Returns the lines as `     N<TAB>text`, numbered from 1 (the numbers are not part of the file). \
At most sly-agent-q-read-limit characters (20000 by default) come back; a marker at the end then says \
which lines were shown and the offset to ask for next. Only files inside the allowed directories (the \
user's project) can be read. For a file open in Emacs with unsaved changes this shows the saved file \
and says so; read_buffer shows the buffer's text."
   '((:name "path" :type :string
	    :description "The file to read: relative to the project root, or absolute inside the allowed directories.")
     (:name "offset" :type :integer :minimum 1 :default 1
	    :description "The first line to return, numbered from 1. Default 1, the start of the file.")
     (:name "limit" :type :integer
	    :description "How many lines to return at most. Default: all lines to the end of the file, up to the read limit in characters."))
   :required '("path")
   :safety-level :safe
   :categories '(:buffer)
   :handler #'sly-agent-q--read-file)

  (sly-agent-q-define-tool
   "read_buffer"
   "Read the text of an Emacs buffer: a file open in the editor (with the user's unsaved changes), a REPL, \
compilation output, and so on. Use it when the text the user sees matters more than the file on disk, \
or for buffers that have no file. Returns the text between two positions as it is, without line numbers. \
At most sly-agent-q-read-limit characters (20000 by default) come back; a marker at the end then gives \
the start position to ask for next. An unknown name fails with the list of open buffers."
   '((:name "buffer" :type :string
	    :description "The buffer's name as Emacs shows it (e.g. \"foo.lisp\" or \"*compilation*\"), or the path of a file a buffer visits.")
     (:name "start" :type :integer :minimum 1 :default 1
	    :description "The position to start at: characters are counted from 1, over the whole buffer (narrowing is ignored). Default 1, the beginning.")
     (:name "end" :type :integer
	    :description "The position to stop at (the character there is not included). Default: the end of the buffer; a larger value means the end."))
   :required '("buffer")
   :safety-level :cautious
   :categories '(:buffer)
   :handler #'sly-agent-q--read-buffer)

  (sly-agent-q-define-tool
   "search_in_buffer"
   "Search an Emacs buffer for a text or a regular expression, case-sensitively, to find where something \
is defined or used before reading or editing around it. Returns `Found N matches for 'PATTERN' in buffer \
NAME:` and one line per match, `Line L, position P: TEXT` with the text of the matching line (trimmed, \
at most 200 characters), or `No matches found for 'PATTERN' ...`. At most 100 matches are listed \
(sly-agent-q-search-match-limit); N always counts them all. Positions can be given to read_buffer's \
start."
   '((:name "pattern" :type :string
	    :description "What to search for: the exact text, or an Emacs regular expression when regex is true.")
     (:name "buffer" :type :string
	    :description "The buffer's name (or the path of a file a buffer visits). Default: the buffer the user was working in when the request started.")
     (:name "regex" :type :boolean :default :false
	    :description "true: pattern is an Emacs regular expression (\\\\( \\\\) groups, \\\\| alternatives, [0-9] for digits, no \\\\d). Default false: pattern is searched as literal text.")
     (:name "all_matches" :type :boolean :default t
	    :description "true (the default): find every match. false: stop at the first match."))
   :required '("pattern")
   :safety-level :safe
   :categories '(:buffer)
   :handler #'sly-agent-q--search-in-buffer)

  (sly-agent-q-define-tool
   "write_file"
   "Create a file, or replace a file's whole content, on disk. Use it for new files, or to rewrite a file \
entirely; to change part of an existing file prefer propose_file_edit, which shows the user a diff. \
The file is replaced atomically (a temporary file in the same directory is renamed over it), so a \
failure leaves the old file intact; missing directories are created; the file keeps its encoding and \
permissions. It refuses a file that is open in Emacs with unsaved changes; an open buffer without \
changes is reverted to show the new content. Only files inside the allowed directories (the user's \
project) can be written, and the user must approve. Returns `Wrote N characters to PATH.`"
   '((:name "path" :type :string
	    :description "The file to write: relative to the project root, or absolute inside the allowed directories.")
     (:name "content" :type :string
	    :description "The complete new content of the file, exactly as it should be written (no line numbers)."))
   :required '("path" "content")
   :safety-level :dangerous
   :categories '(:buffer)
   :handler #'sly-agent-q--write-file
   :check #'sly-agent-q--check-write-file)

  (sly-agent-q-define-tool
   "propose_file_edit"
   "Propose a change to part of a file, for the user to review as a diff and accept or reject. \
This is the way to edit existing files. `original` is the exact text to replace, which must occur \
exactly once in the file (copy it from read_file, without line numbers, with enough surrounding lines \
to be unique); `modified` is the text to put in its place. When the file is open in Emacs the edit is \
made in its buffer (and saved, unless the buffer had unsaved changes). Returns `accepted`, \
`partially accepted: K of N hunks applied` (the user kept only some hunks), or fails with \
`rejected — STOP: do not retry this edit.`, in which case do not propose the same change again: ask \
the user what they want instead. A text that is not found, or found more than once, fails before \
the user is asked; read the file again and retry. Only files inside the allowed directories."
   '((:name "path" :type :string
	    :description "The file to edit: relative to the project root, or absolute inside the allowed directories. It must exist; create files with write_file.")
     (:name "original" :type :string
	    :description "The exact current text to replace, including indentation and line breaks; it must occur exactly once in the file.")
     (:name "modified" :type :string
	    :description "The new text that replaces original (the same text with your changes).")
     (:name "description" :type :string
	    :description "A short explanation of the change and why, shown to the user with the diff. Default: none."))
   :required '("path" "original" "modified")
   :safety-level :dangerous
   :categories '(:diff)
   :handler #'sly-agent-q--propose-file-edit
   :check #'sly-agent-q--check-file-edit
   :denied-message sly-agent-q--rejected-text))

;; Defined when the module loads (at the first call into it, not when
;; this file loads).  Defining Elisp tools does not boot Lisp.
(if (featurep 'sly-agent-q-module)
    (sly-agent-q--define-buffer-tools)
  (add-hook 'sly-agent-q--module-load-hook #'sly-agent-q--define-buffer-tools))

(provide 'sly-agent-q-buffer-tools)

;;; sly-agent-q-buffer-tools.el ends here
