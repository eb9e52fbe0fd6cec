#!/bin/bash
# The whole test suite: install dependencies, build, and run every ctest test; then, with clang,
# the sanitized build (ASan + UBSan + libFuzzer's coverage instrumentation, tests/CMakeLists.txt):
# each fuzz target runs for a bounded time and the whole suite runs again with leak detection on,
# where any sanitizer report fails its test. ctest's summary of the ordinary build is the last
# thing printed; the exit status is non-zero when any part failed.
# RLX_FUZZ_SECONDS (default 20) bounds each fuzz target; docs/RELIABILITY.md says what runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
jobs=$(nproc)
status=0
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"
if command -v clang >/dev/null; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DRLX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build build-fuzz -j "$jobs"
  bash tests/fuzz/run.sh "${RLX_FUZZ_SECONDS:-20}" build-fuzz || status=1
  # The Vulkan tests are left out of the sanitized run: on lavapipe, Mesa's LLVM JIT under ASan
  # makes them take longer than CI allows; they run (with the validation layer) in the build below.
  # The rest runs with no Vulkan driver to find (VK_DRIVER_FILES names none), so that a test opening
  # the best available backend gets the CPU without loading lavapipe, whose device enumeration
  # leaks in Mesa itself (22.3.6-1+deb12u2), where LeakSanitizer cannot tell it from rlx's.
  echo "== the suite under ASan + UBSan, leak detection on (build-fuzz), Vulkan tests aside"
  VK_DRIVER_FILES=/nonexistent/rlx-sanitized-run.json VK_ICD_FILENAMES=/nonexistent/rlx-sanitized-run.json \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-fuzz --output-on-failure -j "$jobs" -LE vulkan || status=1
else
  echo "clang not found: no fuzzing and no sanitized run" >&2
  status=1
fi
echo "== the suite (build)"
ctest --test-dir build --output-on-failure -j "$jobs" || status=1
exit $status
