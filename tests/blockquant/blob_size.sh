#!/bin/sh
# blob_size.sh KILN CASE_DIR OUT_DIR — the weights blob of a block-quantized
# case is its blocks' bytes, not more: no f32 copy (DequantizeBlocks is
# never folded), no repacked copy, and the tied table (read by a
# BlockGather and a BlockLinear) stored once. The blob must be within 1%
# (plus alignment) of the case's model.bin, which holds each weight once.
set -eu
kiln=$1 case=$2 out=$3
mkdir -p "$out"
"$kiln" compile "$case/model.kir" -o "$out/m.c" --weights-mode=blob >/dev/null
want=$(wc -c < "$case/model.bin")
got=$(wc -c < "$out/m.weights.bin")
if [ "$got" -gt $((want + want / 100 + 4096)) ]; then
  echo "FAIL: blob of $got bytes for $want bytes of weights"
  exit 1
fi
grep -q 'block_gather_0(weights->t_blocks' "$out/m.c" && grep -q 'block_linear_[0-9]*([^)]*weights->t_blocks' "$out/m.c" ||
  { echo "FAIL: the tied table is not read by both a BlockGather and a BlockLinear"; exit 1; }
echo "ok   blob $got bytes for $want bytes of blocks and biases; the tied table stored once"
