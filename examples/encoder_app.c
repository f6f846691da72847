/* encoder_app.c — a small app built around kiln's generated code: it links
 * the 2-layer transformer encoder compiled by `kiln compile ... -o
 * encoder.c`, runs it on a deterministic input, prints a few outputs and
 * the mean latency. Everything about the model is fixed at compile time,
 * so the app just declares arrays of the shapes in encoder.h.
 *
 *   $ export PATH=$PWD/build:$PATH
 *   $ kiln compile tests/models/encoder_2l_op14/model.onnx -o out/encoder.c
 *   $ cc -O2 -Iout examples/encoder_app.c out/encoder.c -lm -o out/encoder_app && out/encoder_app
 */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "encoder.h"

static float src[2][16][64]; /* [batch, sequence, d_model] */
static float out[2][16][64];

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void) {
  for (int b = 0; b < 2; b++)
    for (int s = 0; s < 16; s++)
      for (int d = 0; d < 64; d++)
        src[b][s][d] = sinf(0.1f * (float)(b * 1000 + s * 64 + d));
  encoder_run(src, out);
  printf("encoder: out[0][0][0..7] =");
  for (int d = 0; d < 8; d++)
    printf(" %.5f", out[0][0][d]);
  printf("\n");
  enum { RUNS = 200 };
  double t0 = now_ms();
  for (int r = 0; r < RUNS; r++)
    encoder_run(src, out);
  double ms = (now_ms() - t0) / RUNS;
  printf("encoder: %.3f ms per inference (mean of %d), workspace %d bytes\n", ms, RUNS,
         ENCODER_WORKSPACE_SIZE);
  return 0;
}
