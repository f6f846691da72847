/* rows.h — a tensor seen as rows along one axis, the shape the row-wise
 * kernels (softmax family, LayerNorm, sparsemax/entmax) walk: outer * inner
 * rows of len elements, element k of a row `inner` apart (inner = 1 when
 * the axis is the last). */
#ifndef KILN_OPS_ROWS_H
#define KILN_OPS_ROWS_H

#include "../ir/ir.h"

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

/* The rows of x along node n's `axis` attribute (default -1), and that
 * axis normalised (axis may be NULL); false when it is out of range. */
static inline bool rows_of_node(const Node *n, const Type *x, Rows *r, int *axis) {
  int a;
  if (!axis_norm(attr_int(n, "axis", -1), x->rank, &a))
    return false;
  *r = rows_along(x, a);
  if (axis)
    *axis = a;
  return true;
}

/* _infer's checks of a row-wise normalisation's input X (Sparsemax,
 * Entmax15, Entmax): present, f32 or f64, rank >= 1, `axis` in range;
 * its rows and axis on success. */
static inline bool rows_check_input(Graph *g, const Node *n, Rows *r, int *axis, Diag *d) {
  const Value *x = node_in(g, n, 0);
  if (!x)
    return diag_node(d, g, n, "input X is absent; expected a tensor");
  if (x->type.dt != DT_F32 && x->type.dt != DT_F64)
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  if (x->type.rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", x->name);
  if (!rows_of_node(n, &x->type, r, axis))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected [%d, %d]",
                     (long long)attr_int(n, "axis", -1), x->type.rank, -x->type.rank, x->type.rank - 1);
  return true;
}

/* Offset of row o's first element. */
static inline int64_t row_base(const Rows *r, int64_t o) {
  return o / r->inner * r->len * r->inner + o % r->inner;
}

/* row_base as a C expression in the generated loop's `o`, or NULL when
 * there is one row (offset 0). */
static inline const char *row_base_c(Arena *a, const Rows *r) {
  if (r->outer * r->inner == 1)
    return NULL;
  if (r->inner == 1)
    return arena_printf(a, "o * %lld", (long long)r->len);
  if (r->outer == 1)
    return "o";
  return arena_printf(a, "o / %lld * %lld + o %% %lld", (long long)r->inner, (long long)(r->len * r->inner),
                      (long long)r->inner);
}

/* Lanes of a row kernel's partial sums (LayerNorm, AddLayerNorm): the
 * widest of 16, 8, 4, 2 that divides len, so the row loops have no
 * remainder. */
static inline int64_t row_sum_lanes(int64_t len) {
  for (int64_t l = 16; l > 1; l /= 2)
    if (len % l == 0)
      return l;
  return 1;
}

#endif
