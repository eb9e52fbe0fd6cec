#!/bin/bash
# tools/bench_ab.py (the A/B harness of the GPU benchmarks) on the embedded stories260K, CPU
# backend. Checked: its table and JSON hold every test `rlx bench -o json` names for the same
# arguments, once per round and side, with means and ratios that follow from the samples; the ids
# check tells equal ids from different ones (a wrapper that samples instead of decoding greedily);
# a side that fails is reported and fails the run; bad arguments exit 2. Nothing is timed.
source "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
model="$RLX_SOURCE_DIR/models/stories260K.gguf"
ab="$RLX_SOURCE_DIR/tools/bench_ab.py"
require_python3 tools/bench_ab.py
export XDG_CACHE_HOME="$tmp/cache"
args=(--bench "-p 8 -n 4 -d 0,8 -r 2" --extra "--backend cpu -t 1" --ids 20 --rounds 2)

# ---- two sides, the same ids ----
python3 "$ab" --a "$RLX" --b "$RLX" --env-b RLX_TEST_SIDE=b -m "$model" "${args[@]}" --json "$tmp/ab.json" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
check; [ $rc -eq 0 ] || fail "A/B run: exit $rc: $(cat "$tmp/err")"
cat "$tmp/out"
check; grep -q "^ids .*stories260K.gguf: the same$" "$tmp/out" || fail "A/B run: no 'the same' ids line"
"$RLX" bench -m "$model" -p 8 -n 4 -d 0,8 -r 2 --backend cpu -t 1 -o json >"$tmp/direct.json" ||
  fail "rlx bench -o json failed"
check
python3 - "$tmp/ab.json" "$tmp/direct.json" <<'PY' || fail "A/B JSON: see above"
import json, sys
ab, direct = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = [t["name"] for t in direct["tests"]]
got = [r["test"] for r in ab["rows"]]
bad = []
if got != want: bad.append(f"tests {got}, rlx bench names {want}")
for r in ab["rows"]:
    if len(r["a"]) != 2 or len(r["b"]) != 2: bad.append(f"{r['test']}: {len(r['a'])}/{len(r['b'])} samples, expected 2/2")
    elif abs(r["a_mean"] - sum(r["a"]) / 2) > 1e-9 * r["a_mean"] or abs(r["b_mean"] - sum(r["b"]) / 2) > 1e-9 * r["b_mean"]:
        bad.append(f"{r['test']}: means do not follow from the samples")
    elif abs(r["ratio"] - r["b_mean"] / r["a_mean"]) > 1e-12: bad.append(f"{r['test']}: B / A is not b_mean / a_mean")
if ab["env_b"] != {"RLX_TEST_SIDE": "b"} or ab["env_a"] != {}: bad.append(f"environments {ab['env_a']} / {ab['env_b']}")
if ab["failed"] or ab["ids_differ"]: bad.append("failed or ids_differ set")
for b in bad: print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
check; [ "$(grep -c '^| stories260K.gguf | ' "$tmp/out")" -eq 4 ] || fail "A/B run: expected 4 table rows (pp8, tg4, at d0 and d8)"

# ---- different ids: side B samples ----
printf '#!/bin/bash\nif [ "$1" = generate ]; then exec "%s" "$@" --temp 1.5 --seed 7; fi\nexec "%s" "$@"\n' "$RLX" "$RLX" \
  >"$tmp/sampling-rlx"
chmod +x "$tmp/sampling-rlx"
python3 "$ab" --a "$RLX" --b "$tmp/sampling-rlx" -m "$model" "${args[@]}" --rounds 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
check; [ $rc -eq 0 ] || fail "different ids without --require-same-ids: exit $rc, expected 0"
check; grep -q "^ids .*stories260K.gguf: DIFFERENT$" "$tmp/out" || fail "different ids not reported: $(cat "$tmp/out")"
python3 "$ab" --a "$RLX" --b "$tmp/sampling-rlx" -m "$model" "${args[@]}" --rounds 1 --require-same-ids \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
check; [ $rc -eq 1 ] || fail "different ids with --require-same-ids: exit $rc, expected 1"

# ---- a side that fails ----
python3 "$ab" --a "$RLX" --b "$tmp/missing-rlx" -m "$model" "${args[@]}" --ids 0 --rounds 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
check; [ $rc -eq 1 ] || fail "a missing side B: exit $rc, expected 1"
check; grep -q "^round 1 B .*: FAILED: .*missing-rlx: not found" "$tmp/out" || fail "a missing side B not reported: $(cat "$tmp/out")"

# ---- bad arguments ----
for bad in "--rounds 0" "--bench '-p 8 -o json'" "--bench '--output=md'" "--bench '--model x.gguf'" \
  "--env-b NOEQUALS" "--timeout 0"; do
  eval "python3 \"$ab\" --a \"$RLX\" --b \"$RLX\" -m \"$model\" $bad" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check; [ $rc -eq 2 ] || fail "$bad: exit $rc, expected 2"
done
summary
