#!/bin/bash
# rlx synth: small variants of each family checked against llama.cpp's own files for the same
# config (fixtures models/qwen3 and models/llama32: 2 layers, hidden 256, FFN 512, head_dim 64,
# vocab 512; models/qwen35 and qwen35moe: 4 hybrid layers; made by convert_hf_to_gguf.py and
# llama-quantize): tensor names in file order,
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
# the architecture's own keys and values, in file order (less those named in $SKIP_KEYS)
arch_keys() {
  "$RLX" inspect --json "$1" | jq -c --arg a "$2" --arg skip "${SKIP_KEYS:-}" \
    '.metadata | to_entries | map(select((.key | startswith($a + ".")) and ((.key | IN($skip | split(" ")[])) | not))) | from_entries'
}

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

# Qwen3.5 (hybrid Gated DeltaNet + gated attention; qwen35moe adds routed + shared experts): the
# fixtures' config cut into the qwen3.5 shapes: 4 layers, hidden 256, 2 key / 4 value linear heads
# of 32, 8 experts of 128 (top 2), shared expert 192 (fixtures models/qwen35*/hf/config.json).
# rope.freq_base is left out: the fixtures use rope_theta 1e4, the real models 1e7.
Q35_TINY=(--like qwen3.5-0.8b --layers 4 --hidden 256 --ffn 512 --heads 4 --kv-heads 2 --head-dim 64 --vocab-size 512
          --ctx 1024 --ssm-k-heads 2 --ssm-v-heads 4 --ssm-dim 32)
Q35MOE_TINY=(--like qwen3.5-35b-a3b --layers 4 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 --vocab-size 512
             --ctx 1024 --ssm-k-heads 2 --ssm-v-heads 4 --ssm-dim 32 --experts 8 --experts-used 2 --expert-ffn 128
             --shexp-ffn 192)
for type in F32 F16 Q8_0 Q4_K_M; do
  [ -e "$FIXTURES/models/qwen35/qwen35-$type.gguf" ] && SKIP_KEYS=qwen35.rope.freq_base compare_with_fixture qwen35 qwen35 "$type" "${Q35_TINY[@]}"
  [ -e "$FIXTURES/models/qwen35moe/qwen35moe-$type.gguf" ] \
    && SKIP_KEYS=qwen35moe.rope.freq_base compare_with_fixture qwen35moe qwen35moe "$type" "${Q35MOE_TINY[@]}"
done

# The full Qwen3.5 shapes (--dry-run: the tensor table, nothing written), against the published
# configs' arithmetic. A Gated DeltaNet layer has 2 norms + 9 tensors, a gated attention layer
# 2 norms + 6, every layer 3 FFN tensors (dense) or 8 (experts, shared expert, routers); every 4th
# layer is attention. 0.8B (24 layers, tied): 18*14 + 6*11 + token_embd + output_norm = 320;
# 9B (32, untied): 24*14 + 8*11 + 3 = 427; 35B-A3B (40, untied, MoE): 30*19 + 10*16 + 3 = 733.
dry() { "$RLX" synth --like "$1" --type "$2" --dry-run 2>"$tmp/err" || fail "dry-run $1 $2: $(cat "$tmp/err")"; }
row() { awk -v n="$2" '$1 == n { $NF = ""; print; exit }' <<<"$1" | sed 's/ *$//;s/  */ /g'; }
check
t=$(dry qwen3.5-0.8b F16)
[ "$(tail -1 <<<"$t" | cut -d' ' -f1)" = 320 ] || fail "qwen3.5-0.8b: $(tail -1 <<<"$t")"
check
[ -z "$(grep '^output.weight' <<<"$t")" ] || fail "qwen3.5-0.8b is tied: no output.weight"
# linear attention: q, k (16 heads of 128 each) and v (16 heads of 128) through the conv: 6144
check; [ "$(row "$t" blk.0.attn_qkv.weight)" = "blk.0.attn_qkv.weight F16 [1024, 6144]" ] || fail "0.8b qkv: $(row "$t" blk.0.attn_qkv.weight)"
check; [ "$(row "$t" blk.0.ssm_conv1d.weight)" = "blk.0.ssm_conv1d.weight F32 [4, 6144]" ] || fail "0.8b conv: $(row "$t" blk.0.ssm_conv1d.weight)"
check; [ "$(row "$t" blk.0.ssm_a)" = "blk.0.ssm_a F32 [16]" ] || fail "0.8b ssm_a: $(row "$t" blk.0.ssm_a)"
# gated attention on layer 3: 8 heads of 256, query and gate: 4096 rows
check; [ "$(row "$t" blk.3.attn_q.weight)" = "blk.3.attn_q.weight F16 [1024, 4096]" ] || fail "0.8b attn_q: $(row "$t" blk.3.attn_q.weight)"
check; [ -z "$(row "$t" blk.4.attn_q.weight)" ] && [ -n "$(row "$t" blk.7.attn_q.weight)" ] || fail "0.8b: attention on layers 3, 7, ..."
check
t=$(dry qwen3.5-9b Q4_K_M)
[ "$(tail -1 <<<"$t" | cut -d' ' -f1)" = 427 ] || fail "qwen3.5-9b: $(tail -1 <<<"$t")"  # 24*14 + 8*11 + 3
check; [ "$(row "$t" blk.0.attn_qkv.weight)" = "blk.0.attn_qkv.weight Q6_K [4096, 8192]" ] || fail "9b qkv: $(row "$t" blk.0.attn_qkv.weight)"
check; [ "$(row "$t" output.weight)" = "output.weight Q6_K [4096, 248320]" ] || fail "9b output: $(row "$t" output.weight)"
check
t=$(dry qwen3.5-35b-a3b Q4_K_M)
[ "$(tail -1 <<<"$t" | cut -d' ' -f1)" = 733 ] || fail "qwen3.5-35b-a3b: $(tail -1 <<<"$t")"
check; [ "$(row "$t" blk.0.ffn_down_exps.weight)" = "blk.0.ffn_down_exps.weight Q6_K [512, 2048, 256]" ] \
  || fail "35b down_exps: $(row "$t" blk.0.ffn_down_exps.weight)"
check; [ "$(row "$t" blk.5.ffn_gate_exps.weight)" = "blk.5.ffn_gate_exps.weight Q4_K [2048, 512, 256]" ] \
  || fail "35b gate_exps: $(row "$t" blk.5.ffn_gate_exps.weight)"
check; [ "$(row "$t" blk.0.ffn_gate_inp_shexp.weight)" = "blk.0.ffn_gate_inp_shexp.weight F32 [2048]" ] \
  || fail "35b shexp gate: $(row "$t" blk.0.ffn_gate_inp_shexp.weight)"
echo "qwen3.5 full shapes (dry run): 320 / 427 / 733 tensors, shapes from the published configs"

# A Qwen3.5 file loads, inspects with its layer pattern and runs on the CPU (a 2-expert MoE too).
check
"$RLX" inspect "$tmp/qwen35-F16.gguf" | grep -q '^layers *4 (3 linear attention, 1 full attention): L L L A$' \
  || fail "inspect qwen35: $("$RLX" inspect "$tmp/qwen35-F16.gguf" | grep '^layers')"
for f in qwen35-Q4_K_M qwen35moe-Q4_K_M; do
  check
  ids=$("$RLX" generate -m "$tmp/$f.gguf" --backend cpu --tokens 1,2,3 -n 4 --ignore-eos 2>"$tmp/err") || fail "generate $f: $(cat "$tmp/err")"
  [ "$(wc -w <<<"$ids")" -eq 4 ] || fail "generate $f: expected 4 ids, got '$ids'"
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
expect 2 "MoE shapes only" "${Q35_TINY[@]}" --experts 4 -o "$tmp/x.gguf"
expect 2 "Qwen3.5 shapes only" "${QWEN3_TINY[@]}" --ssm-dim 64 -o "$tmp/x.gguf"
expect 2 "below the 2 experts" "${Q35MOE_TINY[@]}" --experts 1 -o "$tmp/x.gguf"
expect 2 "not a multiple of --ssm-k-heads" "${Q35_TINY[@]}" --ssm-v-heads 3 -o "$tmp/x.gguf"
expect 2 "not an even number" "${Q35_TINY[@]}" --head-dim 36 -o "$tmp/x.gguf"
expect 1 "/nonexistent/vocab.gguf" "${QWEN3_TINY[@]}" --vocab /nonexistent/vocab.gguf -o "$tmp/x.gguf"
expect 1 "cannot create '/nonexistent-dir/x.gguf.tmp'" "${QWEN3_TINY[@]}" -o /nonexistent-dir/x.gguf
check
[ ! -e "$tmp/x.gguf" ] && [ ! -e "$tmp/x.gguf.tmp" ] || fail "a failed synth left a file behind"
# A full disk: refused up front when the filesystem is too small for the tensor data (a hidden
# size of 2e9 makes petabytes), and ENOSPC named when a write runs out anyway (/dev/full).
expect 1 "but its filesystem has" "${Q35_TINY[@]}" --hidden 2000000000 -o "$tmp/x.gguf"
mkdir "$tmp/full" && ln -s /dev/full "$tmp/full/x.gguf.tmp"
expect 1 "No space left on device" "${Q35_TINY[@]}" -o "$tmp/full/x.gguf"
check
[ ! -e "$tmp/full/x.gguf" ] && [ ! -e "$tmp/x.gguf" ] || fail "a synth that ran out of space left a file behind"
check
"$RLX" synth --help | grep -q 'usage: rlx synth' || fail "--help"
summary
