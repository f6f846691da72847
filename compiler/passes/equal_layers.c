/* equal_layers.c — make a model's equal layers the same node sequence,
 * so that the planner gives them the same offsets and the emitter writes
 * them as one loop (plan_layers.c finds the repeated stretches). Two
 * things make the first and the last layer differ from the others:
 *
 * - What the first layer computes once for all of them: a model
 *   description builds the attention mask where the first layer needs it,
 *   between its own nodes. Such nodes (their inputs all made before the
 *   layer) move in front of the layer, keeping their order.
 * - The last layer writing a graph output: an encoder's last layer writes
 *   `last_hidden_state` where every earlier layer wrote a workspace
 *   tensor. It gets a workspace tensor like theirs, copied into the output
 *   right after the node (one memcpy of the output's bytes); nodes after it
 *   read the workspace tensor, and the output is written once, as before. */
#include <stdlib.h>
#include <string.h>

#include "../ir/naming.h"
#include "../ir/ops.h"
#include "passes.h"
#include "plan_layers.h"

/* v is a graph output, not a state's next value. */
static bool plain_output(const Graph *g, int v) {
  if (!g->vals[v].is_output)
    return false;
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == v && graph_state_of_output(g, k) >= 0)
      return false;
  return true;
}

/* Make node `at`'s output slot o a new workspace value, read by every later
 * node in place of the output y, and insert `y = Identity(that)` after it. */
static void copy_out_after(Graph *g, int at, int o) {
  int y = g->nodes[at].out[o];
  /* an op-made name, which naming.c replaces by one from the layer's
   * parameters ("encoder.layer.5.output.LayerNorm_norm") */
  const char *name = NULL;
  for (int k = g->nvals; !name || graph_find_value(g, name) >= 0; k++)
    name = arena_printf(g->arena, "%s_%d", node_op_name(&g->nodes[at]), k);
  int x = graph_add_value(g, name);
  g->vals[x].type = g->vals[y].type;
  g->nodes[at].out[o] = x;
  name_node_outputs(g, at, "");
  for (int i = at + 1; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (g->nodes[i].in[j] == y)
        g->nodes[i].in[j] = x;
  graph_add_node(g, OP_IDENTITY, arena_printf(g->arena, "%s_copy", g->vals[y].name), &x, 1, &y, 1);
  Node copy = g->nodes[g->nnodes - 1];
  memmove(&g->nodes[at + 2], &g->nodes[at + 1], sizeof(Node) * (size_t)(g->nnodes - at - 2));
  g->nodes[at + 1] = copy;
  graph_compact(g); /* producers after the move */
}

/* Move node `from` to index `to`; the nodes between shift by one. */
static void move_node(Graph *g, int from, int to) {
  Node n = g->nodes[from];
  if (to < from)
    memmove(&g->nodes[to + 1], &g->nodes[to], sizeof(Node) * (size_t)(from - to));
  else
    memmove(&g->nodes[from], &g->nodes[from + 1], sizeof(Node) * (size_t)(to - from));
  g->nodes[to] = n;
  graph_compact(g); /* producers after the move */
}

/* The earliest index node i could move to: after its inputs' producers. */
static int earliest_slot(const Graph *g, int i) {
  int q = 0;
  for (int j = 0; j < g->nodes[i].nin; j++) {
    int x = g->nodes[i].in[j];
    if (x >= 0 && g->vals[x].producer >= q)
      q = g->vals[x].producer + 1;
  }
  return q;
}

/* The node just before stretch s does not repeat one period on; when it
 * can move up (its inputs were made earlier) and the stretch then reaches
 * back past its old place, move it, and again, up to a period's worth of
 * nodes: the first layer's extra nodes go in front of it. s->start and
 * s->len follow. */
static void hoist_first_layer(Graph *g, LayerStretch *s) {
  for (int moved = 0; moved < s->period && s->start > 0; moved++) {
    int b = s->start - 1, q = earliest_slot(g, b);
    if (q >= b)
      return;
    move_node(g, b, q);
    if (!plan_nodes_repeat(g, b, b + s->period)) {
      move_node(g, q, b); /* no better: put it back */
      return;
    }
    while (s->start > 0 && plan_nodes_repeat(g, s->start - 1, s->start - 1 + s->period)) {
      s->start--;
      s->len++;
    }
  }
}

static int by_start_desc(const void *x, const void *y) {
  return ((const LayerStretch *)y)->start - ((const LayerStretch *)x)->start;
}

bool pass_equal_layers(Graph *g, const PassOptions *o, Diag *d) {
  (void)o;
  (void)d;
  int ns;
  LayerStretch *s = plan_layer_stretches(g, &ns);
  qsort(s, (size_t)ns, sizeof *s, by_start_desc);
  /* the last repetitions' nodes, latest first, so that the indices still
   * to visit stay where they are as copies go in */
  for (int k = 0; k < ns; k++) {
    hoist_first_layer(g, &s[k]); /* moves nodes before s[k] only */
    for (int i = s[k].start + s[k].len - 1; i >= s[k].start + s[k].len - s[k].period && i >= s[k].start; i--) {
      int b = i + s[k].period;
      for (int j = 0; j < g->nodes[b].nout; j++) {
        int vb = g->nodes[b].out[j], va = g->nodes[i].out[j];
        if (vb >= 0 && va >= 0 && plain_output(g, vb) && plan_in_workspace(&g->vals[va]))
          copy_out_after(g, b, j);
      }
    }
  }
  graph_count_uses(g);
  return true;
}
