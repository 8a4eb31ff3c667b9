#!/usr/bin/env bash
# edit_form's review in a real terminal: Emacs -nw in a private tmux
# server runs edit_form through M-: on one defun of a file, with a new
# form whose variable is defined nowhere.  The review shows the
# compiler's note under the hunk before anything is decided; the test
# accepts the hunk with a and finishes with q: the file has the new defun
# and only it changed, the session has it.  The review buffer is printed
# as the terminal showed it.
#
#   bash tests/e2e/form-edit-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=form-edit
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

dir=$(mktemp -d /tmp/agentq-form-edit.XXXXXX)
file="$dir/code.lisp"
printf '(defun fe-e2e-a () 1)\n\n(defun fe-e2e-b (x)\n  (- x))\n\n(defun fe-e2e-c () 3)\n' > "$file"
cat > "$dir/edit.el" <<ELISP
;;; -*- lexical-binding: t -*-
(defun agentq-e2e-edit ()
  (setq sly-agent-q-allowed-directories (list "$dir"))
  (plist-get (car (sly-agent-q-execute-tool-calls
                   (list (list :id "e" :name "edit_form"
                               :arguments (list :path "$file" :kind "defun" :name "fe-e2e-b"
                                                :new_source "(defun fe-e2e-b (x)\n  (list x *fe-e2e-nowhere*))")))))
             :content))
ELISP
trap 'cleanup; rm -rf "$dir"' EXIT

start_emacs
eval_expression "(load \"$dir/edit.el\" nil t)"
eval_expression "(agentq-e2e-edit)"
# The review's window is half the screen: its header line shows "1 comp…".
wait_for 'code.lisp — edit_form: \(defun fe-e2e-b\): 1 hunk, 0 accepted, 0 rejected, 1 comp' 30 screen \
  || fail "no review buffer with the compiler's note counted"
pane | grep -q 'STYLE-WARNING: Variable \*FE-E2E-NOWHERE\* was undefined' || fail "the note is not shown under the hunk"
echo "----- the review buffer -----"
pane | sed '/^[[:space:]]*$/d'
echo "-----------------------------"
tmux_ send-keys -t "$session" a
wait_for '1 accepted, 0 rejected' 5 screen || fail "a did not accept the hunk"
tmux_ send-keys -t "$session" q
wait_for '^"accepted' 15 screen || fail "the review did not finish as an acceptance"

grep -qxF '  (list x *fe-e2e-nowhere*))' "$file" || fail "the new defun is not in the file"
[ "$(grep -c 'defun' "$file")" -eq 3 ] || fail "the file lost or gained forms"
grep -qxF '(defun fe-e2e-a () 1)' "$file" || fail "another form changed"
grep -qxF '(defun fe-e2e-c () 3)' "$file" || fail "another form changed"
eval_expression "(message \"session: %s\" (plist-get (sly-agent-q--evaluate \"(fboundp 'fe-e2e-b)\") :content))"
wait_for 'session: => T' 10 screen || fail "the new defun is not in the session"

quit_emacs
echo "PASS: edit_form's review showed the compiler's note under its hunk; accepted, the one defun changed in the file and the session"
exit 0
