#!/bin/bash
# rlx quantize, the command: every TYPE on the fixture qwen3-F32.gguf gives a file rlx inspect
# reads with general.file_type = llama.cpp's LLAMA_FTYPE number (llama.h) and a runnable model;
# F16 and BF16 inputs work too; bad TYPE, already-quantized input and an unwritable OUT fail with
# a clear message and leave no file behind.
source "$(dirname "$0")/../support/lib.sh"
require_fixture models/qwen3/qwen3-F32.gguf
require_fixture models/qwen3/qwen3-Q4_0.gguf
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
src="$FIXTURES/models/qwen3/qwen3-F32.gguf"

# TYPE and its LLAMA_FTYPE (llama.h: MOSTLY_Q4_0 = 2, Q4_1 = 3, Q8_0 = 7, Q5_0 = 8, Q5_1 = 9,
# Q4_K_S = 14, Q4_K_M = 15, Q5_K_S = 16, Q5_K_M = 17, Q6_K = 18, F16 = 1, BF16 = 32, ALL_F32 = 0)
for pair in Q8_0:7 Q4_0:2 Q4_1:3 Q5_0:8 Q5_1:9 Q4_K:14 Q5_K:16 Q6_K:18 Q4_K_S:14 Q4_K_M:15 Q5_K_S:16 Q5_K_M:17 \
            F16:1 BF16:32 F32:0; do
  type=${pair%%:*} ftype=${pair##*:}
  check
  if ! "$RLX" quantize "$src" "$tmp/$type.gguf" "$type" >"$tmp/out" 2>&1; then fail "quantize $type: $(cat "$tmp/out")"; continue; fi
  got=$("$RLX" inspect --json "$tmp/$type.gguf" | jq -c '[.metadata."general.file_type", .metadata."general.quantization_version", .family]')
  [ "$got" = "[$ftype,2,\"qwen3\"]" ] || fail "quantize $type: [file_type, quantization_version, family] = $got"
  check
  "$RLX" generate -m "$tmp/$type.gguf" --backend cpu --tokens 1,2,3 -n 2 --ignore-eos >/dev/null 2>"$tmp/err" \
    || fail "generate on $type: $(cat "$tmp/err")"
done
echo "15 types quantized, inspected and run"
check
types=$("$RLX" inspect --json "$tmp/Q4_K.gguf" | jq -r '[.tensors[].type] | unique | join(",")')
[ "$types" = "F32,Q4_K" ] || fail "pure Q4_K should hold only F32 (1-D) and Q4_K tensors, has $types"

# F16 and BF16 inputs
for in in F16 BF16; do
  check
  [ -e "$FIXTURES/models/qwen3/qwen3-$in.gguf" ] || continue
  "$RLX" quantize --threads 2 "$FIXTURES/models/qwen3/qwen3-$in.gguf" "$tmp/from-$in.gguf" Q4_K_M >/dev/null 2>"$tmp/err" \
    || fail "quantize from $in: $(cat "$tmp/err")"
done

# Errors
expect() { # CODE NEEDLE ARGS...
  local code=$1 needle=$2; shift 2
  check
  "$RLX" quantize "$@" >/dev/null 2>"$tmp/err"; local rc=$?
  [ $rc -eq "$code" ] || { fail "quantize $*: exit $rc, want $code"; return; }
  grep -q -- "$needle" "$tmp/err" || fail "quantize $*: error lacks '$needle': $(cat "$tmp/err")"
}
expect 2 "valid: Q8_0, Q4_0" "$src" "$tmp/x.gguf" Q3_K_M
expect 2 "missing TYPE" "$src" "$tmp/x.gguf"
expect 2 "unknown option" "$src" "$tmp/x.gguf" Q4_0 --bogus
expect 1 "already quantized (Q6_K)" "$FIXTURES/models/qwen3/qwen3-Q4_0.gguf" "$tmp/x.gguf" Q8_0
expect 1 "missing.gguf.*no such file" "$tmp/missing.gguf" "$tmp/x.gguf" Q8_0
expect 1 "cannot create '/nonexistent-dir/x.gguf.tmp'" "$src" /nonexistent-dir/x.gguf Q8_0
check
[ ! -e "$tmp/x.gguf" ] && [ ! -e "$tmp/x.gguf.tmp" ] || fail "a failed quantize left a file behind"
check
"$RLX" quantize --help | grep -q 'Q4_K_M' || fail "--help does not list the types"
summary
