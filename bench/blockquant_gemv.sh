#!/usr/bin/env bash
# blockquant_gemv.sh — micro benchmark of the products by ggml block-
# quantized weights (compiler/kernels/qgemm_kernel.c) against kiln's f32
# GEMM on the same shapes: decode's GEMV (M = 1) and a prefill (M = 64)
# of SmolLM2-135M's shapes, 576 -> 1536 and 1536 -> 576 (its FFN, Q4_1)
# and 576 -> 49152 (the tied output projection, Q8_0); then decode's GEMV
# of Gemma 3 270M's largest matrix, its tied output projection 640 ->
# 262144, in the file's Q8_0 and in Q5_0 and Q5_1, and in each K-quant
# (Q4_K, Q5_K, Q6_K, Q8_K) with K = 768, the nearest whole number of
# 256-value super-blocks (640 is none: llama.cpp writes Q5_0/Q8_0 there). Each row is one
# model compiled by kiln (further arguments go to kiln compile: --threads
# N) and built -O2 -march=native -ffp-contract=fast; a harness times its
# run function, the best of 30 batches (the weight as warm as the caches
# keep it: 30 MB of Q8_0 and 113 MB of f32 are not), in thread CPU time
# and wall time; GB/s is the weight's bytes over the CPU time (with
# --threads N, read the wall time instead). The bound: a plain C loop
# summing a 512 MB array (out of cache, 64-bit loads, -O2 -march=native)
# gives the read bandwidth this thread gets; bound_ms is the weight's bytes
# at that rate, and %bound the bound over the time (100%: as fast as
# memory). Each K-quant, Q5_0 and Q5_1 row is timed twice, the second time compiled
# with --kquant-act=q8 (row name +q8: X quantized to int8, integer dot
# products, compiler/kernels/qgemm_q8act.c); BQ_ACT=f32 or q8 only the one.
# Not a test: prints a table, commits nothing.
#
#   bash bench/blockquant_gemv.sh [KILN [--threads N]]
#   BQ_ROWS=gemma bash bench/blockquant_gemv.sh    (only the Gemma 3 rows)
#   BQ_CFLAGS="-O2 -march=native -DKILN_PREFER_256 -ffp-contract=fast" bash ...
#       (the C compiler's flags; the generated C asks gcc for 512-bit
#       vectors where it targets AVX-512, -DKILN_PREFER_256 leaves gcc's
#       own choice, 256 on recent Intel CPUs: the 16-wide kernels run
#       several times slower)
#
# Needs numpy (build/venv or $PYTHON) to write the models.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kiln=${1:-$here/../build/kiln}
shift || true
py=${PYTHON:-$here/../build/venv/bin/python}
[ -x "$py" ] || py=python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$py" - "$dir" <<'PY'
import os, sys
import numpy as np
out = sys.argv[1]
rng = np.random.default_rng(1)
BB = {"q8_0": 34, "q4_1": 20, "q5_0": 22, "q5_1": 24, "q4_k": 144, "q5_k": 176, "q6_k": 210, "q8_k": 292}
def blocks(fmt, n, k):
    bv = 256 if fmt.endswith("_k") else 32
    nb = k // bv
    raw = rng.integers(0, 256, (n, nb, BB[fmt]), dtype=np.uint8)
    dpos = 208 if fmt == "q6_k" else 0
    raw[:, :, dpos:dpos + 2] = np.full((n, nb), 0.001, np.float16).view(np.uint8).reshape(n, nb, 2)
    if fmt in ("q4_1", "q5_1", "q4_k", "q5_k"):
        raw[:, :, 2:4] = np.full((n, nb), -0.05 if fmt.endswith("_1") else 0.001, np.float16).view(np.uint8).reshape(n, nb, 2)
    if fmt == "q8_k":  # an f32 d
        raw[:, :, 0:4] = np.full((n, nb), 0.001, np.float32).view(np.uint8).reshape(n, nb, 4)
    return raw.reshape(n, nb * BB[fmt])
rows = [(m, fmt, k, n) for m in (1, 64)
        for fmt, k, n in (("q4_1", 576, 1536), ("q4_1", 1536, 576), ("q8_0", 576, 1536), ("q8_0", 576, 49152),
                          ("f32", 576, 1536), ("f32", 1536, 576), ("f32", 576, 49152))]
gemma = [(1, fmt, k, 262144) for fmt, k in (("q8_0", 640), ("q5_0", 640), ("q5_1", 640), ("q4_k", 768),
                                             ("q5_k", 768), ("q6_k", 768), ("q8_k", 768))]
rows += gemma
if os.environ.get("BQ_ROWS") == "gemma":  # only Gemma 3's output projection
    rows = gemma
for m, fmt, k, n in rows:
    name = f"{fmt}_{k}x{n}_m{m}"
    if fmt == "f32":
        w = (rng.standard_normal((k, n)) * 0.02).astype(np.float32)
        body = f"  const %w: f32[{k},{n}] = bin(0)\n  %y = MatMul %x, %w : ?\n"
    else:
        w = blocks(fmt, n, k)
        body = (f"  const %wb: u8[{n},{w.shape[1]}] = bin(0)\n"
                f'  %w = DequantizeBlocks %wb {{format="{fmt}", shape=[{n},{k}]}} : ?\n'
                f"  %wt = Transpose %w {{perm=[1,0]}} : ?\n  %y = MatMul %x, %wt : ?\n")
    with open(os.path.join(out, name + ".kir"), "w") as f:
        f.write(f"graph @g opset 14 (%x: f32[{m},{k}]) -> (%y) {{\n{body}}}\n")
    w.tofile(os.path.join(out, name + ".bin"))
    print(name, w.nbytes, file=open(os.path.join(out, "sizes"), "a"))
PY
cat > "$dir/harness.c" <<'C'
/* times m_run: the best of 30 batches, per call; thread CPU time (what
 * this thread ran, immune to the other processes of a shared machine)
 * and wall time (what counts with --threads N) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "m.h"
static double ms(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(int argc, char **argv) {
  int m = atoi(argv[1]), k = atoi(argv[2]), n = atoi(argv[3]), reps = atoi(argv[4]);
  float *x = malloc(sizeof(float) * m * k), *y = malloc(sizeof(float) * m * n);
  for (int i = 0; i < m * k; i++) x[i] = (float)(i % 13) / 13 - 0.5f;
  if (m_bind_linked_weights()) return 1;
  for (int i = 0; i < reps; i++) m_run((void *)x, (void *)y);
  double cpu = 1e30, wall = 1e30;
  for (int b = 0; b < 30; b++) {
    double c0 = ms(CLOCK_THREAD_CPUTIME_ID), w0 = ms(CLOCK_MONOTONIC);
    for (int i = 0; i < reps; i++) m_run((void *)x, (void *)y);
    double c = (ms(CLOCK_THREAD_CPUTIME_ID) - c0) / reps, w = (ms(CLOCK_MONOTONIC) - w0) / reps;
    cpu = c < cpu ? c : cpu, wall = w < wall ? w : wall;
  }
  printf("%.4f %.4f\n", cpu, wall);
  return y[0] != y[0];
}
C
cat > "$dir/stream.c" <<'C'
/* the read bandwidth one thread gets: the best of 5 sums of 512 MB, in
 * thread CPU time as the rows */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double ms(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(void) {
  size_t n = (size_t)64 << 20; /* 64 Mi u64: 512 MB */
  uint64_t *a = malloc(n * sizeof *a), s = 0;
  for (size_t i = 0; i < n; i++) a[i] = i;
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = ms();
    for (size_t i = 0; i < n; i += 4) s += a[i] ^ a[i + 1] ^ a[i + 2] ^ a[i + 3];
    double t = ms() - t0;
    best = t < best ? t : best;
  }
  printf("%.2f\n", (double)(n * sizeof *a) / best / 1e6);
  fprintf(stderr, "%s", s == 42 ? "?" : ""); /* s is used: the sums are not optimised away */
  return 0;
}
C
cc -O2 -march=native "$dir/stream.c" -o "$dir/stream" && bw=$("$dir/stream")
echo "read bandwidth, one thread: $bw GB/s"
printf '%-25s %12s %10s %10s %8s %9s %7s\n' model weight_bytes cpu_ms wall_ms GB/s bound_ms %bound
while read -r name bytes; do
  acts=f32
  case $name in *_k_* | q5_[01]_*) acts="${BQ_ACT:-f32 q8}" ;; esac
  for act in $acts; do
  b="$dir/$name"
  mkdir -p "$b"
  mm=${name##*_} rest=${name%_*}
  shape=${rest##*_}
  k=${shape%x*} n=${shape#*x} m=${mm#m}
  reps=$(( bytes > 20000000 ? 3 : m > 1 ? 10 : 100 ))
  row=$name
  [ "$act" = f32 ] || row=$name+$act
  "$kiln" compile "$dir/$name.kir" -o "$b/m.c" --name m --weights-mode=blob --kquant-act=$act "$@" >/dev/null &&
    (cd "$b" && cc ${BQ_CFLAGS:--O2 -march=native -ffp-contract=fast} -pthread -I. m.c m_weights.S ../harness.c -o run -lm) &&
    read -r cpu wall < <("$b/run" "$m" "$k" "$n" "$reps") || { echo "$row: failed"; continue; }
  gbs=$(awk -v b="$bytes" -v t="$cpu" 'BEGIN { printf "%.1f", b / t / 1e6 }')
  bound=$(awk -v b="$bytes" -v bw="$bw" 'BEGIN { printf "%.3f", b / bw / 1e6 }')
  pct=$(awk -v b="$bound" -v t="$cpu" 'BEGIN { printf "%.0f%%", 100 * b / t }')
  printf '%-25s %12s %10s %10s %8s %9s %7s\n' "$row" "$bytes" "$cpu" "$wall" "$gbs" "$bound" "$pct"
  rm -rf "$b"
  done
done < "$dir/sizes"
