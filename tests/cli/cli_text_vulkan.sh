#!/bin/bash
# rlx run on the Vulkan backend (lavapipe in CI, with the validation layer): the embedded
# stories260K's greedy story must equal transformers' float64 greedy_text
# (tests/data/stories260K-ref-hf.json, prompt 0), and a 3-turn piped chat must go through.
# Any validation message fails the test.
source "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if ! "$RLX" devices 2>/dev/null | grep -q '^0:'; then
  if [ "${CI:-}" = true ]; then echo "FAIL: no Vulkan device and CI=true (install mesa-vulkan-drivers)" >&2; exit 1; fi
  echo "SKIPPED: no Vulkan device" >&2; exit 77
fi
ref="$RLX_SOURCE_DIR/tests/data/stories260K-ref-hf.json"
check
want=$(jq -r '.prompts[0].greedy_text' "$ref")
got=$("$RLX" run -p "Once upon a time" -n 64 --temp 0 --backend vulkan 2>"$tmp/err")
[ "$got" = "$want" ] || fail "run --backend vulkan greedy text differs:
  want: $want
  got:  $got
  stderr: $(cat "$tmp/err")"
check
grep -q 'on vulkan' "$tmp/err" || fail "run did not report the vulkan backend: $(cat "$tmp/err")"
check
! grep -q 'rlx vulkan validation' "$tmp/err" || fail "validation messages: $(grep 'rlx vulkan validation' "$tmp/err" | head -3)"

# RLX_VK_SHADER_STATS=1 (runtime/vk_shader_stats.h) changes nothing but stderr: the same story,
# and a statistics line per pipeline, or one line saying the device has none to give.
got=$(RLX_VK_SHADER_STATS=1 "$RLX" run -p "Once upon a time" -n 64 --temp 0 --backend vulkan 2>"$tmp/err")
check
[ "$got" = "$want" ] || fail "run under RLX_VK_SHADER_STATS=1 differs: $got"
check
grep -Eq '^rlx vulkan shader stats: .*(lacks VK_KHR_pipeline_executable_properties|\[spec )' "$tmp/err" \
  || fail "RLX_VK_SHADER_STATS=1 printed neither statistics nor their absence: $(head -5 "$tmp/err")"
check
! grep -q 'rlx vulkan validation' "$tmp/err" || fail "validation messages with shader stats: $(grep 'rlx vulkan validation' "$tmp/err" | head -3)"

if [ -d "$FIXTURES/models" ] || [ "${CI:-}" = true ]; then
  require_fixture models/qwen3/qwen3-Q8_0.gguf
  check
  printf 'Hello there\nWhat is two plus two?\nThanks!\n' \
    | "$RLX" chat -m "$FIXTURES/models/qwen3/qwen3-Q8_0.gguf" -n 4 --seed 1 --backend vulkan >"$tmp/out" 2>"$tmp/err" \
    || fail "chat on vulkan: $(cat "$tmp/err")"
  check
  [ "$(wc -l <"$tmp/out")" -ge 3 ] || fail "chat on vulkan: expected 3 answers, got: $(cat "$tmp/out")"
  check
  ! grep -q 'rlx vulkan validation' "$tmp/err" || fail "validation messages in chat: $(grep 'rlx vulkan validation' "$tmp/err" | head -3)"
fi
summary
