/* select.c — ops that pick or scan along one axis: ArgMax/ArgMin (index of
 * the best element), TopK (the k best elements and their indices) and
 * CumSum (running sums).
 *
 * All of them see their input as [outer, n, inner] around the axis: a "row"
 * is the n elements x[o][0..n)[i], strided by inner. The kernels loop over
 * rows and walk each row in order, so _eval and the generated C pick the
 * same element on ties: ArgMax/ArgMin keep the first best (the last with
 * select_last_index), TopK puts the lower index first among equal values.
 * Comparisons are plain C comparisons (false with NaN), the same in _eval
 * and in the generated C. */
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* The tensor viewed as [outer, n, inner] around `axis`. */
typedef struct AxisView {
  int64_t outer, n, inner;
} AxisView;

static AxisView axis_view(const Type *t, int axis) {
  AxisView v = {1, t->dims[axis], 1};
  for (int k = 0; k < axis; k++)
    v.outer *= t->dims[k];
  for (int k = axis + 1; k < t->rank; k++)
    v.inner *= t->dims[k];
  return v;
}

/* A 0/1 attribute; anything else is bad input. */
static bool flag_attr(Graph *g, Node *n, const char *name, int64_t dflt, Diag *d) {
  int64_t v = attr_int(n, name, dflt);
  if (v != 0 && v != 1)
    return diag_node(d, g, n, "attribute %s is %lld; expected 0 or 1", name, (long long)v);
  return true;
}

/* The comparisons the kernels make, with C's meaning (false on NaN). */
typedef enum Cmp { CMP_LT, CMP_LE, CMP_GT, CMP_GE } Cmp;

static const char *cmp_c(Cmp c) { return (const char *[]){"<", "<=", ">", ">="}[c]; }

#define CMP_APPLY(c, a, b) \
  ((c) == CMP_LT ? (a) < (b) : (c) == CMP_LE ? (a) <= (b) : (c) == CMP_GT ? (a) > (b) : (a) >= (b))

/* x[i] c x[j], in x's own domain */
static bool el_cmp(DType dt, const void *x, int64_t i, Cmp c, int64_t j) {
  if (dt_is_float(dt))
    return CMP_APPLY(c, el_get_f(dt, x, i), el_get_f(dt, x, j));
  if (dt_is_signed_int(dt))
    return CMP_APPLY(c, el_get_i(dt, x, i), el_get_i(dt, x, j));
  return CMP_APPLY(c, el_get_u(dt, x, i), el_get_u(dt, x, j));
}

/* "j" scaled by a constant stride, for readable index expressions in the
 * generated C: "j" when the stride is 1, else "j * 12". */
static const char *scaled(Emit *e, const char *var, int64_t stride) {
  return stride == 1 ? var : arena_printf(e->g->arena, "%s * %lld", var, (long long)stride);
}

/* The generated kernels run one row at a time inside loops over `o`
 * (outer) and `i` (inner); a loop of extent 1 is left out. Returns how many
 * loops were opened, for close_rows. */
static int open_rows(Emit *e, AxisView v) {
  int k = 0;
  if (v.outer != 1) {
    emit_line(e, "for (int64_t o = 0; o < %lld; o++) {", (long long)v.outer);
    e->indent++, k++;
  }
  if (v.inner != 1) {
    emit_line(e, "for (int64_t i = 0; i < %lld; i++) {", (long long)v.inner);
    e->indent++, k++;
  }
  return k;
}

static void close_rows(Emit *e, int k) {
  while (k-- > 0) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* Offset of row (o, i) in a tensor viewed as [outer, len, inner]: "o * 12 + i",
 * or "0" when there is one row. */
static const char *row_index(Emit *e, AxisView v, int64_t len) {
  const char *o = v.outer != 1 ? scaled(e, "o", len * v.inner) : NULL;
  const char *i = v.inner != 1 ? "i" : NULL;
  if (o && i)
    return arena_printf(e->g->arena, "%s + %s", o, i);
  return o ? o : i ? i : "0";
}

/* ptr advanced to row (o, i): "p_x + o * 12 + i", or "p_x". */
static const char *row_ptr(Emit *e, int vid, AxisView v, int64_t len) {
  const char *at = row_index(e, v, len);
  if (!strcmp(at, "0"))
    return emit_ref(e, vid);
  return arena_printf(e->g->arena, "%s + %s", emit_ref(e, vid), at);
}

/* ---- ArgMax / ArgMin --------------------------------------------------------
 * y[o][i] = index j of the largest (smallest) x[o][j][i]; the axis is kept
 * as 1 (keepdims=1, the default) or removed. Output i64. */

bool argmax_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Type *t = &x->type;
  if (t->dt == DT_BOOL)
    return diag_node(d, g, n, "input '%s' is bool; expected a numeric type", x->name);
  if (t->rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", x->name);
  int64_t a = attr_int(n, "axis", 0);
  int axis;
  if (!axis_norm(a, t->rank, &axis))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected %d to %d",
                     (long long)a, t->rank, -t->rank, t->rank - 1);
  if (t->dims[axis] == 0)
    return diag_node(d, g, n, "axis %d of input '%s' has length 0; expected a non-empty axis", axis,
                     x->name);
  if (!flag_attr(g, n, "keepdims", 1, d) || !flag_attr(g, n, "select_last_index", 0, d))
    return false;
  Type y = *t;
  y.dt = DT_I64;
  if (attr_int(n, "keepdims", 1)) {
    y.dims[axis] = 1;
  } else {
    memmove(&y.dims[axis], &y.dims[axis + 1], sizeof(int64_t) * (size_t)(t->rank - axis - 1));
    y.rank--;
  }
  node_out(g, n, 0)->type = y;
  return true;
}

/* A later element replaces the best so far when it compares so: strictly
 * better keeps the first of equals, better-or-equal the last. */
static Cmp argmax_cmp(const Node *n) {
  bool last = attr_int(n, "select_last_index", 0);
  if (n->op == OP_ARGMIN)
    return last ? CMP_LE : CMP_LT;
  return last ? CMP_GE : CMP_GT;
}

static int argmax_axis(const Node *n, int rank) {
  int axis = 0;
  bool ok = axis_norm(attr_int(n, "axis", 0), rank, &axis);
  KILN_ASSERT(ok); /* checked by argmax_infer */
  return axis;
}

bool argmax_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *t = &in[0].type;
  AxisView v = axis_view(t, argmax_axis(n, t->rank));
  Cmp c = argmax_cmp(n);
  for (int64_t o = 0; o < v.outer; o++) {
    for (int64_t i = 0; i < v.inner; i++) {
      int64_t base = o * v.n * v.inner + i, best = 0;
      for (int64_t j = 1; j < v.n; j++)
        if (el_cmp(t->dt, in[0].data, base + j * v.inner, c, base + best * v.inner))
          best = j;
      el_set_i(DT_I64, out[0].data, o * v.inner + i, best);
    }
  }
  return true;
}

bool argmax_emit(Emit *e, const Node *n) {
  const Type *t = &gval(e->g, n->in[0])->type;
  AxisView v = axis_view(t, argmax_axis(n, t->rank));
  if (v.outer * v.inner == 0) {
    emit_line(e, "/* no rows */");
    return true;
  }
  emit_line(e, "/* %s of each row: x as [%lld][%lld][%lld], y as [%lld][%lld] */", node_op_name(n),
            (long long)v.outer, (long long)v.n, (long long)v.inner, (long long)v.outer,
            (long long)v.inner);
  int loops = open_rows(e, v);
  emit_tmpl(e, "argmax", "T", dt_ctype(t->dt), "ROW", row_ptr(e, n->in[0], v, v.n),
            "Y", emit_ref(e, n->out[0]), "YAT", row_index(e, v, 1), "N", emit_int(e, v.n),
            "CMP", cmp_c(argmax_cmp(n)), "XJ", scaled(e, "j", v.inner), NULL);
  close_rows(e, loops);
  return true;
}

/* ---- TopK ---------------------------------------------------------------------
 * values, indices = the k largest (smallest with largest=0) elements of each
 * row, best first, ties by lower index. k is the attribute k before opset 10
 * and the constant 1-element input K from 10 on; largest and sorted come in
 * opset 11 (unsorted output may be in any order, so sorted order serves). */

static bool topk_k(Graph *g, Node *n, int64_t *k, Diag *d) {
  if (n->opset < 10) {
    if (!attr_get(n, "k"))
      return diag_node(d, g, n, "attribute k is missing; expected it before opset 10");
    *k = attr_int(n, "k", 0);
    return true;
  }
  int64_t *vals;
  int len;
  if (!const_input_ints(g, n, 1, "K", &vals, &len, d))
    return false;
  if (len != 1)
    return diag_node(d, g, n, "input '%s' (K) has %d elements; expected exactly 1",
                     node_in(g, n, 1)->name, len);
  *k = vals[0];
  return true;
}

bool topk_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Type *t = &x->type;
  if (t->dt == DT_BOOL)
    return diag_node(d, g, n, "input '%s' is bool; expected a numeric type", x->name);
  if (t->rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", x->name);
  int64_t a = attr_int(n, "axis", -1), k = 0;
  int axis;
  if (!axis_norm(a, t->rank, &axis))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected %d to %d",
                     (long long)a, t->rank, -t->rank, t->rank - 1);
  if (!topk_k(g, n, &k, d))
    return false;
  if (k < 0 || k > t->dims[axis])
    return diag_node(d, g, n, "k is %lld but axis %d has length %lld; expected 0 <= k <= %lld",
                     (long long)k, axis, (long long)t->dims[axis], (long long)t->dims[axis]);
  if (!flag_attr(g, n, "largest", 1, d) || !flag_attr(g, n, "sorted", 1, d))
    return false;
  Type y = *t;
  y.dims[axis] = k;
  node_out(g, n, 0)->type = y;
  y.dt = DT_I64;
  node_out(g, n, 1)->type = y;
  return true;
}

/* The normalised axis of a typed TopK (its k is the values output's length
 * on that axis). */
static int topk_axis(const Node *n, int rank) {
  int axis = 0;
  bool ok = axis_norm(attr_int(n, "axis", -1), rank, &axis);
  KILN_ASSERT(ok); /* checked by topk_infer */
  return axis;
}

bool topk_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *t = &in[0].type;
  DType dt = t->dt;
  int axis = topk_axis(n, t->rank);
  AxisView v = axis_view(t, axis);
  int64_t k = out[0].type.dims[axis], *idx = out[1].data;
  Cmp c = attr_int(n, "largest", 1) ? CMP_GT : CMP_LT;
  for (int64_t o = 0; o < v.outer; o++) {
    for (int64_t i = 0; i < v.inner; i++) {
      /* row element j is x[src + j * inner]; slot p of the best-first list
       * is idx[dst + p * inner], the row index of its element */
      int64_t src = o * v.n * v.inner + i, dst = o * k * v.inner + i, s = v.inner, filled = 0;
      for (int64_t j = 0; j < v.n; j++) {
        int64_t p;
        if (filled < k)
          p = filled++;
        else if (k > 0 && el_cmp(dt, in[0].data, src + j * s, c, src + idx[dst + (k - 1) * s] * s))
          p = k - 1;
        else
          continue;
        /* move ahead past strictly worse elements only: equal ones came
         * earlier and keep their place */
        for (; p > 0 && el_cmp(dt, in[0].data, src + j * s, c, src + idx[dst + (p - 1) * s] * s); p--)
          idx[dst + p * s] = idx[dst + (p - 1) * s];
        idx[dst + p * s] = j;
      }
      for (int64_t p = 0; p < k; p++)
        el_convert(dt, out[0].data, dst + p * s, dt, in[0].data, src + idx[dst + p * s] * s);
    }
  }
  return true;
}

bool topk_emit(Emit *e, const Node *n) {
  const Type *t = &gval(e->g, n->in[0])->type;
  int axis = topk_axis(n, t->rank);
  AxisView v = axis_view(t, axis);
  int64_t k = gval(e->g, n->out[0])->type.dims[axis];
  bool largest = attr_int(n, "largest", 1);
  if (k == 0 || v.outer * v.inner == 0) {
    emit_line(e, "/* k = 0 or no rows: nothing to select */");
    return true;
  }
  emit_line(e, "/* the %lld %s of each row, best first: x as [%lld][%lld][%lld], values and "
               "indices as [%lld][%lld][%lld] */", (long long)k, largest ? "largest" : "smallest",
            (long long)v.outer, (long long)v.n, (long long)v.inner, (long long)v.outer, (long long)k,
            (long long)v.inner);
  int loops = open_rows(e, v);
  emit_tmpl(e, "topk", "T", dt_ctype(t->dt), "ROW", row_ptr(e, n->in[0], v, v.n),
            "VROW", row_ptr(e, n->out[0], v, k), "IROW", row_ptr(e, n->out[1], v, k),
            "N", emit_int(e, v.n), "K", emit_int(e, k), "KM1", emit_int(e, k - 1),
            "CMP", largest ? ">" : "<", "XJ", scaled(e, "j", v.inner), "P", scaled(e, "p", v.inner),
            "LAST", emit_int(e, (k - 1) * v.inner), "S", emit_int(e, v.inner), NULL);
  close_rows(e, loops);
  return true;
}

/* ---- CumSum ---------------------------------------------------------------------
 * y[o][j][i] = sum of x[o][j'][i] for j' <= j (j' < j with exclusive=1;
 * j' >= j, resp. j' > j, with reverse=1). The axis is a constant scalar
 * input. Sums accumulate in the element type, as the generated C does. */

static bool cumsum_dtype_ok(DType dt) {
  return dt == DT_F32 || dt == DT_F64 || dt == DT_I32 || dt == DT_I64 || dt == DT_U32 ||
         dt == DT_U64;
}

bool cumsum_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *ax = node_in(g, n, 1);
  const Type *t = &x->type;
  if (!cumsum_dtype_ok(t->dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32, f64, i32, i64, u32 or u64", x->name,
                     dt_name(t->dt));
  if (t->rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", x->name);
  if (ax && ax->type.dt != DT_I32 && ax->type.dt != DT_I64)
    return diag_node(d, g, n, "input '%s' (axis) is %s; expected i32 or i64", ax->name,
                     dt_name(ax->type.dt));
  int64_t *vals;
  int len, axis;
  if (!const_input_ints(g, n, 1, "axis", &vals, &len, d))
    return false;
  if (len != 1)
    return diag_node(d, g, n, "input '%s' (axis) has %d elements; expected a scalar",
                     node_in(g, n, 1)->name, len);
  if (!axis_norm(vals[0], t->rank, &axis))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected %d to %d",
                     (long long)vals[0], t->rank, -t->rank, t->rank - 1);
  if (!flag_attr(g, n, "exclusive", 0, d) || !flag_attr(g, n, "reverse", 0, d))
    return false;
  node_out(g, n, 0)->type = *t;
  return true;
}

/* The normalised axis of a typed CumSum (infer checked it). */
static int cumsum_axis(const Tensor *axis_in, int rank) {
  int axis = 0;
  bool ok = axis_in->data && axis_norm(el_get_i(axis_in->type.dt, axis_in->data, 0), rank, &axis);
  KILN_ASSERT(ok);
  return axis;
}

/* Store a running sum: fs for float types, else the wrapped integer sum is. */
static void store_sum(DType dt, void *y, int64_t at, double fs, uint64_t is) {
  if (dt_is_float(dt))
    el_set_f(dt, y, at, fs);
  else if (dt_is_signed_int(dt))
    el_set_i(dt, y, at, (int64_t)is);
  else
    el_set_u(dt, y, at, is);
}

bool cumsum_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *t = &in[0].type;
  DType dt = t->dt;
  AxisView v = axis_view(t, cumsum_axis(&in[1], t->rank));
  bool excl = attr_int(n, "exclusive", 0), rev = attr_int(n, "reverse", 0);
  for (int64_t o = 0; o < v.outer; o++) {
    for (int64_t i = 0; i < v.inner; i++) {
      double fs = 0;
      uint64_t is = 0; /* integer sums wrap, signed ones too */
      for (int64_t s = 0; s < v.n; s++) {
        int64_t j = rev ? v.n - 1 - s : s, at = o * v.n * v.inner + j * v.inner + i;
        if (excl)
          store_sum(dt, out[0].data, at, fs, is);
        if (dt == DT_F32)
          fs = (float)(fs + el_get_f(dt, in[0].data, at));
        else if (dt == DT_F64)
          fs += el_get_f(dt, in[0].data, at);
        else
          is += dt_is_signed_int(dt) ? (uint64_t)el_get_i(dt, in[0].data, at)
                                     : el_get_u(dt, in[0].data, at);
        if (!excl)
          store_sum(dt, out[0].data, at, fs, is);
      }
    }
  }
  return true;
}

bool cumsum_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *t = &gval(g, n->in[0])->type;
  const Value *ax = gval(g, n->in[1]);
  Tensor at = {ax->type, ax->data};
  AxisView v = axis_view(t, cumsum_axis(&at, t->rank));
  if (v.outer * v.inner * v.n == 0) {
    emit_line(e, "/* empty input: nothing to sum */");
    return true;
  }
  bool excl = attr_int(n, "exclusive", 0), rev = attr_int(n, "reverse", 0);
  emit_line(e, "/* %s running sums%s of each row: x and y as [%lld][%lld][%lld] */",
            excl ? "exclusive" : "inclusive", rev ? ", last to first," : "", (long long)v.outer,
            (long long)v.n, (long long)v.inner);
  const char *loop = rev ? arena_printf(g->arena, "for (int64_t j = %lld; j >= 0; j--)", (long long)(v.n - 1))
                         : arena_printf(g->arena, "for (int64_t j = 0; j < %lld; j++)", (long long)v.n);
  int loops = open_rows(e, v);
  emit_tmpl(e, "cumsum", "T", dt_ctype(t->dt), "ROW", row_ptr(e, n->in[0], v, v.n),
            "YROW", row_ptr(e, n->out[0], v, v.n), "LOOP", loop, "XJ", scaled(e, "j", v.inner),
            "SUM", excl ? "acc" : "acc + x", NULL);
  close_rows(e, loops);
  return true;
}
