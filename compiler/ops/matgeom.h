/* matgeom.h — the shape arithmetic of a numpy matmul, shared by MatMul
 * (matmul.c) and the integer products MatMulInteger and QLinearMatMul
 * (quantize_linear.c). */
#ifndef KILN_MATGEOM_H
#define KILN_MATGEOM_H

#include "../ir/ir.h"

/* The geometry of a numpy matmul: a 1-D A is the row [1,K] and a 1-D B the
 * column [K,1] (that 1 is dropped from Y); leading dims broadcast. Batch
 * strides are in elements, 0 where the operand is broadcast. */
typedef struct MatGeom {
  int64_t m, n, k;
  int nb;                     /* batch rank of Y */
  int64_t bd[MAX_RANK];       /* batch dims of Y */
  int64_t sa[MAX_RANK], sb[MAX_RANK], sy[MAX_RANK];
} MatGeom;

/* Fill mg from shapes whose K and batch dims agree (the caller checked)
 * and set y's shape (y's dtype: a's). */
void matmul_geom(const Type *a, const Type *b, MatGeom *mg, Type *y);

#endif
