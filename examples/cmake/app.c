/* app.c — the app of examples/cmake: runs the encoder that
 * kiln_add_model() compiled (tests/models/encoder_2l_op14: src
 * f32[2,16,64] -> out f32[2,16,64]) and prints a few outputs.
 *
 *   encoder_app                    input: fixed sines
 *   encoder_app IN.f32 [OUT.f32]   input: 2048 raw floats from IN.f32; the
 *                                  output also as raw floats to OUT.f32
 *
 * Exit status 0, or 1 when a file cannot be read or written or the
 * weights blob is refused. */
#include <math.h>
#include <stdio.h>

#include "encoder.h"

static float src[2][16][64]; /* [batch, sequence, d_model] */
static float out[2][16][64];

/* n floats from path into dst (write: from dst into path); false on error */
static int raw_io(const char *path, float *dst, size_t n, int write) {
  FILE *f = fopen(path, write ? "wb" : "rb");
  size_t got = f ? (write ? fwrite(dst, sizeof *dst, n, f) : fread(dst, sizeof *dst, n, f)) : 0;
  int extra = f && !write && fgetc(f) != EOF; /* a longer file is not this input */
  if (f && fclose(f) != 0)
    got = 0;
  if (got != n || extra) {
    fprintf(stderr, "encoder_app: %s: cannot %s %zu floats\n", path, write ? "write" : "read exactly", n);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
#ifdef ENCODER_WEIGHTS_SIZE /* the weights are in a blob (WEIGHTS_MODE blob, or auto above 1 MiB) */
  int rc = encoder_bind_linked_weights();
  if (rc != KILN_OK) {
    fprintf(stderr, "encoder_app: %s\n", encoder_weights_error(rc));
    return 1;
  }
#endif
  if (argc > 1) {
    if (!raw_io(argv[1], &src[0][0][0], ENCODER_IN_SRC_SIZE, 0))
      return 1;
  } else {
    for (int i = 0; i < ENCODER_IN_SRC_SIZE; i++)
      (&src[0][0][0])[i] = sinf(0.1f * (float)i);
  }
  encoder_run(src, out);
  double sum = 0;
  for (int i = 0; i < ENCODER_OUT_OUT_SIZE; i++)
    sum += (&out[0][0][0])[i];
  printf("encoder: out[0][0][0..3] = %.6f %.6f %.6f %.6f, sum of %d outputs %.6f\n", out[0][0][0], out[0][0][1],
         out[0][0][2], out[0][0][3], ENCODER_OUT_OUT_SIZE, sum);
  if (argc > 2 && !raw_io(argv[2], &out[0][0][0], ENCODER_OUT_OUT_SIZE, 1))
    return 1;
  return 0;
}
