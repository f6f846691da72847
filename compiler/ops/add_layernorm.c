/* add_layernorm.c — kiln's AddLayerNorm, the residual add and the
 * LayerNorm after it as one row pass (made by compiler/passes/fuse_residual.c):
 *
 *   AddLayerNorm(A, B, Scale, Bias?) {axis=-1, epsilon=1e-5} -> Y, S?
 *     S = A + B                                  (the residual sum)
 *     Y = (S - mean(S)) / sqrt(var(S) + epsilon) * Scale + Bias
 *
 * over the flattened dims from `axis`, as LayerNormalization. A and B have
 * the same shape (no broadcasting); Scale and Bias hold one element per
 * normalised element, read flat. The optional second output S is the sum,
 * for pre-norm blocks where the residual stream is read again later; post-
 * norm blocks drop it and the sum never leaves the row.
 *
 * Why an op: a transformer adds a residual before every LayerNorm. Done
 * apart, the sum makes a full round trip through memory and the norm then
 * reads it in three scalar passes. Here one pass per row adds, stores the
 * sum and accumulates the mean in lane-wise partial sums (a vector loop for
 * any C compiler that vectorises), the variance likewise, and the last
 * pass normalises. Statistics are in the tensors' own type (f32 or f64);
 * _eval rounds the sum to that type first, as the unfused Add did.
 *
 * A fifth input rows i64[1] (an encoder's run-time token count, made by
 * compiler/passes/bound_rows.c) normalises only the first `rows` rows
 * (clipped to [0, ROWS]); Y's and S's rows past it are set to 0, or with
 * rows_keep=1 left as they are (_eval writes 0 either way). */
#include <math.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "rows.h"

/* The rows: `rows` of `len` elements (dims from the axis on). */
static bool addnorm_rows(const Node *n, const Type *t, int64_t *rows, int64_t *len) {
  int a;
  if (!axis_norm(attr_int(n, "axis", -1), t->rank, &a))
    return false;
  *rows = *len = 1;
  for (int i = 0; i < t->rank; i++)
    *(i < a ? rows : len) *= t->dims[i];
  return true;
}

static bool same_float_type(const Value *v, DType dt) { return v && v->type.dt == dt; }

bool add_layernorm_infer(Graph *g, Node *n, Diag *d) {
  Value *a = node_in(g, n, 0), *b = node_in(g, n, 1), *scale = node_in(g, n, 2), *bias = node_in(g, n, 3);
  if (!a || !b || !scale)
    return diag_node(d, g, n, "input %s is absent; expected a tensor", !a ? "A" : !b ? "B" : "Scale");
  const Type *ta = &a->type;
  char sa[128], sb[128];
  if (ta->dt != DT_F32 && ta->dt != DT_F64)
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", a->name, dt_name(ta->dt));
  if (ta->rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected rank >= 1", a->name);
  if (!type_equal(ta, &b->type))
    return diag_node(d, g, n, "A is %s and B is %s; expected the same type and shape",
                     type_str(ta, sa, sizeof sa), type_str(&b->type, sb, sizeof sb));
  int64_t rows, len;
  if (!addnorm_rows(n, ta, &rows, &len))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected [%d, %d]",
                     (long long)attr_int(n, "axis", -1), ta->rank, -ta->rank, ta->rank - 1);
  for (int i = 2; i < 4; i++) {
    const Value *p = i == 2 ? scale : bias;
    if (!p)
      continue;
    if (!same_float_type(p, ta->dt) || type_numel(&p->type) != len)
      return diag_node(d, g, n, "input '%s' is %s; expected %s with %lld elements (one per "
                       "normalised element of %s)", p->name, type_str(&p->type, sb, sizeof sb),
                       dt_name(ta->dt), (long long)len, type_str(ta, sa, sizeof sa));
  }
  const Value *r = node_in(g, n, 4);
  if (r && (r->type.dt != DT_I64 || type_numel(&r->type) != 1))
    return diag_node(d, g, n, "rows is %s; expected i64[1]", type_str(&r->type, sb, sizeof sb));
  for (int j = 0; j < n->nout; j++)
    node_out(g, n, j)->type = *ta;
  return true;
}

/* The rows normalised: all, or the rows input clipped to [0, rows]. */
static int64_t rows_run(const Node *n, const Tensor *in, int64_t rows) {
  if (n->nin <= 4 || !in[4].data)
    return rows;
  int64_t r = *(const int64_t *)in[4].data;
  return r < 0 ? 0 : r < rows ? r : rows;
}

bool add_layernorm_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  DType dt = in[0].type.dt;
  int64_t rows, len;
  KILN_ASSERT(addnorm_rows(n, &in[0].type, &rows, &len));
  double eps = attr_float(n, "epsilon", 1e-5);
  bool has_bias = n->nin > 3 && in[3].data;
  /* the sum, rounded to dt like the Add it replaces: S when asked for,
   * else Y holds it until the row is normalised */
  void *s = n->nout > 1 ? out[1].data : out[0].data;
  rows = rows_run(n, in, rows); /* the outputs' rows past it stay 0 */
  for (int64_t i = 0; i < rows * len; i++)
    el_set_f(dt, s, i, el_get_f(dt, in[0].data, i) + el_get_f(dt, in[1].data, i));
  for (int64_t o = 0; o < rows; o++) {
    int64_t base = o * len;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < len; k++)
      mean += el_get_f(dt, s, base + k);
    mean /= (double)len;
    for (int64_t k = 0; k < len; k++) {
      double dv = el_get_f(dt, s, base + k) - mean;
      var += dv * dv;
    }
    double inv_std = 1 / sqrt(var / (double)len + eps);
    for (int64_t k = 0; k < len; k++) {
      double y = (el_get_f(dt, s, base + k) - mean) * inv_std * el_get_f(dt, in[2].data, k);
      el_set_f(dt, out[0].data, base + k, has_bias ? y + el_get_f(dt, in[3].data, k) : y);
    }
  }
  return true;
}

bool add_layernorm_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *t = &gval(g, n->in[0])->type;
  int64_t rows, len;
  KILN_ASSERT(addnorm_rows(n, t, &rows, &len));
  if (rows * len == 0)
    return true;
  Arena *ar = g->arena;
  DType dt = t->dt;
  const char *row = rows == 1 ? "" : arena_printf(ar, " + o * %lld", (long long)len);
  /* one call each, in input order: emit_ref names weights by first use */
  const char *A = emit_ref(e, n->in[0]), *B = emit_ref(e, n->in[1]), *G = emit_ref(e, n->in[2]);
  const char *Bias = node_has_in(n, 3) ? emit_ref(e, n->in[3]) : NULL;
  const char *Y = emit_ref(e, n->out[0]), *S = n->nout > 1 ? emit_ref(e, n->out[1]) : NULL;
  const char *y_k = arena_printf(ar, "(sr[k] - mean) * inv_std * %s[k]%s%s%s", G, Bias ? " + " : "",
                                 Bias ? Bias : "", Bias ? "[k]" : "");
  const char *nrows = emit_int(e, rows);
  if (node_has_in(n, 4)) { /* an encoder's token count: rows past it are 0 */
    const char *r = emit_ref(e, n->in[4]);
    nrows = "rows_run";
    emit_line(e, "const int rows_run = %s[0] < 0 ? 0 : %s[0] > %lld ? %lld : (int)%s[0]; /* the live tokens */", r, r,
              (long long)rows, (long long)rows, r);
    bool keep = attr_int(n, "rows_keep", 0) != 0; /* nothing reads them: left as they are */
    if (!keep)
      emit_line(e, "memset(%s + rows_run * %lld, 0, (size_t)(%lld - rows_run) * %lld * sizeof *%s);", Y,
                (long long)len, (long long)rows, (long long)len, Y);
    if (S && !keep)
      emit_line(e, "memset(%s + rows_run * %lld, 0, (size_t)(%lld - rows_run) * %lld * sizeof *%s);", S,
                (long long)len, (long long)rows, (long long)len, S);
  }
  /* rows are independent; per element about 1 ns (three vectorised passes
   * and a share of the row's sums) */
  emit_parallel_for(e, rows, (double)(rows * len));
  emit_tmpl(e, "add_layernorm", "T", dt_ctype(dt), "ROWS", nrows, "LEN", emit_int(e, len),
            "L", emit_int(e, row_sum_lanes(len)), "AR", arena_printf(ar, "%s%s", A, row), "BR",
            arena_printf(ar, "%s%s", B, row), "YR", arena_printf(ar, "%s%s", Y, row), "SR",
            S ? arena_printf(ar, "%s%s", S, row) : "yr", "S_WHAT",
            S ? "S, the sum (an output)" : "the sum, kept in Y's row until it is normalised", "ZERO",
            emit_double_literal(e, dt, 0), "N", emit_double_literal(e, dt, (double)len), "ONE",
            emit_double_literal(e, dt, 1), "EPS", emit_double_literal(e, dt, attr_float(n, "epsilon", 1e-5)),
            "SQRT", emit_mathfn(e, dt, "sqrt"), "Y_K", y_k, NULL);
  return true;
}

/* ---- FLOP count (ops.def's flops column) -------------------------------------- */

/* The residual add, one op per element, then LayerNormalization's 8. */
int64_t add_layernorm_flops(const Graph *g, const Node *n) { return 9 * type_numel(&gval(g, n->out[0])->type); }
