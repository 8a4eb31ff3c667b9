#!/usr/bin/env bash
# SLY's keys and the REPL as a person uses them, in a real Emacs -nw in a
# private tmux server: in a .lisp file, C-c C-c on a defun that calls an
# undefined function lists the warning, C-x C-e shows => value; C-c C-z
# opens the REPL, where (+ 1 2) gives => 3, C-c C-c interrupts a (loop),
# and the session answers again; an error shows the debugger, where
# USE-VALUE goes on with a value and q aborts.
#
#   bash tests/e2e/lisp-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=lisp
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

work=$(mktemp -d)
trap 'cleanup; rm -rf "$work"' EXIT

cat > "$work/demo.lisp" <<'LISP'
(defun e2e-caller (x)
  (e2e-not-defined-yet x))

(* 6 7)
LISP

start_emacs
eval_expression "(setq sly-agent-q-repl-history-file \"$work/history\")"
find_file "$work/demo.lisp"
wait_for 'AQ\[CL-USER\]' 10 screen || fail "sly-agent-q-lisp-mode is not on in the .lisp file"

# C-c C-c on the defun: the undefined function is listed.
tmux_ send-keys -t "$session" C-c C-c
wait_for 'E2E-NOT-DEFINED-YET' 15 screen || fail "C-c C-c did not show the undefined function"

# C-x C-e after (* 6 7): => 42 in the echo area.
tmux_ send-keys -t "$session" M-'>'
tmux_ send-keys -t "$session" C-x C-e
wait_for '^=> 42$' 10 || fail "C-x C-e did not show => 42"

# C-c C-z: the REPL.
tmux_ send-keys -t "$session" C-c C-z
wait_for 'CL-USER>' 10 screen || fail "C-c C-z did not open the REPL"
tmux_ send-keys -t "$session" -l "(+ 1 2)"
tmux_ send-keys -t "$session" Enter
wait_for '(^|\|)=> 3$' 10 screen || fail "(+ 1 2) in the REPL did not give => 3"
tmux_ send-keys -t "$session" -l "(loop)"
tmux_ send-keys -t "$session" Enter
wait_for 'evaluating' 5 screen || fail "the REPL does not say it is evaluating"
tmux_ send-keys -t "$session" C-c C-c
wait_for 'INTERRUPTED' 10 screen || fail "C-c C-c did not interrupt (loop)"
tmux_ send-keys -t "$session" -l "(list (* 2 21))"
tmux_ send-keys -t "$session" Enter
wait_for '(^|\|)=> \(42\)$' 10 screen || fail "the session did not answer after the interrupt"

# An error stops in the debugger: USE-VALUE asks for a value and the
# evaluation goes on with it; another error, q, and the session goes on.
tmux_ send-keys -t "$session" -l "(+ e2e-unbound 1)"
tmux_ send-keys -t "$session" Enter
wait_for 'UNBOUND-VARIABLE: The variable E2E-UNBOUND is unbound' 10 screen || fail "no debugger for an unbound variable"
wait_for '0: \[USE-VALUE\]' 5 screen || fail "the debugger does not offer USE-VALUE"
tmux_ send-keys -t "$session" 0
wait_for '\[USE-VALUE\] value \(a Lisp form' 5 screen || fail "USE-VALUE did not ask for a value"
tmux_ send-keys -t "$session" -l "41"
tmux_ send-keys -t "$session" Enter
wait_for '(^|\|)=> 42$' 10 screen || fail "the evaluation did not go on with the value"
tmux_ send-keys -t "$session" -l "(error \"e2e boom\")"
tmux_ send-keys -t "$session" Enter
wait_for 'SIMPLE-ERROR: e2e boom' 10 screen || fail "no debugger for (error ...)"
tmux_ send-keys -t "$session" q
wait_for 'Evaluation aborted on SIMPLE-ERROR' 10 screen || fail "q did not abort to the prompt"
tmux_ send-keys -t "$session" -l "(* 3 3)"
tmux_ send-keys -t "$session" Enter
wait_for '(^|\|)=> 9$' 10 screen || fail "the session did not answer after q"

echo "----- the REPL, as the screen shows it -----"
pane
echo "--------------------------------------------"

quit_emacs
echo "PASS: SLY's keys and the REPL in a real terminal"
