#!/usr/bin/env bash
# run_past.sh KILN ISA THREADS [PREFILL [MODEL REFERENCE]] — compile an ONNX
# decoder with a past (default decoder_with_past.onnx and its reference.bin,
# made by tools/make_past_decoder.py; names relative to this folder) with
# --kv-cache=32 for one --isa/--threads setting, then through its public
# API: tests/generate/cache_app.c (prefill + steps == prefill of the whole
# sequence, bit for bit; a full cache refused) and torch_match.c (the
# logits torch gave through its own cache, within 1e-4 relative, at every
# position). PREFILL: --prefill=N ("" or absent: kiln's, min(32, 64)).
# KILN_KV_DTYPE=f16|bf16 compiles with --kv-dtype (and KILN_PAST_TOL sets
# torch_match's tolerance, default 1e-4).
set -euo pipefail
kiln=$1 isa=$2 threads=$3 prefill=${4:-} model=${5:-decoder_with_past.onnx} ref=${6:-reference.bin}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$kiln" compile "$here/$model" --kv-cache=32 ${prefill:+--prefill=$prefill} ${KILN_KV_DTYPE:+--kv-dtype=$KILN_KV_DTYPE} -o "$dir/dec.c" \
  --isa="$isa" --threads "$threads"
omp=""
[ "$threads" -gt 1 ] && omp=-pthread
march=-march=native
[ "$isa" = generic ] && march=""
for app in "$here/../cache_app.c" "$here/torch_match.c"; do
  cc -O2 $march -std=c11 -Wall -Wextra -Werror $omp -I"$dir" -DMODEL_H='"dec.h"' -DM=dec -DMU=DEC \
    "$app" "$dir/dec.c" -lm -o "$dir/$(basename "$app" .c)"
done
"$dir/cache_app" 0
"$dir/torch_match" "$here/$ref" "${KILN_PAST_TOL:-1e-4}"
