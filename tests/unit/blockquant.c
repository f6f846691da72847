/* blockquant.c — unit tests of compiler/ir/blockquant.c, the part the GGUF
 * binder calls: the ggml type numbers, the reference dequantization of one
 * block of each format (hand-computed values, Q4_1's d·q + m rounded
 * twice), and bq_dequantize_node: it builds an inferred, unfolded
 * DequantizeBlocks of the logical shape, and refuses a shape that does not
 * match the blocks with a message naming the node. The K-quants: their
 * table entries, Q4_K/Q5_K's packed 6-bit scales and mins, and one value
 * of each super-block layout computed by hand (d·sc, then ·q, then − m1). Prints "N passed, N
 * failed". */
#include <stdio.h>
#include <string.h>

#include "ir/blockquant.h"
#include "ir/build.h"
#include "ir/ops.h"

static int passed, failed;
#define CHECK(c)                                                          \
  do {                                                                    \
    if (c)                                                                \
      passed++;                                                           \
    else {                                                                \
      failed++;                                                           \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); \
    }                                                                     \
  } while (0)

static void test_formats(void) {
  BqFormat f;
  CHECK(bq_format_from_ggml(2, &f) && f == BQ_Q4_0 && bq_formats[f].block_bytes == 18);
  CHECK(bq_format_from_ggml(3, &f) && f == BQ_Q4_1 && bq_formats[f].block_bytes == 20);
  CHECK(bq_format_from_ggml(8, &f) && f == BQ_Q8_0 && bq_formats[f].block_bytes == 34);
  CHECK(!bq_format_from_ggml(0, &f) && !bq_format_from_ggml(1, &f) && !bq_format_from_ggml(9, &f));
  CHECK(bq_format_from_ggml(6, &f) && f == BQ_Q5_0 && bq_formats[f].block_bytes == 22 && bq_is_q5(f) && !bq_has_min(f));
  CHECK(bq_format_from_ggml(7, &f) && f == BQ_Q5_1 && bq_formats[f].block_bytes == 24 && bq_has_min(f) && !bq_is_k(f));
  CHECK(bq_format_from_name("q4_1", &f) && f == BQ_Q4_1 && !bq_format_from_name("Q4_1", &f));
  CHECK(bq_row_bytes(BQ_Q8_0, 576) == 612 && bq_row_bytes(BQ_Q4_1, 576) == 360);
  /* the K-quants: 256-value super-blocks */
  CHECK(bq_format_from_ggml(12, &f) && f == BQ_Q4_K && bq_formats[f].block_bytes == 144);
  CHECK(bq_format_from_ggml(13, &f) && f == BQ_Q5_K && bq_formats[f].block_bytes == 176);
  CHECK(bq_format_from_ggml(14, &f) && f == BQ_Q6_K && bq_formats[f].block_bytes == 210);
  CHECK(bq_format_from_ggml(15, &f) && f == BQ_Q8_K && bq_formats[f].block_bytes == 292);
  CHECK(!bq_format_from_ggml(10, &f) && !bq_format_from_ggml(11, &f) && !bq_format_from_ggml(23, &f));
  CHECK(bq_format_from_name("q6_k", &f) && f == BQ_Q6_K && bq_formats[f].block_values == 256 && bq_is_k(f));
  CHECK(!bq_is_k(BQ_Q4_1) && bq_formats[BQ_Q4_1].block_values == 32);
  CHECK(bq_row_bytes(BQ_Q4_K, 512) == 288);
  CHECK(bq_row_bytes(BQ_Q6_K, 2048) == 8 * 210 && bq_row_bytes(BQ_Q5_K, 256) == 176);
}

/* Q4_K/Q5_K's packed 6-bit scales and mins: sub-blocks 0..3 in the low 6
 * bits of bytes 0..3 (scales) and 4..7 (mins); 4..7 in bytes 8..11's
 * nibbles (scale low, min high) with their top 2 bits in the top 2 bits of
 * bytes 0..3 (scales) and 4..7 (mins). */
static void test_k_scales(void) {
  uint8_t k[12] = {0};
  for (int s = 0; s < 8; s++) {
    int sc = 5 * s + 20, mn = 63 - 7 * s; /* 6-bit each */
    if (s < 4)
      k[s] |= (uint8_t)sc, k[s + 4] |= (uint8_t)mn;
    else {
      k[s + 4] = (uint8_t)((sc & 15) | (mn & 15) << 4);
      k[s - 4] |= (uint8_t)((sc >> 4) << 6);
      k[s] |= (uint8_t)((mn >> 4) << 6);
    }
  }
  for (int s = 0; s < 8; s++) {
    int sc, mn;
    bq_k_scale_min(k, s, &sc, &mn);
    CHECK(sc == 5 * s + 20 && mn == 63 - 7 * s);
  }
}

/* One super-block of each K-quant, values computed by hand: the scale and
 * min products rounded to f32 first, then d1·q, then − m1. */
static void test_dequantize_k(void) {
  static uint8_t b[292];
  static float x[256];
  float d = bq_f16_to_f32(0x2e66), dmin = bq_f16_to_f32(0x3555); /* 0.0999755859375, 1/3 */
  /* Q4_K: sub-block 5 (scale 37, min 41 through the packed bytes), its
   * values in the high nibbles of qs[64..95] */
  memset(b, 0, sizeof b);
  b[0] = 0x66, b[1] = 0x2e, b[2] = 0x55, b[3] = 0x35;
  b[4 + 9] = (uint8_t)((37 & 15) | (41 & 15) << 4); /* k[s + 4] */
  b[4 + 1] = (uint8_t)((37 >> 4) << 6);             /* k[s - 4] */
  b[4 + 5] = (uint8_t)((41 >> 4) << 6);             /* k[s] */
  b[16 + 64 + 3] = 0xb7;                            /* value 3 of sub-blocks 4 (7) and 5 (11) */
  bq_dequantize_row(BQ_Q4_K, b, x, 256);
  volatile float d5 = d * 37.0f, m5 = dmin * 41.0f, p = d5 * 11.0f;
  CHECK(x[5 * 32 + 3] == p - m5 && x[5 * 32 + 4] == -m5 && x[4 * 32 + 3] == 0 && x[0] == 0);
  /* Q5_K: the same scales, qh's bit 5 of byte 3 adds 16 to value 3 of sub-block 5 */
  uint8_t c[176] = {0};
  memcpy(c, b, 16);
  c[16 + 3] = 1 << 5;
  memcpy(c + 48, b + 16, 128);
  bq_dequantize_row(BQ_Q5_K, c, x, 256);
  volatile float p5 = d5 * 27.0f;
  CHECK(x[5 * 32 + 3] == p5 - m5 && x[5 * 32 + 4] == -m5);
  /* Q6_K: value v = 128 + 64 + 5 (h 1, k 2, l 5): ql[64 + 5]'s high nibble
   * 9, qh[32 + 5] bits 4..5 = 2: q = (9 | 2 << 4) - 32 = 9; scale v/16 = 12 */
  uint8_t e[210] = {0};
  e[64 + 5] = 0x9c, e[128 + 32 + 5] = 2 << 4, e[192 + 12] = (uint8_t)-7, e[208] = 0x66, e[209] = 0x2e;
  bq_dequantize_row(BQ_Q6_K, e, x, 256);
  volatile float d12 = d * -7.0f, q6 = d12 * 9.0f, d0 = d * 0.0f;
  CHECK(x[197] == q6 && x[0] == d0 * -32.0f && x[64 + 5] == 0.0f * -32.0f);
  /* Q8_K: an f32 d */
  memset(b, 0, sizeof b);
  float dk = 0.125f;
  memcpy(b, &dk, 4);
  b[4 + 255] = (uint8_t)-128;
  bq_dequantize_row(BQ_Q8_K, b, x, 256);
  CHECK(x[255] == -16.0f && x[0] == 0);
}

static void test_dequantize(void) {
  uint8_t b[34] = {0x00, 0x3c}; /* d = 1.0 */
  float x[32];
  for (int i = 0; i < 32; i++)
    b[2 + i] = (uint8_t)(int8_t)(i - 16);
  bq_dequantize_row(BQ_Q8_0, b, x, 32);
  CHECK(x[0] == -16 && x[31] == 15);
  b[0] = 0x00, b[1] = 0x38; /* d = 0.5; q4_0: x[j] = d·((b & 15) − 8), x[j+16] = d·((b >> 4) − 8) */
  b[2] = 0xf0;
  bq_dequantize_row(BQ_Q4_0, b, x, 32);
  CHECK(x[0] == -4 && x[16] == 3.5f);
  /* q4_1 with d = 0.1 (f16 0x2e66 = 0.0999755859375) and m = 1/3 (0x3555):
   * the product rounds to f32, then the sum: not one fused rounding */
  uint8_t c[20] = {0x66, 0x2e, 0x55, 0x35, 0x37};
  bq_dequantize_row(BQ_Q4_1, c, x, 32);
  float d = bq_f16_to_f32(0x2e66), m = bq_f16_to_f32(0x3555);
  volatile float p7 = d * 7.0f, p3 = d * 3.0f;
  CHECK(x[0] == p7 + m && x[16] == p3 + m && x[1] == m);
  /* q5_0: qh bit j is value j's fifth bit, bit j + 16 value j + 16's */
  uint8_t q5[24] = {0x00, 0x38, 0x01, 0x00, 0x02, 0x80, 0x3f};
  bq_dequantize_row(BQ_Q5_0, q5, x, 32);                     /* d 0.5; qh 0x80020001; qs[0] 0x3f */
  CHECK(x[0] == 0.5f * ((15 | 16) - 16) && x[16] == 0.5f * (3 - 16) && x[1] == -8 && x[17] == 0.5f * (16 - 16) &&
        x[31] == 0.5f * (16 - 16) && x[15] == -8);
  /* q5_1: d, m, then qh, then qs */
  uint8_t q51[24] = {0x66, 0x2e, 0x55, 0x35, 0x00, 0x00, 0x01, 0x00, 0x0a};
  bq_dequantize_row(BQ_Q5_1, q51, x, 32);                    /* qh bit 16: value 16's */
  volatile float p10 = d * 10.0f, p16 = d * 16.0f;
  CHECK(x[0] == p10 + m && x[16] == p16 + m && x[1] == m);
}

static void test_node(void) {
  Arena *a = arena_new();
  Graph *g = graph_new(a, "unit");
  g->opset = 14;
  int64_t dims[2] = {6, 2 * 20};
  int raw = ir_const(g, "blk.0.ffn_up.weight.blocks", DT_U8, 2, dims, NULL);
  Type logical = {.dt = DT_F32, .rank = 3, .dims = {2, 3, 64}};
  Diag d = {0};
  int y = bq_dequantize_node(g, raw, BQ_Q4_1, &logical, "blk.0.ffn_up.weight", &d);
  CHECK(y >= 0 && !d.failed);
  if (y >= 0) {
    CHECK(type_equal(&gval(g, y)->type, &logical) && !gval(g, y)->data); /* inferred, not folded */
    CHECK(strcmp(gval(g, y)->name, "blk.0.ffn_up.weight") == 0 && g->nodes[g->nnodes - 1].op == OP_DEQUANTIZEBLOCKS);
  }
  Type bad = {.dt = DT_F32, .rank = 2, .dims = {6, 96}};
  Diag d2 = {0};
  CHECK(bq_dequantize_node(g, raw, BQ_Q4_1, &bad, "w_bad", &d2) < 0 && d2.failed);
  CHECK(strstr(d2.msg, "node 'w_bad' (DequantizeBlocks): shape f32[6,96] does not match 6 rows of 64 values") != NULL);
  Diag d3 = {0};
  CHECK(bq_dequantize_node(g, raw, BQ_Q8_0, &logical, "w_q8", &d3) < 0 &&
        strstr(d3.msg, "rows of 40 bytes are not a whole number of q8_0 blocks") != NULL);
  arena_free(a);
}

int main(void) {
  test_formats();
  test_dequantize();
  test_k_scales();
  test_dequantize_k();
  test_node();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
