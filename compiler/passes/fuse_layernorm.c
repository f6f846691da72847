/* fuse_layernorm.c — the fuse_layernorm pass: LayerNorm as PyTorch exports
 * it below opset 17, back into one LayerNormalization node:
 *
 *   ReduceMean(x, last axis) -> Sub -> Pow 2 (or Mul by itself) ->
 *   ReduceMean -> Add eps -> Sqrt -> Div (or Mul by its Reciprocal)
 *   -> Mul gamma [-> Add beta]                 -> LayerNormalization
 *
 * gamma and beta [D] (D the last dim); f64 inputs keep their statistics in
 * f64 (stash_type), as the decomposition computed them. */
#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

static bool fuse_layernorm(Fuser *f, Node *r1) {
  Graph *g = f->g;
  int x = r1->in[0];
  const Type *xt = &g->vals[x].type;
  if (!fm_float_value(g, x) || xt->rank < 1 || !fm_mean_last_axis(g, r1, xt->rank))
    return false;
  Type rt = *xt; /* the statistics' shape: x with the last dim 1 */
  rt.dims[rt.rank - 1] = 1;
  Match m = {0}, mr = {0}; /* mr: nodes of the reduced shape rt */
  fm_take(&mr, g, r1);
  int mean = r1->out[0];
  Node *sub = fm_sole_user(f, mean, OP_SUB);
  if (!sub || sub->in[0] != x || sub->in[1] != mean)
    return false;
  fm_take(&m, g, sub);
  int d = sub->out[0];
  /* d = x - mean feeds the square and the normalisation, nothing else */
  Node *sq = NULL;
  for (int k = f->ustart[d]; k < f->ustart[d + 1] && !sq; k++) {
    Node *u = &g->nodes[f->ulist[k]];
    if ((u->op == OP_POW && u->in[0] == d && fm_const_is(g, u->in[1], 2, 0)) ||
        (u->op == OP_MUL && u->in[0] == d && u->in[1] == d))
      sq = u;
  }
  if (!sq || g->vals[d].is_output || fm_nreaders(f, d) != (sq->op == OP_MUL ? 3 : 2))
    return false;
  fm_take(&m, g, sq);
  Node *r2 = fm_sole_user(f, sq->out[0], OP_REDUCEMEAN);
  if (!r2 || !fm_mean_last_axis(g, r2, xt->rank))
    return false;
  fm_take(&mr, g, r2);
  double epsilon;
  int gamma;
  Node *gm = fm_match_norm_tail(f, &m, &mr, r2, d, xt, &epsilon, &gamma);
  if (!gm)
    return false;
  int64_t dim = xt->dims[xt->rank - 1];
  Node *bb = fm_sole_user(f, gm->out[0], OP_ADD);
  int beta = bb ? fm_other(bb, gm->out[0]) : -1;
  if (bb && fm_is_param(g, beta, xt->dt, dim))
    fm_take(&m, g, bb);
  else
    beta = -1;
  if (!fm_outputs_are(g, &m, xt) || !fm_outputs_are(g, &mr, &rt))
    return false;
  for (int i = 0; i < mr.n; i++)
    fm_take(&m, g, &g->nodes[mr.idx[i]]);
  int in[3] = {x, gamma, beta};
  Node *n = fm_fuse_into(f, &m, beta >= 0 ? bb : gm, OP_LAYERNORM, in, beta >= 0 ? 3 : 2);
  node_add_attr(g, n, "axis", ATTR_INT)->i = -1;
  node_add_attr(g, n, "epsilon", ATTR_FLOAT)->f = epsilon;
  if (xt->dt == DT_F64) /* statistics in f64, as the decomposition computed them */
    node_add_attr(g, n, "stash_type", ATTR_INT)->i = DT_F64;
  fm_fuse_done(f, n, "layernorm");
  return true;
}

bool pass_fuse_layernorm(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, OP_REDUCEMEAN, fuse_layernorm);
}
