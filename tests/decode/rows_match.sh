#!/usr/bin/env bash
# rows_match.sh KILN MODEL PREFILL ISA THREADS [COMPILE FLAGS...] — a decoder
# (an ONNX one exported with its past, compiled --kv-cache=32; or a Lua
# decoder{}) compiled twice, with every pass and with every pass but
# bound_rows, both linked into tests/decode/rows_match.c: each prefill
# length 1 .. PREFILL must give the same logits and caches bit for bit.
# Also checks that the bounded build has the rows bound in its f32 GEMMs
# (m_run), so the test cannot pass by comparing two unbounded builds.
set -euo pipefail
kiln=$1 model=$2 prefill=$3 isa=$4 threads=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
passes=$("$kiln" passes | awk '$1 != "bound_rows" { printf "%s%s", sep, $1; sep = "," }')
case $model in
  *.onnx) src=(--kv-cache=32 --prefill="$prefill") ;;
  *) src=() ;;
esac
mkdir -p "$dir/dec" "$dir/ref"
"$kiln" compile "$model" "${src[@]}" --isa="$isa" --threads "$threads" -q --name dec -o "$dir/dec/dec.c" "$@"
"$kiln" compile "$model" "${src[@]}" --isa="$isa" --threads "$threads" -q --name ref -o "$dir/ref/ref.c" \
  --passes="$passes" "$@"
grep -q "m_run = " "$dir/dec/dec.c" || { echo "rows_match: the bounded build has no rows bound (m_run)" >&2; exit 1; }
if grep -q "m_run = " "$dir/ref/ref.c"; then
  echo "rows_match: the build without bound_rows has a rows bound" >&2
  exit 1
fi
omp=""
[ "$threads" -gt 1 ] && omp=-pthread
march=-march=native
[ "$isa" = generic ] && march=""
for m in dec ref; do
  cc -O2 $march -std=c11 -Wall -Wextra -Werror $omp -c "$dir/$m/$m.c" -o "$dir/$m.o"
done
cc -O2 -std=c11 -Wall -Wextra -Werror -I"$dir/dec" -I"$dir/ref" -DDEC_HEADER='"dec.h"' -DREF_HEADER='"ref.h"' \
  "$here/rows_match.c" "$dir/dec.o" "$dir/ref.o" $omp -lm -o "$dir/rows_match"
"$dir/rows_match"
