#!/usr/bin/env bash
# check_threaded_build.sh KILN MODEL — `kiln bench --threads 2` must build a
# timing program that really forks threads: its model code compiled with
# -fopenmp, so the program calls libgomp's GOMP_parallel. (A build that
# dropped -fopenmp still compiles — KILN_PARALLEL_FOR is then empty — and
# silently times the serial code.) Needs nm (binutils).
set -euo pipefail
kiln=${1:?usage: check_threaded_build.sh KILN MODEL}
model=${2:?usage: check_threaded_build.sh KILN MODEL}
command -v nm >/dev/null || { echo "skip: no nm" >&2; exit 77; }
out=$("$kiln" bench "$model" --runs 3 --threads 2 --keep)
dir=$(printf '%s\n' "$out" | sed -n 's/^  build folder kept: \([^ ]*\) .*/\1/p')
[ -n "$dir" ] && [ -x "$dir/bench" ] || { echo "FAIL: no kept timing program in: $out" >&2; exit 1; }
trap 'rm -rf "$dir"' EXIT
syms=$(nm "$dir/bench") # not piped into grep -q: pipefail would see nm's SIGPIPE
if ! grep -q 'GOMP_parallel' <<<"$syms"; then
  echo "FAIL: $dir/bench has no OpenMP parallel region: the model was not compiled with -fopenmp" >&2
  exit 1
fi
echo "ok: the --threads 2 timing program forks OpenMP threads"
