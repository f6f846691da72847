/* verify.c — structural invariants of the IR, checked after each pass with
 * --verify-each (and always in debug builds): every input is defined before
 * use, each value has one producer, arities match the op table, after
 * inference every value has a known dtype and shape, and each state input
 * is linked to an output of its own with its type. A failure here is a
 * compiler bug, reported with the offending node. */
#include "../ir/ops.h"
#include "passes.h"

/* Each state is a graph input with an initial value, linked to an output
 * of its own (listed once, not shared with another state) of its type. */
static bool verify_states(Graph *g, bool typed, Diag *d) {
  char *taken = arena_alloc(g->arena, (size_t)g->noutputs + 1);
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = gval(g, g->inputs[i]);
    if (!v->is_state)
      continue;
    int k = v->state_next;
    if (!v->state_init)
      return diag_error(d, "verifier: state '%s' has no initial value", v->name);
    if (k < 0 && op_state_in_place(g, g->inputs[i]))
      continue; /* a KV cache, written in place by CacheWrite */
    if (k < 0 || k >= g->noutputs)
      return diag_error(d, "verifier: state '%s' is linked to output %d of %d", v->name, k,
                        g->noutputs);
    if (taken[k]++)
      return diag_error(d, "verifier: output %d is the next value of two states", k);
    int next = g->outputs[k];
    for (int j = 0; j < g->noutputs; j++)
      if (j != k && g->outputs[j] == next)
        return diag_error(d, "verifier: state '%s': its next value '%s' is also output %d",
                          v->name, gval(g, next)->name, j);
    char a[160], b[160];
    if (typed && !type_equal(&v->type, &gval(g, next)->type))
      return diag_error(d, "verifier: state '%s' is %s but its next value '%s' is %s", v->name,
                        type_str(&v->type, a, sizeof a), gval(g, next)->name,
                        type_str(&gval(g, next)->type, b, sizeof b));
  }
  for (int v = 0; v < g->nvals; v++)
    if (g->vals[v].is_state && !g->vals[v].is_input)
      return diag_error(d, "verifier: '%s' is a state but not a graph input", g->vals[v].name);
  return true;
}

bool graph_verify(Graph *g, bool typed, Diag *d) {
  char *defined = arena_alloc(g->arena, (size_t)g->nvals + 1);
  for (int v = 0; v < g->nvals; v++)
    defined[v] = g->vals[v].is_input || g->vals[v].data;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    const OpInfo *oi = &op_table[n->op];
    if (n->dead)
      return diag_node(d, g, n, "verifier: dead node left in the list");
    if (n->nin < oi->min_in || (oi->max_in >= 0 && n->nin > oi->max_in) ||
        n->nout < oi->min_out || (oi->max_out >= 0 && n->nout > oi->max_out))
      return diag_node(d, g, n, "verifier: arity %d->%d outside the op table's range", n->nin,
                       n->nout);
    for (int j = 0; j < n->nin; j++) {
      int v = n->in[j];
      if (v >= g->nvals || (v >= 0 && !defined[v]))
        return diag_node(d, g, n, "verifier: input %d used before it is defined", j);
    }
    for (int j = 0; j < n->nout; j++) {
      int v = n->out[j];
      if (v < 0 || v >= g->nvals)
        return diag_node(d, g, n, "verifier: bad output id");
      if (defined[v] && !g->vals[v].data)
        return diag_node(d, g, n, "verifier: output '%s' defined twice", g->vals[v].name);
      if (g->vals[v].producer != i)
        return diag_node(d, g, n, "verifier: output '%s' has a stale producer", g->vals[v].name);
      if (typed && g->vals[v].type.rank < 0)
        return diag_node(d, g, n, "verifier: output '%s' has no type", g->vals[v].name);
      defined[v] = 1;
    }
  }
  for (int k = 0; k < g->noutputs; k++)
    if (!defined[g->outputs[k]])
      return diag_error(d, "verifier: graph output '%s' is never defined",
                        g->vals[g->outputs[k]].name);
  return verify_states(g, typed, d);
}
