#!/usr/bin/env bash
# MCP served by a real interactive Emacs: Emacs -nw in a private tmux server
# runs M-x sly-agent-q-mcp-server-start; sly-agent-q-mcp --emacs, driven from
# this script as an agent would drive it, calls write_file (dangerous), and
# the test answers the minibuffer question with y, n and C-g as a person
# would.  While the question is up, and while an evaluation runs, Emacs
# answers other requests and the keyboard; another client's evaluation is
# answered while the question waits.  A call cancelled, or whose client
# goes away, while its question is up: the question leaves the screen and
# the echo area says why; a question of Emacs's own stays.  Quitting Emacs
# gives the agent a clear error, and the binary goes on.
#
#   bash tests/e2e/mcp-emacs-tmux.sh [BUILD_DIR]
#
# Exit 0 on success, 1 on failure, 77 (skip) when tmux is missing.

set -u

SESSION_NAME=mcp-emacs
# shellcheck source=tests/e2e/tmux-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"

binary="$build_dir/sly-agent-q-mcp"
dir=$(mktemp -d /tmp/agentq-mcp-e2e.XXXXXX)
chmod 700 "$dir"
mcp_socket="$dir/mcp.sock"
file="$dir/notes.txt"
printf 'old text\n' > "$file"
trap 'cleanup; [ -n "${BRIDGE_PID:-}" ] && kill "$BRIDGE_PID" 2>/dev/null; rm -rf "$dir"' EXIT

start_emacs
eval_expression "(progn (setq sly-agent-q-allowed-directories (list \"$dir\") sly-agent-q-mcp-socket \"$mcp_socket\") (sly-agent-q-mcp-server-start) (message \"serving\"))"
wait_for '^"?serving"?$' 10 || fail "the MCP server did not start"
[ -S "$mcp_socket" ] || fail "no socket at $mcp_socket"

coproc BRIDGE { "$binary" --emacs "$mcp_socket" 2>"$dir/bridge.log"; }

send() { printf '%s\n' "$1" >&"${BRIDGE[1]}"; }

# response ID SECONDS: the bridge's answer to request ID (others are kept).
declare -a kept=()
response() {
  local id=$1 limit=$2 line i start
  for i in "${!kept[@]}"; do
    if [[ ${kept[$i]} == *"\"id\":$id,"* || ${kept[$i]} == *"\"id\":$id}"* ]]; then
      line=${kept[$i]}; unset "kept[$i]"; printf '%s\n' "$line"; return 0
    fi
  done
  start=$(now)
  while IFS= read -r -t "$limit" line <&"${BRIDGE[0]}"; do
    if [[ $line == *"\"id\":$id,"* || $line == *"\"id\":$id}"* ]]; then
      printf '%s\n' "$line"; return 0
    fi
    kept+=("$line")
    over "$(elapsed_since "$start")" "$limit" && break
  done
  return 1
}

# other_client SECONDS REQUEST: another client, straight on Emacs's socket:
# sends REQUEST, prints the first line answered within SECONDS, goes away.
other_client() {
  python3 - "$mcp_socket" "$1" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[3].encode() + b"\n")
s.settimeout(float(sys.argv[2]))
data = b""
try:
    while b"\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    pass
sys.stdout.write(data.decode(errors="replace").split("\n")[0])
s.close()
PY
}

write_call() {  # write_call ID CONTENT
  send "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\",\"arguments\":{\"path\":\"$file\",\"content\":\"$2\"}}}"
}

send '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}'
answer=$(response 1 20) || fail "no answer to initialize"
[[ $answer == *'"serverInfo":{"name":"sly-agent-q"'* ]] || fail "initialize: $answer"

# y: the question in the minibuffer, marked as from MCP; Emacs answers
# tools/list while it is up; y writes the file.
write_call 2 "from mcp"
wait_for '\[MCP\] Run dangerous tool write_file with' 20 screen || fail "no approval question for the MCP call"
echo "----- the approval question -----"
pane | sed '/^[[:space:]]*$/d' | tail -n 4
echo "---------------------------------"
send '{"jsonrpc":"2.0","id":3,"method":"tools/list"}'
answer=$(response 3 5) || fail "tools/list was not answered while the question was up"
[[ $answer == *'"name":"write_file"'* ]] || fail "tools/list: ${answer:0:300}"
[ "$(cat "$file")" = "old text" ] || fail "the file changed before the answer"
tmux_ send-keys -t "$session" y
answer=$(response 2 10) || fail "no answer after y"
[[ $answer == *'"isError":false'* ]] || fail "y: $answer"
[ "$(cat "$file")" = "from mcp" ] || fail "the file does not have the new text after y"

# n: denied, the file untouched.
write_call 4 "denied"
wait_for '\[MCP\] Run dangerous tool write_file' 20 screen || fail "no question for the second call"
tmux_ send-keys -t "$session" n
answer=$(response 4 10) || fail "no answer after n"
[[ $answer == *'"isError":true'* && $answer == *'User denied tool execution'* ]] || fail "n: $answer"
[ "$(cat "$file")" = "from mcp" ] || fail "the file changed after n"

# C-g at the question: denied, Emacs fine.
write_call 5 "quit"
wait_for '\[MCP\] Run dangerous tool write_file' 20 screen || fail "no question for the third call"
tmux_ send-keys -t "$session" C-g
answer=$(response 5 10) || fail "no answer after C-g"
[[ $answer == *'"isError":true'* ]] || fail "C-g: $answer"
[ "$(cat "$file")" = "from mcp" ] || fail "the file changed after C-g"

# While the question waits, another client's evaluation is answered.
write_call 9 "held"
wait_for '\[MCP\] Run dangerous tool write_file' 20 screen || fail "no question for call 9"
answer=$(other_client 5 '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(+ 1 2)"}}}')
[[ $answer == *'=> 3'* ]] || fail "another client's call was not answered while the question waited: $answer"
pane | grep -q 'Run dangerous tool write_file' || fail "the question left the screen"

# The agent cancels call 9: its question goes, the echo area says so, no answer.
send '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"e2e"}}'
wait_for '\[MCP\] call cancelled by the client; question withdrawn' 5 || fail "the cancelled call's question was not withdrawn"
pane | grep -q 'Run dangerous tool' && fail "the question is still on the screen"
response 9 1 >/dev/null && fail "the cancelled call was answered"
[ "$(cat "$file")" = "from mcp" ] || fail "the file changed after the cancellation"

# A client that goes away while its question is up: the same.
other_client 1.5 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\",\"arguments\":{\"path\":\"$file\",\"content\":\"gone\"}}}" >/dev/null &
wait_for '\[MCP\] Run dangerous tool write_file' 10 screen || fail "no question for the other client's call"
wait "$!"
wait_for '\[MCP\] client went away; question withdrawn' 5 || fail "the gone client's question was not withdrawn"
pane | grep -q 'Run dangerous tool' && fail "the gone client's question is still on the screen"
[ "$(cat "$file")" = "from mcp" ] || fail "the file changed for a client that went away"

# A question of Emacs's own (an Elisp job) is up; an MCP client asks, then
# goes away: its call is dropped unasked, and Emacs's question stays.
eval_expression "(sly-agent-q-execute-tool-calls-async '((:id \"e\" :name \"write_file\" :arguments (:path \"$file\" :content \"from elisp\"))) #'ignore)"
wait_for '^Run dangerous tool write_file' 10 screen || fail "no question for the Elisp job"
other_client 1 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\",\"arguments\":{\"path\":\"$file\",\"content\":\"dropped\"}}}" >/dev/null
sleep 0.5
pane | grep -q '^Run dangerous tool write_file' || fail "the Elisp job's question left the screen"
pane | grep -q '\[MCP\] Run dangerous tool' && fail "the gone client's question was asked"
tmux_ send-keys -t "$session" y
for _ in $(seq 100); do [ "$(cat "$file")" = "from elisp" ] && break; sleep 0.05; done
[ "$(cat "$file")" = "from elisp" ] || fail "y to the Elisp job's question did not write the file"
sleep 0.5
pane | grep -q 'Run dangerous tool' && fail "a question came up after the Elisp job's"

# An evaluation of 3 s over MCP; Emacs answers the keyboard meanwhile.
send '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"(progn (sleep 3) :slept)"}}}'
sleep 0.5
typed=$(now)
eval_expression '(+ 40 2)'
wait_for '^42' 2 || fail "Emacs did not answer the keyboard while the MCP call ran"
echo "M-: answered $(elapsed_since "$typed") s after typing, during the MCP evaluation"
answer=$(response 6 10) || fail "no answer to the evaluation"
[[ $answer == *'=> :SLEPT'* ]] || fail "evaluation: $answer"

# Emacs gone: a clear error, and the binary still answers.
quit_emacs
[ -e "$mcp_socket" ] && fail "Emacs left its socket behind"
send '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"evaluate_lisp","arguments":{"code":"1"}}}'
answer=$(response 7 10) || fail "no answer once Emacs was gone"
[[ $answer == *'Emacs is not serving MCP at'*'M-x sly-agent-q-mcp-server-start'* ]] || fail "Emacs gone: $answer"
send '{"jsonrpc":"2.0","id":8,"method":"ping"}'
response 8 5 >/dev/null || fail "the binary did not answer ping once Emacs was gone"

echo "PASS: MCP through a live Emacs: approvals y/n/C-g in the minibuffer, another client served while a question waits, questions withdrawn for a cancelled call and a gone client (not Emacs's own), Emacs responsive, a clear error once it is gone"
exit 0
