#!/usr/bin/env bash
# run_fusion_tests.sh KILN [CASE_DIR...] — the fusions of fuse_residual.c,
# fuse_transpose.c and fuse_chain.c on the models of tests/fusion/cases/
# (made by make_cases.py), each against its reference outputs (ONNX Runtime
# or numpy, random inputs):
#   - `kiln compile -v` reports every fusion listed in CASE/fusions.txt;
#   - the fused generated C passes `kiln check` for each GEMM layout and
#     vector width (generic; avx2 panels read 8-wide; avx512 16-wide; the
#     plain C path) and with --threads=2;
#   - the fused ops' _evals pass (`kiln check --interp`), and so do the
#     unfused ops' _evals (the same check without the fusion passes), so fused
#     kernels, fused references and unfused references all agree.
# Ends with "N passed, N failed".
set -u
kiln=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("$here"/cases/*/)
nofuse=--passes=bind,infer,fold,simplify,dce,plan
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for dir in "${cases[@]}"; do
  dir=${dir%/}; name=$(basename "$dir")
  why=""
  "$kiln" compile "$dir/model.onnx" -o "$tmp/m.c" -v 2> "$tmp/v" > /dev/null || why="compile failed: $(tail -1 "$tmp/v")"
  while [ -z "$why" ] && IFS= read -r want; do
    grep -qF -- "$want" "$tmp/v" || why="no '$want' in kiln compile -v"
    # each expected line once: drop the first match so a repeated line needs a second
    awk -v w="$want" 'BEGIN{d=0} !d && index($0, w) {d=1; next} {print}' "$tmp/v" > "$tmp/v2" && mv "$tmp/v2" "$tmp/v"
  done < "$dir/fusions.txt"
  for variant in "" "--isa=avx2|-O2 -DKILN_GEMM_V8" "--isa=avx512|-O2 -DKILN_GEMM_V16" \
                 "|-O2 -DKILN_GEMM_SCALAR" "--threads=2|-O2" "--interp|" "--interp $nofuse|"; do
    [ -n "$why" ] && break
    opts=${variant%%|*} flags=${variant#*|}
    # shellcheck disable=SC2086
    if [ -n "$flags" ]; then out=$("$kiln" check -q $opts "--cflags=$flags" "$dir" 2>&1)
    else out=$("$kiln" check -q $opts "$dir" 2>&1); fi
    [ $? = 0 ] || why="kiln check $opts ${flags:+--cflags='$flags'}: $(echo "$out" | tail -3)"
  done
  if [ -z "$why" ]; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name: $why"; fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
