#!/usr/bin/env bash
# The REPL's debugger as a person uses it, in a real Emacs -nw in a
# private tmux server: an error in a function loaded from a file (C-c C-l)
# stops in the debugger; n goes to the function's frame, t shows its
# locals and hides them, v shows the function's source line in the file,
# e evaluates a form with the frame's locals, and 1 picks the second
# restart, with which the evaluation goes on.
#
#   bash tests/e2e/debugger-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=debugger
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

# REGEXP no longer on the screen within LIMIT seconds.
wait_for_gone() {
  local regexp=$1 limit=$2 start
  start=$(now)
  while pane | grep -Eq -- "$regexp"; do
    over "$(elapsed_since "$start")" "$limit" && return 1
    sleep 0.05
  done
  return 0
}

work=$(mktemp -d)
trap 'cleanup; rm -rf "$work"' EXIT

cat > "$work/frames.lisp" <<'LISP'
(defun e2e-inner (x)
  (let ((y (* x 2)))
    (restart-case (error "e2e inner ~A" y)
      (e2e-skip () :report "Skip it" 'skipped)
      (e2e-one () :report "Give one" 1))))

(defun e2e-outer (a)
  (list :outer (e2e-inner (+ a 1))))
LISP

start_emacs
eval_expression "(setq sly-agent-q-repl-history-file \"$work/history\")"
# Bytecodes keep their locals: no native compile of the file meanwhile.
eval_expression "(progn (setq sly-agent-q-native-tiering nil) (sly-agent-q--sync-options) (message \"e2e no tiering\"))"
wait_for 'e2e no tiering' 10 || fail "the options were not set"
find_file "$work/frames.lisp"
wait_for 'AQ\[CL-USER\]' 10 screen || fail "sly-agent-q-lisp-mode is not on in the .lisp file"
tmux_ send-keys -t "$session" C-c C-l
wait_for '^Loaded ' 30 || fail "C-c C-l did not load the file"

tmux_ send-keys -t "$session" C-c C-z
wait_for 'CL-USER>' 10 screen || fail "C-c C-z did not open the REPL"
tmux_ send-keys -t "$session" -l "(e2e-outer 5)"
tmux_ send-keys -t "$session" Enter
wait_for 'SIMPLE-ERROR: e2e inner 12' 10 screen || fail "no debugger for the error"
wait_for '0: \[E2E-SKIP\] Skip it' 5 screen || fail "the debugger does not list E2E-SKIP"
wait_for '1: \[E2E-ONE\] Give one' 5 screen || fail "the debugger does not list E2E-ONE"

# n: the frame of E2E-INNER; t: its locals, then hidden again.
tmux_ send-keys -t "$session" n
wait_for '0: \(E2E-INNER\)' 5 screen || fail "no frame of E2E-INNER"
tmux_ send-keys -t "$session" t
wait_for '^ +Y = 12' 5 screen || fail "t did not show the local Y"
wait_for '^ +X = 6' 5 screen || fail "t did not show the local X"
tmux_ send-keys -t "$session" t
wait_for_gone '^ +Y = 12' 5 || fail "t again did not hide the locals"

# v: the function's source, in the file, its defun's line at point.
tmux_ send-keys -t "$session" v
wait_for 'frames\.lisp' 5 screen || fail "v did not show frames.lisp"
eval_expression '(message "e2e-source %s in %s, line %d" (buffer-name) (mapconcat (lambda (w) (buffer-name (window-buffer w))) (window-list) ",") (with-selected-window (get-buffer-window "frames.lisp") (line-number-at-pos)))'
wait_for '^"?e2e-source \*sly-agent-q debugger\* in .*, line 1"?$' 5 || fail "v did not put point on E2E-INNER's defun (line 1), the debugger still selected"

# e: a form evaluated with the frame's locals; the debugger stays.
tmux_ send-keys -t "$session" e
wait_for '^Evaluate in frame:' 5 || fail "e did not ask for a form"
tmux_ send-keys -t "$session" -l "(list x y (+ x y))"
tmux_ send-keys -t "$session" Enter
wait_for 'Frame 0: \(list x y \(\+ x y\)\) => \(6 12 18\)' 10 screen || fail "e did not show the value in the frame"

# 1: the second restart; the evaluation goes on with it.
tmux_ send-keys -t "$session" 1
wait_for_gone 'Restarts \(a digit' 10 || fail "1 did not close the debugger"
# v showed the file where the REPL was: C-c C-z goes back to it.
tmux_ send-keys -t "$session" C-c C-z
wait_for '(^|\|)=> \(:OUTER 1\)$' 10 screen || fail "1 did not pick E2E-ONE"
tmux_ send-keys -t "$session" -l "(+ 1 2)"
tmux_ send-keys -t "$session" Enter
wait_for '(^|\|)=> 3$' 10 screen || fail "the session did not answer after the restart"
quit_emacs
echo "PASS: the REPL's debugger keys n, t, v, e and a restart's digit in a real terminal"
