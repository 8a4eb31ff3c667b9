#!/usr/bin/env bash
# A real interactive C-g: Emacs -nw in a private tmux server evaluates
# (loop) in ECL through M-:, a C-g arrives 1 s later, and Emacs must be
# back at the command loop within 1.5 s with the session still working.
#
#   bash tests/e2e/cg-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=cg
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

start_emacs

# Boot the runtime first so the timing below measures only C-g.
eval_expression '(sly-agent-q-evaluate "(+ 1 2)")'
wait_for '^"?=> 3"?$' 15 || fail "first evaluation did not show => 3"

# The hostile evaluation, and the C-g one second into it.
eval_expression '(setq r (condition-case nil (sly-agent-q-evaluate "(loop)") (quit (quote quitted))))'
sleep 1
# Still running: Emacs shows no result yet.
echo_area | grep -Eq '^quitted$' && fail "the evaluation ended before C-g"
cg_sent=$(now)
tmux_ send-keys -t "$session" C-g

# M-: prints the value of the condition-case: quitted.
wait_for '^quitted$' 1.5 || fail "Emacs did not quit the evaluation within 1.5 s of C-g"
quit_seconds=$(elapsed_since "$cg_sent")

# Responsive, and the session still works.
eval_expression '(sly-agent-q-evaluate "(+ 40 2)")'
wait_for '^"?=> 42"?$' 5 || fail "(+ 40 2) did not show => 42 after C-g"
total_seconds=$(elapsed_since "$cg_sent")

eval_expression '(format "r=%S" r)'
wait_for '^"r=quitted"$' 5 || fail "r is not quitted"

quit_emacs

printf 'PASS: C-g quit the evaluation in %.2f s; => 42 shown %.2f s after C-g\n' "$quit_seconds" "$total_seconds"
exit 0
