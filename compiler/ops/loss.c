/* loss.c — classification losses: NegativeLogLikelihoodLoss (inputs are
 * log-probabilities) and SoftmaxCrossEntropyLoss (inputs are raw scores;
 * log-softmax over the class axis first, optionally returned as log_prob).
 *
 * x is [N, C, d1..dk] (or [N, C]); target [N, d1..dk] holds one class per
 * position. Position p with class t loses -logp(t) * w[t] (w = 1 without a
 * weight input); a target equal to ignore_index loses 0 and weighs 0.
 * reduction "none" returns the loss per position; "sum" their sum; "mean"
 * (the default) the sum divided by the sum of the picked weights (the
 * number of positions not ignored, without weights). With every position
 * ignored "mean" is 0 / 0 = NaN, as in ONNX's reference.
 *
 * A target outside [0, C) that is not ignore_index is an error wherever
 * kiln can see it (constant targets in _infer, always in _eval); the
 * generated C clamps it into [0, C) so that it never reads out of bounds.
 * Sums accumulate in double in both _eval and the generated C. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

typedef enum { RED_NONE, RED_SUM, RED_MEAN } Reduction;

/* The loss as the three functions see it: sizes of the [N, C, D] view and
 * the attributes. */
typedef struct Loss {
  int64_t N, C, D;
  Reduction red;
  bool has_ii;
  int64_t ii;         /* ignore_index, when has_ii */
  bool has_weight;
  bool log_prob;      /* SoftmaxCrossEntropyLoss's second output */
} Loss;

static bool reduction_of(const Node *n, Reduction *r) {
  const char *s = attr_str(n, "reduction", "mean");
  *r = !strcmp(s, "none") ? RED_NONE : !strcmp(s, "sum") ? RED_SUM : RED_MEAN;
  return *r != RED_MEAN || !strcmp(s, "mean");
}

/* Check the inputs' types and fill l; false with a message in err. */
static bool loss_shapes(const Node *n, const Type *xt, const Type *tt, const Type *wt, Loss *l,
                        char *err, size_t errn) {
  char sx[128], st[128];
  memset(l, 0, sizeof *l);
  if (!dt_is_float(xt->dt) || xt->rank < 2) {
    snprintf(err, errn, "input is %s; expected f32 or f64 of rank >= 2 (N, C, ...)",
             type_str(xt, sx, sizeof sx));
    return false;
  }
  if (tt->dt != DT_I32 && tt->dt != DT_I64) {
    snprintf(err, errn, "target is %s; expected i32 or i64", dt_name(tt->dt));
    return false;
  }
  bool ok = tt->rank == xt->rank - 1 && tt->dims[0] == xt->dims[0];
  for (int d = 1; ok && d < tt->rank; d++)
    ok = tt->dims[d] == xt->dims[d + 1];
  if (!ok) {
    snprintf(err, errn, "target is %s for input %s; expected the input's shape without dim 1",
             type_str(tt, st, sizeof st), type_str(xt, sx, sizeof sx));
    return false;
  }
  l->N = xt->dims[0];
  l->C = xt->dims[1];
  l->D = 1;
  for (int d = 2; d < xt->rank; d++)
    l->D *= xt->dims[d];
  if (l->C < 1) {
    snprintf(err, errn, "input %s has no classes; expected dim 1 >= 1",
             type_str(xt, sx, sizeof sx));
    return false;
  }
  if (wt) {
    if (wt->dt != xt->dt || wt->rank != 1 || wt->dims[0] != l->C) {
      snprintf(err, errn, "weight is %s; expected %s[%lld] (one per class)",
               type_str(wt, st, sizeof st), dt_name(xt->dt), (long long)l->C);
      return false;
    }
    l->has_weight = true;
  }
  if (!reduction_of(n, &l->red)) {
    snprintf(err, errn, "reduction is '%s'; expected none, sum or mean",
             attr_str(n, "reduction", "mean"));
    return false;
  }
  const Attr *ii = attr_get(n, "ignore_index");
  l->has_ii = ii && ii->kind == ATTR_INT;
  l->ii = l->has_ii ? ii->i : 0;
  l->log_prob = n->op == OP_SCELOSS && n->nout > 1 && n->out[1] >= 0;
  return true;
}

/* Every target is a class in [0, C) or ignore_index. */
static bool targets_ok(const Loss *l, DType dt, const void *t, int64_t cnt, char *err,
                       size_t errn) {
  for (int64_t i = 0; i < cnt; i++) {
    int64_t v = el_get_i(dt, t, i);
    if ((v < 0 || v >= l->C) && !(l->has_ii && v == l->ii)) {
      snprintf(err, errn, "target %lld out of range; expected a class in [0, %lld)%s", (long long)v,
               (long long)l->C, l->has_ii ? " or ignore_index" : "");
      return false;
    }
  }
  return true;
}

bool loss_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *t = node_in(g, n, 1), *w = node_in(g, n, 2);
  Loss l;
  char err[256];
  if (!loss_shapes(n, &x->type, &t->type, w ? &w->type : NULL, &l, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  if (t->data && !targets_ok(&l, t->type.dt, t->data, type_numel(&t->type), err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  Type y = t->type;
  y.dt = x->type.dt;
  if (l.red != RED_NONE)
    y.rank = 0;
  node_out(g, n, 0)->type = y;
  if (n->nout > 1 && node_out(g, n, 1))
    node_out(g, n, 1)->type = x->type;
  return true;
}

bool loss_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Tensor *x = &in[0], *t = &in[1], *w = n->nin > 2 && in[2].data ? &in[2] : NULL;
  DType dt = x->type.dt;
  Loss l;
  char err[256];
  KILN_ASSERT(loss_shapes(n, &x->type, &t->type, w ? &w->type : NULL, &l, err, sizeof err));
  if (!targets_ok(&l, t->type.dt, t->data, type_numel(&t->type), err, sizeof err))
    return diag_error(d, "node '%s' (%s): %s", n->name, node_op_name(n), err);
  double total = 0, weight_sum = 0;
  for (int64_t i = 0; i < l.N; i++)
    for (int64_t k = 0; k < l.D; k++) {
      /* x[i][c][k] is element base + c * D */
      int64_t base = i * l.C * l.D + k, p = i * l.D + k;
      double max = -INFINITY, sum = 0, log_sum = 0;
      if (n->op == OP_SCELOSS) {
        for (int64_t c = 0; c < l.C; c++)
          max = fmax(max, el_get_f(dt, x->data, base + c * l.D));
        for (int64_t c = 0; c < l.C; c++)
          sum += exp(el_get_f(dt, x->data, base + c * l.D) - max);
        log_sum = log(sum);
        for (int64_t c = 0; l.log_prob && c < l.C; c++)
          el_set_f(dt, out[1].data, base + c * l.D,
                   el_get_f(dt, x->data, base + c * l.D) - max - log_sum);
      }
      int64_t c = el_get_i(t->type.dt, t->data, p);
      if (l.has_ii && c == l.ii)
        continue; /* loss and weight 0; output zeroed already */
      double logp = el_get_f(dt, x->data, base + c * l.D);
      if (n->op == OP_SCELOSS)
        logp = logp - max - log_sum;
      double wc = w ? el_get_f(dt, w->data, c) : 1;
      double loss = -logp * wc;
      if (l.red == RED_NONE)
        el_set_f(dt, out[0].data, p, loss);
      total += loss;
      weight_sum += wc;
    }
  if (l.red == RED_SUM)
    el_set_f(dt, out[0].data, 0, total);
  else if (l.red == RED_MEAN)
    el_set_f(dt, out[0].data, 0, total / weight_sum);
  return true;
}

/* The loop body for position (i, k): SCE's log-softmax statistics (and
 * log_prob), then the picked class, its weight and loss. */
static void emit_position(Emit *e, const Node *n, const Loss *l, const char *xr, const char *p) {
  Arena *a = e->g->arena;
  DType dt = gval(e->g, n->in[0])->type.dt;
  const char *T = dt_ctype(dt);
  const char *c_at = l->D == 1 ? "c" : arena_printf(a, "c * %lld", (long long)l->D);
  const char *c_col = arena_printf(a, "xr[%s]", c_at);
  const char *t_col = l->D == 1 ? "xr[t]" : arena_printf(a, "xr[t * %lld]", (long long)l->D);
  if (l->D == 1)
    emit_line(e, "const %s *xr = %s; /* x[i][:] */", T, xr);
  else
    emit_line(e, "const %s *xr = %s; /* x[i][:][k], stride %lld */", T, xr, (long long)l->D);
  if (n->op == OP_SCELOSS) {
    emit_tmpl(e, "loss_logsumexp", "T", T, "C", emit_int(e, l->C), "X0", "xr[0]", "XC", c_col,
              "ZERO", emit_double_literal(e, dt, 0), "EXP", emit_mathfn(e, dt, "exp"), "LOG",
              emit_mathfn(e, dt, "log"), NULL);
    if (l->log_prob) {
      const char *lp = emit_ref(e, n->out[1]);
      const char *lr = l->D == 1 ? arena_printf(a, "%s + i * %lld", lp, (long long)l->C)
                                 : arena_printf(a, "%s + i * %lld + k", lp,
                                                (long long)(l->C * l->D));
      emit_line(e, "%s *log_prob = %s;", T, lr);
      emit_line(e, "for (int c = 0; c < %lld; c++)", (long long)l->C);
      emit_line(e, "  log_prob[%s] = %s - max - log_sum;", c_at, c_col);
    }
  }
  emit_line(e, "int64_t t = %s[%s];", emit_ref(e, n->in[1]), p);
  if (l->has_ii) {
    emit_line(e, "if (t == %lld) {", (long long)l->ii);
    if (l->red == RED_NONE)
      emit_line(e, "  %s[%s] = 0; /* ignored */", emit_ref(e, n->out[0]), p);
    else
      emit_line(e, "  /* ignored: adds nothing, weighs nothing */");
    emit_line(e, "  continue;");
    emit_line(e, "}");
  }
  emit_line(e, "t = t < 0 ? 0 : t > %lld ? %lld : t; /* out of range is undefined: clamp */",
            (long long)(l->C - 1), (long long)(l->C - 1));
  const char *logp = n->op == OP_SCELOSS ? arena_printf(a, "(%s - max - log_sum)", t_col) : t_col;
  if (l->has_weight) {
    emit_line(e, "const %s w = %s[t];", T, emit_ref(e, n->in[2]));
    emit_line(e, "const %s loss = -%s * w;", T, logp);
  } else {
    emit_line(e, "const %s loss = -%s;", T, logp);
  }
  if (l->red == RED_NONE) {
    emit_line(e, "%s[%s] = loss;", emit_ref(e, n->out[0]), p);
    return;
  }
  emit_line(e, "total += loss;");
  if (l->red == RED_MEAN)
    emit_line(e, "weight_sum += %s;", l->has_weight ? "w" : "1");
}

bool loss_emit(Emit *e, const Node *n) {
  Arena *a = e->g->arena;
  const Value *w = node_in(e->g, n, 2);
  Loss l;
  char err[256];
  if (!loss_shapes(n, &gval(e->g, n->in[0])->type, &gval(e->g, n->in[1])->type,
                   w ? &w->type : NULL, &l, err, sizeof err))
    return false;
  DType dt = gval(e->g, n->in[0])->type.dt;
  const char *y = emit_ref(e, n->out[0]);
  const char *red = l.red == RED_NONE ? "per position" : l.red == RED_SUM ? "summed"
                    : l.has_weight ? "weighted mean" : "mean";
  const char *at = l.D == 1 ? "[i]" : "[i][k]", *col = l.D == 1 ? "x[i][:]" : "x[i][:][k]";
  emit_line(e, "/* %s loss, %s, over %lld x %lld positions: position %s takes class",
            n->op == OP_SCELOSS ? "softmax cross-entropy" : "negative log-likelihood", red,
            (long long)l.N, (long long)l.D, at);
  emit_line(e, " * t = target%s of the %lld scores %s; loss = -%s%s%s */", at, (long long)l.C, col,
            n->op == OP_SCELOSS ? arena_printf(a, "log_softmax(%s)[t]", col)
                                : (l.D == 1 ? "x[i][t]" : "x[i][t][k]"),
            l.has_weight ? " * weight[t]" : "",
            l.has_ii ? arena_printf(a, "; target %lld is ignored", (long long)l.ii) : "");
  if (l.N * l.D == 0) {
    if (l.red == RED_SUM)
      emit_line(e, "%s[0] = 0;", y);
    else if (l.red == RED_MEAN)
      emit_line(e, "%s[0] = NAN; /* 0 / 0 */", y);
    return true;
  }
  if (l.red != RED_NONE)
    emit_line(e, "%s", l.red == RED_MEAN ? "double total = 0.0, weight_sum = 0.0;"
                                         : "double total = 0.0;");
  const char *x = emit_ref(e, n->in[0]);
  emit_line(e, "for (int i = 0; i < %lld; i++) {", (long long)l.N);
  e->indent++;
  if (l.D == 1) {
    emit_position(e, n, &l, arena_printf(a, "%s + i * %lld", x, (long long)l.C), "i");
  } else {
    emit_line(e, "for (int k = 0; k < %lld; k++) {", (long long)l.D);
    e->indent++;
    emit_position(e, n, &l, arena_printf(a, "%s + i * %lld + k", x, (long long)(l.C * l.D)),
                  arena_printf(a, "i * %lld + k", (long long)l.D));
    e->indent--;
    emit_line(e, "}");
  }
  e->indent--;
  emit_line(e, "}");
  if (l.red == RED_SUM)
    emit_line(e, "%s[0] = (%s)total;", y, dt_ctype(dt));
  else if (l.red == RED_MEAN)
    emit_line(e, "%s[0] = (%s)(total / weight_sum);", y, dt_ctype(dt));
  return true;
}
