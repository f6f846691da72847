#!/usr/bin/env bash
# run_batch.sh KILN MODE WORK_DIR — an encoder's batched entry point
# (NAME_run_batch, docs/batch.md; tests/rows/check_batch.py does the comparing):
# every sentence of a batch bit-identical to its own NAME_run_rows run, bad
# batches KILN_E_ARG with nothing written.
#   tiny    examples/bert.lua --set preset=tiny at seq 24, six sentences of
#           1, 24, 5, 17, 2 and 23 tokens (the mask input 1 before each count);
#           then a model whose input is `batch` and output `rows`: renamed
#           batch_ and rows_ in the entry points, and the C builds
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
/usr/bin/python3 "$here/check_batch.py" "$kiln" "$root/examples/bert.lua" "$work" \
  --rows-axis=input_ids:1,token_type_ids:1 --fill input_ids=ids:1000 --fill attention_mask=mask:1 \
  --counts 1,24,5,17,2,23 -- --set preset=tiny --set seq=24 --set pooler=false

# a model whose input is named `batch` and output `rows`, the entry points'
# own parameter names: they become batch_ and rows_, and the C builds
/usr/bin/python3 - "$work/names.onnx" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper
table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
g = helper.make_graph([helper.make_node("Gather", ["table", "batch"], ["e"]),
                       helper.make_node("MatMul", ["e", "w"], ["rows"])], "names",
                      [helper.make_tensor_value_info("batch", TensorProto.INT64, [1, 8])],
                      [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [1, 8, 4])], [table, w])
open(sys.argv[1], "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
PY
"$kiln" compile "$work/names.onnx" --rows-axis=batch:1 --name names -o "$work/names.c"
if ! grep -q "int names_run_batch(const int64_t batch_\[\]\[1\]\[8\],\$" "$work/names.h" ||
  ! grep -q "float rows_\[\]\[1\]\[8\]\[4\],\$" "$work/names.h"; then
  echo "batch: FAIL: names_run_batch's parameters:"
  grep -A3 "names_run_batch(" "$work/names.h"
  exit 1
fi
# shellcheck disable=SC2086  # KILN_APP_CFLAGS is a list of flags
cc -std=c99 -O1 -Wall -Wextra -Werror -Wshadow ${KILN_APP_CFLAGS:-} -c "$work/names.c" -o "$work/names.o"
echo "batch: an input named batch and an output named rows: batch_, rows_; the C builds"
