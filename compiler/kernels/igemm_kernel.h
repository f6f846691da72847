/* igemm_kernel.h — the int8 x int8 GEMM generator for --quantize=w8a8, for
 * Linear's _emit (compiler/ops/fused.c) when the Linear quantizes its
 * input (act_quant="u8"); the generator sees no Node:
 *
 *   u[i,k], s[i], z[i] = X's row i as u8 (per row, asymmetric: the rule of
 *                        w8a8_quantize_row in compiler/ops/fused.c), or
 *                        with per_tensor one s and z for all of X (ONNX's
 *                        DynamicQuantizeLinear: w8a8_tensor_params there)
 *   Y[M,N] = act(s[i]·scale[n]·(Σ_k u[i,k]·Bq[k,n] - z[i]·colsum[n]) + bias[n]) + R
 *
 * Bq s8 [K,N] is packed at compile time into vpdpbusd's layout (groups of
 * 4 consecutive k per column); the sums are exact in int32 on every path
 * (AVX512-VNNI, AVX-VNNI, AVX2 vpmaddwd, plain C), picked when the
 * generated file is compiled. See igemm_kernel.c. */
#ifndef KILN_IGEMM_KERNEL_H
#define KILN_IGEMM_KERNEL_H

#include "../emit/emit.h"
#include "gemm_kernel.h"

typedef struct IGemmSpec {
  int64_t m, n, k;     /* 255·127·K < 2^31 (the caller checks) */
  const char *a;       /* C pointer expression of X f32 [m,k], row-major */
  const int8_t *bq;    /* Bq's constant data, [k,n] row-major */
  const char *b_name;  /* its name, for comments (may be NULL) */
  const char *scale;   /* C pointer expression of scale f32[n] */
  const char *colsum;  /* C pointer expression of colsum i32[n] = Σ_k Bq[k,n] */
  const char *bias;    /* C pointer expression of bias[n], or NULL */
  GemmAct act;         /* after the bias */
  const char *residual; /* C pointer expression of R[m,n], added last, or NULL */
  const char *y;       /* C pointer expression of Y[m,n], row-major */
  int rot;             /* 16, 32 or 64 (dividing K): each row of X is multiplied by the
                          block Hadamard matrix of blocks of rot before it is quantized
                          (Linear's act_rot); 0: not */
  bool per_tensor;     /* one scale and zero point for all of X, by DynamicQuantizeLinear's
                          rule (Linear's act_quant="u8_tensor", made from ONNX Runtime's
                          quantize_dynamic chains); false: one per row */
  bool fixed;          /* with per_tensor: the scale and zero point are these constants
                          (a static QuantizeLinear's, Linear's act_quant="u8_static") */
  float fixed_scale;   /* > 0 */
  int fixed_zp;        /* 0 .. 255 */
} IGemmSpec;

/* Write the kernel for s into the current block (it opens its own block)
 * and register the packed Bq with emit_const_array. False, writing
 * nothing, when a dim is negative or K too large for int32 sums. */
bool emit_igemm(Emit *e, const IGemmSpec *s);

#endif
