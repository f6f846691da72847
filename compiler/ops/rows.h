/* rows.h — a tensor seen as rows along one axis, the shape the row-wise
 * kernels (softmax family, LayerNorm, sparsemax/entmax) walk: outer * inner
 * rows of len elements, element k of a row `inner` apart (inner = 1 when
 * the axis is the last). */
#ifndef KILN_OPS_ROWS_H
#define KILN_OPS_ROWS_H

#include "../ir.h"

typedef struct Rows {
  int64_t outer, len, inner;
} Rows;

/* Product of t's dims [from, to). */
static inline int64_t prod_dims(const Type *t, int from, int to) {
  int64_t p = 1;
  for (int a = from; a < to; a++)
    p *= t->dims[a];
  return p;
}

/* The rows of t along axis a (already normalised). */
static inline Rows rows_along(const Type *t, int a) {
  return (Rows){prod_dims(t, 0, a), t->dims[a], prod_dims(t, a + 1, t->rank)};
}

/* Offset of row o's first element. */
static inline int64_t row_base(const Rows *r, int64_t o) {
  return o / r->inner * r->len * r->inner + o % r->inner;
}

#endif
