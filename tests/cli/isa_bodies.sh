#!/usr/bin/env bash
# isa_bodies.sh KILN ROOT WORK — which SIMD bodies each --isa writes (kiln
# issue 22: one body per kernel per build). On an f32 GEMM + attention
# model, a block-quantized (BlockLinear) one and a w8a8 one:
#
#   --isa=avx512: GNU C vectors of one width, 16 (the w8a8 product also keeps
#                 its AVX2 body, for AVX-512 CPUs without VNNI), and each
#                 kernel's plain C first (#if !(...));
#   --isa=avx2:   one width, 8;
#   --isa=portable: every width (16, 8, 4; the f32 GEMM's 8-column panels
#                 8 and 4), and --isa=generic the same file byte for byte;
#   the default:  the same file as --isa=native, with one width when this
#                 CPU has AVX2 (native is then avx2 or avx512).
#
# The avx512 and avx2 files build with -Wall -Wextra -Werror both with and
# without -march=native (the plain C path or the SIMD one). Prints one line
# per case and "N passed, N failed".
set -u
kiln=$(realpath "$1") root=$(realpath "$2") work=$3
rm -rf "$work" && mkdir -p "$work" && work=$(realpath "$work")
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# the vector widths of a file's GNU C float vector types, e.g. "16 8"
widths() { grep -o 'typedef float v[0-9]*f ' "$1" | tr -dc '0-9\n' | sort -rnu | tr '\n' ' ' | sed 's/ $//'; }
compile() { # NAME ISA MODEL [options]: WORK/NAME/ISA/m.c (ISA "": the default)
  local name=$1 isa=$2 model=$3
  shift 3
  mkdir -p "$work/$name/${isa:-default}"
  "$kiln" compile "$model" ${isa:+--isa=$isa} -q -o "$work/$name/${isa:-default}/m.c" "$@"
}
has_avx2=0
grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && has_avx2=1
cc=${CC:-cc}
while IFS='|' read -r name model portable_widths avx512_widths opts; do
  for isa in avx512 avx2 portable generic native ""; do
    compile "$name" "$isa" "$root/$model" $opts || bad "$name --isa=$isa: kiln compile failed"
  done
  d=$work/$name
  [ "$(widths "$d/avx512/m.c")" = "$avx512_widths" ] && ok "$name avx512: widths $avx512_widths" ||
    bad "$name avx512: widths '$(widths "$d/avx512/m.c")', want '$avx512_widths'"
  [ "$(widths "$d/avx2/m.c")" = 8 ] && ok "$name avx2: width 8" || bad "$name avx2: widths '$(widths "$d/avx2/m.c")', want '8'"
  [ "$(widths "$d/portable/m.c")" = "$portable_widths" ] && ok "$name portable: widths $portable_widths" ||
    bad "$name portable: widths '$(widths "$d/portable/m.c")', want '$portable_widths'"
  cmp -s "$d/portable/m.c" "$d/generic/m.c" && ok "$name generic = portable" || bad "$name: generic and portable differ"
  cmp -s "$d/native/m.c" "$d/default/m.c" && ok "$name default = native" || bad "$name: the default differs from native"
  if [ $has_avx2 = 1 ]; then
    w=$(widths "$d/default/m.c")
    case $w in 8 | 16 | "16 8") ok "$name default: widths $w" ;; *) bad "$name default: widths '$w' on an AVX2 CPU" ;; esac
  fi
  # the plain C comes first: the first guard in a function is "#if !(" (in a kernel)
  first=$(grep -m1 -n '^ \+#if .*KILN_GEMM' "$d/avx512/m.c" | cut -d: -f2-)
  case $first in *'#if !('*) ok "$name avx512: plain C first" ;; *) bad "$name avx512: first kernel guard '$first'" ;; esac
  for isa in avx512 avx2; do
    for flags in "-O1" "-O1 -march=native"; do
      (cd "$d/$isa" && $cc -std=c11 $flags -Wall -Wextra -Werror -c m.c -o m.o) &&
        ok "$name $isa builds with $flags" || bad "$name $isa: $cc $flags -Wall -Wextra -Werror failed"
    done
  done
done <<EOF
f32|tests/models/encoder_2l_op14/model.onnx|16 8 4|16|
bq|tests/generated/blockquant/q4_1_m3/model.kir|16 8 4|16|
w8a8|tests/models/encoder_2l_op14/model.onnx|16 8 4|16 8|--quantize=w8a8
EOF
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
