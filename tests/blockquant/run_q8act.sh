#!/bin/sh
# run_q8act.sh KILN CASE_DIR OUT_DIR [all|c] — --kquant-act=q8 on one K-quant,
# Q5_0 or Q5_1 case of tests/generated/blockquant (tools/make_blockquant_cases.py):
#
# 1. exact: the reference interpreter with the option (BlockLinear's _eval
#    quantizes X's rows as the kernels do, bq_quantize_act_q8, then sums
#    in double: exact on the int8 activations) writes the case's outputs;
#    the generated C must match them within 1e-4 (the kernels' integer
#    dots are exact, only their f32 scaling rounds) on each path: AVX512-
#    VNNI (when this CPU has it), AVX2 (vpmaddubsw), plain C, and native
#    flags with 2 threads;
# 2. against the f32 reference (the case's own outputs, weights dequantized
#    exactly, X in f32), native flags: within 0.1 absolute plus 1%, cosine
#    at least 0.999 (measured: at most 0.038 absolute for the K-quants, |y|
#    up to 5.4, K up to 2304; 0.07 for Q5_1, |y| up to 15; cosine 0.9998
#    or more, the least on 6 outputs of a K = 512 product); the
#    interpreter likewise. Products of 64 rows (prefill) keep f32 X: their
#    outputs stay within the usual 1e-4.
# `c`: only the AVX2 and plain C paths of 1 (the sanitizer suite).
set -eu
kiln=$1 case=$2 out=$3 which=${4:-all}
rm -rf "$out"
mkdir -p "$out/ref/test_data_set_0"
cp "$case/model.kir" "$case/model.bin" "$out/ref/"
names=$(sed -n '/^graph/{s/^graph [^(]*(//;s/) ->.*//;p;q}' "$case/model.kir" | grep -o '%[A-Za-z0-9_]*:' | tr -d '%:')
set --
k=0
for n in $names; do
  cp "$case/test_data_set_0/input_$k.pb" "$out/ref/test_data_set_0/"
  set -- "$@" --input "$n=$case/test_data_set_0/input_$k.pb"
  k=$((k + 1))
done
"$kiln" run --kquant-act=q8 "$case/model.kir" "$@" --out "$out/ref/test_data_set_0" >/dev/null
fail=0
check() { # NAME ARGS...: one kiln check, its verdict on one line
  name=$1
  shift
  if "$kiln" check -q --kquant-act=q8 "$@" >"$out/log" 2>&1; then
    echo "ok   $name"
  else
    echo "FAIL $name"
    cat "$out/log"
    fail=1
  fi
}
exact="--rtol=1e-4 --atol=1e-4"
case $case in
*_m64) # prefill: X stays f32, the outputs those of the f32 kernels
  check "64 rows (prefill, f32 X) against the f32 reference" $exact "--cflags=-O2 -march=native -ffp-contract=fast" \
    "$case"
  exit $fail ;;
esac
if [ "$which" = all ] && grep -q avx512_vnni /proc/cpuinfo && grep -q avx512bw /proc/cpuinfo; then
  check "AVX512-VNNI against the int8-activation reference" $exact \
    "--cflags=-O2 -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mfma -mf16c -ffp-contract=fast" "$out/ref"
elif [ "$which" = all ]; then
  echo "skip AVX512-VNNI (this CPU has none)"
fi
check "AVX2 against the int8-activation reference" $exact "--cflags=-O2 -mavx2 -mfma -mf16c -ffp-contract=fast" \
  "$out/ref"
check "plain C against the int8-activation reference" $exact "--cflags=-O1 -DKILN_GEMM_SCALAR" "$out/ref"
if [ "$which" = all ]; then
  check "native flags, 2 threads, against the int8-activation reference" $exact --threads 2 \
    "--cflags=-O2 -march=native -ffp-contract=fast" "$out/ref"
  loose="--rtol=1e-2 --atol=0.1 --min-cosine=0.999"
  check "native flags against the f32 reference" $loose "--cflags=-O2 -march=native -ffp-contract=fast" "$case"
  check "the interpreter against the f32 reference" $loose --interp "$case"
fi
exit $fail
