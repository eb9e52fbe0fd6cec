#!/bin/bash
# tools/serve_bench.py, the load client of the GPU benchmarks, against rlx serve on the story model:
# every level completes without errors, and each stream gets exactly the tokens it asked for
# (ignore_eos): aggregate generated tokens = streams x gen tokens.
set -uo pipefail
RLX=${1:?usage: server_bench.sh RLX}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/server_lib.sh"
source "$here/../support/lib.sh"
trap kill_servers EXIT
require_python3 tools/serve_bench.py
start_server BENCH --ctx 256 --parallel 8
out=$(python3 "$RLX_SOURCE_DIR/tools/serve_bench.py" --url "$URL_BENCH" --streams 1,8 --prompt-tokens 48 --gen-tokens 20 --json) || {
  echo "FAIL: serve_bench.py exited non-zero:"; echo "$out"; exit 1; }
echo "$out"
status=0
for want in "1 20" "8 160"; do
  set -- $want
  grep -q "\"streams\": $1, \"requests\": $1, \"errors\": 0, .*\"gen_tokens\": $2," <<<"$out" ||
    { echo "FAIL: $1 streams: expected $1 requests, no errors, $2 generated tokens"; status=1; }
done
stop_server BENCH || status=1
exit $status
