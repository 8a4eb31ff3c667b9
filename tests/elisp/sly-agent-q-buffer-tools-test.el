;;; sly-agent-q-buffer-tools-test.el --- read_file, read_buffer, search_in_buffer, write_file, propose_file_edit -*- lexical-binding: t; -*-

;;; Commentary:

;; The buffer tools of elisp/sly-agent-q-buffer-tools.el, called through
;; `sly-agent-q-execute-tool-calls' and MCP tools/call (and, for
;; propose_file_edit, Lisp's execute-tool-calls) on real files in fresh
;; temporary directories and real buffers.  Approvals are scripted by
;; binding `sly-agent-q-approval-function'.  Also: what the tools rest on,
;; `sly-agent-q-tool-fail' and the :check and :denied-message of
;; `sly-agent-q-define-tool'.

;;; Code:

(require 'sly-agent-q-test-helpers)

;;;; Fixtures

(defvar agentq-bt--immutable nil
  "Directories a test made immutable (chattr +i), undone when it ends.")

(defun agentq-bt--clean-up (directory)
  "Kill the buffers visiting files under DIRECTORY, then delete it."
  (dolist (buffer (buffer-list))
    (let ((file (buffer-file-name buffer)))
      (when (and file (string-prefix-p directory (file-truename file)))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer))))
  (dolist (immutable agentq-bt--immutable)
    (call-process "chattr" nil nil nil "-i" immutable))
  (setq agentq-bt--immutable nil)
  (delete-directory directory t))

(defmacro agentq-bt-with-directory (var &rest body)
  "Run BODY with VAR a fresh temporary directory, the one allowed directory.
VAR is its true name, ending in a slash.  Its buffers and files go
afterwards."
  (declare (indent 1) (debug (symbolp body)))
  `(let* ((,var (file-name-as-directory (file-truename (make-temp-file "agentq-bt-" t))))
          (sly-agent-q-allowed-directories (list ,var))
          (sly-agent-q-target-buffer nil)
          (sly-agent-q-approval-function nil))
     (unwind-protect
         (progn ,@body)
       (agentq-bt--clean-up ,var))))

(defun agentq-bt-write (file text)
  "Write TEXT to FILE as UTF-8, making its directory; return FILE."
  (make-directory (file-name-directory file) t)
  (let ((coding-system-for-write 'utf-8-unix))
    (write-region text nil file nil 'silent))
  file)

(defun agentq-bt-read (file)
  "FILE's text, decoded as UTF-8."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8-unix))
      (insert-file-contents file))
    (buffer-string)))

(defun agentq-bt-call (name arguments)
  "Call tool NAME with ARGUMENTS from Elisp; return (SUCCESS . CONTENT)."
  (let ((result (agentq-test-call name arguments)))
    (cons (plist-get result :success) (plist-get result :content))))

(defun agentq-bt-mcp (name arguments)
  "Call tool NAME with ARGUMENTS over MCP tools/call; return (SUCCESS . TEXT).
A JSON-RPC error (invalid arguments) gives (nil . ITS-MESSAGE)."
  (let* ((response (agentq-test-mcp `(:jsonrpc "2.0" :id 7 :method "tools/call"
                                               :params (:name ,name :arguments ,(or arguments (make-hash-table))))))
         (rpc-error (gethash "error" response)))
    (if rpc-error
        (progn (should (equal (gethash "code" rpc-error) -32602))
               (cons nil (gethash "message" rpc-error)))
      (cons (not (eq (agentq-test-get response "result" "isError") t))
            (agentq-test-get response "result" "content" 0 "text")))))

(defun agentq-bt-both (name arguments)
  "Call tool NAME with ARGUMENTS from Elisp and over MCP, which must agree.
For calls that change nothing.  Returns (SUCCESS . CONTENT)."
  (let ((elisp (agentq-bt-call name arguments))
        (mcp (agentq-bt-mcp name arguments)))
    (should (equal mcp elisp))
    elisp))

(defun agentq-bt-ok (name arguments)
  "Both ways, successful: the content."
  (let ((answer (agentq-bt-both name arguments)))
    (should (eq (car answer) t))
    (cdr answer)))

(defun agentq-bt-fails (name arguments)
  "Both ways, failed: the content."
  (let ((answer (agentq-bt-both name arguments)))
    (should-not (car answer))
    (cdr answer)))

(defvar agentq-bt--asked nil
  "The (TOOL-NAME . ARGUMENTS) the scripted approval function was asked, latest first.")

(defun agentq-bt-approval (decision)
  "An approval function that records what it is asked and answers DECISION.
DECISION may be a function of the arguments hash table."
  (setq agentq-bt--asked nil)
  (lambda (name arguments)
    (push (cons name (copy-hash-table arguments)) agentq-bt--asked)
    (if (functionp decision) (funcall decision arguments) decision)))

(defun agentq-bt-files (directory)
  "The names in DIRECTORY, without . and .., sorted."
  (sort (directory-files directory nil directory-files-no-dot-files-regexp) #'string<))

(defun agentq-bt--make-immutable (directory)
  "Make DIRECTORY immutable (chattr +i); non-nil if no file can be made in it now.
Root may create files in a directory without write permission, but not
in an immutable one.  The flag is removed when the test ends."
  (when (and (executable-find "chattr")
             (eq 0 (call-process "chattr" nil nil nil "+i" directory)))
    (push directory agentq-bt--immutable)
    (let ((probe (expand-file-name "probe" directory)))
      (condition-case nil
          (progn (write-region "" nil probe nil 'silent)
                 (delete-file probe)
                 nil)
        (file-error t)))))

;;;; Registration

(ert-deftest sly-agent-q-buffer-tools/registered-with-descriptions-a-model-can-use ()
  (let ((tools (make-hash-table :test 'equal)))
    (seq-doseq (tool (agentq-test-get (agentq-test-mcp '(:jsonrpc "2.0" :id 1 :method "tools/list")) "result" "tools"))
      (puthash (gethash "name" tool) tool tools))
    (pcase-dolist (`(,name ,parameters ,required)
                   '(("read_file" ("path" "offset" "limit") ["path"])
                     ("read_buffer" ("buffer" "start" "end") ["buffer"])
                     ("search_in_buffer" ("pattern" "buffer" "regex" "all_matches") ["pattern"])
                     ("write_file" ("path" "content") ["path" "content"])
                     ("propose_file_edit" ("path" "original" "modified" "description") ["path" "original" "modified"])))
      (let ((tool (gethash name tools)))
        (should tool)
        (should (> (length (gethash "description" tool)) 300))
        (should (equal (agentq-test-get tool "inputSchema" "required") required))
        (let ((properties (agentq-test-get tool "inputSchema" "properties")))
          (should (equal (sort (hash-table-keys properties) #'string<) (sort (copy-sequence parameters) #'string<)))
          (dolist (parameter parameters)
            (should (> (length (agentq-test-get properties parameter "description")) 40))))))
    ;; The optional parameters say their defaults.
    (dolist (path '(("read_file" "offset") ("read_file" "limit") ("read_buffer" "start") ("read_buffer" "end")
                    ("search_in_buffer" "buffer") ("search_in_buffer" "regex") ("search_in_buffer" "all_matches")
                    ("propose_file_edit" "description")))
      (should (string-match-p "[Dd]efault" (agentq-test-get (gethash (car path) tools) "inputSchema" "properties"
                                                            (cadr path) "description")))))
  ;; Safety levels and categories.
  (let ((names (lambda (level categories)
                 (mapcar (lambda (schema) (gethash "name" (gethash "function" schema)))
                         (sly-agent-q-tools-schema 'openai level categories)))))
    (should (equal (sort (cl-intersection (funcall names :safe '(:buffer :diff))
                                          '("read_file" "read_buffer" "search_in_buffer" "write_file" "propose_file_edit")
                                          :test #'equal)
                         #'string<)
                   '("read_file" "search_in_buffer")))
    (should (member "read_buffer" (funcall names :cautious '(:buffer))))
    (should-not (member "write_file" (funcall names :cautious '(:buffer))))
    (should (member "write_file" (funcall names :dangerous '(:buffer))))
    (should (member "propose_file_edit" (funcall names :dangerous '(:diff))))
    (should-not (member "propose_file_edit" (funcall names :dangerous '(:buffer))))))

(ert-deftest sly-agent-q-buffer-tools/defined-at-load-without-booting-lisp ()
  (pcase-let ((`(,code ,stdout ,_stderr ,_seconds)
               (agentq-test-run-emacs
                '((require 'sly-agent-q)
                  (prin1 (list (plist-get (sly-agent-q-runtime-status) :booted)
                               (cl-loop for name in '("read_file" "read_buffer" "search_in_buffer"
                                                      "write_file" "propose_file_edit")
                                        always (functionp (gethash name sly-agent-q--elisp-handlers)))))
                  (kill-emacs 0)))))
    (should (equal code 0))
    (should (equal stdout "(nil t)"))))

;;;; Failing with a message of one's own, checks, denied messages

(ert-deftest sly-agent-q-buffer-tools/tool-fail-check-and-denied-message ()
  (let* ((name (agentq-test-fresh-name "agentq_checked"))
         (runs nil)
         (sly-agent-q-approval-function (agentq-bt-approval :approved)))
    (sly-agent-q-define-tool
     name "A dangerous test tool with a check and a denied message of its own."
     '((:name "x" :type :string :description "How the check and the handler behave."))
     :required '("x") :safety-level :dangerous
     :check (lambda (args)
              (pcase (gethash "x" args)
                ("refuse" (sly-agent-q-tool-fail "Refused: %s is not %d%%." "x" 100))
                ("break" (error "The check broke"))))
     :handler (lambda (args)
                (push (gethash "x" args) runs)
                (pcase (gethash "x" args)
                  ("fail" (sly-agent-q-tool-fail "Failed as %s." "written"))
                  ("break" (error "Never here"))
                  (_ "ran")))
     :denied-message "Denied, and say so.")
    ;; A failing check: its message as written, no approval asked, no handler run.
    (should (equal (agentq-bt-both name '(:x "refuse")) '(nil . "Refused: x is not 100%.")))
    (should (equal (agentq-bt-both name '(:x "break")) '(nil . "Tool error: The check broke")))
    (should (null agentq-bt--asked))
    (should (null runs))
    ;; A handler's own failure is as written, other errors get "Tool error: ".
    (should (equal (agentq-bt-both name '(:x "fail")) '(nil . "Failed as written.")))
    (should (equal (agentq-bt-both name '(:x "go")) '(t . "ran")))
    (should (= (length agentq-bt--asked) 4))
    ;; A denial answers the tool's text, also with no approval function.
    (let ((sly-agent-q-approval-function (agentq-bt-approval :denied)))
      (should (equal (agentq-bt-both name '(:x "go")) '(nil . "Denied, and say so."))))
    (let ((sly-agent-q-approval-function nil))
      (should (equal (agentq-bt-both name '(:x "go")) '(nil . "Denied, and say so."))))
    ;; From Lisp: the same check and denial.
    (let ((sly-agent-q-approval-function (agentq-bt-approval :denied)))
      (should (equal (agentq-test-eval-ok
                      (format "(mapcar (lambda (r) (list (tool-result-success r) (tool-result-content r)))
                                 (execute-tool-calls '((:id \"1\" :name %S :arguments (:x \"refuse\"))
                                                       (:id \"2\" :name %S :arguments (:x \"go\")))))"
                              name name))
                     "=> ((NIL \"Refused: x is not 100%.\") (NIL \"Denied, and say so.\"))"))
      (should (= (length agentq-bt--asked) 1)))
    (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
      (should (equal (agentq-test-eval-ok
                      (format "(let ((r (first (execute-tool-calls '((:id \"1\" :name %S :arguments (:x \"go\")))))))
                                 (list (tool-result-success r) (tool-result-content r)))"
                              name))
                     "=> (T \"ran\")")))
    ;; Redefined without a check or a denied message: neither is left.
    (sly-agent-q-define-tool name "The same tool, without its check now." '((:name "x" :type :string :description "Anything."))
                             :safety-level :dangerous :handler (lambda (_) "plain"))
    (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
      (should (equal (agentq-bt-both name '(:x "refuse")) '(t . "plain"))))
    (let ((sly-agent-q-approval-function nil))
      (should (equal (agentq-bt-both name '(:x "refuse")) '(nil . "User denied tool execution"))))
    (should-error (sly-agent-q-define-tool name "Bad." nil :handler #'ignore :check "not a function")
                  :type 'sly-agent-q-error)
    (should-error (sly-agent-q-define-tool name "Bad." nil :handler #'ignore :denied-message 'no)
                  :type 'sly-agent-q-error)))

;;;; read_file

(ert-deftest sly-agent-q-buffer-tools/read-file ()
  (agentq-bt-with-directory dir
    (agentq-bt-write (expand-file-name "src/a.lisp" dir) "(defun foo ()\n  \"λ\")\n\n(foo)\n")
    (should (equal (agentq-bt-ok "read_file" '(:path "src/a.lisp"))
                   "     1\t(defun foo ()\n     2\t  \"λ\")\n     3\t\n     4\t(foo)\n"))
    ;; Absolute inside, offset and limit, and the marker for the rest.
    (should (equal (agentq-bt-ok "read_file" `(:path ,(expand-file-name "src/a.lisp" dir) :offset 2 :limit 2))
                   "     2\t  \"λ\")\n     3\t\n[... lines 2-3 of 4 shown. Call read_file with offset=4 to read more ...]\n"))
    (should (equal (agentq-bt-ok "read_file" '(:path "src/a.lisp" :offset 4 :limit 10)) "     4\t(foo)\n"))
    ;; A last line without a newline, an empty file.
    (agentq-bt-write (expand-file-name "b.txt" dir) "one\ntwo")
    (should (equal (agentq-bt-ok "read_file" '(:path "b.txt")) "     1\tone\n     2\ttwo\n"))
    (agentq-bt-write (expand-file-name "empty.txt" dir) "")
    (should (equal (agentq-bt-ok "read_file" '(:path "empty.txt")) (format "[%sempty.txt is empty]\n" dir)))
    ;; Errors a model can act on.
    (should (equal (agentq-bt-fails "read_file" '(:path "src/nope.lisp"))
                   (format "%ssrc/nope.lisp does not exist. Check the path (relative paths start at %s)." dir dir)))
    (should (equal (agentq-bt-fails "read_file" '(:path "src"))
                   (format "%ssrc is a directory, not a file. Give the path of a file in it." dir)))
    (should (equal (agentq-bt-fails "read_file" '(:path "src/a.lisp" :offset 5))
                   (format "offset 5 is past the end of %ssrc/a.lisp, which has 4 lines." dir)))
    (should (equal (agentq-bt-fails "read_file" '(:path "src/a.lisp" :offset 0)) "Invalid argument 'offset': at least 1, got 0"))
    (should (equal (agentq-bt-fails "read_file" '(:path "src/a.lisp" :limit -3)) "limit must be at least 1, not -3."))
    (should (equal (agentq-bt-fails "read_file" '(:path "  ")) (format "The path is empty. Give a file name, absolute or relative to %s." dir)))
    (let ((coding-system-for-write 'binary))
      (write-region (unibyte-string 127 69 76 70 0 1 2 0 10) nil (expand-file-name "prog" dir) nil 'silent))
    (should (equal (agentq-bt-fails "read_file" '(:path "prog"))
                   (format "%sprog looks like a binary file (it contains NUL bytes); read_file reads text files only." dir)))
    ;; Wrong argument types are the executor's messages.
    (should (equal (agentq-bt-fails "read_file" '(:path 42)) "Invalid argument 'path': expected string, got integer"))
    (should (equal (agentq-bt-fails "read_file" '(:path "src/a.lisp" :offset "two"))
                   "Invalid argument 'offset': expected integer, got string"))
    (should (equal (agentq-bt-fails "read_file" '(:path "src/a.lisp" :limit 1.5))
                   "Invalid argument 'limit': expected integer, got number"))
    (should (equal (agentq-bt-fails "read_file" nil) "Missing required argument: path"))
    ;; A pipe would block: refused before anything reads it.
    (should (eq 0 (call-process "mkfifo" nil nil nil (expand-file-name "pipe" dir))))
    (should (equal (agentq-bt-fails "read_file" '(:path "pipe"))
                   (format "%spipe is not a regular file (it is a pipe, a socket or a device); only regular files can be read." dir)))
    (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
      (should (equal (agentq-bt-fails "write_file" '(:path "pipe" :content "x"))
                     (format "%spipe is not a regular file (it is a pipe, a socket or a device); it was left alone." dir)))
      (should (string-prefix-p (format "%spipe is not a regular file" dir)
                               (agentq-bt-fails "propose_file_edit" '(:path "pipe" :original "x" :modified "y"))))
      (should (null agentq-bt--asked)))
    ;; Invalid UTF-8 comes back as U+FFFD, not as a failure.
    (let ((coding-system-for-write 'binary))
      (write-region (unibyte-string ?o ?k #xff ?! 10) nil (expand-file-name "latin.txt" dir) nil 'silent))
    (should (string-prefix-p "     1\tok" (agentq-bt-ok "read_file" '(:path "latin.txt"))))))

(ert-deftest sly-agent-q-buffer-tools/read-file-notes-unsaved-changes ()
  (agentq-bt-with-directory dir
    (let ((file (agentq-bt-write (expand-file-name "a.lisp" dir) "saved\n")))
      (with-current-buffer (find-file-noselect file)
        (goto-char (point-max))
        (insert "unsaved\n")
        (should (equal (agentq-bt-ok "read_file" '(:path "a.lisp"))
                       (concat "     1\tsaved\n[note: buffer a.lisp visits this file and has unsaved changes; "
                               "this is the file as saved. read_buffer shows the buffer's text.]\n")))
        (should (equal (agentq-bt-ok "read_buffer" '(:buffer "a.lisp")) "saved\nunsaved\n"))))))

(ert-deftest sly-agent-q-buffer-tools/read-file-cap-and-marker ()
  (agentq-bt-with-directory dir
    (let* ((lines (cl-loop for i from 1 to 10 collect (format "line %d of the file" i)))
           (sly-agent-q-read-limit 70))
      (agentq-bt-write (expand-file-name "long.txt" dir) (concat (string-join lines "\n") "\n"))
      (should (equal (agentq-bt-ok "read_file" '(:path "long.txt"))
                     (concat "     1\tline 1 of the file\n     2\tline 2 of the file\n"
                             "[... truncated at the read limit of 70 characters: lines 1-2 of 10 shown. "
                             "Call read_file with offset=3 to read more ...]\n")))
      ;; Following the markers reads the whole file, each answer within the limit.
      (let ((offset 1) (read nil))
        (while offset
          (let ((text (agentq-bt-ok "read_file" `(:path "long.txt" :offset ,offset))))
            (dolist (line (split-string text "\n" t))
              (when (string-match "\\`\\s-*[0-9]+\t\\(.*\\)\\'" line)
                (push (match-string 1 line) read)))
            (should (<= (length (car (split-string text "\\[\\.\\.\\."))) 70))
            (setq offset (and (string-match "offset=\\([0-9]+\\)" text)
                              (string-to-number (match-string 1 text))))))
        (should (equal (nreverse read) lines)))
      ;; A line longer than the limit is cut, and the marker says so.
      (agentq-bt-write (expand-file-name "wide.txt" dir) (concat (make-string 200 ?x) "\nnext\n"))
      (should (equal (agentq-bt-ok "read_file" '(:path "wide.txt"))
                     (concat "     1\t" (make-string 63 ?x) "\n"
                             "[... line 1 is longer than the read limit of 70 characters and was cut. "
                             "The lines after it: call read_file with offset=2 ...]\n")))
      (should (equal (agentq-bt-ok "read_file" '(:path "wide.txt" :offset 2)) "     2\tnext\n")))))

(defun agentq-bt--recording-reads (function)
  "Call FUNCTION; return the (BEG . END) of each `insert-file-contents' it made."
  (let* ((reads nil)
         (record (lambda (_file &optional _visit beg end &rest _) (push (cons beg end) reads))))
    (advice-add 'insert-file-contents :before record)
    (unwind-protect (funcall function)
      (advice-remove 'insert-file-contents record))
    (nreverse reads)))

(ert-deftest sly-agent-q-buffer-tools/read-file-reads-only-what-is-asked ()
  "read_file with limit 1 on a 50 MB file reads its first chunk, not the
file, and says that more lines follow; offsets near its end still work,
and then it counts the lines."
  (agentq-bt-with-directory dir
    (let* ((file (expand-file-name "big.txt" dir))
           ;; 1 MB: 16384 lines of 64 bytes.
           (filler (apply #'concat (make-list 16384 (concat (make-string 63 ?x) "\n"))))
           (lines (+ 1 (* 50 16384) 2)))
      (agentq-bt-write file "first line\n")
      (let ((coding-system-for-write 'utf-8-unix))
        (dotimes (_ 50) (write-region filler nil file t 'silent))
        (write-region "second to last\nlast λ line\n" nil file t 'silent))
      (should (> (file-attribute-size (file-attributes file)) (* 50 1024 1024)))
      (let* ((text nil)
             (reads (agentq-bt--recording-reads
                     (lambda () (setq text (agentq-bt-ok "read_file" '(:path "big.txt" :limit 1)))))))
        (should (string-prefix-p "     1\tfirst line\n[... lines 1-1 shown, and more follow (the file is " text))
        (should (string-suffix-p "so its lines were not counted). Call read_file with offset=2 to read more ...]\n" text))
        ;; Two calls (Elisp and MCP), each read a part of the file, never all of it.
        (should reads)
        (dolist (read reads)
          (should (and (car read) (cdr read)))
          (should (<= (- (cdr read) (car read)) sly-agent-q--read-file-chunk)))
        (should (<= (apply #'+ (mapcar (lambda (read) (- (cdr read) (car read))) reads))
                    (* 4 sly-agent-q--read-file-chunk))))
      ;; Near the end: the lines, and no marker (nothing follows).
      (should (equal (agentq-bt-ok "read_file" `(:path "big.txt" :offset ,(1- lines)))
                     (format "%6d\tsecond to last\n%6d\tlast λ line\n" (1- lines) lines)))
      (should (equal (agentq-bt-ok "read_file" `(:path "big.txt" :offset ,(- lines 2) :limit 1))
                     (format "%6d\t%s\n[... lines %d-%d of %d shown. Call read_file with offset=%d to read more ...]\n"
                             (- lines 2) (make-string 63 ?x) (- lines 2) (- lines 2) lines (1- lines))))
      (should (equal (agentq-bt-fails "read_file" `(:path "big.txt" :offset ,(1+ lines)))
                     (format "offset %d is past the end of %sbig.txt, which has %d lines." (1+ lines) dir lines))))))

(ert-deftest sly-agent-q-buffer-tools/read-file-in-small-chunks ()
  "Read a chunk at a time, read_file answers the same lines whatever the
chunk size: lines and characters cut by a chunk's end are put together."
  (agentq-bt-with-directory dir
    (let ((lines '("(defun foo ()" "  \"λ → ∀\")" "" "(foo) ; ok" "é")))
      (agentq-bt-write (expand-file-name "a.lisp" dir) (concat (string-join lines "\n") "\n"))
      (agentq-bt-write (expand-file-name "crlf.txt" dir) "one\r\ntwo λ\r\nthree\r\n")
      (dolist (chunk '(1 2 3 5 7 64))
        (let ((sly-agent-q--read-file-chunk chunk))
          ;; The lines are counted when the reading reached the end.
          (should (string-match-p
                   (concat "\\`     2\t  \"λ → ∀\")\n     3\t\n     4\t(foo) ; ok\n"
                           "\\[\\.\\.\\. lines 2-4 \\(?:of 5 shown\\|shown, and more follow (the file is 45; "
                           "it was read only as far as these lines, so its lines were not counted)\\)"
                           "\\. Call read_file with offset=5 to read more \\.\\.\\.]\n\\'")
                   (agentq-bt-ok "read_file" '(:path "a.lisp" :offset 2 :limit 3))))
          (when (>= chunk 64)
            (should (string-match-p "lines 2-4 of 5 shown" (agentq-bt-ok "read_file" '(:path "a.lisp" :offset 2 :limit 3)))))
          ;; To the end: the last line, and the count.
          (should (equal (agentq-bt-ok "read_file" '(:path "a.lisp" :offset 4)) "     4\t(foo) ; ok\n     5\té\n"))
          (should (equal (agentq-bt-fails "read_file" '(:path "a.lisp" :offset 7))
                         (format "offset 7 is past the end of %sa.lisp, which has 5 lines." dir)))))
      ;; CRLF found in the first chunk's lines holds for the rest.
      (let ((sly-agent-q--read-file-chunk 5))
        (should (equal (agentq-bt-ok "read_file" '(:path "crlf.txt")) "     1\tone\n     2\ttwo λ\n     3\tthree\n"))))))

(ert-deftest sly-agent-q-buffer-tools/read-file-long-line-and-nul-in-what-is-read ()
  "A line longer than the limit is cut without reading to its end, and
a NUL counts where it is read: in the first 8000 bytes, or a line shown."
  (agentq-bt-with-directory dir
    (let ((sly-agent-q-read-limit 70)
          (sly-agent-q--read-file-chunk 1000))
      (agentq-bt-write (expand-file-name "wide.txt" dir) (concat (make-string 5000 ?y) "\nnext\n"))
      (let* ((text nil)
             (reads (agentq-bt--recording-reads
                     (lambda () (setq text (agentq-bt-ok "read_file" '(:path "wide.txt")))))))
        (should (equal text (concat "     1\t" (make-string 63 ?y) "\n"
                                    "[... line 1 is longer than the read limit of 70 characters and was cut. "
                                    "The lines after it, if any: call read_file with offset=2 ...]\n")))
        (should (equal reads '((0 . 1000) (0 . 1000)))))
      (should (equal (agentq-bt-ok "read_file" '(:path "wide.txt" :offset 2)) "     2\tnext\n")))
    (agentq-bt-write (expand-file-name "log.txt" dir)
                     (concat (apply #'concat (make-list 5000 "ok\n")) "a\0b\n" "fine\n"))
    (should (equal (agentq-bt-ok "read_file" '(:path "log.txt" :limit 1))
                   "     1\tok\n[... lines 1-1 of 5002 shown. Call read_file with offset=2 to read more ...]\n"))
    (should (equal (agentq-bt-ok "read_file" '(:path "log.txt" :offset 5002)) "  5002\tfine\n"))
    (should (equal (agentq-bt-fails "read_file" '(:path "log.txt" :offset 5000))
                   (format "%slog.txt looks like a binary file (line 5001 contains NUL bytes); read_file reads text files only." dir)))))

;;;; read_buffer

(ert-deftest sly-agent-q-buffer-tools/read-buffer ()
  (agentq-bt-with-directory dir
    (let ((buffer (get-buffer-create "agentq-bt *notes*"))
          (file (agentq-bt-write (expand-file-name "v.lisp" dir) "(visited)\n")))
      (unwind-protect
          (with-current-buffer buffer
            (insert "0123456789\nsecond line\n")
            (narrow-to-region 3 5)
            (should (equal (agentq-bt-ok "read_buffer" '(:buffer "agentq-bt *notes*")) "0123456789\nsecond line\n"))
            (should (equal (agentq-bt-ok "read_buffer" '(:buffer "agentq-bt *notes*" :start 12 :end 18)) "second"))
            (should (equal (agentq-bt-ok "read_buffer" '(:buffer "agentq-bt *notes*" :start 12 :end 1000)) "second line\n"))
            ;; Narrowing is left as it was.
            (should (equal (buffer-string) "23"))
            (should (equal (agentq-bt-fails "read_buffer" '(:buffer "agentq-bt *notes*" :start 30))
                           "start 30 is past the end of buffer agentq-bt *notes*, whose last position is 24."))
            (should (equal (agentq-bt-fails "read_buffer" '(:buffer "agentq-bt *notes*" :start 5 :end 2))
                           "end 2 is before start 5; give end >= start (positions count characters from 1)."))
            (should (equal (agentq-bt-fails "read_buffer" '(:buffer "agentq-bt *notes*" :start 0))
                           "Invalid argument 'start': at least 1, got 0"))
            ;; A buffer found by the file it visits.
            (find-file-noselect file)
            (should (equal (agentq-bt-ok "read_buffer" `(:buffer ,file)) "(visited)\n"))
            ;; Unknown buffer: the message lists the open ones.
            (let ((text (agentq-bt-fails "read_buffer" '(:buffer "no-such-buffer.lisp"))))
              (should (string-prefix-p "No buffer named 'no-such-buffer.lisp'. Open buffers: " text))
              (should (string-match-p "agentq-bt \\*notes\\*" text))
              (should (string-match-p "v\\.lisp" text))
              (should (string-suffix-p ". Use one of these names, or read_file for a file that is not open." text)))
            (should (string-prefix-p "The buffer name is empty." (agentq-bt-fails "read_buffer" '(:buffer ""))))
            (should (equal (agentq-bt-fails "read_buffer" '(:buffer "agentq-bt *notes*" :start "1"))
                           "Invalid argument 'start': expected integer, got string"))
            (should (equal (agentq-bt-fails "read_buffer" '(:start 1)) "Missing required argument: buffer"))
            (erase-buffer)
            (should (equal (agentq-bt-ok "read_buffer" '(:buffer "agentq-bt *notes*")) "[buffer agentq-bt *notes* is empty]")))
        (kill-buffer buffer)))))

(ert-deftest sly-agent-q-buffer-tools/read-buffer-cap-and-marker ()
  (let ((buffer (get-buffer-create "agentq-bt long"))
        (sly-agent-q-read-limit 100))
    (unwind-protect
        (with-current-buffer buffer
          (dotimes (i 25) (insert (format "row %02d\n" i)))   ; 175 characters
          (should (equal (agentq-bt-ok "read_buffer" '(:buffer "agentq-bt long"))
                         (concat (buffer-substring-no-properties 1 101)
                                 "\n[... truncated at the read limit of 100 characters: positions 1-101 of 1-176 shown. "
                                 "Call read_buffer with start=101 to read more ...]")))
          (let ((start 1) (parts nil))
            (while start
              (let* ((text (agentq-bt-ok "read_buffer" `(:buffer "agentq-bt long" :start ,start)))
                     (marker (string-match "\n\\[\\.\\.\\. truncated.*start=\\([0-9]+\\)" text)))
                (push (substring text 0 marker) parts)
                (should (<= (length (car parts)) 100))
                (setq start (and marker (string-to-number (match-string 1 text))))))
            (should (equal (apply #'concat (nreverse parts)) (buffer-string)))))
      (kill-buffer buffer))))

;;;; search_in_buffer

(ert-deftest sly-agent-q-buffer-tools/search-in-buffer ()
  (let ((buffer (get-buffer-create "agentq-bt search.lisp")))
    (unwind-protect
        (with-current-buffer buffer
          (insert "(defun foo (x)\n  (foo-bar x))\n\n   (setq a.b 1) ; Foo\n")
          (should (equal (agentq-bt-ok "search_in_buffer" '(:pattern "foo" :buffer "agentq-bt search.lisp"))
                         (concat "Found 2 matches for 'foo' in buffer agentq-bt search.lisp:\n"
                                 "Line 1, position 8: (defun foo (x)\n"
                                 "Line 2, position 19: (foo-bar x))")))
          ;; Literal by default: regexp characters are themselves.
          (should (equal (agentq-bt-ok "search_in_buffer" '(:pattern "a.b" :buffer "agentq-bt search.lisp"))
                         "Found 1 match for 'a.b' in buffer agentq-bt search.lisp:\nLine 4, position 41: (setq a.b 1) ; Foo"))
          (should (equal (agentq-bt-ok "search_in_buffer" '(:pattern "(foo" :buffer "agentq-bt search.lisp" :regex :false))
                         "Found 1 match for '(foo' in buffer agentq-bt search.lisp:\nLine 2, position 18: (foo-bar x))"))
          (should (equal (agentq-bt-ok "search_in_buffer" '(:pattern "a\\.b\\|x)$" :buffer "agentq-bt search.lisp" :regex t))
                         (concat "Found 2 matches for 'a\\.b\\|x)$' in buffer agentq-bt search.lisp:\n"
                                 "Line 1, position 13: (defun foo (x)\n"
                                 "Line 4, position 41: (setq a.b 1) ; Foo")))
          ;; First match only.
          (should (equal (agentq-bt-ok "search_in_buffer" '(:pattern "o" :buffer "agentq-bt search.lisp" :all_matches :false))
                         (concat "Found 1 match for 'o' in buffer agentq-bt search.lisp (all_matches false: only the first is shown):\n"
                                 "Line 1, position 9: (defun foo (x)")))
          ;; Case matters; nothing found.
          (should (equal (agentq-bt-ok "search_in_buffer" '(:pattern "FOO" :buffer "agentq-bt search.lisp"))
                         "No matches found for 'FOO' in buffer agentq-bt search.lisp."))
          ;; Empty matches end (one per line start here, and the empty last line).
          (should (string-prefix-p "Found 5 matches for '^'"
                                   (agentq-bt-ok "search_in_buffer" '(:pattern "^" :buffer "agentq-bt search.lisp" :regex t))))
          (should (string-prefix-p "Found 1 match for '\\`'"
                                   (agentq-bt-ok "search_in_buffer" '(:pattern "\\`" :buffer "agentq-bt search.lisp" :regex t))))
          ;; Errors.
          (should (string-prefix-p
                   "Invalid regular expression 'foo\\(': Unmatched ( or \\(. Patterns use Emacs regexp syntax"
                   (agentq-bt-fails "search_in_buffer" '(:pattern "foo\\(" :buffer "agentq-bt search.lisp" :regex t))))
          (should (string-prefix-p "The pattern is empty."
                                   (agentq-bt-fails "search_in_buffer" '(:pattern "" :buffer "agentq-bt search.lisp"))))
          (should (string-prefix-p "No buffer named 'nope'. Open buffers: "
                                   (agentq-bt-fails "search_in_buffer" '(:pattern "x" :buffer "nope"))))
          (should (equal (agentq-bt-fails "search_in_buffer" '(:pattern "x" :regex "yes"))
                         "Invalid argument 'regex': expected boolean, got string"))
          (should (equal (agentq-bt-fails "search_in_buffer" '(:pattern 1)) "Invalid argument 'pattern': expected string, got integer"))
          (should (equal (agentq-bt-fails "search_in_buffer" '(:buffer "x")) "Missing required argument: pattern"))
          ;; The buffer is as it was.
          (should (equal (point) (point-max)))
          (should (equal (buffer-string) "(defun foo (x)\n  (foo-bar x))\n\n   (setq a.b 1) ; Foo\n")))
      (kill-buffer buffer))))

(ert-deftest sly-agent-q-buffer-tools/search-in-the-target-buffer ()
  (let ((work (get-buffer-create "agentq-bt work.lisp"))
        (chat (get-buffer-create "agentq-bt *chat*")))
    (unwind-protect
        (progn
          (with-current-buffer work (insert "(defun target () :here)\n"))
          (with-current-buffer chat (insert "target in the chat\n"))
          (with-current-buffer chat
            ;; Not the buffer the call is made from, but the target: a buffer or a name.
            (dolist (target (list work "agentq-bt work.lisp"))
              (let ((sly-agent-q-target-buffer target))
                (should (equal (agentq-bt-ok "search_in_buffer" '(:pattern "target"))
                               "Found 1 match for 'target' in buffer agentq-bt work.lisp:\nLine 1, position 8: (defun target () :here)"))))
            ;; nil: the selected window's buffer.
            (let ((sly-agent-q-target-buffer nil))
              (should (string-suffix-p (format "in buffer %s." (buffer-name (window-buffer (selected-window))))
                                       (agentq-bt-ok "search_in_buffer" '(:pattern "agentq-bt no such text"))))))
          (let ((sly-agent-q-target-buffer "agentq-bt gone"))
            (should (equal (agentq-bt-fails "search_in_buffer" '(:pattern "x"))
                           "The buffer the request started in (agentq-bt gone) no longer exists. Name a buffer with the `buffer' argument."))))
      (kill-buffer work)
      (kill-buffer chat))))

(ert-deftest sly-agent-q-buffer-tools/search-limits ()
  (let ((buffer (get-buffer-create "agentq-bt many"))
        (sly-agent-q-search-match-limit 3))
    (unwind-protect
        (with-current-buffer buffer
          (dotimes (_ 10) (insert "hit\n"))
          (insert (make-string 300 ?a) "hit" (make-string 300 ?b) "\n")
          (should (equal (agentq-bt-ok "search_in_buffer" '(:pattern "hit" :buffer "agentq-bt many"))
                         (concat "Found 11 matches for 'hit' in buffer agentq-bt many:\n"
                                 "Line 1, position 1: hit\nLine 2, position 5: hit\nLine 3, position 9: hit\n"
                                 "[... 8 more matches not shown; use a more specific pattern ...]")))
          ;; A long line shows 200 characters around the match.
          (let ((sly-agent-q-search-match-limit 100))
            (should (string-suffix-p (concat "Line 11, position 341: …" (make-string 80 ?a) "hit" (make-string 117 ?b) "…")
                                     (agentq-bt-ok "search_in_buffer" '(:pattern "hit" :buffer "agentq-bt many")))))
          ;; A regexp whose matching takes exponential time (on the line
          ;; of 300 a's it would hang Emacs) is refused; as text it is fine.
          (dolist (pattern '("\\(a*\\)*c" "\\(a\\|aa\\)+c"))
            (should (string-prefix-p (format "The regexp '%s' repeats a group that itself repeats something or has alternatives" pattern)
                                     (agentq-bt-fails "search_in_buffer" `(:pattern ,pattern :buffer "agentq-bt many" :regex t))))
            (should (string-prefix-p "No matches found"
                                     (agentq-bt-ok "search_in_buffer" `(:pattern ,pattern :buffer "agentq-bt many"))))))
      (kill-buffer buffer))))

;;;; Confinement

(ert-deftest sly-agent-q-buffer-tools/confinement ()
  (agentq-bt-with-directory dir
    (let* ((outside (file-name-as-directory (file-truename (make-temp-file "agentq-bt-outside-" t))))
           (secret (agentq-bt-write (expand-file-name "secret.txt" outside) "secret\n"))
           (sly-agent-q-approval-function (agentq-bt-approval :approved)))
      (unwind-protect
          (progn
            (agentq-bt-write (expand-file-name "in.txt" dir) "inside\n")
            (make-symbolic-link secret (expand-file-name "link.txt" dir))
            (make-symbolic-link outside (expand-file-name "linkdir" dir))
            (make-symbolic-link (expand-file-name "in.txt" dir) (expand-file-name "inlink.txt" dir))
            (let ((relative (file-relative-name secret dir)))
              (should (string-prefix-p "../" relative))
              (dolist (path (list relative secret "link.txt" "linkdir/secret.txt"
                                  (concat dir "sub/../../" (file-name-nondirectory (directory-file-name outside)) "/secret.txt")
                                  "/ssh:host:/etc/passwd"))
                (dolist (call `(("read_file" :path ,path)
                                ("write_file" :path ,path :content "overwritten")
                                ("propose_file_edit" :path ,path :original "secret" :modified "public")))
                  (let ((text (agentq-bt-fails (car call) (cdr call))))
                    (should (string-prefix-p (format "Access denied: %s resolves to " path) text))
                    (should (string-match-p (regexp-quote (format "which is outside the allowed directories (%s)." dir))
                                            text))))))
            ;; Nothing was asked, written or made.
            (should (null agentq-bt--asked))
            (should (equal (agentq-bt-read secret) "secret\n"))
            (should (equal (agentq-bt-files outside) '("secret.txt")))
            (should (equal (agentq-bt-files dir) '("in.txt" "inlink.txt" "link.txt" "linkdir")))
            ;; A symbolic link that stays inside is fine.
            (should (equal (agentq-bt-ok "read_file" '(:path "inlink.txt")) "     1\tinside\n"))
            ;; Several allowed directories; relative paths start at the first.
            (let ((sly-agent-q-allowed-directories (list dir outside)))
              (should (equal (agentq-bt-ok "read_file" `(:path ,secret)) "     1\tsecret\n"))
              (should (equal (agentq-bt-ok "read_file" '(:path "in.txt")) "     1\tinside\n"))))
        (delete-directory outside t)))))

(ert-deftest sly-agent-q-buffer-tools/confinement-defaults-to-the-target-buffers-project ()
  (agentq-bt-with-directory dir
    (let ((sly-agent-q-allowed-directories nil)
          (project (expand-file-name "proj/" dir)))
      (make-directory (expand-file-name ".git" project) t)
      (agentq-bt-write (expand-file-name "README" project) "read me\n")
      (agentq-bt-write (expand-file-name "outside.txt" dir) "outside\n")
      (let ((source (agentq-bt-write (expand-file-name "src/a.lisp" project) "(a)\n")))
        ;; The project of the buffer the user works in, not of the buffer the call comes from.
        (let ((sly-agent-q-target-buffer (find-file-noselect source)))
          (with-temp-buffer
            (setq default-directory "/")
            (should (equal (agentq-bt-ok "read_file" '(:path "README")) "     1\tread me\n"))
            (should (equal (agentq-bt-ok "read_file" '(:path "src/a.lisp")) "     1\t(a)\n"))
            (should (equal (agentq-bt-fails "read_file" '(:path "../outside.txt"))
                           (format "Access denied: ../outside.txt resolves to %soutside.txt, which is outside the allowed directories (%s). Only files inside them can be read or changed; use a path inside one of them."
                                   dir project)))))
        ;; Outside any project: the target buffer's directory.
        (let ((sly-agent-q-target-buffer (get-buffer-create "agentq-bt no project")))
          (unwind-protect
              (progn
                (with-current-buffer sly-agent-q-target-buffer
                  (setq default-directory (file-name-as-directory (expand-file-name "elsewhere" dir))))
                (make-directory (expand-file-name "elsewhere" dir))
                (agentq-bt-write (expand-file-name "elsewhere/e.txt" dir) "e\n")
                (should (equal (agentq-bt-ok "read_file" '(:path "e.txt")) "     1\te\n"))
                (should (string-prefix-p "Access denied: " (agentq-bt-fails "read_file" `(:path ,(expand-file-name "outside.txt" dir))))))
            (kill-buffer sly-agent-q-target-buffer)))))))

;;;; write_file

(ert-deftest sly-agent-q-buffer-tools/write-file ()
  (agentq-bt-with-directory dir
    (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
      ;; A new file in new directories, from Elisp; exactly the content given.
      (should (equal (agentq-bt-call "write_file" '(:path "new/deep/a.lisp" :content "(λ)\n;; no newline at the end"))
                     (cons t (format "Wrote 28 characters to %snew/deep/a.lisp (a new file)." dir))))
      (should (equal (agentq-bt-read (expand-file-name "new/deep/a.lisp" dir)) "(λ)\n;; no newline at the end"))
      (should (equal (caar agentq-bt--asked) "write_file"))
      ;; Over MCP, replacing it: the permissions stay, no temporary file is left.
      (set-file-modes (expand-file-name "new/deep/a.lisp" dir) #o600)
      (should (equal (agentq-bt-mcp "write_file" `(:path ,(expand-file-name "new/deep/a.lisp" dir) :content "replaced\n"))
                     (cons t (format "Wrote 9 characters to %snew/deep/a.lisp." dir))))
      (should (equal (agentq-bt-read (expand-file-name "new/deep/a.lisp" dir)) "replaced\n"))
      (should (= (file-modes (expand-file-name "new/deep/a.lisp" dir)) #o600))
      (should (equal (agentq-bt-files (expand-file-name "new/deep" dir)) '("a.lisp")))
      ;; The file keeps its line ends.
      (let ((coding-system-for-write 'binary))
        (write-region "one\r\ntwo\r\n" nil (expand-file-name "dos.txt" dir) nil 'silent))
      (should (car (agentq-bt-call "write_file" '(:path "dos.txt" :content "uno\ndos\n"))))
      (should (equal (with-temp-buffer (set-buffer-multibyte nil)
                                       (insert-file-contents-literally (expand-file-name "dos.txt" dir))
                                       (buffer-string))
                     "uno\r\ndos\r\n"))
      ;; Errors.
      (should (equal (agentq-bt-fails "write_file" '(:path "new" :content "x"))
                     (format "%snew is a directory; give the path of a file to write." dir)))
      (should (equal (agentq-bt-fails "write_file" '(:path "fresh/" :content "x"))
                     (format "%sfresh/ ends in a slash, so it names a directory; give the path of a file to write." dir)))
      (should-not (file-exists-p (expand-file-name "fresh" dir)))
      (should (equal (agentq-bt-fails "write_file" '(:path "x.txt" :content 5))
                     "Invalid argument 'content': expected string, got integer"))
      (should (equal (agentq-bt-fails "write_file" '(:path "x.txt")) "Missing required argument: content"))
      (should-not (file-exists-p (expand-file-name "x.txt" dir))))
    ;; Denied: nothing written.
    (dolist (approval (list nil (agentq-bt-approval :denied)))
      (let ((sly-agent-q-approval-function approval))
        (should (equal (agentq-bt-both "write_file" '(:path "denied.txt" :content "x"))
                       '(nil . "User denied tool execution")))))
    (should-not (file-exists-p (expand-file-name "denied.txt" dir)))))

(ert-deftest sly-agent-q-buffer-tools/write-file-and-visiting-buffers ()
  (agentq-bt-with-directory dir
    (let* ((sly-agent-q-approval-function (agentq-bt-approval :approved))
           (file (agentq-bt-write (expand-file-name "v.lisp" dir) "old\n"))
           (buffer (find-file-noselect file)))
      ;; An unmodified visiting buffer is reverted to show the new text.
      (with-current-buffer buffer (goto-char 3))
      (should (equal (agentq-bt-call "write_file" '(:path "v.lisp" :content "new text\n"))
                     (cons t (format "Wrote 9 characters to %sv.lisp. Buffer v.lisp, which visits it, now shows the new content." dir))))
      (should (buffer-live-p buffer))
      (with-current-buffer buffer
        (should (equal (buffer-string) "new text\n"))
        (should-not (buffer-modified-p))
        (should (verify-visited-file-modtime buffer))
        ;; Unsaved changes: refused, the file and the buffer as they were.
        (goto-char (point-max))
        (insert "mine\n"))
      (setq sly-agent-q-approval-function (agentq-bt-approval :approved))
      (dolist (call (list #'agentq-bt-call #'agentq-bt-mcp))
        (should (equal (funcall call "write_file" '(:path "v.lisp" :content "theirs\n"))
                       (cons nil (format "Buffer v.lisp visits %sv.lisp and has unsaved changes, which the user would lose or save over the new file; nothing was written. Ask the user to save or revert that buffer first, or use propose_file_edit, which edits the buffer's text."
                                         dir)))))
      ;; Refused before the user is asked.
      (should (null agentq-bt--asked))
      (should (equal (agentq-bt-read file) "new text\n"))
      (with-current-buffer buffer
        (should (equal (buffer-string) "new text\nmine\n"))
        (should (buffer-modified-p))))))

(ert-deftest sly-agent-q-buffer-tools/write-file-is-atomic-when-no-temporary-file-can-be-made ()
  "The temporary file cannot be made: its name is too long for the file system.
NAME_MAX (255 bytes) holds the 244-character name but not the temporary
file's, which adds 15 characters: the write fails at its first step,
as when the directory is not writable, and the old file is intact."
  (agentq-bt-with-directory dir
    (let* ((sly-agent-q-approval-function (agentq-bt-approval :approved))
           (name (concat (make-string 240 ?n) ".txt"))
           (file (agentq-bt-write (expand-file-name name dir) "old content\n")))
      (let ((text (agentq-bt-fails "write_file" `(:path ,name :content "new content\n"))))
        (should (string-prefix-p (format "Could not write %s: no temporary file can be made in %s (" file dir) text))
        (should (string-match-p "[Nn]ame too long" text))
        (should (string-suffix-p "). The file was not changed." text)))
      (should (equal (agentq-bt-read file) "old content\n"))
      (should (equal (agentq-bt-files dir) (list name))))))

(ert-deftest sly-agent-q-buffer-tools/write-file-is-atomic-in-an-immutable-directory ()
  "The directory is made immutable with chattr +i, which stops root too
\(a read-only mode does not): no temporary file, the old file intact.
A write in place would have succeeded, since the file itself is writable."
  (agentq-bt-with-directory dir
    (let* ((sly-agent-q-approval-function (agentq-bt-approval :approved))
           (locked (file-name-as-directory (expand-file-name "locked" dir)))
           (file (agentq-bt-write (expand-file-name "a.txt" locked) "old content\n")))
      (unless (agentq-bt--make-immutable locked)
        (ert-skip "chattr +i does not work here (no chattr, or a file system without the flag)"))
      (should (file-writable-p file))
      (let ((text (agentq-bt-fails "write_file" '(:path "locked/a.txt" :content "new content\n"))))
        (should (string-prefix-p (format "Could not write %s: no temporary file can be made in %s (" file locked) text))
        (should (string-match-p "Operation not permitted" text))
        (should (string-suffix-p "). The file was not changed." text)))
      (should (equal (agentq-bt-read file) "old content\n"))
      (should (equal (agentq-bt-files locked) '("a.txt")))
      ;; propose_file_edit writes the same way.
      (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
        (should (string-prefix-p (format "Could not write %s: no temporary file can be made in " file)
                                 (agentq-bt-fails "propose_file_edit" '(:path "locked/a.txt" :original "old" :modified "new")))))
      (should (equal (agentq-bt-read file) "old content\n")))))

(ert-deftest sly-agent-q-buffer-tools/write-file-where-a-directory-is-a-file ()
  (agentq-bt-with-directory dir
    (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
      (agentq-bt-write (expand-file-name "plain" dir) "a file, not a directory\n")
      (should (string-prefix-p (format "Could not write %splain/x.txt: its directory %splain/ cannot be created (" dir dir)
                               (agentq-bt-fails "write_file" '(:path "plain/x.txt" :content "x"))))
      (should (equal (agentq-bt-read (expand-file-name "plain" dir)) "a file, not a directory\n")))))

;;;; Standing rules and confinement on true names (issue 35)

(defun agentq-bt--relink (target link)
  "Make LINK a symbolic link to TARGET, replacing what LINK was."
  (when (or (file-symlink-p link) (file-exists-p link))
    (delete-file link))
  (make-symbolic-link target link))

(ert-deftest sly-agent-q-buffer-tools/standing-rules-match-true-names ()
  "The rules see the file that would be written: symbolic links, \"..\"
and relative paths resolved as write_file resolves them."
  (agentq-bt-with-directory dir
    (let* ((other (file-name-as-directory (file-truename (make-temp-file "agentq-bt-other-" t))))
           (keys (agentq-bt-write (expand-file-name "private/keys.txt" dir) "keys\n"))
           (secret (agentq-bt-write (expand-file-name "secret/s.txt" dir) "secret\n"))
           (sly-agent-q-approval-function #'sly-agent-q-approve)
           (sly-agent-q--session-approved-tools nil)
           (sly-agent-q--auto-approve-until nil)
           (denied '(nil . "User denied tool execution")))
      (unwind-protect
          (progn
            (make-directory (expand-file-name "public" dir))
            (make-symbolic-link (expand-file-name "private" dir) (expand-file-name "public/view" dir))
            (make-symbolic-link (expand-file-name "secret" dir) (expand-file-name "alias" dir))
            ;; An allow rule on public/** does not reach private/ through public/view.
            (let ((sly-agent-q-approval-rules `(("write_file" ,(concat dir "public/**") allow))))
              (should (equal (agentq-bt-call "write_file" `(:path ,(concat dir "public/view/keys.txt") :content "stolen"))
                             denied))
              (should (equal (agentq-bt-call "write_file" '(:path "public/view/new.txt" :content "x")) denied))
              (should (equal (agentq-bt-read keys) "keys\n"))
              (should (equal (agentq-bt-files (expand-file-name "private" dir)) '("keys.txt")))
              ;; Inside public/ itself it allows, a relative path too.
              (should (car (agentq-bt-call "write_file" '(:path "public/ok.txt" :content "ok\n"))))
              (should (equal (agentq-bt-read (expand-file-name "public/ok.txt" dir)) "ok\n")))
            ;; A deny rule on secret/** holds through a link to it, and through "..".
            (let ((sly-agent-q-approval-rules `(("write_file" ,(concat dir "secret/**") deny)
                                                ("write_file" ,(concat dir "**") allow))))
              (dolist (path (list (concat dir "alias/s.txt") "alias/s.txt" "alias/new.txt"
                                  "public/../secret/s.txt" (concat dir "private/../alias/s.txt")))
                (should (equal (agentq-bt-call "write_file" `(:path ,path :content "evaded")) denied)))
              (should (equal (agentq-bt-read secret) "secret\n"))
              (should (equal (agentq-bt-files (expand-file-name "secret" dir)) '("s.txt"))))
            ;; A relative path is matched from where it is written (the allowed
            ;; directory), not from `default-directory'.
            (let ((default-directory other))
              (let ((sly-agent-q-approval-rules `(("write_file" ,(concat other "**") allow))))
                (should (equal (agentq-bt-call "write_file" '(:path "private/keys.txt" :content "stolen")) denied))
                (should (equal (agentq-bt-read keys) "keys\n")))
              (let ((sly-agent-q-approval-rules `(("write_file" ,(concat dir "public/**") allow))))
                (should (car (agentq-bt-call "write_file" '(:path "public/r.txt" :content "r\n"))))
                (should (equal (agentq-bt-read (expand-file-name "public/r.txt" dir)) "r\n")))
              (should (equal (agentq-bt-files other) '())))
            ;; outside-project: the same resolution.
            (let ((default-directory "/")
                  (sly-agent-q-approval-rules '(("write_file" outside-project deny) ("write_file" "*" allow))))
              (should (car (agentq-bt-call "write_file" '(:path "public/p.txt" :content "p\n"))))
              (should (equal (agentq-bt-read (expand-file-name "public/p.txt" dir)) "p\n"))))
        (delete-directory other t)))))

(ert-deftest sly-agent-q-buffer-tools/a-link-swapped-during-the-approval ()
  "The approval function swaps a symbolic link before it approves: the
write does not go to the new target, and the answer says why."
  (agentq-bt-with-directory dir
    (let* ((a (agentq-bt-write (expand-file-name "a/f.txt" dir) "same\n"))
           (b (agentq-bt-write (expand-file-name "b/f.txt" dir) "same\n"))
           (swap nil)
           (sly-agent-q-approval-function
            (lambda (_name _args) (funcall swap) :approved)))
      ;; A link to a directory, and a link to a file.
      (dolist (case `(("cur" ,(expand-file-name "a" dir) ,(expand-file-name "b" dir) "cur/f.txt")
                      ("link.txt" ,a ,b "link.txt")))
        (pcase-let ((`(,link ,old ,new ,path) case))
          (setq link (expand-file-name link dir))
          (dolist (call `(("write_file" :path ,path :content "written")
                          ("propose_file_edit" :path ,path :original "same" :modified "edited")))
            (agentq-bt--relink old link)
            (setq swap (lambda () (agentq-bt--relink new link)))
            (let ((answer (agentq-bt-call (car call) (cdr call))))
              (should-not (car answer))
              (should (equal (cdr answer)
                             (format "Nothing was written: %s resolved to %s when the call was checked and approved, but now resolves to %s (a symbolic link changed in between). The approval was for the old file; check the path and call again if the new one is meant."
                                     path a b))))
            (should (equal (agentq-bt-read a) "same\n"))
            (should (equal (agentq-bt-read b) "same\n")))))
      ;; Swapped to a directory outside: confinement holds as well.
      (let ((outside (file-name-as-directory (file-truename (make-temp-file "agentq-bt-outside-" t)))))
        (unwind-protect
            (progn
              (agentq-bt--relink (expand-file-name "a" dir) (expand-file-name "cur" dir))
              (setq swap (lambda () (agentq-bt--relink outside (expand-file-name "cur" dir))))
              (should (string-prefix-p "Access denied: cur/f.txt resolves to "
                                       (cdr (agentq-bt-call "write_file" '(:path "cur/f.txt" :content "x")))))
              (should (equal (agentq-bt-files outside) '())))
          (delete-directory outside t)))
      ;; A swap during the write itself, after the approved path was checked
      ;; again: the true name is checked once more right before the rename.
      (setq swap #'ignore)
      (let* ((moved (expand-file-name "a-old" dir))
            (swapper (lambda (&rest _)
                       (unless (file-symlink-p (expand-file-name "a" dir))
                         (rename-file (expand-file-name "a" dir) moved)
                         (make-symbolic-link (expand-file-name "b" dir) (expand-file-name "a" dir))))))
        (advice-add 'set-file-modes :after swapper)
        (unwind-protect
            (should (equal (agentq-bt-call "write_file" '(:path "a/f.txt" :content "written"))
                           (cons nil (format "Nothing was written: %s now resolves to %s (a symbolic link changed while the call ran). The file was not changed; check the path and call again."
                                             a b))))
          (advice-remove 'set-file-modes swapper))
        (should (equal (agentq-bt-read (expand-file-name "f.txt" moved)) "same\n"))
        (should (equal (agentq-bt-read b) "same\n"))
        (should (equal (agentq-bt-files (expand-file-name "b" dir)) '("f.txt")))
        ;; The temporary file stays in the moved directory, which no name
        ;; the tool knows leads to any more; nothing else was made.
        (should (equal (remove "f.txt" (agentq-bt-files moved))
                       (cl-remove-if-not (lambda (name) (string-prefix-p ".f.txt.agent-q-" name))
                                         (agentq-bt-files moved))))))))

;;;; write_file keeps modes and owners

(ert-deftest sly-agent-q-buffer-tools/write-file-refuses-a-read-only-file ()
  (agentq-bt-with-directory dir
    (let* ((sly-agent-q-approval-function (agentq-bt-approval :approved))
           (file (agentq-bt-write (expand-file-name "ro.txt" dir) "read only\n")))
      (set-file-modes file #o444)
      (dolist (call '(("write_file" :path "ro.txt" :content "overwritten")
                      ("propose_file_edit" :path "ro.txt" :original "read" :modified "written")))
        (should (equal (agentq-bt-call (car call) (cdr call))
                       (cons nil (format "%s is read-only (mode 0444); nothing was written. Ask the user to make it writable if it should change."
                                         file)))))
      ;; write_file refuses before asking.
      (should (equal (mapcar #'car agentq-bt--asked) '("propose_file_edit")))
      (should (equal (agentq-bt-read file) "read only\n"))
      (should (= (file-modes file) #o444))
      (should (equal (agentq-bt-files dir) '("ro.txt"))))))

(ert-deftest sly-agent-q-buffer-tools/write-file-keeps-mode-and-owner ()
  (agentq-bt-with-directory dir
    (let* ((sly-agent-q-approval-function (agentq-bt-approval :approved))
           (file (agentq-bt-write (expand-file-name "m.txt" dir) "old\n")))
      (set-file-modes file #o640)
      (should (car (agentq-bt-call "write_file" '(:path "m.txt" :content "new\n"))))
      (should (equal (agentq-bt-read file) "new\n"))
      (should (= (file-modes file) #o640))
      ;; The owner and group stay, when this process may set them (root).
      (if (not (and (= (user-uid) 0) (eq 0 (call-process "chown" nil nil nil "65534:65534" file))))
          (ert-skip "not root, or no chown: the owner cannot be changed for the test")
        (should (car (agentq-bt-call "write_file" '(:path "m.txt" :content "newer\n"))))
        (should (equal (agentq-bt-read file) "newer\n"))
        (should (= (file-attribute-user-id (file-attributes file)) 65534))
        (should (= (file-attribute-group-id (file-attributes file)) 65534))
        (should (= (file-modes file) #o640))
        (should (equal (agentq-bt-files dir) '("m.txt")))))))

;;;; propose_file_edit

(defconst agentq-bt--source "(defun area (r)\n  (* 3.14 r r))\n\n(defun twice (x)\n  (* 2 x))\n\n(defun twice-again (x)\n  (* 2 x))\n"
  "The file propose_file_edit's tests edit.")

(ert-deftest sly-agent-q-buffer-tools/propose-file-edit-checks-before-asking ()
  (agentq-bt-with-directory dir
    (let ((file (agentq-bt-write (expand-file-name "geo.lisp" dir) agentq-bt--source))
          (sly-agent-q-approval-function (agentq-bt-approval :approved)))
      ;; The review's own arguments are no parameter of the tool: a model
      ;; cannot pass them (the approval's modified arguments carry them).
      (should (equal (agentq-bt-fails "propose_file_edit" '(:path "geo.lisp" :original "(* 3.14 r r)" :modified "(* pi r r)" :hunks_total 1 :hunks_applied 1))
                     "Unknown argument 'hunks_applied', 'hunks_total' for propose_file_edit (it takes: path, original, modified, description)"))
      (should (equal (agentq-bt-fails "propose_file_edit" '(:path "geo.lisp" :original "(* 3.15 r r)" :modified "(* pi r r)"))
                     (format "The original text was not found in %sgeo.lisp. It must match the current text exactly, including whitespace, indentation and line breaks. Read the file again (read_file) and copy the text to replace exactly."
                             dir)))
      (should (equal (agentq-bt-fails "propose_file_edit" '(:path "geo.lisp" :original "(* 2 x)" :modified "(+ x x)"))
                     (format "The original text occurs more than once in %sgeo.lisp. Include more of the surrounding lines in original (and the same in modified) so that it matches exactly one place."
                             dir)))
      ;; Overlapping occurrences count too.
      (agentq-bt-write (expand-file-name "aaa.txt" dir) "aaa\n")
      (should (string-prefix-p "The original text occurs more than once"
                               (agentq-bt-fails "propose_file_edit" '(:path "aaa.txt" :original "aa" :modified "b"))))
      (should (string-prefix-p "original is empty."
                               (agentq-bt-fails "propose_file_edit" '(:path "geo.lisp" :original "" :modified "x"))))
      (should (equal (agentq-bt-fails "propose_file_edit" '(:path "geo.lisp" :original "r r" :modified "r r"))
                     "modified is the same as original: there is nothing to change."))
      (should (equal (agentq-bt-fails "propose_file_edit" '(:path "none.lisp" :original "a" :modified "b"))
                     (format "%snone.lisp does not exist. Check the path (relative paths start at %s)." dir dir)))
      (should (equal (agentq-bt-fails "propose_file_edit" '(:path "geo.lisp" :original "a" :modified 2))
                     "Invalid argument 'modified': expected string, got integer"))
      (should (equal (agentq-bt-fails "propose_file_edit" '(:path "geo.lisp" :original "a"))
                     "Missing required argument: modified"))
      ;; Nobody was asked; nothing changed.
      (should (null agentq-bt--asked))
      (should (equal (agentq-bt-read file) agentq-bt--source)))))

(ert-deftest sly-agent-q-buffer-tools/propose-file-edit-accepted ()
  (agentq-bt-with-directory dir
    (let ((file (agentq-bt-write (expand-file-name "geo.lisp" dir) agentq-bt--source))
          (sly-agent-q-approval-function (agentq-bt-approval :approved)))
      (should (equal (agentq-bt-call "propose_file_edit"
                                     '(:path "geo.lisp" :original "(* 3.14 r r)" :modified "(* pi r r)"
                                       :description "Use pi."))
                     (cons t (format "accepted\nThe edit is applied to %sgeo.lisp." dir))))
      ;; The approval saw the proposal.
      (should (= (length agentq-bt--asked) 1))
      (let ((asked (cdar agentq-bt--asked)))
        (should (equal (caar agentq-bt--asked) "propose_file_edit"))
        (should (equal (gethash "path" asked) "geo.lisp"))
        (should (equal (gethash "original" asked) "(* 3.14 r r)"))
        (should (equal (gethash "modified" asked) "(* pi r r)"))
        (should (equal (gethash "description" asked) "Use pi.")))
      (should (equal (agentq-bt-read file) (string-replace "(* 3.14 r r)" "(* pi r r)" agentq-bt--source)))
      ;; Over MCP, several lines at once.
      (should (equal (agentq-bt-mcp "propose_file_edit"
                                    '(:path "geo.lisp" :original "(defun twice (x)\n  (* 2 x))" :modified "(defun twice (x)\n  (+ x x))"))
                     (cons t (format "accepted\nThe edit is applied to %sgeo.lisp." dir))))
      (should (equal (agentq-bt-read file)
                     (string-replace "(defun twice (x)\n  (* 2 x))" "(defun twice (x)\n  (+ x x))"
                                     (string-replace "(* 3.14 r r)" "(* pi r r)" agentq-bt--source))))
      (should (equal (agentq-bt-files dir) '("geo.lisp"))))))

(ert-deftest sly-agent-q-buffer-tools/propose-file-edit-in-visiting-buffers ()
  (agentq-bt-with-directory dir
    (let* ((file (agentq-bt-write (expand-file-name "geo.lisp" dir) agentq-bt--source))
           (buffer (find-file-noselect file))
           (sly-agent-q-approval-function (agentq-bt-approval :approved)))
      ;; Unmodified: the edit goes into the buffer, which is saved; point stays.
      (with-current-buffer buffer (goto-char (point-max)))
      (should (equal (agentq-bt-call "propose_file_edit" '(:path "geo.lisp" :original "3.14" :modified "pi"))
                     (cons t (format "accepted\nThe edit is applied to %sgeo.lisp and saved; buffer geo.lisp shows it." dir))))
      (let ((expected (string-replace "3.14" "pi" agentq-bt--source)))
        (should (equal (agentq-bt-read file) expected))
        (with-current-buffer buffer
          (should (equal (buffer-string) expected))
          (should-not (buffer-modified-p))
          (should (verify-visited-file-modtime buffer))
          (should (= (point) (point-max)))
          ;; Modified: the buffer's text counts, the edit stays unsaved in it.
          (goto-char (point-min))
          (insert ";;; geometry\n")
          (search-forward "twice-again")
          (replace-match "thrice")
          (should (equal (agentq-bt-mcp "propose_file_edit" '(:path "geo.lisp" :original ";;; geometry\n" :modified ";;; Geometry.\n"))
                         (cons t (format "accepted\nThe edit is applied in buffer geo.lisp, which visits %sgeo.lisp; it is not saved, because the buffer already had unsaved changes of the user's."
                                         dir))))
          (should (equal (buffer-string) (concat ";;; Geometry.\n" (string-replace "twice-again" "thrice" expected))))
          (should (buffer-modified-p))
          (should (equal (agentq-bt-read file) expected))
          ;; What is only on disk does not count then.
          (should (equal (agentq-bt-fails "propose_file_edit" '(:path "geo.lisp" :original "twice-again" :modified "x"))
                         (format "The original text was not found in %sgeo.lisp (in the text of buffer geo.lisp, which has unsaved changes). It must match the current text exactly, including whitespace, indentation and line breaks. Read the file again (read_file) and copy the text to replace exactly."
                                 dir)))))
      ;; An unmodified buffer whose file changed on disk is brought up to date first.
      (with-current-buffer buffer (revert-buffer t t t))
      (sleep-for 0.01)
      (agentq-bt-write file "(changed on disk)\n")
      (set-file-times file (time-add nil 2))
      (should (car (agentq-bt-call "propose_file_edit" '(:path "geo.lisp" :original "on disk" :modified "elsewhere"))))
      (should (equal (agentq-bt-read file) "(changed elsewhere)\n"))
      (with-current-buffer buffer
        (should (equal (buffer-string) "(changed elsewhere)\n"))
        (should-not (buffer-modified-p)))
      (should (buffer-live-p buffer)))))

(ert-deftest sly-agent-q-buffer-tools/propose-file-edit-partially-accepted ()
  (agentq-bt-with-directory dir
    (let* ((file (agentq-bt-write (expand-file-name "geo.lisp" dir) agentq-bt--source))
           (original "(defun area (r)\n  (* 3.14 r r))\n\n(defun twice (x)\n  (* 2 x))")
           (proposed "(defun area (r)\n  (* pi r r))\n\n(defun twice (x)\n  (+ x x))")
           (kept "(defun area (r)\n  (* pi r r))\n\n(defun twice (x)\n  (* 2 x))")
           ;; The approval UI's contract: the kept hunks in modified, and the counts.
           (sly-agent-q-approval-function
            (agentq-bt-approval (lambda (arguments)
                                  (let ((new (copy-hash-table arguments)))
                                    (puthash "modified" kept new)
                                    (puthash "hunks_total" 2 new)
                                    (puthash "hunks_applied" 1 new)
                                    (list :modified new))))))
      (should (equal (agentq-bt-call "propose_file_edit" `(:path "geo.lisp" :original ,original :modified ,proposed))
                     (cons t (format "partially accepted: 1 of 2 hunks applied\nThe edit is applied to %sgeo.lisp and saved; buffer geo.lisp shows it. The other hunks were rejected: do not propose them again."
                                     dir))))
      ;; A reviewed edit opened the file in a buffer, saved.
      (should (get-file-buffer file))
      (should-not (buffer-modified-p (get-file-buffer file)))
      (should (equal (agentq-bt-read file) (string-replace original kept agentq-bt--source)))
      ;; All hunks kept: accepted.
      (let ((sly-agent-q-approval-function
             (agentq-bt-approval (lambda (arguments)
                                   (list :modified (append (list :hunks_total 1 :hunks_applied 1)
                                                           (list :path (gethash "path" arguments)
                                                                 :original (gethash "original" arguments)
                                                                 :modified (gethash "modified" arguments))))))))
        (should (equal (agentq-bt-mcp "propose_file_edit" '(:path "geo.lisp" :original "(* pi r r)" :modified "(* pi (* r r))"))
                       (cons t (format "accepted\nThe edit is applied to %sgeo.lisp and saved; buffer geo.lisp shows it." dir)))))
      ;; None kept: a rejection, nothing applied.
      (let ((before (agentq-bt-read file))
            (sly-agent-q-approval-function
             (agentq-bt-approval (lambda (arguments)
                                   (let ((new (copy-hash-table arguments)))
                                     (puthash "modified" (gethash "original" arguments) new)
                                     (puthash "hunks_total" 3 new)
                                     (puthash "hunks_applied" 0 new)
                                     (list :modified new))))))
        (should (equal (agentq-bt-call "propose_file_edit" '(:path "geo.lisp" :original "(* pi (* r r))" :modified "(* pi r r)"))
                       '(nil . "rejected — STOP: do not retry this edit.")))
        (should (equal (agentq-bt-read file) before)))
      ;; Counts that do not fit: the approval's fault, said so, nothing applied.
      (let ((before (agentq-bt-read file))
            (sly-agent-q-approval-function
             (agentq-bt-approval (lambda (arguments)
                                   (let ((new (copy-hash-table arguments)))
                                     (puthash "hunks_total" 1 new)
                                     (puthash "hunks_applied" 2 new)
                                     (list :modified new))))))
        (should (string-prefix-p "The approval of this edit sent hunks_total 1 and hunks_applied 2, which do not fit"
                                 (cdr (agentq-bt-call "propose_file_edit" '(:path "geo.lisp" :original "(* pi (* r r))" :modified "(* pi r r)")))))
        (should (equal (agentq-bt-read file) before))))))

(ert-deftest sly-agent-q-buffer-tools/propose-file-edit-rejected ()
  (agentq-bt-with-directory dir
    (let ((file (agentq-bt-write (expand-file-name "geo.lisp" dir) agentq-bt--source))
          (buffer nil))
      (dolist (approval (list (agentq-bt-approval :denied) nil (agentq-bt-approval "something else")
                              (lambda (_name _arguments) (error "The diff UI broke"))))
        (let ((sly-agent-q-approval-function approval))
          (let ((result (agentq-test-call "propose_file_edit" '(:path "geo.lisp" :original "3.14" :modified "pi"))))
            (should (equal (plist-get result :content) "rejected — STOP: do not retry this edit."))
            (should-not (plist-get result :success))
            (should (equal (agentq-test-metadata result :approved) nil)))
          (should (equal (agentq-bt-mcp "propose_file_edit" '(:path "geo.lisp" :original "3.14" :modified "pi"))
                         '(nil . "rejected — STOP: do not retry this edit.")))))
      (should (equal (agentq-bt-read file) agentq-bt--source))
      ;; A visiting buffer is untouched too.
      (setq buffer (find-file-noselect file))
      (let ((sly-agent-q-approval-function (agentq-bt-approval :denied)))
        (should (equal (agentq-bt-call "propose_file_edit" '(:path "geo.lisp" :original "3.14" :modified "pi"))
                       '(nil . "rejected — STOP: do not retry this edit."))))
      (with-current-buffer buffer
        (should (equal (buffer-string) agentq-bt--source))
        (should-not (buffer-modified-p))))))

(ert-deftest sly-agent-q-buffer-tools/propose-file-edit-when-the-file-changes-during-review ()
  (agentq-bt-with-directory dir
    (let* ((file (agentq-bt-write (expand-file-name "geo.lisp" dir) agentq-bt--source))
           (sly-agent-q-approval-function
            (agentq-bt-approval (lambda (_arguments)
                                  (agentq-bt-write file "(defun area (r) (* pi r r))\n")
                                  :approved))))
      (should (equal (agentq-bt-call "propose_file_edit" '(:path "geo.lisp" :original "3.14" :modified "pi"))
                     (cons nil (format "Nothing was applied: the original text is no longer in %sgeo.lisp; the file changed while the edit was being reviewed. Read the file again (read_file) before proposing the edit again."
                                       dir))))
      (should (equal (agentq-bt-read file) "(defun area (r) (* pi r r))\n")))))

(ert-deftest sly-agent-q-buffer-tools/propose-file-edit-from-lisp ()
  "Lisp's execute-tool-calls runs the check in Emacs, and answers the tool's denial text."
  (agentq-bt-with-directory dir
    (let ((file (agentq-bt-write (expand-file-name "geo.lisp" dir) agentq-bt--source))
          (call (lambda (original)
                  (agentq-test-eval-ok
                   (format "(let ((r (first (execute-tool-calls '((:id \"1\" :name \"propose_file_edit\" :arguments (:path \"geo.lisp\" :original %S :modified \"pi\")))))))
                              (list (tool-result-success r) (tool-result-content r)))"
                           original)))))
      (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
        (should (equal (funcall call "3.15")
                       (format "=> (NIL\n    %S)"
                               (format "The original text was not found in %sgeo.lisp. It must match the current text exactly, including whitespace, indentation and line breaks. Read the file again (read_file) and copy the text to replace exactly."
                                       dir))))
        (should (null agentq-bt--asked)))
      (let ((sly-agent-q-approval-function (agentq-bt-approval :denied)))
        (should (equal (funcall call "3.14") "=> (NIL \"rejected — STOP: do not retry this edit.\")"))
        (should (= (length agentq-bt--asked) 1)))
      (should (equal (agentq-bt-read file) agentq-bt--source))
      ;; Lisp's own approval handler denies with the same text.
      (should (equal (agentq-test-eval-ok
                      "(let ((*approval-handler* (lambda (tool args) (declare (ignore tool args)) :denied)))
                         (tool-result-content (first (execute-tool-calls '((:id \"1\" :name \"propose_file_edit\" :arguments (:path \"geo.lisp\" :original \"3.14\" :modified \"pi\")))))))")
                     "=> \"rejected — STOP: do not retry this edit.\""))
      (let ((sly-agent-q-approval-function (agentq-bt-approval :approved)))
        (should (equal (funcall call "3.14")
                       (format "=> (T %S)" (format "accepted\nThe edit is applied to %sgeo.lisp." dir)))))
      (should (equal (agentq-bt-read file) (string-replace "3.14" "pi" agentq-bt--source))))))

(ert-deftest sly-agent-q-buffer-tools/asynchronous-calls ()
  "Checks, approvals, denial texts and handlers also from an asynchronous job."
  (agentq-bt-with-directory dir
    (let* ((file (agentq-bt-write (expand-file-name "geo.lisp" dir) agentq-bt--source))
           (sly-agent-q-approval-function
            (agentq-bt-approval (lambda (arguments)
                                  (if (equal (gethash "modified" arguments) "no") :denied :approved))))
           (results 'pending))
      (sly-agent-q-execute-tool-calls-async
       '((:id "1" :name "propose_file_edit" :arguments (:path "geo.lisp" :original "3.15" :modified "pi"))
         (:id "2" :name "propose_file_edit" :arguments (:path "geo.lisp" :original "3.14" :modified "no"))
         (:id "3" :name "propose_file_edit" :arguments (:path "geo.lisp" :original "3.14" :modified "pi"))
         (:id "4" :name "write_file" :arguments (:path "new.txt" :content "new\n"))
         (:id "5" :name "search_in_buffer" :arguments (:pattern "x" :buffer "agentq-bt no such buffer")))
       (lambda (r) (setq results r)))
      (let ((end (+ (float-time) 20)))
        (while (and (eq results 'pending) (< (float-time) end))
          (accept-process-output nil 0.01)))
      (should (listp results))
      (mapc #'agentq-test-check-result results)
      (should (equal (mapcar (lambda (r) (plist-get r :success)) results) '(nil nil t t nil)))
      (should (string-prefix-p "The original text was not found in " (plist-get (nth 0 results) :content)))
      (should (equal (plist-get (nth 1 results) :content) "rejected — STOP: do not retry this edit."))
      (should (equal (plist-get (nth 2 results) :content) (format "accepted\nThe edit is applied to %sgeo.lisp." dir)))
      (should (equal (plist-get (nth 3 results) :content) (format "Wrote 4 characters to %snew.txt (a new file)." dir)))
      (should (string-prefix-p "No buffer named 'agentq-bt no such buffer'." (plist-get (nth 4 results) :content)))
      ;; Asked for the three calls that passed their checks, in order.
      (should (equal (mapcar (lambda (asked) (list (car asked) (gethash "modified" (cdr asked)))) (reverse agentq-bt--asked))
                     '(("propose_file_edit" "no") ("propose_file_edit" "pi") ("write_file" nil))))
      (should (equal (agentq-bt-read file) (string-replace "3.14" "pi" agentq-bt--source)))
      (should (equal (agentq-bt-read (expand-file-name "new.txt" dir)) "new\n")))))

(provide 'sly-agent-q-buffer-tools-test)

;;; sly-agent-q-buffer-tools-test.el ends here
