/* entmax.c — α-entmax for any α in [1, 2], a kiln op (Peters, Niculae &
 * Martins 2019; learned per head in Adaptively Sparse Transformers,
 * Correia, Niculae & Martins 2019). Never read from an ONNX file; `kiln
 * export` lowers it to standard ops (compiler/export/lower_sparsemax.c).
 *
 *   Entmax(X [, Alpha]) {alpha = 1.5, axis = -1}
 *   y = [1 + d·(z - t)]_+ ^ (1/d),   z = x - max(x),  d = α - 1
 *
 * along `axis`, t the threshold that makes each row sum to 1. This is the
 * usual y = [(α-1)x - τ]_+^(1/(α-1)) with τ = d·(t + max) - 1, written so
 * that it stays exact as d -> 0: an element's mass is exp(log1p(v) / d),
 * v = d·(z - t), which tends to exp(z - t) (softmax, t -> logsumexp z).
 * α = 2 is Sparsemax, α = 1.5 Entmax15; α = 1 exactly is softmax,
 * exp(z) / Σ exp(z), in closed form.
 *
 * α is the attribute `alpha`, or the input Alpha (X's dtype), which
 * broadcasts to X with the normalised axis of size 1: per head [1, H, 1, 1]
 * for scores [B, H, T, S]. A constant α (the attribute, or a constant
 * Alpha) outside [1, 2] is an error; an Alpha computed at run time is
 * clamped to [1, 2], NaN taken as 1.
 *
 * t is found by bisection, in double: the mass is at least 1 at t = 0 (the
 * max alone has 1) and at most 1 at t = ln(len) (every element has at most
 * (1 - d·ln len)^(1/d) <= 1/len), and falls with t; at most 64 halvings of
 * [0, ln len] (len < 2^31, so ln len < 2^5) leave a bracket under 2^-59,
 * and the loop stops sooner when the midpoint is no longer strictly inside
 * (the bracket is two neighbouring doubles). The slope of the mass is at
 * most -1, so t's error is at most the sum's rounding, about len·2^-53,
 * and so is each y's (|dy/dt| = y / u <= 1). _eval and the kernel
 * (templates/entmax.c.in) do the same double arithmetic in the same
 * order; they agree to the last bit of f32 but for the libm and the
 * contraction of a multiply-add the C compiler may choose (tests/entmax:
 * 1e-6 relative). */
#include <math.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "rows.h"

/* Most halvings of the bracket (see above). */
#define ENTMAX_STEPS 64

/* ---- α ---------------------------------------------------------------------- */

/* Where row o's α is: element Σ (o / div[i] % mod[i]) · stride[i] of
 * Alpha, one term per dim k of X (not the axis) along which Alpha does not
 * broadcast; div is the product of X's dims after k, the axis left out. */
typedef struct AlphaMap {
  int n;
  int64_t div[MAX_RANK], mod[MAX_RANK], stride[MAX_RANK];
} AlphaMap;

static AlphaMap alpha_map(const Type *x, int axis, const Type *a) {
  AlphaMap m = {0};
  int lead = x->rank - a->rank;
  int64_t stride = 1;
  for (int k = x->rank - 1; k >= lead; k--) {
    int64_t ad = a->dims[k - lead];
    if (k != axis && ad > 1) {
      int64_t div = 1;
      for (int j = k + 1; j < x->rank; j++)
        div *= j == axis ? 1 : x->dims[j];
      m.div[m.n] = div, m.mod[m.n] = ad, m.stride[m.n] = stride, m.n++;
    }
    stride *= ad;
  }
  return m;
}

static int64_t alpha_index(const AlphaMap *m, int64_t o) {
  int64_t at = 0;
  for (int i = 0; i < m->n; i++)
    at += o / m->div[i] % m->mod[i] * m->stride[i];
  return at;
}

/* alpha_index as a C expression in the kernel's row `o`. */
static const char *alpha_index_c(Arena *a, const AlphaMap *m) {
  const char *s = m->n ? "" : "0";
  for (int i = 0; i < m->n; i++) {
    const char *div = m->div[i] == 1 ? "" : arena_printf(a, " / %lld", (long long)m->div[i]);
    const char *mul = m->stride[i] == 1 ? "" : arena_printf(a, " * %lld", (long long)m->stride[i]);
    s = arena_printf(a, "%s%so%s %% %lld%s", s, i ? " + " : "", div, (long long)m->mod[i], mul);
  }
  return s;
}

/* d = α - 1 from a run-time α: clamped to [0, 1], NaN taken as α = 1. */
static double entmax_delta(double alpha) {
  return alpha >= 2 ? 1 : alpha > 1 ? alpha - 1 : 0;
}

/* ---- shapes ---------------------------------------------------------------- */

static bool alpha_in_range(double a) {
  return a >= 1 && a <= 2;
}

/* Alpha: X's dtype, broadcast to X along every dim but the axis, and in
 * [1, 2] when it is a constant. */
static bool check_alpha_input(Graph *g, Node *n, const Value *x, int axis, Diag *d) {
  const Value *a = node_in(g, n, 1);
  char ts[160];
  if (attr_get(n, "alpha"))
    return diag_node(d, g, n, "both an attribute alpha and an input Alpha ('%s'); expected one of them", a->name);
  if (a->type.dt != x->type.dt)
    return diag_node(d, g, n, "input Alpha '%s' is %s; expected %s like X", a->name, dt_name(a->type.dt),
                     dt_name(x->type.dt));
  int lead = x->type.rank - a->type.rank;
  bool fits = lead >= 0;
  for (int k = 0; fits && k < a->type.rank; k++) {
    int64_t ad = a->type.dims[k], xd = x->type.dims[k + lead];
    fits = k + lead == axis ? ad == 1 : ad == 1 || ad == xd;
  }
  if (!fits)
    return diag_node(d, g, n, "input Alpha '%s' is %s; expected a shape that broadcasts to X %s with size 1 "
                     "along axis %d (per head: [1, H, 1, 1])", a->name, type_str(&a->type, ts, sizeof ts),
                     type_str(&x->type, ts + 80, sizeof ts - 80), axis);
  for (int64_t i = 0; a->data && i < type_numel(&a->type); i++) {
    double v = el_get_f(a->type.dt, a->data, i);
    if (!alpha_in_range(v))
      return diag_node(d, g, n, "Alpha '%s' element %lld is %.9g; expected 1 <= alpha <= 2 (1: softmax, "
                       "2: sparsemax)", a->name, (long long)i, v);
  }
  return true;
}

bool entmax_infer(Graph *g, Node *n, Diag *d) {
  Rows r;
  int axis = -1;
  if (!rows_check_input(g, n, &r, &axis, d))
    return false;
  Value *x = node_in(g, n, 0);
  if (node_in(g, n, 1)) {
    if (!check_alpha_input(g, n, x, axis, d))
      return false;
  } else if (!alpha_in_range(attr_float(n, "alpha", 1.5))) {
    return diag_node(d, g, n, "alpha %.9g is outside [1, 2]; expected 1 <= alpha <= 2 (1: softmax, "
                     "2: sparsemax)", attr_float(n, "alpha", 1.5));
  }
  node_out(g, n, 0)->type = x->type;
  return true;
}

/* ---- the reference ----------------------------------------------------------- */

/* Mass of an element of z at threshold t, for d > 0. */
static double mass_of(double z, double t, double d) {
  double v = d * (z - t);
  return v > -1 ? exp(log1p(v) / d) : 0;
}

/* One row of len elements, element k at x[base + k·inner], into y. */
static void entmax_row(DType dt, const void *x, void *y, const Rows *r, int64_t base, double d, double loglen) {
  double max = el_get_f(dt, x, base);
  for (int64_t k = 1; k < r->len; k++) {
    double v = el_get_f(dt, x, base + k * r->inner);
    max = v > max ? v : max;
  }
  if (d > 0) {
    double lo = 0, hi = loglen; /* mass(lo) >= 1 >= mass(hi) */
    for (int it = 0; it < ENTMAX_STEPS; it++) {
      double mid = 0.5 * (lo + hi);
      if (!(mid > lo && mid < hi))
        break;
      double mass = 0;
      for (int64_t k = 0; k < r->len; k++)
        mass += mass_of(el_get_f(dt, x, base + k * r->inner) - max, mid, d);
      if (mass >= 1)
        lo = mid;
      else
        hi = mid;
    }
    for (int64_t k = 0; k < r->len; k++)
      el_set_f(dt, y, base + k * r->inner, mass_of(el_get_f(dt, x, base + k * r->inner) - max, lo, d));
    return;
  }
  double sum = 0; /* α = 1: softmax; NaN (and -inf) get 0 */
  for (int64_t k = 0; k < r->len; k++) {
    double z = el_get_f(dt, x, base + k * r->inner) - max;
    sum += z > -HUGE_VAL ? exp(z) : 0;
  }
  for (int64_t k = 0; k < r->len; k++) {
    double z = el_get_f(dt, x, base + k * r->inner) - max;
    el_set_f(dt, y, base + k * r->inner, z > -HUGE_VAL && sum > 0 ? exp(z) / sum : 0);
  }
}

bool entmax_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  Rows r;
  int axis;
  KILN_ASSERT(rows_of_node(n, &in[0].type, &r, &axis));
  if (type_numel(&in[0].type) == 0)
    return true;
  bool input = n->nin > 1 && in[1].data;
  AlphaMap m = input ? alpha_map(&in[0].type, axis, &in[1].type) : (AlphaMap){0};
  double fixed = entmax_delta(attr_float(n, "alpha", 1.5)), loglen = log((double)r.len);
  for (int64_t o = 0; o < r.outer * r.inner; o++) {
    double delta = input ? entmax_delta(el_get_f(in[1].type.dt, in[1].data, alpha_index(&m, o))) : fixed;
    entmax_row(in[0].type.dt, in[0].data, out[0].data, &r, row_base(&r, o), delta, loglen);
  }
  return true;
}

/* ---- C --------------------------------------------------------------------- */

bool entmax_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0), *a = node_in(g, n, 1);
  DType dt = x->type.dt;
  Rows r;
  int axis;
  KILN_ASSERT(rows_of_node(n, &x->type, &r, &axis));
  if (type_numel(&x->type) == 0)
    return true;
  const char *X = emit_ref(e, n->in[0]);
  const char *alpha = emit_double_literal(e, DT_F64, attr_float(n, "alpha", 1.5));
  if (a) {
    AlphaMap m = alpha_map(&x->type, axis, &a->type);
    alpha = arena_printf(g->arena, "(double)%s[%s]", emit_ref(e, n->in[1]), alpha_index_c(g->arena, &m));
  }
  const char *Y = emit_ref(e, n->out[0]), *base = row_base_c(g->arena, &r);
  int64_t rows = r.outer * r.inner;
  /* rows are independent; per element about 8 ns a halving (log1p and exp), ~60 halvings */
  emit_parallel_for(e, rows, (double)(rows * r.len) * 8.0 * 60);
  emit_tmpl(e, "entmax", "T", dt_ctype(dt), "ROWS", emit_int(e, rows), "LEN", emit_int(e, r.len), "XR",
            base ? arena_printf(g->arena, "%s + %s", X, base) : X, "YR",
            base ? arena_printf(g->arena, "%s + %s", Y, base) : Y, "S",
            r.inner == 1 ? "" : arena_printf(g->arena, " * %lld", (long long)r.inner), "ALPHA", alpha,
            "LOGLEN", emit_double_literal(e, DT_F64, log((double)r.len)), "STEPS", emit_int(e, ENTMAX_STEPS),
            "ZERO", emit_double_literal(e, dt, 0), NULL);
  return true;
}
