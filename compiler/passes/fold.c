/* fold.c — constant folding through each op's _eval. A node whose present
 * inputs are all constants is evaluated at compile time (unless its result
 * would exceed the size cap, so folding never blows a small model up into a
 * huge weight table); a node whose outputs are all constants is dropped. */
#include <string.h>

#include "../ops.h"
#include "../passes.h"

bool fold_node(Graph *g, Node *n, size_t limit, bool *folded, Diag *d) {
  *folded = false;
  size_t bytes = 0;
  bool all_const = true;
  for (int j = 0; j < n->nout; j++) {
    Value *v = node_out(g, n, j);
    if (v && !v->data)
      all_const = false;
    if (v)
      bytes += type_bytes(&v->type);
  }
  if (all_const)
    return *folded = true; /* _infer already produced them (Shape, Constant) */
  for (int i = 0; i < n->nin; i++) {
    Value *v = node_in(g, n, i);
    if (v && !v->data)
      return true;
  }
  if (bytes > limit)
    return true;
  Tensor in[n->nin > 0 ? n->nin : 1], out[n->nout];
  for (int i = 0; i < n->nin; i++) {
    Value *v = node_in(g, n, i);
    in[i] = v ? (Tensor){v->type, v->data} : (Tensor){{0}, NULL};
  }
  for (int j = 0; j < n->nout; j++) {
    Value *v = node_out(g, n, j);
    out[j].type = v->type;
    out[j].data = arena_alloc(g->arena, type_bytes(&v->type) + 1);
  }
  if (!op_table[n->op].eval(n, in, out, d))
    return false;
  for (int j = 0; j < n->nout; j++)
    node_out(g, n, j)->data = out[j].data;
  *folded = true;
  return true;
}

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
