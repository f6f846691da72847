#!/usr/bin/env bash
# run_xl.sh KILN — Transformer-XL's memory across calls against ONNX
# Runtime: examples/transformer_xl.lua compiled to C, examples/xl_app.c
# calling it on two segments in a row (the memory in the generated state
# struct) must equal the exported model run twice with the memory passed
# explicitly (xl_two_segments.py; also `kiln run` from the init values).
# Exit 77 (skip) without the onnxruntime venv.
set -uo pipefail
kiln=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
py=$(bash "$root/tools/venv.sh") || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
script=$root/examples/transformer_xl.lua
"$kiln" compile "$script" -o "$work/transformer_xl.c" &&
  cc -std=c99 -O2 -Wall -Wextra -Werror -I"$work" "$root/examples/xl_app.c" "$work/transformer_xl.c" \
     $(ls "$work"/*_weights.S 2>/dev/null) -lm -o "$work/xl_app" &&
  "$kiln" export "$script" -o "$work/xl.onnx" &&
  "$py" "$here/xl_two_segments.py" "$work/xl.onnx" "$work/xl_app" "$work" "$kiln" "$script"
