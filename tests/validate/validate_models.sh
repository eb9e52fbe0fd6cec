#!/bin/bash
# rlx validate -m on a fixture model of each family (lavapipe): the device's logits of the three
# prompts within the fixtures README's f16/mixed bound of the CPU's on the same file, greedy ids
# equal (or diverging only at a near-tie), the paths equal (Qwen3.5, recurrent, against its one-shot
# prefill instead of the naive path). (Without the validation layer, which
# slows lavapipe fourfold here: cli_validate runs the sweep under it, and the family parity runs
# run these models' kernels under it.) Then the test switch changes one weight row of the
# device's copy: the report must fail, naming the first divergent step.
. "${RLX_SOURCE_DIR:?}/tests/support/lib.sh"
. "$RLX_SOURCE_DIR/tests/validate/validate_lib.sh"
require_lavapipe
models=(qwen3/qwen3-F32.gguf llama32/llama32-F16.gguf gemma3/gemma3-F16.gguf qwen3moe/qwen3moe-Q8_0.gguf qwen35/qwen35-F32.gguf)
for m in "${models[@]}"; do require_fixture "models/$m"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
before=$(ls -d /tmp/rlx-validate-* 2>/dev/null) # another run's leftovers (one killed) are not ours

for m in "${models[@]}"; do
  check
  "$RLX" validate --device llvmpipe --no-ops -m "$FIXTURES/models/$m" -o json >"$tmp/m.json" 2>"$tmp/err"
  rc=$?
  # the prompts, and the paths: bucketed == exact, == naive, chained == single steps, pipeline cache
  if [ $rc -ne 0 ] || ! jq -e '.summary.passed and (.model.prompts | length) == 3 and (.paths | length) == 4 and
      ([.model.prompts[], .paths[] | select(.pass)] | length) == 7' "$tmp/m.json" >/dev/null; then
    fail "$m: exit $rc: $(cat "$tmp/err") $(jq -c '.model, .paths' "$tmp/m.json")"
  else
    echo "$m ($(jq -r .model.family "$tmp/m.json")): $(jq -c '[.model.prompts[] | [.name, .max_logit_delta, .diverge_step]]' "$tmp/m.json")"
  fi
done

# one row of blk.0.ffn_down changed on the device's side only
m=qwen3/qwen3-F32.gguf
check
RLX_VALIDATE_TEST=1 "$RLX" validate --device llvmpipe --no-ops --no-paths -m "$FIXTURES/models/$m" \
  --test-perturb-weight blk.0.ffn_down.weight -o json >"$tmp/p.json" 2>"$tmp/err"
rc=$?
jq -e '.test_switches.perturb_weight == "blk.0.ffn_down.weight" and (.summary.passed | not) and
    ([.model.prompts[] | select((.pass | not) and .diverge_step >= 0 and .cpu_id != .device_id)] | length) >= 1' \
  "$tmp/p.json" >/dev/null && [ $rc -eq 1 ] || fail "perturbed weight row: exit $rc, $(jq -c '.model.prompts' "$tmp/p.json")"
check
RLX_VALIDATE_TEST=1 "$RLX" validate --device llvmpipe --no-ops --no-paths -m "$FIXTURES/models/$m" \
  --test-perturb-weight blk.0.ffn_down.weight >"$tmp/p.md" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -qE '^\| [a-z ]+ \| [0-9]+ \| .* \| step [0-9]+: CPU [0-9]+, device [0-9]+.*\*\*FAIL\*\*' "$tmp/p.md" &&
  grep -q '^summary: FAIL' "$tmp/p.md" || fail "perturbed weight row, markdown: exit $rc, no prompt line naming its step"
echo "perturbed: $(jq -c '[.model.prompts[] | [.name, .max_logit_delta, .diverge_step, .cpu_id, .device_id]]' "$tmp/p.json")"
check
RLX_VALIDATE_TEST=1 "$RLX" validate --device llvmpipe --no-ops --no-paths -m "$FIXTURES/models/$m" \
  --test-perturb-weight no.such.weight -o json >"$tmp/u.json" 2>/dev/null
rc=$?
[ $rc -eq 1 ] && jq -e '.model.error | test("no weight .no.such.weight.")' "$tmp/u.json" >/dev/null ||
  fail "unknown weight: exit $rc: $(jq -c .model.error "$tmp/u.json")"
left=$(comm -13 <(echo "$before") <(ls -d /tmp/rlx-validate-* 2>/dev/null))
[ -z "$left" ] || fail "temporary copies left in /tmp: $left"
summary
