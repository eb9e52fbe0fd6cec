# Shared by the rlx validate tests. Source after tests/support/lib.sh.
OPS_DEF=${RLX_SOURCE_DIR:?}/ir/ops.def
# every op of ir/ops.def, one per line (the harness's list is generated from the same file)
all_ops() { sed -n 's/^RLX_OP(\([A-Z_0-9]*\),.*/\1/p' "$OPS_DEF"; }

# lavapipe, or SKIP (77) / FAIL under CI=true
require_lavapipe() {
  if ! "$RLX" devices 2>/dev/null | grep -q llvmpipe; then
    if [ "${CI:-}" = true ]; then echo "FAIL: no lavapipe (llvmpipe) device and CI=true" >&2; exit 1; fi
    echo "SKIPPED: no lavapipe (llvmpipe) Vulkan device" >&2
    exit 77
  fi
}
