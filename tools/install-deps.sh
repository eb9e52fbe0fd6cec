#!/bin/bash
# Installs the Debian 12 packages rlx needs to build and test (skips apt when all are present).
set -euo pipefail
PKGS=(
  cmake ninja-build pkg-config gcc libc6-dev   # build
  libjansson-dev                               # JSON: config.json, safetensors headers, tests' references
  libpcre2-dev libutf8proc-dev                 # tokenizers: pre-tokenizer regexes, Unicode normalization
  clang libclang-rt-14-dev                     # libFuzzer targets (RLX_FUZZ=ON)
  jq                                           # shell tests check `rlx inspect --json`
  libmicrohttpd-dev                            # rlx serve: HTTP
  python3                                      # tools/serve_bench.py, the load client (tested in tests/server)
  yamllint                                     # docs/DEPLOY.md's manifests (tests/server/deploy_yaml.sh)
  libvulkan-dev libvulkan-volk-dev             # Vulkan backend: headers + volk (the loader is found at run time)
  glslc glslang-tools spirv-tools              # shaders: GLSL -> SPIR-V, spirv-val
  vulkan-validationlayers mesa-vulkan-drivers  # tests: Khronos validation layer, lavapipe (CPU Vulkan device)
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# rlx serve's tests: the official openai client (tests/server) needs node and npm. A machine whose
# node came from elsewhere (NodeSource's nodejs bundles npm, and conflicts with Debian's npm) keeps
# it; else Debian's nodejs and npm.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  for p in nodejs npm; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "installing: ${missing[*]}" >&2
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
