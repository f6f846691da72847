#!/usr/bin/env bash
# kir_roundtrip.sh KILN CASE WORK — a w8a8 Linear in the text IR: the dump
# after the quantize pass holds Linear {act_quant="u8"} with its sixth input
# W_colsum (i32), reads back (kiln opt, infer only) to the same text, and
# the read-back IR compiles and runs (kiln run) to the same outputs as the
# ONNX model; kiln export refuses it (one line, exit 1).
set -euo pipefail
kiln=$1 case=$2 work=$3
[ -f "$case/model.onnx" ] || exit 77
rm -rf "$work"
mkdir -p "$work"
"$kiln" compile "$case/model.onnx" --quantize=w8a8 -q -o "$work/m.c" --dump-all="$work/dumps"
kir=$(ls "$work"/dumps/*-quantize.kir)
grep -q 'Linear %x, %w.rot.int8, %b, %r, %w.rot.scale, %w.colsum {act="gelu", act_quant="u8", act_rot=64}' "$kir" ||
  { echo "no w8a8 Linear in $kir:"; grep Linear "$kir"; exit 1; }
grep -q 'const %w.colsum: i32\[64\]' "$kir" || { echo "no i32 W_colsum in $kir"; exit 1; }
"$kiln" opt "$kir" --passes=infer -o "$work/back.kir"
cmp "$kir" "$work/back.kir"
"$kiln" run "$case/model.onnx" --quantize=w8a8 --input x="$case/inputs/x.pb" --input r="$case/inputs/r.pb" >"$work/onnx.txt"
"$kiln" run "$work/back.kir" --input x="$case/inputs/x.pb" --input r="$case/inputs/r.pb" >"$work/kir.txt"
cmp "$work/onnx.txt" "$work/kir.txt"
rc=0
"$kiln" export "$kir" -o "$work/e.onnx" 2>"$work/export.err" || rc=$?
want="kiln: $kir: node 'MatMul_0' (Linear): a Linear with act_quant (--quantize=w8a8) has no ONNX form; expected the f32 or int8 model (export without --quantize=w8a8)"
[ $rc = 1 ] && [ "$(cat "$work/export.err")" = "$want" ] && [ ! -e "$work/e.onnx" ] ||
  { echo "export: rc $rc, said:"; cat "$work/export.err"; exit 1; }
echo "ok: $kir round-trips; export refuses it"
