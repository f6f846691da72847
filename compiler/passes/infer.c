/* infer.c — give every value a static dtype and shape, in topological
 * order. Shapes in PyTorch exports depend on values (Reshape's target comes
 * from Shape -> Gather -> Concat), so a node whose inputs are all constant is
 * evaluated right after its shapes are known: by the time a Reshape is
 * reached, its shape input is a constant. */
#include "../ir/ops.h"
#include "passes.h"

static bool check_inputs_known(Graph *g, Node *n, Diag *d) {
  for (int i = 0; i < n->nin; i++) {
    Value *v = node_in(g, n, i);
    if (!v)
      continue;
    if (v->type.rank < 0)
      return diag_node(d, g, n, "input '%s' has no known shape; expected it to be defined earlier",
                       v->name);
    if (!dt_supported(v->type.dt))
      return diag_node(d, g, n, "input '%s' has element type %s; expected a numeric or bool type",
                       v->name, dt_name(v->type.dt));
  }
  return true;
}

/* Each state's next value, now typed, must fit the state's slot. */
static bool check_state_types(Graph *g, Diag *d) {
  for (int i = 0; i < g->ninputs; i++) {
    const Value *s = gval(g, g->inputs[i]);
    const Value *next = s->is_state && s->state_next >= 0 ? gval(g, g->outputs[s->state_next]) : NULL;
    char a[160], b[160];
    if (next && !type_equal(&s->type, &next->type))
      return diag_error(d, "state '%s' is %s but its next value '%s' is %s; expected the same "
                        "dtype and shape", s->name, type_str(&s->type, a, sizeof a), next->name,
                        type_str(&next->type, b, sizeof b));
  }
  return true;
}

bool pass_infer(Graph *g, const PassOptions *o, Diag *d) {
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    if (n->dead)
      continue;
    if (!check_inputs_known(g, n, d) || !op_table[n->op].infer(g, n, d) || !op_check_half(g, n, d))
      return false;
    bool inputs_static = true;
    for (int j = 0; j < n->nin; j++) {
      Value *v = node_in(g, n, j);
      for (int k = 0; v && k < v->type.rank; k++)
        inputs_static &= v->type.dims[k] >= 0;
    }
    for (int j = 0; j < n->nout; j++) {
      Value *v = node_out(g, n, j);
      KILN_ASSERT(!v || v->type.rank >= 0); /* every _infer sets every output */
      /* a safety net under every _infer: a negative or huge dim computed
       * from bad attributes or constants stops here, before anything is
       * sized from it (unknown dims, -1, come only from unknown inputs) */
      char ts[160];
      if (v && !type_dims_ok(&v->type, !inputs_static))
        return diag_node(d, g, n, "output '%s' would be %s; expected dims >= 0 and at most %lld "
                         "elements", v->name, type_str(&v->type, ts, sizeof ts), (long long)MAX_NUMEL);
    }
    bool folded;
    if (!fold_node(g, n, o->fold_limit, &folded, d))
      return false;
  }
  return check_state_types(g, d);
}
