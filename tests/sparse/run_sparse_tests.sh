#!/usr/bin/env bash
# run_sparse_tests.sh KILN — kiln's Sparsemax and Entmax15 ops
# (compiler/ops/sparsemax.c) against an independent numpy reference
# (tests/sparse/make_cases.py wrote tests/sparse/cases/), for each case:
#
#   1. the generated C and 2. the interpreter, `kiln check` on model.kir
#      (f32: rtol 1e-6, atol 1e-9; f64: rtol 1e-12, atol 1e-15);
#   3. the standard-op decomposition: `kiln export` to ONNX, then
#      `kiln check` of that file (its f32 sums round in f32: rtol 1e-5,
#      atol 1e-6), and 4. the same file under ONNX Runtime when the venv
#      (tools/venv.sh) can be had, else that step is skipped with a note;
#
# then bad input (tests/sparse/bad/*.kir): exit status 1, one stderr line
# holding the expected text, no output file. Prints one line per check and
# "N passed, N failed"; exits 1 if any failed.
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
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-sparse.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# record NAME STATUS LOG: one line per check, the log of a failure after it
record() {
  if [ "$2" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok    $1"
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
  if grep -q 'f64\[' "$dir/model.kir"; then
    tol="--rtol=1e-12 --atol=1e-15" lowered_tol="--rtol=1e-12 --atol=1e-15" ort_tol="1e-12 1e-15"
  else
    tol="--rtol=1e-6 --atol=1e-9" lowered_tol="--rtol=1e-5 --atol=1e-6" ort_tol="1e-5 1e-6"
  fi
  # shellcheck disable=SC2086
  "$kiln" check -q $tol "$dir" >"$work/log" 2>&1
  record "$name: generated C" $? "$work/log"
  # shellcheck disable=SC2086
  "$kiln" check -q --interp $tol "$dir" >"$work/log" 2>&1
  record "$name: interpreter" $? "$work/log"

  mkdir -p "$work/$name"
  ln -s "$dir/test_data_set_0" "$work/$name/test_data_set_0"
  # shellcheck disable=SC2086
  "$kiln" export "$dir/model.kir" -o "$work/$name/model.onnx" >"$work/log" 2>&1 &&
    "$kiln" check -q $lowered_tol "$work/$name" >>"$work/log" 2>&1
  record "$name: exported to standard ONNX ops, kiln check" $? "$work/log"
  if [ -n "$py" ] && [ -f "$work/$name/model.onnx" ]; then
    # shellcheck disable=SC2086
    "$py" "$here/ort_check.py" "$work/$name/model.onnx" "$dir/test_data_set_0" $ort_tol >"$work/log" 2>&1
    record "$name: exported to standard ONNX ops, ONNX Runtime" $? "$work/log"
  fi
done

# bad input: bad CMD FILE TEXT (tests/lib/bad_case.sh)
. "$root/tests/lib/bad_case.sh"

bad compile int_input.kir "node 'Sparsemax_0' (Sparsemax): input 'x' is i64; expected f32 or f64"
bad compile axis_out_of_range.kir "node 'Entmax15_0' (Entmax15): axis 2 is out of range for rank 2; expected [-2, 1]"
bad compile axis_negative.kir "node 'Sparsemax_0' (Sparsemax): axis -3 is out of range for rank 2; expected [-2, 1]"
bad compile scalar_input.kir "node 'Entmax15_0' (Entmax15): input 'x' is a scalar; expected rank >= 1"
bad export export_opset12.kir "node 'Entmax15_0' (Entmax15): export: no ONNX form at opset 12; expected opset 13 or later"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
