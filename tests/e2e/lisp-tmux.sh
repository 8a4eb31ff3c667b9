#!/usr/bin/env bash
# SLY's keys and the REPL as a person uses them, in a real Emacs -nw in a
# private tmux server: in a .lisp file, C-c C-c on a defun that calls an
# undefined function lists the warning, C-x C-e shows => value; after
# C-c C-l, C-c C-w c lists the caller in *xref* and RET goes to its line;
# C-c M-q reindents the defun; C-c C-z opens the REPL, where (+ 1 2)
# gives => 3, C-c C-c stops a (loop) in the debugger (CONTINUE and
# ABORT), q aborts it and goes back, and the session answers
# again; an error shows the debugger, where USE-VALUE goes on with a
# value and q aborts; ,in-package completes a package name; C-c C-z in
# the REPL goes back to the .lisp file.
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

(defun e2e-messy (y)
        (let ((z y))
 (list (e2e-caller z))))

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

# C-c C-l loads and indexes the file; C-c C-w c on e2e-caller lists its
# caller in *xref*, and RET there goes to the caller's line.
tmux_ send-keys -t "$session" C-c C-l
wait_for '^Loaded ' 10 || fail "C-c C-l did not load the file"
tmux_ send-keys -t "$session" M-'<'
tmux_ send-keys -t "$session" C-s
tmux_ send-keys -t "$session" -l "e2e-caller"
tmux_ send-keys -t "$session" Enter
tmux_ send-keys -t "$session" C-c C-w c
wait_for '^Who calls \(default e2e-caller\)' 5 || fail "C-c C-w c did not ask, with the symbol at point"
tmux_ send-keys -t "$session" Enter
wait_for 'function COMMON-LISP-USER::E2E-MESSY' 10 screen || fail "C-c C-w c did not list E2E-MESSY in *xref*"
pane | grep -q '\*xref\*' || fail "the callers are not in *xref*"
tmux_ send-keys -t "$session" C-s
tmux_ send-keys -t "$session" -l "E2E-MESSY"
tmux_ send-keys -t "$session" Enter
tmux_ send-keys -t "$session" Enter
eval_expression '(message "e2e-at %s:%d" (buffer-name) (line-number-at-pos))'
wait_for '^"?e2e-at demo.lisp:4"?$' 5 || fail "RET in *xref* did not go to the caller's line"

# C-c M-q there reindents the defun.
tmux_ send-keys -t "$session" C-x 1
tmux_ send-keys -t "$session" C-c M-q
wait_for '^  \(let \(\(z y\)\)' 5 screen || fail "C-c M-q did not reindent the let"
wait_for '^    \(list \(e2e-caller z\)\)\)\)' 5 screen || fail "C-c M-q did not reindent the body"
tmux_ send-keys -t "$session" C-x C-s
wait_for '^Wrote ' 5 || fail "C-x C-s did not save the reindented file"

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
# The (loop) stops in the debugger, as in SLY: CONTINUE and ABORT.
wait_for 'Interrupted by C-c C-c' 10 screen || fail "C-c C-c did not stop (loop) in the debugger"
wait_for '0: \[CONTINUE\]' 5 screen || fail "the debugger does not offer CONTINUE"
wait_for '1: \[ABORT\]' 5 screen || fail "the debugger does not offer ABORT"
tmux_ send-keys -t "$session" q
wait_for 'Evaluation aborted on AGENT-Q::REPL-INTERRUPT' 10 screen || fail "q did not abort (loop)"
wait_for '(^|\|)CL-USER> *$' 5 screen || fail "q did not go back to the REPL's prompt"
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

# ,in-package completes the package's name; the prompt follows.
tmux_ send-keys -t "$session" -l "(defpackage :e2e-pkg (:use :cl))"
tmux_ send-keys -t "$session" Enter
wait_for 'E2E-PKG" package>' 10 screen || fail "defpackage did not answer"
tmux_ send-keys -t "$session" ,
wait_for '^REPL command:' 5 || fail ", did not ask for a REPL command"
tmux_ send-keys -t "$session" -l "in-package"
tmux_ send-keys -t "$session" Enter
wait_for '^Package \(default CL-USER\):' 5 || fail ",in-package did not ask for a package"
tmux_ send-keys -t "$session" -l "e2e-p"
tmux_ send-keys -t "$session" Tab
wait_for '^Package \(default CL-USER\): E2E-PKG' 5 || fail ",in-package did not complete the package name"
tmux_ send-keys -t "$session" Enter
wait_for '(^|\|)E2E-PKG> *$' 10 screen || fail ",in-package did not change the package"

# C-c C-z in the REPL: back to the .lisp file C-c C-z was typed in.  (M-:
# shows the message, then the value it returns, in quotes: either will do.)
tmux_ send-keys -t "$session" C-c C-z
eval_expression '(message "e2e-in %s" (buffer-name))'
wait_for '^"?e2e-in demo.lisp"?$' 5 || fail "C-c C-z in the REPL did not go back to demo.lisp"

echo "----- the REPL, as the screen shows it -----"
pane
echo "--------------------------------------------"

quit_emacs
echo "PASS: SLY's keys and the REPL in a real terminal"
