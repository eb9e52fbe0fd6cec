#!/bin/bash
# Runs every libFuzzer target for SECONDS each, seeded from tests/corpus/<name>/.
# Usage: tests/fuzz/run.sh SECONDS [BUILD_DIR]   (BUILD_DIR configured with -DRLX_FUZZ=ON, clang)
# A crash leaves its input in tests/corpus/<name>/crash-* to be committed as a regression input.
set -euo pipefail
secs=${1:?usage: run.sh SECONDS [BUILD_DIR]}
build=${2:-build-fuzz}
root=$(cd "$(dirname "$0")/../.." && pwd)
status=0
for bin in "$build"/tests/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin"); name=${name#fuzz_}
  seeds="$root/tests/corpus/$name"
  work=$(mktemp -d)
  echo "== fuzz $name for ${secs}s"
  if ! "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="$seeds/" "$work" "$seeds" 2>"$work.log"; then
    status=1; tail -n 40 "$work.log"
  fi
  grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$work.log" | sed "s/^/  $name /" || true
  rm -rf "$work" "$work.log"
done
exit $status
