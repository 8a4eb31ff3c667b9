#!/usr/bin/env bash
# The per-hunk review in a real terminal: Emacs -nw in a private tmux
# server runs propose_file_edit (three hunks) through M-:, the test
# accepts the first hunk, rejects the second, accepts the third and
# finishes with q; the file must have exactly hunks 1 and 3.  The review
# buffer is printed as the terminal showed it.
#
#   bash tests/e2e/review-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=review
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

dir=$(mktemp -d /tmp/agentq-review.XXXXXX)
file="$dir/code.lisp"
for n in $(seq 1 30); do echo "(defun f$n () $n)"; done > "$file"
cp "$file" "$dir/original"
sed -e 's/(defun f2 () 2)/(defun f2 () :two)/' -e 's/(defun f14 () 14)/(defun f14 () :fourteen)/' \
    -e 's/(defun f25 () 25)/(defun f25 () :twenty-five)/' "$file" > "$dir/modified"
cat > "$dir/propose.el" <<ELISP
;;; -*- lexical-binding: t -*-
(defun agentq-e2e-read (name)
  (with-temp-buffer (insert-file-contents (expand-file-name name "$dir")) (buffer-string)))
(defun agentq-e2e-propose ()
  (setq sly-agent-q-allowed-directories (list "$dir"))
  (plist-get (car (sly-agent-q-execute-tool-calls
                   (list (list :id "e" :name "propose_file_edit"
                               :arguments (list :path "$file" :original (agentq-e2e-read "original")
                                                :modified (agentq-e2e-read "modified")
                                                :description "Return keywords")))))
             :content))
ELISP
trap 'cleanup; rm -rf "$dir"' EXIT

start_emacs
eval_expression "(load \"$dir/propose.el\" nil t)"
eval_expression "(agentq-e2e-propose)"
wait_for 'code.lisp — Return keywords: 3 hunks, 0 accepted' 20 screen || fail "no review buffer"

tmux_ send-keys -t "$session" a
wait_for '1 accepted, 0 rejected' 5 screen || fail "a did not accept the first hunk"
tmux_ send-keys -t "$session" r
wait_for '1 accepted, 1 rejected' 5 screen || fail "r did not reject the second hunk"
tmux_ send-keys -t "$session" a
wait_for '2 accepted, 1 rejected' 5 screen || fail "a did not accept the third hunk"
echo "----- the review buffer -----"
pane | sed '/^[[:space:]]*$/d'
echo "-----------------------------"
pane | grep -q '\[accept\] @@' || fail "no [accept] marker on a hunk"
pane | grep -q '\[reject\] @@' || fail "no [reject] marker on a hunk"
tmux_ send-keys -t "$session" q
wait_for '^"partially accepted: 2 of 3 hunks applied' 10 screen || fail "the review did not finish as a partial acceptance"

grep -q '(defun f2 () :two)' "$file" || fail "hunk 1 was not applied"
grep -q '(defun f14 () 14)' "$file" || fail "hunk 2 was applied though rejected"
grep -q '(defun f25 () :twenty-five)' "$file" || fail "hunk 3 was not applied"
[ "$(wc -l < "$file")" -eq 30 ] || fail "the file lost or gained lines"

quit_emacs
echo "PASS: hunks 1 and 3 applied, hunk 2 rejected, from a real review"
exit 0
