#!/bin/sh
# gemm_shapes.sh — the GEMM micro-benchmark of issue 5: each transformer
# shape of tests/gemm_perf/make_shapes.py (one Linear = one call of the
# packed kernel, compiler/kernels/gemm_kernel.c) compiled by kiln, built with
# the recommended flags and timed by cpu_timer.c (thread CPU time per call:
# a shared machine's preemptions do not count), reported as GFLOP/s
# (2·M·N·K over the fastest call) and as % of the one-core FMA peak
# (bench/peak_fma.c: 101.6 on the issue's machine).
#
#   tests/gemm_perf/gemm_shapes.sh KILN [RUNS] [PEAK] [KILN_B]
#
# With KILN_B, each shape is built by both compilers and the two programs
# run in turn (A B A B A B), best of the three each, with the ratio A/B
# (> 1: B is faster). KILN_ISA (default avx2), KILN_SHAPES (a grep pattern
# over the shape names) and CFLAGS narrow or change the run; KILN_COLD=1
# times each call with the weights out of cache (cpu_timer.c's "cold").
set -e
KILN=$1
RUNS=${2:-300}
PEAK=${3:-101.6}
KILN_B=$4
ISA=${KILN_ISA:-avx2}
FLAGS=${CFLAGS:--O2 -march=native -ffp-contract=fast}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-/work/venv/bin/python}
W=${TMPDIR:-/tmp}/kiln_gemm_perf.$$
mkdir -p "$W"
trap 'rm -rf "$W"' EXIT
"$PY" "$HERE/make_shapes.py" "$W" | grep -E "${KILN_SHAPES:-.}" > "$W/shapes.txt" || true

build() { # KILN SHAPE DIR: the shape's timing program DIR/t
  mkdir -p "$3"
  "$1" compile "$W/$2/model.onnx" --isa="$ISA" -o "$3/model.c"
  # shellcheck disable=SC2086
  cc -std=c99 $FLAGS -I"$3" "$3/model.c" "$HERE/cpu_timer.c" -o "$3/t" -lm
}
best() { # PROGRAM [PREVIOUS BEST] -> the fastest call's ms
  ms=$("$1" "$RUNS" ${KILN_COLD:+cold} | sed -n 's/.*min_ms=\([0-9.]*\).*/\1/p')
  awk -v x="${2:-9e9}" -v y="$ms" 'BEGIN { print (y < x ? y : x) }'
}

if [ -z "$KILN_B" ]; then
  printf '%-12s %5s %5s %5s %-8s %9s %8s %6s\n' shape M K N epilogue min_ms GFLOP/s peak%
else
  printf '%-12s %5s %5s %5s %-8s %9s %8s %6s %9s %8s %6s %6s\n' shape M K N epilogue \
    A_ms A_GF/s A% B_ms B_GF/s B% A/B
fi
while read -r name m k n epi; do
  build "$KILN" "$name" "$W/a_$name"
  if [ -z "$KILN_B" ]; then
    a=$(best "$W/a_$name/t")
    a=$(best "$W/a_$name/t" "$a")
    awk -v s="$name" -v m="$m" -v k="$k" -v n="$n" -v e="$epi" -v ms="$a" -v pk="$PEAK" 'BEGIN {
      gf = 2 * m * n * k / ms / 1e6
      printf "%-12s %5d %5d %5d %-8s %9.4f %8.1f %5.1f%%\n", s, m, k, n, e, ms, gf, 100 * gf / pk }'
  else
    build "$KILN_B" "$name" "$W/b_$name"
    a= b=
    for _ in 1 2 3; do
      a=$(best "$W/a_$name/t" "$a")
      b=$(best "$W/b_$name/t" "$b")
    done
    awk -v s="$name" -v m="$m" -v k="$k" -v n="$n" -v e="$epi" -v a="$a" -v b="$b" -v pk="$PEAK" 'BEGIN {
      fl = 2 * m * n * k / 1e6
      printf "%-12s %5d %5d %5d %-8s %9.4f %8.1f %5.1f%% %9.4f %8.1f %5.1f%% %6.3f\n",
        s, m, k, n, e, a, fl / a, 100 * fl / a / pk, b, fl / b, 100 * fl / b / pk, a / b }'
  fi
done < "$W/shapes.txt"
