#!/bin/bash
# rlx validate on lavapipe: the op sweep under the validation layer passes (exit 0), its JSON lists
# every op of ir/ops.def (the expected list is read from ops.def here) with cases compared and none
# failed, leaves marked as leaves; the markdown ends in a PASS summary line; bad arguments exit 2.
. "${RLX_SOURCE_DIR:?}/tests/support/lib.sh"
. "$RLX_SOURCE_DIR/tests/validate/validate_lib.sh"
require_lavapipe
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$RLX" validate --device llvmpipe --vk-validation -o json >"$tmp/v.json" 2>"$tmp/err"
rc=$?
check
[ $rc -eq 0 ] || { fail "rlx validate --device llvmpipe exited $rc"; cat "$tmp/err" >&2; jq -c '.cases[] | select(.pass | not)' "$tmp/v.json" >&2; }
check
jq -e '.schema == "rlx-validate/1" and .summary.passed and .summary.failures == 0' "$tmp/v.json" >/dev/null ||
  fail "the JSON summary does not say passed"
check
jq -e '.validation_layer.requested and .validation_layer.active and .validation_layer.messages == 0' "$tmp/v.json" \
  >/dev/null || fail "validation layer not active or reported messages: $(jq -c .validation_layer "$tmp/v.json")"
n=0
for op in $(all_ops); do
  n=$((n + 1))
  check
  jq -e --arg op "$op" '[.ops[] | select(.op == $op and .selected and .cases > 0 and .failed == 0)] | length == 1' \
    "$tmp/v.json" >/dev/null || fail "op $op: not listed with compared cases: $(jq -c --arg op "$op" '.ops[] | select(.op == $op)' "$tmp/v.json")"
done
check
[ "$(jq '.ops | length' "$tmp/v.json")" -eq "$n" ] || fail "the report lists $(jq '.ops | length' "$tmp/v.json") ops, ops.def has $n"
check
# the leaves are the ops ops.def declares with no inputs
leaves=$(sed -n 's/^RLX_OP(\([A-Z_0-9]*\), *0,.*/\1/p' "$OPS_DEF" | paste -sd,)
[ "$(jq -r '[.ops[] | select(.leaf) | .op] | join(",")' "$tmp/v.json")" = "$leaves" ] ||
  fail "leaves: $(jq -c '[.ops[] | select(.leaf) | .op]' "$tmp/v.json")"
# every weight type of the matmul took part
check
[ "$(jq '[.cases[] | select(.op == "MATMUL") | .type] | unique | length' "$tmp/v.json")" -ge 14 ] ||
  fail "MATMUL cases cover $(jq -c '[.cases[] | select(.op == "MATMUL") | .type] | unique' "$tmp/v.json")"
check
jq -e '[.paths[] | select(.pass)] | length == 1' "$tmp/v.json" >/dev/null || fail "paths: $(jq -c .paths "$tmp/v.json")"
echo "op sweep: $(jq -c '.summary' "$tmp/v.json")"

# markdown: one line per case, a PASS summary line
"$RLX" validate --device llvmpipe --quick --no-paths --ops 'MOE_*,rms_norm' >"$tmp/v.md" 2>&1
rc=$?
check
[ $rc -eq 0 ] || fail "--quick --ops exited $rc"
check
grep -q '^summary: PASS: ' "$tmp/v.md" || fail "no PASS summary line in the markdown"
check
[ "$(grep -c '^| MOE_ROUTE | - |' "$tmp/v.md")" -eq 1 ] || fail "--quick: not one MOE_ROUTE line"
check
grep -q '^| MATMUL | computing | - | - | not selected |' "$tmp/v.md" || fail "an op left out by --ops is not listed as such"

# usage errors: exit 2, naming what is wrong
usage_error() { # args... then the expected message part as the last argument
  local want=${!#}
  set -- "${@:1:$#-1}"
  check
  "$RLX" validate "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] && grep -q -- "$want" "$tmp/err" || fail "rlx validate $*: exit $rc, expected 2 with '$want': $(cat "$tmp/err")"
}
usage_error --ops NOPE "matches no op"
usage_error -o xml "md or json"
usage_error --types Q9_9 "no weight type"
usage_error --frobnicate "unknown option"
# the test switches are refused outside tests
RLX_VALIDATE_TEST= usage_error --test-perturb-op MATMUL "test-only"
RLX_VALIDATE_TEST=0 usage_error --test-perturb-weight output.weight "test-only"
RLX_VALIDATE_TEST=1 usage_error --test-perturb-op NOPE "no op"
# a device that does not exist: exit 1 with the devices listed
check
"$RLX" validate --device no-such-device >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "no-such-device" "$tmp/err" || fail "--device no-such-device: exit $rc: $(cat "$tmp/err")"
summary
