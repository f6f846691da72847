/* attention_export.c — Attention back into standard ONNX ops, for `kiln
 * export` (a row of compiler/passes/decompose.c's table): the chain the
 * fuse_attention pass recognises again, in the order Attention's _eval rounds —
 *
 *   [Slice q_slice] [Transpose q_perm] Q, [Slice k_slice] [Transpose k_perm] Kᵀ
 *   -> MatMul -> Mul scale
 *   -> Add mask | Where(mask, mask_fill, s)
 *   -> [TopK(k) -> Slice k-1 -> Less -> Where(less, topk_fill, s)]
 *   -> Softmax(last axis) -> MatMul [Slice v_slice] [Transpose v_perm] V
 *   -> [Transpose y_perm]
 *
 * Valid from opset 9 (Where); top-k needs opset 10 (TopK's k and Slice's
 * bounds as inputs). New nodes are named NAME/Op and keep the node's
 * origin; the last one writes the Attention's output value. */
#include <string.h>

#include "../build.h"
#include "../ops.h"
#include "../passes.h"
#include "attention.h"

typedef struct Chain {
  Graph *g;
  const char *name, *origin;
  DType dt;
  Diag *d;
  bool ok;
} Chain;

/* A new node op(in) with attributes set by the caller before ch_done. */
static int ch_node(Chain *c, int op, const int *in, int nin, int nout) {
  int idx = ir_op(c->g, op, c->origin, in, nin, nout);
  c->g->nodes[idx].name = arena_printf(c->g->arena, "%s/%s", c->name, op_table[op].name);
  return idx;
}

static int ch_done(Chain *c, int idx) {
  if (!c->ok || !ir_finish(c->g, idx, c->d)) {
    c->ok = false;
    return -1;
  }
  return ir_out(c->g, idx, 0);
}

static int ch_op(Chain *c, int op, const int *in, int nin) {
  for (int i = 0; i < nin; i++)
    if (in[i] < 0)
      c->ok = false;
  return c->ok ? ch_done(c, ch_node(c, op, in, nin, 1)) : -1;
}

static int ch_scalar(Chain *c, const char *hint, double x) {
  return ir_const_scalar(c->g, arena_printf(c->g->arena, "%s/%s", c->name, hint), c->dt, x);
}

static int ch_i64(Chain *c, const char *hint, int64_t v) {
  return ir_const_i64(c->g, arena_printf(c->g->arena, "%s/%s", c->name, hint), &v, 1);
}

/* Transpose(x, perm a), or x when there is no perm. */
static int ch_layout(Chain *c, const Attr *a, int x) {
  if (!a || !c->ok)
    return x;
  int idx = ch_node(c, OP_TRANSPOSE, &x, 1, 1);
  ir_attr_ints(c->g, idx, "perm", a->ints, a->n);
  return ch_done(c, idx);
}

/* Slice(x, one axis's range a = [axis, start, end]), or x when there is
 * no range. */
static int ch_slice(Chain *c, const Attr *a, int x) {
  if (!a || !c->ok)
    return x;
  int in[4] = {x, ch_i64(c, "slice_start", a->ints[1]), ch_i64(c, "slice_end", a->ints[2]),
               ch_i64(c, "slice_axis", a->ints[0])};
  return ch_op(c, OP_SLICE, in, 4);
}

/* Scores below the row's k-th largest become fill. */
static int ch_topk(Chain *c, int s, int64_t k, double fill) {
  if (!c->ok)
    return -1;
  int in[2] = {s, ch_i64(c, "k", k)};
  int tk = ch_node(c, OP_TOPK, in, 2, 2);
  ir_attr_int(c->g, tk, "axis", -1);
  int vals = ch_done(c, tk);
  int sl[4] = {vals, ch_i64(c, "kth_start", k - 1), ch_i64(c, "kth_end", k), ch_i64(c, "kth_axis", -1)};
  int kth = ch_op(c, OP_SLICE, sl, 4);
  int below = ch_op(c, OP_LESS, (int[]){s, kth}, 2);
  return ch_op(c, OP_WHERE, (int[]){below, ch_scalar(c, "topk_fill", fill), s}, 3);
}

static int ch_softmax(Chain *c, int s) {
  if (!c->ok)
    return -1;
  int idx = ch_node(c, OP_SOFTMAX, &s, 1, 1);
  ir_attr_int(c->g, idx, "axis", c->g->opset < 13 ? gval(c->g, s)->type.rank - 1 : -1);
  return ch_done(c, idx);
}

bool attention_decompose(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  AttnSpec sp;
  AttnGeom ge;
  attn_read(g, n, &sp, &ge);
  int need = sp.topk ? 10 : 9;
  if (g->opset < need)
    return diag_node(d, g, n, "export: no ONNX form at opset %d; expected opset %d or later (%s)", g->opset,
                     need, sp.topk ? "TopK with k as an input" : "Where");
  Chain c = {.g = g, .name = n->name, .origin = n->origin, .dt = ge.dt, .d = d, .ok = true};
  int q = n->in[0], k = n->in[1], v = n->in[2], mask = node_has_in(n, 3) ? n->in[3] : -1, want = n->out[0];
  /* the attributes live in the arena; n itself moves as nodes are added */
  const Attr *qp = attr_get(n, "q_perm"), *kp = attr_get(n, "k_perm"), *vp = attr_get(n, "v_perm"),
             *yp = attr_get(n, "y_perm");
  const Attr *qs = attr_get(n, "q_slice"), *ks = attr_get(n, "k_slice"), *vs = attr_get(n, "v_slice");
  if ((qs || ks || vs) && g->opset < 10)
    return diag_node(d, g, n, "export: Q, K or V is read as a slice, with no ONNX form at opset %d; expected "
                     "opset 10 or later (Slice with its bounds as inputs)", g->opset);
  n = NULL;
  q = ch_slice(&c, qs, q);
  k = ch_slice(&c, ks, k);
  v = ch_slice(&c, vs, v);
  int s = ch_op(&c, OP_MATMUL, (int[]){ch_layout(&c, qp, q), ch_layout(&c, kp, k)}, 2);
  if (sp.scale != 1)
    s = ch_op(&c, OP_MUL, (int[]){s, ch_scalar(&c, "scale", sp.scale)}, 2);
  if (mask >= 0 && gval(g, mask)->type.dt == DT_BOOL)
    s = ch_op(&c, OP_WHERE, (int[]){mask, ch_scalar(&c, "mask_fill", sp.mask_fill), s}, 3);
  else if (mask >= 0)
    s = ch_op(&c, OP_ADD, (int[]){s, mask}, 2);
  if (sp.topk)
    s = ch_topk(&c, s, sp.topk, sp.topk_fill);
  int y = ch_op(&c, OP_MATMUL, (int[]){ch_softmax(&c, s), ch_layout(&c, vp, v)}, 2);
  y = ch_layout(&c, yp, y);
  if (!c.ok)
    return false;
  int p = gval(g, y)->producer;
  KILN_ASSERT(p >= 0 && type_equal(&gval(g, y)->type, &gval(g, want)->type));
  g->nodes[p].out[0] = want;
  gval(g, y)->producer = -1;
  gval(g, want)->producer = p;
  return true;
}
