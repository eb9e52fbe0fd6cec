#!/bin/bash
# The environment is read at the edge (STYLE.md, "Options are parsed once"): in the library, only
# the options file of each backend (runtime/vk_options.c, cpu_fallback/cpu_options.c) and the
# cache-directory helper (loader/core/cache_dir.c) call getenv, so that everything else takes its
# settings as arguments and a test sets a field, not the process environment. tools/ and tests/
# may read it. Fails listing every other call.
src=${RLX_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || { echo "FAIL: no source tree at $src"; exit 1; }
allowed='^(runtime/vk_options\.c|cpu_fallback/cpu_options\.c|loader/core/cache_dir\.c):'
pattern='\b(secure_)?getenv[[:space:]]*\('
all=$(grep -rnE "$pattern" --include='*.c' --include='*.h' loader text ir cpu_fallback runtime runners validate include)
# the allowed files are where the grep must find them, or the pattern itself is broken
if ! grep -qE "$allowed" <<<"$all"; then
  echo "FAIL: no getenv found even in the options files: the check is broken"
  exit 1
fi
hits=$(grep -vE "$allowed" <<<"$all")
if [ -n "$hits" ]; then
  echo "FAIL: getenv outside the options files and the cache-directory helper:"
  echo "$hits"
  exit 1
fi
echo "getenv in the library (source): only in $(grep -cE "$allowed" <<<"$all") lines of the options files and the cache-directory helper"

# The grep misses what is not spelled `getenv(` (a function pointer, environ, a macro): the layers'
# object files, where the build has them, must not refer to getenv, secure_getenv or environ
# outside the same files.
objs=${RLX_BUILD_DIR:+$RLX_BUILD_DIR/CMakeFiles}
if [ -n "$objs" ] && [ -d "$objs" ] && command -v nm >/dev/null; then
  bad=""
  n=0
  layers='rlx_(core|loader|quant|text|ir|cpu|runtime|runners|validate)\.dir'
  while IFS= read -r o; do
    src=${o#*.dir/}
    src=${src%.o}
    [ -f "$src" ] || continue # an object left from a source since removed
    n=$((n + 1))
    case $src in runtime/vk_options.c | cpu_fallback/cpu_options.c | loader/core/cache_dir.c) continue ;; esac
    nm -u "$o" 2>/dev/null | grep -qwE '(secure_)?getenv|_?_?environ' && bad="$bad $src"
  done < <(find "$objs" -name '*.c.o' | grep -E "/$layers/")
  if [ -n "$bad" ]; then
    echo "FAIL: object files that refer to the environment outside the options files:$bad"
    exit 1
  fi
  echo "object files: $n checked, none refers to the environment outside the options files"
fi
