#!/bin/bash
# rlx run / generate / chat behaviour a new user meets, on the embedded stories260K (CPU backend):
# --repeat-last-n with llama.cpp's meaning (0: the penalty is off; -1: the whole context), the seed
# line only when sampling, -n past the context, the text's last newline, Ctrl-C, and a chat longer
# than its context.
# The reference for "off" is transformers' float64 greedy continuation in
# tests/data/stories260K-ref-hf.json (as in cli_stories.sh); the others are properties.
source "$(dirname "$0")/../support/lib.sh"
MODEL=$RLX_SOURCE_DIR/models/stories260K.gguf
REF=$RLX_SOURCE_DIR/tests/data/stories260K-ref-hf.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# json_array KEY N: the N-th (1-based) array under "KEY" in the one-line reference, as "a,b,c".
json_array() { grep -o "\"$1\": \[[^]]*\]" "$REF" | sed -n "${2}p" | sed 's/.*\[//; s/\]//; s/ //g'; }

# gen ARGS...: the ids `rlx generate` prints (CPU, one thread)
gen() { "$RLX" generate -m "$MODEL" --backend cpu -t 1 "$@" 2>"$TMP/err"; }

# --repeat-last-n 0 turns a strong penalty off: the greedy ids are the reference's, whichever option
# comes first. The same penalty over the default window (64) changes them, so "off" is observable.
ids=$(json_array ids 1)
want=$(json_array greedy 1 | tr , ' ')
check
[ "$(gen --tokens "$ids" -n 64 --repeat-penalty 5 --repeat-last-n 0)" = "$want" ] \
  || fail "--repeat-penalty 5 --repeat-last-n 0 is not the reference greedy text ($(cat "$TMP/err"))"
check
[ "$(gen --tokens "$ids" -n 64 --repeat-last-n 0 --repeat-penalty 5)" = "$want" ] \
  || fail "--repeat-last-n 0 --repeat-penalty 5 is not the reference greedy text ($(cat "$TMP/err"))"
check
[ "$(gen --tokens "$ids" -n 64 --repeat-penalty 5)" != "$want" ] \
  || fail "--repeat-penalty 5 over the default window left the greedy ids unchanged: the checks above prove nothing"
# sampled (not greedy): penalty off through 0 is the same draw as no penalty at all
check
[ "$(gen --tokens "$ids" -n 64 --temp 0.8 --seed 3 --repeat-penalty 5 --repeat-last-n 0)" = \
  "$(gen --tokens "$ids" -n 64 --temp 0.8 --seed 3)" ] || fail "sampled: --repeat-last-n 0 did not turn the penalty off"

# -1 is the whole context: the same ids as a window of the context's length (the history, 3 + 120
# tokens, fits either), and not the default window's, which the history outgrows.
whole=$(gen --tokens 1,403,407 -n 120 --ignore-eos --repeat-penalty 5 --repeat-last-n -1)
check
[ -n "$whole" ] && [ "$whole" = "$(gen --tokens 1,403,407 -n 120 --ignore-eos --repeat-penalty 5 -c 256 --repeat-last-n 256)" ] \
  || fail "--repeat-last-n -1 differs from a window of the whole context ($(cat "$TMP/err"))"
check
[ "$whole" != "$(gen --tokens 1,403,407 -n 120 --ignore-eos --repeat-penalty 5)" ] \
  || fail "--repeat-last-n -1 gave the default window's ids"
check
"$RLX" run --help | grep -q -- '0 = off, -1 = the' || fail "run --help does not explain --repeat-last-n 0 and -1"

# The seed line: only when sampling (--temp > 0) and no --seed was given; greedy draws nothing.
CHATML=$RLX_SOURCE_DIR/tests/corpus/chat_template/chatml.jinja
check
"$RLX" run -n 2 --temp 0 --backend cpu >/dev/null 2>"$TMP/err" && ! grep -q 'seed' "$TMP/err" \
  || fail "run --temp 0 printed a seed: $(cat "$TMP/err")"
check
"$RLX" run -n 2 --backend cpu >/dev/null 2>"$TMP/err" && grep -q '^rlx run: seed [0-9]*$' "$TMP/err" \
  || fail "run (sampling, no --seed) printed no seed: $(cat "$TMP/err")"
check
"$RLX" run -n 2 --seed 5 --backend cpu >/dev/null 2>"$TMP/err" && ! grep -q 'seed' "$TMP/err" \
  || fail "run --seed 5 printed the seed again: $(cat "$TMP/err")"
check
"$RLX" chat --chat-template "$CHATML" --temp 0 --backend cpu </dev/null >/dev/null 2>"$TMP/err" \
  && ! grep -q 'seed' "$TMP/err" || fail "chat --temp 0 printed a seed: $(cat "$TMP/err")"
check
"$RLX" chat --chat-template "$CHATML" --backend cpu </dev/null >/dev/null 2>"$TMP/err" \
  && grep -q '^rlx chat: seed [0-9]*$' "$TMP/err" || fail "chat (sampling) printed no seed: $(cat "$TMP/err")"
# run and chat --help name the backend and device options
for cmd in run chat; do
  check
  "$RLX" $cmd --help >"$TMP/out" && grep -q -- '--backend NAME .*cpu or vulkan' "$TMP/out" && grep -q -- '--device NAME' "$TMP/out" \
    || fail "rlx $cmd --help does not describe --backend and --device"
done

# -n past the context stops where the context is full (said on stderr) instead of refusing to start.
check
"$RLX" run -n 100000 -c 64 --ignore-eos --temp 0 --backend cpu >/dev/null 2>"$TMP/err" \
  && grep -q -- '-n 100000 is past the context of 64 tokens: at most 59 new tokens' "$TMP/err" \
  && grep -q 'decode:  58 tokens' "$TMP/err" || fail "run -n 100000 -c 64: $(cat "$TMP/err")"

# The end of the text: a pipe gets the prompt and the generated text exactly (here greedy, 4 tokens:
# ", there was a", no newline); on a terminal (script(1) gives a pty) a newline ends the text, so the
# statistics start their own line.
check
"$RLX" run -n 4 --temp 0 --backend cpu >"$TMP/out" 2>/dev/null
[ "$(tail -c 1 "$TMP/out" | od -An -c | tr -d ' ')" != '\n' ] || fail "run into a pipe added a newline: $(od -c "$TMP/out" | tail -2)"
if command -v script >/dev/null; then
  check
  script -qec "$(printf '%q' "$RLX") run -n 4 --temp 0 --backend cpu" /dev/null >"$TMP/tty" 2>&1 </dev/null
  tr -d '\r' <"$TMP/tty" | grep -q '^rlx run: llama on cpu$' || fail "on a terminal the statistics do not start a line: $(od -c "$TMP/tty" | head -5)"
else
  echo "SKIPPED part: no script(1), the terminal case is not exercised" >&2
fi

# Ctrl-C while generating: the text so far, the statistics, exit 130 (llama.cpp's). A process killed
# by the signal would also show 130, so the statistics line is what proves the clean stop. Job
# control on (set -m): without it bash starts a background job with SIGINT ignored, which rlx keeps.
check
set -m
"$RLX" run -n 100000 -c 8192 --ignore-eos --temp 0 --backend cpu -t 1 >"$TMP/out" 2>"$TMP/err" </dev/null &
pid=$!
for _ in $(seq 400); do [ "$(wc -c <"$TMP/out")" -gt 100 ] && break; sleep 0.05; done
kill -INT $pid
wait $pid
rc=$?
set +m
if [ $rc -ne 130 ] || ! grep -q '^rlx run: stopped by Ctrl-C after [0-9]* tokens$' "$TMP/err" \
  || ! grep -q 'decode: .* tokens/s' "$TMP/err"; then
  fail "Ctrl-C during run: exit $rc, stderr: $(cat "$TMP/err")"
else
  echo "Ctrl-C during run: exit 130 after $(wc -c <"$TMP/out") bytes of text; $(grep 'decode:' "$TMP/err")"
fi

# A chat that outgrows its context drops its oldest turns (the system message stays) and goes on:
# six turns through a 160-token context, each answered, with one speed line per answer on stderr.
# A message that cannot fit even alone is not sent, and the session goes on.
check
printf 'Tell me a story.\nWhat did the cat do?\nAnd the dog?\nWhere did they go?\nWhy?\nThe end.\n' \
  | "$RLX" chat --chat-template "$CHATML" --system "You tell stories." -c 160 -n 24 --temp 0 --backend cpu \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
answers=$(grep -c '^\[prefill: [0-9]* tokens, .* tokens/s; decode: [0-9]* tokens, .* tokens/s\]$' "$TMP/err")
if [ $rc -ne 0 ] || [ "$answers" -ne 6 ] || ! grep -q 'outgrew the context of 160 tokens: dropped its oldest' "$TMP/err"; then
  fail "chat through a small context: exit $rc, $answers answers of 6: $(cat "$TMP/err")"
else
  echo "chat -c 160: 6 answers, $(grep -c outgrew "$TMP/err") times oldest turns dropped"
fi
check
{ printf 'once %.0s' $(seq 100); printf '\nHi\n'; } \
  | "$RLX" chat --chat-template "$CHATML" -c 64 -n 8 --temp 0 --backend cpu >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && grep -q 'past the context of 64 tokens (see --ctx); it is not sent' "$TMP/err" \
  && [ "$(grep -c '^\[prefill:' "$TMP/err")" -eq 1 ] || fail "chat, a message past the context: exit $rc, $(cat "$TMP/err")"

summary
