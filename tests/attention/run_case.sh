#!/usr/bin/env bash
# run_case.sh KILN CASE — the fused Attention kernel on one case of
# tests/attention/cases/ (made by make_cases.py), against Attention's _eval:
#   1. the fuse_attention pass makes one Attention of the kind in CASE/kind (kiln -v),
#      reading Q, K and V in place when CASE/in_place says it should, and
#      grouped K and V heads without a copy (no Expand) when CASE/no_repeat does;
#   2. `kiln run` (the interpreter, so Attention's _eval) writes the
#      reference outputs for the case's inputs;
#   3. the unfused graph's interpreter agrees with them (the fused op keeps
#      the source graph's semantics: -inf vs finite masks, NaN rows), and
#      so does `kiln export`'s decomposition of the fused op, which fuses
#      back into the same kind;
#   4. the generated C agrees with them for each --isa and each vector
#      width that reads it (16- and 8-wide built with their -m flags where
#      this CPU has them, else forced: wide GNU vectors lowered to the
#      baseline ISA, slow but the same code; natively compiled, when the
#      CPU lacks AVX-512), the plain C path, clang -Weverything, and
#      --threads 2 (with -pthread, when the compiler has it).
# Prints one line per step; exit 0 when all pass.
set -u
kiln=$1 case=$2
name=$(basename "$case")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$case"/. "$tmp"/
fail=0
step() { # step WHAT COMMAND...: run it, report
  local what=$1; shift
  if "$@" > "$tmp/log" 2>&1; then echo "ok   $name: $what"
  else echo "FAIL $name: $what"; sed 's/^/     /' "$tmp/log" | tail -5; fail=1; fi
}

kind=$(cat "$case/kind")
fused() { "$kiln" compile "$tmp/model.onnx" -v -o "$tmp/fused.c" 2>&1 | grep -q "fuse: attention{mask=$kind"; }
step "fuses as Attention{mask=$kind}" fused
if [ -f "$case/in_place" ]; then # Q, K, V slices of one packed projection: read in place, no copies
  in_place() { [ "$("$kiln" compile "$tmp/model.onnx" -v -o "$tmp/fused.c" 2>&1 |
                    grep -c 'fuse: attention reads [QKV] in place')" = 3 ] && ! grep -q '(Slice)' "$tmp/fused.c"; }
  step "reads Q, K and V in place" in_place
fi

if [ -f "$case/no_repeat" ]; then # grouped heads: each kv head read in place, no copy per query head
  no_repeat() { "$kiln" compile "$tmp/model.onnx" -o "$tmp/fused.c" &&
                ! grep -q '(Expand)\|(Tile)\|(Concat)' "$tmp/fused.c"; }
  step "reads shared K and V heads in place (no Expand)" no_repeat
fi

args=()
k=0
while read -r input; do
  args+=(--input "$input=$tmp/test_data_set_0/input_$k.pb")
  k=$((k + 1))
done < "$case/inputs"
step "kiln run (the _eval reference)" "$kiln" run "$tmp/model.onnx" "${args[@]}" --out "$tmp/test_data_set_0"
[ $fail = 0 ] || exit 1
step "unfused interpreter = _eval" "$kiln" check -q --interp --passes=bind,infer,fold,simplify,dce "$tmp"
mkdir -p "$tmp/exported"
cp -r "$tmp/test_data_set_0" "$tmp/exported/"
step "kiln export" "$kiln" export "$tmp/model.onnx" --passes=bind,infer,fold,simplify,fuse_normalize,fuse_attention,fuse_gelu,fuse_layernorm,fuse_linear,fuse_addnorm,fuse_residual,fuse_transpose,fuse_chain,dce -o "$tmp/exported/model.onnx"
refused() { "$kiln" compile "$tmp/exported/model.onnx" -v -o "$tmp/refused.c" 2>&1 | grep -q "fuse: attention{mask=$kind"; }
step "the export fuses back as Attention{mask=$kind}" refused
step "the export's interpreter = _eval" "$kiln" check -q --interp --passes=bind,infer,fold,simplify,dce "$tmp/exported"

v8="-O2 -DKILN_GEMM_V8" v16="-O2 -DKILN_GEMM_V16"
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && v8="-O2 -mavx2 -mfma"
grep -qw avx512f /proc/cpuinfo && v16="-O2 -mavx512f -mfma"
for variant in "generic|-O2" "generic|$v8" "avx2|$v8" "avx2|$v16" "avx512|$v16" "avx512|-O2" \
               "generic|-O1 -DKILN_GEMM_SCALAR"; do
  isa=${variant%%|*} flags=${variant#*|}
  step "C --isa=$isa $flags" "$kiln" check -q --isa="$isa" "--cflags=$flags" "$tmp"
done
if ! grep -qw avx512f /proc/cpuinfo; then # the 16-wide path under its own flags: builds only
  native() { "$kiln" compile "$tmp/model.onnx" --isa=avx512 -o "$tmp/v16.c" &&
             ${CC:-cc} -std=c99 -O2 -mavx512f -mfma -Wall -Wextra -Werror -c "$tmp/v16.c" -o "$tmp/v16.o"; }
  step "C --isa=avx512 -mavx512f builds" native
fi
if command -v clang > /dev/null; then
  step "C under clang -Weverything" "$kiln" check -q --cc=clang \
    "--cflags=-O1 -Weverything -Wno-padded -Wno-declaration-after-statement -Wno-unused-macros" "$tmp"
fi
if echo 'int main(void){return 0;}' | ${CC:-cc} -pthread -x c - -o "$tmp/omp" 2>/dev/null; then
  step "C --isa=avx2 --threads=2 $v8" "$kiln" check -q --isa=avx2 --threads=2 "--cflags=$v8" "$tmp"
fi
exit $fail
