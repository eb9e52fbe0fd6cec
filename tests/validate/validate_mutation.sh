#!/bin/bash
# The harness must be able to fail (a mutation test of rlx validate itself). With the test switch
# (RLX_VALIDATE_TEST=1 --test-perturb-op OP) every device output of OP's cases gets a small error
# (1% of its size plus 1% of the output's RMS; one id off by one); for every op of ir/ops.def in
# turn, the report must fail (exit 1) naming that op and only that op, with every case of it failed.
# The quick sweep (one shape per op) of two weight types, no paths, keeps each run near half a
# second.
. "${RLX_SOURCE_DIR:?}/tests/support/lib.sh"
. "$RLX_SOURCE_DIR/tests/validate/validate_lib.sh"
require_lavapipe
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(validate --device llvmpipe --quick --no-paths --types F16,Q4_K -o json)

# unperturbed, the same sweep passes: the failures below come from the switch
check
"$RLX" "${args[@]}" >"$tmp/base.json" 2>"$tmp/err" || fail "the unperturbed quick sweep fails: $(cat "$tmp/err")"
for op in $(all_ops); do
  check
  # an op the device does not run yet has nothing to perturb: it must be reported not yet, not failed
  if jq -e --arg op "$op" '.ops[] | select(.op == $op) | .not_yet' "$tmp/base.json" >/dev/null; then
    jq -e --arg op "$op" '.ops[] | select(.op == $op) | .cases > 0 and .failed == 0' "$tmp/base.json" >/dev/null ||
      fail "$op: not yet on the device, but its refusal cases failed"
    echo "$op: not yet on the device (refused by name), not perturbed"
    continue
  fi
  RLX_VALIDATE_TEST=1 "$RLX" "${args[@]}" --test-perturb-op "$op" >"$tmp/m.json" 2>"$tmp/err"
  rc=$?
  failing=$(jq -c '.summary.failing_ops' "$tmp/m.json")
  counts=$(jq -c --arg op "$op" '.ops[] | select(.op == $op) | [.cases, .failed]' "$tmp/m.json")
  if [ $rc -ne 1 ] || [ "$failing" != "[\"$op\"]" ] || ! jq -e --arg op "$op" \
    '.test_switches.perturb_op == $op and ([.ops[] | select(.op == $op and .cases > 0 and .failed == .cases)] | length == 1)' \
    "$tmp/m.json" >/dev/null; then
    fail "perturbing $op: exit $rc, failing ops $failing, $op's [cases, failed] $counts"
  else
    echo "perturbing $op: exit 1, failing ops $failing, [cases, failed] $counts"
  fi
done
summary
