/* peer_harness.c — the timing program for a peer C emitter's output
 * (emx-onnx-cgen, onnx2c), with the interface of kiln bench's own program
 * so that bench/compare.py times both the same way:
 *     prog RUNS WARMUP in0.bin ... [out0.bin ...]
 * Inputs and outputs are raw arrays in the model's input and output order;
 * the outputs of the last run are written when their paths are given, and
 * with KILN_BENCH_TIMES=FILE every run's time (ms) goes to FILE, one a line.
 * bench/peers.py writes peer_model.h beside the generated C: PEER_NIN,
 * PEER_NOUT, the byte size of each input and output, the entry point's
 * prototype, PEER_INIT() (load the weights where the emitter keeps them in
 * a file; 1 on success) and PEER_CALL(in, out). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "peer_model.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* The n bytes of a raw input file, or exit 2 with the reason. */
static void *load(const char *path, size_t n) {
  FILE *f = fopen(path, "rb");
  void *p = malloc(n + 64);
  if (!f || !p || fread(p, 1, n, f) != n) {
    fprintf(stderr, "peer_harness: %s: cannot read %zu bytes\n", path, n);
    exit(2);
  }
  fclose(f);
  return p;
}

static void save(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "peer_harness: %s: cannot write\n", path);
    exit(2);
  }
}

int main(int argc, char **argv) {
  if (argc != 3 + PEER_NIN && argc != 3 + PEER_NIN + PEER_NOUT) {
    fprintf(stderr, "usage: %s RUNS WARMUP in0.bin ... [out0.bin ...] (%d inputs, %d outputs)\n",
            argv[0], PEER_NIN, PEER_NOUT);
    return 2;
  }
  int runs = atoi(argv[1]), warmup = atoi(argv[2]);
  if (runs < 1 || warmup < 0)
    return 2;
  if (!PEER_INIT()) {
    fprintf(stderr, "peer_harness: the model's weights did not load\n");
    return 1;
  }
  void *in[PEER_NIN], *out[PEER_NOUT];
  for (int i = 0; i < PEER_NIN; i++)
    in[i] = load(argv[3 + i], peer_in_bytes[i]);
  for (int i = 0; i < PEER_NOUT; i++)
    out[i] = calloc(peer_out_bytes[i] + 64, 1);
  double *t = calloc((size_t)runs, sizeof *t);
  if (!t)
    return 2;
  for (int i = 0; i < warmup; i++)
    PEER_CALL(in, out);
  for (int i = 0; i < runs; i++) {
    double t0 = now_ms();
    PEER_CALL(in, out);
    t[i] = now_ms() - t0;
  }
  if (argc == 3 + PEER_NIN + PEER_NOUT)
    for (int i = 0; i < PEER_NOUT; i++)
      save(argv[3 + PEER_NIN + i], out[i], peer_out_bytes[i]);
  const char *tf = getenv("KILN_BENCH_TIMES");
  FILE *f = tf ? fopen(tf, "w") : NULL;
  for (int i = 0; f && i < runs; i++)
    fprintf(f, "%.6f\n", t[i]);
  if (f)
    fclose(f);
  double total = 0;
  for (int i = 0; i < runs; i++)
    total += t[i];
  printf("mean_ms=%.4f runs=%d\n", total / runs, runs);
  return 0;
}
