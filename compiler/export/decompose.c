/* decompose.c — the pass that lowers kiln's own ops to standard ONNX ops,
 * for `kiln export`.
 *
 * Fusion (and the Lua frontend) make ops ONNX does not have (Linear, Gelu,
 * ...) and ops newer than the graph's opset (LayerNormalization, opset 17,
 * fused out of an opset-14 export). An ONNX file may hold neither, so before
 * export each such node is replaced by a chain of standard ops valid at
 * g->opset that computes the same thing, in the order the unfused export
 * computed it (Linear: MatMul, then the bias Add, then the activation), so
 * the rounding matches kiln's _eval and the fusion passes recognise the chain
 * again when the file is read back.
 *
 * The replacement keeps the node's output value ids (its last new node
 * writes them), takes the node's place in the node array (so the array
 * stays topologically sorted and reads like the source), names its nodes
 * "NAME/Op" and keeps the node's origin. Lowered chains may themselves hold
 * ops that need lowering (an Attention row may emit LayerNormalization); the
 * sweep repeats until none is left.
 *
 * The lowerings themselves are ops.def's `lower` column (op_table[op].lower),
 * written in compiler/export/lower_*.c; this file only finds the nodes that
 * need one and splices the chains in. */
#include <string.h>

#include "../ir/ops.h"
#include "../passes/passes.h"

static bool needs_lowering(const Graph *g, const Node *n) {
  int since = op_table[n->op].since;
  return since == 0 || since > g->opset;
}

static bool no_onnx_form(Graph *g, const Node *n, Diag *d) {
  int since = op_table[n->op].since;
  if (since == 0)
    return diag_node(d, g, n, "export: op %s has no ONNX form; expected a kiln op with a "
                     "lowering (ops.def's lower column)", node_op_name(n));
  return diag_node(d, g, n, "export: op %s exists from opset %d and the graph imports opset %d; "
                   "expected ops of opset %d", node_op_name(n), since, g->opset, g->opset);
}

/* One pass over the nodes; *lowered counts the nodes replaced. */
static bool lower_sweep(Graph *g, int *lowered, Diag *d) {
  int n0 = g->nnodes;
  int *first = arena_alloc(g->arena, sizeof(int) * (size_t)(n0 + 1));
  int *end = arena_alloc(g->arena, sizeof(int) * (size_t)(n0 + 1));
  *lowered = 0;
  for (int i = 0; i < n0; i++) {
    first[i] = end[i] = -1;
    if (!needs_lowering(g, &g->nodes[i]))
      continue;
    LowerFn fn = op_table[g->nodes[i].op].lower;
    if (!fn)
      return no_onnx_form(g, &g->nodes[i], d);
    first[i] = g->nnodes;
    if (!fn(g, i, d))
      return false;
    end[i] = g->nnodes;
    g->nodes[i].dead = true;
    ++*lowered;
  }
  if (*lowered)
    graph_splice(g, n0, first, end);
  return true;
}

bool decompose_kiln_ops(Graph *g, Diag *d) {
  int total = 0;
  for (int round = 0; round < 8; round++) {
    int lowered;
    if (!lower_sweep(g, &lowered, d))
      return false;
    total += lowered;
    if (!lowered)
      return total == 0 || graph_verify(g, true, d);
  }
  for (int i = 0; i < g->nnodes; i++) /* a decomposition that keeps making its own op */
    KILN_ASSERT(!needs_lowering(g, &g->nodes[i]));
  return true;
}
