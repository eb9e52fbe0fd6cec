#!/bin/bash
# Runs every libFuzzer target for SECONDS each, seeded from tests/corpus/<name>/, and prints the
# executions each one made. Targets run RLX_FUZZ_JOBS at a time (default: one per core; each
# target is single-threaded), so the whole run takes SECONDS x targets / jobs.
# Usage: tests/fuzz/run.sh SECONDS [BUILD_DIR]   (BUILD_DIR configured with -DRLX_FUZZ=ON, clang)
# A crash, leak, timeout or out-of-memory input is written to tests/corpus/<name>/ (crash-*,
# leak-*, timeout-*, oom-*): fix the bug, keep the input (renamed to say what it found) and commit
# it; the fuzz_<name>_replay tests replay that directory in every build.
# RLX_FUZZ_KEEP=DIR keeps each target's grown corpus in DIR/<name>/ (for long local runs).
set -euo pipefail
secs=${1:?usage: run.sh SECONDS [BUILD_DIR]}
build=${2:-build-fuzz}
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=${RLX_FUZZ_JOBS:-$(nproc)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# fuzz NAME BIN: one target; leaves its summary line in $out/NAME.line and its log in $out/NAME.log
fuzz() {
  local name=$1 bin=$2 seeds="$root/tests/corpus/$1" work result=ok
  mkdir -p "$seeds"
  if [ -n "${RLX_FUZZ_KEEP:-}" ]; then work="$RLX_FUZZ_KEEP/$name"; mkdir -p "$work"; else work="$out/$name.corpus"; mkdir "$work"; fi
  "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$seeds/" "$work" "$seeds" >"$out/$name.log" 2>&1 || result=FAILED
  local execs rss cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name.log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$out/$name.log" | tail -n 1)
  cov=$({ grep -oE 'cov: [0-9]+' "$out/$name.log" || true; } | tail -n 1 | cut -d' ' -f2)
  printf '%-18s %12s executions in %4ss  coverage %6s  peak RSS %5s MB  %s\n' \
    "$name" "${execs:-?}" "$secs" "${cov:-?}" "${rss:-?}" "$result" >"$out/$name.line"
}

names=()
for bin in "$build"/tests/fuzz_*; do
  case "$bin" in *_replay) continue ;; esac
  [ -x "$bin" ] || continue
  name=$(basename "$bin"); name=${name#fuzz_}
  names+=("$name")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "== fuzz $name for ${secs}s"
  fuzz "$name" "$bin" &
done
wait
if [ ${#names[@]} -eq 0 ]; then
  echo "run.sh: no fuzz targets under $build/tests (configure with -DCMAKE_C_COMPILER=clang -DRLX_FUZZ=ON)" >&2
  exit 1
fi
status=0
for name in "${names[@]}"; do
  if ! grep -q ' ok$' "$out/$name.line" 2>/dev/null; then
    status=1
    echo "== fuzz $name FAILED; the end of its log:"
    tail -n 60 "$out/$name.log"
  fi
done
echo "== fuzz summary ($jobs at a time)"
for name in "${names[@]}"; do printf '  '; cat "$out/$name.line" 2>/dev/null || echo "$name: no result"; done
exit $status
