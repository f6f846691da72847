/* fuse_residual.c — the residual connections of a transformer block, for the
 * fuse pass (fuse.c):
 *
 *   normalise (before matching, fuse_normalize):
 *     Gemm(x, W constant, c) {alpha=1, beta=1, transA=0}  -> Linear(x, W', c)
 *       W' = W, or Wᵀ packed at compile time for transB=1; c a [N] bias
 *       (the out-projection PyTorch exports as a Gemm between Reshapes);
 *     Transpose that moves only dims of 1 (batch 1: [S,1,D] -> [1,S,D])
 *       -> Reshape, an alias: the bytes are already in order;
 *   AddLayerNorm (fuse_add_layernorm, from the LayerNormalization):
 *     LayerNormalization(a + b)         -> AddLayerNorm(a, b, ..) -> Y
 *     the same with a + b read later    -> AddLayerNorm(a, b, ..) -> Y, S
 *       (pre-norm: the residual stream is the second output);
 *   Linear residual (fuse_linear_residual, from the Add):
 *     Linear(x, W, b) [-> Reshape ...] + r  -> Linear(x, W, b, r)
 *       the residual added in the GEMM's epilogue, in registers.
 *
 * Which wins where both apply (post-norm: LN(r + Linear(..))): the
 * AddLayerNorm sweep runs first. Both leave one write and one read of the
 * sum; AddLayerNorm's row pass computes the statistics with lane-wise
 * partial sums, and measured faster than the GEMM epilogue feeding the
 * separate LayerNormalization kernel (see the report in bench/README.md).
 * The residual epilogue takes the adds no LayerNorm reads.
 *
 * The same rules as fuse.c: intermediates read by the pattern alone, no
 * broadcast changes a shape, the fused node keeps the output value ids. */
#include <stdio.h>
#include <string.h>

#include "../build.h"
#include "../ops.h"
#include "fuse_match.h"
#include "fuse_sweeps.h"

/* ---- normalisation ----------------------------------------------------------- */

static void say(bool verbose, const char *what, const Node *n) {
  if (verbose)
    fprintf(stderr, "fuse: %s <- %s\n", what, n->origin ? n->origin : n->name);
}

/* W[K,N] from Gemm's constant B: B itself, or Bᵀ as a new constant. */
static int linear_weight(Graph *g, int b, bool trans) {
  if (!trans)
    return b;
  DType dt = gval(g, b)->type.dt;
  int64_t n = gval(g, b)->type.dims[0], k = gval(g, b)->type.dims[1], dims[2] = {k, n};
  int w = ir_const(g, arena_printf(g->arena, "%s_t", gval(g, b)->name), dt, 2, dims, NULL);
  const void *bd = gval(g, b)->data; /* after ir_const: the value array may have moved */
  void *wd = gval(g, w)->data;
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < n; j++)
      el_set_f(dt, wd, i * n + j, el_get_f(dt, bd, j * k + i));
  return w;
}

/* Gemm's C as Linear's bias [N]: absent, [N], or [1,N] viewed as [N]. */
static bool linear_bias(Graph *g, const Node *n, int64_t cols, int *bias) {
  *bias = -1;
  if (!node_has_in(n, 2))
    return true;
  const Value *c = node_in(g, n, 2);
  if (c->type.rank == 1 && c->type.dims[0] == cols)
    *bias = n->in[2];
  else if (c->data && c->type.rank == 2 && c->type.dims[0] == 1 && c->type.dims[1] == cols)
    *bias = ir_const(g, c->name, c->type.dt, 1, &cols, c->data);
  return *bias >= 0;
}

static bool gemm_to_linear(Graph *g, Node *n, bool verbose) {
  const Value *a = node_in(g, n, 0), *b = node_in(g, n, 1);
  DType dt = a->type.dt;
  if ((dt != DT_F32 && dt != DT_F64) || !b->data || attr_int(n, "transA", 0) ||
      attr_float(n, "alpha", 1.0) != 1.0 || (node_has_in(n, 2) && attr_float(n, "beta", 1.0) != 1.0))
    return false;
  bool trans = attr_int(n, "transB", 0) != 0;
  int bias;
  if (!linear_bias(g, n, b->type.dims[trans ? 0 : 1], &bias))
    return false;
  int in[3] = {n->in[0], linear_weight(g, n->in[1], trans), bias};
  n->op = OP_LINEAR;
  n->nin = bias >= 0 ? 3 : 2;
  n->in = arena_dup(g->arena, in, sizeof in);
  n->nattr = 0;
  n->attrs = NULL;
  fm_set_str(g, n, "act", "none");
  Diag d = {0};
  KILN_ASSERT(op_table[OP_LINEAR].infer(g, n, &d));
  say(verbose, "gemm -> linear", n);
  return true;
}

/* perm moves only dims of 1: the non-1 dims keep their order. */
static bool moves_only_ones(const Type *x, const Attr *perm) {
  if (!perm || perm->kind != ATTR_INTS || perm->n != x->rank)
    return false;
  int last = -1;
  for (int i = 0; i < perm->n; i++) {
    int64_t p = perm->ints[i];
    if (p < 0 || p >= x->rank)
      return false;
    if (x->dims[p] == 1)
      continue;
    if (p < last)
      return false;
    last = (int)p;
  }
  return true;
}

static bool unit_transpose_to_reshape(Graph *g, Node *n, bool verbose) {
  const Value *x = node_in(g, n, 0);
  Value *y = node_out(g, n, 0);
  if (x->data || !moves_only_ones(&x->type, attr_get(n, "perm")))
    return false;
  Type yt = y->type; /* ir_const_i64 may move the value array */
  int shape = ir_const_i64(g, arena_printf(g->arena, "%s_shape", y->name), yt.dims, yt.rank);
  y = node_out(g, n, 0);
  int in[2] = {n->in[0], shape};
  n->op = OP_RESHAPE;
  n->nin = 2;
  n->in = arena_dup(g->arena, in, sizeof in);
  n->nattr = 0;
  n->attrs = NULL;
  if (!y->is_output) /* as simplify makes every Reshape */
    y->alias_of = in[0];
  say(verbose, "transpose -> reshape (moves only dims of 1)", n);
  return true;
}

void fuse_normalize(Graph *g, bool verbose) {
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    if (n->dead)
      continue;
    if (n->op == OP_GEMM)
      gemm_to_linear(g, n, verbose);
    else if (n->op == OP_TRANSPOSE)
      unit_transpose_to_reshape(g, n, verbose);
  }
}

/* ---- AddLayerNorm --------------------------------------------------------------- */

/* v is ready before node index `at`: a constant, a graph input, or made
 * by an earlier node. */
static bool ready_before(const Graph *g, int v, int at) {
  return v < 0 || g->vals[v].producer < at;
}

/* The LayerNormalization's outputs past Y (Mean, InvStdDev) are unused. */
static bool only_y_used(const Fuser *f, const Node *ln) {
  for (int j = 1; j < ln->nout; j++)
    if (fm_nreaders(f, ln->out[j]) || f->g->vals[ln->out[j]].is_output)
      return false;
  return true;
}

/* Scale or bias: one element per normalised element, read flat. */
static bool flat_param(const Graph *g, int v, DType dt, int64_t len) {
  return v < 0 || (g->vals[v].type.dt == dt && type_numel(&g->vals[v].type) == len);
}

bool fuse_add_layernorm(Fuser *f, Node *ln) {
  Graph *g = f->g;
  int s = ln->in[0];
  Node *add = fm_def(f, s, OP_ADD);
  if (!add || !only_y_used(f, ln))
    return false;
  const Type *t = &g->vals[s].type;
  int a, at = (int)(add - g->nodes), scale = ln->in[1], bias = node_has_in(ln, 2) ? ln->in[2] : -1;
  DType stash = attr_int(ln, "stash_type", 1) == DT_F64 ? DT_F64 : DT_F32;
  if (!fm_float_value(g, s) || stash != t->dt || !axis_norm(attr_int(ln, "axis", -1), t->rank, &a))
    return false;
  int64_t len = 1;
  for (int i = a; i < t->rank; i++)
    len *= t->dims[i];
  if (!type_equal(&g->vals[add->in[0]].type, t) || !type_equal(&g->vals[add->in[1]].type, t) ||
      !flat_param(g, scale, t->dt, len) || !flat_param(g, bias, t->dt, len) ||
      !ready_before(g, scale, at) || !ready_before(g, bias, at))
    return false;
  /* the fused node takes the Add's slot: the sum's other readers, if any,
   * come after it, and so does every reader of Y */
  bool keep_sum = !fm_sole(f, s);
  int y = ln->out[0], in[4] = {add->in[0], add->in[1], scale, bias}, out[2] = {y, s};
  double eps = attr_float(ln, "epsilon", 1e-5);
  int64_t axis = attr_int(ln, "axis", -1);
  add->origin = arena_printf(g->arena, "%s + %s", add->origin ? add->origin : add->name,
                             ln->origin ? ln->origin : ln->name);
  ln->dead = true;
  add->op = OP_ADDLAYERNORM;
  add->nin = bias >= 0 ? 4 : 3;
  add->in = arena_dup(g->arena, in, sizeof in);
  add->nout = keep_sum ? 2 : 1;
  add->out = arena_dup(g->arena, out, sizeof out);
  add->nattr = 0;
  add->attrs = NULL;
  node_add_attr(g, add, "axis", ATTR_INT)->i = axis;
  node_add_attr(g, add, "epsilon", ATTR_FLOAT)->f = eps;
  g->vals[y].producer = at;
  if (!keep_sum)
    g->vals[s].producer = -1;
  fm_fuse_done(f, add, keep_sum ? "add_layernorm (sum kept)" : "add_layernorm");
  return true;
}

/* ---- Linear residual ------------------------------------------------------------- */

static bool is_view(int op) {
  return op == OP_RESHAPE || op == OP_SQUEEZE || op == OP_UNSQUEEZE || op == OP_FLATTEN;
}

/* The Linear whose output reaches v through views alone (Reshape and
 * friends, each read once), taken into m with the views; NULL if none. */
static Node *linear_through_views(Fuser *f, Match *m, int v) {
  Graph *g = f->g;
  for (int depth = 0; depth < 4 && fm_sole(f, v); depth++) {
    Node *p = fm_def(f, v, -1);
    if (p->nout != 1)
      return NULL;
    fm_take(m, g, p);
    if (p->op == OP_LINEAR)
      return node_has_in(p, 3) ? NULL : p;
    if (!is_view(p->op))
      return NULL;
    v = p->in[0];
  }
  return NULL;
}

bool fuse_linear_residual(Fuser *f, Node *add) {
  Graph *g = f->g;
  const Type *yt = &g->vals[add->out[0]].type;
  for (int side = 0; side < 2; side++) {
    int v = add->in[side], r = add->in[1 - side];
    Match m = {0};
    Node *lin = linear_through_views(f, &m, v);
    if (!lin || !fm_float_value(g, r) || !type_equal(&g->vals[v].type, yt) ||
        !type_equal(&g->vals[r].type, yt))
      continue;
    fm_take(&m, g, add);
    const char *act = attr_str(lin, "act", "none");
    /* an int8 W keeps its W_scale (slot 4) */
    int in[5] = {lin->in[0], lin->in[1], node_has_in(lin, 2) ? lin->in[2] : -1, r,
                 node_has_in(lin, 4) ? lin->in[4] : -1};
    Node *n = fm_fuse_into(f, &m, add, OP_LINEAR, in, node_has_in(lin, 4) ? 5 : 4);
    fm_set_str(g, n, "act", act);
    fm_fuse_done(f, n, "linear+residual");
    return true;
  }
  return false;
}
