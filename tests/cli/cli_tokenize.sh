#!/bin/bash
# `rlx tokenize` / `rlx detokenize` on the embedded stories260K, against
# tests/data/stories260K-ref-hf.json (transformers reading the same GGUF):
#  - "Once upon a time" with BOS prints [1, 403, 407, 261, 378] (prompt 0's ids), without BOS the
#    same ids minus the 1;
#  - detokenizing prompt + greedy ids prints greedy_text byte for byte;
#  - --special turns "<s>" into id 1, and only then; -f reads a file; invalid UTF-8 is replaced
#    with a warning; an empty prompt gives only the BOS;
#  - bad arguments exit 2, library errors exit 1, each with "rlx <command>: " on stderr.
# With the fixtures present, an HF directory and its GGUF print the same ids for chat text.
source "$(dirname "$0")/../support/lib.sh"
MODEL=$RLX_SOURCE_DIR/models/stories260K.gguf
REF=$RLX_SOURCE_DIR/tests/data/stories260K-ref-hf.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# same WHAT GOT WANT
same() {
  check
  if [ "$2" == "$3" ]; then echo "ok: $1: $2"; else fail "$1: got '$2', expected '$3'"; fi
}

# expect CODE NEEDLE -- ARGS...: rlx ARGS exits CODE and stderr has "rlx <cmd>: " and NEEDLE.
expect() {
  local code=$1 needle=$2
  shift 3
  check
  "$RLX" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$? msg
  msg=$(head -c 300 "$TMP/err" | tr '\n' ' ')
  if [ $rc -ne "$code" ]; then fail "rlx $*: exit $rc, expected $code ($msg)"
  elif ! grep -q "^rlx $1: " "$TMP/err"; then fail "rlx $*: stderr does not start with 'rlx $1:': $msg"
  elif ! grep -qF -- "$needle" "$TMP/err"; then fail "rlx $*: stderr lacks '$needle': $msg"
  else echo "ok: exit $rc: rlx $* -> $(head -n 1 "$TMP/err")"
  fi
}

ids0=$(jq -c '.prompts[0].ids' "$REF" | sed 's/,/, /g')
same "tokenize 'Once upon a time'" "$("$RLX" tokenize -m "$MODEL" -p "Once upon a time" --ids)" "$ids0"
same "tokenize --no-bos" "$("$RLX" tokenize -m "$MODEL" -p "Once upon a time" --ids --no-bos)" "[${ids0#[1, }"

for p in 0 1; do
  all=$(jq -r "[.prompts[$p].ids[], .prompts[$p].greedy[]] | map(tostring) | join(\",\")" "$REF")
  jq -j ".prompts[$p].greedy_text" "$REF" >"$TMP/want"
  check
  if ! "$RLX" detokenize -m "$MODEL" "$all" >"$TMP/got" 2>"$TMP/err"; then
    fail "detokenize prompt $p: $(cat "$TMP/err")"
  elif ! cmp -s "$TMP/got" "$TMP/want"; then
    fail "detokenize prompt $p: '$(cat "$TMP/got")' differs from greedy_text '$(cat "$TMP/want")'"
  else
    echo "ok: detokenize prompt $p + 64 greedy ids: $(wc -c <"$TMP/got") bytes equal to greedy_text"
  fi
done

same "--special parses <s>" "$("$RLX" tokenize -m "$MODEL" -p "<s>Once" --special --no-bos --ids)" "[1, 403]"
plain=$("$RLX" tokenize -m "$MODEL" -p "<s>Once" --no-bos --ids)
check
case "$plain" in
  "[1,"* | "[1]") fail "without --special, '<s>' must not become id 1: $plain" ;;
  *) echo "ok: without --special '<s>' is text: $plain" ;;
esac
same "empty prompt" "$("$RLX" tokenize -m "$MODEL" -p "" --ids)" "[1]"
same "empty prompt --no-bos" "$("$RLX" tokenize -m "$MODEL" -p "" --ids --no-bos)" "[]"

printf 'Once upon a time' >"$TMP/prompt.txt"
same "-f FILE" "$("$RLX" tokenize -m "$MODEL" -f "$TMP/prompt.txt" --ids)" "$ids0"
same "-f - (stdin)" "$("$RLX" tokenize -m "$MODEL" -f - --ids <"$TMP/prompt.txt")" "$ids0"

# Invalid UTF-8: each bad byte becomes U+FFFD (EF BF BD), which this vocabulary spells with byte
# tokens <0xEF> <0xBF> <0xBD> = ids 242 194 192 (id = 3 + byte).
printf 'a\xffb' >"$TMP/bad.txt"
check
got=$("$RLX" tokenize -m "$MODEL" -f "$TMP/bad.txt" --ids --no-bos 2>"$TMP/err")
if [ "$got" != "[261, 242, 194, 192, 430]" ] || ! grep -q "1 byte(s) of invalid UTF-8 replaced by U+FFFD" "$TMP/err"; then
  fail "invalid UTF-8: got '$got', stderr '$(cat "$TMP/err")'"
else
  echo "ok: invalid UTF-8 replaced by U+FFFD with a warning: $got"
fi
check
lines=$("$RLX" tokenize -m "$MODEL" -p "Once upon" | tr '\n' '|')
if [ "$lines" != "     1 -> '<s>'|   403 -> ' Once'|   407 -> ' upon'|" ]; then
  fail "id/piece lines: '$lines'"
else
  echo "ok: id/piece lines: $lines"
fi

expect 2 "missing -m" -- tokenize -p "x"
expect 2 "exactly one of -p TEXT or -f FILE" -- tokenize -m "$MODEL"
expect 2 "exactly one of -p TEXT or -f FILE" -- tokenize -m "$MODEL" -p x -f "$TMP/prompt.txt"
expect 2 "unknown option" -- tokenize -m "$MODEL" -p x --bogus
expect 2 "missing the token ids" -- detokenize -m "$MODEL"
expect 2 "IDS" -- detokenize -m "$MODEL" 1,x
# an id outside the vocabulary (512 ids) is a bad argument: exit 2, as --tokens elsewhere
expect 2 "IDS: item 2, id 512, is outside the vocabulary [0, 512)" -- detokenize -m "$MODEL" 1,512
expect 1 "cannot open" -- tokenize -m "$MODEL" -f "$TMP/missing.txt"
expect 1 "$TMP/none.gguf" -- tokenize -m "$TMP/none.gguf" -p x
printf 'not a model' >"$TMP/junk.bin"
expect 1 "not a GGUF file" -- tokenize -m "$TMP/junk.bin" -p x

if [ -d "$FIXTURES/models/qwen3/hf" ]; then
  chat=$'<|im_start|>user\nHello there!<|im_end|>\n<|im_start|>assistant\n'
  a=$("$RLX" tokenize -m "$FIXTURES/models/qwen3/hf" -p "$chat" --special --ids)
  b=$("$RLX" tokenize -m "$FIXTURES/models/qwen3/qwen3-F16.gguf" -p "$chat" --special --ids)
  same "qwen3 hf/ and GGUF on chat text" "$a" "$b"
  case "$a" in "[1, "*) check; echo "ok: <|im_start|> is id 1" ;; *) check; fail "qwen3 chat: $a" ;; esac
  back=$("$RLX" detokenize -m "$FIXTURES/models/qwen3/hf" --special "$(echo "$a" | tr -d '[] ')")
  same "qwen3 detokenize --special" "$back" "${chat%$'\n'}" # $(...) drops the final newline
else
  echo "fixtures absent: the HF-directory checks are skipped"
fi
summary
