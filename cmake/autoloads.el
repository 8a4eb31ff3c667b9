;;; autoloads.el --- Write elisp/sly-agent-q-autoloads.el -*- lexical-binding: t; -*-

;;; Commentary:

;; emacs -Q --batch -l cmake/autoloads.el, from the top directory
;; (`make build' and the CMake target sly-agent-q-autoloads run it):
;; the autoloads of elisp/'s ;;;###autoload cookies, written afresh
;; with `loaddefs-generate' (Emacs 29 and later) or
;; `make-directory-autoloads' (Emacs 28).

;;; Code:

(let* ((top (file-name-directory (directory-file-name
                                  (file-name-directory (or load-file-name default-directory)))))
       (dir (expand-file-name "elisp" top))
       (out (expand-file-name "sly-agent-q-autoloads.el" dir))
       (make-backup-files nil))
  (when (file-exists-p out)
    (delete-file out))
  (if (fboundp 'loaddefs-generate)
      (loaddefs-generate dir out)
    (make-directory-autoloads dir out)))

;;; autoloads.el ends here
