/* sparsemax.c — α-entmax normalisations for sparse attention (Correia et
 * al. 2019), two kiln ops: never read from an ONNX file, lowered to
 * standard ONNX ops by `kiln export` (compiler/export/lower_sparsemax.c).
 *
 *   Sparsemax  y = [z - τ]_+    z = x - max(x)         α = 2 (Martins & Astudillo 2016)
 *   Entmax15   y = [z - τ]_+²   z = (x - max(x)) / 2   α = 1.5 (Peters, Niculae & Martins 2019)
 *
 * along `axis` (default -1), f32 or f64, τ the threshold that makes each
 * row sum to 1: unlike Softmax, entries below τ are exactly zero. Both are
 * the entmax package's `sparsemax` / `entmax15` (with its x/2 convention
 * for α = 1.5).
 *
 * τ is exact, from z sorted in descending order (the sort-based algorithm):
 * the longest prefix z1..zs that passes the op's test fixes τ in closed
 * form. _eval sorts a copy of each row; the emitted kernels
 * (templates/sparsemax.c.in, entmax15.c.in) pop a heap of just the
 * candidates (z >= -1 — the max alone gets at most 1, so τ >= -1) in the
 * same order and with the same double arithmetic, so generated C, folding
 * and `kiln run` agree to the bit. The heap lives in the output row, which
 * is written last: the output must never share the input's storage (so
 * these ops stay off plan.c's in-place list). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "rows.h"

/* ---- rows ------------------------------------------------------------------ */

/* ---- shapes ---------------------------------------------------------------- */

bool sparsemax_infer(Graph *g, Node *n, Diag *d) {
  Rows r;
  if (!rows_check_input(g, n, &r, NULL, d))
    return false;
  Value *x = node_in(g, n, 0);
  node_out(g, n, 0)->type = x->type;
  return true;
}

/* ---- the reference: τ from the sorted row ---------------------------------- */

/* Descending, NaN last: a total order keeps qsort well-defined on any
 * input, and the τ functions stop before a NaN as the kernels, which never
 * take one as a candidate, leave it out (it gets weight 0). */
static int descending(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  if (isnan(a) || isnan(b))
    return (isnan(a) != 0) - (isnan(b) != 0);
  return (a < b) - (a > b);
}

/* Both τ functions read z sorted descending and stop at z < -1: the max
 * alone gets at most 1, so τ >= -1 and no such z is in the support (the
 * kernels never push them; this also keeps -inf, a masked score, out of
 * the sums). */

/* Sparsemax: τ = (z1 + .. + zs - 1) / s for the longest prefix with
 * 1 + s·zs > z1 + .. + zs. */
static double sparsemax_tau(const double *z, int64_t len) {
  double sum = 0, tau = 0;
  for (int64_t s = 1; s <= len && z[s - 1] >= -1; s++) {
    double next = sum + z[s - 1];
    if (!(1 + (double)s * z[s - 1] > next))
      break;
    sum = next;
    tau = (sum - 1) / (double)s;
  }
  return tau;
}

/* 1.5-entmax: the prefix z1..zs gives τs = mean - √max(0, (1 - ss) / s),
 * ss = s·(mean of squares - mean²), the root of Σ (zi - τ)² = 1 below the
 * mean; τ is τs of the longest prefix with τs <= zs. */
static double entmax15_tau(const double *z, int64_t len) {
  double sum = 0, sumsq = 0, tau = 0;
  for (int64_t s = 1; s <= len && z[s - 1] >= -1; s++) {
    double zs = z[s - 1], sum1 = sum + zs, sumsq1 = sumsq + zs * zs;
    double mean = sum1 / (double)s, meansq = sumsq1 / (double)s;
    double delta = (1 - (double)s * (meansq - mean * mean)) / (double)s;
    double tau_s = mean - sqrt(delta > 0 ? delta : 0);
    if (!(tau_s <= zs))
      break;
    sum = sum1;
    sumsq = sumsq1;
    tau = tau_s;
  }
  return tau;
}

/* One row: z[len] (scratch, filled here) and sorted[len] (scratch). */
static void normalise_row(const Node *n, const Tensor *x, Tensor *y, const Rows *r, int64_t base,
                          double *z, double *sorted) {
  DType dt = x->type.dt;
  bool entmax = n->op == OP_ENTMAX15;
  double max = el_get_f(dt, x->data, base);
  for (int64_t k = 1; k < r->len; k++) {
    double v = el_get_f(dt, x->data, base + k * r->inner);
    max = v > max ? v : max;
  }
  for (int64_t k = 0; k < r->len; k++) {
    double v = el_get_f(dt, x->data, base + k * r->inner) - max;
    z[k] = entmax ? 0.5 * v : v;
  }
  memcpy(sorted, z, sizeof(double) * (size_t)r->len);
  qsort(sorted, (size_t)r->len, sizeof(double), descending);
  double tau = entmax ? entmax15_tau(sorted, r->len) : sparsemax_tau(sorted, r->len);
  for (int64_t k = 0; k < r->len; k++) {
    double t = z[k] - tau;
    el_set_f(dt, y->data, base + k * r->inner, t > 0 ? (entmax ? t * t : t) : 0);
  }
}

bool sparsemax_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  Rows r;
  KILN_ASSERT(rows_of_node(n, &in[0].type, &r, NULL));
  if (r.len == 0)
    return true;
  double *z = malloc(sizeof(double) * 2 * (size_t)r.len);
  if (!z)
    return diag_error(d, "out of memory for a row of %lld elements", (long long)r.len);
  for (int64_t o = 0; o < r.outer * r.inner; o++)
    normalise_row(n, &in[0], &out[0], &r, row_base(&r, o), z, z + r.len);
  free(z);
  return true;
}

/* ---- C --------------------------------------------------------------------- */

bool sparsemax_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0);
  DType dt = x->type.dt;
  Rows r;
  KILN_ASSERT(rows_of_node(n, &x->type, &r, NULL));
  if (type_numel(&x->type) == 0)
    return true;
  if (r.len == 1) { /* each row is one element: 1 where it is finite, as _eval gives */
    emit_elementwise(e, n, arena_printf(g->arena, "isfinite($0) ? %s : %s", emit_double_literal(e, dt, 1),
                                        emit_double_literal(e, dt, 0)));
    return true;
  }
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]), *base = row_base_c(g->arena, &r);
  emit_tmpl(e, n->op == OP_ENTMAX15 ? "entmax15" : "sparsemax", "T", dt_ctype(dt), "ROWS",
            emit_int(e, r.outer * r.inner), "LEN", emit_int(e, r.len), "XR",
            base ? arena_printf(g->arena, "%s + %s", X, base) : X, "YR",
            base ? arena_printf(g->arena, "%s + %s", Y, base) : Y, "S",
            r.inner == 1 ? "" : arena_printf(g->arena, " * %lld", (long long)r.inner), "ZERO",
            emit_double_literal(e, dt, 0), NULL);
  return true;
}

