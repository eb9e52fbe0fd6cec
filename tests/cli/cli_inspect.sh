#!/bin/bash
# rlx inspect on every fixture model, vocabulary and HF directory, checked against facts stated
# independently of our code (fixtures README, the files' own config.json), plus its CLI contract.
source "$(dirname "$0")/../support/lib.sh"
require_fixture models/qwen3/hf/config.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Every GGUF and every HF directory inspects, in text and as valid JSON.
n=0
while IFS= read -r -d '' f; do
  check; n=$((n + 1))
  "$RLX" inspect "$f" >"$tmp/out.txt" 2>"$tmp/err.txt" || { fail "inspect $f: $(cat "$tmp/err.txt")"; continue; }
  "$RLX" inspect --json "$f" | jq -e '.tensors | type == "array"' >/dev/null || fail "inspect --json $f: not valid JSON"
done < <(find "$FIXTURES" \( -name '*.gguf' -o -name config.json \) -print0 | sed -z 's#/config.json$##')
echo "inspected $n fixture models and vocabularies"
[ "$n" -ge 20 ] || fail "expected at least 20 fixture files, found $n"

# stories260K (fixtures README: 5 layers, dim 64, 8 heads / 4 KV heads, vocab 512, all F32).
j=$("$RLX" inspect --json "$RLX_SOURCE_DIR/models/stories260K.gguf")
check
[ "$(jq -c '[.config.n_layer, .config.n_embd, .config.n_head, .config.n_head_kv, .tokenizer.vocab_size]' <<<"$j")" = "[5,64,8,4,512]" ] \
  || fail "stories260K config: $(jq -c .config <<<"$j")"
check
[ "$(jq -r '[.tensors[].type] | unique | join(",")' <<<"$j")" = F32 ] || fail "stories260K: not all tensors F32"
check
[ "$(jq -r '.tokenizer.kind' <<<"$j")" = SentencePiece ] || fail "stories260K tokenizer: $(jq -c .tokenizer <<<"$j")"

# The HF directories against their own config.json.
for fam in qwen3 llama32 gemma3 qwen3moe; do
  d="$FIXTURES/models/$fam/hf"
  j=$("$RLX" inspect --json "$d")
  check
  want=$(jq -c '[.num_hidden_layers, .hidden_size, .num_attention_heads, .num_key_value_heads, .vocab_size]' "$d/config.json")
  got=$(jq -c '[.config.n_layer, .config.n_embd, .config.n_head, .config.n_head_kv, .config.n_vocab]' <<<"$j")
  [ "$want" = "$got" ] || fail "$fam hf config: want $want, got $got"
  check
  # every fixture hf/ ships a template (chat_template.jinja, or gemma3's tokenizer_config.json)
  [ "$(jq -r .chat_template <<<"$j")" = true ] || fail "$fam hf: chat template not found"
  # A GGUF of the same weights maps to the same tensor names (property: GGUF names == mapped HF names).
  g=$(ls "$FIXTURES/models/$fam/$fam"-F16.gguf)
  check
  diff <(jq -r '.rlx_tensors[].name' <<<"$j" | sort) <(jq -r '.tensors[].name' < <("$RLX" inspect --json "$g") | sort) >"$tmp/names.diff" \
    || fail "$fam: tensor names differ between hf/ and $(basename "$g"): $(head -5 "$tmp/names.diff")"
done

# The layer pattern of the hybrid and sliding-window families, against each model's own
# config.json (layer_types; gemma3: sliding_window_pattern 6, every 6th layer global).
for fam in qwen35 qwen35moe; do
  d="$FIXTURES/models/$fam"
  want=$(jq -r '.layer_types | map(if . == "linear_attention" then "L" else "A" end) | join(" ")' "$d/hf/config.json")
  n=$(jq '.layer_types | length' "$d/hf/config.json")
  nl=$(jq '[.layer_types[] | select(. == "linear_attention")] | length' "$d/hf/config.json")
  for src in "$d/$fam-F16.gguf" "$d/hf"; do
    check
    line=$("$RLX" inspect "$src" | grep '^layers ')
    [ "$line" = "$(printf '%-15s %s' layers "$n ($nl linear attention, $((n - nl)) full attention): $want")" ] \
      || fail "$fam $(basename "$src"): layer line '$line', config.json says $want"
  done
done
check
g=$("$RLX" inspect "$FIXTURES/models/gemma3/gemma3-F16.gguf" | grep '^layers ')
[ "$g" = "$(printf '%-15s %s' layers '6 (5 sliding window, 1 full attention): S S S S S A')" ] || fail "gemma3 layer line: '$g'"
check
q=$("$RLX" inspect "$FIXTURES/models/qwen3/qwen3-F16.gguf" | grep '^layers ')
[ "$q" = "$(printf '%-15s %s' layers "$(jq .num_hidden_layers "$FIXTURES/models/qwen3/hf/config.json") (full attention)")" ] \
  || fail "qwen3 layer line: '$q'"

# The CLI contract: --help, missing/extra arguments.
check; "$RLX" inspect --help | grep -q 'usage: rlx inspect' || fail "--help"
check; "$RLX" inspect >/dev/null 2>&1; [ $? -eq 2 ] || fail "no PATH should exit 2"
check; "$RLX" inspect --bogus x >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option should exit 2"

# Bad input: a one-line error, exit 1, never a crash (status >= 128).
expect_error() { # FILE NEEDLE
  check
  "$RLX" inspect "$1" >/dev/null 2>"$tmp/err"; rc=$?
  if [ $rc -ne 1 ]; then fail "inspect $(basename "$1"): exit $rc, want 1"; return; fi
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "inspect $(basename "$1"): error is not one line: $(cat "$tmp/err")"
  grep -q -- "$2" "$tmp/err" || fail "inspect $(basename "$1"): error lacks '$2': $(cat "$tmp/err")"
}
src="$RLX_SOURCE_DIR/models/stories260K.gguf"
expect_error "$tmp/missing.gguf" "No such file"
: >"$tmp/empty.gguf"; expect_error "$tmp/empty.gguf" "empty"
printf 'GGUX\003\000\000\000' >"$tmp/magic.gguf"; expect_error "$tmp/magic.gguf" "magic"
for cut in 4 8 16 24 100 1000 10000 500000 1185000; do
  head -c "$cut" "$src" >"$tmp/cut$cut.gguf"; expect_error "$tmp/cut$cut.gguf" "."
done
mkdir -p "$tmp/hfbad" && echo '{"model_type": "qwen3",' >"$tmp/hfbad/config.json"
expect_error "$tmp/hfbad" "config.json"
mkdir -p "$tmp/hfempty"; expect_error "$tmp/hfempty" "config.json"

summary
