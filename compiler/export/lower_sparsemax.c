/* lower_sparsemax.c — kiln export's lowering of the α-entmax family to
 * standard ONNX ops (ops.def's lower column): Sparsemax and Entmax15
 * (compiler/ops/sparsemax.c) by the same algorithm as the reference, in
 * opset-11+ ops (opset 13 for Entmax15); Entmax (compiler/ops/entmax.c)
 * by a fixed number of bisection steps unrolled (opset 13). The details
 * follow. */
#include <math.h>

#include "../ir/build.h"
#include "../ir/ops.h"

/* The same algorithm as the reference, in opset-13+ ops: TopK with k = the
 * row length sorts z descending, CumSum gives the prefix sums, and a
 * constant rho = [1, 2, .., len] (shaped to broadcast along the axis)
 * counts the prefix. Sparsemax needs no test of the prefix: each τs is at
 * most τ (Σ [zi - τs]_+ >= Σ_{i<=s} (zi - τs) = 1) and the support's τs is
 * τ, so τ = max_s τs. Entmax15 counts the prefixes with τs <= zs (the
 * entmax package's rule) and gathers τ at that count. */

/* The chain (build.h's Lowering) and the axis it normalises along. */
typedef struct Along {
  Lowering lw;
  int axis, rank;
  int64_t len;
} Along;

/* ReduceMax or ReduceSum over the axis, keeping it (axes: an attribute of
 * ReduceMax up to opset 17, an input of ReduceSum from opset 13). */
static int lower_reduce(Along *l, int op, int a) {
  if (l->lw.failed)
    return -1;
  int64_t axes = l->axis;
  bool axes_input = op == OP_REDUCESUM;
  int in[2] = {a, axes_input ? lw_i64(&l->lw, "axes", axes) : -1};
  int node = lw_node(&l->lw, op, in, axes_input ? 2 : 1, 1);
  if (!axes_input)
    ir_attr_ints(l->lw.g, node, "axes", &axes, 1);
  ir_attr_int(l->lw.g, node, "keepdims", 1);
  return lw_finish(&l->lw, node);
}

/* z sorted descending along the axis: TopK's values with k = len. */
static int lower_sort(Along *l, int z) {
  if (l->lw.failed)
    return -1;
  int in[2] = {z, lw_i64(&l->lw, "k", l->len)};
  int node = lw_node(&l->lw, OP_TOPK, in, 2, 2);
  ir_attr_int(l->lw.g, node, "axis", l->axis);
  ir_attr_int(l->lw.g, node, "largest", 1);
  ir_attr_int(l->lw.g, node, "sorted", 1);
  return lw_finish(&l->lw, node);
}

static int lower_cumsum(Along *l, int a) {
  int axis = ir_const_scalar(l->lw.g, lw_name(&l->lw, "axis"), DT_I64, l->axis);
  return lw_binary(&l->lw, OP_CUMSUM, a, axis);
}

/* rho = [1, 2, .., len] along the axis, 1 in every other dim. */
static int lower_rho(Along *l) {
  int64_t dims[MAX_RANK];
  for (int i = 0; i < l->rank; i++)
    dims[i] = i == l->axis ? l->len : 1;
  int vid = ir_const(l->lw.g, lw_name(&l->lw, "rho"), l->lw.dt, l->rank, dims, NULL);
  for (int64_t s = 0; s < l->len; s++)
    el_set_f(l->lw.dt, gval(l->lw.g, vid)->data, s, (double)(s + 1));
  return vid;
}

/* y = relu(z - max_s τs), τs = (cumsum(sorted z)_s - 1) / s */
static int lower_sparsemax(Along *l, int x) {
  int max = lower_reduce(l, OP_REDUCEMAX, x);
  int z = lw_binary(&l->lw, OP_SUB, x, max);
  int cum = lower_cumsum(l, lower_sort(l, z));
  int one = lw_scalar(&l->lw, "one", 1), rho = lower_rho(l);
  int taus = lw_binary(&l->lw, OP_DIV, lw_binary(&l->lw, OP_SUB, cum, one), rho);
  int tau = lower_reduce(l, OP_REDUCEMAX, taus);
  return lw_unary(&l->lw, OP_RELU, lw_binary(&l->lw, OP_SUB, z, tau));
}

/* τs = mean - sqrt(relu((1 - rho·(meansq - mean²)) / rho)) per prefix */
static int lower_entmax15_taus(Along *l, int sorted, int rho) {
  int mean = lw_binary(&l->lw, OP_DIV, lower_cumsum(l, sorted), rho);
  int squares = lw_binary(&l->lw, OP_MUL, sorted, sorted);
  int meansq = lw_binary(&l->lw, OP_DIV, lower_cumsum(l, squares), rho);
  int mean2 = lw_binary(&l->lw, OP_MUL, mean, mean);
  int ss = lw_binary(&l->lw, OP_MUL, rho, lw_binary(&l->lw, OP_SUB, meansq, mean2));
  int one = lw_scalar(&l->lw, "one", 1);
  int delta = lw_binary(&l->lw, OP_DIV, lw_binary(&l->lw, OP_SUB, one, ss), rho);
  return lw_binary(&l->lw, OP_SUB, mean, lw_unary(&l->lw, OP_SQRT, lw_unary(&l->lw, OP_RELU, delta)));
}

/* τ = τs at s = #{s : τs <= zs}, gathered along the axis */
static int lower_entmax15_tau(Along *l, int sorted, int taus) {
  int passes = lw_cast(&l->lw, lw_binary(&l->lw, OP_LESSOREQUAL, taus, sorted), l->lw.dt);
  int support = lower_reduce(l, OP_REDUCESUM, passes);
  int one = lw_scalar(&l->lw, "one", 1);
  int index = lw_cast(&l->lw, lw_binary(&l->lw, OP_SUB, support, one), DT_I64);
  if (l->lw.failed)
    return -1;
  int in[2] = {taus, index}, node = lw_node(&l->lw, OP_GATHERELEMENTS, in, 2, 1);
  ir_attr_int(l->lw.g, node, "axis", l->axis);
  return lw_finish(&l->lw, node);
}

/* y = relu(z - τ)², z = x/2 - max(x/2). z is floored at -2 before the
 * sort: no z < -1 is in the support, and a masked score (-inf) would make
 * the prefix statistics inf - inf. */
static int lower_entmax15(Along *l, int x) {
  int half = lw_binary(&l->lw, OP_MUL, x, lw_scalar(&l->lw, "half", 0.5));
  int max = lower_reduce(l, OP_REDUCEMAX, half);
  int z = lw_binary(&l->lw, OP_SUB, half, max);
  int floored = lw_binary(&l->lw, OP_MAX, z, lw_scalar(&l->lw, "floor", -2));
  int sorted = lower_sort(l, floored), rho = lower_rho(l);
  int tau = lower_entmax15_tau(l, sorted, lower_entmax15_taus(l, sorted, rho));
  int r = lw_unary(&l->lw, OP_RELU, lw_binary(&l->lw, OP_SUB, z, tau));
  return lw_binary(&l->lw, OP_MUL, r, r);
}

/* Lower node `node`, Sparsemax or Entmax15 (both rows name this
 * function): the chain, its last node writing the kiln node's output (the
 * caller marks the node dead and splices the chain into its place). */
bool sparsemax_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  const Type *xt = &gval(g, n->in[0])->type;
  Along l = {.lw = lw_start(g, node, xt->dt, d), .rank = xt->rank};
  int x = n->in[0];
  bool entmax = n->op == OP_ENTMAX15;
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), xt->rank, &l.axis));
  l.len = xt->dims[l.axis];
  if (!lw_need_opset(&l.lw, entmax ? 13 : 11, entmax ? "ReduceSum with axes as an input" : "CumSum"))
    return false;
  return lw_result(&l.lw, entmax ? lower_entmax15(&l, x) : lower_sparsemax(&l, x), 0);
}

/* ---- Entmax: α-entmax by bisection, unrolled ---------------------------------
 *
 * The chain computes in f64 whatever X's dtype (an f32 u = 1 + d·(z - t)
 * raised to 1/d would lose 1/d ulps), as the op's reference does:
 *
 *   z = x - max(x);  lo = 0, hi = ln(len)
 *   STEPS times:  mid = (lo + hi) / 2,  heavy = Σ relu(1 + d·(z - mid))^(1/d) >= 1,
 *                 lo = heavy ? mid : lo,  hi = heavy ? hi : mid
 *   y = relu(1 + d·(z - lo))^(1/d)
 *
 * STEPS = 40 for f32 (ln len < 2^5, so the bracket ends under 2^-35 ≈
 * 3e-11, and so does each y's error, |dy/dt| <= 1: far below an f32 ulp)
 * and 60 for f64 (under 2^-55). α = 1 (the attribute) is Softmax; an
 * Alpha input is clamped to [1, 2] as the kernel does (NaN: 1), and its
 * rows of α = 1 take Softmax's row through a Where (their bisection runs
 * with d = 1 and is dropped). */

/* ReduceSum over the axis with one shared axes constant (the chain has
 * one per step). */
static int lower_mass(Along *l, int p, int axes) {
  if (l->lw.failed)
    return -1;
  int node = lw_node(&l->lw, OP_REDUCESUM, (int[]){p, axes}, 2, 1);
  ir_attr_int(l->lw.g, node, "keepdims", 1);
  return lw_finish(&l->lw, node);
}

static int lower_where(Along *l, int cond, int a, int b) {
  return lw_op(&l->lw, OP_WHERE, (int[]){cond, a, b}, 3);
}

/* relu(1 + d·(z - t))^(1/d) */
static int lower_entmax_mass(Along *l, int z, int t, int d, int inv, int one) {
  int u = lw_binary(&l->lw, OP_ADD, lw_binary(&l->lw, OP_MUL, d, lw_binary(&l->lw, OP_SUB, z, t)), one);
  return lw_binary(&l->lw, OP_POW, lw_unary(&l->lw, OP_RELU, u), inv);
}

/* y for z = x - max(x) and d = α - 1 in (0, 1] (a scalar or Alpha's shape) */
static int lower_entmax_bisect(Along *l, int z, int d, int steps) {
  Lowering *lw = &l->lw;
  int one = lw_scalar(lw, "one", 1), half = lw_scalar(lw, "half", 0.5);
  int inv = lw_binary(lw, OP_DIV, one, d), axes = lw_i64(lw, "axes", l->axis);
  int lo = lw_scalar(lw, "lo", 0), hi = lw_scalar(lw, "hi", log((double)l->len));
  for (int s = 0; s < steps && !lw->failed; s++) {
    int mid = lw_binary(lw, OP_MUL, lw_binary(lw, OP_ADD, lo, hi), half);
    int mass = lower_mass(l, lower_entmax_mass(l, z, mid, d, inv, one), axes);
    int heavy = lw_binary(lw, OP_GREATEROREQUAL, mass, one);
    int next_lo = lower_where(l, heavy, mid, lo);
    hi = lower_where(l, heavy, hi, mid);
    lo = next_lo;
  }
  return lower_entmax_mass(l, z, lo, d, inv, one);
}

static int lower_softmax(Along *l, int z) {
  if (l->lw.failed)
    return -1;
  int node = lw_node(&l->lw, OP_SOFTMAX, &z, 1, 1);
  ir_attr_int(l->lw.g, node, "axis", l->axis);
  return lw_finish(&l->lw, node);
}

/* Entmax(x [, alpha]) in f64; the caller casts back. */
static int lower_entmax(Along *l, const Node *n, int x, int steps) {
  Lowering *lw = &l->lw;
  int z = lw_binary(lw, OP_SUB, x, lower_reduce(l, OP_REDUCEMAX, x));
  if (n->nin < 2 || n->in[1] < 0) {
    double alpha = attr_float(n, "alpha", 1.5);
    if (alpha == 1)
      return lower_softmax(l, z);
    return lower_entmax_bisect(l, z, lw_scalar(lw, "d", alpha - 1), steps);
  }
  int a = lw_cast(lw, n->in[1], DT_F64), one = lw_scalar(lw, "one", 1), two = lw_scalar(lw, "two", 2);
  int sparse = lw_binary(lw, OP_GREATER, a, one); /* false for α <= 1 and NaN: softmax */
  int clamped = lower_where(l, sparse, lw_binary(lw, OP_MIN, a, two), two);
  int y = lower_entmax_bisect(l, z, lw_binary(lw, OP_SUB, clamped, one), steps);
  return lower_where(l, sparse, y, lower_softmax(l, z));
}

bool entmax_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  const Type *xt = &gval(g, n->in[0])->type;
  Along l = {.lw = lw_start(g, node, DT_F64, d), .rank = xt->rank};
  KILN_ASSERT(axis_norm(attr_int(n, "axis", -1), xt->rank, &l.axis));
  l.len = xt->dims[l.axis];
  if (!lw_need_opset(&l.lw, 13, "ReduceSum with axes as an input"))
    return false;
  int x = lw_cast(&l.lw, n->in[0], DT_F64);
  int y = lower_entmax(&l, n, x, xt->dt == DT_F64 ? 60 : 40);
  return lw_result(&l.lw, lw_cast(&l.lw, y, xt->dt), 0);
}
