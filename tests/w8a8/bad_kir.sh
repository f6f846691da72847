#!/usr/bin/env bash
# bad_kir.sh KILN CASE WORK — a w8a8 Linear in a .kir whose parts do not go
# together is refused by linear_infer in one line, exit 1, no C written:
# act_quant without W_colsum, act_rot not 16/32/64 dividing K, W_colsum
# without act_quant, act_quant other than "u8", "u8_tensor" or "u8_static",
# u8_static without a scale, a rotation with another act_quant. The .kir is the dump after
# the quantize pass of make_cases.py's m5_k64_n64_gelu_res, edited.
set -euo pipefail
kiln=$1 case=$2 work=$3
[ -f "$case/model.onnx" ] || exit 77
rm -rf "$work"
mkdir -p "$work"
"$kiln" compile "$case/model.onnx" --quantize=w8a8 -q -o "$work/m.c" --dump-all="$work/dumps"
kir=$(ls "$work"/dumps/*-quantize.kir)
good=', %w.colsum {act="gelu", act_quant="u8", act_rot=64}'
fails=0
bad() { # NAME REPLACEMENT MESSAGE
  sed "s/$(printf '%s' "$good" | sed 's/[\/&.*[]/\\&/g')/$2/" "$kir" >"$work/$1.kir"
  cp "${kir%.kir}.bin" "$work/$1.bin"
  grep -qF -- "$2" "$work/$1.kir" || { echo "FAIL $1: the edit did not apply"; fails=$((fails + 1)); return; }
  rc=0
  "$kiln" compile "$work/$1.kir" -o "$work/$1.c" 2>"$work/$1.err" || rc=$?
  want="kiln: $work/$1.kir: node 'MatMul_0' (Linear): $3"
  if [ $rc = 1 ] && [ "$(cat "$work/$1.err")" = "$want" ] && [ ! -e "$work/$1.c" ]; then
    echo "ok   $1"
  else
    echo "FAIL $1: rc $rc, said: $(cat "$work/$1.err")"
    fails=$((fails + 1))
  fi
}
bad no_colsum ' {act="gelu", act_quant="u8", act_rot=64}' \
  'act_quant="u8" needs inputs W_scale and W_colsum; W_colsum is absent'
bad rot48 ', %w.colsum {act="gelu", act_quant="u8", act_rot=48}' \
  'act_rot is 48 for K = 64; expected 16, 32 or 64, dividing K'
bad no_act_quant ', %w.colsum {act="gelu", act_rot=64}' \
  'act_quant is absent; expected act_quant="u8" or "u8_tensor" with input W_colsum'
bad s8 ', %w.colsum {act="gelu", act_quant="s8", act_rot=64}' \
  "act_quant is 's8'; expected act_quant=\"u8\" or \"u8_tensor\" with input W_colsum"
bad static_no_scale ', %w.colsum {act="gelu", act_quant="u8_static", act_zp=3}' \
  'act_quant="u8_static" with act_scale 0 and act_zp 3; expected a finite act_scale > 0 and act_zp from 0 to 255'
bad static_rot ', %w.colsum {act="gelu", act_quant="u8_static", act_scale=0.5, act_zp=3, act_rot=64}' \
  'act_rot with act_quant="u8_static"; expected act_rot only with act_quant="u8"'
[ $fails = 0 ]
