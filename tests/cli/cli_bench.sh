#!/bin/bash
# rlx bench on the embedded stories260K, on the backend $RLX_BENCH_TEST_BACKEND (cpu unless set;
# tests/cli/tests.cmake runs it on vulkan too, lavapipe in CI, with the validation layer on).
# Checked: the markdown table's pp/tg rows; the JSON's internal consistency (mean within the
# samples, t/s = tokens / seconds); bytes/token against an independent sum over `rlx inspect
# --json`'s tensor sizes and config; the bandwidth cache being created, reused and replaced; and
# bad arguments (exit 2, one line).
source "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
backend=${RLX_BENCH_TEST_BACKEND:-cpu}
model="$RLX_SOURCE_DIR/models/stories260K.gguf"
export XDG_CACHE_HOME="$tmp/cache"
if [ "$backend" = vulkan ] && ! "$RLX" devices 2>/dev/null | grep -q '^0:'; then
  if [ "${CI:-}" = true ]; then echo "FAIL: no Vulkan device and CI=true (install mesa-vulkan-drivers)" >&2; exit 1; fi
  echo "SKIPPED: no Vulkan device" >&2; exit 77
fi
# one run: bench ARGS... > $tmp/out, stderr in $tmp/err; fails on a non-zero exit or a validation message
bench() {
  "$RLX" bench -m "$model" --backend "$backend" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  check; [ $rc -eq 0 ] || { fail "bench $*: exit $rc: $(cat "$tmp/err")"; return 1; }
  check; ! grep -q 'rlx vulkan validation' "$tmp/err" || fail "bench $*: validation messages: $(grep 'rlx vulkan validation' "$tmp/err" | head -3)"
}

# ---- markdown ----
bench -p 16 -n 8 -r 2
echo "markdown output:"; cat "$tmp/out"
for t in pp16 tg8; do
  check
  row=$(grep -E "^\| .* \| $t \| " "$tmp/out")
  ts=$(sed -E 's/.*\| ([0-9.]+) ± ([0-9.]+) \|$/\1/' <<<"$row")
  awk -v v="$ts" 'BEGIN { exit !(v + 0 > 0) }' || fail "$t: no row with a positive t/s: '$row'"
  echo "$t row: t/s $ts"
done
check; grep -q "^| model | size | params | backend | \(threads\|device\) | test | t/s |$" "$tmp/out" || fail "table header"
check; grep -q "^| llama .* F32 | .* | $backend | " "$tmp/out" || fail "rows do not name the model / backend"
check; grep -qE '^tg8: [0-9]+ bytes/token' "$tmp/out" || fail "no bytes/token line"
check; grep -qE '^tg8: bandwidth [0-9.]+ GB/s, floor [0-9.]+ t/s, measured [0-9.]+ t/s = [0-9.]+% of the floor$' "$tmp/out" \
  || fail "no floor line"
check; grep -q '^device: ' "$tmp/out" || fail "no device line"
# the Vulkan backend chains greedy decode steps and says so; the CPU has no round trip to speak of
if [ "$backend" = vulkan ]; then
  check; grep -qx 'tg8: up to 8 greedy steps per round trip to the host (--decode-ahead)' "$tmp/out" || fail "no decode-ahead line"
else
  check; ! grep -q 'round trip' "$tmp/out" || fail "a decode-ahead line on the CPU backend"
fi
if [ "$backend" = vulkan ]; then
  line=$(sed -n 's/^device: //p' "$tmp/out")
  check; "$RLX" devices | grep -qxF -- "$line" || fail "device line is not one of rlx devices' lines: $line"
fi
check; grep -q 'measured now' "$tmp/out" || fail "first run did not measure the bandwidth: $(grep ^bandwidth "$tmp/out")"
cache_file=$(ls "$XDG_CACHE_HOME"/rlx/bandwidth-*.json 2>/dev/null | head -1)
check; [ -n "$cache_file" ] || fail "no bandwidth cache file under $XDG_CACHE_HOME/rlx"
case "$backend" in cpu) want_name=bandwidth-cpu.json ;; *) want_name='bandwidth-vk-*-*.json' ;; esac
# shellcheck disable=SC2053
check; [[ $(basename "$cache_file") == $want_name ]] || fail "cache file $(basename "$cache_file"), want $want_name"
echo "bandwidth cache: $cache_file"
# RLX_VK_PROFILE times chained decode steps too: the last run of each chain, with the decode
# kernels (the fused decode attention) and a positive busy time
if [ "$backend" = vulkan ]; then
  RLX_VK_PROFILE=1 bench -p 0 -n 8 -r 1
  prof=$(grep -A64 '^rlx vulkan profile (the last of [2-8] chained runs): [0-9]* dispatches' "$tmp/err" | head -64)
  check; [ -n "$prof" ] || fail "RLX_VK_PROFILE=1: no profile of a chain: $(grep 'vulkan profile' "$tmp/err" | head -3)"
  check; grep -q '^  attention_step' <<<"$prof" || fail "the chain's profile names no decode attention: $prof"
  busy=$(sed -nE '1s/.*dispatches, ([0-9.]+) us busy.*/\1/p' <<<"$prof")
  check; awk -v b="$busy" 'BEGIN { exit !(b + 0 > 0) }' || fail "the chain's profile has no busy time: $(head -1 <<<"$prof")"
  echo "chain profile: $(head -1 <<<"$prof")"
fi

# ---- JSON: consistency ----
n=12
bench -p 16,8 -n $n -r 3 -o json
cp "$tmp/out" "$tmp/run.json"
check; jq -e . "$tmp/run.json" >/dev/null || fail "-o json is not JSON: $(head -c 300 "$tmp/run.json")"
check; [ "$(jq -r '[.tests[].name] | join(",")' "$tmp/run.json")" = "pp16,pp8,tg$n" ] || fail "tests: $(jq -c '[.tests[].name]' "$tmp/run.json")"
check
jq -e '.tests | all(
    (.samples_ts | length) == 3 and (.samples_s | length) == 3 and .repetitions == 3
    and (.samples_ts | min) == .min_ts and (.samples_ts | max) == .max_ts
    and .min_ts > 0 and .min_ts <= .avg_ts and .avg_ts <= .max_ts and .stddev_ts >= 0
    and (((.samples_ts | add) / 3 - .avg_ts) | fabs) <= 1e-9 * .avg_ts
    and ([range(3) as $i | (.samples_ts[$i] * .samples_s[$i]) - (if .kind == "tg" then .n_gen else .n_prompt end)]
         | map(fabs) | max) <= 1e-6)' "$tmp/run.json" >/dev/null \
  || fail "samples and statistics disagree: $(jq -c '.tests' "$tmp/run.json")"
echo "statistics: $(jq -c '[.tests[] | {name, avg_ts, min_ts, max_ts}]' "$tmp/run.json")"
# include/rlx/runner.h: greedy generation decodes 8 steps ahead unless told otherwise
check; [ "$(jq .decode_ahead "$tmp/run.json")" = 8 ] || fail "decode_ahead: $(jq .decode_ahead "$tmp/run.json"), want the default 8"
check; [ "$(jq -r .bandwidth.from_cache "$tmp/run.json")" = true ] || fail "second run did not reuse the cache: $(jq -c .bandwidth "$tmp/run.json")"
check; [ "$(jq -r .bandwidth.cache_file "$tmp/run.json")" = "$cache_file" ] || fail "cache file: $(jq -r .bandwidth.cache_file "$tmp/run.json")"
check; [ "$(jq -r .bandwidth.bytes_per_s "$tmp/run.json")" = "$(jq -r .bytes_per_s "$cache_file")" ] || fail "cached figure differs"

# ---- bytes/token, independently: tensor sizes and config from rlx inspect ----
"$RLX" inspect --json "$model" >"$tmp/inspect.json"
# weights: every tensor but token_embd, which counts whole when there is no output.weight (tied)
want_w=$(jq '. as $r | ([$r.tensors[] | select(.name != "token_embd.weight") | .bytes] | add)
  + (if any($r.tensors[]; .name == "output.weight") then 0 else ([$r.tensors[] | select(.name == "token_embd.weight") | .bytes] | add) end)' "$tmp/inspect.json")
# KV: K and V, every layer, over the contexts 2 .. n+1 of the timed steps (1-token prompt), in
# elements of the cache's type as the run reports it (2 bytes for f16, 4 for f32)
elem=$(jq 'if .kv_type == "f16" then 2 else 4 end' "$tmp/run.json")
want_kv=$(jq --argjson n $n --argjson e "$elem" '.config | 2 * .n_layer * .n_head_kv * .head_dim * $e * (1 + ($n + 1) / 2)' "$tmp/inspect.json")
check; [ "$(jq '.config.layers | all(. == "full")' "$tmp/inspect.json")" = true ] || fail "stories260K: expected only full-attention layers"
got=$(jq -c ".tests[] | select(.name == \"tg$n\") | .floor" "$tmp/run.json")
echo "floor: $got; want weights $want_w + KV $want_kv bytes/token"
check
jq -e --argjson w "$want_w" --argjson kv "$want_kv" --argjson bw "$(jq .bandwidth.bytes_per_s "$tmp/run.json")" \
   --argjson avg "$(jq ".tests[] | select(.name == \"tg$n\") | .avg_ts" "$tmp/run.json")" '
  def close(a; b): ((a - b) | fabs) <= 1e-9 * (b | fabs) + 1e-9;
  close(.weight_bytes_per_token; $w) and close(.kv_bytes_per_token; $kv) and close(.bytes_per_token; $w + $kv) and .state_bytes_per_token == 0
  and close(.floor_ts; $bw / ($w + $kv)) and close(.ratio; $avg / ($bw / ($w + $kv)))' <<<"$got" >/dev/null \
  || fail "floor disagrees with the independent computation"
check
[ "$(jq '.model.size_bytes' "$tmp/run.json")" = "$(jq '[.tensors[].bytes] | add' "$tmp/inspect.json")" ] \
  && [ "$(jq '.model.n_params' "$tmp/run.json")" = "$(jq '.n_params' "$tmp/inspect.json")" ] \
  || fail "size / params: $(jq -c '.model' "$tmp/run.json")"

# ---- the cache is replaced on request ----
bench -p 0 -n 4 -r 1 -o json --bw-remeasure --decode-ahead 3
check; [ "$(jq .decode_ahead "$tmp/out")" = 3 ] || fail "--decode-ahead 3 reported as $(jq .decode_ahead "$tmp/out")"
check; [ "$(jq -r .bandwidth.from_cache "$tmp/out")" = false ] || fail "--bw-remeasure used the cache"
check; [ "$(jq -r .bytes_per_s "$cache_file")" = "$(jq -r .bandwidth.bytes_per_s "$tmp/out")" ] || fail "--bw-remeasure did not update the cache"
check; [ "$(jq '.tests | length' "$tmp/out")" = 1 ] || fail "-p 0 did not skip pp: $(jq -c '[.tests[].name]' "$tmp/out")"

# ---- the context is raised to fit (stories260K trains at 2048); cheap on the CPU only ----
if [ "$backend" = cpu ]; then
  bench -p 2100 -n 0 -r 1 -o json
  check; [ "$(jq '.n_ctx >= 2100' "$tmp/out")" = true ] || fail "context not raised: n_ctx $(jq .n_ctx "$tmp/out")"
fi

# bad NEEDLE ARGS...: exit 2, one line on stderr naming NEEDLE, nothing on stdout
bad() {
  local needle=$1; shift
  check
  "$RLX" bench "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne 2 ]; then fail "bench $*: exit $rc, want 2 ($(cat "$tmp/err"))"; return; fi
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "bench $*: error is not one line: $(cat "$tmp/err")"
  grep -q -- "$needle" "$tmp/err" || fail "bench $*: error lacks '$needle': $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "bench $*: wrote to stdout"
}
# ---- -d: tests after tokens in the KV cache (llama-bench's names "pp16 @ d32") ----
bench -p 16 -n 8 -d 0,32 -r 2 -o json
check; [ "$(jq -r '[.tests[].name] | join(",")' "$tmp/out")" = "pp16,pp16 @ d32,tg8,tg8 @ d32" ] \
  || fail "-d tests: $(jq -c '[.tests[].name]' "$tmp/out")"
check; [ "$(jq -c '[.tests[].n_depth]' "$tmp/out")" = "[0,32,0,32]" ] || fail "n_depth: $(jq -c '[.tests[].n_depth]' "$tmp/out")"
# the floor at the timed contexts: 32 + 1 (the prompt) + k for k = 1..8, a mean of 37.5
if [ "$(jq '.bandwidth != null and .bandwidth.bytes_per_s != null' "$tmp/out")" = true ]; then
  check; [ "$(jq '.tests[] | select(.name == "tg8 @ d32") | .floor.mean_context' "$tmp/out")" = 37.5 ] \
    || fail "tg8 @ d32 mean context: $(jq -c '.tests[3].floor' "$tmp/out")"
fi

# ---- --parallel: llama-batched-bench's protocol through the engine (on Vulkan one depth: lavapipe
# is slow) ----
depths="0 32"; [ "$backend" = vulkan ] && depths=32
for d in $depths; do
  bench --parallel 1,4 -p 16 -n 8 -r 2 -d $d -o json
  cp "$tmp/out" "$tmp/par.json"
  check; [ "$(jq -c '[.tests[].n_parallel]' "$tmp/par.json")" = "[1,4]" ] || fail "-d $d: n_parallel: $(jq -c '[.tests[].n_parallel]' "$tmp/par.json")"
  check
  # every figure keeps its 2 samples; t/s * s = B * 16 prompt tokens, B * 8 decoded, 8 per sequence
  jq -e --argjson d $d '.tests | all(.kind == "parallel" and .n_prompt == 16 and .n_gen == 8 and .n_depth == $d
      and .repetitions == 2 and (.pp.samples_s | length) == 2 and (.tg.samples_ts | length) == 2
      and (.tg_per_sequence.samples_ts | length) == 2
      and ([range(2) as $i | (.pp.samples_ts[$i] * .pp.samples_s[$i]) - .n_parallel * 16,
                            (.tg.samples_ts[$i] * .tg.samples_s[$i]) - .n_parallel * 8,
                            (.tg_per_sequence.samples_ts[$i] * .tg_per_sequence.samples_s[$i]) - 8]
           | map(fabs) | max) <= 1e-6
      and .pp.min_ts > 0 and .pp.min_ts <= .pp.avg_ts and .pp.avg_ts <= .pp.max_ts)' "$tmp/par.json" >/dev/null \
    || fail "-d $d: parallel samples: $(jq -c '.tests' "$tmp/par.json")"
  check; [ "$(jq ".n_ctx >= $d + 16 + 8 + 1" "$tmp/par.json")" = true ] || fail "-d $d: n_ctx $(jq .n_ctx "$tmp/par.json")"
  echo "--parallel 1,4 -d $d: $(jq -c '[.tests[] | {name, n_parallel, pp: .pp.avg_ts, tg: .tg.avg_ts}]' "$tmp/par.json")"
done
if [ "$backend" = cpu ]; then
  # markdown: one row per B; -npl is the same option
  bench -npl 1,4 -p 16 -n 8 -r 1
  check; [ "$(grep -cE '^\| llama .* \| pp16\+tg8 \| [14] \| [0-9.]+ ± [0-9.]+ \| [0-9.]+ ± [0-9.]+ \| [0-9.]+ ± [0-9.]+ \|$' "$tmp/out")" = 2 ] \
    || fail "-npl markdown: $(cat "$tmp/out")"
  bad "--parallel: 0 is out of range" -m "$model" --parallel 0
  bad "--parallel: 'x' is not a whole number" -m "$model" -npl 1,x
  bad "-p 0" -m "$model" --parallel 2 -p 0
  bad "too small for pp16+tg8" -m "$model" --parallel 2 -p 16 -n 8 --ctx 24
fi

# ---- a recurrent model (qwen35, CPU: its state lives on the engine's backend): the floor also
# counts the Gated DeltaNet state each step reads and writes whole, 2 x 4 bytes x, per linear
# layer, its conv state (kernel - 1) x channels plus its delta state value heads x d_k x d_v: the
# sizes from the file's tensors (ssm_conv1d [kernel, channels], ssm_a [value heads], ssm_norm
# [d_v]) and its ssm.state_size (d_k), as llama.cpp's converter writes them ----
q35=models/qwen35/qwen35-F32.gguf
if [ "$backend" = cpu ] && [ ! -e "$FIXTURES/$q35" ]; then
  if [ "${CI:-}" = true ]; then fail "fixture $FIXTURES/$q35 missing and CI=true"
  else echo "SKIPPED (loudly): the recurrent model's floor: fixture $FIXTURES/$q35 missing" >&2; fi
elif [ "$backend" = cpu ]; then
  qn=6
  "$RLX" bench -m "$FIXTURES/$q35" -p 0 -n $qn -r 1 -o json >"$tmp/q35.json" 2>"$tmp/err"
  rc=$?
  check; [ $rc -eq 0 ] || fail "qwen35 bench: exit $rc: $(cat "$tmp/err")"
  "$RLX" inspect --json "$FIXTURES/$q35" >"$tmp/q35i.json"
  want_w=$(jq '. as $r | ([$r.tensors[] | select(.name != "token_embd.weight") | .bytes] | add)
    + (if any($r.tensors[]; .name == "output.weight") then 0 else ([$r.tensors[] | select(.name == "token_embd.weight") | .bytes] | add) end)' "$tmp/q35i.json")
  elem=$(jq 'if .kv_type == "f16" then 2 else 4 end' "$tmp/q35.json")
  want_kv=$(jq --argjson n $qn --argjson e "$elem" '.config | ([.layers[] | select(. == "full")] | length) as $full
    | $full * .n_head_kv * (.head_dim + .head_dim_v) * $e * (1 + ($n + 1) / 2)' "$tmp/q35i.json")
  want_state=$(jq '. as $r | [$r.config.layers | to_entries[] | select(.value == "linear") | .key as $l
    | def shape($t): ($r.tensors[] | select(.name == "blk.\($l).\($t)") | .shape);
      shape("ssm_conv1d.weight") as $conv | shape("ssm_a")[0] as $hv | shape("ssm_norm.weight")[0] as $dv
      | (($conv[0] - 1) * $conv[1] + $hv * $r.metadata["\($r.architecture).ssm.state_size"] * $dv) * 4]
    | 2 * add' "$tmp/q35i.json")
  got=$(jq -c '.tests[0].floor' "$tmp/q35.json")
  echo "qwen35 floor: $got; want weights $want_w + KV $want_kv + state $want_state bytes/token"
  check
  jq -e --argjson w "$want_w" --argjson kv "$want_kv" --argjson st "$want_state" '
    def close(a; b): ((a - b) | fabs) <= 1e-9 * (b | fabs) + 1e-9;
    $st > 0 and close(.weight_bytes_per_token; $w) and close(.kv_bytes_per_token; $kv)
    and close(.state_bytes_per_token; $st) and close(.bytes_per_token; $w + $kv + $st)' <<<"$got" >/dev/null \
    || fail "qwen35 floor disagrees with the independent computation"
  # the markdown line names it; an attention-only model's line does not
  "$RLX" bench -m "$FIXTURES/$q35" -p 0 -n $qn -r 1 >"$tmp/out" 2>"$tmp/err"
  line=$(grep -E "^tg$qn: [0-9]+ bytes/token" "$tmp/out")
  echo "qwen35: $line"
  check; grep -qE "^tg$qn: [0-9]+ bytes/token \(.* = weights .* \+ f32 KV .* at a mean context of [0-9.]+ \+ recurrent state [0-9.]+ KiB, read and written\)$" <<<"$line" \
    || fail "qwen35: the bytes/token line does not name the recurrent state: $line"
  check; [ "$(sed -E 's/^tg[0-9]+: ([0-9]+) bytes.*/\1/' <<<"$line")" = "$(awk -v a="$want_w" -v b="$want_kv" -v c="$want_state" 'BEGIN { printf "%.0f", a + b + c }')" ] \
    || fail "qwen35: the line's bytes/token is not weights + KV + state"
  bench -p 0 -n 4 -r 1
  check; ! grep -q 'recurrent state' "$tmp/out" || fail "stories260K: a recurrent state in its floor line"
fi

# ---- bad arguments: exit 2, one line ----
bad "missing -m" -p 16
bad "out of range" -m "$model" -r 0
bad "out of range" -m "$model" -r 1001
bad "out of range" -m "$model" -n 2000000
bad "out of range" -m "$model" -p -1
bad "item 2 is empty" -m "$model" -p 16,
bad "not a whole number" -m "$model" -p 1x
bad "not a format" -m "$model" -o xml
bad "not a backend" -m "$model" --backend tpu
bad "unknown option" -m "$model" --tokens 1,2
bad "nothing to run" -m "$model" -p 0 -n 0
bad "too small" -m "$model" --ctx 16 -p 32 -n 0
bad "needs a value" -m "$model" -p
bad "--decode-ahead" -m "$model" --decode-ahead 0
bad "--decode-ahead" -m "$model" --decode-ahead 65
check; "$RLX" bench -m "$tmp/missing.gguf" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "missing model: exit $rc, $(cat "$tmp/err")"
check; "$RLX" bench --help | grep -q '^usage: rlx bench' || fail "--help"
summary
