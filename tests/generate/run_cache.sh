#!/usr/bin/env bash
# run_cache.sh KILN MODEL.lua ISA THREADS [TOLERANCE [KILN ARGS...]] — compile a decoder{}
# model for one --isa/--threads setting, build tests/generate/cache_app.c
# against it (-Wall -Wextra -Werror) and check that prefill + steps give
# what prefill of the whole sequence gives, bit for bit unless a
# tolerance is given, and that a full cache is refused.
set -euo pipefail
kiln=$1 model=$2 isa=$3 threads=$4 tol=${5:-0}
shift 5 2>/dev/null || shift $#
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$kiln" compile "$model" -o "$dir/dec.c" --isa="$isa" --threads "$threads" "$@"
omp=""
[ "$threads" -gt 1 ] && omp=-pthread
march=-march=native
[ "$isa" = generic ] && march=""
cc -O2 $march -std=c11 -Wall -Wextra -Werror $omp -I"$dir" -DMODEL_H='"dec.h"' -DM=dec -DMU=DEC \
  "$here/cache_app.c" "$dir/dec.c" -lm -o "$dir/cache_app"
"$dir/cache_app" "$tol"
