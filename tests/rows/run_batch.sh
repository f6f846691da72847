#!/usr/bin/env bash
# run_batch.sh KILN MODE WORK_DIR — an encoder's batched entry point
# (NAME_run_batch, docs/batch.md; tests/rows/check_batch.py does the comparing):
# every sentence of a batch bit-identical to its own NAME_run_rows run, bad
# batches KILN_E_ARG with nothing written.
#   tiny    examples/bert.lua --set preset=tiny at seq 24, twelve sentences of
#           1, 24, 5, 17, 2, 23, 1, 1, 1, 1, 12 and 11 tokens (the mask input
#           1 before each count): batches pack (emit_pack.h), so sentences
#           run alone, in packs of 2 (23 + 1), 3 (5 + 17 + 2: 24 rows, the
#           compiled length) and 4 (1 + 1 + 1 + 12); again with the mask 1
#           past the count in sentences 2 and 5 (they must run alone, as
#           NAME_run_rows reads that mask whole), and with --precision=bf16
#           (the bf16 products, AMX where the CPU grants it); then two graphs with a
#           per-sentence value (y = MatMul(h, W2) * ReduceSum(h) over the
#           tokens, h = MatMul(x, W1)): its sum and product next to each other
#           (they pack, the product framed with the sum beside it) and with
#           the second MatMul between them (the sum would outlive the
#           per-sentence loop: no packs, and the batch still right); then a
#           model whose input is `batch` and output `rows`: renamed batch_ and
#           rows_ in the entry points, and the C builds
#   minilm  the real all-MiniLM-L6-v2 ONNX file (tools/minilm.py export;
#           skipped, 77, when it is not there): ten sentences of 7, 128,
#           16, 1, 100, 3, 60, 60, 9 and 30 tokens (packs of 16 + 1 + 100 and
#           3 + 60 + 60), both outputs (the in-graph mean pooling, per
#           sentence in a pack); the 9-token one's mask 1 past its count, so
#           that it runs alone (its pooling divides by the whole mask's sum,
#           as NAME_run_rows reads it) and the 30-token one after it too
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
    --fill input_ids=ids:30522 --fill attention_mask=mask:1 --counts 7,128,16,1,100,3,60,60,9,30 --mask-past 8 \
    --packs yes
fi
for run in plain past bf16; do
  past=$([ $run = past ] && echo 2,5 || true)
  /usr/bin/python3 "$here/check_batch.py" "$kiln" "$root/examples/bert.lua" "$work/tiny-$run" \
    --rows-axis=input_ids:1,token_type_ids:1 --fill input_ids=ids:1000 --fill attention_mask=mask:1 \
    --counts 1,24,5,17,2,23,1,1,1,1,12,11 --mask-past "$past" --packs yes \
    -- --set preset=tiny --set seq=24 --set pooler=false $([ $run = bf16 ] && echo --precision=bf16)
done

# a per-sentence value: y = MatMul(h, W2) * ReduceSum(h, tokens), h = MatMul(x, W1)
for order in near apart; do
  /usr/bin/python3 - "$work/sum_$order.onnx" "$order" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(5)
w1 = numpy_helper.from_array(rng.uniform(-1, 1, (4, 6)).astype(np.float32), "w1")
w2 = numpy_helper.from_array(rng.uniform(-1, 1, (6, 6)).astype(np.float32), "w2")
axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
h = helper.make_node("MatMul", ["x", "w1"], ["h"])
z = helper.make_node("MatMul", ["h", "w2"], ["z"])
sm = helper.make_node("ReduceSum", ["h", "axes"], ["s"], keepdims=1)
y = helper.make_node("Mul", ["z", "s"], ["y"])
nodes = [h, z, sm, y] if sys.argv[2] == "near" else [h, sm, z, y]
g = helper.make_graph(nodes, "sum", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6])], [w1, w2, axes])
open(sys.argv[1], "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
PY
  /usr/bin/python3 "$here/check_batch.py" "$kiln" "$work/sum_$order.onnx" "$work/sum-$order" --rows-axis=x:1 \
    --counts 3,5,8,1,1,2,7 --packs "$([ $order = near ] && echo yes || echo no)"
done

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
