#!/usr/bin/env bash
# A model's held error answered by the person, in a real Emacs -nw in a
# private tmux server, against the fake provider (an HTTP server on
# 127.0.0.1 inside that Emacs, reached through real curl).  The model
# calls evaluate_lisp with debug: true on code whose error has a restart
# USE-IT taking a value; the chat's tool line gets a [held: condition N]
# button.  The person (keys sent through tmux) moves to it and presses
# RET: the debugger buffer shows USE-IT; 0 picks it and 42 is typed at
# its prompt.  Told so in the chat, the model's next turn calls
# invoke_restart about that condition: the tool result the provider
# receives says what the person chose.
#
#   bash tests/e2e/held-error-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=held-error
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

command -v curl >/dev/null 2>&1 || { echo "SKIP: curl is not installed"; exit 77; }

work=$(mktemp -d)
trap 'cleanup; rm -rf "$work"' EXIT

{ fake_provider_setup "the held-error test"; cat <<ELISP; } > "$work/setup.el"
(defun agentq-e2e-say (text)
  "The model's next turn: TEXT."
  (sly-agent-q-fake-provider-push
   agentq-e2e-server
   (list :status 200 :chunks (sly-agent-q-fake-provider-openai-stream :text text :split 4))))
(defun agentq-e2e-call (id name arguments)
  "The model's next turn: a call of the tool NAME with ARGUMENTS (an alist)."
  (sly-agent-q-fake-provider-push
   agentq-e2e-server
   (list :status 200
         :chunks (sly-agent-q-fake-provider-openai-stream
                  :tool-calls (list (list :id id :name name :arguments (json-encode arguments)))
                  :split 4))))
(defun agentq-e2e-last-tool-result (file)
  "Write into FILE the tool results of the provider's last request."
  (let* ((request (car (last (sly-agent-q-fake-provider-requests agentq-e2e-server))))
         (messages (gethash "messages" (plist-get request :json))))
    (with-temp-file file
      (seq-doseq (message messages)
        (when (equal (gethash "role" message) "tool")
          (insert (gethash "content" message) "\n"))))))
(agentq-e2e-call "c1" "evaluate_lisp"
                 '((code . "(restart-case (error \"boom\") (use-it (v) (list :got v)))") (debug . t)))
(agentq-e2e-say "The error is held: pick a restart in the debugger.")
ELISP

start_fake_chat

tmux_ send-keys -t "$session" -l "Run it with the debugger on."
tmux_ send-keys -t "$session" Enter
wait_for '\[held: condition [0-9]+ — RET opens the debugger\]' 20 screen \
  || fail "the tool line has no held button"
wait_for 'pick a restart in the debugger\.' 10 screen || fail "the model's turn did not end"
id=$(pane | grep -Eo '\[held: condition [0-9]+' | head -n 1 | grep -Eo '[0-9]+$')
echo "held as condition $id"

# To the button, as a person would: search back for it, RET on it.
tmux_ send-keys -t "$session" C-r
tmux_ send-keys -t "$session" -l "held: condition"
tmux_ send-keys -t "$session" Enter
tmux_ send-keys -t "$session" Enter
wait_for "^SIMPLE-ERROR: boom" 10 screen || fail "RET on the button did not open the debugger"
wait_for "Held for the agent as condition $id" 5 screen || fail "the debugger does not say it is the agent's"
wait_for ' 0: \[USE-IT\]' 5 screen || fail "the debugger does not show USE-IT"
echo "----- the debugger, as the screen shows it -----"
pane | sed '/^[[:space:]]*$/d'
echo "------------------------------------------------"

tmux_ send-keys -t "$session" 0
wait_for '^\[USE-IT\] values \(Lisp forms, evaluated; empty for none\):' 5 || fail "0 did not ask for USE-IT's values"
tmux_ send-keys -t "$session" -l "42"
tmux_ send-keys -t "$session" Enter
wait_for "Condition $id: => \(:GOT 42\)" 15 || fail "the restart did not give the evaluation's result"

# The model's next turn asks about the condition: what does it get?
eval_expression "(progn (agentq-e2e-call \"c2\" \"invoke_restart\" '((condition_id . $id) (restart . \"USE-IT\") (values . \"1\"))) (agentq-e2e-say \"Understood: you gave it 42.\") (message \"e2e pushed\"))"
wait_for 'e2e pushed' 5 || fail "could not script the model's next turn"
tmux_ send-keys -t "$session" "M->"
tmux_ send-keys -t "$session" -l "I answered it."
tmux_ send-keys -t "$session" Enter
wait_for 'Understood: you gave it 42\.' 20 screen || fail "the model's next turn did not end"
eval_expression "(progn (agentq-e2e-last-tool-result \"$work/tool-result.txt\") (message \"e2e written\"))"
wait_for 'e2e written' 5 || fail "could not read what the provider received"
echo "----- the tool results the provider received last -----"
cat "$work/tool-result.txt"
echo "--------------------------------------------------------"
grep -qF "No error is held as condition $id (The user chose the restart USE-IT with 42.)" "$work/tool-result.txt" \
  || fail "the model was not told what the person chose"

echo "----- the chat, as the screen shows it -----"
pane
echo "--------------------------------------------"

eval_expression "(sly-agent-q-fake-provider-stop agentq-e2e-server)"
quit_emacs
echo "PASS: the model's held error answered by the person in the debugger (USE-IT 42); the model's next call was told so"
exit 0
