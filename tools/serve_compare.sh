#!/bin/bash
# rlx serve and llama-server on the same model file, measured by the same load client
# (tools/serve_bench.py), one after the other and then again (rlx, llama, rlx, llama), so that the
# machine's drift shows rather than biases the ratio. Prints each run's table.
#
#   tools/serve_compare.sh MODEL.gguf [STREAMS] [PROMPT_TOKENS] [GEN_TOKENS]
#
# Environment: RLX (default build/rlx), LLAMA_SERVER (default ../shared/bench/llama.cpp/llama-server,
# its libraries beside it), RLX_SERVE_ARGS / LLAMA_SERVER_ARGS (extra arguments), ROUNDS (default 2).
# Both servers get room for the largest level: max(STREAMS) slots of PROMPT+GEN+64 tokens.
set -euo pipefail
model=${1:?usage: serve_compare.sh MODEL.gguf [STREAMS] [PROMPT_TOKENS] [GEN_TOKENS]}
streams=${2:-1,8,32,64}
p=${3:-512}
g=${4:-128}
here=$(cd "$(dirname "$0")" && pwd)
rlx=${RLX:-$here/../build/rlx}
llama=${LLAMA_SERVER:-$here/../../shared/bench/llama.cpp/llama-server}
max=$(tr , '\n' <<<"$streams" | sort -n | tail -1)
ctx=$((p + g + 64))
kv=$(( (max * ctx * 160 * 1024 / (1 << 30) + 2) ))G # 160 KiB a token covers an 8B model's F16 K/V
port_rlx=18080
port_llama=18081

wait_ready() { # URL PID
  for _ in $(seq 1 600); do
    kill -0 "$2" 2>/dev/null || { echo "server exited while loading" >&2; return 1; }
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/health", timeout=2)' "$1" \
      >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "server not ready after 300 s" >&2
  return 1
}

run_rlx() {
  "$rlx" serve -m "$model" --port $port_rlx --parallel "$max" --ctx "$ctx" --kv-memory "$kv" ${RLX_SERVE_ARGS:-} \
    >/tmp/rlx-serve.log 2>&1 &
  local pid=$!
  wait_ready "http://127.0.0.1:$port_rlx" $pid
  echo "== rlx serve ($(basename "$model"), --parallel $max --ctx $ctx --kv-memory $kv)"
  python3 "$here/serve_bench.py" --url "http://127.0.0.1:$port_rlx" --streams "$streams" --prompt-tokens "$p" \
    --gen-tokens "$g"
  kill -TERM $pid
  wait $pid
}

run_llama() {
  LD_LIBRARY_PATH="$(dirname "$llama")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$llama" -m "$model" --port $port_llama \
    -np "$max" -c $((max * ctx)) -ngl 99 ${LLAMA_SERVER_ARGS:-} >/tmp/llama-server.log 2>&1 &
  local pid=$!
  wait_ready "http://127.0.0.1:$port_llama" $pid
  echo "== llama-server ($(basename "$model"), -np $max -c $((max * ctx)) -ngl 99)"
  python3 "$here/serve_bench.py" --url "http://127.0.0.1:$port_llama" --streams "$streams" --prompt-tokens "$p" \
    --gen-tokens "$g"
  kill -TERM $pid
  wait $pid || true
}

for round in $(seq 1 "${ROUNDS:-2}"); do
  echo "### round $round"
  run_rlx
  run_llama
done
