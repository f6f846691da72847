#!/usr/bin/env bash
# check_bert_weights.sh KILN WORK_DIR — examples/bert.lua loads a real
# Hugging Face BertModel checkpoint: bert_ref.py writes random weights under
# HF's names to a .safetensors file and computes BERT's outputs in numpy
# (its own forward pass); kiln compiles bert.lua with --weights FILE, and
# the generated C and the interpreter must match numpy within rtol 1e-4.
# Done twice: as BertModel saves it, and with the "bert." prefix of a task
# model's encoder and the position_ids buffer older files hold (--set
# prefix=bert. --set position_ids=true; interpreter only, to keep it short).
# Exit 0 on agreement, 1 on failure, 77 when the numpy/onnx venv cannot be had.
set -euo pipefail
export LC_ALL=C

if [ $# -ne 2 ]; then
  echo "usage: $0 KILN WORK_DIR" >&2
  exit 2
fi
kiln=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=$(bash "$root/tools/venv.sh") || exit 77
shape=(--layers 2 --d 64 --heads 4 --d-ff 256 --vocab 1000 --max-pos 64 --batch 2 --seq 16)
sets=(--set preset=tiny --set layers=2 --set d=64 --set heads=4 --set d_ff=256 --set vocab=1000
      --set max_pos=64 --set batch=2 --set seq=16)

# run_case DIR PREFIX POSITION_IDS CHECK_FLAGS...: weights + reference, .kir, kiln check
run_case() {
  local dir=$1 prefix=$2 position_ids=$3
  shift 3
  rm -rf "$dir"
  "$py" "$here/bert_ref.py" "$dir" "${shape[@]}" --prefix "$prefix" \
    $([ "$position_ids" = true ] && echo --position-ids)
  "$kiln" opt "$root/examples/bert.lua" "${sets[@]}" --set "prefix=$prefix" \
    --set "position_ids=$position_ids" --weights "$dir/weights.safetensors" --passes=bind \
    -o "$dir/model.kir"
  for flags in "$@"; do
    "$kiln" check "$dir" $flags
  done
}

run_case "$work/hf" "" false "" --interp
run_case "$work/prefixed" "bert." true --interp
# the command a user runs, straight to C
"$kiln" compile "$root/examples/bert.lua" "${sets[@]}" --weights "$work/hf/weights.safetensors" \
  -o "$work/hf/bert.c"
echo "bert.lua with --weights: generated .c $(wc -c <"$work/hf/bert.c") bytes"

# a checkpoint as shipped: the position_ids buffer is not a param of the
# script (position_ids=false), so it is bound without it and named in one
# note; --strict-weights makes it the error it used to be
note=$("$kiln" compile "$root/examples/bert.lua" "${sets[@]}" --set prefix=bert. \
  --weights "$work/prefixed/weights.safetensors" -o "$work/prefixed/bert.c" 2>&1 >/dev/null)
echo "$note"
[ "$(printf '%s\n' "$note" | wc -l)" = 1 ] && grep -q "note: .*1 of .* tensors not used by the model: bert.embeddings.position_ids (i64\[1,64\])" <<<"$note"
if "$kiln" compile "$root/examples/bert.lua" "${sets[@]}" --set prefix=bert. --strict-weights \
     --weights "$work/prefixed/weights.safetensors" -o "$work/prefixed/strict.c" 2>/dev/null; then
  echo "FAIL: --strict-weights accepted an unused tensor" >&2
  exit 1
fi
[ ! -e "$work/prefixed/strict.c" ]
