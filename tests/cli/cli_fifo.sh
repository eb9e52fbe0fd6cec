#!/bin/bash
# Paths that must be regular files, given as FIFOs (issue 24: they blocked forever): each command
# ends at once with exit 1 and an error that names the FIFO. An HF directory is a copy of the qwen3
# fixture's with one file replaced by a FIFO; a hang is caught by timeout (exit 124).
source "$(dirname "$0")/../support/lib.sh"
require_fixture models/qwen3/hf/config.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
model="$RLX_SOURCE_DIR/models/stories260K.gguf"

# expect_fifo_error NAME ARGS...: rlx ARGS exits 1 within 20 s, naming a FIFO on stderr
expect_fifo_error() {
  local name=$1; shift
  check
  timeout 20 "$RLX" "$@" >/dev/null 2>"$tmp/err" </dev/null; local rc=$?
  if [ $rc -eq 124 ]; then fail "$name: still blocked after 20 s"; return; fi
  [ $rc -eq 1 ] || { fail "$name: exit $rc, want 1 ($(head -2 "$tmp/err"))"; return; }
  grep -q 'FIFO' "$tmp/err" || fail "$name: the error does not say FIFO: $(head -2 "$tmp/err")"
}

# hf_with_fifo NAME: a copy of the qwen3 HF directory whose NAME is a FIFO
hf_with_fifo() {
  local d=$tmp/hf-${1//./_}
  rm -rf "$d"; cp -r "$FIXTURES/models/qwen3/hf" "$d"; rm -f "$d/$1"; mkfifo "$d/$1"
  echo "$d"
}

mkfifo "$tmp/model.gguf" "$tmp/template.jinja"
expect_fifo_error "inspect FIFO" inspect "$tmp/model.gguf"
expect_fifo_error "run -m FIFO" run -m "$tmp/model.gguf" -n 1
expect_fifo_error "tokenize -m FIFO" tokenize -m "$tmp/model.gguf" -p hi
expect_fifo_error "chat --chat-template FIFO" chat -m "$model" --chat-template "$tmp/template.jinja"
for f in config.json tokenizer.json tokenizer_config.json; do
  d=$(hf_with_fifo $f)
  expect_fifo_error "run -m HF dir, $f a FIFO" run -m "$d" -n 1 --temp 0
done
# inspect reports what a directory holds: without config.json it fails; a tokenizer file that is
# not a regular file is reported as no tokenizer, at once
expect_fifo_error "inspect HF dir, config.json a FIFO" inspect "$(hf_with_fifo config.json)"
for f in tokenizer.json tokenizer_config.json; do
  d=$(hf_with_fifo $f)
  check
  timeout 20 "$RLX" inspect "$d" >/dev/null 2>"$tmp/err" </dev/null; rc=$?
  [ $rc -ne 124 ] || fail "inspect HF dir, $f a FIFO: still blocked after 20 s"
done
summary
