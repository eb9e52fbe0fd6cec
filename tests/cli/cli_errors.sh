#!/bin/bash
# `rlx generate` / `rlx logits` on bad input: a clear message on stderr ("rlx <command>: ..."),
# exit 2 for bad or missing arguments (ids outside the vocabulary too), exit 1 for errors from the library (a missing
# or malformed model, a prompt longer than the context), and never a crash (a signal: exit >= 128).
# Runs on the embedded stories260K (vocab 512); the malformed GGUFs are patched copies of it.
source "$(dirname "$0")/../support/lib.sh"
MODEL=$RLX_SOURCE_DIR/models/stories260K.gguf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# expect CODE NEEDLE -- ARGS...: rlx ARGS exits CODE and its stderr contains NEEDLE.
expect() {
  local code=$1 needle=$2
  shift 3
  check
  "$RLX" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  local msg
  msg=$(head -c 400 "$TMP/err" | tr '\n' ' ')
  if [ $rc -ge 128 ]; then
    fail "rlx $*: killed by a signal (exit $rc): $msg"
  elif [ $rc -ne "$code" ]; then
    fail "rlx $*: exit $rc, expected $code ($msg)"
  elif ! grep -q "^rlx $1: " "$TMP/err"; then
    fail "rlx $*: stderr does not start with 'rlx $1:': $msg"
  elif ! grep -qiF -- "$needle" "$TMP/err"; then
    fail "rlx $*: stderr lacks '$needle': $msg"
  else
    echo "exit $rc as expected: rlx $* -> $(head -n 1 "$TMP/err")"
  fi
}

# the CPU reference backend unless RLX_TEST_BACKEND names another
G=(generate -m "$MODEL" --backend "${RLX_TEST_BACKEND:-cpu}")
# bad or missing arguments: exit 2
expect 2 "missing -m" -- generate --tokens 1,2 -n 4
expect 2 "missing --tokens" -- generate -m "$MODEL" -n 4
expect 2 "missing -n" -- "${G[@]}" --tokens 1,2
expect 2 "out of range" -- "${G[@]}" --tokens 1,2 -n 0
expect 2 "empty" -- "${G[@]}" --tokens "" -n 4
expect 2 "'-3'" -- "${G[@]}" --tokens 1,-3 -n 4
expect 2 "'abc'" -- "${G[@]}" --tokens 1,abc -n 4
expect 2 "item 2 is empty" -- "${G[@]}" --tokens 1,,2 -n 4
expect 2 "out of range" -- "${G[@]}" --tokens 99999999999 -n 4
expect 2 "needs a value" -- "${G[@]}" --tokens 1,2 -n
expect 2 "--temp" -- "${G[@]}" --tokens 1,2 -n 4 --temp abc
expect 2 "--top-p" -- "${G[@]}" --tokens 1,2 -n 4 --top-p 2
expect 2 "--seed" -- "${G[@]}" --tokens 1,2 -n 4 --seed -1
expect 2 "--decode-ahead" -- "${G[@]}" --tokens 1,2 -n 4 --decode-ahead 0
expect 2 "--decode-ahead" -- "${G[@]}" --tokens 1,2 -n 4 --decode-ahead 65
expect 2 "unknown option '--frobnicate'" -- "${G[@]}" --tokens 1,2 -n 4 --frobnicate
expect 2 "missing -o" -- logits -m "$MODEL" --tokens 1,2
expect 2 "unknown option" -- logits -m "$MODEL" --tokens 1,2 -o "$TMP/x.f32" --bogus

# --tokens outside the vocabulary and an unknown --backend are bad arguments, exit 2 by the rule
# above (they were exit 1 while only the library noticed them)
expect 2 "--tokens: item 2, id 512, is outside the vocabulary [0, 512)" -- "${G[@]}" --tokens 1,512 -n 4
expect 2 "--tokens: item 1, id 600, is outside the vocabulary [0, 512)" -- logits -m "$MODEL" --tokens 600,1 -o "$TMP/x.f32"
expect 2 "--backend: 'bogus' is not a backend (expected cpu or vulkan)" -- generate -m "$MODEL" --backend bogus --tokens 1,2 -n 4
# errors from the library: exit 1 with its message
expect 1 "no such file" -- generate -m "$TMP/missing.gguf" --tokens 1 -n 4
expect 1 "context" -- "${G[@]}" --ctx 4 --tokens 1,2,3,4,5 -n 1
expect 1 "context" -- "${G[@]}" --ctx 8 --tokens 1,2,3,4,5,6 -n 8
expect 1 "x.f32" -- logits -m "$MODEL" --tokens 1,2 -o "$TMP/no/such/dir/x.f32"

# A GGUF whose metadata no longer matches its tensors: llama.embedding_length doubled in place.
# GGUF kv: key bytes, then a u32 type (4 = UINT32), then the value, little-endian.
key=llama.embedding_length
off=$(grep -obUaF "$key" "$MODEL" | head -n 1 | cut -d: -f1)
cp "$MODEL" "$TMP/patched.gguf"
voff=$((off + ${#key} + 4))
old=$(od -An -tu4 -j "$voff" -N4 "$MODEL" | tr -d ' ')
new=$((old * 2))
printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((new & 255)) $((new >> 8 & 255)) $((new >> 16 & 255)) $((new >> 24)))" |
  dd of="$TMP/patched.gguf" bs=1 seek="$voff" conv=notrunc status=none
echo "patched $key from $old to $(od -An -tu4 -j "$voff" -N4 "$TMP/patched.gguf" | tr -d ' ') at byte $voff"
expect 1 "" -- generate -m "$TMP/patched.gguf" --tokens 1,2 -n 4
expect 1 "" -- logits -m "$TMP/patched.gguf" --tokens 1,2 -o "$TMP/x.f32"

# The same file cut in half.
head -c $(($(stat -c %s "$MODEL") / 2)) "$MODEL" >"$TMP/truncated.gguf"
expect 1 "" -- generate -m "$TMP/truncated.gguf" --tokens 1,2 -n 4

# --help tells the usage and succeeds.
for cmd in generate logits; do
  check
  if "$RLX" $cmd --help >"$TMP/out" 2>&1 && grep -q "^usage: rlx $cmd" "$TMP/out"; then
    echo "rlx $cmd --help: exit 0 with usage"
  else
    fail "rlx $cmd --help: no usage or non-zero exit"
  fi
done

summary
