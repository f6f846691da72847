/* plan_layers.h — repeated layers for the workspace planner (plan.c):
 * which tensors should share an offset so that equal layers are equal
 * calls (and the emitter can write them as one loop). */
#ifndef KILN_PLAN_LAYERS_H
#define KILN_PLAN_LAYERS_H

#include "../base/periodic.h"
#include "../ir/ir.h"

/* v is computed into the workspace: no constant, graph input or output,
 * or view of another value. */
static inline bool plan_in_workspace(const Value *v) {
  return !v->data && !v->is_input && !v->is_output && v->alias_of < 0;
}

/* Does node j repeat node i: the same op, output types, and inputs of the
 * same kinds (absent, constant, graph input, computed) and types, or the
 * very same input? */
bool plan_nodes_repeat(const Graph *g, int i, int j);

/* Nodes start .. start+len-1 repeat at +period: a periodic run of the
 * node list (base/periodic.h). */
typedef PeriodicRun LayerStretch;

/* The graph's repeated stretches, most nodes first, none overlapping
 * (arena memory; *n of them). */
LayerStretch *plan_layer_stretches(Graph *g, int *n);

/* Two tensors the planner is asked to place at one offset: output o of
 * node i and output o of node i + P, where the nodes from i on repeat
 * with period P. */
typedef struct PlanTie {
  int a, b; /* value ids, a's node before b's */
} PlanTie;

/* The ties for g's repeated stretches, in node order (arena memory; *n
 * of them). A proposal only: the planner accepts a tie where the two
 * tensors are never live at once. */
PlanTie *plan_layer_ties(Graph *g, int *n);

#endif
