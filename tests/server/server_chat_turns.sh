#!/bin/bash
# A 6-turn chat through rlx serve on the Qwen3.5 fixture (hybrid: Gated DeltaNet state + attention),
# by tools/chat_turns.py: from turn 2 on, the server computes only what follows the longest prefix it
# holds a checkpoint for, so each turn's cached tokens cover at least the previous turn's prompt (the
# history up to where that turn's generation began) and it computes fewer tokens than its prompt.
# The same count through the chat template (the fixture's own), and through /v1/completions.
set -uo pipefail
RLX=${1:?usage: server_chat_turns.sh RLX}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/server_lib.sh"
source "$RLX_SOURCE_DIR/tests/support/lib.sh"
trap kill_servers EXIT
require_fixture models/qwen35/qwen35-F32.gguf
model=$FIXTURES/models/qwen35/qwen35-F32.gguf
require_python3 tools/chat_turns.py
start_server CHAT -m "$model" --ctx 1024 --parallel 2
status=0
for mode in "" "--raw"; do
  out=$(python3 "$RLX_SOURCE_DIR/tools/chat_turns.py" --url "$URL_CHAT" --turns 6 --max-tokens 12 --json $mode) || {
    echo "FAIL: chat_turns.py $mode exited non-zero:"; echo "$out"; status=1; continue; }
  echo "== chat_turns.py $mode"; echo "$out"
  python3 - "$out" <<'PY' || status=1
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
ok = len(rows) == 6
for prev, cur in zip(rows, rows[1:]):
    if cur["cached_tokens"] < prev["prompt_tokens"] or cur["computed_tokens"] >= cur["prompt_tokens"]:
        print(f"FAIL: turn {cur['turn']}: {cur['cached_tokens']} cached of {cur['prompt_tokens']}, the previous "
              f"prompt had {prev['prompt_tokens']}")
        ok = False
sys.exit(0 if ok else 1)
PY
done
stop_server CHAT || status=1
exit $status
