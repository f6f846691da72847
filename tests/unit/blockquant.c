/* blockquant.c — unit tests of compiler/ir/blockquant.c, the part the GGUF
 * binder calls: the ggml type numbers, the reference dequantization of one
 * block of each format (hand-computed values, Q4_1's d·q + m rounded
 * twice), and bq_dequantize_node: it builds an inferred, unfolded
 * DequantizeBlocks of the logical shape, and refuses a shape that does not
 * match the blocks with a message naming the node. Prints "N passed, N
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
  CHECK(!bq_format_from_ggml(0, &f) && !bq_format_from_ggml(1, &f) && !bq_format_from_ggml(12, &f));
  CHECK(bq_format_from_name("q4_1", &f) && f == BQ_Q4_1 && !bq_format_from_name("Q4_1", &f));
  CHECK(bq_row_bytes(BQ_Q8_0, 576) == 612 && bq_row_bytes(BQ_Q4_1, 576) == 360);
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
  test_node();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
