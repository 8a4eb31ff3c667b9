#!/usr/bin/env bash
# The REPL's output as it happens, in a real Emacs -nw in a private tmux
# server: (dotimes (i 3) (print i) (sleep 0.6)) shows 0 and 1 on the
# screen while the value has not come yet, then => NIL; C-c C-c
# interrupts a (loop) and shows the interrupt in the debugger, q goes
# back; (+ 1 2) then gives => 3.  A C-x C-e from a .lisp
# file is written in the REPL too.
#
#   bash tests/e2e/repl-output-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=replout
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

work=$(mktemp -d)
trap 'cleanup; rm -rf "$work"' EXIT

cat > "$work/demo.lisp" <<'LISP'
(* 6 7)
LISP

start_emacs
eval_expression "(setq sly-agent-q-repl-history-file \"$work/history\")"
find_file "$work/demo.lisp"
wait_for 'AQ\[CL-USER\]' 10 screen || fail "sly-agent-q-lisp-mode is not on in the .lisp file"

# C-c C-z: the REPL, in the other window; the .lisp file stays in view.
tmux_ send-keys -t "$session" C-c C-z
wait_for 'CL-USER>' 10 screen || fail "C-c C-z did not open the REPL"

# The numbers come while the evaluation runs: a screen with 0 and 1 on it
# and no value yet (1.2 s between the 1 and the value: a poll every 50 ms
# of a loaded machine's screen missed a 0.6 s window once).
tmux_ send-keys -t "$session" -l "(dotimes (i 3) (print i) (sleep 0.6))"
tmux_ send-keys -t "$session" Enter
seen_before_value=no
start=$(now)
while ! over "$(elapsed_since "$start")" 10; do
  screen=$(pane)
  if grep -Eq '(^|\|)0 *$' <<<"$screen" && grep -Eq '(^|\|)1 *$' <<<"$screen"; then
    if ! grep -q '=> NIL' <<<"$screen"; then seen_before_value=yes; fi
    break
  fi
  sleep 0.05
done
[ "$seen_before_value" = yes ] || fail "0 and 1 were not on the screen before the value"
wait_for '(^|\|)=> NIL$' 10 screen || fail "the dotimes did not end with => NIL"
pane | grep -Eq '(^|\|)2 *$' || fail "2 is missing from the output"

# C-c C-c stops a running form in the debugger, as in SLY: 0 (CONTINUE)
# lets it go on from where it was.
tmux_ send-keys -t "$session" -l "(let ((end (+ (get-internal-real-time) (* 2 internal-time-units-per-second)))) (loop until (> (get-internal-real-time) end)) :resumed)"
tmux_ send-keys -t "$session" Enter
wait_for 'evaluating' 5 screen || fail "the REPL does not say it is evaluating"
tmux_ send-keys -t "$session" C-c C-c
wait_for 'Interrupted by C-c C-c' 10 screen || fail "C-c C-c did not stop in the debugger"
wait_for '0: \[CONTINUE\]' 5 screen || fail "the debugger offers no CONTINUE"
tmux_ send-keys -t "$session" 0
wait_for '(^|\|)=> :RESUMED$' 10 screen || fail "CONTINUE did not resume the evaluation"
# C-c C-c on a (loop), then q (ABORT): back at the prompt.
tmux_ send-keys -t "$session" -l "(loop)"
tmux_ send-keys -t "$session" Enter
wait_for 'evaluating' 5 screen || fail "the REPL does not say it is evaluating (loop)"
tmux_ send-keys -t "$session" C-c C-c
wait_for 'Interrupted by C-c C-c' 10 screen || fail "C-c C-c did not stop (loop) in the debugger"
tmux_ send-keys -t "$session" q
wait_for 'Evaluation aborted on AGENT-Q::REPL-INTERRUPT' 10 screen || fail "q did not abort (loop)"
wait_for '(^|\|)CL-USER> *$' 5 screen || fail "q did not go back to the REPL's prompt"
tmux_ send-keys -t "$session" -l "(+ 1 2)"
tmux_ send-keys -t "$session" Enter
wait_for '(^|\|)=> 3$' 10 screen || fail "(+ 1 2) after the interrupt did not give => 3"

# C-x C-e in the .lisp file: the result is in the REPL too.
tmux_ send-keys -t "$session" C-x o
tmux_ send-keys -t "$session" M-'>'
tmux_ send-keys -t "$session" C-x C-e
wait_for '; From demo.lisp' 10 screen || fail "the C-x C-e was not written in the REPL"
wait_for '(^|\|)=> 42$' 10 screen || fail "the REPL does not show => 42 for the C-x C-e"

echo "----- the REPL, as the screen shows it -----"
pane
echo "--------------------------------------------"

quit_emacs
echo "PASS: the REPL shows output as it happens, interrupts, and records Lisp buffers' evaluations"
