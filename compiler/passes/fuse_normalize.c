/* fuse_normalize.c — the fuse_normalize pass, the first fusion: rewrites
 * that bring other spellings to the forms the later fusion passes match,
 * adding constants on the way:
 *
 *   Gemm(x, W constant, c) {alpha=1, beta=1, transA=0}  -> Linear(x, W', c)
 *     W' = W, or Wᵀ packed at compile time for transB=1; c a [N] bias
 *     (the out-projection PyTorch exports as a Gemm between Reshapes);
 *   Transpose that moves only dims of 1 (batch 1: [S,1,D] -> [1,S,D])
 *     -> Reshape, an alias: the bytes are already in order. */
#include <stdio.h>
#include <string.h>

#include "../build.h"
#include "../ops.h"
#include "../passes.h"
#include "fuse_match.h"

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

bool pass_fuse_normalize(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  if (!fm_graph_typed(g))
    return true;
  bool verbose = o->verbose;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    if (n->dead)
      continue;
    if (n->op == OP_GEMM)
      gemm_to_linear(g, n, verbose);
    else if (n->op == OP_TRANSPOSE)
      unit_transpose_to_reshape(g, n, verbose);
  }
  return true;
}
