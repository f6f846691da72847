/* lower_permuted_matmul.c — kiln export's lowering of PermutedMatMul
 * (compiler/ops/permuted_matmul.c; ops.def's lower column): the Transposes
 * and the MatMul fuse_transpose.c took, back as standard ops. */
#include "../ir/build.h"
#include "../ir/ops.h"

/* Transpose(x) by the node's perm attribute `perm`, or x without one. */
static int transpose_by(Lowering *l, int x, const char *perm) {
  const Attr *a = attr_get(&l->g->nodes[l->node], perm);
  if (!a || x < 0 || l->failed)
    return x;
  int idx = lw_node(l, OP_TRANSPOSE, &x, 1, 1); /* g->nodes may move: a lives in the arena */
  ir_attr_ints(l->g, idx, "perm", a->ints, a->n);
  return lw_finish(l, idx);
}

/* Lower node `node`: Transpose A and B by
 * their perms, MatMul, Transpose the product by perm_y — the ops the
 * fusion took — the last writing the node's output. */
bool permuted_matmul_lower(Graph *g, int node, Diag *d) {
  Lowering l = lw_start(g, node, gval(g, g->nodes[node].out[0])->type.dt, d);
  int a = transpose_by(&l, g->nodes[node].in[0], "perm_a");
  int b = transpose_by(&l, g->nodes[node].in[1], "perm_b");
  return lw_result(&l, transpose_by(&l, lw_binary(&l, OP_MATMUL, a, b), "perm_y"), 0);
}
