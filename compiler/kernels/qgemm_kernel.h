/* qgemm_kernel.h — the generator of products by ggml block-quantized
 * weights (compiler/ir/blockquant.h), for BlockLinear's _emit (compiler/ops/
 * block_linear.c); the generator sees no Node:
 *
 *   Y[M,N] = X[M,K] · Wᵀ (+ bias[N]),   W[N,K] as the blocks Wb[N, K/bv·bb]
 *
 * The blocks are read as the GGUF file stores them (a row of W is K/bv
 * consecutive blocks of bv values), never repacked, so a table that an embedding
 * gather also reads is stored once. See qgemm_kernel.c for the kernels. */
#ifndef KILN_QGEMM_KERNEL_H
#define KILN_QGEMM_KERNEL_H

#include "../ir/blockquant.h"
#include "../emit/emit.h"

typedef struct QGemmSpec {
  int64_t m, n, k;     /* K a multiple of the format's block_values */
  BqFormat fmt;
  const char *a;       /* C pointer expression of X[m,k], row-major */
  const char *w;       /* C pointer expression of the blocks (const uint8_t *) */
  const char *bias;    /* C pointer expression of bias[n], or NULL */
  const char *y;       /* C pointer expression of Y[m,n], row-major */
  const char *rows;    /* C expression of how many of X's rows to compute (a
                          decoder's prefill: its real tokens), or NULL: all m;
                          Y's rows past it are set to 0 */
  bool act_q8;         /* --kquant-act=q8 (a K-quant, m < QG_ACT_Q8_MAX_ROWS): X's rows
                          quantized to int8, integer dot products (qgemm_q8act.c) */
} QGemmSpec;

/* The most rows of X, plus one, that act="q8" quantizes (decode's GEMVs;
 * from QG_ACT_Q8_MAX_ROWS rows on, prefill's dequantized panels, X stays f32). */
#define QG_ACT_Q8_MAX_ROWS 4

/* Write the kernel for s into the current block (it opens its own block).
 * False, writing nothing, when K is not a whole number of blocks. */
bool emit_qgemm(Emit *e, const QGemmSpec *s);

/* C statements that set the floats y[0..block_values) from the block at b (both C
 * expressions): the reference arithmetic (blockquant.h), d and m through
 * kiln_f16_to_f32, d*q (+ m) in f32. For gathers and the plain paths. */
void qgemm_emit_block(Emit *e, BqFormat fmt, const char *b, const char *y);

/* The body of emit_qgemm for s->act_q8 (qgemm_q8act.c), inside its block
 * where a, w, bias and y are declared; K > 0 and a whole number of super-blocks. */
void emit_qgemm_q8act(Emit *e, const QGemmSpec *s);

#endif
