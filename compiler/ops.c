/* ops.c — the op table, expanded from ops.def. */
#include "ops.h"

#include <string.h>

const OpInfo op_table[OP_COUNT_] = {
#define OP(id, name, fn, a, b, c, d, k, since) \
  [OP_##id] = {name, fn##_infer, fn##_eval, fn##_emit, a, b, c, d, k, since},
#include "ops.def"
#undef OP
};

int op_lookup(const char *onnx_name) {
  for (int i = 0; i < OP_COUNT_; i++)
    if (strcmp(op_table[i].name, onnx_name) == 0)
      return i;
  return -1;
}

/* Ops whose kernels handle f16/bf16 (see op_check_half). */
static bool half_capable(OpId op) {
  switch (op) {
  case OP_POW: case OP_BITSHIFT: case OP_CLIP: /* these put the dtype or its literals in C */
    return false;
  case OP_WHERE: case OP_MAX: case OP_MIN: case OP_SUM: case OP_MEAN: case OP_CAST:
  case OP_CASTLIKE: case OP_IDENTITY: case OP_DROPOUT: case OP_TRANSPOSE: case OP_RESHAPE:
  case OP_FLATTEN: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_CONCAT: case OP_SPLIT:
  case OP_SLICE: case OP_PAD: case OP_EXPAND: case OP_TILE: case OP_GATHER:
  case OP_GATHERELEMENTS: case OP_CONSTANT: case OP_CONSTANTOFSHAPE: case OP_SHAPE: case OP_SIZE:
    return true;
  default: /* the unary and binary elementwise families */
    return op_table[op].emit == unary_emit || op_table[op].emit == binary_emit;
  }
}

bool op_check_half(const Graph *g, const Node *n, Diag *d) {
  for (int k = 0; k < n->nin + n->nout; k++) {
    int v = k < n->nin ? n->in[k] : n->out[k - n->nin];
    if (v < 0 || !dt_is_half(g->vals[v].type.dt) || half_capable(n->op))
      continue;
    return diag_node(d, g, n, "'%s' is %s, which %s does not compute; expected f32 (insert a Cast: "
                     "kiln computes f16 and bf16 in the elementwise ops, Cast and the data-movement "
                     "ops only)", g->vals[v].name, dt_name(g->vals[v].type.dt), op_table[n->op].name);
  }
  return true;
}
