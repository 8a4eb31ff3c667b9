#!/usr/bin/env bash
# The minibuffer approval in a real terminal: Emacs -nw in a private tmux
# server runs write_file (a dangerous tool) three times through M-:, and
# the test answers the question with n, y and C-g as a person would.
# n and C-g leave the file as it was; y writes it.
#
#   bash tests/e2e/approval-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=approval
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

dir=$(mktemp -d /tmp/agentq-approval.XXXXXX)
file="$dir/notes.txt"
printf 'old text\n' > "$file"
trap 'cleanup; rm -rf "$dir"' EXIT

start_emacs
eval_expression "(setq sly-agent-q-allowed-directories (list \"$dir\"))"
wait_for "agentq-approval" 5 || fail "the allowed directory was not set"

# write_file, the value of its result's content shown by M-:.
write_call="(plist-get (car (sly-agent-q-execute-tool-calls '((:id \"w\" :name \"write_file\" :arguments (:path \"$file\" :content \"new text\"))))) :content)"

ask() {
  eval_expression "$write_call"
  wait_for 'Run dangerous tool write_file with' 20 screen || fail "no approval question for write_file"
  pane | grep -q "content: new text" || fail "the question does not show the arguments"
}

# n: denied, the file untouched.
ask
echo "----- the approval question -----"
pane | sed '/^[[:space:]]*$/d' | tail -n 6
echo "---------------------------------"
tmux_ send-keys -t "$session" n
wait_for '^"User denied tool execution"$' 10 || fail "n did not deny"
[ "$(cat "$file")" = "old text" ] || fail "the file changed after n"

# RET alone answers nothing; y: written.
ask
tmux_ send-keys -t "$session" Enter
sleep 0.3
pane | grep -q 'Run dangerous tool write_file' || fail "RET alone ended the question"
[ "$(cat "$file")" = "old text" ] || fail "RET alone wrote the file"
tmux_ send-keys -t "$session" y
wait_for '^"Wrote ' 10 || fail "y did not write"
[ "$(cat "$file")" = "new text" ] || fail "the file does not have the new text after y"

# C-g: denied, nothing written, Emacs fine.
printf 'old again\n' > "$file"
ask
tmux_ send-keys -t "$session" C-g
wait_for '^"User denied tool execution"$' 10 || fail "C-g did not deny"
[ "$(cat "$file")" = "old again" ] || fail "the file changed after C-g"

# r: denied, with the person's reason for the model.
ask
tmux_ send-keys -t "$session" r
wait_for 'Why not \(sent to the model\)\?' 5 || fail "r did not ask why"
tmux_ send-keys -t "$session" -l "use the docs directory"
tmux_ send-keys -t "$session" Enter
wait_for '^"Denied by user: use the docs directory"$' 10 || fail "r did not send the reason back"
[ "$(cat "$file")" = "old again" ] || fail "the file changed after r"

# e: the arguments edited as JSON, then run with them.
ask
tmux_ send-keys -t "$session" e
wait_for '"content": "new text"' 10 screen || fail "e did not show the arguments as JSON"
tmux_ send-keys -t "$session" C-x h C-w
tmux_ send-keys -t "$session" -l "{\"path\": \"$file\", \"content\": \"edited by hand\"}"
tmux_ send-keys -t "$session" C-c C-c
wait_for '^"Wrote ' 10 || fail "the edited arguments did not run"
[ "$(cat "$file")" = "edited by hand" ] || fail "the file does not have the edited content"

eval_expression '(+ 40 2)'
wait_for '^42' 5 || fail "Emacs is not responsive after the approvals"

quit_emacs
echo "PASS: n denied, RET alone answered nothing, y wrote the file, C-g denied, r sent a reason, e ran edited arguments"
exit 0
