#!/usr/bin/env bash
# run_export.sh KILN — tests of `kiln export`.
#
# First bad input: each case must exit 1 with one stderr line "kiln: ..."
# holding the expected text, print nothing on stdout, and leave no output
# file (nor temp file) behind. Then check_export.py exports the model
# fixtures, the fusion pass tests, tests/export/*.kir and a sample of ONNX
# node tests, validates each file with onnx.checker and compares ONNX
# Runtime's outputs with `kiln run`'s. check_export.py needs the venv
# tools/venv.sh makes (PyPI onnxruntime); when it cannot be made the test
# is skipped (exit 77). Ends with "N passed, N failed".
set -u
kiln=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-export.XXXXXX")
trap 'rm -rf "$work"' EXIT
model=$root/tests/models/encoder_2l_op14/model.onnx
pass=0 fail=0

# bad NAME WANT ARG...: `kiln export ARG...` in a fresh folder (@OUT is a
# path in it) must fail cleanly with WANT in its message
bad() {
  local name=$1 want=$2 dir=$work/bad_$1 arg
  shift 2
  mkdir -p "$dir/out"
  local -a argv=()
  for arg in "$@"; do argv+=("${arg//@OUT/$dir/out/model.onnx}"); done
  local rc why=""
  (cd "$dir/out" && "$kiln" export "${argv[@]}") >"$dir/stdout" 2>"$dir/stderr"
  rc=$?
  [ "$rc" = 1 ] || why="exit status $rc; expected 1"
  [ -z "$why" ] && [ "$(wc -l <"$dir/stderr")" != 1 ] && why="$(wc -l <"$dir/stderr") stderr lines; expected 1"
  [ -z "$why" ] && ! grep -q "^kiln: .*$want" "$dir/stderr" && why="message '$(cat "$dir/stderr")' lacks '$want'"
  [ -z "$why" ] && [ -s "$dir/stdout" ] && why="stdout is not empty"
  [ -z "$why" ] && [ -n "$(ls -A "$dir/out")" ] && why="left behind: $(ls -A "$dir/out" | tr '\n' ' ')"
  if [ -z "$why" ]; then pass=$((pass + 1)); echo "ok   bad:$name"
  else fail=$((fail + 1)); echo "FAIL bad:$name: $why"; fi
}

# -o makes missing folders (as compile's does); a file in the way of one is refused
touch "$work/a_file"
bad unwritable_path "a file of that name is in the way" "$model" -o "$work/a_file/sub/model.onnx"
bad no_output "no output file; expected -o OUT.onnx" "$model"
bad not_onnx_suffix "expected a file name ending in .onnx" "$model" -o "$work/bad_not_onnx_suffix/out/model.c"
bad no_such_model "missing.onnx" "$work/missing.onnx" -o @OUT
bad untyped "has no inferred type; expected the infer pass" "$model" --passes= -o @OUT
bad gelu_opset8 "no ONNX form at opset 8; expected opset 9" "$here/bad/gelu_opset8.kir" -o @OUT
bad unknown_pass "unknown pass 'fusion'" "$model" --passes=bind,fusion -o @OUT

if ! py=$(bash "$root/tools/venv.sh"); then
  echo "$pass passed, $fail failed (bad input only: no onnxruntime venv, skipping the rest)"
  [ "$fail" = 0 ] && exit 77
  exit 1
fi
"$py" "$here/check_export.py" "$kiln" | tee "$work/log"
read -r p _ f _ < <(tail -n 1 "$work/log")
pass=$((pass + ${p:-0})) fail=$((fail + ${f:-1}))
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
