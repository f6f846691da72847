/* lower_norm.c — kiln export's lowerings of the normalisations (ops.def's
 * lower column): LayerNormalization below opset 17 (fused out of an
 * opset-14 export), AddLayerNorm, and RMSNormalization below opset 23,
 * each as the ReduceMean chain PyTorch's export writes, in the stash type
 * where the op has one, so the rounding matches kiln's _eval. */
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"

/* ReduceMean over axes [a, rank) keeping dims, in the form of the graph's
 * opset: axes an input from opset 18, the attribute before. The node is
 * made (ir_op), not finished. */
static int reduce_mean_node(Graph *g, Lowering *l, const char *origin, int x, int a, int rank) {
  int64_t axes[MAX_RANK];
  for (int i = a; i < rank; i++)
    axes[i - a] = i;
  bool as_input = g->opset >= 18;
  int in[2] = {x, as_input ? ir_const_i64(g, "axes", axes, rank - a) : -1};
  int idx = l ? lw_node(l, OP_REDUCEMEAN, in, as_input ? 2 : 1, 1) : ir_op(g, OP_REDUCEMEAN, origin, in, as_input ? 2 : 1, 1);
  if (!as_input)
    ir_attr_ints(g, idx, "axes", axes, rank - a);
  ir_attr_int(g, idx, "keepdims", 1);
  return idx;
}

/* Mean over axes [a, rank) keeping dims. */
static int reduce_mean_tail(Lowering *l, int x, int a, int rank) {
  if (x < 0 || l->failed)
    return -1;
  return lw_finish(l, reduce_mean_node(l->g, l, NULL, x, a, rank));
}

/* The statistics of x over axes [a, rank), as PyTorch's opset-14 export
 * computes them: the mean, then the mean of the squared deviations. */
typedef struct Moments {
  int dev;  /* x - mean */
  int mean; /* mean, dims from a kept as 1 */
  int sd;   /* sqrt(var + epsilon) */
} Moments;

static Moments moments(Lowering *l, int x, int a, double epsilon) {
  int rank = gval(l->g, x)->type.rank;
  Moments m = {.mean = reduce_mean_tail(l, x, a, rank)};
  m.dev = lw_binary(l, OP_SUB, x, m.mean);
  int var = reduce_mean_tail(l, lw_binary(l, OP_MUL, m.dev, m.dev), a, rank);
  m.sd = lw_unary(l, OP_SQRT, lw_binary(l, OP_ADD, var, lw_scalar(l, "epsilon", epsilon)));
  return m;
}

/* y · scale (+ bias). A scale or bias with one element per normalised
 * element but another shape (kiln reads them flat) is reshaped to x's dims
 * from axis a, so broadcasting lines it up. */
static int scale_and_shift(Lowering *l, int y, int scale, int bias, int a) {
  if (y < 0)
    return -1;
  const Type *t = &gval(l->g, y)->type;
  int64_t dims[MAX_RANK], len = 1;
  for (int i = a; i < t->rank; i++)
    len *= dims[i - a] = t->dims[i];
  int rank = t->rank - a;
  int params[2] = {scale, bias};
  for (int i = 0; i < 2; i++)
    if (params[i] >= 0 && type_numel(&gval(l->g, params[i])->type) == len)
      params[i] = lw_reshape(l, params[i], dims, rank);
  y = lw_binary(l, OP_MUL, y, params[0]);
  return bias >= 0 ? lw_binary(l, OP_ADD, y, params[1]) : y;
}

/* LayerNormalization {axis, epsilon, stash_type} (X, Scale, B?) -> Y,
 * Mean?, InvStdDev?, the statistics in the stash type (Cast in and out). */
bool layernorm_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int x = n->in[0], scale = n->in[1], bias = node_has_in(n, 2) ? n->in[2] : -1, nout = n->nout, a;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), gval(g, x)->type.rank, &a));
  DType dt = gval(g, x)->type.dt, stash = attr_int(n, "stash_type", 1) == DT_F64 ? DT_F64 : DT_F32;
  Lowering l = lw_start(g, node, stash, d);
  if (!lw_need_opset(&l, 7, "broadcasting Sub and Div"))
    return false;
  Moments m = moments(&l, lw_cast(&l, x, stash), a, attr_float(n, "epsilon", 1e-5));
  int y = lw_cast(&l, lw_binary(&l, OP_DIV, m.dev, m.sd), dt);
  bool ok = lw_result(&l, scale_and_shift(&l, y, scale, bias, a), 0);
  if (ok && nout > 1)
    ok = lw_result(&l, m.mean, 1);
  if (ok && nout > 2)
    ok = lw_result(&l, lw_unary(&l, OP_RECIPROCAL, m.sd), 2);
  return ok;
}

/* AddLayerNorm {axis, epsilon} (A, B, Scale, Bias?) -> Y, S?: S = A + B,
 * then LayerNorm of S with statistics in its own type. */
bool add_layernorm_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int scale = n->in[2], bias = node_has_in(n, 3) ? n->in[3] : -1, nout = n->nout, a;
  const Type *t = &gval(g, n->in[0])->type;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), t->rank, &a));
  Lowering l = lw_start(g, node, t->dt, d);
  if (!lw_need_opset(&l, 7, "broadcasting Sub and Div"))
    return false;
  double epsilon = attr_float(n, "epsilon", 1e-5);
  int s = lw_binary(&l, OP_ADD, n->in[0], n->in[1]);
  Moments m = moments(&l, s, a, epsilon);
  int y = scale_and_shift(&l, lw_binary(&l, OP_DIV, m.dev, m.sd), scale, bias, a);
  bool ok = lw_result(&l, y, 0);
  return ok && nout > 1 ? lw_result(&l, s, 1) : ok;
}

/* ---- RMSNormalization below opset 23 ------------------------------------------- */

/* RMSNormalization's lowering for kiln export: standard nodes added one by
 * one, each inferred at once; after the first failure every step gives -1. */
typedef struct RmsLower {
  Graph *g;
  const char *origin;
  Diag *d;
  bool ok;
} RmsLower;

static int rl_begin(RmsLower *l, int op, const int *in, int nin) {
  for (int i = 0; i < nin; i++)
    l->ok = l->ok && in[i] >= 0;
  return l->ok ? ir_op(l->g, op, l->origin, in, nin, 1) : -1;
}

static int rl_end(RmsLower *l, int node) {
  l->ok = l->ok && node >= 0 && ir_finish(l->g, node, l->d);
  return l->ok ? ir_out(l->g, node, 0) : -1;
}

static int rl_op(RmsLower *l, int op, const int *in, int nin) { return rl_end(l, rl_begin(l, op, in, nin)); }

static int rl_cast(RmsLower *l, int x, DType to) {
  if (x >= 0 && l->g->vals[x].type.dt == to)
    return x;
  int node = rl_begin(l, OP_CAST, &x, 1);
  if (node >= 0)
    ir_attr_int(l->g, node, "to", to);
  return rl_end(l, node);
}

/* RMSNormalization below opset 23: Cast to the stash type,
 * Mul(x, x), ReduceMean over the dims from axis, Add epsilon, Sqrt, Div, Cast back, Mul by the
 * scale (reshaped to the normalised dims when it has their element count
 * in another shape: kiln reads it flat). The last node writes the node's
 * own output. */
bool rmsnorm_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int x = n->in[0], scale = n->in[1], want = n->out[0], a;
  Type xt = g->vals[x].type;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), xt.rank, &a));
  double eps = attr_float(n, "epsilon", 1e-5);
  DType ut = attr_int(n, "stash_type", 1) == 11 ? DT_F64 : DT_F32;
  if (g->opset < 7)
    return diag_node(d, g, n, "export: no ONNX form at opset %d; expected opset 7 or later "
                     "(broadcasting Add and Div)", g->opset);
  RmsLower l = {g, n->origin, d, true};
  int xs = rl_cast(&l, x, ut);
  int sq = rl_op(&l, OP_MUL, (int[]){xs, xs}, 2);
  l.ok = l.ok && sq >= 0;
  int mean = l.ok ? reduce_mean_node(g, NULL, l.origin, sq, a, xt.rank) : -1;
  int ms = rl_end(&l, mean);
  int eps_c = ir_const_scalar(g, "epsilon", ut, eps);
  int root = rl_op(&l, OP_SQRT, (int[]){rl_op(&l, OP_ADD, (int[]){ms, eps_c}, 2)}, 1);
  int y = rl_cast(&l, rl_op(&l, OP_DIV, (int[]){xs, root}, 2), xt.dt);
  Type nt = {.dt = xt.dt, .rank = xt.rank - a}; /* the normalised dims */
  for (int i = a; i < xt.rank; i++)
    nt.dims[i - a] = xt.dims[i];
  const Type *st = &g->vals[scale].type;
  if (type_numel(st) == type_numel(&nt) && !type_equal(st, &nt))
    scale = rl_op(&l, OP_RESHAPE, (int[]){scale, ir_const_i64(g, "scale_shape", nt.dims, nt.rank)}, 2);
  int last = rl_op(&l, OP_MUL, (int[]){y, scale}, 2);
  if (!l.ok)
    return false;
  int p = g->vals[last].producer;
  KILN_ASSERT(p >= 0 && type_equal(&g->vals[last].type, &g->vals[want].type));
  g->nodes[p].out[0] = want;
  g->vals[last].producer = -1;
  g->vals[want].producer = p;
  return true;
}
