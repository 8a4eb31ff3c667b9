;;; search-files.el --- search_files over this repository -*- lexical-binding: t; -*-

;; emacs -Q --batch -L elisp -l bench/search-files.el
;; Times the search_files tool over this repository's files (the
;; repository root the one allowed directory; .git, build trees and
;; node_modules skipped as the tool skips them), as an agent's call
;; through `sly-agent-q-execute-tool-calls', the files in the page cache
;; after one call: median, 90th percentile and fastest of 30 calls each
;; for a regexp searched in the files' bytes (ASCII, no syntax classes:
;; the common case) and one that needs the files decoded first (\_<,
;; which looks at characters' syntax).  Prints two lines:
;;   bench: search_files_repo ms=… p90_ms=… min_ms=… files=… loadavg=… target_ms=100
;;   bench: search_files_repo_decoded ms=… p90_ms=… min_ms=… files=… loadavg=…

(require 'sly-agent-q)

(defun search-files-bench--run (name regexp)
  "Time search_files of REGEXP 30 times; print the line NAME."
  (let* ((call (list (list :id "b" :name "search_files" :arguments (list :regexp regexp))))
         (first (plist-get (car (sly-agent-q-execute-tool-calls call)) :content))
         (files (if (string-match "(\\([0-9]+\\) files searched" first) (match-string 1 first) "?"))
         (times nil))
    (dotimes (_ 30)
      (let ((start (float-time)))
        (sly-agent-q-execute-tool-calls call)
        (push (* 1000 (- (float-time) start)) times)))
    (let ((sorted (sort (vconcat times) #'<)))
      (princ (format "bench: %s ms=%.1f p90_ms=%.1f min_ms=%.1f files=%s loadavg=%s%s\n" name
                     (aref sorted 15) (aref sorted 26) (aref sorted 0) files
                     (with-temp-buffer
                       (insert-file-contents "/proc/loadavg")
                       (car (split-string (buffer-string))))
                     (if (equal name "search_files_repo") " target_ms=100" ""))))))

(let ((sly-agent-q-allowed-directories
       (list (expand-file-name ".." (file-name-directory (or load-file-name default-directory))))))
  (search-files-bench--run "search_files_repo" "(defun sly-agent-q--walk ")
  (search-files-bench--run "search_files_repo_decoded" "\\_<sly-agent-q--walk\\_>"))

;;; search-files.el ends here
