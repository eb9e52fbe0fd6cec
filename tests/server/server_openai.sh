#!/bin/bash
# rlx serve against the official openai client (js/openai.test.mjs): on the embedded story model
# (no chat template: the plain fallback) and on the qwen3 fixture (its own chat template, an API
# key). Each server is stopped with SIGTERM and must exit 0.
set -uo pipefail
RLX=${1:?usage: server_openai.sh RLX}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/server_lib.sh"
trap kill_servers EXIT
need_node
fixtures=${RLX_FIXTURES:-$RLX_SOURCE_DIR/../shared/fixtures}
qwen=$fixtures/models/qwen3/qwen3-Q8_0.gguf
status=0

start_server STORIES --ctx 256 --parallel 4
node "$JS/openai.test.mjs" --url "$URL_STORIES" --model stories260K --rlx "$RLX" --rlx-model default --ctx 256 || status=1
stop_server STORIES || status=1

if [ -f "$qwen" ]; then
  start_server QWEN -m "$qwen" --ctx 512 --api-key test-key-123 --alias qwen3-fixture
  node "$JS/openai.test.mjs" --url "$URL_QWEN" --model qwen3-fixture --rlx "$RLX" --rlx-model "$qwen" --ctx 512 \
    --api-key test-key-123 || status=1
  stop_server QWEN || status=1
else
  echo "SKIP: no fixture $qwen: the chat-template half did not run" >&2
  [ "${CI:-}" = true ] && status=1
fi
exit $status
