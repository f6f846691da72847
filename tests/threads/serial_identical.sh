#!/bin/sh
# serial_identical.sh KILN MODEL... — --threads 1 and --gemm=packed are the
# defaults and emit no threading at all: the .c and .h they give are
# byte-identical to those of a plain `kiln compile`.
set -eu
kiln=$1
shift
tmp=$(mktemp -d /tmp/kiln-serial-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/plain" "$tmp/flags"
for model in "$@"; do
  "$kiln" compile "$model" -o "$tmp/plain/model.c"
  "$kiln" compile "$model" --threads 1 --gemm=packed -o "$tmp/flags/model.c"
  for f in model.c model.h; do
    if ! cmp -s "$tmp/plain/$f" "$tmp/flags/$f"; then
      echo "FAIL $model: --threads 1 --gemm=packed changed $f"
      diff "$tmp/plain/$f" "$tmp/flags/$f" | head -20
      exit 1
    fi
  done
  if grep -q 'KILN_PARALLEL_FOR\|KILN_TEAM\|KILN_LEAD_ONLY\|kiln_threads\|cblas_' "$tmp/plain/model.c"; then
    echo "FAIL $model: the serial C mentions threads or cblas"
    exit 1
  fi
done
echo "PASS: $# models, --threads 1 --gemm=packed byte-identical to the default"
