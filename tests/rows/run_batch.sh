#!/usr/bin/env bash
# run_batch.sh KILN MODE WORK_DIR — an encoder's batched entry point
# (NAME_run_batch, docs/batch.md; tests/rows/check_batch.py does the comparing):
# every sentence of a batch bit-identical to its own NAME_run_rows run, bad
# batches KILN_E_ARG with nothing written.
#   tiny    examples/bert.lua --set preset=tiny at seq 24, six sentences of
#           1, 24, 5, 17, 2 and 23 tokens (the mask input 1 before each count)
#   minilm  the real all-MiniLM-L6-v2 ONNX file (tools/minilm.py export;
#           skipped, 77, when it is not there): five sentences of 7, 128, 16,
#           1 and 100 tokens, both outputs (the in-graph mean pooling)
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 KILN tiny|minilm WORK_DIR" >&2; exit 2; }
kiln=$1 mode=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"
if [ "$mode" = minilm ]; then
  model=${KILN_MINILM_DIR:-$root/build/minilm}/onnx/model.onnx
  [ -f "$model" ] || { echo "batch: SKIP: $model is not there (tools/minilm.py export)"; exit 77; }
  exec /usr/bin/python3 "$here/check_batch.py" "$kiln" "$model" "$work" --rows-axis=input_ids:1,token_type_ids:1 \
    --fill input_ids=ids:30522 --fill attention_mask=mask:1 --counts 7,128,16,1,100
fi
exec /usr/bin/python3 "$here/check_batch.py" "$kiln" "$root/examples/bert.lua" "$work" \
  --rows-axis=input_ids:1,token_type_ids:1 --fill input_ids=ids:1000 --fill attention_mask=mask:1 \
  --counts 1,24,5,17,2,23 -- --set preset=tiny --set seq=24 --set pooler=false
