/* dot.c — `kiln dot`: the graph as Graphviz. Each node is a box labelled
 * with its op, key attributes and output shape; constants do not get boxes
 * of their own (that would drown the picture in weights) but are listed in
 * their user's label; every label ends with the node's origin (the ONNX
 * node, or all of them for a node fused from several: "A + B"), and fused
 * nodes are filled and double-bordered; inputs and outputs are ellipses. */
#include <stdio.h>
#include <string.h>

#include "info.h"
#include "../ir/ops.h"

static void esc(Buf *b, const char *s) {
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\')
      buf_put(b, "\\", 1);
    if (*p == '\n')
      buf_puts(b, "\\n");
    else
      buf_put(b, p, 1);
  }
}

static void attr_short(Buf *b, const Attr *a) {
  buf_printf(b, "%s=", a->name);
  switch (a->kind) {
  case ATTR_INT: buf_printf(b, "%lld", (long long)a->i); break;
  case ATTR_FLOAT: buf_printf(b, "%g", a->f); break;
  case ATTR_STRING: esc(b, a->s); break;
  case ATTR_INTS:
    buf_puts(b, "[");
    for (int i = 0; i < a->n && i < 8; i++)
      buf_printf(b, "%s%lld", i ? "," : "", (long long)a->ints[i]);
    buf_puts(b, a->n > 8 ? ",...]" : "]");
    break;
  default: buf_puts(b, "..."); break;
  }
}

void dot_print(Buf *b, const Graph *g) {
  char ts[160];
  buf_printf(b, "digraph \"");
  esc(b, g->name);
  buf_puts(b, "\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = &g->vals[g->inputs[i]];
    buf_printf(b, "  v%d [shape=ellipse, style=filled, fillcolor=\"#d8ecff\", label=\"", g->inputs[i]);
    esc(b, v->name);
    buf_printf(b, "\\n%s\"];\n", type_str(&v->type, ts, sizeof ts));
  }
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    bool fused = n->origin && strstr(n->origin, " + ");
    buf_printf(b, "  n%d [shape=box, %slabel=\"%s", i,
               fused ? "style=\"filled,bold\", peripheries=2, fillcolor=\"#ffe8b0\", " : "",
               node_op_name(n));
    for (int k = 0; k < n->nattr && k < 4; k++) {
      buf_puts(b, "\\n");
      attr_short(b, &n->attrs[k]);
    }
    for (int j = 0; j < n->nin; j++) {
      const Value *v = node_in(g, n, j);
      if (v && v->data && (v->producer < 0 || v->producer >= g->nnodes)) {
        buf_puts(b, "\\nconst ");
        esc(b, v->name);
        buf_printf(b, ": %s", type_str(&v->type, ts, sizeof ts));
      }
    }
    for (int j = 0; j < n->nout; j++)
      buf_printf(b, "\\n-> %s", type_str(&g->vals[n->out[j]].type, ts, sizeof ts));
    /* where it came from: the ONNX node, or all of them for a fused node */
    buf_puts(b, fused ? "\\n(fused: " : "\\n(");
    esc(b, n->origin ? n->origin : n->name);
    buf_puts(b, ")");
    buf_puts(b, "\"];\n");
  }
  for (int i = 0; i < g->noutputs; i++) {
    const Value *v = &g->vals[g->outputs[i]];
    buf_printf(b, "  out%d [shape=ellipse, style=filled, fillcolor=\"#dff5d8\", label=\"", i);
    esc(b, v->name);
    buf_printf(b, "\\n%s\"];\n", type_str(&v->type, ts, sizeof ts));
    int p = v->producer;
    if (p >= 0 && p < g->nnodes)
      buf_printf(b, "  n%d -> out%d;\n", p, i);
    else if (v->is_input)
      buf_printf(b, "  v%d -> out%d;\n", g->outputs[i], i);
  }
  /* edges: value producer -> consumer, labelled with the shape */
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    for (int j = 0; j < n->nin; j++) {
      const Value *v = node_in(g, n, j);
      if (!v)
        continue;
      if (v->is_input)
        buf_printf(b, "  v%d -> n%d;\n", n->in[j], i);
      else if (v->producer >= 0 && v->producer < g->nnodes && !v->data)
        buf_printf(b, "  n%d -> n%d [label=\"%s\", fontsize=8];\n", v->producer, i,
                   type_str(&v->type, ts, sizeof ts));
    }
  }
  buf_puts(b, "}\n");
}
