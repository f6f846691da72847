#!/usr/bin/env bash
# run_dsl_tests.sh KILN — the Lua DSL core against ONNX Runtime: for each
# tests/dsl/*.lua, `kiln export` it, make seeded inputs and ONNX Runtime's
# outputs on the exported model (make_case.py), then `kiln check --model`
# the script itself through generated C and through the interpreter
# (rtol 1e-4, atol 1e-5). Exit 77 (skip) when the onnxruntime venv cannot
# be made. Ends with "N passed, N failed".
set -uo pipefail
kiln=$1
here=$(cd "$(dirname "$0")" && pwd)
py=$(bash "$here/../../tools/venv.sh") || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
for s in "$here"/*.lua; do
  name=$(basename "$s" .lua)
  dir=$work/$name
  mkdir -p "$dir"
  if ! "$kiln" export "$s" -o "$dir/model.onnx" || ! "$py" "$here/make_case.py" "$dir/model.onnx" "$dir"; then
    echo "FAIL $name: export or ONNX Runtime"; fail=$((fail + 1)); continue
  fi
  for mode in "" --interp; do
    if "$kiln" check "$dir" --model "$s" -q $mode; then
      pass=$((pass + 1))
    else
      echo "FAIL $name ${mode:-(generated C)}"; fail=$((fail + 1))
    fi
  done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
