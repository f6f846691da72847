#!/usr/bin/env bash
# batch.sh [--kiln PATH] [--rounds N] — issue 24's batched-embedding row:
# the real all-MiniLM-L6-v2 on 32 sentences of 8-64 tokens, kiln's
# minilm_run_batch (f32, and --precision=bf16) against ONNX Runtime's best
# batch with dynamic axes, 1 thread; and its first target, one 16-token
# sentence in kiln's seq-128 build against a seq-16 build and ORT
# (bench/batch.py says how). Fetches and exports the model once
# (tools/minilm.py export into $KILN_MINILM_DIR, default build/minilm),
# exports its dynamic-axes twin (bench/minilm_dynamic.py), and writes the
# tables to stdout and $KILN_BENCH_DIR/batch.md (default build/bench).
# Exits 77 with a message when torch, the venv or the model cannot be had.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
root=$(cd "$(dirname "$0")/.." && pwd)
kiln=${KILN:-$root/build/kiln} rounds=5
while [ $# -gt 0 ]; do
  case $1 in
    --kiln) kiln=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    *) echo "usage: bash bench/batch.sh [--kiln PATH] [--rounds N]" >&2; exit 2 ;;
  esac
  shift
done
out=${KILN_BENCH_DIR:-$root/build/bench}
data=${KILN_MINILM_DIR:-$root/build/minilm}
skip() { echo "batch: SKIP: $*"; exit 77; }
[ -x "$kiln" ] || { echo "batch: no kiln binary at $kiln; build first or pass --kiln" >&2; exit 1; }
kiln=$(cd "$(dirname "$kiln")" && pwd)/$(basename "$kiln")
/usr/bin/python3 -c 'import torch, onnx' 2>/dev/null ||
  skip "Debian's python3-torch / python3-onnx are not installed (tools/setup-debian.sh installs them)"
py=$(KILN_VENV=${KILN_BENCH_VENV:-${KILN_VENV:-$root/build/venv}} bash "$root/tools/venv.sh") ||
  skip "no venv with onnxruntime (see the message above)"
rc=0
/usr/bin/python3 "$root/tools/minilm.py" export --dir "$data" >/dev/null || rc=$?
[ $rc = 0 ] || skip "tools/minilm.py could not fetch or export the model (status $rc)"
mkdir -p "$out/batch"
dynamic=$out/batch/minilm_dynamic.onnx
[ "$dynamic" -nt "$data/stamp" ] || /usr/bin/python3 "$root/bench/minilm_dynamic.py" "$dynamic" --dir "$data"
{
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$py" "$root/bench/batch.py" "$kiln" "$data/onnx/model.onnx" "$dynamic" "$out/batch" --rounds "$rounds"
} | tee "$out/batch.md"
