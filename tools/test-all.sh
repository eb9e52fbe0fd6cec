#!/bin/bash
# The whole test suite: install dependencies, build, run each fuzz target for a bounded time
# (clang builds only), then every ctest test. ctest's summary is the last thing printed.
# RLX_FUZZ_SECONDS (default 20) bounds each fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"
if command -v clang >/dev/null; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DRLX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build build-fuzz -j "$jobs"
  bash tests/fuzz/run.sh "${RLX_FUZZ_SECONDS:-20}" build-fuzz
else
  echo "clang not found: fuzz targets not run" >&2
fi
ctest --test-dir build --output-on-failure -j "$jobs"
