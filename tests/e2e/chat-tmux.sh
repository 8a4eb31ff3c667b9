#!/usr/bin/env bash
# The chat as a person uses it, in a real Emacs -nw in a private tmux
# server, against the fake provider (an HTTP server on 127.0.0.1 inside
# that Emacs, reached through real curl): M-x sly-agent-q-chat, a question
# typed at the prompt, the model's tool call shown as a line with its
# status, and the answer streamed in.
#
#   bash tests/e2e/chat-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=chat
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is not installed"; exit 77; }

work=$(mktemp -d)
trap 'cleanup; rm -rf "$work"' EXIT

{ fake_provider_setup "the chat test"; cat <<ELISP; } > "$work/setup.el"
(sly-agent-q-fake-provider-push
 agentq-e2e-server
 (list :status 200
       :chunks (sly-agent-q-fake-provider-openai-stream
                :tool-calls '((:id "c1" :name "evaluate_lisp" :arguments "{\"code\":\"(+ 1 2)\"}"))
                :split 4)))
(sly-agent-q-fake-provider-push
 agentq-e2e-server
 (list :status 200 :chunk-delay 0.1
       :chunks (sly-agent-q-fake-provider-openai-stream
                :text "The sum is 3: I asked ECL, which said => 3." :split 4)))
ELISP

start_fake_chat

tmux_ send-keys -t "$session" -l "What is 1 + 2?"
tmux_ send-keys -t "$session" Enter
wait_for '\[\+\] evaluate_lisp \{"code":"\(\+ 1 2\)"\}  ok [0-9.]+ ms' 20 screen || fail "no tool line with ok"
# Streamed: part of the answer shows before the whole of it.
wait_for 'The sum' 10 screen || fail "the answer did not begin"
pane | grep -q 'which said' && fail "the answer came whole, not streamed"
wait_for 'which said => 3\.' 10 screen || fail "the answer did not end"
pane | grep -Eq '(^|\|)> *$' || fail "no prompt line under the answer"
wait_for 'tokens in [0-9]+ out [0-9]+' 10 screen || fail "the mode line shows no token usage"
pane | grep -q 'thinking' && fail "the mode line still says thinking"

echo "----- the chat, as the screen shows it -----"
pane
echo "--------------------------------------------"

eval_expression "(sly-agent-q-fake-provider-stop agentq-e2e-server)"
quit_emacs
echo "PASS: chat in a real terminal (tool line, streamed answer)"
