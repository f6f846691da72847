#!/bin/sh
# check_threaded.sh — one threaded-code test: KILN CASE_DIR ISA CFLAGS [KILN_FLAGS...]
# 1. `kiln compile --threads 2` marks at least one loop of the case for
#    threads (KILN_PARALLEL_FOR; else the case would test serial code only)
#    at this --isa's width or, failing that, at another width;
# 2. that file builds warning-free WITHOUT -pthread (the loops then run
#    serially: the macro is the plain loop);
# 3. `kiln check --threads 2` (built with -pthread) agrees with the
#    case's reference data.
set -eu
kiln=$1 dir=$2 isa=$3 cflags=$4
shift 4
tmp=$(mktemp -d /tmp/kiln-threads-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$kiln" compile --threads 2 --isa="$isa" "$@" "$dir/model.onnx" -o "$tmp/model.c"
if ! grep -q '^ *KILN_PARALLEL_FOR(' "$tmp/model.c"; then
  # --isa=avx2/avx512 write one vector width: its tiles may leave a small
  # case no loop of two iterations (matmul_kblock's 16 rows are one tile
  # of 6 and the rest at 8 wide). That is right when the case threads at
  # another width; a case that threads at none fails.
  "$kiln" compile --threads 2 --isa=portable "$@" "$dir/model.onnx" -o "$tmp/portable.c"
  if ! grep -q '^ *KILN_PARALLEL_FOR(' "$tmp/portable.c"; then
    echo "FAIL $dir: kiln compile --threads 2 marked no loop for threads (--isa=$isa, nor any width of --isa=portable)"
    exit 1
  fi
  echo "note: $dir: no loop worth two threads at --isa=$isa's width (threaded at another width)"
fi
# shellcheck disable=SC2086 # CFLAGS is a list of flags
${CC:-cc} -std=c99 $cflags -Wall -Wextra -Werror -c "$tmp/model.c" -o "$tmp/model.o"
"$kiln" check -q --threads 2 --isa="$isa" "--cflags=$cflags" "$@" "$dir"
