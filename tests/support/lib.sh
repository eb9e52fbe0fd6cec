# Shared helpers for shell tests. Source it; $1 of the test is the rlx binary.
set -u
RLX=${1:?usage: test.sh path/to/rlx}
FIXTURES=${RLX_FIXTURES:-${RLX_SOURCE_DIR:?}/../shared/fixtures}
T_FAILS=0
T_CHECKS=0

# require_fixture REL: skip (77) when missing, fail under CI=true
require_fixture() {
  if [ ! -e "$FIXTURES/$1" ]; then
    if [ "${CI:-}" = true ]; then echo "FAIL: fixture $FIXTURES/$1 missing and CI=true" >&2; exit 1; fi
    echo "SKIPPED: fixture $FIXTURES/$1 missing" >&2; exit 77
  fi
}

# require_python3 WHAT: skip (77) when python3 is missing (WHAT did not run), fail under CI=true
require_python3() {
  if ! command -v python3 >/dev/null; then
    echo "SKIP: python3 not found: $1 did not run" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
  fi
}

fail() { T_FAILS=$((T_FAILS + 1)); echo "FAIL: $*" >&2; }
check() { T_CHECKS=$((T_CHECKS + 1)); }

summary() {
  echo "$(basename "$0"): $T_CHECKS checks, $T_FAILS failed"
  [ "$T_FAILS" -eq 0 ]
}
