/* fuse_normalize.c — the fuse_normalize pass, the first fusion: rewrites
 * that bring other spellings to the forms the later fusion passes match,
 * adding constants on the way:
 *
 *   Gemm(x, W constant, c) {alpha=1, beta=1, transA=0}  -> Linear(x, W', c)
 *     W' = W, or Wᵀ packed at compile time for transB=1; c a [N] bias
 *     (the out-projection PyTorch exports as a Gemm between Reshapes);
 *   Transpose that moves only dims of 1 (batch 1: [S,1,D] -> [1,S,D])
 *     -> Reshape, an alias: the bytes are already in order;
 *
 * and, for the attention Hugging Face's BART (and Marian, mBART, ...)
 * writes at rank 3 ([B·H, S, D], batch 1) around a rank-4 mask, moves of
 * leading dims of 1 that let fuse_attention see one rank throughout:
 *
 *   Reshape_drop(Transpose(x, p)) -> Transpose(Reshape_drop(x), p')
 *   Transpose(Reshape_add(y), p)  -> Reshape_add(Transpose(y, p'))
 *     (p keeps the leading dims of 1 in place; the copy is the same size)
 *   Transpose(Transpose(x, p1), p2) -> Transpose(x, p1[p2]): one copy
 *   Reshape_drop(Add(Reshape_add(s), m)) -> Add(s, Reshape_drop(m))
 *     (m's extra leading dims are 1: the mask reshaped, not the scores)
 *   Reshape(Mul(x, c)) -> Mul(Reshape(x), c), c a scalar constant (or Div
 *     by one): BART's scale of q, moved next to the attention that takes it
 *
 * (two sweeps, so that a move that makes another possible is made too)
 * where Reshape_add puts leading dims of 1 in front and Reshape_drop takes
 * them away; each node is reused in place, so the order stays sorted. */
#include <stdio.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "passes.h"
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

/* ---- leading dims of 1 ------------------------------------------------------- */

/* to is from without its first d > 0 dims, all 1. */
static bool drops_lead(const Type *from, const Type *to, int *d) {
  *d = from->rank - to->rank;
  if (*d <= 0)
    return false;
  for (int i = 0; i < from->rank; i++)
    if (i < *d ? from->dims[i] != 1 : from->dims[i] != to->dims[i - *d])
      return false;
  return true;
}

/* The reader count of v under uses (graph_count_uses) is 1 and it is no
 * graph output: a node may change it in place. */
static bool private_value(const Graph *g, int v) { return gval(g, v)->nuses == 1 && !gval(g, v)->is_output; }

/* perm's first d entries are 0 .. d-1; the rest, less d, into q. */
static bool keeps_lead(const Attr *perm, int rank, int d, int64_t *q) {
  if (!perm || perm->kind != ATTR_INTS || perm->n != rank)
    return false;
  for (int i = 0; i < rank; i++) {
    if (i < d ? perm->ints[i] != i : perm->ints[i] < d)
      return false;
    if (i >= d)
      q[i - d] = perm->ints[i] - d;
  }
  return true;
}

/* Make node n Reshape(x) to type t (an alias of x) or Transpose(x, perm). */
static void make_reshape(Graph *g, int ni, int x, const Type *t) {
  int shape = ir_const_i64(g, arena_printf(g->arena, "%s_shape", gval(g, g->nodes[ni].out[0])->name), t->dims,
                           t->rank);
  Node *n = &g->nodes[ni];
  int in[2] = {x, shape};
  n->op = OP_RESHAPE;
  n->nin = 2;
  n->in = arena_dup(g->arena, in, sizeof in);
  n->nattr = 0;
  n->attrs = NULL;
  Value *y = gval(g, n->out[0]);
  y->type = *t;
  y->alias_of = y->is_output ? -1 : x;
}

static void make_transpose(Graph *g, int ni, int x, const int64_t *perm, int rank) {
  Node *n = &g->nodes[ni];
  n->op = OP_TRANSPOSE;
  n->nin = 1;
  n->in = arena_dup(g->arena, &x, sizeof x);
  n->nattr = 0;
  n->attrs = NULL;
  ir_attr_ints(g, ni, "perm", perm, rank);
  Value *y = gval(g, g->nodes[ni].out[0]), *xv = gval(g, x);
  y->alias_of = -1;
  y->type.rank = rank;
  for (int i = 0; i < rank; i++)
    y->type.dims[i] = xv->type.dims[perm[i]];
}

static bool check_infer(Graph *g, Node *n) {
  Diag d = {0};
  Type want = gval(g, n->out[0])->type;
  return op_table[n->op].infer(g, n, &d) && type_equal(&gval(g, n->out[0])->type, &want);
}

/* Reshape_drop(Transpose(x, p)) -> Transpose(Reshape_drop(x), p'). */
static bool drop_before_transpose(Graph *g, Node *r, bool verbose) {
  Node *t = gval(g, r->in[0])->producer >= 0 ? &g->nodes[gval(g, r->in[0])->producer] : NULL;
  int d, x = t ? t->in[0] : -1;
  int64_t q[MAX_RANK];
  if (!t || t->op != OP_TRANSPOSE || !private_value(g, r->in[0]) || gval(g, x)->data ||
      !drops_lead(&gval(g, r->in[0])->type, &gval(g, r->out[0])->type, &d) ||
      !keeps_lead(attr_get(t, "perm"), gval(g, x)->type.rank, d, q))
    return false;
  Type xt = gval(g, x)->type, x2 = xt;
  x2.rank = xt.rank - d;
  memmove(x2.dims, xt.dims + d, sizeof(int64_t) * (size_t)x2.rank);
  int ti = (int)(t - g->nodes), ri = (int)(r - g->nodes), mid = t->out[0];
  make_reshape(g, ti, x, &x2);
  make_transpose(g, ri, mid, q, x2.rank);
  KILN_ASSERT(check_infer(g, &g->nodes[ti]) && check_infer(g, &g->nodes[ri]));
  say(verbose, "reshape dropping dims of 1 moved before its transpose", &g->nodes[ri]);
  return true;
}

/* Transpose(Reshape_add(y), p) -> Reshape_add(Transpose(y, p')). */
static bool add_after_transpose(Graph *g, Node *t, bool verbose) {
  Node *r = gval(g, t->in[0])->producer >= 0 ? &g->nodes[gval(g, t->in[0])->producer] : NULL;
  int d, y = r ? r->in[0] : -1;
  int64_t q[MAX_RANK];
  if (!r || r->op != OP_RESHAPE || !private_value(g, t->in[0]) || gval(g, y)->data ||
      !drops_lead(&gval(g, t->in[0])->type, &gval(g, y)->type, &d) ||
      !keeps_lead(attr_get(t, "perm"), gval(g, t->in[0])->type.rank, d, q))
    return false;
  int ri = (int)(r - g->nodes), ti = (int)(t - g->nodes), mid = r->out[0];
  Type out = gval(g, t->out[0])->type;
  make_transpose(g, ri, y, q, gval(g, y)->type.rank);
  make_reshape(g, ti, mid, &out);
  KILN_ASSERT(check_infer(g, &g->nodes[ri]) && check_infer(g, &g->nodes[ti]));
  say(verbose, "transpose moved before a reshape adding dims of 1", &g->nodes[ri]);
  return true;
}

/* Transpose(Transpose(x, p1), p2) -> Transpose(x, p1[p2]) when the inner
 * one's output is read only there. */
static bool compose_transposes(Graph *g, Node *t2, bool verbose) {
  Node *t1 = gval(g, t2->in[0])->producer >= 0 ? &g->nodes[gval(g, t2->in[0])->producer] : NULL;
  const Attr *p1 = t1 ? attr_get(t1, "perm") : NULL, *p2 = attr_get(t2, "perm");
  int r = gval(g, t2->in[0])->type.rank;
  if (!t1 || t1->op != OP_TRANSPOSE || !private_value(g, t2->in[0]) || !p1 || !p2 || p1->kind != ATTR_INTS ||
      p2->kind != ATTR_INTS || p1->n != r || p2->n != r)
    return false;
  int64_t comp[MAX_RANK];
  for (int i = 0; i < r; i++) {
    if (p2->ints[i] < 0 || p2->ints[i] >= r)
      return false;
    comp[i] = p1->ints[p2->ints[i]];
  }
  int x = t1->in[0], i2 = (int)(t2 - g->nodes);
  t1->dead = true;
  make_transpose(g, i2, x, comp, r);
  KILN_ASSERT(check_infer(g, &g->nodes[i2]));
  say(verbose, "two transposes -> one", &g->nodes[i2]);
  return true;
}

/* Reshape_drop(Add(Reshape_add(s), m)) -> Add(s, Reshape_drop(m)), the
 * Reshape_add node reused for m (which must come before it). */
static bool mask_add_at_rank(Graph *g, Node *r7, bool verbose) {
  int a = r7->in[0], d;
  Node *ad = gval(g, a)->producer >= 0 ? &g->nodes[gval(g, a)->producer] : NULL;
  if (!ad || ad->op != OP_ADD || !private_value(g, a) ||
      !drops_lead(&gval(g, a)->type, &gval(g, r7->out[0])->type, &d))
    return false;
  for (int k = 0; k < 2; k++) {
    int sv = ad->in[k], m = ad->in[1 - k], e;
    Node *r6 = gval(g, sv)->producer >= 0 ? &g->nodes[gval(g, sv)->producer] : NULL;
    if (!r6 || r6->op != OP_RESHAPE || !private_value(g, sv) || m == sv ||
        !type_equal(&gval(g, r6->in[0])->type, &gval(g, r7->out[0])->type) ||
        !type_equal(&gval(g, sv)->type, &gval(g, a)->type) || !drops_lead(&gval(g, sv)->type, &gval(g, r6->in[0])->type, &e))
      continue;
    const Type *mt = &gval(g, m)->type;
    int extra = mt->rank - gval(g, r7->out[0])->type.rank, mp = gval(g, m)->producer;
    for (int i = 0; i < extra; i++)
      if (mt->dims[i] != 1)
        return false;
    int r6i = (int)(r6 - g->nodes), adi = (int)(ad - g->nodes), r7i = (int)(r7 - g->nodes), s = r6->in[0];
    if (extra > 0 && mp >= r6i)
      return false;
    if (extra > 0) {
      Type m2 = *mt;
      m2.rank = mt->rank - extra;
      memmove(m2.dims, mt->dims + extra, sizeof(int64_t) * (size_t)m2.rank);
      make_reshape(g, r6i, m, &m2);
      g->nodes[adi].in[1 - k] = sv;
    } else {
      g->nodes[r6i].dead = true;
      g->nodes[adi].in[1 - k] = m;
    }
    ad = &g->nodes[adi];
    ad->in[k] = s;
    int y = g->nodes[r7i].out[0];
    ad->out[0] = y;
    gval(g, y)->producer = adi;
    gval(g, y)->alias_of = -1;
    gval(g, a)->producer = -1;
    g->nodes[r7i].dead = true;
    KILN_ASSERT(check_infer(g, ad));
    say(verbose, "mask add at the scores' rank (its reshapes of dims of 1 moved to the mask)", ad);
    return true;
  }
  return false;
}

/* Reshape(Mul(x, c) or Div(x, c)) -> the same op after the Reshape, c a
 * scalar constant and the shape a constant. */
static bool scale_after_reshape(Graph *g, Node *r, bool verbose) {
  Node *m = gval(g, r->in[0])->producer >= 0 ? &g->nodes[gval(g, r->in[0])->producer] : NULL;
  if (!m || (m->op != OP_MUL && m->op != OP_DIV) || !private_value(g, r->in[0]) || !node_has_in(r, 1) ||
      !gval(g, r->in[1])->data)
    return false;
  int xi = -1;
  for (int k = 0; k < 2 && xi < 0; k++)
    if ((k == 1 || m->op == OP_MUL) && gval(g, m->in[k])->data && type_numel(&gval(g, m->in[k])->type) == 1 &&
        gval(g, m->in[k])->type.rank == 0 && !gval(g, m->in[1 - k])->data &&
        type_equal(&gval(g, m->in[1 - k])->type, &gval(g, m->out[0])->type))
      xi = 1 - k;
  if (xi < 0)
    return false;
  int mi = (int)(m - g->nodes), ri = (int)(r - g->nodes), x = m->in[xi], mid = m->out[0], y = r->out[0];
  Type yt = gval(g, y)->type;
  Node mul = *m;
  make_reshape(g, mi, x, &yt);
  r = &g->nodes[ri];
  int in[2] = {mul.in[0], mul.in[1]};
  in[xi] = mid;
  r->op = mul.op;
  r->nin = 2;
  r->in = arena_dup(g->arena, in, sizeof in);
  r->nattr = 0;
  r->attrs = NULL;
  gval(g, y)->alias_of = -1;
  KILN_ASSERT(check_infer(g, &g->nodes[mi]) && check_infer(g, r));
  say(verbose, "scale by a constant moved after a reshape", r);
  return true;
}

bool pass_fuse_normalize(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  if (!fm_graph_typed(g))
    return true;
  bool verbose = o->verbose;
  graph_count_uses(g);
  for (int sweep = 0; sweep < 2; sweep++)
    for (int i = 0; i < g->nnodes; i++) {
      Node *n = &g->nodes[i];
      if (n->dead)
        continue;
      bool moved = false; /* the uses changed */
      if (n->op == OP_GEMM)
        gemm_to_linear(g, n, verbose);
      else if (n->op == OP_TRANSPOSE && !unit_transpose_to_reshape(g, n, verbose))
        moved = add_after_transpose(g, n, verbose) || compose_transposes(g, n, verbose);
      else if (n->op == OP_RESHAPE)
        moved = drop_before_transpose(g, n, verbose) || mask_add_at_rank(g, n, verbose) ||
                scale_after_reshape(g, n, verbose);
      if (moved)
        graph_count_uses(g);
    }
  graph_compact(g);
  return true;
}
