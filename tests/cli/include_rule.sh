#!/bin/bash
# The layer rule is enforced by the include roots (CMakeLists.txt, rlx_layer_expose): a layer sees
# only the folders of the layers it links. A quoted include that climbs out of its folder ("../")
# would get past them, so none may: every include in the library names its layer's path from the
# root, or a header beside the file. Fails listing each one.
src=${RLX_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || { echo "FAIL: no source tree at $src"; exit 1; }
dirs="loader text ir cpu_fallback runtime runners validate include shaders"
n=$(grep -rhoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' --include='*.c' --include='*.h' $dirs | wc -l)
if [ "$n" -lt 100 ]; then
  echo "FAIL: only $n quoted includes found: the check is broken"
  exit 1
fi
hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\.\./' --include='*.c' --include='*.h' \
  --include='*.comp' --include='*.glsl' $dirs)
if [ -n "$hits" ]; then
  echo "FAIL: includes that climb out of their folder, past the layer rule:"
  echo "$hits"
  exit 1
fi
echo "includes: $n quoted, none climbs out of its folder"
