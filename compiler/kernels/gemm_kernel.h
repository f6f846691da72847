/* gemm_kernel.h — the f32 GEMM generator for a constant right operand (a
 * weight), shared by MatMul, Gemm and Linear's _emit (compiler/ops/
 * matmul.c, fused.c), which fill a GemmSpec; the generator sees no Node:
 *
 *   Y[M,N] = act(A[M,K] · B[K,N] + bias[N]) + R[M,N]
 *
 * or, for an int8 weight (--quantize=int8), B[K,N] = Bq[K,N]·scale[N] with
 * Bq packed as int8 panels and widened to f32 in the kernel.
 *
 * B is packed at compile time into the panel layout the micro-kernel reads
 * (panel width from --isa) and emitted as its own weight array; the kernel
 * is register-blocked GNU C vector code for each vector width that can
 * read the panels, picked by the C preprocessor (see gemm_kernel.c), with
 * every dim a constant and the edges handled by constant-bound remainder
 * code. With --threads N the panels are split among N pool threads; with
 * --gemm=openblas a cblas_sgemm call replaces packing and kernel. */
#ifndef KILN_GEMM_KERNEL_H
#define KILN_GEMM_KERNEL_H

#include "../emit/emit.h"

typedef enum GemmAct { GEMM_ACT_NONE, GEMM_ACT_RELU, GEMM_ACT_GELU, GEMM_ACT_GELU_TANH } GemmAct;

typedef struct GemmSpec {
  int64_t m, n, k;
  const char *a;       /* C pointer expression of A (emit_ref): row i at a + i * a_rs */
  int64_t a_rs;        /* elements from one row of A to the next (>= k) */
  const float *b;      /* B's constant data: [k,n] row-major, or [n,k] when b_trans */
  const int8_t *bq;    /* or B as int8 (b NULL), laid out as b: the weight is B[k,n]·scale[n] */
  const char *scale;   /* with bq: C pointer expression of the per-column scale[n], applied
                          to the sums before the bias */
  bool b_trans;
  const char *b_name;  /* B's name, for comments (may be NULL) */
  const char *bias;    /* C pointer expression of bias[n], or NULL */
  GemmAct act;         /* applied after the bias: relu, gelu (erf), gelu_tanh */
  const char *residual; /* C pointer expression of R[m,n] (row-major), added after
                           the activation, or NULL (Linear's residual input) */
  const char *y;       /* C pointer expression of Y[m,n], row-major */
  const char *rows;    /* C expression of how many of A's rows to compute (a
                          decoder's prefill: the chunk's real tokens), clipped
                          to [0, m]; NULL: all m. The row tiles starting past
                          it are skipped (the tiles are those of m: a tile
                          across it computes all its rows) and Y's rows from
                          it on are set to 0 */
  bool rows_keep;      /* with rows: Y's rows from it on are left as they are (an encoder's
                          token count, where nothing reads them), not set to 0 */
  int64_t batch;       /* > 1: that many independent products of these dims, product q
                          reading A at a + q * a_bs, B's data at b + q * k * n (each packed
                          on its own) and writing Y at y + q * y_bs (a MatMul by a constant
                          with batch dims, Winograd's per-position products); the bias is
                          shared; no residual, rows or int8 B. 0 or 1: one product */
  int64_t a_bs, y_bs;  /* with batch: elements from one product's A, Y to the next */
} GemmSpec;

/* Write the kernel for s into the current block (it opens its own block
 * for local names) and register B's packed copy with emit_const_array.
 * Nothing else reads B for this product, so B itself is not emitted unless
 * other code references it. Returns false, writing nothing, when s is out
 * of the generator's reach (a negative dim, a_rs < k); callers then fall
 * back to their own kernel. */
bool emit_gemm(Emit *e, const GemmSpec *s);

/* act(v) as a C expression in f32 (v a C variable), the formulas of
 * compiler/ops/fused.c with kiln_erff / kiln_tanhf: the epilogues' scalar
 * form (also igemm_kernel.c's). */
const char *gemm_act_expr(Emit *e, GemmAct act, const char *v);

#endif
