/* simplify.c — remove what costs nothing to remove: Identity,
 * inference-mode Dropout and a Cast to the dtype its input already has
 * (Hugging Face's T5 and Llama write `.to(torch.float32)` of an f32) vanish
 * (their users read the input directly), and the ops flagged OPF_VIEW
 * (Reshape, Squeeze, Unsqueeze, Flatten) become aliases: the output shares
 * the input's storage, so no copy is emitted. */
#include <string.h>

#include "../ops.h"
#include "../passes.h"

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
    default:
      if ((op_table[n->op].flags & OPF_VIEW) && !node_out(g, n, 0)->is_output)
        node_out(g, n, 0)->alias_of = n->in[0];
      break;
    }
  }
  graph_compact(g);
  return true;
}
