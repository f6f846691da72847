#!/usr/bin/env bash
# demo.sh — kiln's main job on the default example: compile a PyTorch-
# exported 2-layer transformer encoder (ONNX) to C, build it into a small
# app, run it, and check the compiled model against PyTorch's outputs.
# Expects a built kiln in build/ (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
model=tests/models/encoder_2l_op14
mkdir -p out
echo "== kiln compile $model/model.onnx -o out/encoder.c"
build/kiln compile $model/model.onnx -o out/encoder.c
ls -l out/encoder.c out/encoder.h | awk '{print "   " $5 " bytes  " $9}'
echo "== cc -O2 examples/encoder_app.c out/encoder.c"
cc -std=c99 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=199309L -Iout \
  examples/encoder_app.c out/encoder.c -lm -o out/encoder_app
out/encoder_app
echo "== kiln check $model (generated C vs PyTorch reference outputs)"
build/kiln check $model
