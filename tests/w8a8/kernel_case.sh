#!/usr/bin/env bash
# kernel_case.sh KILN CASE WORK "CFLAGS" [kiln check options...] — the w8a8
# GEMM's generated C against Linear's _eval on one case of make_cases.py:
#
#   kiln run --quantize=w8a8 (the interpreter) -> WORK/test_data_set_0/output_0.pb
#   kiln check WORK --model CASE/model.onnx --quantize=w8a8 --cflags=CFLAGS
#
# Both quantize X's rows by the same f32 steps and sum u8 x s8 exactly in
# int32, so only the epilogue differs: the _eval scales in double and uses
# libm's erf/tanh, the C in f32 with kiln_erff/kiln_tanhf (1.1-1.3 ulp) and
# may contract the bias add into an FMA. A few ulps of values of size 1-30:
# --rtol 1e-5 --atol 1e-5 (a wrong zero point, scale or u8 costs 1e-3 and
# more). CFLAGS picks the ISA path (tests/w8a8/tests.cmake), among all of
# them: --isa=portable writes every path (the default, native, only the
# host's).
set -euo pipefail
kiln=$1 case=$2 work=$3 cflags=$4
shift 4
d=$work/test_data_set_0
rm -rf "$work"
mkdir -p "$d"
ins=()
k=0
for name in x r; do
  if [ -f "$case/inputs/$name.pb" ]; then
    cp "$case/inputs/$name.pb" "$d/input_$k.pb"
    ins+=(--input "$name=$case/inputs/$name.pb")
    k=$((k + 1))
  fi
done
"$kiln" run "$case/model.onnx" --quantize=w8a8 "${ins[@]}" --out "$d" >/dev/null
"$kiln" check "$work" --model "$case/model.onnx" --quantize=w8a8 --isa=portable --cflags="$cflags" --rtol=1e-5 --atol=1e-5 -q "$@"
