#!/bin/bash
# rlx generate with several prompts (tools/generate_batch.c), on the CPU backend and the embedded
# stories260K. The property: batched == alone. Each prompt's line of a batched run (--tokens
# repeated or --tokens-file; --parallel, --chunk, --deterministic) must equal the ids that prompt
# gives run alone through today's single-prompt command (the runner path); under greedy decoding
# and under sampling with one seed. Then: a prompt that fails alone (too long for the context),
# and bad input (exit 2, or 1 for a file that cannot be read, one line naming the problem).
# On $RLX_GENERATE_TEST_BACKEND=vulkan (tests/cli/tests.cmake; lavapipe in CI, validation on) only
# the --deterministic runs, the mode that promises ids independent of the batch on every backend,
# with zero validation messages.
source "$(dirname "$0")/../support/lib.sh"
MODEL=$RLX_SOURCE_DIR/models/stories260K.gguf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
backend=${RLX_GENERATE_TEST_BACKEND:-cpu}
if [ "$backend" = vulkan ] && ! "$RLX" devices 2>/dev/null | grep -q '^0:'; then
  if [ "${CI:-}" = true ]; then echo "FAIL: no Vulkan device and CI=true (install mesa-vulkan-drivers)" >&2; exit 1; fi
  echo "SKIPPED: no Vulkan device" >&2; exit 77
fi
G=(generate -m "$MODEL" --backend "$backend" -t 2)
N=12

# four prompts of different lengths (1, 3, 9 and 20 ids)
P=(42 "1,403,407" "5,6,7,8,9,10,11,12,13" "$(seq -s, 100 119)")

# alone K ARGS...: the ids prompt K gives alone, in $TMP/alone.K
alone_all() {
  for k in "${!P[@]}"; do
    "$RLX" "${G[@]}" --tokens "${P[$k]}" -n $N "$@" >"$TMP/alone.$k" 2>"$TMP/err" \
      || fail "prompt $k alone: $(cat "$TMP/err")"
    ! grep -q 'rlx vulkan validation' "$TMP/err" || fail "prompt $k alone: validation messages"
  done
}

# same DESC: $TMP/out line K == $TMP/alone.K for every K, and nothing more
same() {
  check
  local lines; lines=$(wc -l <"$TMP/out")
  [ "$lines" -eq "${#P[@]}" ] || { fail "$1: $lines lines, want ${#P[@]}: $(cat "$TMP/out")"; return; }
  for k in "${!P[@]}"; do
    local got want
    got=$(sed -n "$((k + 1))p" "$TMP/out"); want=$(cat "$TMP/alone.$k")
    [ "$got" = "$want" ] || fail "$1: prompt $((k + 1)): '$got', alone '$want'"
  done
  echo "$1: ${#P[@]} prompts equal their runs alone"
}

# batched DESC ARGS...: run, expect exit 0, compare
batched() {
  local desc=$1; shift
  "$RLX" "${G[@]}" -n $N "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  check; [ $rc -eq 0 ] || { fail "$desc: exit $rc: $(cat "$TMP/err")"; return; }
  check; ! grep -q 'rlx vulkan validation' "$TMP/err" || fail "$desc: validation messages: $(grep -m3 validation "$TMP/err")"
  same "$desc"
}

TOK=(); for p in "${P[@]}"; do TOK+=(--tokens "$p"); done
printf '%s\n' "${P[@]}" >"$TMP/prompts.txt"
# the same prompts with CRLF endings, spaces around ids and no final newline
printf '42\r\n 1, 403 ,407\r\n5,6,7,8,9,10,11,12,13\r\n%s' "${P[3]}" >"$TMP/crlf.txt"

if [ "$backend" = vulkan ]; then
  alone_all --ignore-eos
  batched "greedy, --deterministic --parallel 2 --chunk 3" "${TOK[@]}" --ignore-eos --deterministic --parallel 2 --chunk 3
  batched "greedy, --deterministic --tokens-file" --tokens-file "$TMP/prompts.txt" --ignore-eos --deterministic --chunk 5
  summary
  exit
fi

# ---- greedy ----
alone_all --ignore-eos
batched "greedy, --parallel 2 --chunk 3" "${TOK[@]}" --ignore-eos --parallel 2 --chunk 3
batched "greedy, all at once" "${TOK[@]}" --ignore-eos
batched "greedy, --parallel 1" "${TOK[@]}" --ignore-eos --parallel 1
batched "greedy, --deterministic --chunk 5" "${TOK[@]}" --ignore-eos --deterministic --chunk 5
batched "greedy, --tokens-file" --tokens-file "$TMP/prompts.txt" --ignore-eos --parallel 2 --chunk 3
batched "greedy, --tokens-file CRLF" --tokens-file "$TMP/crlf.txt" --ignore-eos --parallel 2 --chunk 3
batched "greedy, --tokens-file -" --tokens-file - --ignore-eos --chunk 3 <"$TMP/prompts.txt"
# a pool of 6 pages of 16 tokens (stories260K: 20480 bytes a page) for prompts that need 2 + 1 + 2
# + 2 pages: a sequence waits or is preempted, and the ids stay the same
batched "greedy, a tight pool (-c 64 --kv-memory 120K)" "${TOK[@]}" --ignore-eos -c 64 --kv-memory 120K
# the generator paths run several prompts one after another, not batched: the same ids
batched "greedy, --no-cache (one after another)" "${TOK[@]}" --ignore-eos --no-cache
# --tokens and --tokens-file mix in the order given
head -n 2 "$TMP/prompts.txt" >"$TMP/first2.txt"
batched "greedy, --tokens-file then --tokens" --tokens-file "$TMP/first2.txt" --tokens "${P[2]}" --tokens "${P[3]}" \
  --ignore-eos --parallel 3

# ---- sampling: each prompt its own sampler with the same seed ----
alone_all --temp 0.9 --top-k 40 --seed 7 --ignore-eos
batched "sampled, --parallel 3 --chunk 4" "${TOK[@]}" --temp 0.9 --top-k 40 --seed 7 --ignore-eos --parallel 3 --chunk 4

# ---- speed report ----
"$RLX" "${G[@]}" -n $N "${TOK[@]}" --ignore-eos >/dev/null 2>"$TMP/err"
check; grep -q "^rlx generate: llama on cpu, 4 prompts" "$TMP/err" || fail "speed header: $(cat "$TMP/err")"
check; grep -qE "^  33 prompt tokens, 48 generated tokens in [0-9.]+ ms" "$TMP/err" || fail "token counts: $(cat "$TMP/err")"
check; grep -qE "^  aggregate: [0-9.]+ generated tokens/s" "$TMP/err" || fail "aggregate: $(cat "$TMP/err")"

# ---- one prompt fails alone: longer than the context (-c 16 with -n 12: 9 + 12 > 16) ----
# (greedy ids do not depend on the context's size: prompts 0 and 1 alone, at the default context)
alone_all --ignore-eos
"$RLX" "${G[@]}" -n $N -c 16 --tokens "${P[0]}" --tokens "${P[2]}" --tokens "${P[1]}" --ignore-eos --parallel 2 \
  >"$TMP/out" 2>"$TMP/err"
rc=$?
check; [ $rc -eq 1 ] || fail "a failed prompt: exit $rc, want 1"
check; grep -q "^rlx generate: prompt 2 (--tokens 2): .*context" "$TMP/err" || fail "no error naming prompt 2: $(cat "$TMP/err")"
check; [ "$(sed -n 1p "$TMP/out")" = "$(cat "$TMP/alone.0")" ] && [ -z "$(sed -n 2p "$TMP/out")" ] \
  && [ "$(sed -n 3p "$TMP/out")" = "$(cat "$TMP/alone.1")" ] || fail "a failed prompt: lines $(cat "$TMP/out")"
echo "a failed prompt: exit 1, $(grep 'prompt 2' "$TMP/err")"

# ---- bad input: EXIT NEEDLE ARGS... ----
expect() {
  local want=$1 needle=$2; shift 2
  check
  "$RLX" "${G[@]}" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ $rc -ne "$want" ]; then fail "$*: exit $rc, want $want ($(cat "$TMP/err"))"; return; fi
  grep -qF -- "$needle" "$TMP/err" || fail "$*: stderr lacks '$needle': $(cat "$TMP/err")"
  [ -s "$TMP/out" ] && fail "$*: wrote to stdout: $(cat "$TMP/out")"
  echo "exit $rc: $(head -n 1 "$TMP/err")"
}
: >"$TMP/empty.txt"
printf '1,2\n3,x\n4\n' >"$TMP/bad.txt"
printf '1,2\n\n4\n' >"$TMP/blank.txt"
printf '1,2\n  \t\n' >"$TMP/spaces.txt"
printf '1,2\n-3\n' >"$TMP/negative.txt"
printf '1,2\n3,4,99999\n' >"$TMP/vocab.txt"
expect 2 "'$TMP/empty.txt' holds no prompts" -n 4 --tokens-file "$TMP/empty.txt"
expect 2 "'$TMP/bad.txt' line 2: '3,x': item 2 'x' is not a token id" -n 4 --tokens-file "$TMP/bad.txt"
expect 2 "'$TMP/blank.txt' line 2 is blank" -n 4 --tokens-file "$TMP/blank.txt"
expect 2 "'$TMP/spaces.txt' line 2 is blank" -n 4 --tokens-file "$TMP/spaces.txt"
expect 2 "'$TMP/negative.txt' line 2: '-3'" -n 4 --tokens-file "$TMP/negative.txt"
expect 2 "prompt 2 ('$TMP/vocab.txt' line 2): item 3, id 99999, is outside the vocabulary" -n 4 --tokens-file "$TMP/vocab.txt"
expect 1 "--tokens-file: '$TMP': read error: Is a directory" -n 4 --tokens-file "$TMP"
expect 1 "--tokens-file: cannot open '$TMP/missing.txt'" -n 4 --tokens-file "$TMP/missing.txt"
expect 2 "option --tokens-file needs a value" -n 4 --tokens-file
expect 2 "--parallel: 0 is out of range" -n 4 --tokens 1 --tokens 2 --parallel 0
expect 2 "--parallel: -1 is out of range" -n 4 --tokens 1 --tokens 2 --parallel -1
expect 2 "--parallel: 'two' is not a whole number" -n 4 --tokens 1 --tokens 2 --parallel two
expect 2 "--chunk: 0 is out of range" -n 4 --tokens 1 --tokens 2 --chunk 0
expect 2 "--kv-memory: '12Q' is not a size" -n 4 --tokens 1 --tokens 2 --kv-memory 12Q
expect 2 "--kv-memory: '' is not a size" -n 4 --tokens 1 --tokens 2 --kv-memory ''
expect 2 "--kv-memory: 0 is out of range" -n 4 --tokens 1 --tokens 2 --kv-memory 0
expect 2 "--kv-memory: 99999999999G is out of range" -n 4 --tokens 1 --tokens 2 --kv-memory 99999999999G
# the engine's own message: the pool must hold one full context
expect 2 "KV memory of 16384 bytes holds 0 pages" -n 4 --tokens 1 --tokens 2 --kv-memory 16K
expect 2 "do not go with --no-cache" -n 4 --tokens 1 --tokens 2 --parallel 2 --no-cache
expect 2 "missing --tokens IDS (comma-separated token ids) or --tokens-file FILE" -n 4
check; "$RLX" generate --help | grep -q -- '--tokens-file FILE' || fail "--help lacks --tokens-file"
check; "$RLX" generate --help | grep -q -- '--kv-memory SIZE' || fail "--help lacks --kv-memory"
summary
