#!/bin/bash
# Unbounded input: a prompt file, standard input and chat lines are read with a limit, so
# /dev/zero and an endless pipe end at once with an error (exit 1) instead of growing the process.
# The limit is the one `rlx run --help` states, 16 MiB = 16777216 bytes. Each case runs under a 4 GB
# address-space limit (ulimit -v; a sanitized binary reserves terabytes of shadow memory, so there
# ASan's hard_rss_limit_mb stands in) and a 20 s timeout.
source "$(dirname "$0")/../support/lib.sh"
MODEL=$RLX_SOURCE_DIR/models/stories260K.gguf
CHATML=$RLX_SOURCE_DIR/tests/corpus/chat_template/chatml.jinja
LIMIT=16777216
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if grep -q __asan_init "$RLX"; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=4096"
else
  ulimit -v 4194304
fi

# bounded CMD...: run CMD (a shell string) with a timeout; $rc, $TMP/err
bounded() {
  timeout 20 bash -c "$1" >"$TMP/out" 2>"$TMP/err"
  rc=$?
}

# refused DESC CMD NEEDLE: exit 1 within the time limit and NEEDLE on stderr
refused() {
  local desc=$1 cmd=$2 needle=$3
  check
  bounded "$cmd"
  if [ "$rc" -ne 1 ]; then
    fail "$desc: exit $rc, expected 1 ($(head -c 300 "$TMP/err"))"
  elif ! grep -qF -- "$needle" "$TMP/err"; then
    fail "$desc: stderr lacks '$needle': $(head -c 300 "$TMP/err")"
  else
    echo "$desc: exit 1, $(tail -n 1 "$TMP/err")"
  fi
}

check
"$RLX" run --help | grep -q '16 MiB' || fail "rlx run --help does not state the 16 MiB limit"
check
"$RLX" tokenize --help | grep -q '16 MiB' || fail "rlx tokenize --help does not state the 16 MiB limit"
check
"$RLX" chat --help | grep -q '16 MiB' || fail "rlx chat --help does not state the 16 MiB limit"

R=$(printf '%q' "$RLX")
M=$(printf '%q' "$MODEL")
refused "run -f /dev/zero" "$R run -m $M -f /dev/zero --seed 1" "'/dev/zero' holds more than $LIMIT bytes"
refused "tokenize -f /dev/zero" "$R tokenize -m $M -f /dev/zero" "'/dev/zero' holds more than $LIMIT bytes"
refused "yes | run -f -" "yes | $R run -m $M -f - --seed 1" "standard input holds more than $LIMIT bytes"
refused "yes | tokenize -f -" "yes | $R tokenize -m $M -f -" "standard input holds more than $LIMIT bytes"
refused "chat < /dev/zero" "$R chat -m $M --chat-template $(printf '%q' "$CHATML") --seed 1 </dev/zero" \
  "standard input: a line of more than $LIMIT bytes"

# one byte over the limit is refused (a file of the limit itself is not tried: tokenizing 16 MiB
# takes seconds, minutes under the sanitizers)
head -c $((LIMIT + 1)) /dev/zero | tr '\0' a >"$TMP/big.txt"
refused "run -f (limit + 1 bytes)" "$R run -m $M -f $TMP/big.txt --seed 1" "holds more than $LIMIT bytes"

# small input through standard input still works
check
bounded "echo 'Once upon a time' | $R run -m $M -f - -n 2 --seed 1"
[ "$rc" -eq 0 ] && grep -q '^Once upon a time' "$TMP/out" || fail "echo | run -f -: exit $rc, out '$(cat "$TMP/out")' ($(cat "$TMP/err"))"
check
bounded "printf 'ab' | $R tokenize -m $M --no-bos --ids -f -"
[ "$rc" -eq 0 ] && [ "$(cat "$TMP/out")" = "$("$RLX" tokenize -m "$MODEL" --no-bos --ids -p ab)" ] \
  || fail "printf ab | tokenize -f -: exit $rc, $(cat "$TMP/out") ($(cat "$TMP/err"))"
summary
