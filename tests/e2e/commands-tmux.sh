#!/usr/bin/env bash
# The interactive commands as a person uses them, in a real Emacs -nw in a
# private tmux server: M-x sly-agent-q-evaluate takes Common Lisp syntax
# that Elisp cannot read (#\a, #(…)) and several forms; the progress
# message of a long evaluation goes away with its result; and in a Lisp
# file, evaluate-defun and evaluate use the package of its (in-package …).
#
#   bash tests/e2e/commands-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=commands
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

work=$(mktemp -d)
trap 'cleanup; rm -rf "$work"' EXIT

# M-x COMMAND RET, then TEXT RET at its prompt, which must match PROMPT.
run_command() {
  local command=$1 prompt=$2 text=${3-}
  tmux_ send-keys -t "$session" M-x
  wait_for '^M-x' 5 || fail "no M-x prompt"
  tmux_ send-keys -t "$session" -l "$command"
  tmux_ send-keys -t "$session" Enter
  if [ -n "$prompt" ]; then
    wait_for "$prompt" 5 || fail "no prompt matching $prompt after M-x $command"
    tmux_ send-keys -t "$session" -l "$text"
    tmux_ send-keys -t "$session" Enter
  fi
}

start_emacs

# Common Lisp syntax at the prompt, two forms: the values of the last.
run_command sly-agent-q-evaluate '^Evaluate Lisp \(ECL\):' '(length #(1 2 3)) (char-upcase #\a)'
wait_for '^=> #\\A$' 15 || fail "(char-upcase #\\a) at the prompt did not show => #\\A"

# A result with output goes to a buffer; the progress message goes away.
run_command sly-agent-q-evaluate '^Evaluate Lisp \(ECL\):' '(progn (format t "out~%") (sleep 1.6) 42)'
wait_for 'Lisp is working' 3 || fail "no progress message during a 1.6 s evaluation"
wait_for '=> 42' 15 screen || fail "the result buffer did not show => 42"
sleep 0.3
pane | grep -q 'Lisp is working' && fail "the progress message stayed after the result"

# A Lisp file with its own package.
cat > "$work/demo.lisp" <<'LISP'
(defpackage :e2e-demo (:use :cl))
(in-package :e2e-demo)

(defun fact (n) (if (< n 2) 1 (* n (fact (1- n)))))
LISP
eval_expression '(sly-agent-q-evaluate "(defpackage :e2e-demo (:use :cl))")'
wait_for 'E2E-DEMO.* package>' 5 || fail "defpackage did not show the package"
find_file "$work/demo.lisp"
wait_for 'demo\.lisp' 5 screen || fail "demo.lisp was not visited"
tmux_ send-keys -t "$session" 'M->'
run_command sly-agent-q-evaluate-defun '' ''
wait_for '^=> FACT$' 5 || fail "evaluate-defun did not show => FACT"
run_command sly-agent-q-evaluate '^Evaluate Lisp \(ECL\) in e2e-demo:' \
  "(list (fact 5) (package-name (symbol-package 'fact)))"
wait_for '^=> \(120 "E2E-DEMO"\)$' 5 || fail "fact was not defined in E2E-DEMO"

quit_emacs
echo "PASS: Lisp syntax at the prompt, progress cleared, the buffer's package used"
exit 0
