#!/bin/bash
# docs/DEPLOY.md's manifests (every ```yaml block) pass yamllint: the Kubernetes objects and the
# Prometheus config are well-formed YAML in the layout the docs show. Without yamllint: SKIP, or
# FAIL under CI=true.
set -uo pipefail
doc=${RLX_SOURCE_DIR:?}/docs/DEPLOY.md
if ! command -v yamllint >/dev/null; then
  echo "SKIP: yamllint not found (Debian: apt-get install yamllint)" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk -v dir="$dir" '/^```yaml$/ { n++; f = dir "/block" n ".yaml"; next } /^```$/ { f = ""; next } f { print > f }' "$doc"
n=$(ls "$dir"/*.yaml 2>/dev/null | wc -l)
if [ "$n" -lt 2 ]; then echo "FAIL: expected the Kubernetes and Prometheus YAML blocks in $doc, found $n"; exit 1; fi
# line length is prose's business in these docs; everything else is yamllint's default
if ! yamllint -d '{extends: default, rules: {line-length: disable, document-start: disable}}' "$dir"/*.yaml; then
  echo "FAIL: docs/DEPLOY.md's YAML does not lint"
  exit 1
fi
echo "docs/DEPLOY.md: $n YAML blocks lint clean"
