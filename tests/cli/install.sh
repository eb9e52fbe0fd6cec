#!/bin/bash
# cmake --install, used from elsewhere: the installed rlx runs its default model (linked into the
# binary) from another directory with no source tree to find (transformers' greedy text,
# tests/data/stories260K-ref-hf.json prompt 0), and a program builds against the installed librlx
# through pkg-config and through find_package(rlx).
source "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
check; cmake --install "$RLX_BUILD_DIR" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { fail "cmake --install: $(tail -5 "$tmp/install.log")"; summary; exit 1; }

# The default model from another directory, without RLX_DEFAULT_MODEL and without the checkout
want=$(jq -r '.prompts[0].greedy_text' "$RLX_SOURCE_DIR/tests/data/stories260K-ref-hf.json")
check
got=$(cd "$tmp" && env -u RLX_DEFAULT_MODEL -u RLX_SOURCE_DIR "$prefix/bin/rlx" run -p "Once upon a time" -n 64 \
  --temp 0 --backend cpu 2>"$tmp/err")
[ "$got" = "$want" ] || fail "installed rlx, default model: want '$want', got '$got' ($(cat "$tmp/err"))"
check; grep -rqF "$RLX_SOURCE_DIR/models" "$prefix/bin/rlx" && fail "the installed rlx names the source tree's models/"

if [ -n "${RLX_BUILD_SANITIZED:-}" ]; then
  echo "sanitized build: the programs against the installed librlx are not built (they would need its runtime)"
  summary
  exit
fi

# A program against the installed library: the default model's vocabulary (512, rlx inspect's n_vocab)
cat >"$tmp/probe.c" <<'C'
#include <stdio.h>
#include "rlx/runner.h"
int main(int argc, char **argv) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = "cpu";
    rlx_runner *r = NULL;
    rlx_status s = rlx_runner_open(argv[argc - 1], &o, &r);
    if (s) { fprintf(stderr, "%s\n", rlx_status_message(s)); return 1; }
    printf("%d\n", (int)rlx_runner_vocab_size(r));
    rlx_runner_close(r);
    return 0;
}
C
model=$RLX_SOURCE_DIR/models/stories260K.gguf
if command -v pkg-config >/dev/null; then
  check
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig
  if cc -o "$tmp/probe_pc" "$tmp/probe.c" $(pkg-config --cflags --libs rlx) 2>"$tmp/cc.err"; then
    out=$(LD_LIBRARY_PATH=$(pkg-config --variable=libdir rlx) "$tmp/probe_pc" "$model" 2>&1)
    [ "$out" = 512 ] || fail "pkg-config probe printed '$out', want 512"
  else
    fail "building against pkg-config's rlx: $(head -5 "$tmp/cc.err")"
  fi
fi
check
mkdir -p "$tmp/cm"
cp "$tmp/probe.c" "$tmp/cm/"
cat >"$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(probe C)
find_package(rlx REQUIRED)
add_executable(probe probe.c)
target_link_libraries(probe PRIVATE rlx::rlx_static)
CM
if cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cm.log" 2>&1 &&
   cmake --build "$tmp/cm/build" >>"$tmp/cm.log" 2>&1; then
  out=$("$tmp/cm/build/probe" "$model" 2>&1)
  [ "$out" = 512 ] || fail "find_package probe printed '$out', want 512"
else
  fail "building against find_package(rlx): $(tail -8 "$tmp/cm.log")"
fi
summary
