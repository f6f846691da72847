#!/usr/bin/env bash
# f16_match.sh KILN MODEL [COMPILE FLAGS...] — a decoder with f16 KV caches
# (a Lua decoder{} with x:cache(..., {dtype="f16"}), or an ONNX one with
# --kv-cache=300 --kv-dtype=f16) compiled once (--isa=portable: the file
# holds every width's path; native would hold only the host's), its C
# built three ways:
# -march=native (AVX-512's 16-wide vcvtph2ps where this CPU has it),
# -march=native -mno-avx512f (F16C's 8-wide) and -march=native -mno-f16c
# -mno-avx512f (the portable branch-free widening). Each runs
# tests/decode/logits_dump.c (a prompt, then steps to a full cache); the
# logits must be the same bytes. Where the CPU has F16C, the first two
# builds must contain vcvtph2ps and the third none, so the test cannot
# pass by comparing one path with itself.
set -euo pipefail
kiln=$1 model=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
case $model in
  *.onnx) src=(--kv-cache=300 --kv-dtype=f16) ;;
  *) src=() ;;
esac
"$kiln" compile "$model" "${src[@]}" --isa=portable -q --name dec -o "$dir/dec.c" "$@"
grep -q "vcvtph2ps" "$dir/dec.c" || { echo "f16_match: the generated C has no hardware f16 path" >&2; exit 1; }
builds=("avx512|-march=native" "f16c|-march=native -mno-avx512f" "portable|-march=native -mno-f16c -mno-avx512f")
for b in "${builds[@]}"; do
  name=${b%%|*} flags=${b#*|}
  # shellcheck disable=SC2086
  cc -O2 $flags -ffp-contract=fast -std=gnu11 -Wall -Wextra -Werror -c "$dir/dec.c" -o "$dir/$name.o"
  # shellcheck disable=SC2086
  cc -O2 $flags -std=gnu11 -Wall -Wextra -Werror -I"$dir" -DMODEL_H='"dec.h"' -DM=dec -DMU=DEC \
    "$here/logits_dump.c" "$dir/$name.o" -lm -o "$dir/$name"
  "$dir/$name" "$dir/$name.bin"
done
if grep -qw f16c /proc/cpuinfo 2>/dev/null && command -v objdump >/dev/null; then
  for name in avx512 f16c portable; do
    objdump -d "$dir/$name.o" >"$dir/$name.s"
  done
  for name in avx512 f16c; do
    grep -q vcvtph2ps "$dir/$name.s" || { echo "f16_match: the $name build has no vcvtph2ps" >&2; exit 1; }
  done
  if grep -q vcvtph2ps "$dir/portable.s"; then
    echo "f16_match: the portable build has vcvtph2ps" >&2
    exit 1
  fi
fi
for name in f16c portable; do
  cmp "$dir/avx512.bin" "$dir/$name.bin" || { echo "f16_match: the $name build's logits differ" >&2; exit 1; }
done
echo "f16_match: $(($(stat -c %s "$dir/avx512.bin") / 4)) logits, the same bytes with AVX-512, F16C and portable f16 widening"
