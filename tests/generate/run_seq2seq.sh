#!/usr/bin/env bash
# run_seq2seq.sh KILN MODEL.lua ISA THREADS PREFILL_N TOLERANCE [KILN ARGS...]
# — an encoder–decoder script compiled twice for one --isa/--threads
# setting, as it is (the whole target per call) and with --set cache=true
# (decoder{}: encode, prefill, step); tests/generate/seq2seq_match.c checks
# that decoding with the cache gives the full model's logits at every
# position, within TOLERANCE, the first PREFILL_N tokens in one prefill.
set -euo pipefail
kiln=$1 model=$2 isa=$3 threads=$4 prefill_n=$5 tol=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$kiln" compile "$model" --name full -o "$dir/full.c" --isa="$isa" --threads "$threads" "$@"
"$kiln" compile "$model" --name cached --set cache=true -o "$dir/cached.c" --isa="$isa" --threads "$threads" "$@"
omp=""
[ "$threads" -gt 1 ] && omp=-pthread
march=-march=native
[ "$isa" = generic ] && march=""
cc -O2 $march -std=c11 -Wall -Wextra -Werror $omp -I"$dir" "$here/seq2seq_match.c" "$dir/full.c" "$dir/cached.c" \
  $(ls "$dir"/*_weights.S 2>/dev/null) -lm -o "$dir/match"
"$dir/match" "$prefill_n" "$tol"
