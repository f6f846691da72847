#!/usr/bin/env bash
# venv.sh — make (once) and name the Python venv with PyPI onnxruntime,
# numpy and onnx that the bench and the ONNX Runtime comparisons use (never
# torch from PyPI: Debian's python3-torch exports the models).
#   py=$(bash tools/venv.sh) || exit 77
# Prints the venv's python on stdout; exits 1 with a message on stderr when
# the venv cannot be made (offline, python3-venv missing). The venv lives in
# $KILN_VENV (default build/venv); a lock keeps concurrent tests from
# building it twice.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${KILN_VENV:-$root/build/venv}
mkdir -p "$(dirname "$venv")"
(
  flock 9
  if ! "$venv/bin/python" -c 'import onnxruntime, numpy, onnx' 2>/dev/null; then
    echo "venv: making $venv (pip install onnxruntime numpy onnx)" >&2
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q onnxruntime numpy onnx >&2 ||
      { rm -rf "$venv"; exit 1; }
  fi
) 9>"$(dirname "$venv")/.venv.lock" || { echo "venv: could not make $venv with onnxruntime (offline? python3-venv missing?)" >&2; exit 1; }
echo "$venv/bin/python"
