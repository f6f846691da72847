#!/usr/bin/env bash
# bitexact.sh KILN CASE WORK w8a8|bf16 — the AMX path of a GEMM against
# other builds of the same generated C, bit for bit:
#
#   w8a8 (CASE: one of tests/w8a8/make_cases.py, K, M and N off every tile
#   size): the int32 sums are exact on every path and the AMX epilogue is
#   the VNNI tiles' own, so kiln_rt.h's model of TDPBUSD
#   (-DKILN_AMX_EMULATE), the instruction (where this CPU has AMX), the
#   VNNI paths (where it has them), AVX2 and the plain C give the same bytes.
#   bf16 (CASE: a model folder, e.g. tests/models/encoder_2l_op14, --isa=avx512):
#   the tiles round as TDPBF16PS does, so only the model and the instruction
#   are compared (skipped, 77, without AMX).
set -euo pipefail
kiln=$1 case=$2 work=$3 mode=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
if [ "$mode" = w8a8 ]; then
  # the case's folder in the backend-test layout, with _eval's output
  "$here/../w8a8/kernel_case.sh" "$kiln" "$case" "$work/ref" "-O2" >/dev/null
  opts=(--model "$case/model.onnx" --quantize=w8a8 --isa=portable --rtol=1e-5 --atol=1e-5 "$work/ref")
  flags=("-O2 -DKILN_AMX_EMULATE" "-O1 -DKILN_GEMM_SCALAR" "-O2")
  grep -q ' avx2 ' /proc/cpuinfo && grep -q ' fma ' /proc/cpuinfo && flags+=("-O2 -mavx2 -mfma")
  grep -q ' avx512_vnni ' /proc/cpuinfo && flags+=("-O2 -march=native -DKILN_NO_AMX")
else
  grep -q ' amx_bf16 ' /proc/cpuinfo || { echo "no AMX here: skipped"; exit 77; }
  opts=(--precision=bf16 --isa=avx512 --rtol=5e-2 --atol=5e-2 "$case")
  flags=("-O2 -DKILN_AMX_EMULATE")
fi
grep -q ' amx_int8 ' /proc/cpuinfo && flags+=("-O2 -march=native")
dir=$("$kiln" check --keep -q "${opts[@]}" 2>&1 | sed -n 's/.*build folder kept: \([^ ]*\).*/\1/p')
[ -n "$dir" ] && [ -f "$dir/driver.c" ] || { echo "no build folder from kiln check --keep"; exit 1; }
trap 'rm -rf "$dir"' EXIT
ins=$(ls "$dir"/in*.bin | sort)
first=""
for f in "${flags[@]}"; do
  # shellcheck disable=SC2086
  cc -std=c99 $f -Wall -Wextra -Werror -o "$dir/p" "$dir/model.c" "$dir/driver.c" -lm
  # shellcheck disable=SC2086
  "$dir/p" $ins "$dir/o.bin"
  sum=$(cksum < "$dir/o.bin")
  echo "$f: $sum"
  [ -z "$first" ] && first=$sum
  [ "$sum" = "$first" ] || { echo "FAIL: '$f' differs from '${flags[0]}'"; exit 1; }
done
echo "PASS: ${#flags[@]} builds, the same bytes"
