#!/usr/bin/env bash
# run_tests.sh KILN — kiln's Entmax op (compiler/ops/entmax.c) and
# nn.entmax_attention's alpha against tests/entmax/reference.py (numpy
# bisection, independent of kiln's; tests/entmax/make_cases.py wrote
# tests/entmax/cases/). For each case:
#
#   1. the generated C and 2. the interpreter, `kiln check` (model.kir, or
#      model.lua with its w.safetensors: --model);
#   3. kiln export's lowering to standard ONNX ops (an unrolled bisection),
#      `kiln check` of the exported file, and 4. the same file under ONNX
#      Runtime when the venv (tools/venv.sh) can be had, else skipped;
#
# tolerances: the op, f32 rtol 1e-6 atol 1e-9, f64 rtol 1e-10 atol 1e-13
# (the reference's own error at alpha = 1.0001: its pow amplifies one
# rounding 1/(alpha-1) times); the lowering, f32 rtol 1e-5 atol 1e-6;
# a whole attention layer in Lua (f32 products), rtol 1e-4 atol 1e-5.
# Then bad input (tests/entmax/bad/*.kir): exit status 1, one stderr line
# holding the expected text, no output file. Prints one line per check with
# the largest max_abs_err of its outputs, and "N passed, N failed"; exits 1
# if any failed.
set -u
export LC_ALL=C

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 KILN_BINARY" >&2
  exit 2
fi
kiln=$1
case $kiln in /*) ;; *) kiln=$PWD/$kiln ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-entmax.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# record NAME STATUS LOG: one line per check (with the largest max_abs_err
# the log shows), the log of a failure after it
record() {
  local worst
  worst=$(grep -o 'max_abs_err [^ ]*' "$3" | awk '{ if ($2 + 0 >= m + 0) m = $2 } END { if (NR) print "max_abs_err " m }')
  if [ "$2" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok    $1${worst:+  ($worst)}"
  else
    failed=$((failed + 1))
    echo "FAIL  $1"
    sed 's/^/      /' "$3"
  fi
}

py=$(bash "$root/tools/venv.sh" 2>/dev/null) || py=
[ -n "$py" ] || echo "note: no ONNX Runtime venv (tools/venv.sh); the ORT step is skipped"

for dir in "$here"/cases/*/; do
  dir=${dir%/}
  name=$(basename "$dir")
  model=(--model "$dir/model.lua")
  [ -f "$dir/model.kir" ] && model=()
  if [ -f "$dir/model.lua" ]; then
    tol="--rtol=1e-4 --atol=1e-5" lowered_tol=$tol ort_tol="1e-4 1e-5"
  elif grep -q 'f64\[' "$dir/model.kir"; then
    tol="--rtol=1e-10 --atol=1e-13" lowered_tol=$tol ort_tol="1e-10 1e-13"
  else
    tol="--rtol=1e-6 --atol=1e-9" lowered_tol="--rtol=1e-5 --atol=1e-6" ort_tol="1e-5 1e-6"
  fi
  # shellcheck disable=SC2086
  "$kiln" check $tol "$dir" "${model[@]}" >"$work/log" 2>&1
  record "$name: generated C" $? "$work/log"
  # shellcheck disable=SC2086
  "$kiln" check --interp $tol "$dir" "${model[@]}" >"$work/log" 2>&1
  record "$name: interpreter" $? "$work/log"

  mkdir -p "$work/$name"
  ln -s "$dir/test_data_set_0" "$work/$name/test_data_set_0"
  src=$dir/model.kir
  [ -f "$src" ] || src=$dir/model.lua
  # shellcheck disable=SC2086
  "$kiln" export "$src" -o "$work/$name/model.onnx" >"$work/log" 2>&1 &&
    "$kiln" check $lowered_tol "$work/$name" >>"$work/log" 2>&1
  record "$name: exported to standard ONNX ops, kiln check" $? "$work/log"
  if [ -n "$py" ] && [ -f "$work/$name/model.onnx" ]; then
    # shellcheck disable=SC2086
    "$py" "$root/tests/sparse/ort_check.py" "$work/$name/model.onnx" "$dir/test_data_set_0" $ort_tol >"$work/log" 2>&1
    record "$name: exported to standard ONNX ops, ONNX Runtime" $? "$work/log"
  fi
done

# bad input: bad CMD FILE TEXT (tests/lib/bad_case.sh)
. "$root/tests/lib/bad_case.sh"

range="expected 1 <= alpha <= 2 (1: softmax, 2: sparsemax)"
bad compile alpha_attr_high.kir "node 'Entmax_0' (Entmax): alpha 2.5 is outside [1, 2]; $range"
bad compile alpha_attr_low.kir "node 'Entmax_0' (Entmax): alpha 0.9 is outside [1, 2]; $range"
bad compile alpha_const_out_of_range.kir "node 'Entmax_0' (Entmax): Alpha 'a' element 2 is 2.25; $range"
bad compile alpha_const_nan.kir "node 'Entmax_0' (Entmax): Alpha 'a' element 1 is nan; $range"
bad compile alpha_dtype.kir "node 'Entmax_0' (Entmax): input Alpha 'a' is f64; expected f32 like X"
bad compile alpha_along_axis.kir "node 'Entmax_0' (Entmax): input Alpha 'a' is f32[2,4]; expected a shape that broadcasts to X f32[2,4] with size 1 along axis 1 (per head: [1, H, 1, 1])"
bad compile alpha_shape.kir "node 'Entmax_0' (Entmax): input Alpha 'a' is f32[1,2,1]; expected a shape that broadcasts to X f32[2,3,4] with size 1 along axis 2"
bad compile alpha_both.kir "node 'Entmax_0' (Entmax): both an attribute alpha and an input Alpha ('a'); expected one of them"
bad compile int_input.kir "node 'Entmax_0' (Entmax): input 'x' is i64; expected f32 or f64"
bad compile axis_out_of_range.kir "node 'Entmax_0' (Entmax): axis 2 is out of range for rank 2; expected [-2, 1]"
bad export export_opset12.kir "node 'Entmax_0' (Entmax): export: no ONNX form at opset 12; expected opset 13 or later"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
