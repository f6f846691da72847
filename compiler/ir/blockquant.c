/* blockquant.c — the block formats' table and their reference
 * dequantization (see blockquant.h), and the builder of DequantizeBlocks
 * nodes the GGUF binder calls. */
#include <string.h>

#include "blockquant.h"
#include "build.h"
#include "ops.h"

const BqInfo bq_formats[BQ_COUNT_] = {
    [BQ_Q8_0] = {"q8_0", 8, 34, BQ_BLOCK_VALUES},
    [BQ_Q4_0] = {"q4_0", 2, 18, BQ_BLOCK_VALUES},
    [BQ_Q4_1] = {"q4_1", 3, 20, BQ_BLOCK_VALUES},
};

bool bq_format_from_ggml(int ggml_type, BqFormat *fmt) {
  for (int f = 0; f < BQ_COUNT_; f++)
    if (bq_formats[f].ggml_type == ggml_type) {
      *fmt = (BqFormat)f;
      return true;
    }
  return false;
}

bool bq_format_from_name(const char *name, BqFormat *fmt) {
  for (int f = 0; name && f < BQ_COUNT_; f++)
    if (!strcmp(bq_formats[f].name, name)) {
      *fmt = (BqFormat)f;
      return true;
    }
  return false;
}

int64_t bq_row_bytes(BqFormat fmt, int64_t cols) {
  return cols / BQ_BLOCK_VALUES * bq_formats[fmt].block_bytes;
}

float bq_f16_to_f32(uint16_t h) { return (float)half_to_double(DT_F16, h); }

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* d*q and + m must stay two roundings: no contraction into an fma even
 * when kiln itself is built for an FMA machine. */
#if defined(__clang__)
#define BQ_NO_CONTRACT
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#define BQ_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define BQ_NO_CONTRACT
#endif

/* One block's 32 values. */
BQ_NO_CONTRACT static void dequantize_block(BqFormat fmt, const uint8_t *b, float *x) {
  float d = bq_f16_to_f32(le16(b));
  switch (fmt) {
  case BQ_Q8_0:
    for (int i = 0; i < 32; i++)
      x[i] = d * (float)(int8_t)b[2 + i];
    break;
  case BQ_Q4_0:
    for (int j = 0; j < 16; j++) {
      x[j] = d * (float)((b[2 + j] & 15) - 8);
      x[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
    }
    break;
  case BQ_Q4_1: {
    float m = bq_f16_to_f32(le16(b + 2));
    for (int j = 0; j < 16; j++) {
      float lo = d * (float)(b[4 + j] & 15), hi = d * (float)(b[4 + j] >> 4);
      x[j] = lo + m;
      x[j + 16] = hi + m;
    }
    break;
  }
  default:
    KILN_ASSERT(0);
  }
}

void bq_dequantize_row(BqFormat fmt, const uint8_t *src, float *dst, int64_t cols) {
  for (int64_t b = 0; b < cols / BQ_BLOCK_VALUES; b++)
    dequantize_block(fmt, src + b * bq_formats[fmt].block_bytes, dst + b * BQ_BLOCK_VALUES);
}

int bq_dequantize_node(Graph *g, int raw_vid, BqFormat fmt, const Type *logical, const char *name, Diag *d) {
  KILN_ASSERT(logical && logical->rank >= 1 && logical->rank <= MAX_RANK);
  const char *nm = name && *name ? name : "dequantized";
  int out = ir_value(g, nm);
  int idx = graph_add_node(g, OP_DEQUANTIZEBLOCKS, nm, &raw_vid, 1, &out, 1);
  ir_attr_str(g, idx, "format", bq_formats[fmt].name);
  ir_attr_ints(g, idx, "shape", logical->dims, logical->rank);
  return ir_finish(g, idx, d) ? out : -1;
}
