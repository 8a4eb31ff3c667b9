;;; sly-agent-q-inspector.el --- Lisp objects taken apart, part by part -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The sly-agent-q authors
;; SPDX-License-Identifier: GPL-3.0-or-later
;; This file is part of sly-agent-q; see sly-agent-q.el.

;;; Commentary:

;; The inspector of SLY, for the session in this Emacs: `C-c C-v i' in a Lisp
;; buffer (`sly-agent-q-inspect') and RET on a value the REPL printed open
;; *sly-agent-q inspector* on an object.  Each part (a list's elements, a
;; structure's or an instance's slots, a hash table's entries, a symbol's
;; value and function…) is a button: RET inspects it.  `l' goes back, `n'
;; forward again, `g' shows the object as it is now, `q' quits.  The pages
;; come from Lisp (lisp/inspector.lisp), which gives each object shown an
;; id to come back to.

;;; Code:

(require 'button)
(require 'sly-agent-q-runtime)

(declare-function sly-agent-q-lisp--call "sly-agent-q-lisp-mode" (tool arguments callback))
(declare-function sly-agent-q-debugger--inspect-id "sly-agent-q-debugger" (id then))

(defconst sly-agent-q-inspector-buffer-name "*sly-agent-q inspector*"
  "The inspector's buffer.")

(defvar-local sly-agent-q-inspector--page nil
  "The page shown: (:id ID :title TEXT :kind TEXT :parts ((LABEL TEXT ID) …)).")

(defvar-local sly-agent-q-inspector--back nil
  "The ids of the objects inspected before this one, newest first.")

(defvar-local sly-agent-q-inspector--forward nil
  "The ids `sly-agent-q-inspector-back' went back from, newest first.")

(defvar sly-agent-q-inspector-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map special-mode-map)
    (define-key map (kbd "RET") #'sly-agent-q-inspector-inspect-part)
    (define-key map (kbd "l") #'sly-agent-q-inspector-back)
    (define-key map (kbd "DEL") #'sly-agent-q-inspector-back)
    (define-key map (kbd "n") #'sly-agent-q-inspector-forward)
    (define-key map (kbd "g") #'sly-agent-q-inspector-refresh)
    (define-key map (kbd "TAB") #'forward-button)
    (define-key map (kbd "<backtab>") #'backward-button)
    map)
  "Keys of `sly-agent-q-inspector-mode'.")

(define-derived-mode sly-agent-q-inspector-mode special-mode "Inspector"
  "The inspector of the session's objects, as SLY's.
Each part of the object is a button: \\[sly-agent-q-inspector-inspect-part] inspects
it, \\[sly-agent-q-inspector-back] goes back, \\[sly-agent-q-inspector-forward] forward again,
\\[sly-agent-q-inspector-refresh] shows the object as it is now, \\[quit-window] quits.

\\{sly-agent-q-inspector-mode-map}"
  (setq-local revert-buffer-function (lambda (&rest _) (sly-agent-q-inspector-refresh)))
  (setq header-line-format
        (substitute-command-keys
         "\\<sly-agent-q-inspector-mode-map>\\[sly-agent-q-inspector-inspect-part] inspect part  \
\\[sly-agent-q-inspector-back] back  \\[sly-agent-q-inspector-forward] forward  \
\\[sly-agent-q-inspector-refresh] refresh  \\[quit-window] quit")))

(defun sly-agent-q-inspector--page-of (result)
  "The page in RESULT, an evaluate_lisp result plist; an error when it failed."
  (let ((content (or (plist-get result :content) "")))
    (unless (and (plist-get result :success) (string-prefix-p "=> " content))
      (user-error "%s" (car (split-string content "\n" t))))
    (car (read-from-string (car (read-from-string content 3))))))

(defun sly-agent-q-inspector--fetch (code then &optional package)
  "Evaluate CODE, Lisp giving an object, in PACKAGE; call THEN with its page."
  (require 'sly-agent-q-lisp-mode)
  (sly-agent-q-lisp--call "evaluate_lisp"
                          (append (list :code (format "(agent-q::inspector-page-for-emacs %s)" code))
                                  (and package (list :package package)))
                          (lambda (result)
                            (condition-case err
                                (funcall then (sly-agent-q-inspector--page-of result))
                              (user-error (message "%s" (error-message-string err)))))))

(defun sly-agent-q-inspector--fetch-id (id then)
  "Fetch the page of the object inspected under ID and call THEN with it.
The front end's own call (`sly-agent-q-ui-origin')."
  (unless (and (fboundp 'sly-agent-q-debugger--inspect-id)
               ;; A REPL evaluation waiting in the debugger holds the worker.
               (sly-agent-q-debugger--inspect-id id then))
    (let ((sly-agent-q-call-origin sly-agent-q-ui-origin))
      (sly-agent-q-inspector--fetch (format "(agent-q::inspected-object %d)" id) then))))

(defun sly-agent-q-inspector--render (page)
  "Show PAGE in the inspector's buffer."
  (with-current-buffer (get-buffer-create sly-agent-q-inspector-buffer-name)
    (unless (derived-mode-p 'sly-agent-q-inspector-mode)
      (sly-agent-q-inspector-mode))
    (setq sly-agent-q-inspector--page page)
    (let ((inhibit-read-only t)
          (parts (plist-get page :parts)))
      (erase-buffer)
      (insert (propertize (plist-get page :title) 'face 'bold) "\n"
              (propertize (plist-get page :kind) 'face 'shadow) "\n\n")
      (let ((width (apply #'max 0 (mapcar (lambda (part) (string-width (car part))) parts))))
        (dolist (part parts)
          (insert "  " (propertize (string-pad (car part) width) 'face 'font-lock-variable-name-face) "  ")
          (if (nth 2 part)
              (insert-text-button (nth 1 part)
                                  'sly-agent-q-inspector-id (nth 2 part)
                                  'action (lambda (button)
                                            (sly-agent-q-inspector-inspect-id
                                             (button-get button 'sly-agent-q-inspector-id)))
                                  'help-echo "RET: inspect this part")
            (insert (nth 1 part)))
          (insert "\n")))
      (when (null parts) (insert "  (no parts)\n"))
      (goto-char (point-min))
      (forward-button 1 nil nil t))
    (pop-to-buffer (current-buffer))))

(defun sly-agent-q-inspector-show (code &optional package)
  "Inspect the value of CODE, Lisp source, read and evaluated in PACKAGE.
The inspector's history starts again from it."
  (sly-agent-q-inspector--fetch code #'sly-agent-q-inspector-show-page package))

(defun sly-agent-q-inspector-show-page (page)
  "Show PAGE, an object's page from Lisp, starting the history again."
  (with-current-buffer (get-buffer-create sly-agent-q-inspector-buffer-name)
    (setq sly-agent-q-inspector--back nil
          sly-agent-q-inspector--forward nil))
  (sly-agent-q-inspector--render page))

(defun sly-agent-q-inspector-inspect-id (id)
  "Inspect the object the inspector knows as ID; \\[sly-agent-q-inspector-back] comes back."
  (let ((from (plist-get sly-agent-q-inspector--page :id))
        (buffer (current-buffer)))
    (sly-agent-q-inspector--fetch-id
     id (lambda (page)
          (with-current-buffer buffer
            (when from (push from sly-agent-q-inspector--back))
            (setq sly-agent-q-inspector--forward nil))
          (sly-agent-q-inspector--render page)))))

(defun sly-agent-q-inspector-inspect-part ()
  "Inspect the part at point (a button), or say there is none."
  (interactive nil sly-agent-q-inspector-mode)
  (let ((id (get-text-property (point) 'sly-agent-q-inspector-id)))
    (if id
        (sly-agent-q-inspector-inspect-id id)
      (message "No part to inspect here"))))

(defun sly-agent-q-inspector--go (from to)
  "Show the object whose id is first in TO, pushing the current one on FROM.
FROM and TO are the symbols of the history variables."
  (let ((id (car (symbol-value to)))
        (current (plist-get sly-agent-q-inspector--page :id))
        (buffer (current-buffer)))
    (if (null id)
        (message "No object to go to")
      (sly-agent-q-inspector--fetch-id
       id (lambda (page)
            (with-current-buffer buffer
              (set to (cdr (symbol-value to)))
              (when current (set from (cons current (symbol-value from)))))
            (sly-agent-q-inspector--render page))))))

(defun sly-agent-q-inspector-back ()
  "Go back to the object inspected before this one."
  (interactive nil sly-agent-q-inspector-mode)
  (sly-agent-q-inspector--go 'sly-agent-q-inspector--forward 'sly-agent-q-inspector--back))

(defun sly-agent-q-inspector-forward ()
  "Go forward again to the object \\[sly-agent-q-inspector-back] left."
  (interactive nil sly-agent-q-inspector-mode)
  (sly-agent-q-inspector--go 'sly-agent-q-inspector--back 'sly-agent-q-inspector--forward))

(defun sly-agent-q-inspector-refresh ()
  "Show the inspected object as it is now."
  (interactive nil sly-agent-q-inspector-mode)
  (let ((id (plist-get sly-agent-q-inspector--page :id)))
    (if id
        (sly-agent-q-inspector--fetch-id id #'sly-agent-q-inspector--render)
      (message "Nothing is inspected"))))

(provide 'sly-agent-q-inspector)
;;; sly-agent-q-inspector.el ends here
