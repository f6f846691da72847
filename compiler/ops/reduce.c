/* reduce.c — reductions over a set of axes: ReduceSum, ReduceMean,
 * ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
 * ReduceLogSumExp and ReduceSumSquare.
 *
 * The axes come from the `axes` attribute, or from a constant second input
 * (ReduceSum from opset 13, the others from opset 18). No axes means every
 * axis, or a plain copy when noop_with_empty_axes=1 (input-axes versions
 * only). keepdims (default 1) keeps each reduced axis as a 1. A reduction
 * over zero elements gives the op's identity: 0 (Sum, SumSquare, L1, L2),
 * 1 (Prod), the lowest value (Max, and LogSum / LogSumExp: -inf), the
 * highest (Min), NaN for a float Mean and 0 for an integer one.
 *
 * _eval and _emit both see the input as two index spaces, the kept axes (one
 * point per output element, row-major) and the reduced axes. Adjacent axes
 * of one kind merge and 1-sized axes vanish, so reducing the last axis is a
 * single contiguous inner loop. Integers accumulate in int64 / uint64 (so
 * int32 sums wrap only on the final store, as _eval's do); L2, LogSum and
 * LogSumExp of integers compute in double. f32 accumulates in float, like
 * the other f32 kernels: its error stays well inside the check tolerance
 * for the row lengths transformers reduce. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* ---- axes ------------------------------------------------------------------ */

/* Whether the node's axes are its second input (else the attribute). */
static bool axes_from_input(const Node *n) { return n->opset >= (n->op == OP_REDUCESUM ? 13 : 18); }

/* The node's axes list into buf (at most cap kept); returns its length.
 * axes_in is input 1 (data NULL when absent or when axes are an attribute). */
static int get_axes(const Node *n, const Tensor *axes_in, int64_t *buf, int cap) {
  if (!axes_from_input(n)) {
    const Attr *a = attr_get(n, "axes");
    int len = a && a->kind == ATTR_INTS ? a->n : 0;
    for (int k = 0; k < len && k < cap; k++)
      buf[k] = a->ints[k];
    return len;
  }
  if (!axes_in || !axes_in->data)
    return 0;
  int64_t len = type_numel(&axes_in->type);
  for (int64_t k = 0; k < len && k < cap; k++)
    buf[k] = el_get_i(axes_in->type.dt, axes_in->data, k);
  return (int)len;
}

/* Which axes of a rank-`rank` input are reduced (red[a]); *noop when the
 * node copies its input instead. False, with what is wrong in why, for a
 * bad axes list. */
static bool reduce_mask(const Node *n, const int64_t *axes, int naxes, int rank, bool red[MAX_RANK],
                        bool *noop, char *why, size_t nwhy) {
  *noop = false;
  for (int a = 0; a < MAX_RANK; a++)
    red[a] = naxes == 0;
  if (naxes == 0) {
    *noop = axes_from_input(n) && attr_int(n, "noop_with_empty_axes", 0) != 0;
    return true;
  }
  if (naxes > rank) {
    snprintf(why, nwhy, "%d axes for an input of rank %d", naxes, rank);
    return false;
  }
  for (int k = 0; k < naxes; k++) {
    int a;
    if (!axis_norm(axes[k], rank, &a)) {
      snprintf(why, nwhy, "axis %lld is out of range for rank %d", (long long)axes[k], rank);
      return false;
    }
    if (red[a]) {
      snprintf(why, nwhy, "axis %lld is listed twice", (long long)axes[k]);
      return false;
    }
    red[a] = true;
  }
  return true;
}

/* The mask for an already inferred node; axes_in as for get_axes. */
static void node_mask(const Node *n, const Tensor *axes_in, int rank, bool red[MAX_RANK], bool *noop) {
  int64_t axes[MAX_RANK];
  int na = get_axes(n, axes_in, axes, MAX_RANK);
  char why[96];
  bool ok = reduce_mask(n, axes, na, rank, red, noop, why, sizeof why);
  KILN_ASSERT(ok);
}

/* ReduceMax and ReduceMin take bool from opset 20 (any / all of the axes:
 * the unsigned path, false < true). */
static bool dtype_ok(const Node *n, DType dt) {
  bool maxmin = n->op == OP_REDUCEMAX || n->op == OP_REDUCEMIN;
  switch (dt) {
  case DT_F32: case DT_F64: case DT_I32: case DT_I64: case DT_U32: case DT_U64: return true;
  case DT_I8: case DT_U8: return maxmin;
  case DT_BOOL: return maxmin && n->opset >= 20;
  default: return false;
  }
}

bool reduce_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Type *xt = &x->type;
  if (!dtype_ok(n, xt->dt))
    return diag_node(d, g, n, "input '%s' is %s; expected %s", x->name, dt_name(xt->dt),
                     n->op == OP_REDUCEMAX || n->op == OP_REDUCEMIN
                         ? "f32, f64, i8, u8, i32, i64, u32 or u64 (or bool from opset 20)"
                         : "f32, f64, i32, i64, u32 or u64");
  Tensor axes_in = {{0}, NULL};
  if (axes_from_input(n)) {
    if (attr_get(n, "axes"))
      return diag_node(d, g, n, "has an 'axes' attribute at opset %d; expected axes as the second input",
                       n->opset);
    if (node_has_in(n, 1)) {
      int64_t *vals;
      int len;
      if (!const_input_ints(g, n, 1, "axes", &vals, &len, d))
        return false;
      axes_in = (Tensor){node_in(g, n, 1)->type, node_in(g, n, 1)->data};
    }
  } else if (attr_get(n, "axes") && attr_get(n, "axes")->kind != ATTR_INTS) {
    return diag_node(d, g, n, "attribute 'axes' is not a list of ints; expected ints");
  } else if (node_has_in(n, 1)) {
    return diag_node(d, g, n, "has an axes input at opset %d; expected the 'axes' attribute "
                     "(axes become an input at opset %d)", n->opset, n->op == OP_REDUCESUM ? 13 : 18);
  }
  int64_t axes[MAX_RANK + 1];
  int na = get_axes(n, &axes_in, axes, MAX_RANK + 1);
  bool red[MAX_RANK], noop;
  char why[96];
  if (!reduce_mask(n, axes, na, xt->rank, red, &noop, why, sizeof why))
    return diag_node(d, g, n, "%s; expected distinct axes in [-%d, %d]", why, xt->rank, xt->rank - 1);
  Type t = {.dt = xt->dt, .rank = 0};
  bool keep = attr_int(n, "keepdims", 1) != 0;
  for (int a = 0; a < xt->rank; a++)
    if (noop || !red[a])
      t.dims[t.rank++] = xt->dims[a];
    else if (keep)
      t.dims[t.rank++] = 1;
  node_out(g, n, 0)->type = t;
  return true;
}

/* ---- the two index spaces -------------------------------------------------- */

/* One index space (kept or reduced axes) as merged groups: point k of the
 * space is at offset sum_j (k / div[j] % size[j]) * stride[j] of x. */
typedef struct Walk {
  int n;
  int64_t size[MAX_RANK], div[MAX_RANK], stride[MAX_RANK];
  int64_t total;   /* number of points */
} Walk;

static void walk_init(Walk *w, const Type *t, const bool red[MAX_RANK], bool reduced) {
  int64_t st[MAX_RANK];
  type_strides(t, st);
  w->n = 0;
  w->total = 1;
  for (int a = 0; a < t->rank; a++) {
    if (red[a] != reduced || t->dims[a] == 1)
      continue;
    w->total *= t->dims[a];
    if (w->n > 0 && w->stride[w->n - 1] == st[a] * t->dims[a]) {
      w->size[w->n - 1] *= t->dims[a];
      w->stride[w->n - 1] = st[a];
      continue;
    }
    w->size[w->n] = t->dims[a];
    w->stride[w->n++] = st[a];
  }
  int64_t div = 1;
  for (int j = w->n - 1; j >= 0; j--) {
    w->div[j] = div;
    div *= w->size[j];
  }
}

static int64_t walk_offset(const Walk *w, int64_t k) {
  int64_t off = 0;
  for (int j = 0; j < w->n; j++)
    off += k / w->div[j] % w->size[j] * w->stride[j];
  return off;
}

/* walk_offset as a C expression in variable v ("0" when empty). */
static const char *walk_expr(Emit *e, const Walk *w, const char *v) {
  Buf b = {0};
  for (int j = 0; j < w->n; j++) {
    buf_puts(&b, j ? " + " : "");
    buf_puts(&b, v);
    if (w->div[j] != 1)
      buf_printf(&b, " / %lld", (long long)w->div[j]);
    if (j > 0)
      buf_printf(&b, " %% %lld", (long long)w->size[j]);
    if (w->stride[j] != 1)
      buf_printf(&b, " * %lld", (long long)w->stride[j]);
  }
  const char *r = arena_strdup(e->g->arena, b.len ? b.s : "0");
  buf_free(&b);
  return r;
}

/* ---- reference ------------------------------------------------------------- */

static bool float_math(int op) {
  return op == OP_REDUCEL2 || op == OP_REDUCELOGSUM || op == OP_REDUCELOGSUMEXP;
}

/* The highest (and lowest) value of an integer dtype, as uint64 / int64. */
static uint64_t int_highest(DType dt) {
  int bits = 8 * (int)dt_size(dt) - (dt_is_signed_int(dt) ? 1 : 0);
  return bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}
static int64_t int_lowest(DType dt) { return dt_is_signed_int(dt) ? -(int64_t)int_highest(dt) - 1 : 0; }

/* Element 0 of p (dtype dt) := the result of reducing nothing. */
static void set_identity(int op, DType dt, void *p) {
  bool fl = dt_is_float(dt);
  switch (op) {
  case OP_REDUCEPROD: el_set_i(dt, p, 0, 1); break;
  case OP_REDUCEMEAN: fl ? el_set_f(dt, p, 0, NAN) : el_set_i(dt, p, 0, 0); break;
  case OP_REDUCEMIN: fl ? el_set_f(dt, p, 0, INFINITY) : el_set_u(dt, p, 0, int_highest(dt)); break;
  case OP_REDUCEMAX: case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP:
    fl ? el_set_f(dt, p, 0, -INFINITY) : el_set_i(dt, p, 0, int_lowest(dt));
    break;
  default: el_set_i(dt, p, 0, 0); break;
  }
}

/* Reduce the points of w at base in double (floats, and L2 / LogSum /
 * LogSumExp of integers). */
static double reduce_f(int op, DType dt, const void *x, int64_t base, const Walk *w) {
  if (op == OP_REDUCELOGSUMEXP) {
    double m = -INFINITY, s = 0;
    for (int64_t r = 0; r < w->total; r++)
      m = fmax(m, el_get_f(dt, x, base + walk_offset(w, r)));
    for (int64_t r = 0; r < w->total; r++)
      s += exp(el_get_f(dt, x, base + walk_offset(w, r)) - m);
    return isinf(m) ? m : m + log(s);
  }
  double acc = op == OP_REDUCEPROD ? 1 : op == OP_REDUCEMAX ? -INFINITY : op == OP_REDUCEMIN ? INFINITY : 0;
  for (int64_t r = 0; r < w->total; r++) {
    double v = el_get_f(dt, x, base + walk_offset(w, r));
    switch (op) {
    case OP_REDUCEL1: acc += fabs(v); break;
    case OP_REDUCEL2: case OP_REDUCESUMSQUARE: acc += v * v; break;
    case OP_REDUCEPROD: acc *= v; break;
    case OP_REDUCEMAX: acc = (v > acc || isnan(v)) ? v : acc; break;
    case OP_REDUCEMIN: acc = (v < acc || isnan(v)) ? v : acc; break;
    default: acc += v; break;
    }
  }
  switch (op) {
  case OP_REDUCEMEAN: return acc / (double)w->total;
  case OP_REDUCEL2: return sqrt(acc);
  case OP_REDUCELOGSUM: return log(acc);
  default: return acc;
  }
}

/* The same for signed integers, wrapping like two's complement int64. */
static int64_t reduce_i(int op, DType dt, const void *x, int64_t base, const Walk *w) {
  uint64_t acc = op == OP_REDUCEPROD ? 1 : 0;
  int64_t best = op == OP_REDUCEMAX ? int_lowest(dt) : (int64_t)int_highest(dt);
  for (int64_t r = 0; r < w->total; r++) {
    int64_t v = el_get_i(dt, x, base + walk_offset(w, r));
    uint64_t uv = (uint64_t)v;
    switch (op) {
    case OP_REDUCEL1: acc += v < 0 ? 0 - uv : uv; break;
    case OP_REDUCESUMSQUARE: acc += uv * uv; break;
    case OP_REDUCEPROD: acc *= uv; break;
    case OP_REDUCEMAX: best = v > best ? v : best; break;
    case OP_REDUCEMIN: best = v < best ? v : best; break;
    default: acc += uv; break;
    }
  }
  if (op == OP_REDUCEMAX || op == OP_REDUCEMIN)
    return best;
  if (op == OP_REDUCEMEAN)
    return (int64_t)acc / w->total;
  return (int64_t)acc;
}

static uint64_t reduce_u(int op, DType dt, const void *x, int64_t base, const Walk *w) {
  uint64_t acc = op == OP_REDUCEPROD ? 1 : 0;
  uint64_t best = op == OP_REDUCEMAX ? 0 : int_highest(dt);
  for (int64_t r = 0; r < w->total; r++) {
    uint64_t v = el_get_u(dt, x, base + walk_offset(w, r));
    switch (op) {
    case OP_REDUCESUMSQUARE: acc += v * v; break;
    case OP_REDUCEPROD: acc *= v; break;
    case OP_REDUCEMAX: best = v > best ? v : best; break;
    case OP_REDUCEMIN: best = v < best ? v : best; break;
    default: acc += v; break;
    }
  }
  if (op == OP_REDUCEMAX || op == OP_REDUCEMIN)
    return best;
  if (op == OP_REDUCEMEAN)
    return acc / (uint64_t)w->total;
  return acc;
}

bool reduce_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *xt = &in[0].type;
  DType dt = xt->dt;
  bool red[MAX_RANK], noop;
  node_mask(n, n->nin > 1 ? &in[1] : NULL, xt->rank, red, &noop);
  if (noop) {
    memcpy(out[0].data, in[0].data, type_bytes(xt));
    return true;
  }
  Walk kept, rw;
  walk_init(&kept, xt, red, false);
  walk_init(&rw, xt, red, true);
  for (int64_t o = 0; o < kept.total; o++) {
    int64_t base = walk_offset(&kept, o);
    if (rw.total == 0) {
      set_identity(n->op, dt, (char *)out[0].data + o * (int64_t)dt_size(dt));
    } else if (dt_is_float(dt) || float_math(n->op)) {
      el_set_f(dt, out[0].data, o, reduce_f(n->op, dt, in[0].data, base, &rw));
    } else if (dt_is_signed_int(dt)) {
      el_set_i(dt, out[0].data, o, reduce_i(n->op, dt, in[0].data, base, &rw));
    } else {
      el_set_u(dt, out[0].data, o, reduce_u(n->op, dt, in[0].data, base, &rw));
    }
  }
  return true;
}

/* ---- C --------------------------------------------------------------------- */

/* "(T)expr" when the accumulator type differs from the output's. */
static const char *as_type(Emit *e, DType dt, DType at, const char *expr) {
  if (dt == at)
    return expr;
  return arena_printf(e->g->arena, strchr(expr, ' ') ? "(%s)(%s)" : "(%s)%s", dt_ctype(dt), expr);
}

/* C type of the accumulator (also the DType that names its math functions). */
static DType acc_dtype(int op, DType dt) {
  if (dt_is_float(dt))
    return dt;
  if (float_math(op))
    return DT_F64;
  return dt_is_signed_int(dt) ? DT_I64 : DT_U64;
}

/* The fold step over element v, a statement in the accumulator's type.
 * Max and Min let a NaN through, as numpy's do. */
static const char *step_stmt(Emit *e, int op, DType at) {
  bool fl = dt_is_float(at);
  switch (op) {
  case OP_REDUCEL1:
    if (fl)
      return arena_printf(e->g->arena, "acc += %s(v);", emit_mathfn(e, at, "fabs"));
    return at == DT_I64 ? "acc += v < 0 ? -v : v;" : "acc += v;";
  case OP_REDUCEL2: case OP_REDUCESUMSQUARE: return "acc += v * v;";
  case OP_REDUCEPROD: return "acc *= v;";
  case OP_REDUCEMAX: return fl ? "acc = (v > acc || isnan(v)) ? v : acc;" : "acc = v > acc ? v : acc;";
  case OP_REDUCEMIN: return fl ? "acc = (v < acc || isnan(v)) ? v : acc;" : "acc = v < acc ? v : acc;";
  default: return "acc += v;";
  }
}

static const char *init_literal(Emit *e, int op, DType dt, DType at) {
  int64_t buf[1];
  switch (op) {
  case OP_REDUCEMAX: case OP_REDUCEMIN: set_identity(op, dt, buf); return emit_literal(e, dt, buf, 0);
  case OP_REDUCEPROD: return dt_is_float(at) ? emit_double_literal(e, at, 1) : "1";
  default: return dt_is_float(at) ? emit_double_literal(e, at, 0) : "0";
  }
}

static const char *final_expr(Emit *e, int op, DType at, int64_t count) {
  switch (op) {
  case OP_REDUCEMEAN:
    return dt_is_float(at) ? arena_printf(e->g->arena, "acc / %s", emit_double_literal(e, at, (double)count))
                           : arena_printf(e->g->arena, "acc / %lld", (long long)count);
  case OP_REDUCEL2: return arena_printf(e->g->arena, "%s(acc)", emit_mathfn(e, at, "sqrt"));
  case OP_REDUCELOGSUM: return arena_printf(e->g->arena, "%s(acc)", emit_mathfn(e, at, "log"));
  default: return "acc";
  }
}

bool reduce_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
  DType dt = x->type.dt;
  Tensor axes_in = {{0}, NULL};
  if (node_has_in(n, 1))
    axes_in = (Tensor){node_in(g, n, 1)->type, node_in(g, n, 1)->data};
  bool red[MAX_RANK], noop;
  node_mask(n, &axes_in, x->type.rank, red, &noop);
  if (type_numel(&y->type) == 0)
    return true;
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]);
  if (noop) {
    if (strcmp(X, Y))
      emit_line(e, "memcpy(%s, %s, %zu); /* no axes: a copy */", Y, X, type_bytes(&x->type));
    return true;
  }
  Walk kept, rw;
  walk_init(&kept, &x->type, red, false);
  walk_init(&rw, &x->type, red, true);
  if (rw.total == 0) {
    int64_t buf[1];
    set_identity(n->op, dt, buf);
    emit_line(e, "for (int o = 0; o < %lld; o++)", (long long)kept.total);
    emit_line(e, "  %s[o] = %s; /* nothing to reduce */", Y, emit_literal(e, dt, buf, 0));
    return true;
  }
  DType at = acc_dtype(n->op, dt);
  const char *koff = walk_expr(e, &kept, "o");
  const char *XO = strcmp(koff, "0") ? arena_printf(g->arena, "%s + %s", X, koff) : X;
  if (n->op == OP_REDUCELOGSUMEXP) {
    emit_tmpl(e, "reduce_logsumexp", "T", dt_ctype(dt), "ACC", dt_ctype(at), "X", XO, "Y", Y,
              "OUT_N", emit_int(e, kept.total), "RED_N", emit_int(e, rw.total), "R_OFF",
              walk_expr(e, &rw, "r"), "ZERO", emit_double_literal(e, at, 0), "EXP",
              emit_mathfn(e, at, "exp"), "RESULT",
              as_type(e, dt, at, arena_printf(g->arena, "isinf(max) ? max : max + %s(sum)",
                                              emit_mathfn(e, at, "log"))),
              NULL);
    return true;
  }
  /* the reduced axes all outside the kept ones (a mean over the positions
   * of [N, P, C]): the kept elements are contiguous, so each step of r
   * folds a row of them into all of y, a loop that vectorises, where a
   * loop per output element would read x with a stride; each y[o] folds
   * the same elements in the same order */
  bool outer = dt_is_float(dt) && at == dt && kept.total > 1, seen_kept = false;
  for (int j = 0; j < x->type.rank; j++) {
    if (x->type.dims[j] == 1)
      continue;
    if (!red[j])
      seen_kept = true;
    else if (seen_kept)
      outer = false;
  }
  if (outer) {
    const char *T = dt_ctype(dt), *res = final_expr(e, n->op, at, rw.total);
    emit_line(e, "/* the reduced axes outside the kept ones: row r of x [%lld][%lld] folded into all of y */",
              (long long)rw.total, (long long)kept.total);
    emit_line(e, "for (int o = 0; o < %lld; o++)", (long long)kept.total);
    emit_line(e, "  %s[o] = %s;", Y, init_literal(e, n->op, dt, at));
    emit_line(e, "for (int r = 0; r < %lld; r++) {", (long long)rw.total);
    emit_line(e, "  const %s *xr = %s + (int64_t)r * %lld;", T, X, (long long)kept.total);
    emit_line(e, "  for (int o = 0; o < %lld; o++) {", (long long)kept.total);
    emit_line(e, "    %s acc = %s[o], v = xr[o];", T, Y);
    emit_line(e, "    %s", step_stmt(e, n->op, at));
    emit_line(e, "    %s[o] = acc;", Y);
    emit_line(e, "  }");
    emit_line(e, "}");
    if (strcmp(res, "acc")) {
      emit_line(e, "for (int o = 0; o < %lld; o++) {", (long long)kept.total);
      emit_line(e, "  const %s acc = %s[o];", T, Y);
      emit_line(e, "  %s[o] = %s;", Y, res);
      emit_line(e, "}");
    }
    return true;
  }
  emit_tmpl(e, "reduce", "T", dt_ctype(dt), "ACC", dt_ctype(at), "X", XO, "Y", Y, "OUT_N",
            emit_int(e, kept.total), "RED_N", emit_int(e, rw.total), "R_OFF", walk_expr(e, &rw, "r"),
            "INIT", init_literal(e, n->op, dt, at), "STEP", step_stmt(e, n->op, at), "RESULT",
            as_type(e, dt, at, final_expr(e, n->op, at, rw.total)), NULL);
  return true;
}
