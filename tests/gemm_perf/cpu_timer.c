/* cpu_timer.c — the timing driver of the GEMM micro-benchmark
 * (gemm_shapes.sh), linked with one shape's generated model.c. Unlike
 * `kiln bench` (wall clock) it times each call by the thread's CPU time:
 * on a machine shared with other jobs, a call that was preempted does not
 * look slower, so the fastest of many calls is the kernel's own speed.
 * The model has input x (and the residual r for some shapes), output y;
 * inputs are fixed pseudo-random floats in [-1, 1). With "cold", every
 * call starts with the weights out of cache, as in a whole model whose
 * weights exceed the last-level cache (MiniLM: 42 MB) but the activations
 * come from the layer before: 64 MiB of other data are read and written,
 * then x, r and y touched, before each call (untimed; not by memset,
 * whose large sizes bypass the caches).
 *
 *   cpu_timer RUNS [cold]  ->  "min_ms=.. median_ms=.."  */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static void fill(float *v, long n, unsigned *seed) {
  for (long i = 0; i < n; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    v[i] = (float)(*seed >> 8) * 0x1p-23f - 1.0f;
  }
}

static int by_value(const void *x, const void *y) {
  double u = *(const double *)x, v = *(const double *)y;
  return (u > v) - (u < v);
}

static float x[MODEL_IN_X_SIZE], y[MODEL_OUT_Y_SIZE];
#ifdef MODEL_IN_R_SIZE
static float r[MODEL_IN_R_SIZE];
#define RUN() model_run((const void *)x, (const void *)r, (void *)y)
#else
#define RUN() model_run((const void *)x, (void *)y)
#endif

/* x, r and y back in cache, as the layer before would leave them */
static void touch_activations(void) {
  static volatile float sink;
  float s = 0;
  for (long i = 0; i < MODEL_IN_X_SIZE; i += 16)
    s += x[i];
#ifdef MODEL_IN_R_SIZE
  for (long i = 0; i < MODEL_IN_R_SIZE; i += 16)
    s += r[i];
#endif
  for (long i = 0; i < MODEL_OUT_Y_SIZE; i += 16)
    y[i] = 0;
  sink = s;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 200;
  if (runs < 1)
    return 2;
  unsigned seed = 5;
  fill(x, MODEL_IN_X_SIZE, &seed);
#ifdef MODEL_IN_R_SIZE
  fill(r, MODEL_IN_R_SIZE, &seed);
#endif
  double *t = malloc(sizeof *t * (size_t)runs);
  size_t evict_bytes = (size_t)64 << 20;
  char *evict = argc > 2 && !strcmp(argv[2], "cold") ? calloc(evict_bytes, 1) : NULL;
  if (!t || (argc > 2 && !evict))
    return 2;
  for (int i = 0; i < runs / 10 + 3; i++) /* warm-up: caches, page faults */
    RUN();
  for (int i = 0; i < runs; i++) {
    if (evict)
      for (size_t j = 0; j < evict_bytes; j += 64)
        evict[j] = (char)(evict[j] + 1);
    if (evict)
      touch_activations();
    double t0 = cpu_ms();
    RUN();
    t[i] = cpu_ms() - t0;
  }
  qsort(t, (size_t)runs, sizeof *t, by_value);
  double sum = 0;
  for (long i = 0; i < MODEL_OUT_Y_SIZE; i++)
    sum += y[i];
  printf("min_ms=%.5f median_ms=%.5f checksum=%.6g\n", t[0], t[runs / 2], sum);
  free(evict);
  free(t);
  return 0;
}
