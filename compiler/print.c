/* print.c — the IR as text, one line per node:
 *
 *   graph @name (%x: f32[1,16]) -> (%y) {
 *     const %w: f32[16,16] = [0.1, -0.2, ...]   # 256 values
 *     %y = MatMul %x, %w : f32[1,16]  # onnx: MatMul_3
 *   }
 *
 * Names that are not plain identifiers are quoted (%"a/b:0"). Floats print
 * with %.9g (exact for f32). Constants show their first values and count. */
#include "print.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

#define SHOW_VALUES 8

static void put_name(Buf *b, const char *s) {
  bool plain = *s != 0;
  for (const char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.')
      plain = false;
  if (plain) {
    buf_printf(b, "%%%s", s);
    return;
  }
  buf_puts(b, "%\"");
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\')
      buf_put(b, "\\", 1);
    buf_put(b, p, 1);
  }
  buf_puts(b, "\"");
}

static void put_type(Buf *b, const Type *t) {
  char s[160];
  buf_puts(b, type_str(t, s, sizeof s));
}

static void put_elem(Buf *b, DType dt, const void *p, int64_t i) {
  if (dt_is_float(dt))
    buf_printf(b, dt == DT_F32 ? "%.9g" : "%.17g", el_get_f(dt, p, i));
  else if (dt == DT_BOOL)
    buf_puts(b, el_get_u(dt, p, i) ? "true" : "false");
  else if (dt_is_signed_int(dt))
    buf_printf(b, "%lld", (long long)el_get_i(dt, p, i));
  else
    buf_printf(b, "%llu", (unsigned long long)el_get_u(dt, p, i));
}

static void put_values(Buf *b, const Type *t, const void *data) {
  int64_t n = type_numel(t);
  buf_puts(b, "[");
  for (int64_t i = 0; i < n && i < SHOW_VALUES; i++) {
    if (i)
      buf_puts(b, ", ");
    put_elem(b, t->dt, data, i);
  }
  if (n > SHOW_VALUES)
    buf_printf(b, ", ...");
  buf_puts(b, "]");
}

static void put_attr(Buf *b, const Attr *a) {
  buf_printf(b, "%s=", a->name);
  switch (a->kind) {
  case ATTR_INT: buf_printf(b, "%lld", (long long)a->i); break;
  case ATTR_FLOAT: buf_printf(b, "%.9g", a->f); break;
  case ATTR_STRING: buf_printf(b, "\"%s\"", a->s); break;
  case ATTR_INTS:
    buf_puts(b, "[");
    for (int i = 0; i < a->n; i++)
      buf_printf(b, "%s%lld", i ? "," : "", (long long)a->ints[i]);
    buf_puts(b, "]");
    break;
  case ATTR_FLOATS:
    buf_puts(b, "[");
    for (int i = 0; i < a->n; i++)
      buf_printf(b, "%s%.9g", i ? "," : "", a->floats[i]);
    buf_puts(b, "]");
    break;
  case ATTR_STRINGS:
    buf_puts(b, "[");
    for (int i = 0; i < a->n; i++)
      buf_printf(b, "%s\"%s\"", i ? "," : "", a->strings[i]);
    buf_puts(b, "]");
    break;
  case ATTR_TENSOR:
    put_type(b, &a->t->type);
    buf_puts(b, " ");
    put_values(b, &a->t->type, a->t->data);
    break;
  }
}

static void put_node(Buf *b, const Graph *g, const Node *n) {
  buf_puts(b, "  ");
  for (int j = 0; j < n->nout; j++) {
    if (j)
      buf_puts(b, ", ");
    put_name(b, g->vals[n->out[j]].name);
  }
  buf_printf(b, " = %s", node_op_name(n));
  for (int j = 0; j < n->nin; j++) {
    buf_puts(b, j ? ", " : " ");
    if (n->in[j] < 0)
      buf_puts(b, "_");
    else
      put_name(b, g->vals[n->in[j]].name);
  }
  if (n->nattr) {
    buf_puts(b, " {");
    for (int k = 0; k < n->nattr; k++) {
      if (k)
        buf_puts(b, ", ");
      put_attr(b, &n->attrs[k]);
    }
    buf_puts(b, "}");
  }
  buf_puts(b, " :");
  for (int j = 0; j < n->nout; j++) {
    buf_puts(b, j ? ", " : " ");
    put_type(b, &g->vals[n->out[j]].type);
    if (g->vals[n->out[j]].alias_of >= 0)
      buf_puts(b, " alias");
  }
  buf_printf(b, "  # onnx: %s\n", n->origin ? n->origin : n->name);
}

void ir_print(Buf *b, const Graph *g) {
  buf_printf(b, "graph @%s (", g->name);
  for (int i = 0; i < g->ninputs; i++) {
    const Value *v = &g->vals[g->inputs[i]];
    if (i)
      buf_puts(b, ", ");
    put_name(b, v->name);
    buf_puts(b, ": ");
    put_type(b, &v->type);
  }
  buf_puts(b, ") -> (");
  for (int i = 0; i < g->noutputs; i++) {
    if (i)
      buf_puts(b, ", ");
    put_name(b, g->vals[g->outputs[i]].name);
  }
  buf_puts(b, ") {\n");
  /* constants that something uses, in id order */
  bool *used = calloc((size_t)g->nvals + 1, 1);
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nin; j++)
      if (g->nodes[i].in[j] >= 0)
        used[g->nodes[i].in[j]] = true;
  for (int i = 0; i < g->noutputs; i++)
    used[g->outputs[i]] = true;
  for (int v = 0; v < g->nvals; v++) {
    const Value *val = &g->vals[v];
    if (!val->data || !used[v] || (val->producer >= 0 && !g->nodes[val->producer].dead &&
                                   val->producer < g->nnodes))
      continue;
    buf_puts(b, "  const ");
    put_name(b, val->name);
    buf_puts(b, ": ");
    put_type(b, &val->type);
    buf_puts(b, " = ");
    put_values(b, &val->type, val->data);
    buf_puts(b, "\n");
  }
  free(used);
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead)
      put_node(b, g, &g->nodes[i]);
  buf_puts(b, "}\n");
}
