/* normalize.c — normalisations along an axis: Softmax, LogSoftmax and
 * Hardmax (family `softmax`), LayerNormalization (family `layernorm`),
 * RMSNormalization (family `rmsnorm`; also ONNX Runtime's
 * SimplifiedLayerNormalization, which the importer maps onto it),
 * LpNormalization, and GroupNormalization (LayerNorm's rows, one per
 * group of channels).
 *
 * Each sees its input as rows: `outer * inner` rows of `len` elements,
 * element k of a row `inner` apart. Softmax-family ops before opset 13
 * coerce the input to 2-D at `axis` (default 1): rows are the flattened
 * dims[axis:], inner = 1. From opset 13 they act on the single axis `axis`
 * (default -1). LayerNormalization normalises the flattened dims[axis:]
 * (axis default -1).
 *
 * Softmax subtracts the row max before exp; LayerNorm takes the mean, then
 * the variance of the deviations (two passes), in the stash type (f32 by
 * default), so both stay accurate for large or offset inputs. RMSNorm
 * normalises the same rows by the root of their mean square (no mean
 * subtracted, no bias): one pass for the statistic, one for the output. */
#include <math.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "rows.h"

/* ---- rows ------------------------------------------------------------------ */

/* Rows of a softmax-family node's input; false if `axis` is out of range. */
static bool softmax_rows(const Node *n, const Type *t, Rows *r) {
  int64_t axis = attr_int(n, "axis", n->opset < 13 ? 1 : -1);
  int a;
  if (n->opset < 13) {
    /* coerced to 2-D: axis == rank makes rows of one element */
    if (axis < -t->rank || axis > t->rank)
      return false;
    a = (int)(axis < 0 ? axis + t->rank : axis);
    *r = (Rows){prod_dims(t, 0, a), prod_dims(t, a, t->rank), 1};
    return true;
  }
  if (!axis_norm(axis, t->rank, &a))
    return false;
  *r = rows_along(t, a);
  return true;
}

/* ---- Softmax, LogSoftmax, Hardmax ------------------------------------------ */

bool softmax_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (!dt_is_float(x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  if (x->type.rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", x->name);
  Rows r;
  if (!softmax_rows(n, &x->type, &r)) {
    int hi = n->opset < 13 ? x->type.rank : x->type.rank - 1;
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected [%d, %d]",
                     (long long)attr_int(n, "axis", n->opset < 13 ? 1 : -1), x->type.rank, -x->type.rank, hi);
  }
  node_out(g, n, 0)->type = x->type;
  return true;
}

bool softmax_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  DType dt = in[0].type.dt;
  Rows r;
  KILN_ASSERT(softmax_rows(n, &in[0].type, &r));
  for (int64_t o = 0; o < r.outer * r.inner; o++) {
    int64_t base = row_base(&r, o);
    double m = -INFINITY, s = 0;
    int64_t best = 0;
    for (int64_t k = 0; k < r.len; k++) {
      double v = el_get_f(dt, in[0].data, base + k * r.inner);
      if (k == 0 || v > m) {
        m = v;
        best = k;
      }
    }
    for (int64_t k = 0; k < r.len; k++)
      s += exp(el_get_f(dt, in[0].data, base + k * r.inner) - m);
    for (int64_t k = 0; k < r.len; k++) {
      double v = el_get_f(dt, in[0].data, base + k * r.inner), y;
      switch (n->op) {
      case OP_SOFTMAX: y = exp(v - m) / s; break;
      case OP_LOGSOFTMAX: y = v - m - log(s); break;
      default: y = k == best; break;
      }
      el_set_f(dt, out[0].data, base + k * r.inner, y);
    }
  }
  return true;
}

bool softmax_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0);
  DType dt = x->type.dt;
  Rows r;
  KILN_ASSERT(softmax_rows(n, &x->type, &r));
  if (type_numel(&x->type) == 0)
    return true;
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]), *k;
  const char *base = row_base_c(g->arena, &r);
  k = r.inner == 1 ? "k" : arena_printf(g->arena, "k * %lld", (long long)r.inner);
  const char *name = n->op == OP_SOFTMAX ? "softmax" : n->op == OP_LOGSOFTMAX ? "softmax_log" : "softmax_hard";
  /* contiguous rows of at least 16: the max and the sum in 16 lanes */
  if (n->op == OP_SOFTMAX && r.inner == 1 && r.len >= 16)
    name = "softmax_lanes";
  /* f32 Softmax's exps are of x - max <= 0: kiln_expf_nonpos (kiln_rt.h) */
  const char *exp = n->op == OP_SOFTMAX && dt == DT_F32 ? "kiln_expf_nonpos" : emit_mathfn(e, dt, "exp");
  /* --threads: rows split among the threads (the template starts with its
   * loop over rows); a max, an exp, a sum and a division per element */
  emit_parallel_for(e, r.outer * r.inner, 6.0 * (double)type_numel(&x->type));
  emit_tmpl(e, name, "T", dt_ctype(dt), "ROWS", emit_int(e, r.outer * r.inner), "LEN", emit_int(e, r.len), "BODY", emit_int(e, r.len / 16 * 16),
            "BODY2", emit_int(e, r.len / 32 * 32), "XR", base ? arena_printf(g->arena, "%s + %s", X, base) : X, "YR",
            base ? arena_printf(g->arena, "%s + %s", Y, base) : Y, "K", k, "ZERO",
            emit_double_literal(e, dt, 0), "ONE", emit_double_literal(e, dt, 1), "EXP", exp, "LOG", emit_mathfn(e, dt, "log"), NULL);
  return true;
}

/* ---- LayerNormalization ---------------------------------------------------- */

/* Scale and B: either len elements, read flat like ONNX's function body
 * and onnxruntime do, or a shape that broadcasts (numpy-style) to the
 * normalised dims of x from axis a. */
static bool param_fits(const Type *p, const Type *x, int a) {
  if (type_numel(p) == prod_dims(x, a, x->rank))
    return true;
  if (p->rank > x->rank - a)
    return false;
  for (int i = 0; i < p->rank; i++) {
    int64_t xd = x->dims[x->rank - p->rank + i];
    if (p->dims[i] != 1 && p->dims[i] != xd)
      return false;
  }
  return true;
}

/* The normalised dims of x (from axis a) as a type. */
static Type norm_type(const Type *x, int a) {
  Type t = {.dt = x->dt, .rank = x->rank - a};
  for (int i = a; i < x->rank; i++)
    t.dims[i - a] = x->dims[i];
  return t;
}

/* Index into a scale or bias p for element k of a normalised row. */
static int64_t param_index(const Type *p, const Type *x, int a, int64_t k) {
  Type nt = norm_type(x, a);
  return type_numel(p) == type_numel(&nt) ? k : bcast_src(&nt, p, k);
}

static DType stash_dtype(const Node *n) { return attr_int(n, "stash_type", 1) == 11 ? DT_F64 : DT_F32; }

/* What LayerNormalization and RMSNormalization ask of X and their axis and
 * stash_type attributes; *a: the axis, normalised. */
static bool check_norm_input(Graph *g, Node *n, int *a, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Type *xt = &x->type;
  if (!dt_is_float(xt->dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(xt->dt));
  if (xt->rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", x->name);
  int64_t axis = attr_int(n, "axis", -1), st = attr_int(n, "stash_type", 1);
  if (!axis_norm(axis, xt->rank, a))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected [%d, %d]", (long long)axis,
                     xt->rank, -xt->rank, xt->rank - 1);
  if (st != 1 && st != 11)
    return diag_node(d, g, n, "stash_type is %lld; expected 1 (f32) or 11 (f64)", (long long)st);
  return true;
}

/* A scale or bias p of a norm over X (type xt) from axis a: X's dtype, and
 * a shape param_fits takes. */
static bool check_norm_param(Graph *g, Node *n, const Value *p, const Type *xt, int a, Diag *d) {
  if (p->type.dt != xt->dt)
    return diag_node(d, g, n, "input '%s' is %s; expected %s like X", p->name, dt_name(p->type.dt),
                     dt_name(xt->dt));
  if (!param_fits(&p->type, xt, a)) {
    char ps[128], xs[128];
    return diag_node(d, g, n, "input '%s' has shape %s; expected the normalised dims of %s from "
                     "axis %d (or as many elements, or a shape that broadcasts to them)",
                     p->name, type_str(&p->type, ps, sizeof ps), type_str(xt, xs, sizeof xs), a);
  }
  return true;
}

bool layernorm_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Type *xt = &x->type;
  int a;
  if (!check_norm_input(g, n, &a, d))
    return false;
  for (int i = 1; i < 3; i++) {
    const Value *p = node_in(g, n, i);
    if (p && !check_norm_param(g, n, p, xt, a, d))
      return false;
  }
  node_out(g, n, 0)->type = *xt;
  for (int i = 1; i < n->nout; i++) {
    Type t = *xt;
    t.dt = stash_dtype(n);
    for (int j = a; j < t.rank; j++)
      t.dims[j] = 1;
    node_out(g, n, i)->type = t;
  }
  return true;
}

/* The stats math runs in double here (the stash type only matters for the
 * C, where f32 is the point); outputs round to their types. */
bool layernorm_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *xt = &in[0].type;
  DType dt = xt->dt;
  int a;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), xt->rank, &a));
  int64_t outer = prod_dims(xt, 0, a), len = prod_dims(xt, a, xt->rank);
  double eps = attr_float(n, "epsilon", 1e-5);
  bool has_b = n->nin > 2 && in[2].data;
  for (int64_t o = 0; o < outer; o++) {
    const int64_t base = o * len;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < len; k++)
      mean += el_get_f(dt, in[0].data, base + k);
    mean /= (double)len;
    for (int64_t k = 0; k < len; k++) {
      double dv = el_get_f(dt, in[0].data, base + k) - mean;
      var += dv * dv;
    }
    var /= (double)len;
    double inv_std = 1 / sqrt(var + eps);
    for (int64_t k = 0; k < len; k++) {
      double y = (el_get_f(dt, in[0].data, base + k) - mean) * inv_std *
                 el_get_f(dt, in[1].data, param_index(&in[1].type, xt, a, k));
      if (has_b)
        y += el_get_f(dt, in[2].data, param_index(&in[2].type, xt, a, k));
      el_set_f(dt, out[0].data, base + k, y);
    }
    if (n->nout > 1)
      el_set_f(out[1].type.dt, out[1].data, o, mean);
    if (n->nout > 2)
      el_set_f(out[2].type.dt, out[2].data, o, inv_std);
  }
  return true;
}

/* "p[k]" for a scale or bias of len elements, else p[index] with the index
 * broadcast from k: one term per run of dims that p does not broadcast,
 * e.g. "p[k % 8]" for a suffix of the normalised shape, "p[0]" for one
 * element. */
static const char *param_elem(Emit *e, const char *p, const Type *pt, const Type *x, int a) {
  Type nt = norm_type(x, a), pa = nt; /* pa: p's dims aligned to nt's */
  int64_t len = type_numel(&nt);
  if (type_numel(pt) == len)
    return arena_printf(e->g->arena, "%s[k]", p);
  for (int j = 0; j < nt.rank; j++)
    pa.dims[j] = j < nt.rank - pt->rank ? 1 : pt->dims[j - (nt.rank - pt->rank)];
  int64_t nst[MAX_RANK], pst[MAX_RANK], size[MAX_RANK], div[MAX_RANK], stride[MAX_RANK];
  type_strides(&nt, nst);
  type_strides(&pa, pst);
  int nterm = 0;
  bool run = false;
  for (int j = 0; j < nt.rank; j++) {
    if (nt.dims[j] == 1)
      continue;
    if (pa.dims[j] == 1) {
      run = false;
      continue;
    }
    if (!run)
      size[nterm++] = 1;
    size[nterm - 1] *= nt.dims[j];
    div[nterm - 1] = nst[j];
    stride[nterm - 1] = pst[j];
    run = true;
  }
  Buf b = {0};
  for (int t = 0; t < nterm; t++) {
    buf_puts(&b, t ? " + k" : "k");
    if (div[t] != 1)
      buf_printf(&b, " / %lld", (long long)div[t]);
    if (div[t] * size[t] != len)
      buf_printf(&b, " %% %lld", (long long)size[t]);
    if (stride[t] != 1)
      buf_printf(&b, " * %lld", (long long)stride[t]);
  }
  const char *r = arena_printf(e->g->arena, "%s[%s]", p, b.len ? b.s : "0");
  buf_free(&b);
  return r;
}

/* What a norm's template needs of its rows: `outer` rows of `len`
 * elements from axis `a` on, their pointers XR and YR (" + o * len" when
 * there are several), the element type T and the stash type U (ut), and
 * `up`, the cast to U where T is not U. */
typedef struct NormRows {
  int a;
  int64_t outer, len;
  DType ut;
  bool cast;
  const char *T, *U, *XR, *YR, *up;
} NormRows;

/* false when there are no rows: nothing to emit */
static bool norm_rows(Emit *e, const Node *n, NormRows *r) {
  const Type *xt = &node_in(e->g, n, 0)->type;
  Arena *ar = e->g->arena;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), xt->rank, &r->a));
  r->outer = prod_dims(xt, 0, r->a);
  r->len = prod_dims(xt, r->a, xt->rank);
  if (r->outer == 0)
    return false;
  r->ut = stash_dtype(n);
  r->cast = xt->dt != r->ut;
  r->T = dt_ctype(xt->dt);
  r->U = dt_ctype(r->ut);
  const char *row = r->outer == 1 ? "" : arena_printf(ar, " + o * %lld", (long long)r->len);
  r->XR = arena_printf(ar, "%s%s", emit_ref(e, n->in[0]), row);
  r->YR = arena_printf(ar, "%s%s", emit_ref(e, n->out[0]), row);
  r->up = r->cast ? arena_printf(ar, "(%s)", r->U) : "";
  return true;
}

bool layernorm_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *scale = node_in(g, n, 1), *bias = node_in(g, n, 2);
  const Type *xt = &node_in(g, n, 0)->type;
  NormRows r;
  if (!norm_rows(e, n, &r))
    return true;
  Arena *ar = g->arena;
  const char *term = arena_printf(ar, "(xr[k] - mean) * inv_std * %s%s", r.up,
                                  param_elem(e, emit_ref(e, n->in[1]), &scale->type, xt, r.a));
  if (bias)
    term = arena_printf(ar, "%s + %s%s", term, r.up, param_elem(e, emit_ref(e, n->in[2]), &bias->type, xt, r.a));
  const char *store_mean = n->nout > 1 ? arena_printf(ar, "%s[o] = mean;", emit_ref(e, n->out[1])) : "";
  const char *store_inv = n->nout > 2 ? arena_printf(ar, "%s[o] = inv_std;", emit_ref(e, n->out[2]))
                                      : "/* InvStdDev not requested */";
  /* --threads: rows split among the threads (the template starts with its
   * loop over rows); two sums along each row, then the normalisation */
  emit_parallel_for(e, r.outer, 2.5 * (double)(r.outer * r.len));
  emit_tmpl(e, n->nout > 1 ? "layernorm_stats" : "layernorm", "T", r.T, "U", r.U, "ROWS", emit_int(e, r.outer),
            "LEN", emit_int(e, r.len), "BODY", emit_int(e, r.len / 16 * 16), "L", emit_int(e, row_sum_lanes(r.len)), "XR", r.XR, "YR", r.YR,
            "ZERO", emit_double_literal(e, r.ut, 0), "N", emit_double_literal(e, r.ut, (double)r.len), "ONE",
            emit_double_literal(e, r.ut, 1), "EPS", emit_double_literal(e, r.ut, attr_float(n, "epsilon", 1e-5)),
            "SQRT", emit_mathfn(e, r.ut, "sqrt"), "Y_K", r.cast ? arena_printf(ar, "(%s)(%s)", r.T, term) : term,
            "STORE_MEAN", store_mean, "STORE_INV_STD", store_inv, NULL);
  return true;
}

/* ---- RMSNormalization ------------------------------------------------------ */

/* RMSNormalization {axis=-1, epsilon=1e-5, stash_type=1} (X, Scale) -> Y:
 *   Y = X / sqrt(mean(X² over the dims from axis) + epsilon) · Scale
 * Scale as LayerNormalization's (param_fits). */
bool rmsnorm_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Value *p = node_in(g, n, 1);
  const Type *xt = &x->type;
  int a;
  if (!check_norm_input(g, n, &a, d))
    return false;
  if (!check_norm_param(g, n, p, xt, a, d))
    return false;
  node_out(g, n, 0)->type = *xt;
  return true;
}

/* The statistic in double (see layernorm_eval); Y rounds to its type. */
bool rmsnorm_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  const Type *xt = &in[0].type;
  DType dt = xt->dt;
  int a;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), xt->rank, &a));
  int64_t outer = prod_dims(xt, 0, a), len = prod_dims(xt, a, xt->rank);
  double eps = attr_float(n, "epsilon", 1e-5);
  for (int64_t o = 0; o < outer; o++) {
    const int64_t base = o * len;
    double ms = 0;
    for (int64_t k = 0; k < len; k++) {
      double v = el_get_f(dt, in[0].data, base + k);
      ms += v * v;
    }
    double inv_rms = 1 / sqrt(ms / (double)len + eps);
    for (int64_t k = 0; k < len; k++)
      el_set_f(dt, out[0].data, base + k,
               el_get_f(dt, in[0].data, base + k) * inv_rms *
                   el_get_f(dt, in[1].data, param_index(&in[1].type, xt, a, k)));
  }
  return true;
}

/* templates/rmsnorm.c.in over the rows, the statistic in the stash type. */
bool rmsnorm_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *xt = &node_in(g, n, 0)->type, *st = &node_in(g, n, 1)->type;
  NormRows r;
  if (!norm_rows(e, n, &r))
    return true;
  Arena *ar = g->arena;
  const char *term = arena_printf(ar, "xr[k] * inv_rms * %s%s", r.up, param_elem(e, emit_ref(e, n->in[1]), st, xt, r.a));
  emit_parallel_for(e, r.outer, 1.5 * (double)(r.outer * r.len));
  emit_tmpl(e, "rmsnorm", "T", r.T, "U", r.U, "ROWS", emit_int(e, r.outer), "LEN", emit_int(e, r.len), "BODY", emit_int(e, r.len / 16 * 16), "L",
            emit_int(e, row_sum_lanes(r.len)), "XR", r.XR, "YR", r.YR, "ZERO", emit_double_literal(e, r.ut, 0), "N",
            emit_double_literal(e, r.ut, (double)r.len), "ONE", emit_double_literal(e, r.ut, 1), "EPS",
            emit_double_literal(e, r.ut, attr_float(n, "epsilon", 1e-5)), "SQRT", emit_mathfn(e, r.ut, "sqrt"),
            "Y_K", r.cast ? arena_printf(ar, "(%s)(%s)", r.T, term) : term, NULL);
  return true;
}

/* ---- LpNormalization ------------------------------------------------------- */

/* LpNormalization {axis=-1, p=2} (X) -> Y: each row along `axis` divided
 * by its L1 (p=1) or L2 (p=2) norm. A row of zeros gives NaN (0 / 0), as
 * ONNX's reference and node tests say; ONNX Runtime gives zeros there. */
bool lpnorm_infer(Graph *g, Node *n, Diag *d) {
  Rows r;
  if (!rows_check_input(g, n, &r, NULL, d))
    return false;
  int64_t p = attr_int(n, "p", 2);
  if (p != 1 && p != 2)
    return diag_node(d, g, n, "p is %lld; expected 1 or 2", (long long)p);
  node_out(g, n, 0)->type = node_in(g, n, 0)->type;
  return true;
}

bool lpnorm_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  DType dt = in[0].type.dt;
  Rows r;
  KILN_ASSERT(rows_of_node(n, &in[0].type, &r, NULL));
  bool l1 = attr_int(n, "p", 2) == 1;
  for (int64_t o = 0; o < r.outer * r.inner; o++) {
    int64_t base = row_base(&r, o);
    double norm = 0;
    for (int64_t k = 0; k < r.len; k++) {
      double v = el_get_f(dt, in[0].data, base + k * r.inner);
      norm += l1 ? fabs(v) : v * v;
    }
    norm = l1 ? norm : sqrt(norm);
    for (int64_t k = 0; k < r.len; k++)
      el_set_f(dt, out[0].data, base + k * r.inner,
               el_get_f(dt, in[0].data, base + k * r.inner) / norm);
  }
  return true;
}

bool lpnorm_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0);
  DType dt = x->type.dt;
  Rows r;
  KILN_ASSERT(rows_of_node(n, &x->type, &r, NULL));
  if (type_numel(&x->type) == 0)
    return true;
  Arena *ar = g->arena;
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]), *base = row_base_c(ar, &r);
  const char *k = r.inner == 1 ? "k" : arena_printf(ar, "k * %lld", (long long)r.inner);
  bool l1 = attr_int(n, "p", 2) == 1;
  const char *xk = arena_printf(ar, "xr[%s]", k);
  emit_parallel_for(e, r.outer * r.inner, 3.0 * (double)type_numel(&x->type));
  emit_tmpl(e, "lpnorm", "T", dt_ctype(dt), "ROWS", emit_int(e, r.outer * r.inner), "LEN", emit_int(e, r.len), "BODY", emit_int(e, r.len / 16 * 16),
            "XR", base ? arena_printf(ar, "%s + %s", X, base) : X, "YR", base ? arena_printf(ar, "%s + %s", Y, base) : Y,
            "K", k, "ZERO", emit_double_literal(e, dt, 0), "P", l1 ? "1" : "2",
            "TERM", l1 ? arena_printf(ar, "%s(%s)", emit_mathfn(e, dt, "fabs"), xk) : arena_printf(ar, "%s * %s", xk, xk),
            "NORM", l1 ? "sum" : arena_printf(ar, "%s(sum)", emit_mathfn(e, dt, "sqrt")), NULL);
  return true;
}

/* ---- GroupNormalization ---------------------------------------------------- */

/* GroupNormalization {num_groups, epsilon=1e-5, stash_type=1} (X, scale,
 * bias) -> Y over X [N, C, D1...]: the C channels fall into num_groups
 * groups of C/G consecutive channels; each (n, group) is one contiguous
 * row of C/G·D1·... elements, normalised like LayerNormalization's rows,
 * then scaled and shifted per channel (opset 21: scale and bias [C]) or
 * per group (opset 18: [G]). Opset 18 has no stash_type: its statistics
 * are in X's type. */
typedef struct Groups {
  int64_t n, c, g, sp; /* batch, channels, groups, elements per channel */
} Groups;

static Groups groups_of(const Node *n, const Type *xt) {
  return (Groups){xt->dims[0], xt->dims[1], attr_int(n, "num_groups", 0), prod_dims(xt, 2, xt->rank)};
}

static bool group_per_channel(const Node *n) { return n->opset >= 21; }

static DType group_stash(const Node *n, DType xdt) { return group_per_channel(n) ? stash_dtype(n) : xdt; }

bool groupnorm_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Type *xt = &x->type;
  char ps[128];
  if (!dt_is_float(xt->dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(xt->dt));
  if (xt->rank < 2)
    return diag_node(d, g, n, "input '%s' has rank %d; expected [N, C, ...] (rank >= 2)", x->name, xt->rank);
  if (!attr_get(n, "num_groups"))
    return diag_node(d, g, n, "attribute 'num_groups' is missing; expected the number of groups of channels");
  Groups gr = groups_of(n, xt);
  if (gr.g < 1 || gr.c % gr.g != 0)
    return diag_node(d, g, n, "num_groups is %lld; expected a positive divisor of the %lld channels", (long long)gr.g,
                     (long long)gr.c);
  int64_t st = attr_int(n, "stash_type", 1);
  if (st != 1 && st != 11)
    return diag_node(d, g, n, "stash_type is %lld; expected 1 (f32) or 11 (f64)", (long long)st);
  int64_t want = group_per_channel(n) ? gr.c : gr.g;
  for (int i = 1; i < 3; i++) {
    const Value *p = node_in(g, n, i);
    if (!p)
      return diag_node(d, g, n, "input %s is absent; expected a tensor", i == 1 ? "scale" : "bias");
    if (p->type.dt != xt->dt || p->type.rank != 1 || p->type.dims[0] != want)
      return diag_node(d, g, n, "input '%s' is %s; expected %s[%lld] (one per %s at opset %d)", p->name,
                       type_str(&p->type, ps, sizeof ps), dt_name(xt->dt), (long long)want,
                       group_per_channel(n) ? "channel" : "group", n->opset);
  }
  node_out(g, n, 0)->type = *xt;
  return true;
}

/* The parameter index of element k of row o (row o is group o % G). */
static int64_t group_param(const Node *n, const Groups *gr, int64_t o, int64_t k) {
  return group_per_channel(n) ? o % gr->g * (gr->c / gr->g) + k / gr->sp : o % gr->g;
}

bool groupnorm_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  DType dt = in[0].type.dt;
  Groups gr = groups_of(n, &in[0].type);
  int64_t rows = gr.n * gr.g, len = gr.c / gr.g * gr.sp;
  double eps = attr_float(n, "epsilon", 1e-5);
  for (int64_t o = 0; o < rows; o++) {
    const int64_t base = o * len;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < len; k++)
      mean += el_get_f(dt, in[0].data, base + k);
    mean /= (double)len;
    for (int64_t k = 0; k < len; k++) {
      double dv = el_get_f(dt, in[0].data, base + k) - mean;
      var += dv * dv;
    }
    double inv_std = 1 / sqrt(var / (double)len + eps);
    for (int64_t k = 0; k < len; k++) {
      int64_t c = group_param(n, &gr, o, k);
      el_set_f(dt, out[0].data, base + k,
               (el_get_f(dt, in[0].data, base + k) - mean) * inv_std * el_get_f(dt, in[1].data, c) +
                   el_get_f(dt, in[2].data, c));
    }
  }
  return true;
}

/* group_param as C in the template's o and k. */
static const char *group_param_c(Emit *e, const Node *n, const Groups *gr) {
  Arena *ar = e->g->arena;
  if (!group_per_channel(n))
    return gr->g == 1 ? "0" : arena_printf(ar, "o %% %lld", (long long)gr->g);
  const char *grp = gr->g == 1 ? NULL : arena_printf(ar, "o %% %lld * %lld", (long long)gr->g, (long long)(gr->c / gr->g));
  const char *ch = gr->c == gr->g ? NULL : gr->sp == 1 ? "k" : arena_printf(ar, "k / %lld", (long long)gr->sp);
  return grp && ch ? arena_printf(ar, "%s + %s", grp, ch) : grp ? grp : ch ? ch : "0";
}

/* templates/layernorm.c.in over the (n, group) rows; its Y_K reads the
 * scale and bias of element k's channel or group. */
bool groupnorm_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *xt = &node_in(g, n, 0)->type;
  Groups gr = groups_of(n, xt);
  int64_t rows = gr.n * gr.g, len = gr.c / gr.g * gr.sp;
  if (rows * len == 0)
    return true;
  Arena *ar = g->arena;
  DType ut = group_stash(n, xt->dt);
  bool cast = ut != xt->dt;
  const char *up = cast ? arena_printf(ar, "(%s)", dt_ctype(ut)) : "", *row = rows == 1 ? "" : arena_printf(ar, " + o * %lld", (long long)len);
  const char *X = emit_ref(e, n->in[0]), *S = emit_ref(e, n->in[1]), *B = emit_ref(e, n->in[2]), *Y = emit_ref(e, n->out[0]);
  const char *c = group_param_c(e, n, &gr);
  const char *term = arena_printf(ar, "(xr[k] - mean) * inv_std * %s%s[%s] + %s%s[%s]", up, S, c, up, B, c);
  emit_parallel_for(e, rows, 2.5 * (double)(rows * len));
  emit_tmpl(e, "layernorm", "T", dt_ctype(xt->dt), "U", dt_ctype(ut), "ROWS", emit_int(e, rows), "LEN", emit_int(e, len),
            "L", emit_int(e, row_sum_lanes(len)), "XR", arena_printf(ar, "%s%s", X, row), "YR",
            arena_printf(ar, "%s%s", Y, row), "ZERO", emit_double_literal(e, ut, 0), "N",
            emit_double_literal(e, ut, (double)len), "ONE", emit_double_literal(e, ut, 1), "EPS",
            emit_double_literal(e, ut, attr_float(n, "epsilon", 1e-5)), "SQRT", emit_mathfn(e, ut, "sqrt"), "Y_K",
            cast ? arena_printf(ar, "(%s)(%s)", dt_ctype(xt->dt), term) : term, NULL);
  return true;
}

/* ---- FLOP counts (ops.def's flops column) -------------------------------------- */

/* Per element: max, subtract, exp, sum, scale. */
int64_t softmax_flops(const Graph *g, const Node *n) { return 5 * type_numel(&gval(g, n->out[0])->type); }

/* Per element: mean, subtract, square, sum, normalise, scale, bias, and one
 * for the row's statistics. */
int64_t layernorm_flops(const Graph *g, const Node *n) { return 8 * type_numel(&gval(g, n->out[0])->type); }

/* Per element: square, sum, normalise, scale. */
int64_t rmsnorm_flops(const Graph *g, const Node *n) { return 4 * type_numel(&gval(g, n->out[0])->type); }

/* Per element: the norm's term, its sum, the division. */
int64_t lpnorm_flops(const Graph *g, const Node *n) { return 3 * type_numel(&gval(g, n->out[0])->type); }
