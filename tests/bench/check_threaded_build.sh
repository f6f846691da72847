#!/usr/bin/env bash
# check_threaded_build.sh KILN MODEL — `kiln bench --threads 2` must build a
# timing program that really starts threads: its model code compiled with
# -pthread, so the program calls pthread_create (kiln_rt.h's pool). (A
# build that dropped -pthread still compiles — KILN_PARALLEL_FOR is then
# the plain loop — and silently times the serial code.) Needs nm (binutils).
set -euo pipefail
kiln=${1:?usage: check_threaded_build.sh KILN MODEL}
model=${2:?usage: check_threaded_build.sh KILN MODEL}
command -v nm >/dev/null || { echo "skip: no nm" >&2; exit 77; }
out=$("$kiln" bench "$model" --runs 3 --threads 2 --keep)
dir=$(printf '%s\n' "$out" | sed -n 's/^  build folder kept: \([^ ]*\) .*/\1/p')
[ -n "$dir" ] && [ -x "$dir/bench" ] || { echo "FAIL: no kept timing program in: $out" >&2; exit 1; }
trap 'rm -rf "$dir"' EXIT
syms=$(nm "$dir/bench") # not piped into grep -q: pipefail would see nm's SIGPIPE
if ! grep -q 'pthread_create' <<<"$syms"; then
  echo "FAIL: $dir/bench starts no thread: the model was not compiled with -pthread" >&2
  exit 1
fi
echo "ok: the --threads 2 timing program starts the pool's threads"
