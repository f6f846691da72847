/* blockquant.h — ggml's block-quantized weight formats (Q8_0, Q4_0, Q4_1,
 * Q5_0, Q5_1 and the K-quants Q4_K, Q5_K, Q6_K, Q8_K), which kiln keeps
 * quantized from a GGUF file to the generated C.
 *
 * A row of `cols` values (cols a multiple of the format's block_values) is
 * cols/block_values blocks, each little-endian, the scales d (and the
 * minimum m, dmin) IEEE halves unless said otherwise:
 *
 *   Q8_0  f16 d; int8 qs[32]          x[i] = d·qs[i]                   34 bytes
 *   Q4_0  f16 d; u8 qs[16]            x[j] = d·((qs[j] & 15) − 8),      18 bytes
 *                                     x[j+16] = d·((qs[j] >> 4) − 8)
 *   Q4_1  f16 d; f16 m; u8 qs[16]     x[j] = d·(qs[j] & 15) + m,        20 bytes
 *                                     x[j+16] = d·(qs[j] >> 4) + m
 *   Q5_0  f16 d; u32 qh; u8 qs[16]    x[j] = d·(((qs[j] & 15) | h(j)) − 16),  22 bytes
 *                                     x[j+16] = d·(((qs[j] >> 4) | h(j+16)) − 16),
 *                                     h(i) = (qh >> i & 1) << 4 (qh little-endian)
 *   Q5_1  f16 d; f16 m; u32 qh;       x[j] = d·((qs[j] & 15) | h(j)) + m,     24 bytes
 *         u8 qs[16]                   x[j+16] = d·((qs[j] >> 4) | h(j+16)) + m
 *
 * The K-quants are super-blocks of 256 values in sub-blocks:
 *
 *   Q4_K  f16 d; f16 dmin; u8 scales[12]; u8 qs[128]                  144 bytes
 *         8 sub-blocks of 32; sub-block s has a 6-bit scale sc and a
 *         6-bit min mn packed in scales[] (k = scales):
 *           s < 4:  sc = k[s] & 63,  mn = k[s+4] & 63
 *           s >= 4: sc = (k[s+4] & 15) | (k[s−4] >> 6) << 4,
 *                   mn = (k[s+4] >> 4) | (k[s] >> 6) << 4
 *         value l (0..31) of sub-block s: q = qs[32·(s/2) + l], its low
 *         nibble for even s, its high nibble for odd s, and
 *           x = (d·sc)·q − (dmin·mn)
 *   Q5_K  f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]       176 bytes
 *         as Q4_K with a fifth bit: q += 16 when bit s of qh[l] is set
 *   Q6_K  u8 ql[128]; u8 qh[64]; int8 scales[16]; f16 d               210 bytes
 *         value v (0..255): h = v/128, k = (v%128)/32, l = v%32;
 *         q = (nibble of ql[64h + 32(k&1) + l]: low for k < 2, high for
 *         k >= 2) | ((qh[32h + l] >> 2k) & 3) << 4, minus 32;
 *           x = (d·scales[v/16])·q
 *   Q8_K  f32 d; int8 qs[256]; i16 bsums[16]                          292 bytes
 *           x[i] = d·qs[i]     (bsums, sums of 16 qs, are not read)
 *
 * The reference dequantization (bq_dequantize_row, DequantizeBlocks'
 * _eval) is exactly this: d and m converted to f32 exactly, then in f32
 * each product rounded and then the sum (or difference) rounded (never an
 * fma): d*q (+ m); for the K-quants first the sub-block's scale d1 = d*sc
 * and min m1 = dmin*mn (Q6_K d1 = d*scales[]), then d1*q, then − m1, in
 * the order ggml's dequantize_row_q*_K computes them, as a PyTorch
 * reference dequantizes.
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

/* the K-quants last: bq_is_k */
typedef enum BqFormat {
  BQ_Q8_0, BQ_Q4_0, BQ_Q4_1, BQ_Q5_0, BQ_Q5_1, BQ_Q4_K, BQ_Q5_K, BQ_Q6_K, BQ_Q8_K, BQ_COUNT_
} BqFormat;

typedef struct BqInfo {
  const char *name;  /* "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "q8_k": the op's `format` */
  int ggml_type;     /* ggml_type / GGUF tensor type: Q4_0 2, Q4_1 3, Q5_0 6, Q5_1 7, Q8_0 8, Q4_K 12, Q5_K 13,
                        Q6_K 14, Q8_K 15 */
  int block_bytes;   /* 34, 18, 20, 22, 24, 144, 176, 210, 292 */
  int block_values;  /* 32, or 256 for the K-quants */
} BqInfo;

/* The formats' names as messages list them: "q8_0, q4_0, q4_1, ..." */
#define BQ_FORMAT_NAMES "q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k or q8_k"

extern const BqInfo bq_formats[BQ_COUNT_];

/* The format of a GGUF tensor type; false when it is not one of these. */
bool bq_format_from_ggml(int ggml_type, BqFormat *fmt);
/* The format named `name` ("q4_1"); false when none is. */
bool bq_format_from_name(const char *name, BqFormat *fmt);
/* Whether fmt is a K-quant (256-value super-blocks). */
static inline bool bq_is_k(BqFormat fmt) { return fmt >= BQ_Q4_K; }
/* Whether a 32-value block has a minimum m (Q4_1, Q5_1): x = d·q + m. */
static inline bool bq_has_min(BqFormat fmt) { return fmt == BQ_Q4_1 || fmt == BQ_Q5_1; }
/* The formats --kquant-act=q8 applies to: the K-quants, and Q5_0/Q5_1 (a
 * K-quant file's rows that are no whole super-block, e.g. Gemma 3's 640). */
static inline bool bq_act_q8_format(BqFormat fmt) { return fmt >= BQ_Q4_K || fmt == BQ_Q5_0 || fmt == BQ_Q5_1; }
/* Whether a 32-value block has Q5's fifth bits qh (Q5_0, Q5_1). */
static inline bool bq_is_q5(BqFormat fmt) { return fmt == BQ_Q5_0 || fmt == BQ_Q5_1; }
/* Bytes of one row of `cols` values (cols a multiple of block_values). */
int64_t bq_row_bytes(BqFormat fmt, int64_t cols);
/* An IEEE half as f32 (exact; the same conversion as kiln_f16_to_f32). */
float bq_f16_to_f32(uint16_t h);
/* Q4_K/Q5_K's 6-bit scale and min of sub-block s (0..7) from the 12
 * packed bytes k (the table above). */
void bq_k_scale_min(const uint8_t *k, int s, int *sc, int *mn);
/* dst[0..cols) = the values of the cols/block_values blocks at src. */
void bq_dequantize_row(BqFormat fmt, const uint8_t *src, float *dst, int64_t cols);

/* --kquant-act=q8 (BlockLinear's act="q8"): the activations of a K-quant
 * GEMV as its int8 kernels see them. Each block of BQ_ACT_BLOCK values of
 * x[0..cols) (cols a multiple of it) gets the scale d = max|x| / 127 (f32)
 * and q = x * (1/d) rounded to the nearest integer, ties to even (all 0
 * when d is 0): x is taken as d·q. q[cols], d[cols / BQ_ACT_BLOCK]. The
 * generated kernels (compiler/kernels/qgemm_q8act.c) do the same f32
 * steps in the same order, so both get the same q and d bit for bit. */
#define BQ_ACT_BLOCK 32
void bq_quantize_act_q8(const float *x, int64_t cols, int8_t *q, float *d);

/* Add DequantizeBlocks {format} reading raw_vid (a u8 [rows, row_bytes]
 * tensor of fmt's blocks) that makes f32 `logical` ([..., cols]; its dtype
 * is ignored), its node and output named after `name`. Returns the
 * output's value id, or -1 with a diag naming the node when the shapes do
 * not match. The node is appended (the caller keeps the node array in
 * order, as frontends do) and inferred; it is never folded. */
int bq_dequantize_node(Graph *g, int raw_vid, BqFormat fmt, const Type *logical, const char *name, Diag *d);

#endif
