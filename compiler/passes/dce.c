/* dce.c — remove nodes none of whose outputs is used (graph outputs count
 * as uses; a node that changes a state where it lives, OPF_UPDATE, is its
 * own use: an encoder's stored keys are read by the next call, not by a
 * node of this one). One backward sweep suffices because nodes are in topological
 * order: a node's users all come after it. */
#include "../ir/ops.h"
#include "passes.h"

bool pass_dce(Graph *g, const PassOptions *o, Diag *d) {
  (void)o;
  (void)d;
  graph_count_uses(g);
  for (int i = g->nnodes - 1; i >= 0; i--) {
    Node *n = &g->nodes[i];
    bool used = op_table[n->op].flags & OPF_UPDATE;
    for (int j = 0; j < n->nout; j++)
      if (n->out[j] >= 0 && gval(g, n->out[j])->nuses > 0)
        used = true;
    if (used)
      continue;
    n->dead = true;
    for (int j = 0; j < n->nin; j++)
      if (n->in[j] >= 0)
        gval(g, n->in[j])->nuses--;
  }
  graph_compact(g);
  return true;
}
