#!/usr/bin/env bash
# The per-hunk review in a real terminal: Emacs -nw in a private tmux
# server runs propose_file_edit (three hunks) through M-:, the test
# accepts the first hunk, rejects the second, accepts the third and
# finishes with q; the file must have exactly hunks 1 and 3.  Then a
# second review: e edits hunk 1 (the text typed has q and the review's
# other keys in it), C-c C-c accepts the edit, an edit of hunk 2 is
# dropped with C-c C-k, q finishes; the file must have the edited hunk 1
# only.  The review buffer is printed as the terminal showed it.
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

# Editing a hunk: e opens its proposed lines, where q and the review's
# other keys are text; C-c C-c puts the edited hunk back, accepted.  An
# edit of hunk 2 dropped with C-c C-k leaves it as proposed (unmarked, so
# rejected by q).
cp "$dir/original" "$file"
eval_expression "(agentq-e2e-propose)"
wait_for 'code.lisp — Return keywords: 3 hunks, 0 accepted' 20 screen || fail "no review buffer for the edit"
pane | grep -q '@@ -1,5 +1,5 @@' || fail "hunk 1 is not numbered by the file's lines"
tmux_ send-keys -t "$session" e
wait_for 'Editing hunk 1 of 3 — C-c C-c: finish \(accepts it\), C-c C-k: drop the edit' 5 screen \
  || fail "e did not start editing hunk 1"
tmux_ send-keys -t "$session" C-e
tmux_ send-keys -t "$session" -l ' ; quick q? a r n p e'
wait_for '^\(defun f2 \(\) :two\) ; quick q\? a r n p e' 5 screen || fail "the typed text is not in the edit buffer"
pane | grep -q 'rejected — STOP' && fail "typing q in the edit ended the review"
pane | grep -q 'code.lisp — Return keywords: 3 hunks, 0 accepted, 0 rejected' || fail "typing in the edit marked hunks"
tmux_ send-keys -t "$session" C-c C-c
wait_for '1 accepted, 0 rejected' 5 screen || fail "C-c C-c did not accept the edited hunk"
pane | grep -q 'Editing hunk' && fail "the edit buffer is still shown after C-c C-c"
pane | grep -qF '[accept] @@ -1,5 +1,5 @@ (edited)' || fail "hunk 1 is not shown accepted and edited"
pane | grep -qF '+(defun f2 () :two) ; quick q? a r n p e' || fail "the review does not show the edited line"
echo "----- the review buffer after the edit -----"
pane | sed '/^[[:space:]]*$/d'
echo "--------------------------------------------"
tmux_ send-keys -t "$session" n
tmux_ send-keys -t "$session" e
wait_for 'Editing hunk 2 of 3' 5 screen || fail "e did not start editing hunk 2"
tmux_ send-keys -t "$session" C-e
tmux_ send-keys -t "$session" -l ' qqq'
wait_for ':fourteen\) qqq' 5 screen || fail "the typed text is not in the edit of hunk 2"
tmux_ send-keys -t "$session" C-c C-k
wait_for 'Edit dropped' 5 || fail "C-c C-k did not drop the edit"
pane | grep -q 'Editing hunk' && fail "the edit buffer is still shown after C-c C-k"
pane | grep -q 'qqq' && fail "the dropped edit shows in the review"
pane | grep -q '1 accepted, 0 rejected' || fail "dropping the edit changed the marks"
tmux_ send-keys -t "$session" q
wait_for '^"partially accepted: 1 of 3 hunks applied' 10 screen || fail "the review with the edit did not finish as a partial acceptance"

grep -qxF '(defun f2 () :two) ; quick q? a r n p e' "$file" || fail "the edited hunk 1 was not applied"
grep -qxF '(defun f14 () 14)' "$file" || fail "hunk 2 was applied though its edit was dropped"
grep -q 'qqq' "$file" && fail "the dropped edit reached the file"
grep -qxF '(defun f25 () 25)' "$file" || fail "hunk 3 was applied though unmarked"
[ "$(wc -l < "$file")" -eq 30 ] || fail "the edited file lost or gained lines"

quit_emacs
echo "PASS: hunks 1 and 3 applied, hunk 2 rejected, from a real review; an edited hunk (q typed in it) applied as edited, a dropped edit not"
exit 0
