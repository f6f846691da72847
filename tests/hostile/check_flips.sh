#!/bin/sh
# check_flips.sh KILN WORK — compiles small_blob.lua with --weights-mode=blob
# and runs flip_bits.c on its blob under gcc and clang (issue 21).
set -eu
kiln=$1 work=$2 here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
"$kiln" compile "$here/small_blob.lua" --weights-mode=blob -o "$work/sb.c"
for cc in gcc clang; do
  command -v $cc >/dev/null || continue
  $cc -std=c11 -O2 -Wall -Wextra -Werror -I"$work" "$here/flip_bits.c" "$work/sb.c" -lm -o "$work/flip_$cc"
  echo "$cc:"
  "$work/flip_$cc" "$work/sb.weights.bin"
done
