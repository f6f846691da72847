/* simplify.c — remove what costs nothing to remove: Identity,
 * inference-mode Dropout and a Cast to the dtype its input already has
 * (Hugging Face's T5 and Llama write `.to(torch.float32)` of an f32) vanish
 * (their users read the input directly), and the ops flagged OPF_VIEW
 * (Reshape, Squeeze, Unsqueeze, Flatten) become aliases: the output shares
 * the input's storage, so no copy is emitted. Pow by a constant exponent
 * is spelled the cheaper way where the result is the same bits:
 * Pow(x, 1) is x, and an f32 Pow(x, 2) is Mul(x, x) (see square_pow).
 * A Pad whose pads are all 0 (ONNX Attention's mask padded to keys it
 * already covers, compiler/frontend/onnx_attention.c) is x. */
#include <string.h>

#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

/* "y = op(x)" where y should become x. A graph output keeps its name: when
 * x comes from a node whose only user is this one, that node writes y
 * directly; otherwise the node stays (it will be a copy). */
static void forward_value(Graph *g, Node *n, int x, int y) {
  Value *vx = gval(g, x), *vy = gval(g, y);
  if (!vy->is_output) {
    graph_replace_uses(g, y, x);
    n->dead = true;
    return;
  }
  if (vx->producer < 0 || vx->is_output || vx->is_input || vx->nuses != 1)
    return;
  Node *p = &g->nodes[vx->producer];
  for (int j = 0; j < p->nout; j++)
    if (p->out[j] == x)
      p->out[j] = y;
  vy->producer = vx->producer;
  vx->producer = -1;
  n->dead = true;
}

/* Pow(x, c) whose output is x's type, c a one-element constant: Pow(x, 1)
 * forwards x (pow(x, 1) is x for every x, -0, ±inf and NaN included); an
 * f32 Pow(x, 2) becomes Mul(x, x): x·x is exact in the double Pow's _eval
 * computes in, so both round the same product once to f32, where a
 * generated powf(x, 2) may be 1 ulp off. Pow(x, 0.5) stays: Sqrt differs
 * at -0 (sqrt gives -0, pow +0) and -inf (NaN, pow +inf). Returns true
 * when n was forwarded (the uses changed). */
static bool simplify_pow(Graph *g, Node *n) {
  const Value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
  double c;
  if (x->type.rank < 0 || !type_equal(&x->type, &y->type) || !fm_scalar_const(g, n->in[1], &c))
    return false;
  if (c == 1) {
    forward_value(g, n, n->in[0], n->out[0]);
    return true;
  }
  if (c == 2 && x->type.dt == DT_F32) {
    n->op = OP_MUL;
    n->in[1] = n->in[0];
  }
  return false;
}

/* Pad(x, pads) with constant pads all 0 (opset 11 on: pads an input). */
static bool pads_nothing(const Graph *g, const Node *n) {
  const Value *p = n->opset >= 11 ? node_in(g, n, 1) : NULL;
  if (!p || !p->data || n->nin > 3 || !dt_is_int(p->type.dt))
    return false;
  for (int64_t i = 0, k = type_numel(&p->type); i < k; i++)
    if (el_get_i(p->type.dt, p->data, i))
      return false;
  return true;
}

bool pass_simplify(Graph *g, const PassOptions *o, Diag *d) {
  (void)o;
  graph_count_uses(g);
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    if (n->dead)
      continue;
    switch (n->op) {
    case OP_DROPOUT:
      /* the identity: dropout_infer refused training mode (but with ratio
       * 0, which drops nothing); the mask, if any, is all true and infer
       * made it a constant */
      /* fallthrough */
    case OP_IDENTITY:
      forward_value(g, n, n->in[0], n->out[0]);
      graph_count_uses(g);
      break;
    case OP_CAST: /* to the dtype x already has: a copy */
      if (node_in(g, n, 0)->type.rank >= 0 && node_out(g, n, 0)->type.rank >= 0 &&
          node_in(g, n, 0)->type.dt == node_out(g, n, 0)->type.dt) {
        forward_value(g, n, n->in[0], n->out[0]);
        graph_count_uses(g);
      }
      break;
    case OP_POW:
      if (simplify_pow(g, n))
        graph_count_uses(g);
      break;
    case OP_PAD:
      if (pads_nothing(g, n)) {
        forward_value(g, n, n->in[0], n->out[0]);
        graph_count_uses(g);
      }
      break;
    default:
      if ((op_table[n->op].flags & OPF_VIEW) && !node_out(g, n, 0)->is_output)
        node_out(g, n, 0)->alias_of = n->in[0];
      break;
    }
  }
  graph_compact(g);
  return true;
}
