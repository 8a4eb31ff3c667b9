# Helpers for the end-to-end tests that drive a real interactive Emacs in
# a private tmux server.  Source it after setting SESSION_NAME; it checks
# for tmux, emacs and the module (exit 77 to skip), and defines tmux_, now,
# elapsed_since, over, pane, echo_area, fail, wait_for, eval_expression, find_file,
# start_emacs and quit_emacs.
#
# Exit codes of the tests: 0 success, 1 failure, 77 skip.

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

socket="agentq-e2e-${SESSION_NAME:-e2e}-$$"
session="${SESSION_NAME:-e2e}"
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

# C-x C-f FILE RET, typed as a person would (the caller waits for what
# visiting it shows).
find_file() {
  tmux_ send-keys -t "$session" C-x C-f
  wait_for '^Find file:' 5 || fail "no Find file prompt"
  tmux_ send-keys -t "$session" C-a C-k
  tmux_ send-keys -t "$session" -l "$1"
  tmux_ send-keys -t "$session" Enter
}

# Emacs with nothing in the init but the README's set-up: the autoloads and
# the package from this checkout, SLY's keys in Lisp buffers, the module
# from BUILD_DIR.
# Returns once *scratch* is on the screen.
start_emacs() {
  tmux_ new-session -d -s "$session" -x 160 -y 40 \
    "env TERM=xterm-256color LC_ALL=C.UTF-8 '$emacs_bin' -Q -nw -L '$root/elisp' \
       --eval '(setq sly-agent-q-module-file \"$module\")' -l sly-agent-q-autoloads -l sly-agent-q -f global-sly-agent-q-lisp-mode" \
    || fail "cannot start tmux"
  wait_for '\*scratch\*' 15 screen || fail "Emacs did not start"
}

# C-x C-c, and Emacs gone (the pane dies or the session goes away) within 5 s.
quit_emacs() {
  local exit_start
  tmux_ send-keys -t "$session" C-x C-c
  exit_start=$(now)
  until ! tmux_ has-session -t "$session" 2>/dev/null || pane | grep -q 'Pane is dead'; do
    over "$(elapsed_since "$exit_start")" 5 && fail "Emacs did not exit within 5 s of C-x C-c"
    sleep 0.05
  done
}

# The head of a $work/setup.el that starts the fake provider
# (tests/elisp/sly-agent-q-fake-provider.el) as the chat's backend, for
# TEST (its name in the header line); the test appends the model's turns.
fake_provider_setup() {
  cat <<ELISP
;;; setup.el --- $1's provider -*- lexical-binding: t; -*-
(add-to-list 'load-path "$root/tests/elisp")
(require 'sly-agent-q-fake-provider)
(defvar agentq-e2e-server (sly-agent-q-fake-provider-start))
(setq sly-agent-q-backends
      (list (list :name "fake" :type 'openai :url (sly-agent-q-fake-provider-url agentq-e2e-server)
                  :model "fake-model" :key "sk-e2e"))
      sly-agent-q-backend "fake"
      sly-agent-q-session-directory "$work/sessions/")
ELISP
}

# Starts Emacs, loads $work/setup.el (which starts the fake provider) and
# opens the chat with M-x, as a person does.
start_fake_chat() {
  start_emacs
  eval_expression "(progn (load \"$work/setup.el\" nil t) (message \"e2e fake chat ready\"))"
  wait_for 'e2e fake chat ready' 10 || fail "the fake provider did not start"
  tmux_ send-keys -t "$session" M-x
  wait_for '^M-x' 5 || fail "no M-x prompt"
  tmux_ send-keys -t "$session" -l sly-agent-q-chat
  tmux_ send-keys -t "$session" Enter
  wait_for 'Agent-Q chat .* fake \(fake-model\)' 10 screen || fail "M-x sly-agent-q-chat did not show the chat"
}
