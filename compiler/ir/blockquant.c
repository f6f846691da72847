/* blockquant.c — the block formats' table and their reference
 * dequantization (see blockquant.h), and the builder of DequantizeBlocks
 * nodes the GGUF binder calls. */
#include <math.h>
#include <string.h>

#include "blockquant.h"
#include "build.h"
#include "ops.h"

const BqInfo bq_formats[BQ_COUNT_] = {
    [BQ_Q8_0] = {"q8_0", 8, 34, 32},   [BQ_Q4_0] = {"q4_0", 2, 18, 32},   [BQ_Q4_1] = {"q4_1", 3, 20, 32},
    [BQ_Q5_0] = {"q5_0", 6, 22, 32},   [BQ_Q5_1] = {"q5_1", 7, 24, 32},
    [BQ_Q4_K] = {"q4_k", 12, 144, 256}, [BQ_Q5_K] = {"q5_k", 13, 176, 256}, [BQ_Q6_K] = {"q6_k", 14, 210, 256},
    [BQ_Q8_K] = {"q8_k", 15, 292, 256},
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
  return cols / bq_formats[fmt].block_values * bq_formats[fmt].block_bytes;
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

void bq_k_scale_min(const uint8_t *k, int s, int *sc, int *mn) {
  if (s < 4) {
    *sc = k[s] & 63;
    *mn = k[s + 4] & 63;
  } else {
    *sc = (k[s + 4] & 15) | (k[s - 4] >> 6) << 4;
    *mn = (k[s + 4] >> 4) | (k[s] >> 6) << 4;
  }
}

/* Q4_K (qh NULL) or Q5_K: x = (d·sc)·q − (dmin·mn) a sub-block. */
BQ_NO_CONTRACT static void dequantize_q45k(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, float *x) {
  float d = bq_f16_to_f32(le16(b)), dmin = bq_f16_to_f32(le16(b + 2));
  for (int s = 0; s < 8; s++) {
    int sc, mn;
    bq_k_scale_min(b + 4, s, &sc, &mn);
    float d1 = d * (float)sc, m1 = dmin * (float)mn;
    const uint8_t *q = qs + 32 * (s / 2);
    for (int l = 0; l < 32; l++) {
      int v = s & 1 ? q[l] >> 4 : q[l] & 15;
      if (qh && (qh[l] >> s & 1))
        v += 16;
      float p = d1 * (float)v;
      x[32 * s + l] = p - m1;
    }
  }
}

/* Q6_K: x = (d·scales[v/16])·q. */
BQ_NO_CONTRACT static void dequantize_q6k(const uint8_t *b, float *x) {
  const uint8_t *ql = b, *qh = b + 128;
  const int8_t *sc = (const int8_t *)(b + 192);
  float d = bq_f16_to_f32(le16(b + 208));
  for (int v = 0; v < 256; v++) {
    int h = v / 128, k = v % 128 / 32, l = v % 32;
    int lo = ql[64 * h + 32 * (k & 1) + l], q = ((k < 2 ? lo & 15 : lo >> 4) | (qh[32 * h + l] >> 2 * k & 3) << 4) - 32;
    float d1 = d * (float)sc[v / 16];
    x[v] = d1 * (float)q;
  }
}

/* One block's block_values values. */
BQ_NO_CONTRACT static void dequantize_block(BqFormat fmt, const uint8_t *b, float *x) {
  float d = bq_is_k(fmt) ? 0 : bq_f16_to_f32(le16(b)); /* the K-quants read their own */
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
  case BQ_Q5_0:
  case BQ_Q5_1: {
    bool m1 = fmt == BQ_Q5_1;
    float m = m1 ? bq_f16_to_f32(le16(b + 2)) : 0;
    const uint8_t *qs = b + (m1 ? 8 : 6);
    uint32_t qh = (uint32_t)b[m1 ? 4 : 2] | (uint32_t)b[m1 ? 5 : 3] << 8 | (uint32_t)b[m1 ? 6 : 4] << 16 |
                  (uint32_t)b[m1 ? 7 : 5] << 24;
    for (int j = 0; j < 16; j++) {
      int lo = (qs[j] & 15) | (int)(qh >> j & 1) << 4, hi = (qs[j] >> 4) | (int)(qh >> (j + 16) & 1) << 4;
      if (m1) {
        float pl = d * (float)lo, ph = d * (float)hi;
        x[j] = pl + m;
        x[j + 16] = ph + m;
      } else {
        x[j] = d * (float)(lo - 16);
        x[j + 16] = d * (float)(hi - 16);
      }
    }
    break;
  }
  case BQ_Q4_K:
    dequantize_q45k(b, NULL, b + 16, x);
    break;
  case BQ_Q5_K:
    dequantize_q45k(b, b + 16, b + 48, x);
    break;
  case BQ_Q6_K:
    dequantize_q6k(b, x);
    break;
  case BQ_Q8_K: {
    float dk;
    memcpy(&dk, b, sizeof dk); /* an f32 (little-endian, as kiln's hosts) */
    for (int i = 0; i < 256; i++)
      x[i] = dk * (float)(int8_t)b[4 + i];
    break;
  }
  default:
    KILN_ASSERT(0);
  }
}

void bq_dequantize_row(BqFormat fmt, const uint8_t *src, float *dst, int64_t cols) {
  int bv = bq_formats[fmt].block_values;
  for (int64_t b = 0; b < cols / bv; b++)
    dequantize_block(fmt, src + b * bq_formats[fmt].block_bytes, dst + b * bv);
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

void bq_quantize_act_q8(const float *x, int64_t cols, int8_t *q, float *d) {
  for (int64_t b = 0; b < cols / BQ_ACT_BLOCK; b++) {
    const float *xb = x + b * BQ_ACT_BLOCK;
    float amax = 0;
    for (int l = 0; l < BQ_ACT_BLOCK; l++)
      amax = fabsf(xb[l]) > amax ? fabsf(xb[l]) : amax;
    const float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    d[b] = db;
    for (int l = 0; l < BQ_ACT_BLOCK; l++)
      q[b * BQ_ACT_BLOCK + l] = (int8_t)nearbyintf(xb[l] * id);
  }
}
