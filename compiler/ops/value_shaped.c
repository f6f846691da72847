/* value_shaped.c — ops whose output shape depends on input values:
 * Compress (the count of true entries in its condition), NonZero (the
 * count of nonzero elements) and Unique (the count of distinct values or
 * slices).
 *
 * kiln's buffers have static shapes, so the value that fixes the shape is
 * a compile-time constant (the const_in bits of their rows): Compress's
 * condition, NonZero's and Unique's whole input. A model that computes it
 * at run time is refused with the reason. Compress then copies the chosen
 * slices of a run-time input by a constant index table; NonZero and Unique
 * read only constants, so infer folds them through _eval, and their _emit
 * runs only for a result over the fold cap: its tables, computed now. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* Input i of n must be a constant: false + diag saying why otherwise. */
static bool need_constant(Graph *g, const Node *n, int i, const char *what, Diag *d) {
  const Value *v = node_in(g, n, i);
  if (!v->data)
    return diag_node(d, g, n, "input '%s' (%s) is computed at run time; expected a compile-time "
                     "constant (an initializer, or a value folded from one): it decides the "
                     "output's shape, and kiln's buffers have static shapes", v->name, what);
  return true;
}

/* Each output of n is a constant array already (folded at infer time):
 * say so in the C and write nothing. */
static bool outputs_constant(Emit *e, const Node *n) {
  for (int j = 0; j < n->nout; j++)
    if (n->out[j] >= 0 && !gval(e->g, n->out[j])->data)
      return false;
  emit_line(e, "/* '%s' is a constant array, written at compile time */",
            gval(e->g, n->out[0])->name);
  return true;
}

/* Copy data (computed now into out[], through the op's _eval) into each
 * output as a table: for results over the fold cap. */
static bool emit_tables(Emit *e, const Node *n) {
  Graph *g = e->g;
  Tensor in[2], out[4];
  for (int i = 0; i < n->nin && i < 2; i++)
    in[i] = (Tensor){node_in(g, n, i)->type, node_in(g, n, i)->data};
  for (int j = 0; j < n->nout; j++) {
    const Type *t = n->out[j] >= 0 ? &gval(g, n->out[j])->type : NULL;
    out[j] = t ? (Tensor){*t, arena_alloc(g->arena, type_bytes(t) + 1)} : (Tensor){{0}, NULL};
  }
  Diag d = {0};
  if (!op_table[n->op].eval(n, in, out, &d))
    return false;
  for (int j = 0; j < n->nout; j++) {
    if (n->out[j] < 0 || type_numel(&out[j].type) == 0)
      continue;
    const char *tab = emit_const_array(e, out[j].type.dt, out[j].data, type_numel(&out[j].type),
                                       "table", "an output computed at compile time");
    emit_line(e, "memcpy(%s, %s, %zu);", emit_ref(e, n->out[j]), tab, type_bytes(&out[j].type));
  }
  return true;
}

/* ---- Compress --------------------------------------------------------------- */

/* outer x dim x inner, the axis in the middle (no axis: x flattened). */
typedef struct CompressGeom {
  int64_t outer, dim, inner, nsel;
  int64_t *sel; /* the kept indices along the axis */
} CompressGeom;

static bool compress_geom(Arena *a, const Node *n, const Type *x, const Tensor *cond,
                          CompressGeom *q, Type *out, char *err, size_t errn) {
  const Attr *ax = attr_get(n, "axis");
  int axis = 0;
  if (ax && !axis_norm(ax->i, x->rank, &axis)) {
    snprintf(err, errn, "axis %lld out of range; expected [%d, %d)", (long long)ax->i, -x->rank,
             x->rank);
    return false;
  }
  q->outer = q->inner = 1;
  q->dim = ax ? x->dims[axis] : type_numel(x);
  for (int d = 0; ax && d < x->rank; d++) {
    if (d < axis)
      q->outer *= x->dims[d];
    if (d > axis)
      q->inner *= x->dims[d];
  }
  int64_t nc = type_numel(&cond->type);
  if (cond->type.rank != 1 || nc > q->dim) {
    snprintf(err, errn, "condition has shape [%lld] of rank %d; expected a 1-D tensor of at most "
             "%lld entries (the %s)", (long long)nc, cond->type.rank, (long long)q->dim,
             ax ? "axis's length" : "input's element count");
    return false;
  }
  q->sel = a ? arena_alloc(a, sizeof(int64_t) * (size_t)(nc + 1)) : malloc(sizeof(int64_t) * (size_t)(nc + 1));
  q->nsel = 0;
  for (int64_t k = 0; q->sel && k < nc; k++)
    if (el_get_u(cond->type.dt, cond->data, k))
      q->sel[q->nsel++] = k;
  *out = *x;
  if (ax) {
    out->dims[axis] = q->nsel;
  } else {
    out->rank = 1;
    out->dims[0] = q->nsel;
  }
  return true;
}

bool compress_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *c = node_in(g, n, 1);
  if (c->type.dt != DT_BOOL)
    return diag_node(d, g, n, "condition '%s' is %s; expected bool", c->name, dt_name(c->type.dt));
  if (!need_constant(g, n, 1, "condition", d))
    return false;
  CompressGeom q;
  Type out;
  char err[256];
  Tensor cond = {c->type, c->data};
  if (!compress_geom(g->arena, n, &x->type, &cond, &q, &out, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = out;
  return true;
}

bool compress_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  CompressGeom q;
  Type ot;
  char err[256];
  if (!compress_geom(NULL, n, &in[0].type, &in[1], &q, &ot, err, sizeof err)) {
    free(q.sel);
    return diag_error(d, "node '%s' (Compress): %s", n->name, err);
  }
  size_t sz = dt_size(in[0].type.dt);
  for (int64_t o = 0; o < q.outer; o++)
    for (int64_t s = 0; s < q.nsel; s++)
      memcpy((char *)out[0].data + (size_t)((o * q.nsel + s) * q.inner) * sz,
             (const char *)in[0].data + (size_t)((o * q.dim + q.sel[s]) * q.inner) * sz,
             (size_t)q.inner * sz);
  free(q.sel);
  return true;
}

bool compress_emit(Emit *e, const Node *n) {
  if (outputs_constant(e, n))
    return true;
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0), *c = node_in(g, n, 1);
  CompressGeom q;
  Type ot;
  char err[256];
  Tensor cond = {c->type, c->data};
  if (!compress_geom(g->arena, n, &x->type, &cond, &q, &ot, err, sizeof err))
    return false;
  if (type_numel(&ot) == 0)
    return true;
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]);
  const char *sel = emit_const_array(e, DT_I64, q.sel, q.nsel, "kept",
                                     "Compress: the indices its condition keeps");
  emit_line(e, "/* y[o][s][i] = x[o][kept[s]][i]: %lld of %lld slices of %lld elements */",
            (long long)q.nsel, (long long)q.dim, (long long)q.inner);
  emit_line(e, "for (int64_t o = 0; o < %lld; o++)", (long long)q.outer);
  emit_line(e, "  for (int64_t s = 0; s < %lld; s++)", (long long)q.nsel);
  emit_line(e, "    memcpy(%s + (o * %lld + s) * %lld, %s + (o * %lld + %s[s]) * %lld, %lld);", Y,
            (long long)q.nsel, (long long)q.inner, X, (long long)q.dim, sel, (long long)q.inner,
            (long long)(q.inner * (int64_t)dt_size(x->type.dt)));
  return true;
}

/* ---- NonZero ---------------------------------------------------------------- */

static int64_t count_nonzero(const Tensor *x) {
  int64_t cnt = 0, m = type_numel(&x->type);
  for (int64_t i = 0; i < m; i++)
    cnt += dt_is_float(x->type.dt) ? el_get_f(x->type.dt, x->data, i) != 0
                                   : el_get_u(x->type.dt, x->data, i) != 0;
  return cnt;
}

bool nonzero_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (!need_constant(g, n, 0, "X", d))
    return false;
  Tensor t = {x->type, x->data};
  /* a scalar counts as rank 1, as numpy's nonzero does */
  int rank = x->type.rank ? x->type.rank : 1;
  node_out(g, n, 0)->type = (Type){.dt = DT_I64, .rank = 2, .dims = {rank, count_nonzero(&t)}};
  return true;
}

bool nonzero_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n, (void)d;
  const Type *t = &in[0].type;
  int64_t m = type_numel(t), nnz = out[0].type.dims[1], k = 0, *y = out[0].data;
  for (int64_t i = 0; i < m; i++) {
    bool nz = dt_is_float(t->dt) ? el_get_f(t->dt, in[0].data, i) != 0
                                 : el_get_u(t->dt, in[0].data, i) != 0;
    if (!nz)
      continue;
    int64_t r = i;
    for (int dd = t->rank - 1; dd >= 0; dd--) {
      y[dd * nnz + k] = r % t->dims[dd];
      r /= t->dims[dd];
    }
    if (t->rank == 0)
      y[k] = 0;
    k++;
  }
  return true;
}

bool nonzero_emit(Emit *e, const Node *n) {
  return outputs_constant(e, n) || emit_tables(e, n);
}

/* ---- Unique ----------------------------------------------------------------- */

/* x seen as dim slices of `inner` elements along the axis (outer copies
 * of the axis before it): slice s's element (o, i) is x[(o * dim + s) *
 * inner + i]. No axis: x flattened, slices of one element. */
typedef struct UniqueGeom {
  const Tensor *x;
  int64_t outer, dim, inner;
} UniqueGeom;

static int cmp_el(DType dt, const void *p, int64_t i, int64_t j) {
  if (dt_is_float(dt)) {
    double a = el_get_f(dt, p, i), b = el_get_f(dt, p, j);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (dt_is_signed_int(dt)) {
    int64_t a = el_get_i(dt, p, i), b = el_get_i(dt, p, j);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  uint64_t a = el_get_u(dt, p, i), b = el_get_u(dt, p, j);
  return a < b ? -1 : a > b ? 1 : 0;
}

/* Slices s and t in lexicographic order (numpy's unique with an axis). */
static int cmp_slices(const UniqueGeom *u, int64_t s, int64_t t) {
  for (int64_t o = 0; o < u->outer; o++)
    for (int64_t i = 0; i < u->inner; i++) {
      int c = cmp_el(u->x->type.dt, u->x->data, (o * u->dim + s) * u->inner + i,
                     (o * u->dim + t) * u->inner + i);
      if (c)
        return c;
    }
  return 0;
}

/* Stable merge sort of idx[0..m) by slice order (ties keep first-seen order). */
static void sort_slices(const UniqueGeom *u, int64_t *idx, int64_t *tmp, int64_t m) {
  if (m < 2)
    return;
  int64_t h = m / 2;
  sort_slices(u, idx, tmp, h);
  sort_slices(u, idx + h, tmp, m - h);
  int64_t i = 0, j = h, k = 0;
  while (i < h || j < m)
    tmp[k++] = j >= m || (i < h && cmp_slices(u, idx[i], idx[j]) <= 0) ? idx[i++] : idx[j++];
  memcpy(idx, tmp, sizeof *idx * (size_t)m);
}

/* The distinct slices: first[u] (index of its first occurrence), count[u],
 * inverse[s] (which distinct slice s is), in sorted order or in order of
 * first occurrence. Returns how many, or -1 when out of memory. The arrays
 * live in one malloc'd block, *mem (free it). */
static int64_t unique_run(const UniqueGeom *u, bool sorted, int64_t **first, int64_t **count,
                          int64_t **inverse, int64_t **mem) {
  int64_t m = u->dim, nu = 0, r = m + 1;
  int64_t *buf = malloc(sizeof(int64_t) * 8 * (size_t)r);
  *mem = buf;
  if (!buf)
    return -1;
  int64_t *idx = buf, *tmp = buf + r, *f = buf + 2 * r, *c = buf + 3 * r, *inv = buf + 4 * r;
  int64_t *order = buf + 5 * r, *newid = buf + 6 * r, *at = buf + 7 * r;
  for (int64_t s = 0; s < m; s++)
    idx[s] = s;
  sort_slices(u, idx, tmp, m);
  /* groups of equal slices in sorted order; the sort is stable, so a
   * group's first entry is its first occurrence */
  for (int64_t k = 0; k < m; k++) {
    if (k == 0 || cmp_slices(u, idx[k - 1], idx[k])) {
      f[nu] = idx[k];
      c[nu++] = 0;
    }
    c[nu - 1]++;
    inv[idx[k]] = nu - 1;
  }
  if (!sorted) { /* renumber the groups in order of first occurrence */
    for (int64_t s = 0; s < m; s++)
      at[s] = -1;
    for (int64_t g = 0; g < nu; g++)
      at[f[g]] = g; /* first occurrences are distinct slice indices */
    int64_t next = 0;
    for (int64_t s = 0; s < m; s++)
      if (at[s] >= 0) {
        order[next] = at[s]; /* new group -> old group */
        newid[at[s]] = next++;
      }
    for (int64_t s = 0; s < m; s++)
      inv[s] = newid[inv[s]];
    for (int64_t g = 0; g < nu; g++) {
      idx[g] = f[order[g]];
      tmp[g] = c[order[g]];
    }
    memcpy(f, idx, sizeof(int64_t) * (size_t)nu);
    memcpy(c, tmp, sizeof(int64_t) * (size_t)nu);
  }
  *first = f, *count = c, *inverse = inv;
  return nu;
}

static bool unique_geom(const Node *n, const Tensor *x, UniqueGeom *u, int *axis, char *err,
                        size_t errn) {
  const Attr *ax = attr_get(n, "axis");
  *u = (UniqueGeom){.x = x, .outer = 1, .dim = type_numel(&x->type), .inner = 1};
  *axis = -1;
  if (!ax)
    return true;
  if (!axis_norm(ax->i, x->type.rank, axis)) {
    snprintf(err, errn, "axis %lld out of range; expected [%d, %d)", (long long)ax->i,
             -x->type.rank, x->type.rank);
    return false;
  }
  u->dim = x->type.dims[*axis];
  u->outer = u->inner = 1;
  for (int d = 0; d < x->type.rank; d++) {
    if (d < *axis)
      u->outer *= x->type.dims[d];
    if (d > *axis)
      u->inner *= x->type.dims[d];
  }
  return true;
}

bool unique_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (x->type.dt == DT_F16 || x->type.dt == DT_BF16)
    return diag_node(d, g, n, "input '%s' is %s; expected f32, f64, an integer type or bool",
                     x->name, dt_name(x->type.dt));
  if (!need_constant(g, n, 0, "X", d))
    return false;
  int64_t s = attr_int(n, "sorted", 1);
  if (s != 0 && s != 1)
    return diag_node(d, g, n, "sorted is %lld; expected 0 or 1", (long long)s);
  Tensor t = {x->type, x->data};
  UniqueGeom u;
  int axis;
  char err[256];
  if (!unique_geom(n, &t, &u, &axis, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  int64_t *f, *c, *inv, *mem;
  int64_t nu = unique_run(&u, s, &f, &c, &inv, &mem);
  free(mem);
  if (nu < 0)
    return diag_node(d, g, n, "out of memory finding the distinct values");
  Type y = x->type;
  if (axis < 0)
    y = (Type){.dt = x->type.dt, .rank = 1, .dims = {nu}};
  else
    y.dims[axis] = nu;
  node_out(g, n, 0)->type = y;
  Type idx = {.dt = DT_I64, .rank = 1, .dims = {nu}};
  for (int j = 1; j < n->nout; j++)
    if (node_out(g, n, j))
      node_out(g, n, j)->type = idx;
  if (n->nout > 2 && node_out(g, n, 2))
    node_out(g, n, 2)->type.dims[0] = u.dim;
  return true;
}

bool unique_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  UniqueGeom u;
  int axis;
  char err[256];
  if (!unique_geom(n, &in[0], &u, &axis, err, sizeof err))
    return diag_error(d, "node '%s' (Unique): %s", n->name, err);
  int64_t *f, *c, *inv, *mem;
  int64_t nu = unique_run(&u, attr_int(n, "sorted", 1) != 0, &f, &c, &inv, &mem);
  if (nu < 0) {
    free(mem);
    return diag_error(d, "node '%s' (Unique): out of memory", n->name);
  }
  size_t sz = dt_size(in[0].type.dt);
  for (int64_t o = 0; o < u.outer; o++)
    for (int64_t k = 0; k < nu; k++)
      memcpy((char *)out[0].data + (size_t)((o * nu + k) * u.inner) * sz,
             (const char *)in[0].data + (size_t)((o * u.dim + f[k]) * u.inner) * sz,
             (size_t)u.inner * sz);
  if (n->nout > 1 && out[1].data)
    memcpy(out[1].data, f, sizeof(int64_t) * (size_t)nu);
  if (n->nout > 2 && out[2].data)
    memcpy(out[2].data, inv, sizeof(int64_t) * (size_t)u.dim);
  if (n->nout > 3 && out[3].data)
    memcpy(out[3].data, c, sizeof(int64_t) * (size_t)nu);
  free(mem);
  return true;
}

bool unique_emit(Emit *e, const Node *n) {
  return outputs_constant(e, n) || emit_tables(e, n);
}
