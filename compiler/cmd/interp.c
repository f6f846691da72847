/* interp.c — the reference interpreter behind `kiln run` and
 * `kiln check --interp`: every node through its op's _eval, in order, on
 * tensors allocated in the graph's arena. Slow and simple on purpose: it is
 * the oracle the generated C is compared with. */
#include <string.h>

#include "driver.h"
#include "../ir/ops.h"

bool interp_run(Graph *g, const Tensor *inputs, Tensor *outputs, Diag *d) {
  Tensor *vals;
  if (!interp_values(g, inputs, &vals, d))
    return false;
  for (int k = 0; k < g->noutputs; k++)
    outputs[k] = vals[g->outputs[k]];
  return true;
}

bool interp_values(Graph *g, const Tensor *inputs, Tensor **values, Diag *d) {
  Tensor *vals = arena_alloc(g->arena, sizeof(Tensor) * (size_t)(g->nvals + 1));
  *values = vals;
  for (int v = 0; v < g->nvals; v++)
    vals[v] = (Tensor){g->vals[v].type, g->vals[v].data};
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = gval(g, g->inputs[i]);
    if (!type_equal(&inputs[i].type, &v->type)) {
      char a[128], b[128];
      return diag_error(d, "input '%s' is %s; expected %s", v->name,
                        type_str(&inputs[i].type, a, sizeof a), type_str(&v->type, b, sizeof b));
    }
    vals[g->inputs[i]].data = inputs[i].data;
  }
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    Tensor in[n->nin > 0 ? n->nin : 1], out[n->nout];
    for (int j = 0; j < n->nin; j++)
      in[j] = n->in[j] >= 0 ? vals[n->in[j]] : (Tensor){{0}, NULL};
    for (int j = 0; j < n->nout; j++) {
      out[j].type = g->vals[n->out[j]].type;
      out[j].data = arena_alloc(g->arena, type_bytes(&out[j].type) + 1);
    }
    if (!op_table[n->op].eval(n, in, out, d))
      return false;
    for (int j = 0; j < n->nout; j++)
      vals[n->out[j]].data = out[j].data;
  }
  return true;
}

bool interp_state_start(const Graph *g, int i, Tensor *t) {
  const Value *v = gval(g, g->inputs[i]);
  if (!v->is_state)
    return false;
  *t = (Tensor){v->type, v->state_init};
  return true;
}
