/* fold.c — constant folding through each op's _eval (fold_node, ir/fold_node.c,
 * beside the op table, since graph building folds too). A node whose present
 * inputs are all constants is evaluated at compile time (unless its result
 * would exceed the size cap, so folding never blows a small model up into a
 * huge weight table); a node whose outputs are all constants is dropped.
 * Ops flagged OPF_NOFOLD (ops.h) are never evaluated here: their result
 * would be a larger copy of weights kept smaller on purpose. */
#include "../ir/ops.h"
#include "passes.h"

bool pass_fold(Graph *g, const PassOptions *o, Diag *d) {
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    bool folded;
    if (n->dead)
      continue;
    if (!fold_node(g, n, o->fold_limit, &folded, d))
      return false;
    if (folded)
      n->dead = true;
  }
  graph_compact(g);
  return true;
}
