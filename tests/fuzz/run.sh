#!/bin/bash
# Runs every libFuzzer target for SECONDS each, seeded from tests/corpus/<name>/, and prints the
# executions each one made.
# Usage: tests/fuzz/run.sh SECONDS [BUILD_DIR]   (BUILD_DIR configured with -DRLX_FUZZ=ON, clang)
# A crash, leak, timeout or out-of-memory input is written to tests/corpus/<name>/ (crash-*,
# leak-*, timeout-*, oom-*): fix the bug, keep the input (renamed to say what it found) and commit
# it; the fuzz_<name>_replay tests replay that directory in every build.
# RLX_FUZZ_KEEP=DIR keeps each target's grown corpus in DIR/<name>/ (for long local runs).
set -euo pipefail
secs=${1:?usage: run.sh SECONDS [BUILD_DIR]}
build=${2:-build-fuzz}
root=$(cd "$(dirname "$0")/../.." && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=()
found=0
for bin in "$build"/tests/fuzz_*; do
  case "$bin" in *_replay) continue ;; esac
  [ -x "$bin" ] || continue
  found=1
  name=$(basename "$bin"); name=${name#fuzz_}
  seeds="$root/tests/corpus/$name"
  mkdir -p "$seeds"
  if [ -n "${RLX_FUZZ_KEEP:-}" ]; then work="$RLX_FUZZ_KEEP/$name"; mkdir -p "$work"; else work=$(mktemp -d); fi
  log=$(mktemp)
  echo "== fuzz $name for ${secs}s"
  result=ok
  if ! "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="$seeds/" "$work" "$seeds" >"$log" 2>&1; then
    status=1; result=FAILED; tail -n 60 "$log"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2)
  summary+=("$(printf '%-16s %12s executions in %4ss  coverage %6s  peak RSS %5s MB  %s' \
    "$name" "${execs:-?}" "$secs" "${cov:-?}" "${rss:-?}" "$result")")
  [ -n "${RLX_FUZZ_KEEP:-}" ] || rm -rf "$work"
  rm -f "$log"
done
if [ "$found" = 0 ]; then
  echo "run.sh: no fuzz targets under $build/tests (configure with -DCMAKE_C_COMPILER=clang -DRLX_FUZZ=ON)" >&2
  exit 1
fi
echo "== fuzz summary"
printf '  %s\n' "${summary[@]}"
exit $status
