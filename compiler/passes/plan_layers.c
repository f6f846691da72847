/* plan_layers.c — find the model's repeated layers for the workspace
 * planner. A model of N equal layers runs one node sequence N times; when
 * each layer's tensors sit at the offsets of the previous layer's, equal
 * layers are equal calls, and the emitter writes them as one loop
 * (compiler/emit/emit_forward.c) instead of N copies.
 *
 * Node i repeats at i + P when the two have the same op, the same output
 * types and inputs of the same kinds (absent, constant, graph input or
 * computed) and types, or the very same input (a mask every layer reads).
 * A stretch is a maximal run of such i of at least P nodes (two layers or
 * more). LayerStretches are taken most nodes first, never overlapping; within
 * one, output o of node i is tied to output o of node i + P — which, for
 * the node just before the first layer whose output the first layer
 * reads, ties it to what each layer hands to the next.
 *
 * Ties are proposals: plan.c keeps one only where the two tensors are
 * never live at once, so a wrong guess here costs a loop, never a clash.
 * Attributes are not compared for that reason: the emitter checks that
 * calls are the same before it writes a loop. */
#include <stdlib.h>

#include "plan_layers.h"

/* The kind of value v as a layer sees it: 0 absent, 1 constant, 2 graph
 * input, 3 computed. */
static int value_kind(const Graph *g, int v) {
  if (v < 0)
    return 0;
  return g->vals[v].data ? 1 : g->vals[v].is_input ? 2 : 3;
}

static bool same_slot(const Graph *g, int x, int y) {
  if (x == y)
    return true;
  int k = value_kind(g, x);
  return k != 0 && k == value_kind(g, y) && type_equal(&g->vals[x].type, &g->vals[y].type);
}

bool plan_nodes_repeat(const Graph *g, int i, int j) {
  const Node *a = &g->nodes[i], *b = &g->nodes[j];
  if (a->dead || b->dead || a->op != b->op || a->nin != b->nin || a->nout != b->nout)
    return false;
  for (int k = 0; k < a->nout; k++)
    if (!same_slot(g, a->out[k], b->out[k]))
      return false;
  for (int k = 0; k < a->nin; k++)
    if (!same_slot(g, a->in[k], b->in[k]))
      return false;
  return true;
}

/* Most nodes covered first; then the shorter period; then the earlier. */
static int by_cover_desc(const void *x, const void *y) {
  const LayerStretch *a = x, *b = y;
  int ca = a->len + a->period, cb = b->len + b->period;
  if (ca != cb)
    return ca < cb ? 1 : -1;
  if (a->period != b->period)
    return a->period - b->period;
  return a->start - b->start;
}

static bool nodes_repeat(void *g, int i, int j) {
  return plan_nodes_repeat(g, i, j);
}

LayerStretch *plan_layer_stretches(Graph *g, int *n) {
  int ns, kept = 0;
  LayerStretch *s = periodic_runs(g->arena, g->nnodes, nodes_repeat, g, &ns);
  qsort(s, (size_t)ns, sizeof *s, by_cover_desc);
  bool *taken = arena_alloc(g->arena, (size_t)g->nnodes + 1);
  for (int k = 0; k < ns; k++) { /* keep those clear of every kept one */
    int end = s[k].start + s[k].len + s[k].period;
    bool clear = true;
    for (int i = s[k].start; i < end && clear; i++)
      clear = !taken[i];
    if (!clear)
      continue;
    for (int i = s[k].start; i < end; i++)
      taken[i] = true;
    s[kept++] = s[k];
  }
  *n = kept;
  return s;
}

PlanTie *plan_layer_ties(Graph *g, int *n) {
  int ns, cap = 0, nt = 0;
  LayerStretch *s = plan_layer_stretches(g, &ns);
  for (int k = 0; k < ns; k++)
    for (int i = s[k].start; i < s[k].start + s[k].len; i++)
      cap += g->nodes[i].nout + g->nodes[i].nin;
  PlanTie *t = arena_alloc(g->arena, sizeof *t * (size_t)(cap + 1));
  for (int k = 0; k < ns; k++)
    for (int i = s[k].start; i < s[k].start + s[k].len; i++) {
      const Node *a = &g->nodes[i], *b = &g->nodes[i + s[k].period];
      for (int o = 0; o < a->nout; o++)
        if (a->out[o] >= 0 && b->out[o] >= 0)
          t[nt++] = (PlanTie){a->out[o], b->out[o]};
      /* what the first layer reads from before the stretch, where the
       * second reads what the first made: the tensor handed in */
      for (int j = 0; j < a->nin && i < s[k].start + s[k].period; j++) {
        int x = a->in[j], y = b->in[j];
        if (x >= 0 && y >= 0 && x != y && value_kind(g, x) == 3 && g->vals[x].producer < s[k].start &&
            g->vals[y].producer >= s[k].start)
          t[nt++] = (PlanTie){x, y};
      }
    }
  *n = nt;
  return t;
}
