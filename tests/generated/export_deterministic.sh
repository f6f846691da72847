#!/usr/bin/env bash
# export_deterministic.sh KILN SCRIPT.lua — kiln export of a Lua model gives
# the same bytes on every run. Lua seeds its table hash from the time and
# addresses, so attributes given as a Lua table came out in a different
# order from run to run; five runs catch that with near certainty.
set -eu
kiln=$1 model=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in 1 2 3 4 5; do
  "$kiln" export "$model" -o "$work/m$i.onnx"
  cmp "$work/m1.onnx" "$work/m$i.onnx"
done
echo "1 passed, 0 failed"
