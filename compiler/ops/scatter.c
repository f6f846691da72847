/* scatter.c — N-d indexing: GatherND (pick slices of data addressed by
 * index tuples) and the scatters, which write updates into a copy of data:
 * ScatterElements (and its opset 9-10 name Scatter: one element per index,
 * the index replacing one axis of the update's own coordinates) and
 * ScatterND (slices addressed by index tuples).
 *
 * Updates apply in row-major order of the indices. Without a reduction the
 * last write to an element wins; with one (opset 16: add, mul; opset 18:
 * max, min) each update combines with what is there, so duplicates
 * accumulate. Indices are i32 or i64; negative ones count from the end of
 * their dim. An index outside [-dim, dim) is an error wherever kiln can see
 * it: in _infer when the indices are constant, in _eval always. ONNX leaves
 * it undefined at run time; the generated C wraps negative indices and then
 * clamps into [0, dim), so it never reads or writes outside its tensors. */
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* ---- shared pieces --------------------------------------------------------- */

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } Reduction;

static bool reduction_of(const Node *n, Reduction *r) {
  static const char *names[] = {"none", "add", "mul", "max", "min"};
  const char *s = attr_str(n, "reduction", "none");
  for (int k = 0; k < KILN_COUNT(names); k++)
    if (!strcmp(s, names[k])) {
      *r = (Reduction)k;
      return true;
    }
  return false;
}

/* Element count of dims [from, to) of t. */
static int64_t span(const Type *t, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++)
    p *= t->dims[d];
  return p;
}

static bool index_dt_ok(DType dt) { return dt == DT_I32 || dt == DT_I64; }

/* Index v into data dim `axis` of size dim: wrapped into [0, dim), or -1
 * (with a message in err) when it is outside [-dim, dim). */
static int64_t wrap_index(int64_t v, int axis, int64_t dim, char *err, size_t errn) {
  if (v < -dim || v >= dim) {
    snprintf(err, errn,
             "index %lld out of range for data dim %d of size %lld; expected [%lld, %lld)",
             (long long)v, axis, (long long)dim, (long long)-dim, (long long)dim);
    return -1;
  }
  return v < 0 ? v + dim : v;
}

/* Every index tuple (the last dim m of the indices) is in range of data
 * dims [first, first + m): else err names the first bad index. */
static bool tuples_in_range(const Type *it, const void *idx, const Type *xt, int first, char *err,
                            size_t errn) {
  int m = (int)it->dims[it->rank - 1];
  int64_t cnt = type_numel(it);
  for (int64_t i = 0; i < cnt; i++) {
    int d = first + (int)(i % m);
    if (wrap_index(el_get_i(it->dt, idx, i), d, xt->dims[d], err, errn) < 0)
      return false;
  }
  return true;
}

static void copy_el(DType dt, void *dst, int64_t j, const void *src, int64_t i) {
  size_t sz = dt_size(dt);
  memcpy((char *)dst + (size_t)j * sz, (const char *)src + (size_t)i * sz, sz);
}

/* y[j] = red(y[j], u[i]) in the dtype's own arithmetic (bool: add is or,
 * mul is and, as with C's _Bool). */
static void combine(DType dt, Reduction r, void *y, int64_t j, const void *u, int64_t i) {
  if (r == RED_NONE) {
    copy_el(dt, y, j, u, i);
  } else if (dt_is_float(dt)) {
    double a = el_get_f(dt, y, j), b = el_get_f(dt, u, i);
    double v = r == RED_ADD ? a + b : r == RED_MUL ? a * b : r == RED_MAX ? (b > a ? b : a)
                                                                       : (b < a ? b : a);
    el_set_f(dt, y, j, v);
  } else if (dt_is_signed_int(dt)) {
    int64_t a = el_get_i(dt, y, j), b = el_get_i(dt, u, i);
    int64_t v = r == RED_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
                : r == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                : r == RED_MAX ? (b > a ? b : a)
                               : (b < a ? b : a);
    el_set_i(dt, y, j, v);
  } else {
    uint64_t a = el_get_u(dt, y, j), b = el_get_u(dt, u, i);
    uint64_t v = r == RED_ADD ? a + b : r == RED_MUL ? a * b : r == RED_MAX ? (b > a ? b : a)
                                                                         : (b < a ? b : a);
    el_set_u(dt, y, j, v);
  }
}

/* How the comments of the generated C write the update. */
static const char *red_op(Reduction r) {
  static const char *ops[] = {"=", "+=", "*=", "max=", "min="};
  return ops[r];
}

/* The C statement applying update `u` to element `y` ("y[k]", "upd[t]"). */
static const char *combine_stmt(Emit *e, Reduction r, const char *y, const char *u) {
  Arena *a = e->g->arena;
  switch (r) {
  case RED_ADD: return arena_printf(a, "%s += %s;", y, u);
  case RED_MUL: return arena_printf(a, "%s *= %s;", y, u);
  case RED_MAX: return arena_printf(a, "%s = %s > %s ? %s : %s;", y, u, y, u, y);
  case RED_MIN: return arena_printf(a, "%s = %s < %s ? %s : %s;", y, u, y, u, y);
  default: return arena_printf(a, "%s = %s;", y, u);
  }
}

/* C lines turning raw index expression `raw` into `var` in [0, dim). */
static void emit_index(Emit *e, const char *var, const char *raw, int64_t dim) {
  emit_line(e, "int64_t %s = %s;", var, raw);
  emit_line(e, "if (%s < 0)", var);
  emit_line(e, "  %s += %lld;", var, (long long)dim);
  emit_line(e, "%s = %s < 0 ? 0 : %s > %lld ? %lld : %s; /* out of range is undefined: clamp */",
            var, var, var, (long long)(dim - 1), (long long)(dim - 1), var);
}

/* For index tuple t (C expression) of the indices `idx` with last dim m,
 * declares `int64_t at` = base + the tuple's offset into data dims
 * [first, first + m) of xt (each component wrapped and clamped). */
static void emit_tuple_offset(Emit *e, const char *idx, const char *t, int m, const Type *xt,
                              int first, const char *base) {
  Arena *a = e->g->arena;
  int64_t st[MAX_RANK];
  type_strides(xt, st);
  Buf sum = {0};
  buf_puts(&sum, base);
  for (int j = 0; j < m; j++) {
    const char *var = arena_printf(a, "i%d", j);
    const char *raw = m == 1 ? arena_printf(a, "%s[%s]", idx, t)
                             : arena_printf(a, "%s[%s * %d + %d]", idx, t, m, j);
    emit_index(e, var, raw, xt->dims[first + j]);
    if (sum.len)
      buf_puts(&sum, " + ");
    if (st[first + j] == 1)
      buf_puts(&sum, var);
    else
      buf_printf(&sum, "%s * %lld", var, (long long)st[first + j]);
  }
  emit_line(e, "int64_t at = %s;", sum.len ? sum.s : "0");
  buf_free(&sum);
}

static void open_loop(Emit *e, const char *var, int64_t n) {
  emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", var, var, (long long)n, var);
  e->indent++;
}

static void close_loop(Emit *e) {
  e->indent--;
  emit_line(e, "}");
}

/* ---- GatherND -------------------------------------------------------------- */

/* data [B.., X..], indices [B.., K.., m]: y [B.., K.., data dims after B+m].
 * b = batch_dims (opset 12+). */
static bool gather_nd_shapes(const Node *n, const Type *xt, const Type *it, Type *yt, int *bdims,
                             char *err, size_t errn) {
  int64_t b = attr_int(n, "batch_dims", 0);
  int r = xt->rank, q = it->rank;
  if (r < 1 || q < 1) {
    snprintf(err, errn, "data has rank %d and indices rank %d; expected both >= 1", r, q);
    return false;
  }
  if (!index_dt_ok(it->dt)) {
    snprintf(err, errn, "indices are %s; expected i64 (or i32)", dt_name(it->dt));
    return false;
  }
  if (b < 0 || b >= (q < r ? q : r)) {
    snprintf(err, errn, "batch_dims %lld out of range; expected [0, %d)", (long long)b,
             q < r ? q : r);
    return false;
  }
  int64_t m = it->dims[q - 1];
  if (m < 1 || m > r - b) {
    snprintf(err, errn,
             "index tuples have %lld entries; expected 1 to %lld (data rank - batch_dims)",
             (long long)m, (long long)(r - b));
    return false;
  }
  for (int d = 0; d < b; d++)
    if (it->dims[d] != xt->dims[d]) {
      snprintf(err, errn, "batch dim %d is %lld in indices and %lld in data; expected equal", d,
               (long long)it->dims[d], (long long)xt->dims[d]);
      return false;
    }
  int rank = q - 1 + r - (int)b - (int)m;
  if (rank > MAX_RANK) {
    snprintf(err, errn, "output rank %d exceeds %d; expected a smaller rank", rank, MAX_RANK);
    return false;
  }
  yt->dt = xt->dt;
  yt->rank = rank;
  for (int d = 0; d < q - 1; d++)
    yt->dims[d] = it->dims[d];
  for (int d = (int)(b + m); d < r; d++)
    yt->dims[q - 1 + d - (int)(b + m)] = xt->dims[d];
  *bdims = (int)b;
  return true;
}

bool gather_nd_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *ix = node_in(g, n, 1);
  Type y;
  int b;
  char err[256];
  if (!gather_nd_shapes(n, &x->type, &ix->type, &y, &b, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  if (ix->data && !tuples_in_range(&ix->type, ix->data, &x->type, b, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  int m = (int)ix->type.dims[ix->type.rank - 1];
  if (type_numel(&y) > 0 && span(&x->type, b, b + m) == 0)
    return diag_node(d, g, n, "an indexed dim of data is empty; expected non-empty dims to index");
  node_out(g, n, 0)->type = y;
  return true;
}

bool gather_nd_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *xt = &in[0].type, *it = &in[1].type;
  Type chk;
  int b;
  char err[256];
  KILN_ASSERT(gather_nd_shapes(n, xt, it, &chk, &b, err, sizeof err));
  if (!tuples_in_range(it, in[1].data, xt, b, err, sizeof err))
    return diag_error(d, "node '%s' (%s): %s", n->name, node_op_name(n), err);
  int m = (int)it->dims[it->rank - 1];
  int64_t xs[MAX_RANK];
  type_strides(xt, xs);
  /* tuple t of batch t / per: y[t][s] = x[batch][tuple][s] */
  int64_t ntup = type_numel(it) / m, per = span(it, b, it->rank - 1);
  int64_t slice = span(xt, b + m, xt->rank), bstride = span(xt, b, xt->rank);
  for (int64_t t = 0; t < ntup; t++) {
    int64_t at = (per ? t / per : 0) * bstride;
    for (int j = 0; j < m; j++)
      at += xs[b + j] * wrap_index(el_get_i(it->dt, in[1].data, t * m + j), b + j,
                                   xt->dims[b + j], err, sizeof err);
    for (int64_t s = 0; s < slice; s++)
      copy_el(xt->dt, out[0].data, t * slice + s, in[0].data, at + s);
  }
  return true;
}

bool gather_nd_emit(Emit *e, const Node *n) {
  Arena *a = e->g->arena;
  const Type *xt = &gval(e->g, n->in[0])->type, *it = &gval(e->g, n->in[1])->type;
  Type chk;
  int b;
  char err[256];
  if (!gather_nd_shapes(n, xt, it, &chk, &b, err, sizeof err))
    return false;
  if (type_numel(&chk) == 0) {
    emit_line(e, "/* empty output: nothing to gather */");
    return true;
  }
  int m = (int)it->dims[it->rank - 1];
  int64_t ntup = type_numel(it) / m, per = span(it, b, it->rank - 1);
  int64_t slice = span(xt, b + m, xt->rank), bstride = span(xt, b, xt->rank);
  const char *x = emit_ref(e, n->in[0]), *y = emit_ref(e, n->out[0]);
  emit_line(e, "/* y[t][:] = x[batch of t][idx[t]][:]: %lld index tuples of %d, slices of %lld */",
            (long long)ntup, m, (long long)slice);
  const char *t = ntup > 1 ? "t" : "0";
  if (ntup > 1)
    open_loop(e, "t", ntup);
  const char *base = ntup / per == 1 ? ""
                     : per == 1   ? arena_printf(a, "t * %lld", (long long)bstride)
                                  : arena_printf(a, "t / %lld * %lld", (long long)per,
                                                 (long long)bstride);
  emit_tuple_offset(e, emit_ref(e, n->in[1]), t, m, xt, b, base);
  if (slice == 1)
    emit_line(e, "%s[%s] = %s[at];", y, t, x);
  else
    emit_line(e, "memcpy(%s + %s * %lld, %s + at, %lld * sizeof *%s);", y, t, (long long)slice, x,
              (long long)slice, x);
  if (ntup > 1)
    close_loop(e);
  return true;
}

/* ---- ScatterElements / Scatter and ScatterND ------------------------------- */

static bool scatter_shapes(const Node *n, const Type *xt, const Type *it, const Type *ut, int *axis,
                           Reduction *red, char *err, size_t errn) {
  if (xt->rank < 1) {
    snprintf(err, errn, "data is a scalar; expected rank >= 1");
    return false;
  }
  if (!index_dt_ok(it->dt)) {
    snprintf(err, errn, "indices are %s; expected i32 or i64", dt_name(it->dt));
    return false;
  }
  if (ut->dt != xt->dt) {
    snprintf(err, errn, "updates are %s and data %s; expected the same type", dt_name(ut->dt),
             dt_name(xt->dt));
    return false;
  }
  if (!reduction_of(n, red) || (n->op == OP_SCATTER && *red != RED_NONE)) {
    snprintf(err, errn, "reduction is '%s'; expected none, add, mul, max or min",
             attr_str(n, "reduction", "none"));
    return false;
  }
  char su[128], sx[128], si[128], sw[128];
  if (n->op == OP_SCATTERND) {
    int q = it->rank;
    int64_t m = q ? it->dims[q - 1] : 0;
    if (q < 1 || m < 1 || m > xt->rank) {
      snprintf(err, errn, "indices %s: expected rank >= 1 and a last dim of 1 to %d (data's rank)",
               type_str(it, si, sizeof si), xt->rank);
      return false;
    }
    Type want = {.dt = xt->dt, .rank = q - 1 + xt->rank - (int)m};
    bool ok = want.rank <= MAX_RANK;
    for (int d = 0; ok && d < want.rank; d++)
      want.dims[d] = d < q - 1 ? it->dims[d] : xt->dims[d - (q - 1) + m];
    if (!ok || !type_equal(ut, &want)) {
      snprintf(err, errn, "updates are %s for data %s and indices %s; expected %s",
               type_str(ut, su, sizeof su), type_str(xt, sx, sizeof sx),
               type_str(it, si, sizeof si),
               ok ? type_str(&want, sw, sizeof sw) : "a smaller rank");
      return false;
    }
    *axis = 0;
    return true;
  }
  if (!axis_norm(attr_int(n, "axis", 0), xt->rank, axis)) {
    snprintf(err, errn, "axis %lld out of range; expected [%d, %d)",
             (long long)attr_int(n, "axis", 0),
             -xt->rank, xt->rank);
    return false;
  }
  bool ok = it->rank == xt->rank && ut->rank == it->rank;
  for (int d = 0; ok && d < it->rank; d++)
    ok = ut->dims[d] == it->dims[d] && (d == *axis || it->dims[d] <= xt->dims[d]);
  if (!ok) {
    snprintf(err, errn, "indices %s and updates %s for data %s; expected equal shapes of data's "
             "rank, no larger than data off the axis", type_str(it, si, sizeof si),
             type_str(ut, su, sizeof su), type_str(xt, sx, sizeof sx));
    return false;
  }
  return true;
}

/* Every index of ScatterElements in range of data's axis. */
static bool elements_in_range(const Type *it, const void *idx, int axis, int64_t dim, char *err,
                              size_t errn) {
  int64_t cnt = type_numel(it);
  for (int64_t i = 0; i < cnt; i++)
    if (wrap_index(el_get_i(it->dt, idx, i), axis, dim, err, errn) < 0)
      return false;
  return true;
}

static bool scatter_indices_ok(const Node *n, const Type *xt, const Type *it, const void *idx,
                               int axis, char *err, size_t errn) {
  if (n->op == OP_SCATTERND)
    return tuples_in_range(it, idx, xt, 0, err, errn);
  return elements_in_range(it, idx, axis, xt->dims[axis], err, errn);
}

bool scatter_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *ix = node_in(g, n, 1), *u = node_in(g, n, 2);
  int axis;
  Reduction red;
  char err[256];
  if (!scatter_shapes(n, &x->type, &ix->type, &u->type, &axis, &red, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  if (ix->data && !scatter_indices_ok(n, &x->type, &ix->type, ix->data, axis, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  if (type_numel(&ix->type) > 0 && type_numel(&x->type) == 0)
    return diag_node(d, g, n, "data is empty but there are indices; expected non-empty data");
  node_out(g, n, 0)->type = x->type;
  return true;
}

bool scatter_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *xt = &in[0].type, *it = &in[1].type, *ut = &in[2].type;
  int axis;
  Reduction red;
  char err[256];
  KILN_ASSERT(scatter_shapes(n, xt, it, ut, &axis, &red, err, sizeof err));
  if (!scatter_indices_ok(n, xt, it, in[1].data, axis, err, sizeof err))
    return diag_error(d, "node '%s' (%s): %s", n->name, node_op_name(n), err);
  memcpy(out[0].data, in[0].data, type_bytes(xt));
  int64_t xs[MAX_RANK];
  type_strides(xt, xs);
  if (n->op == OP_SCATTERND) {
    /* y[idx[t]][s] (op)= upd[t][s] */
    int m = (int)it->dims[it->rank - 1];
    int64_t ntup = type_numel(it) / m, slice = span(xt, m, xt->rank);
    for (int64_t t = 0; t < ntup; t++) {
      int64_t at = 0;
      for (int j = 0; j < m; j++)
        at += wrap_index(el_get_i(it->dt, in[1].data, t * m + j), j, xt->dims[j], err, sizeof err) *
              xs[j];
      for (int64_t s = 0; s < slice; s++)
        combine(xt->dt, red, out[0].data, at + s, in[2].data, t * slice + s);
    }
    return true;
  }
  /* y[c with c[axis] = idx[c]] (op)= upd[c] over the coordinates c of idx */
  int64_t cnt = type_numel(it);
  for (int64_t e = 0; e < cnt; e++) {
    int64_t at = 0, rem = e;
    for (int k = it->rank - 1; k >= 0; k--) {
      int64_t c = rem % it->dims[k];
      rem /= it->dims[k];
      if (k == axis)
        c = wrap_index(el_get_i(it->dt, in[1].data, e), axis, xt->dims[axis], err, sizeof err);
      at += c * xs[k];
    }
    combine(xt->dt, red, out[0].data, at, in[2].data, e);
  }
  return true;
}

/* "i0 * 12 + i1 * 4 + i2": the index into t of loop coordinates (i0, i1,
 * ...) over the dims of lt (no loop, no term, where lt's dim is 1), with
 * dim `ax` (when >= 0) indexed by "j" instead. */
static const char *flat_index(Arena *a, const Type *t, const Type *lt, int ax) {
  int64_t st[MAX_RANK];
  type_strides(t, st);
  Buf b = {0};
  for (int d = 0; d < t->rank; d++) {
    if (lt->dims[d] == 1 && d != ax)
      continue;
    if (b.len)
      buf_puts(&b, " + ");
    buf_printf(&b, d == ax ? "j" : "i%d", d);
    if (st[d] != 1)
      buf_printf(&b, " * %lld", (long long)st[d]);
  }
  const char *r = arena_strdup(a, b.len ? b.s : "0");
  buf_free(&b);
  return r;
}

static void emit_scatter_elements(Emit *e, const Node *n, int axis, Reduction red) {
  Arena *a = e->g->arena;
  const Type *xt = &gval(e->g, n->in[0])->type, *it = &gval(e->g, n->in[1])->type;
  const char *ii = flat_index(a, it, it, -1);
  emit_line(e, "/* y[i with axis %d replaced by idx[i]] %s upd[i], in order of i */", axis,
            red_op(red));
  int loops = 0;
  for (int d = 0; d < it->rank; d++)
    if (it->dims[d] > 1) {
      open_loop(e, arena_printf(a, "i%d", d), it->dims[d]);
      loops++;
    }
  emit_index(e, "j", arena_printf(a, "%s[%s]", emit_ref(e, n->in[1]), ii), xt->dims[axis]);
  emit_line(e, "%s", combine_stmt(e, red, arena_printf(a, "%s[%s]", emit_ref(e, n->out[0]),
                                                       flat_index(a, xt, it, axis)),
                                  arena_printf(a, "%s[%s]", emit_ref(e, n->in[2]), ii)));
  while (loops-- > 0)
    close_loop(e);
}

static void emit_scatter_nd(Emit *e, const Node *n, Reduction red) {
  Arena *a = e->g->arena;
  const Type *xt = &gval(e->g, n->in[0])->type, *it = &gval(e->g, n->in[1])->type;
  int m = (int)it->dims[it->rank - 1];
  int64_t ntup = type_numel(it) / m, slice = span(xt, m, xt->rank);
  const char *y = emit_ref(e, n->out[0]), *u = emit_ref(e, n->in[2]);
  emit_line(e, "/* y[idx[t]][:] %s upd[t][:]: %lld index tuples of %d, in order, slices of %lld */",
            red_op(red), (long long)ntup, m,
            (long long)slice);
  const char *t = ntup > 1 ? "t" : "0";
  if (ntup > 1)
    open_loop(e, "t", ntup);
  emit_tuple_offset(e, emit_ref(e, n->in[1]), t, m, xt, 0, "");
  if (slice == 1) {
    emit_line(e, "%s", combine_stmt(e, red, arena_printf(a, "%s[at]", y),
                                    arena_printf(a, "%s[%s]", u, t)));
  } else if (red == RED_NONE) {
    emit_line(e, "memcpy(%s + at, %s + %s * %lld, %lld * sizeof *%s);", y, u, t, (long long)slice,
              (long long)slice, y);
  } else {
    open_loop(e, "s", slice);
    emit_line(e, "%s", combine_stmt(e, red, arena_printf(a, "%s[at + s]", y),
                                    arena_printf(a, "%s[%s * %lld + s]", u, t, (long long)slice)));
    close_loop(e);
  }
  if (ntup > 1)
    close_loop(e);
}

bool scatter_emit(Emit *e, const Node *n) {
  const Type *xt = &gval(e->g, n->in[0])->type, *it = &gval(e->g, n->in[1])->type;
  const Type *ut = &gval(e->g, n->in[2])->type;
  int axis;
  Reduction red;
  char err[256];
  if (!scatter_shapes(n, xt, it, ut, &axis, &red, err, sizeof err))
    return false;
  if (type_numel(xt) == 0) {
    emit_line(e, "/* empty data: nothing to scatter */");
    return true;
  }
  const char *x = emit_ref(e, n->in[0]), *y = emit_ref(e, n->out[0]);
  emit_line(e, "memcpy(%s, %s, %lld * sizeof *%s);", y, x, (long long)type_numel(xt), y);
  if (type_numel(it) == 0)
    return true;
  if (n->op == OP_SCATTERND)
    emit_scatter_nd(e, n, red);
  else
    emit_scatter_elements(e, n, axis, red);
  return true;
}
