/* fold_bn.c — the fold_bn pass: a per-channel affine map after a
 * convolution by a constant weight goes into that weight and bias.
 *
 *   Conv(x, W, B) -> BatchNormalization(scale, beta, mean, var, eps)
 *       W'[m,...] = W[m,...]·s[m],  B'[m] = (B[m] - mean[m])·s[m] + beta[m],
 *       s[m] = scale[m] / sqrt(var[m] + eps)
 *   Conv(x, W, B) -> Mul(c)   (c a constant per output channel or a scalar)
 *       W'[m,...] = W[m,...]·c[m],  B'[m] = B[m]·c[m]
 *   Conv(x, W, B) -> Add(c)   B'[m] = B[m] + c[m]
 *
 * repeated while one applies, so Conv -> BN -> Mul -> Add is one Conv.
 * ConvTranspose is folded the same way, its W being [C, M/group, k...]:
 * output channel m is column (m % (M/group)) of group m / (M/group).
 * The map is only taken when the convolution's output is read by it alone
 * and its every parameter is constant; the new W and B are new constants
 * (the old ones stay for other readers, and dce drops them otherwise).
 * Runs before conv_gemm, which turns the Conv into a GEMM whose epilogue
 * then adds the folded bias for free. Sums in double, stored in the
 * weight's dtype (f32 or f64). */
#include <math.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "fuse_match.h"
#include "passes.h"

/* v is a constant that broadcasts along output channel axis 1 of y only
 * (a scalar, [M], [M,1,1] or [1,M,1,1] for y [N,M,H,W]): its value for
 * channel m is at m * *step (step 0 for a scalar). */
static bool channel_const(const Graph *g, int v, const Type *y, int64_t *step) {
  const Value *c = &g->vals[v];
  if (!c->data || !dt_is_float(c->type.dt) || c->type.rank > y->rank)
    return false;
  int64_t n = type_numel(&c->type);
  if (n == 1) {
    *step = 0;
    return true;
  }
  int off = y->rank - c->type.rank; /* dims right-aligned */
  for (int i = 0; i < c->type.rank; i++)
    if (c->type.dims[i] != 1 && i + off != 1)
      return false;
  if (n != y->dims[1])
    return false;
  *step = 1;
  return true;
}

/* The per-channel map y' = y·mul[m] + add[m] that node n applies to the
 * conv output y (BatchNormalization, or a Mul / Add by a channel
 * constant); false when n is not one. */
static bool channel_map(const Graph *g, const Node *n, int y, const Type *yt, double *mul, double *add) {
  int64_t m = yt->dims[1], step;
  if (n->op == OP_BATCHNORM) {
    if (n->nout != 1 || n->in[0] != y || attr_int(n, "training_mode", 0) != 0)
      return false;
    for (int i = 1; i < 5; i++) {
      const Value *p = &g->vals[n->in[i]];
      if (!p->data || !dt_is_float(p->type.dt) || type_numel(&p->type) != m)
        return false;
    }
    double eps = attr_float(n, "epsilon", 1e-5);
    const Value *sc = &g->vals[n->in[1]], *be = &g->vals[n->in[2]], *mu = &g->vals[n->in[3]],
                *va = &g->vals[n->in[4]];
    for (int64_t i = 0; i < m; i++) {
      double s = el_get_f(sc->type.dt, sc->data, i) / sqrt(el_get_f(va->type.dt, va->data, i) + eps);
      mul[i] = s;
      add[i] = el_get_f(be->type.dt, be->data, i) - el_get_f(mu->type.dt, mu->data, i) * s;
    }
    return true;
  }
  if (n->op != OP_MUL && n->op != OP_ADD)
    return false;
  int c = fm_other(n, y);
  if (c == y || !channel_const(g, c, yt, &step))
    return false;
  const Value *cv = &g->vals[c];
  for (int64_t i = 0; i < m; i++) {
    double k = el_get_f(cv->type.dt, cv->data, i * step);
    mul[i] = n->op == OP_MUL ? k : 1;
    add[i] = n->op == OP_ADD ? k : 0;
  }
  return true;
}

/* NAME_folded for a constant NAME; a folded one's own name again (made
 * unique with _2, _3 ...) rather than NAME_folded_folded. */
static const char *folded_name(Graph *g, const char *name) {
  const char *f = strstr(name, "_folded");
  if (f)
    return arena_printf(g->arena, "%.*s_folded", (int)(f - name), name);
  return arena_printf(g->arena, "%s_folded", name);
}

/* Apply y' = y·mul + add to conv n's W and B as new constants; the conv's
 * inputs then read them. */
static void fold_into(Graph *g, Node *n, const double *mul, const double *add) {
  const Value *w = &g->vals[n->in[1]];
  DType dt = w->type.dt;
  int64_t m = g->vals[n->out[0]].type.dims[1], grp = attr_int(n, "group", 1), per = type_numel(&w->type) / w->type.dims[0];
  bool tr = n->op == OP_CONVTRANSPOSE;
  int64_t mg = m / grp, k = tr ? per / mg : per; /* ConvTranspose: per = M/group * taps */
  void *wd = arena_dup(g->arena, w->data, type_bytes(&w->type));
  for (int64_t i = 0; i < type_numel(&w->type); i++) {
    int64_t ch = tr ? (i / per) / (w->type.dims[0] / grp) * mg + (i % per) / k : i / per;
    el_set_f(dt, wd, i, el_get_f(dt, wd, i) * mul[ch]);
  }
  void *bd = arena_alloc(g->arena, (size_t)m * dt_size(dt));
  const Value *b = node_has_in(n, 2) ? &g->vals[n->in[2]] : NULL;
  for (int64_t i = 0; i < m; i++)
    el_set_f(dt, bd, i, (b ? el_get_f(dt, b->data, i) : 0) * mul[i] + add[i]);
  const char *wname = folded_name(g, g->vals[n->in[1]].name);
  const char *bname = folded_name(g, b ? b->name : arena_printf(g->arena, "%s_bias", n->name ? n->name : "conv"));
  int nw = ir_const_in_place(g, wname, dt, w->type.rank, w->type.dims, wd);
  int nb = ir_const_in_place(g, bname, dt, 1, &m, bd);
  int in[3] = {n->in[0], nw, nb};
  n->in = arena_dup(g->arena, in, sizeof in);
  n->nin = 3;
}

/* Conv n (constant W and B) followed by a channel map read only by it:
 * fold the map in, the conv taking the map's output. */
static bool fold_at(Fuser *f, Node *n) {
  Graph *g = f->g;
  if (n->op != OP_CONV && n->op != OP_CONVTRANSPOSE)
    return false;
  int y = n->out[0];
  const Value *w = &g->vals[n->in[1]];
  const Type *yt = &g->vals[y].type;
  if (!w->data || !dt_is_float(w->type.dt) || yt->rank < 3 || (node_has_in(n, 2) && !g->vals[n->in[2]].data))
    return false;
  Node *u = fm_sole_user(f, y, -1);
  if (!u || u->nout != 1 || !type_equal(&g->vals[u->out[0]].type, yt))
    return false;
  double *mul = arena_alloc(g->arena, sizeof(double) * (size_t)yt->dims[1]);
  double *add = arena_alloc(g->arena, sizeof(double) * (size_t)yt->dims[1]);
  if (!channel_map(g, u, y, yt, mul, add))
    return false;
  fold_into(g, n, mul, add);
  Match m = {0};
  fm_take(&m, g, n);
  fm_take(&m, g, u);
  int nattr = n->nattr, in[3];
  Attr *attrs = n->attrs;
  const char *op = op_table[u->op].name;
  memcpy(in, n->in, sizeof in);
  Node *fn = fm_fuse_into(f, &m, u, n->op, in, 3);
  fn->nattr = nattr;
  fn->attrs = attrs;
  fm_fuse_done(f, fn, arena_printf(g->arena, "conv+%s folded", op));
  return true;
}

bool pass_fold_bn(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  /* each sweep folds one map per conv; a chain BN -> Mul -> Add takes three */
  for (int round = 0; round < 8; round++) {
    int before = g->nnodes;
    fm_sweep(g, o, -1, fold_at);
    if (g->nnodes == before)
      break;
  }
  return true;
}
