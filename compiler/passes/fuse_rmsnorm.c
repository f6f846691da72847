/* fuse_rmsnorm.c — the fuse_rmsnorm pass: RMSNorm as Hugging Face writes it
 * (T5LayerNorm, LlamaRMSNorm: `x * torch.rsqrt(x.pow(2).mean(-1,
 * keepdim=True) + eps) * w`) and as torch.onnx exports it, back into one
 * RMSNormalization node (compiler/ops/normalize.c):
 *
 *   Mul(x, x) (simplify's spelling of Pow 2; or Pow 2) -> ReduceMean over
 *   the last axis -> Add eps -> Sqrt -> Div(x, ·), or Mul of x by its
 *   Reciprocal or 1/· -> Mul w (either order)   -> RMSNormalization
 *
 * w is [D] (D the last dim). The f32 → f32 Casts the models write around
 * it are gone by then (simplify). f64 keeps its statistic in f64
 * (stash_type), as the decomposition computed it. x itself may have other
 * readers (the residual stream): it is an input of the pattern, not an
 * intermediate. */
#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

/* The square of x feeding ReduceMean r: Mul(x, x) or Pow(x, 2). */
static bool is_square_of(const Graph *g, const Node *sq, int x) {
  return (sq->op == OP_MUL && sq->in[0] == x && sq->in[1] == x) ||
         (sq->op == OP_POW && sq->in[0] == x && fm_const_is(g, sq->in[1], 2, 0));
}

static bool fuse_rmsnorm(Fuser *f, Node *r) {
  Graph *g = f->g;
  Node *sq = fm_sole(f, r->in[0]) ? fm_def(f, r->in[0], -1) : NULL;
  if (!sq || (sq->op != OP_MUL && sq->op != OP_POW))
    return false;
  int x = sq->in[0];
  const Type *xt = &g->vals[x].type;
  if (!fm_float_value(g, x) || xt->rank < 1 || !is_square_of(g, sq, x) || !fm_mean_last_axis(g, r, xt->rank))
    return false;
  Type rt = *xt; /* the statistic's shape: x with the last dim 1 */
  rt.dims[rt.rank - 1] = 1;
  Match m = {0}, mr = {0}; /* mr: nodes of the reduced shape rt */
  fm_take(&m, g, sq);
  fm_take(&mr, g, r);
  double epsilon;
  int w;
  Node *gm = fm_match_norm_tail(f, &m, &mr, r, x, xt, &epsilon, &w);
  if (!gm || !fm_outputs_are(g, &m, xt) || !fm_outputs_are(g, &mr, &rt))
    return false;
  for (int i = 0; i < mr.n; i++)
    fm_take(&m, g, &g->nodes[mr.idx[i]]);
  int in[2] = {x, w};
  Node *n = fm_fuse_into(f, &m, gm, OP_RMSNORM, in, 2);
  node_add_attr(g, n, "axis", ATTR_INT)->i = -1;
  node_add_attr(g, n, "epsilon", ATTR_FLOAT)->f = epsilon;
  if (xt->dt == DT_F64)
    node_add_attr(g, n, "stash_type", ATTR_INT)->i = DT_F64;
  fm_fuse_done(f, n, "rmsnorm");
  return true;
}

bool pass_fuse_rmsnorm(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, OP_REDUCEMEAN, fuse_rmsnorm);
}
