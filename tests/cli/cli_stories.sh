#!/bin/bash
# End to end on the embedded stories260K: `rlx generate` reproduces the greedy continuation of
# both prompts in tests/data/stories260K-ref-hf.json (transformers, float64, reading the same GGUF)
# exactly, on all three generator paths, and `rlx logits` (with and without --all) matches
# last_logits within 1e-3.
# Needs no fixture: the model and its reference are in the repo. Runs on each backend of
# RLX_TEST_BACKENDS (default: cpu, the reference).
source "$(dirname "$0")/../support/lib.sh"
MODEL=$RLX_SOURCE_DIR/models/stories260K.gguf
REF=$RLX_SOURCE_DIR/tests/data/stories260K-ref-hf.json
TOL=1e-3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# json_array KEY N: the N-th (1-based) array under "KEY" in the one-line reference, as "a,b,c".
json_array() { grep -o "\"$1\": \[[^]]*\]" "$REF" | sed -n "${2}p" | sed 's/.*\[//; s/\]//; s/ //g'; }

for be in ${RLX_TEST_BACKENDS:-cpu}; do
  for p in 1 2; do
    ids=$(json_array ids $p)
    want=$(json_array greedy $p | tr , ' ')
    [ -n "$ids" ] && [ -n "$want" ] || { fail "$be prompt $p: no ids/greedy in $REF"; continue; }

    for path in "" --no-buckets --no-cache; do
      check
      got=$("$RLX" generate -m "$MODEL" --backend "$be" --tokens "$ids" -n 64 --ids $path 2>"$TMP/err")
      rc=$?
      if [ $rc -ne 0 ]; then
        fail "$be prompt $p ${path:-bucketed}: rlx generate exited $rc: $(cat "$TMP/err")"
      elif [ "$got" != "$want" ]; then
        first=$(paste <(tr ' ' '\n' <<<"$got") <(tr ' ' '\n' <<<"$want") | awk '$1 != $2 { print NR - 1; exit }')
        fail "$be prompt $p ${path:-bucketed}: greedy ids differ from the reference first at step ${first:-?}" \
          "(got: $got; expected: $want)"
      else
        echo "$be prompt $p ${path:-bucketed}: 64 greedy ids equal to the reference; $(grep -o 'decode:.*' "$TMP/err")"
      fi
    done

    # last_logits from the last position alone, and from the last row of --all ([n][vocab])
    n_ids=$(tr , '\n' <<<"$ids" | wc -l)
    for all in "" --all; do
      check
      if ! "$RLX" logits -m "$MODEL" --backend "$be" --tokens "$ids" -o "$TMP/l.f32" $all 2>"$TMP/err"; then
        fail "$be prompt $p: rlx logits $all failed: $(cat "$TMP/err")"
        continue
      fi
      rows=$([ -n "$all" ] && echo "$n_ids" || echo 1)
      # od prints each float with 7+ significant digits: enough to see a difference of 1e-3 at |x| ~ 20.
      od -An -v -f -w4 "$TMP/l.f32" | tr -d ' ' >"$TMP/l.txt"
      n=$(wc -l <"$TMP/l.txt")
      result=$(paste <(tail -n 512 "$TMP/l.txt") <(json_array last_logits $p | tr , '\n') |
        awk -v tol=$TOL '{ n++; d = $1 - $2; if (d < 0) d = -d; if (d > worst) { worst = d; at = n - 1 } }
          END { printf "%.3g %d %s\n", worst, at, (n == 512 && worst <= tol ? "ok" : "bad") }')
      read -r worst at verdict <<<"$result"
      if [ "$n" != $((rows * 512)) ] || [ "$verdict" != ok ]; then
        fail "$be prompt $p: rlx logits $all: $n values (expected $((rows * 512))), last row max|Δ| vs last_logits =" \
          "$worst at id $at (tolerance $TOL)"
      else
        echo "$be prompt $p: rlx logits $all: [$rows][512] floats, last row max|Δ| vs last_logits = $worst (at id $at)"
      fi
    done
  done
done

summary
