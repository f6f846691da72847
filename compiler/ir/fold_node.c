/* fold_node.c — a node evaluated at compile time through its op's _eval
 * (ops.h): the constant folding of passes/fold.c and infer.c, and of each
 * node build.c adds. It sits with the op table so that graph building
 * needs no pass. */
#include "naming.h"
#include "ops.h"

/* An int8 weight's DequantizeLinear (an i8 constant [K,N] of 4 KiB or
 * more, read by one MatMul as its B) stays a node: fuse turns
 * DequantizeLinear -> MatMul into the int8 Linear,
 * which reads the int8 weight itself (a quarter of the f32 copy folding
 * would make). When fuse does not run (--passes), it runs in the C. */
static bool int8_weight_kept(const Graph *g, const Node *n) {
  const Value *x = n->op == OP_DEQUANTIZELINEAR ? &g->vals[n->in[0]] : NULL;
  if (!x || !x->data || x->type.dt != DT_I8 || x->type.rank != 2 || type_bytes(&x->type) < 4096)
    return false;
  int readers = 0; /* only a MatMul's B: a table DequantizeLinear -> Gather folds */
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (!g->nodes[i].dead && g->nodes[i].in[j] == n->out[0]) {
        if (g->nodes[i].op != OP_MATMUL || j != 1)
          return false;
        readers++;
      }
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == n->out[0])
      return false;
  return readers == 1;
}

bool fold_node(Graph *g, Node *n, size_t limit, bool *folded, Diag *d) {
  *folded = false;
  if (int8_weight_kept(g, n) || (op_table[n->op].flags & OPF_NOFOLD))
    return true; /* OPF_NOFOLD: the op says its result is no constant worth storing */
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
  name_folded_outputs(g, (int)(n - g->nodes)); /* "enc.q.weight_t", not "Transpose_22" */
  *folded = true;
  return true;
}
