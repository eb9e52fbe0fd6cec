#!/bin/bash
# rlx synth: small variants of each family checked against llama.cpp's own files for the same
# config (fixtures models/qwen3 and models/llama32: 2 layers, hidden 256, FFN 512, head_dim 64,
# vocab 512, made by convert_hf_to_gguf.py and llama-quantize): tensor names in file order,
# shapes, types and the model's metadata keys must be identical. Then: rlx inspect and the runner
# accept the files, an untied (qwen3-8b-shaped) variant gets output.weight in Q6_K, weights depend
# only on the seed, and bad arguments fail cleanly.
source "$(dirname "$0")/../support/lib.sh"
require_fixture models/qwen3/qwen3-F16.gguf
require_fixture tokenizers/ggml-vocab-qwen2.gguf
require_fixture tokenizers/ggml-vocab-llama-bpe.gguf
export RLX_FIXTURES="$FIXTURES"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

QWEN3_TINY=(--like qwen3-0.6b --layers 2 --hidden 256 --ffn 512 --heads 4 --kv-heads 2 --head-dim 64 --vocab-size 512 --ctx 1024)
LLAMA_TINY=(--like llama3.2-1b --layers 2 --hidden 256 --ffn 512 --heads 4 --kv-heads 1 --head-dim 64 --vocab-size 512)

# tensors as "name type shape" lines, in file order
tensors() { "$RLX" inspect --json "$1" | jq -r '.tensors[] | "\(.name) \(.type) \(.shape | join("x"))"'; }
# the architecture's own keys and values, in file order
arch_keys() { "$RLX" inspect --json "$1" | jq -c --arg a "$2" '.metadata | to_entries | map(select(.key | startswith($a + "."))) | from_entries'; }

compare_with_fixture() { # FAMILY ARCH TYPE ARGS...
  local fam=$1 arch=$2 type=$3; shift 3
  local out="$tmp/$fam-$type.gguf" ref="$FIXTURES/models/$fam/$fam-$type.gguf"
  check
  if ! "$RLX" synth "$@" --type "$type" -o "$out" >"$tmp/log" 2>&1; then fail "synth $fam $type: $(cat "$tmp/log")"; return; fi
  check
  diff <(tensors "$ref") <(tensors "$out") >"$tmp/diff" || fail "$fam $type: tensors differ from llama.cpp's: $(head -5 "$tmp/diff")"
  check
  [ "$(arch_keys "$ref" "$arch")" = "$(arch_keys "$out" "$arch")" ] || fail "$fam $type: $arch.* metadata differs: $(arch_keys "$out" "$arch")"
  check
  [ "$("$RLX" inspect --json "$out" | jq .metadata.\"general.file_type\")" = "$("$RLX" inspect --json "$ref" | jq .metadata.\"general.file_type\")" ] \
    || fail "$fam $type: general.file_type differs"
  echo "$fam $type: $(tensors "$out" | wc -l) tensors (names, order, types, shapes) and $arch.* keys match llama.cpp's file"
}

for type in F16 BF16 F32 Q8_0 Q4_0 Q6_K Q4_K_M Q5_K_M; do
  [ -e "$FIXTURES/models/qwen3/qwen3-$type.gguf" ] && compare_with_fixture qwen3 qwen3 "$type" "${QWEN3_TINY[@]}"
done
for type in F16 F32 Q8_0 Q4_K_M; do
  [ -e "$FIXTURES/models/llama32/llama32-$type.gguf" ] && compare_with_fixture llama32 llama "$type" "${LLAMA_TINY[@]}"
done

# rlx inspect derives the config, and the runner generates from F16 and quantized files.
for type in F16 Q4_K_M; do
  f="$tmp/qwen3-$type.gguf"
  check
  [ "$("$RLX" inspect --json "$f" | jq -c '[.family, .config.n_layer, .config.n_embd, .config.n_vocab]')" = '["qwen3",2,256,512]' ] \
    || fail "inspect $type: $("$RLX" inspect --json "$f" | jq -c '[.family, .config]')"
  check
  ids=$("$RLX" generate -m "$f" --backend cpu --tokens 1,2,3 -n 4 --ignore-eos 2>"$tmp/err") || fail "generate $type: $(cat "$tmp/err")"
  [ "$(wc -w <<<"$ids")" -eq 4 ] || fail "generate $type: expected 4 ids, got '$ids'"
done
check
"$RLX" generate -m "$tmp/llama32-Q4_K_M.gguf" --backend cpu --tokens 1,2 -n 4 --ignore-eos >/dev/null 2>"$tmp/err" \
  || fail "generate llama Q4_K_M: $(cat "$tmp/err")"
echo "inspect + generate -n 4: accepted"

# An untied model (qwen3-8b's shape, cut down): output.weight exists and is Q6_K, token_embd Q4_K.
check
"$RLX" synth --like qwen3-8b --layers 3 --hidden 256 --ffn 512 --heads 4 --kv-heads 2 --head-dim 64 --vocab-size 512 \
  --type Q4_K_M -o "$tmp/untied.gguf" >/dev/null 2>"$tmp/err" || fail "synth untied: $(cat "$tmp/err")"
got=$(tensors "$tmp/untied.gguf" | grep -E '^(output|token_embd)\.weight' | sort | tr '\n' ';')
[ "$got" = "output.weight Q6_K 256x512;token_embd.weight Q4_K 256x512;" ] || fail "untied Q4_K_M: $got"

# Weights depend on the seed only: thread count changes nothing, another seed changes data.
check
"$RLX" synth "${QWEN3_TINY[@]}" --type Q4_K_M --seed 7 -t 1 -o "$tmp/s1.gguf" >/dev/null &&
  "$RLX" synth "${QWEN3_TINY[@]}" --type Q4_K_M --seed 7 -t 3 -o "$tmp/s2.gguf" >/dev/null &&
  "$RLX" synth "${QWEN3_TINY[@]}" --type Q4_K_M --seed 8 -o "$tmp/s3.gguf" >/dev/null || fail "seeded synth failed"
cmp -s "$tmp/s1.gguf" "$tmp/s2.gguf" || fail "same seed, 1 vs 3 threads: files differ"
check
cmp -s "$tmp/s1.gguf" "$tmp/s3.gguf" && fail "seeds 7 and 8 gave identical files"

# The vocabulary is padded with [PAD<n>] tokens (gguf-py TokenType.UNUSED = 5) past the file's end.
check
"$RLX" synth "${QWEN3_TINY[@]}" --vocab "$tmp/qwen3-F16.gguf" --vocab-size 520 -o "$tmp/pad.gguf" >/dev/null 2>"$tmp/err" \
  || fail "padded vocabulary: $(cat "$tmp/err")"
[ "$("$RLX" inspect --json "$tmp/pad.gguf" | jq '[.metadata."tokenizer.ggml.tokens".length, .tokenizer.vocab_size]' -c)" = "[520,520]" ] \
  || fail "padded vocabulary: $("$RLX" inspect --json "$tmp/pad.gguf" | jq -c .tokenizer)"
check # the raw bytes hold the 8 pad texts (a detokenizer prints nothing for UNUSED tokens)
[ "$(grep -a -o '\[PAD51[2-9]\]' "$tmp/pad.gguf" | sort -u | wc -l)" -eq 8 ] || fail "[PAD512]..[PAD519] not in the file"

# Bad arguments: exit 2 with the valid choices named; failures to read or write: exit 1, no file.
expect() { # CODE NEEDLE ARGS...
  local code=$1 needle=$2; shift 2
  check
  "$RLX" synth "$@" >/dev/null 2>"$tmp/err"; local rc=$?
  [ $rc -eq "$code" ] || { fail "synth $*: exit $rc, want $code"; return; }
  grep -q -- "$needle" "$tmp/err" || fail "synth $*: error lacks '$needle': $(cat "$tmp/err")"
}
expect 2 "missing --like" -o "$tmp/x.gguf"
expect 2 "known: qwen3-0.6b" --like gpt5 -o "$tmp/x.gguf"
expect 2 "missing -o" --like qwen3-0.6b
expect 2 "unknown --type 'Q3'" --like qwen3-0.6b --type Q3 -o "$tmp/x.gguf"
expect 2 "not a multiple of --kv-heads" "${QWEN3_TINY[@]}" --kv-heads 3 -o "$tmp/x.gguf"
expect 2 "out of range" "${QWEN3_TINY[@]}" --layers 0 -o "$tmp/x.gguf"
expect 1 "/nonexistent/vocab.gguf" "${QWEN3_TINY[@]}" --vocab /nonexistent/vocab.gguf -o "$tmp/x.gguf"
expect 1 "cannot create '/nonexistent-dir/x.gguf.tmp'" "${QWEN3_TINY[@]}" -o /nonexistent-dir/x.gguf
check
[ ! -e "$tmp/x.gguf" ] && [ ! -e "$tmp/x.gguf.tmp" ] || fail "a failed synth left a file behind"
check
"$RLX" synth --help | grep -q 'usage: rlx synth' || fail "--help"
summary
