#!/usr/bin/env bash
# A real interactive C-g: Emacs -nw in a private tmux server evaluates
# (loop) in ECL through M-:, a C-g arrives 1 s later, and Emacs must be
# back at the command loop within 1.5 s with the session still working.
#
#   bash tests/e2e/cg-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

if ! command -v tmux >/dev/null 2>&1; then
  echo "SKIP: tmux is not installed"
  exit 77
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build_dir=${1:-$root/build}
module="$build_dir/sly-agent-q-module.so"
emacs_bin=${EMACS:-emacs}

if ! command -v "$emacs_bin" >/dev/null 2>&1; then
  echo "SKIP: $emacs_bin is not installed"
  exit 77
fi
if [ ! -f "$module" ]; then
  echo "FAIL: module $module not found (run make)"
  exit 1
fi

socket="agentq-e2e-cg-$$"
session="cg"
tmux_() { tmux -L "$socket" -f /dev/null "$@"; }
cleanup() {
  tmux_ kill-server >/dev/null 2>&1 || true
  rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$socket"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset TMUX

now() { date +%s.%N; }
elapsed_since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
over() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
pane() { tmux_ capture-pane -p -t "$session" 2>/dev/null; }
# The last non-empty line of the screen: the echo area.
echo_area() { pane | sed '/^[[:space:]]*$/d' | tail -n 1; }

fail() {
  echo "FAIL: $*"
  echo "----- screen -----"
  pane
  echo "------------------"
  exit 1
}

# wait_for REGEXP SECONDS [WHERE]: poll the echo area (or the whole screen).
wait_for() {
  local regexp=$1 limit=$2 where=${3:-echo} start
  start=$(now)
  while :; do
    if [ "$where" = screen ]; then
      pane | grep -Eq -- "$regexp" && return 0
    else
      echo_area | grep -Eq -- "$regexp" && return 0
    fi
    if over "$(elapsed_since "$start")" "$limit"; then
      return 1
    fi
    sleep 0.05
  done
}

# M-: EXPRESSION RET, typed as a person would.
eval_expression() {
  tmux_ send-keys -t "$session" M-:
  wait_for '^Eval:' 5 || fail "no Eval: prompt after M-:"
  tmux_ send-keys -t "$session" -l "$1"
  tmux_ send-keys -t "$session" Enter
}

# Emacs with nothing in the init: the package from this checkout, the module
# from BUILD_DIR.
tmux_ new-session -d -s "$session" -x 160 -y 40 \
  "env TERM=xterm-256color LC_ALL=C.UTF-8 '$emacs_bin' -Q -nw -L '$root/elisp' \
     --eval '(setq sly-agent-q-module-file \"$module\")' -l sly-agent-q" \
  || fail "cannot start tmux"

wait_for '\*scratch\*' 15 screen || fail "Emacs did not start"

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

# Leave cleanly: Emacs exits (the pane dies or the session goes away).
tmux_ send-keys -t "$session" C-x C-c
exit_start=$(now)
until ! tmux_ has-session -t "$session" 2>/dev/null || pane | grep -q 'Pane is dead'; do
  over "$(elapsed_since "$exit_start")" 5 && fail "Emacs did not exit within 5 s of C-x C-c"
  sleep 0.05
done

printf 'PASS: C-g quit the evaluation in %.2f s; => 42 shown %.2f s after C-g\n' "$quit_seconds" "$total_seconds"
exit 0
