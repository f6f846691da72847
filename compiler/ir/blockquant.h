/* blockquant.h — ggml's block-quantized weight formats (Q8_0, Q4_0, Q4_1),
 * which kiln keeps quantized from a GGUF file to the generated C.
 *
 * A row of `cols` values (cols a multiple of 32) is cols/32 blocks, each
 * little-endian, the scale d (and Q4_1's minimum m) an IEEE half:
 *
 *   Q8_0  f16 d; int8 qs[32]          x[i] = d·qs[i]                   34 bytes
 *   Q4_0  f16 d; u8 qs[16]            x[j] = d·((qs[j] & 15) − 8),      18 bytes
 *                                     x[j+16] = d·((qs[j] >> 4) − 8)
 *   Q4_1  f16 d; f16 m; u8 qs[16]     x[j] = d·(qs[j] & 15) + m,        20 bytes
 *                                     x[j+16] = d·(qs[j] >> 4) + m
 *
 * The reference dequantization (bq_dequantize_row, DequantizeBlocks'
 * _eval) is exactly this: d and m converted to f32 exactly, then d*q (+ m)
 * in f32, a product rounded and then a sum rounded (never an fma), as a
 * PyTorch reference dequantizes.
 *
 * In the IR the raw blocks are a u8 constant [rows, row_bytes] (rows: the
 * product of the logical dims but the last) and the kiln op
 * DequantizeBlocks {format} makes the f32 tensor they stand for
 * (compiler/ops/dequantize_blocks.c). Constant folding leaves it alone
 * (OPF_NOFOLD); fuse_blocks turns the products and gathers that read
 * it into kernels that read the blocks. */
#ifndef KILN_BLOCKQUANT_H
#define KILN_BLOCKQUANT_H

#include "ir.h"

#define BQ_BLOCK_VALUES 32

typedef enum BqFormat { BQ_Q8_0, BQ_Q4_0, BQ_Q4_1, BQ_COUNT_ } BqFormat;

typedef struct BqInfo {
  const char *name;  /* "q8_0", "q4_0", "q4_1": the op's `format` attribute */
  int ggml_type;     /* ggml_type / GGUF tensor type: Q4_0 2, Q4_1 3, Q8_0 8 */
  int block_bytes;   /* 34, 18, 20 */
  int block_values;  /* 32 */
} BqInfo;

extern const BqInfo bq_formats[BQ_COUNT_];

/* The format of a GGUF tensor type; false when it is not one of these. */
bool bq_format_from_ggml(int ggml_type, BqFormat *fmt);
/* The format named `name` ("q4_1"); false when none is. */
bool bq_format_from_name(const char *name, BqFormat *fmt);
/* Bytes of one row of `cols` values (cols a multiple of 32). */
int64_t bq_row_bytes(BqFormat fmt, int64_t cols);
/* An IEEE half as f32 (exact; the same conversion as kiln_f16_to_f32). */
float bq_f16_to_f32(uint16_t h);
/* dst[0..cols) = the values of the cols/32 blocks at src. */
void bq_dequantize_row(BqFormat fmt, const uint8_t *src, float *dst, int64_t cols);

/* Add DequantizeBlocks {format} reading raw_vid (a u8 [rows, row_bytes]
 * tensor of fmt's blocks) that makes f32 `logical` ([..., cols]; its dtype
 * is ignored), its node and output named after `name`. Returns the
 * output's value id, or -1 with a diag naming the node when the shapes do
 * not match. The node is appended (the caller keeps the node array in
 * order, as frontends do) and inferred; it is never folded. */
int bq_dequantize_node(Graph *g, int raw_vid, BqFormat fmt, const Type *logical, const char *name, Diag *d);

#endif
