#!/usr/bin/env bash
# check_transformer_torch.sh KILN WORK_DIR — examples/transformer.lua loads a
# torch.nn.Transformer state_dict unchanged and computes what PyTorch does:
# transformer_torch.py (Debian's python3-torch) saves a random
# nn.Transformer's weights to .safetensors and PyTorch's logits on padded
# source batches; kiln compiles the script with --weights and the generated
# C (post-norm) and the interpreter (pre-norm, --set pre_norm=true) must
# match within rtol 1e-4. With the same weights, the script's decoding
# form (--set cache=true: encode once, a KV cache, one position per step)
# gives the recomputing model's logits at every target position
# (tests/generate/run_seq2seq.sh, 1e-5). Exit 77 (skip) when torch cannot
# be imported.
set -euo pipefail
export LC_ALL=C

if [ $# -ne 2 ]; then
  echo "usage: $0 KILN WORK_DIR" >&2
  exit 2
fi
kiln=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
"$py" -c 'import torch, onnx' 2>/dev/null || { echo "skip: no torch/onnx for $py" >&2; exit 77; }
shape=(--batch 2 --src-len 16 --tgt-len 12 --vocab 500 --d 64 --heads 4 --d-ff 256 --layers 2)
sets=(--set batch=2 --set src_len=16 --set tgt_len=12 --set vocab=500 --set d=64 --set heads=4
      --set d_ff=256 --set layers=2)

# run_case NAME PRE_NORM CHECK_FLAGS
run_case() {
  local dir=$work/$1 pre_norm=$2 flags=$3
  rm -rf "$dir"
  "$py" "$here/transformer_torch.py" "$dir" "${shape[@]}" $([ "$pre_norm" = true ] && echo --pre-norm)
  "$kiln" opt "$root/examples/transformer.lua" "${sets[@]}" --set "pre_norm=$pre_norm" \
    --weights "$dir/weights.safetensors" --passes=bind -o "$dir/model.kir"
  "$kiln" check "$dir" $flags
}

run_case post_norm false ""
run_case pre_norm true --interp

for c in post_norm:false pre_norm:true; do
  "$root/tests/generate/run_seq2seq.sh" "$kiln" "$root/examples/transformer.lua" native 1 3 1e-5 \
    "${sets[@]/batch=2/batch=1}" --set "pre_norm=${c#*:}" --set prefill=3 --weights "$work/${c%%:*}/weights.safetensors"
done
