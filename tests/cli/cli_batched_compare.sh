#!/bin/bash
# tools/batched_compare.py (rlx against llama-batched-bench, alternating) on the embedded
# stories260K, CPU backend, with a stand-in for llama-batched-bench that prints its jsonl lines
# (the fields llama.cpp writes: pl, speed_pp, speed_tg) with known values. Checked: one table row
# per B with both rounds of each side, llama.cpp's values as printed, rlx's as `rlx bench -o json`
# gave them, the ratio following from the means; a missing B or a missing program is reported and
# fails the run; bad arguments exit 2. Nothing is timed.
source "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
model="$RLX_SOURCE_DIR/models/stories260K.gguf"
bc="$RLX_SOURCE_DIR/tools/batched_compare.py"
require_python3 tools/batched_compare.py
export XDG_CACHE_HOME="$tmp/cache"
# the stand-in: B = pl gets prompt 1000 B and decode 100 B t/s; ONLY_PL limits the Bs it prints
cat >"$tmp/llama-batched-bench" <<'SH'
#!/bin/bash
while [ $# -gt 0 ]; do [ "$1" = -npl ] && npl=$2; shift; done
echo "main: some log line"
for b in ${npl//,/ }; do
  [ -n "${ONLY_PL:-}" ] && [ "$b" != "$ONLY_PL" ] && continue
  echo "{\"pp\": 8, \"tg\": 4, \"pl\": $b, \"speed_pp\": $((1000 * b)).000000, \"speed_tg\": $((100 * b)).000000}"
done
SH
chmod +x "$tmp/llama-batched-bench"
args=(-m "$model" --npl 1,2 --npp 8 --ntg 4 --rounds 2 --rlx "$RLX" --rlx-args "--backend cpu -t 1"
  --llama "$tmp/llama-batched-bench")

python3 "$bc" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
check; [ $rc -eq 0 ] || fail "compare run: exit $rc: $(cat "$tmp/err")"
check
python3 - "$tmp/out" <<'PY' || fail "compare table: see above"
import sys
rows = [l for l in open(sys.argv[1]) if l.startswith("| stories260K.gguf |")]
bad = []
if len(rows) != 2: bad.append(f"{len(rows)} table rows, expected 2 (B = 1, 2)")
for l in rows:
    c = [x.strip() for x in l.strip().strip("|").split("|")]
    b = int(c[1])
    want = f"{100 * b:,.1f} / {100 * b:,.1f}"
    if c[2] != want: bad.append(f"B={b}: llama.cpp tg '{c[2]}', expected '{want}'")
    rlx = [float(x.replace(",", "")) for x in c[3].split(" / ")]
    if len(rlx) != 2 or min(rlx) <= 0: bad.append(f"B={b}: rlx tg '{c[3]}', expected two positive rounds")
    elif abs(float(c[4]) - (sum(rlx) / 2) / (100 * b)) > 0.011 * max(1.0, float(c[4])): bad.append(f"B={b}: ratio {c[4]} does not follow from the means")
    if c[5] != f"{1000 * b:,.1f}": bad.append(f"B={b}: llama.cpp pp '{c[5]}', expected {1000 * b:,.1f}")
for x in bad: print("FAIL:", x, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
check; [ "$(grep -c '^round [12] stories260K.gguf \(llama.cpp\|rlx\): B=1 ' "$tmp/out")" -eq 4 ] ||
  fail "expected a result line per round and side"

# ---- llama.cpp's output without B = 2 ----
ONLY_PL=1 python3 "$bc" "${args[@]}" --rounds 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
check; [ $rc -eq 1 ] || fail "a missing B: exit $rc, expected 1"
check; grep -q "^round 1 stories260K.gguf llama.cpp: FAILED (no result for B = 2)" "$tmp/out" ||
  fail "a missing B not reported: $(cat "$tmp/out")"

# ---- a missing program ----
python3 "$bc" "${args[@]}" --rounds 1 --llama "$tmp/missing" >"$tmp/out" 2>"$tmp/err"
rc=$?
check; [ $rc -eq 1 ] || fail "a missing llama-batched-bench: exit $rc, expected 1"
check; grep -q "^round 1 stories260K.gguf llama.cpp: FAILED (.*missing" "$tmp/out" ||
  fail "a missing llama-batched-bench not reported: $(cat "$tmp/out")"

# ---- bad arguments ----
for bad in "--npl 1,x" "--npl 0" "--rounds 0" "--npp 0" "-m $tmp/none.gguf"; do
  python3 "$bc" "${args[@]}" $bad >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check; [ $rc -eq 2 ] || fail "$bad: exit $rc, expected 2"
done
summary
