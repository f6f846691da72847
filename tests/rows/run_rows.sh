#!/usr/bin/env bash
# run_rows.sh KILN MODE WORK_DIR — an encoder's run-time token count
# (--rows-axis, docs/rows.md; tests/rows/check_rows.py does the comparing).
#   tiny    examples/bert.lua --set preset=tiny at seq 24: NAME_run_rows(n)
#           bit-identical to the build without the option on inputs padded
#           from n (the mask 0 there), for n = 1, 2, 5, 16, 17, 23, 24, with
#           other ids and mask values past n (the mask is listed too: the
#           count hides it) and a NaN-filled workspace; rows past n are 0;
#           counts 0 and 25 are KILN_E_ARG. Then the refusals: one line
#           each, exit 1, naming the node or the option's fault.
#   minilm  the real all-MiniLM-L6-v2 ONNX file (tools/minilm.py export;
#           skipped, 77, when it is not there): both outputs, the in-graph
#           mean pooling included, bit-identical for n = 1, 7, 16, 17, 100.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 KILN tiny|minilm WORK_DIR" >&2; exit 2; }
kiln=$1 mode=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"

if [ "$mode" = minilm ]; then
  model=${KILN_MINILM_DIR:-$root/build/minilm}/onnx/model.onnx
  [ -f "$model" ] || { echo "rows: SKIP: $model is not there (tools/minilm.py export)"; exit 77; }
  "$py" "$here/check_rows.py" "$kiln" "$model" "$work/minilm" --rows-axis=input_ids:1,token_type_ids:1 \
    --fill input_ids=ids:30522 --fill attention_mask=mask:1 --counts 1,7,16,17,100
  # the mask listed too: its sum (the pooling's count of tokens) would read past the count
  out=$("$kiln" compile "$model" --rows-axis=input_ids:1,attention_mask:1 -o "$work/refused.c" 2>&1) && rc=0 || rc=$?
  [ $rc = 1 ] && [[ "$out" == *"node '/bert/ReduceSum_1' (ReduceSum)"*"sums over it"* ]] ||
    { echo "rows: FAIL: the listed mask: exit $rc: $out"; exit 1; }
  echo "rows: refused as expected: $out"
  exit 0
fi

"$py" "$here/check_rows.py" "$kiln" "$root/examples/bert.lua" "$work/tiny" \
  --rows-axis=input_ids:1,attention_mask:1,token_type_ids:1 \
  --fill input_ids=ids:1000 --fill attention_mask=mask:1 --counts 1,2,5,16,17,23 \
  -- --set preset=tiny --set seq=24 --set pooler=false

# refuses MODEL ARGS... -- WANT: exit 1, one line, containing WANT
fails=0
refuses() {
  local args=() want out rc=0
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  want=$2
  out=$("$kiln" compile "${args[@]}" -o "$work/refused.c" 2>&1) || rc=$?
  if [ $rc != 1 ] || [ "$(printf '%s\n' "$out" | wc -l)" != 1 ] || [[ "$out" != *"$want"* ]]; then
    echo "rows: FAIL: kiln compile ${args[*]}: exit $rc, wanted 1 and one line with '$want'; got:"
    printf '%s\n' "$out"
    fails=$((fails + 1))
  else
    echo "rows: refused as expected: $out"
  fi
}
tiny=("$root/examples/bert.lua" --set preset=tiny --set seq=16)
refuses "${tiny[@]}" --rows-axis=input_ids:1,token_type_ids:1 -- "node 'Slice_"           # the [CLS] pooler
refuses "${tiny[@]}" --rows-axis=nope:1 -- "the model has no input 'nope'"
refuses "${tiny[@]}" --rows-axis=input_ids:2 -- "axis 2 is out of range for input 'input_ids'"
refuses "${tiny[@]}" --rows-axis=input_ids -- "is not INPUT:AXIS"
refuses "$root/tests/models/encoder_2l_op17/model.onnx" --rows-axis=src:1 -- "not one per token"
refuses "$root/tests/models/gru_encoder/model.onnx" --rows-axis=ids:1 -- "(GRU)"
out=$("$kiln" bench "${tiny[@]}" --rows=4 2>&1) && rc=0 || rc=$?
if [ $rc != 1 ] || [[ "$out" != *"--rows=4 needs --rows-axis"* ]]; then
  echo "rows: FAIL: bench --rows without --rows-axis: exit $rc: $out"
  fails=$((fails + 1))
fi
[ $fails = 0 ] && echo "rows: ok" || { echo "rows: $fails failures"; exit 1; }
