/* gather.c — indexing along one axis: Gather (pick whole slices of data by
 * index, y's shape is data's with that axis replaced by the indices' shape)
 * and GatherElements (pick one element per index, y has the indices'
 * shape). Indices are i32 or i64; negative ones count from the end.
 *
 * An index outside [-dim, dim) is an error wherever kiln can see it: in
 * _infer when the indices are constant, in _eval always. ONNX leaves it
 * undefined at run time; the generated C wraps negative indices and then
 * clamps into [0, dim) so that it can never read out of bounds. */
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* The gather axis, normalised against data's rank. */
static bool gather_axis(const Node *n, int rank, int *axis) {
  return axis_norm(attr_int(n, "axis", 0), rank, axis);
}

/* Every index of t in [-dim, dim): else the message names the first bad one. */
static bool indices_in_range(DType dt, const void *data, int64_t cnt, int64_t dim, char *err,
                             size_t errn) {
  for (int64_t i = 0; i < cnt; i++) {
    int64_t v = el_get_i(dt, data, i);
    if (v < -dim || v >= dim) {
      snprintf(err, errn, "index %lld out of range [%lld, %lld)", (long long)v, (long long)-dim,
               (long long)dim);
      return false;
    }
  }
  return true;
}

static bool check_shapes(const Node *n, const Type *x, const Type *ix, Type *y, int *axis,
                         char *err, size_t errn) {
  if (x->rank < 1) {
    snprintf(err, errn, "data is a scalar; expected rank >= 1");
    return false;
  }
  if (!gather_axis(n, x->rank, axis)) {
    snprintf(err, errn, "axis %lld out of range; expected [%d, %d)",
             (long long)attr_int(n, "axis", 0), -x->rank, x->rank);
    return false;
  }
  if (ix->dt != DT_I32 && ix->dt != DT_I64) {
    snprintf(err, errn, "indices are %s; expected i32 or i64", dt_name(ix->dt));
    return false;
  }
  *y = *x;
  if (n->op == OP_GATHERELEMENTS) {
    if (ix->rank != x->rank) {
      snprintf(err, errn, "indices have rank %d and data rank %d; expected equal ranks", ix->rank,
               x->rank);
      return false;
    }
    for (int d = 0; d < x->rank; d++)
      if (d != *axis && ix->dims[d] > x->dims[d]) {
        snprintf(err, errn, "indices dim %d is %lld, larger than data's %lld; expected <= data's "
                 "dims off the axis", d, (long long)ix->dims[d], (long long)x->dims[d]);
        return false;
      }
    y->rank = ix->rank;
    memcpy(y->dims, ix->dims, sizeof y->dims);
  } else {
    if (x->rank - 1 + ix->rank > MAX_RANK) {
      snprintf(err, errn, "output rank %d exceeds %d; expected a smaller rank",
               x->rank - 1 + ix->rank, MAX_RANK);
      return false;
    }
    y->rank = x->rank - 1 + ix->rank;
    for (int d = 0; d < ix->rank; d++)
      y->dims[*axis + d] = ix->dims[d];
    for (int d = *axis + 1; d < x->rank; d++)
      y->dims[d - 1 + ix->rank] = x->dims[d];
  }
  if (type_numel(y) > 0 && x->dims[*axis] == 0) {
    snprintf(err, errn, "axis %d of data is empty; expected a non-empty axis to index", *axis);
    return false;
  }
  return true;
}

bool gather_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *ix = node_in(g, n, 1);
  Type y;
  int axis;
  char err[256];
  if (!check_shapes(n, &x->type, &ix->type, &y, &axis, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  if (ix->data && !indices_in_range(ix->type.dt, ix->data, type_numel(&ix->type),
                                    x->type.dims[axis], err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = y;
  return true;
}

static void copy_el(DType dt, void *dst, int64_t j, const void *src, int64_t i) {
  size_t sz = dt_size(dt);
  memcpy((char *)dst + (size_t)j * sz, (const char *)src + (size_t)i * sz, sz);
}

/* Element count of dims [from, to) of t. */
static int64_t span(const Type *t, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++)
    p *= t->dims[d];
  return p;
}

bool gather_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *xt = &in[0].type, *it = &in[1].type, *yt = &out[0].type;
  int axis;
  char err[256];
  KILN_ASSERT(gather_axis(n, xt->rank, &axis));
  int64_t dim = xt->dims[axis], cnt = type_numel(yt);
  if (!indices_in_range(it->dt, in[1].data, type_numel(it), dim, err, sizeof err))
    return diag_error(d, "node '%s' (%s): %s", n->name, node_op_name(n), err);
  if (n->op == OP_GATHER) {
    /* y[o][k][i] = x[o][idx[k]][i] with o over the dims before the axis */
    int64_t nk = type_numel(it), inner = span(xt, axis + 1, xt->rank);
    for (int64_t e = 0; e < cnt; e++) {
      int64_t i = e % inner, k = e / inner % nk, o = e / inner / nk;
      int64_t j = el_get_i(it->dt, in[1].data, k);
      j = j < 0 ? j + dim : j;
      copy_el(yt->dt, out[0].data, e, in[0].data, (o * dim + j) * inner + i);
    }
    return true;
  }
  /* GatherElements: y[c] = x[c with c[axis] replaced by idx[c]] */
  int64_t xs[MAX_RANK];
  type_strides(xt, xs);
  for (int64_t e = 0; e < cnt; e++) {
    int64_t src = 0, rem = e;
    for (int k = yt->rank - 1; k >= 0; k--) {
      int64_t c = rem % yt->dims[k];
      rem /= yt->dims[k];
      if (k == axis) {
        c = el_get_i(it->dt, in[1].data, e);
        c = c < 0 ? c + dim : c;
      }
      src += c * xs[k];
    }
    copy_el(yt->dt, out[0].data, e, in[0].data, src);
  }
  return true;
}

/* The C lines that turn raw index `raw` into `j` in [0, dim). */
static void emit_index(Emit *e, const char *raw, int64_t dim) {
  emit_line(e, "int64_t j = %s;", raw);
  emit_line(e, "if (j < 0)");
  emit_line(e, "  j += %lld;", (long long)dim);
  emit_line(e, "j = j < 0 ? 0 : j > %lld ? %lld : j; /* out of range is undefined: never read "
               "outside x */", (long long)(dim - 1), (long long)(dim - 1));
}

/* Loops over the dims before the axis (o) and the indices (k); each
 * step copies one row of `inner` elements. Loops of one trip are left out. */
static void emit_gather(Emit *e, const Node *n, int axis) {
  Arena *a = e->g->arena;
  const Type *xt = &gval(e->g, n->in[0])->type, *it = &gval(e->g, n->in[1])->type;
  const char *x = emit_ref(e, n->in[0]), *idx = emit_ref(e, n->in[1]), *y = emit_ref(e, n->out[0]);
  int64_t outer = span(xt, 0, axis), nk = type_numel(it), dim = xt->dims[axis];
  int64_t inner = span(xt, axis + 1, xt->rank);
  emit_line(e, "/* y[o][k][:] = x[o][idx[k]][:]: %lld outer, %lld indices, rows of %lld */",
            (long long)outer, (long long)nk, (long long)inner);
  const char *k = nk > 1 ? "k" : "0";
  const char *yrow = outer > 1 ? arena_printf(a, "o * %lld + %s", (long long)nk, k) : k;
  const char *xrow = outer > 1 ? arena_printf(a, "o * %lld + j", (long long)dim) : "j";
  int loops = 0;
  if (outer > 1) {
    emit_line(e, "for (int o = 0; o < %lld; o++) {", (long long)outer);
    e->indent++, loops++;
  }
  if (nk > 1) {
    emit_line(e, "for (int k = 0; k < %lld; k++) {", (long long)nk);
    e->indent++, loops++;
  }
  emit_index(e, arena_printf(a, "%s[%s]", idx, k), dim);
  if (inner == 1)
    emit_line(e, "%s[%s] = %s[%s];", y, yrow, x, xrow);
  else
    emit_line(e, "memcpy(%s + (%s) * %lld, %s + (%s) * %lld, %lld * sizeof *%s);", y, yrow,
              (long long)inner, x, xrow, (long long)inner, (long long)inner, x);
  while (loops-- > 0) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* "i0 * 12 + i1 * 4 + i2" over the dims of t, with `ax` (when >= 0)
 * replaced by "j". */
static const char *flat_index(Arena *a, const Type *t, int ax) {
  int64_t st[MAX_RANK];
  type_strides(t, st);
  Buf b = {0};
  for (int d = 0; d < t->rank; d++) {
    if (b.len)
      buf_puts(&b, " + ");
    if (d == ax)
      buf_puts(&b, "j");
    else
      buf_printf(&b, "i%d", d);
    if (st[d] != 1)
      buf_printf(&b, " * %lld", (long long)st[d]);
  }
  const char *r = arena_strdup(a, b.len ? b.s : "0");
  buf_free(&b);
  return r;
}

static void emit_gather_elements(Emit *e, const Node *n, int axis) {
  Arena *a = e->g->arena;
  const Type *xt = &gval(e->g, n->in[0])->type, *yt = &gval(e->g, n->out[0])->type;
  const char *yi = flat_index(a, yt, -1);
  emit_line(e, "/* y[i] = x[i with axis %d replaced by idx[i]] */", axis);
  for (int d = 0; d < yt->rank; d++) {
    emit_line(e, "for (int i%d = 0; i%d < %lld; i%d++) {", d, d, (long long)yt->dims[d], d);
    e->indent++;
  }
  emit_index(e, arena_printf(a, "%s[%s]", emit_ref(e, n->in[1]), yi), xt->dims[axis]);
  emit_line(e, "%s[%s] = %s[%s];", emit_ref(e, n->out[0]), yi, emit_ref(e, n->in[0]),
            flat_index(a, xt, axis));
  for (int d = 0; d < yt->rank; d++) {
    e->indent--;
    emit_line(e, "}");
  }
}

bool gather_emit(Emit *e, const Node *n) {
  const Type *xt = &gval(e->g, n->in[0])->type;
  int axis;
  if (!gather_axis(n, xt->rank, &axis))
    return false;
  if (type_numel(&gval(e->g, n->out[0])->type) == 0) {
    emit_line(e, "/* empty output: nothing to gather */");
    return true;
  }
  if (n->op == OP_GATHER)
    emit_gather(e, n, axis);
  else
    emit_gather_elements(e, n, axis);
  return true;
}

/* ---- DequantizeGather ------------------------------------------------------
 * A quantized embedding (compiler/passes/quantize.c): y[k][:] =
 * data[idx[k]][:] · scale[idx[k]] for an int8 table data[V,D] with one f32
 * scale per row; y is f32[idx..., D]. Indices as Gather's on axis 0. */

bool dequantize_gather_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *ix = node_in(g, n, 1), *s = node_in(g, n, 2);
  char sx[128], ss[128], err[256];
  if (!x || !ix || !s)
    return diag_node(d, g, n, "input %s is absent; expected a tensor", !x ? "data" : !ix ? "indices" : "scale");
  if (x->type.dt != DT_I8 || x->type.rank != 2 || s->type.dt != DT_F32 || s->type.rank != 1 ||
      s->type.dims[0] != x->type.dims[0])
    return diag_node(d, g, n, "data is %s and scale %s; expected data i8[V,D] and scale f32[V]",
                     type_str(&x->type, sx, sizeof sx), type_str(&s->type, ss, sizeof ss));
  Type y;
  int axis;
  if (!check_shapes(n, &x->type, &ix->type, &y, &axis, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  if (ix->data && !indices_in_range(ix->type.dt, ix->data, type_numel(&ix->type), x->type.dims[0], err,
                                    sizeof err))
    return diag_node(d, g, n, "%s", err);
  y.dt = DT_F32;
  node_out(g, n, 0)->type = y;
  return true;
}

bool dequantize_gather_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *it = &in[1].type;
  int64_t dim = in[0].type.dims[0], row = in[0].type.dims[1], nk = type_numel(it);
  char err[256];
  if (!indices_in_range(it->dt, in[1].data, nk, dim, err, sizeof err))
    return diag_error(d, "node '%s' (%s): %s", n->name, node_op_name(n), err);
  const int8_t *q = in[0].data;
  const float *scale = in[2].data;
  float *y = out[0].data;
  for (int64_t k = 0; k < nk; k++) {
    int64_t j = el_get_i(it->dt, in[1].data, k);
    j = j < 0 ? j + dim : j;
    for (int64_t i = 0; i < row; i++)
      y[k * row + i] = (float)((double)q[j * row + i] * scale[j]);
  }
  return true;
}

bool dequantize_gather_emit(Emit *e, const Node *n) {
  const Type *xt = &gval(e->g, n->in[0])->type, *it = &gval(e->g, n->in[1])->type;
  int64_t nk = type_numel(it), dim = xt->dims[0], row = xt->dims[1];
  if (nk == 0 || row == 0) {
    emit_line(e, "/* empty output: nothing to gather */");
    return true;
  }
  const char *x = emit_ref(e, n->in[0]), *idx = emit_ref(e, n->in[1]), *s = emit_ref(e, n->in[2]);
  const char *y = emit_ref(e, n->out[0]);
  emit_line(e, "/* y[k][:] = x[idx[k]][:] * scale[idx[k]]: %lld indices, int8 rows of %lld */",
            (long long)nk, (long long)row);
  emit_line(e, "for (int k = 0; k < %lld; k++) {", (long long)nk);
  e->indent++;
  emit_index(e, arena_printf(e->g->arena, "%s[k]", idx), dim);
  emit_line(e, "const int8_t *xr = %s + j * %lld; /* row j of the table */", x, (long long)row);
  emit_line(e, "const float sj = %s[j];", s);
  emit_line(e, "float *yr = %s + k * %lld;", y, (long long)row);
  emit_line(e, "for (int i = 0; i < %lld; i++)", (long long)row);
  emit_line(e, "  yr[i] = (float)xr[i] * sj;");
  e->indent--;
  emit_line(e, "}");
  return true;
}
