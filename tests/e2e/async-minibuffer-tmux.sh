#!/usr/bin/env bash
# An asynchronous call never takes the keyboard from a person typing in a
# minibuffer: Emacs -nw in a private tmux server starts typing M-x, and a
# timer submits a batch meanwhile (a 2 s evaluation, then write_file,
# which needs approval: its question is asked before the batch runs).  No
# question may appear while M-x is open; once it is left, the question
# appears, y writes the file and the callback runs.
#
#   bash tests/e2e/async-minibuffer-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=asyncmb
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

dir=$(mktemp -d /tmp/agentq-asyncmb.XXXXXX)
file="$dir/out.txt"
trap 'cleanup; rm -rf "$dir"' EXIT

start_emacs
eval_expression "(setq sly-agent-q-allowed-directories (list \"$dir\"))"
wait_for "agentq-asyncmb" 5 || fail "the allowed directory was not set"
eval_expression '(sly-agent-q-evaluate "(+ 1 2)")'
wait_for '^"?=> 3"?$' 15 || fail "the runtime did not boot"

# The batch is submitted from a timer, once the person is in M-x.
eval_expression "(run-at-time 1 nil (lambda () (sly-agent-q-execute-tool-calls-async (list (list :id \"s\" :name \"evaluate_lisp\" :arguments (list :code \"(sleep 2)\")) (list :id \"w\" :name \"write_file\" :arguments (list :path \"$file\" :content \"async text\"))) (lambda (r) (setq agentq-async-r (plist-get (cadr r) :content))))))"
# The person starts typing a command.
tmux_ send-keys -t "$session" M-x
wait_for '^M-x' 5 || fail "no M-x prompt"
tmux_ send-keys -t "$session" -l "sly-agent"
sleep 4
pane | grep -q 'Run dangerous tool' && fail "the approval question took the minibuffer from the person"
echo_area | grep -q '^M-x sly-agent' || fail "the person's M-x input is gone"
[ -e "$file" ] && fail "the file was written without approval"

# Leaving the minibuffer lets the question in.
tmux_ send-keys -t "$session" C-g
wait_for 'Run dangerous tool write_file' 5 screen || fail "the question did not come after the minibuffer was left"
tmux_ send-keys -t "$session" y
# The batch runs once answered: its 2 s evaluation first.
sleep 3
eval_expression 'agentq-async-r'
wait_for '^"Wrote ' 10 || fail "the callback did not get the write_file result"
[ "$(cat "$file")" = "async text" ] || fail "the file does not have the text"

quit_emacs
echo "PASS: no question while M-x was open; asked after, y wrote the file, the callback ran"
exit 0
