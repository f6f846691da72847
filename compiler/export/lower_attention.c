/* lower_attention.c — Attention back into standard ONNX ops, for `kiln
 * export` (ops.def's lower column; compiler/ops/attention.c): the chain the
 * fuse_attention pass recognises again, in the order Attention's _eval rounds —
 *
 *   [Slice q_slice] [Transpose q_perm] Q,
 *   [Slice k_slice] [repeat the shared heads] [Transpose k_perm] Kᵀ
 *   -> MatMul -> Mul scale -> [Div softcap -> Tanh -> Mul softcap, softcap_first]
 *   -> Add mask | Where(mask, mask_fill, s) -> [Max(s, score_min)]
 *   -> [TopK(k) -> Slice k-1 -> Less -> Where(less, topk_fill, s)]
 *   -> [Div softcap -> Tanh -> Mul softcap, after the mask]
 *   -> Softmax(last axis) -> MatMul [Slice v_slice] [repeat] [Transpose v_perm] V
 *   -> [Transpose y_perm]
 *
 * The repeat (grouped heads: K and V with fewer heads than Q) is Hugging
 * Face's repeat_kv, Reshape -> Expand -> Reshape: the copy kiln's own
 * kernel never makes. Valid from opset 9 (Where); top-k needs opset 10
 * (TopK's k and Slice's bounds as inputs). Built with build.h's Lowering: new nodes are named
 * NAME/Op and keep the node's origin; the last one writes the Attention's
 * output value. */
#include <math.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "../ops/attention.h"

/* Transpose(x, perm a), or x when there is no perm. */
static int ch_layout(Lowering *c, const Attr *a, int x) {
  if (!a || c->failed)
    return x;
  int idx = lw_node(c, OP_TRANSPOSE, &x, 1, 1);
  ir_attr_ints(c->g, idx, "perm", a->ints, a->n);
  return lw_finish(c, idx);
}

/* Slice(x, one axis's range a = [axis, start, end]), or x when there is
 * no range. */
static int ch_slice(Lowering *c, const Attr *a, int x) {
  if (!a || c->failed)
    return x;
  int in[4] = {x, lw_i64(c, "slice_start", a->ints[1]), lw_i64(c, "slice_end", a->ints[2]),
               lw_i64(c, "slice_axis", a->ints[0])};
  return lw_op(c, OP_SLICE, in, 4);
}

/* Grouped heads: x with each index of physical axis ax repeated g times
 * in place (index i of the result reads x's i / g), as Hugging Face's
 * repeat_kv exports it: Reshape (a 1 after ax) -> Expand (g) -> Reshape. */
static int ch_repeat(Lowering *c, int x, int ax, int64_t g) {
  if (x < 0 || c->failed)
    return -1;
  Type t = gval(c->g, x)->type;
  int64_t u[MAX_RANK + 1];
  for (int i = 0, j = 0; i < t.rank; i++) {
    u[j++] = t.dims[i];
    if (i == ax)
      u[j++] = 1;
  }
  int un = lw_reshape(c, x, u, t.rank + 1);
  u[ax + 1] = g;
  int ex = lw_binary(c, OP_EXPAND, un, ir_const_i64(c->g, lw_name(c, "repeat"), u, t.rank + 1));
  t.dims[ax] *= g;
  return lw_reshape(c, ex, t.dims, t.rank);
}

/* K or V (physical, before its perm a) repeated along each leading axis
 * whose heads Q's share in groups (div), so that MatMul reads one head per
 * query head; a dim of 1 is left to MatMul's broadcast. */
static int ch_groups(Lowering *c, const AttnGeom *ge, const Attr *a, const int64_t *div, int x) {
  for (int j = 0; j < ge->nlead && x >= 0; j++)
    if (div[j] > 1 && div[j] < ge->lead[j])
      x = ch_repeat(c, x, a ? (int)a->ints[j] : j, div[j]);
  return x;
}

/* Scores below the row's k-th largest become fill. */
static int ch_topk(Lowering *c, int s, int64_t k, double fill) {
  if (c->failed)
    return -1;
  int in[2] = {s, lw_i64(c, "k", k)};
  int tk = lw_node(c, OP_TOPK, in, 2, 2);
  ir_attr_int(c->g, tk, "axis", -1);
  int vals = lw_finish(c, tk);
  int sl[4] = {vals, lw_i64(c, "kth_start", k - 1), lw_i64(c, "kth_end", k), lw_i64(c, "kth_axis", -1)};
  int kth = lw_op(c, OP_SLICE, sl, 4);
  int below = lw_op(c, OP_LESS, (int[]){s, kth}, 2);
  return lw_op(c, OP_WHERE, (int[]){below, lw_scalar(c, "topk_fill", fill), s}, 3);
}

/* softcap · tanh(s / softcap) (Gemma 2, ONNX's Attention, ORT's GQA). */
static int ch_softcap(Lowering *c, int s, double softcap) {
  int cap = lw_scalar(c, "softcap", softcap);
  return lw_op(c, OP_MUL, (int[]){lw_unary(c, OP_TANH, lw_op(c, OP_DIV, (int[]){s, cap}, 2)), cap}, 2);
}

static int ch_softmax(Lowering *c, int s) {
  if (c->failed)
    return -1;
  int idx = lw_node(c, OP_SOFTMAX, &s, 1, 1);
  ir_attr_int(c->g, idx, "axis", c->g->opset < 13 ? gval(c->g, s)->type.rank - 1 : -1);
  return lw_finish(c, idx);
}

bool attention_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  AttnSpec sp;
  AttnGeom ge;
  attn_read(g, n, &sp, &ge);
  Lowering c = lw_start(g, node, ge.dt, d);
  if (!lw_need_opset(&c, sp.topk ? 10 : 9, sp.topk ? "TopK with k as an input" : "Where"))
    return false;
  int q = n->in[0], k = n->in[1], v = n->in[2], mask = node_has_in(n, 3) ? n->in[3] : -1;
  /* the attributes live in the arena; n itself moves as nodes are added */
  const Attr *qp = attr_get(n, "q_perm"), *kp = attr_get(n, "k_perm"), *vp = attr_get(n, "v_perm"),
             *yp = attr_get(n, "y_perm");
  const Attr *qs = attr_get(n, "q_slice"), *ks = attr_get(n, "k_slice"), *vs = attr_get(n, "v_slice");
  if ((qs || ks || vs) && g->opset < 10)
    return diag_node(d, g, n, "export: Q, K or V is read as a slice, with no ONNX form at opset %d; expected "
                     "opset 10 or later (Slice with its bounds as inputs)", g->opset);
  n = NULL;
  q = ch_slice(&c, qs, q);
  k = ch_groups(&c, &ge, kp, ge.kdiv, ch_slice(&c, ks, k));
  v = ch_groups(&c, &ge, vp, ge.vdiv, ch_slice(&c, vs, v));
  int s = lw_op(&c, OP_MATMUL, (int[]){ch_layout(&c, qp, q), ch_layout(&c, kp, k)}, 2);
  if (sp.scale != 1)
    s = lw_op(&c, OP_MUL, (int[]){s, lw_scalar(&c, "scale", sp.scale)}, 2);
  if (sp.softcap > 0 && sp.softcap_first)
    s = ch_softcap(&c, s, sp.softcap);
  if (mask >= 0 && gval(g, mask)->type.dt == DT_BOOL)
    s = lw_op(&c, OP_WHERE, (int[]){mask, lw_scalar(&c, "mask_fill", sp.mask_fill), s}, 3);
  else if (mask >= 0)
    s = lw_op(&c, OP_ADD, (int[]){s, mask}, 2);
  if (!isinf(sp.score_min)) /* Llama's clamp of the masked scores */
    s = lw_op(&c, OP_MAX, (int[]){s, lw_scalar(&c, "score_min", sp.score_min)}, 2);
  if (sp.topk)
    s = ch_topk(&c, s, sp.topk, sp.topk_fill);
  if (sp.softcap > 0 && !sp.softcap_first)
    s = ch_softcap(&c, s, sp.softcap);
  int y = lw_op(&c, OP_MATMUL, (int[]){ch_softmax(&c, s), ch_layout(&c, vp, v)}, 2);
  return lw_result(&c, ch_layout(&c, yp, y), 0);
}
