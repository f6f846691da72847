#!/usr/bin/env bash
# check_fused.sh KILN DIR OP=N ... — the fusion of a Hugging Face export
# (tests/hf/<arch>/, tools/export_hf_fixtures.py) has not regressed: in
# `kiln info DIR/model.onnx` (or model.kir)'s node table, each OP=N names an op whose
# "compiled" count must be exactly N (OP=0: none of it is left, e.g.
# Softmax=0 once every attention fuses). Exit 1 with the lines that differ.
set -u
kiln=$1 dir=$2; shift 2
model=$dir/model.onnx
[ -f "$model" ] || model=$dir/model.kir
info=$("$kiln" info "$model") || { echo "FAIL: kiln info $model failed"; exit 1; }
table=$(echo "$info" | sed -n '/^nodes/,/ total /p')
fail=0
for want in "$@"; do
  op=${want%%=*} n=${want#*=}
  got=$(echo "$table" | awk -v op="$op" '$1 == op { print $NF } $1 == "nodes" && $2 == op { print $NF }')
  got=${got:-0}
  if [ "$got" != "$n" ]; then
    echo "FAIL: $dir: $op compiled $got times; expected $n"
    fail=1
  fi
done
[ $fail = 0 ] && echo "ok: $dir: $*"
exit $fail
