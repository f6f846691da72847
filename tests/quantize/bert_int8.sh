#!/usr/bin/env bash
# bert_int8.sh KILN WORK_DIR — examples/bert.lua (preset tiny, seq 16) with
# --quantize=int8 against the same model in f32:
#
#   seeded inputs (numpy)                     -> W/test_data_set_0/input_K.pb
#   kiln run (the f32 interpreter)            -> W/test_data_set_0/output_K.pb
#   kiln check W --model bert.lua --quantize=int8   the int8 generated C against
#       them (loose tolerance), then its report: per layer and per output the
#       error against the f32 model, with the cosine of the two outputs
#
# Passes when every output's cosine with the f32 output is >= 0.999. Exit 77
# when the Python venv (numpy, onnx) cannot be had.
set -euo pipefail
export LC_ALL=C
kiln=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=$(bash "$root/tools/venv.sh") || exit 77
args=(--set preset=tiny --set seq=16)
d=$work/test_data_set_0
rm -rf "$work"
mkdir -p "$d"
"$py" - "$d" <<'PY'
import sys
import numpy as np
from onnx import numpy_helper
rng = np.random.default_rng(7)
ids = rng.integers(1, 1000, size=(1, 16)).astype(np.int64)
seg = (np.arange(16) >= 9).astype(np.int64).reshape(1, 16)
mask = (np.arange(16) < 13).astype(np.int64).reshape(1, 16)
for k, a in enumerate([ids, mask, seg]):  # bert.lua's input order (Hugging Face's)
    with open(f"{sys.argv[1]}/input_{k}.pb", "wb") as f:
        f.write(numpy_helper.from_array(a).SerializeToString())
PY
"$kiln" run "$root/examples/bert.lua" "${args[@]}" --input input_ids="$d/input_0.pb" \
  --input attention_mask="$d/input_1.pb" --input token_type_ids="$d/input_2.pb" --out "$d" >/dev/null
"$kiln" check "$work" --model "$root/examples/bert.lua" "${args[@]}" --quantize=int8 --rtol=5e-2 \
  --atol=5e-2 | tee "$work/check.log"
# the "outputs ... against the f32 model" lines: NAME max X RMS Y (of its RMS) cosine C
awk '/against the f32 model$/ && /outputs/ { on = 1; next }
     /^  test_data_set/ { on = 0 }
     on && /cosine/ { n++; if ($NF + 0 < 0.999) { bad++; print "cosine too low: " $0 } }
     END { if (n == 0) { print "no output cosine in the report"; exit 1 } exit bad > 0 }' "$work/check.log"
