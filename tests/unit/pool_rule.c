/* pool_rule.c — unit tests of compiler/emit/pool_rule.c, the check that a
 * split kernel's code outside its split loops stores nothing every thread
 * would store. The bodies are in the generated C's form; the bad ones are
 * the shapes of the races TSan found (a Gemm's product before its split
 * alpha/beta pass, cblas_sgemm before a split bias pass, a GEMM's edge
 * panel after its split panels, a direction of an LSTM after a split
 * product) and a split loop nested in another. Prints "N passed, N
 * failed". */
#include <stdio.h>
#include <string.h>

#include "emit/pool_rule.h"

static int passed, failed;

static void expect(const char *what, const char *body, bool ok, const char *quoted) {
  char why[200];
  bool got = pool_rule_ok(body, why, sizeof why);
  if (got == ok && (ok || strstr(why, quoted))) {
    passed++;
    return;
  }
  failed++;
  fprintf(stderr, "%s: pool_rule_ok is %s (%s); expected %s%s%s\n", what, got ? "true" : "false", why,
          ok ? "true" : "false, quoting ", ok ? "" : quoted, "");
}

static void test_good(void) {
  expect("locals and split loops",
         "  const float *x = in0; /* [4,8] */\n"
         "  float *y = out0;\n"
         "  KILN_SHARED(float, t, 32); /* scratch */\n"
         "  static const float zero_row[8]; /* the window outside x */\n"
         "  float s = 0, m[4], l[2][2] = {{0}};\n"
         "  typedef float v16f __attribute__((vector_size(64)));\n"
         "  v16f acc = {0}, b = {0};\n"
         "  KILN_PARALLEL_FOR(int, i, 0, 4, 1) {\n"
         "    for (int j = 0; j < 8; j++)\n"
         "      y[i * 8 + j] = x[i * 8 + j] * 2;\n"
         "  }\n"
         "  (void)t;\n",
         true, NULL);
  expect("the lead's work, in a block or one statement",
         "  KILN_LEAD_ONLY memset(out0, 0, 64);\n"
         "  KILN_LEAD_ONLY\n"
         "  for (int i = 0; i < 4; i++)\n"
         "    out0[i] = 1;\n"
         "  KILN_LEAD_ONLY {\n"
         "    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 4, 4, 4, 1.0f, in0, 4, in1, 4, 0.0f, out0, 4);\n"
         "  }\n"
         "  KILN_PARALLEL_FOR(int, i, 0, 4, 1)\n"
         "    out0[i] += 1;\n",
         true, NULL);
  expect("a loop over products holding a split loop; each thread's own scratch",
         "  for (int n = 0; n < 2; n++) {\n"
         "    const float *a = in0 + n * 16;\n"
         "    typedef float v16f __attribute__((vector_size(64)));\n"
         "    float mn = 0, l[32];\n"
         "    v16f acc;\n"
         "    int t = 0;\n"
         "    #if defined(__AVX512F__)\n"
         "    _mm512_storeu_ps(l, _mm512_setzero_ps());\n"
         "    memcpy(&acc, l, sizeof acc);\n"
         "    #endif\n"
         "    for (; t < 16; t++) {\n"
         "      mn = a[t] < mn ? a[t] : mn;\n"
         "      l[t] = mn;\n"
         "    }\n"
         "    KILN_TILE_REGS;\n"
         "    KILN_TILE_CONFIG();\n"
         "    KILN_PARALLEL_FOR(int, i, 0, 16, 1) {\n"
         "      out0[n * 16 + i] = a[i] - mn;\n"
         "    }\n"
         "    KILN_TILE_RELEASE();\n"
         "  }\n",
         true, NULL);
  expect("if / else around split loops, a do-while of locals",
         "  if (kiln_amx_ready()) {\n"
         "    KILN_PARALLEL_FOR(int, p, 0, 2, 1) { out0[p] = 0; }\n"
         "  } else {\n"
         "    KILN_PARALLEL_FOR(int, p, 0, 2, 1) { out0[p] = 1; }\n"
         "  }\n"
         "  int k = 0;\n"
         "  do {\n"
         "    k++;\n"
         "  } while (k < 3);\n",
         true, NULL);
}

static void test_bad(void) {
  expect("a Gemm's product, then its split alpha/beta pass",
         "  for (int i = 0; i < 4; i++)\n"
         "    for (int j = 0; j < 4; j++)\n"
         "      out0[i * 4 + j] = in0[i] * in1[j];\n"
         "  KILN_PARALLEL_FOR(int, i0, 0, 4, 1) {\n"
         "    out0[i0] = 0.5f * out0[i0];\n"
         "  }\n",
         false, "'out0[i * 4 + j] = in0[i] * in1[j]' runs on every thread");
  expect("cblas_sgemm, then its split bias pass",
         "  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 4, 4, 4, 1.0f, in0, 4, in1, 4, 0.0f, out0, 4);\n"
         "  KILN_PARALLEL_FOR(int, i, 0, 4, 1) {\n"
         "    out0[i] += in2[i];\n"
         "  }\n",
         false, "'cblas_sgemm(");
  expect("the split panels, then the edge panel in a block",
         "  KILN_PARALLEL_FOR(int, p, 0, 2, 1) {\n"
         "    out0[p] = 1;\n"
         "  }\n"
         "  { /* the edge panel: columns 64 .. 76 */\n"
         "    float *yp = out0 + 64;\n"
         "    KILN_TILE_REGS;\n"
         "    KILN_TILE_STORE(0, yp, 64);\n"
         "  }\n",
         false, "'KILN_TILE_STORE(0, yp, 64)'");
  expect("a memset of a shared array, or a store through a pointer",
         "  KILN_SHARED(float, ab, 64);\n"
         "  memset(ab, 0, sizeof(float) * 64);\n"
         "  KILN_PARALLEL_FOR(int, i, 0, 4, 1) { ab[i] = 1; }\n",
         false, "'memset(ab,");
  expect("a direction after a split product, its recurrence storing outputs",
         "  KILN_PARALLEL_FOR(int, p, 0, 8, 1) { gx[p] = 0; }\n"
         "  for (int t = 0; t < 32; t++) {\n"
         "    float h[4];\n"
         "    h[0] = gx[t];\n"
         "    *out1 = h[0];\n"
         "  }\n",
         false, "'*out1 = h[0]'");
  expect("a split loop inside a split loop",
         "  KILN_PARALLEL_FOR(int, d, 0, 2, 1) {\n"
         "    KILN_PARALLEL_FOR(int, p, 0, 8, 1) { out0[p] = 0; }\n"
         "  }\n",
         false, "is split inside a split loop");
  expect("a split loop inside a lead-only block",
         "  KILN_LEAD_ONLY {\n"
         "    KILN_PARALLEL_FOR(int, p, 0, 8, 1) { out0[p] = 0; }\n"
         "  }\n",
         false, "is split inside a split loop");
  expect("a static local every thread shares",
         "  static float acc[16];\n"
         "  KILN_PARALLEL_FOR(int, p, 0, 8, 1) { out0[p] = acc[p]; }\n",
         false, "'static float acc[16]'");
  expect("a local array's name does not excuse a pointer of another scope",
         "  {\n"
         "    float y[4];\n"
         "    y[0] = 0;\n"
         "  }\n"
         "  float *y = out0;\n"
         "  y[1] = 2;\n"
         "  KILN_PARALLEL_FOR(int, p, 0, 8, 1) { out0[p] = 0; }\n",
         false, "'y[1] = 2'");
}

int main(void) {
  test_good();
  test_bad();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
