/* matmul_kernel.h — the template matrix product for what the packed GEMM
 * (gemm_kernel.h) does not take: any dtype MatMul and Gemm accept, a
 * right operand that is not a constant. MatMul and Gemm's _emit
 * (compiler/ops/matmul.c) fill a MatmulSpec per matrix; the generator
 * sees no Node:
 *
 *   Y[m,n] = A'[m,k] · B   B row-major [k,n], or [n,k] when trb
 *
 * templates/matmul.c.in (B row-major: i-k-j loops over blocks summed on
 * the stack) or templates/matmul_nt.c.in (B transposed: the same, over
 * tiles of Bᵀ copied to the stack); with --gemm=openblas, f32 products
 * whose A is row- or column-major are one cblas_sgemm call. */
#ifndef KILN_MATMUL_KERNEL_H
#define KILN_MATMUL_KERNEL_H

#include "../emit/emit.h"

typedef struct MatmulSpec {
  DType dt;
  bool trb;              /* B is stored [n,k] */
  int64_t m, n, k;
  const char *a, *b, *y; /* C pointer expressions of the matrices (emit_ref) */
  int64_t a_rs, a_cs;    /* A'(i, t) at a + i * a_rs + t * a_cs */
} MatmulSpec;

/* --gemm=openblas takes the f32 products whose A is row- or column-major
 * (cblas_sgemm's layouts) and not empty. */
bool matmul_uses_cblas(const Emit *e, DType dt, int64_t k, int64_t a_rs, int64_t a_cs);

/* Emit the product of one matrix. */
void matmul_emit_kernel(Emit *e, const MatmulSpec *s);

#endif
