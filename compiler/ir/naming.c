/* naming.c — names derived from the model's own for the values it did not
 * name (see naming.h; the rule is in DESIGN.md, "Names"). */
#include <ctype.h>
#include <string.h>

#include "naming.h"
#include "ops.h"

/* Moves *p past "_<digits>" groups. */
static void skip_numbers(const char **p) {
  while ((*p)[0] == '_' && isdigit((unsigned char)(*p)[1])) {
    *p += 1;
    while (isdigit((unsigned char)**p))
      (*p)++;
  }
}

bool name_is_op_made(const char *name) {
  const char *p = strrchr(name, '/');
  p = p ? p + 1 : name;
  if (!strncmp(p, "onnx::", 6))
    p += 6;
  size_t k = strcspn(p, "_");
  char op[64];
  if (k == 0 || k >= sizeof op)
    return false;
  memcpy(op, p, k);
  op[k] = '\0';
  if (op_lookup(op) < 0)
    return false;
  p += k;
  skip_numbers(&p);
  if (!strncmp(p, "_output", 7)) {
    p += 7;
    skip_numbers(&p);
  }
  return *p == '\0';
}

const char *name_op_tag(int op) {
  const char *nm = op_table[op].name;
  if (op == OP_TRANSPOSE)
    return "t";
  size_t n = strlen(nm), s = strlen("Normalization");
  if (n >= s && !strcmp(nm + n - s, "Normalization"))
    return "norm";
  static char buf[OP_COUNT_][32]; /* lower-case op names, made once */
  if (!buf[op][0])
    for (size_t i = 0; i < n && i + 1 < sizeof buf[op]; i++)
      buf[op][i] = (char)tolower((unsigned char)nm[i]);
  return buf[op];
}

/* base, or base_2, base_3, ...: the first no value of g has. */
static const char *unique(Graph *g, const char *base) {
  const char *nm = base;
  for (int k = 2; graph_find_value(g, nm) >= 0; k++)
    nm = arena_printf(g->arena, "%s_%d", base, k);
  return nm;
}

/* True for an op-made name with no scope before it: "Add_2",
 * "/Add_2_output_0", "onnx::MatMul_245" (not "/enc/Transpose_output_0"). */
static bool unscoped_op_made(const char *name) {
  const char *slash = strrchr(name, '/');
  return (!slash || slash == name) && name_is_op_made(name);
}

/* A name from the model to build on: neither kiln's "vN" nor op-made
 * without a scope ("/enc/Transpose_output_0" is one: its scope says where). */
static bool model_named(const Value *v) {
  const char *s = v->name;
  if (s[0] == 'v' && s[1] && strspn(s + 1, "0123456789") == strlen(s + 1))
    return false;
  return *s && !unscoped_op_made(s);
}

/* name less an exporter's "_output_<digits>" tail (arena copy when cut). */
static const char *stem(Graph *g, const char *name) {
  const char *t = strstr(name, "_output");
  while (t && strstr(t + 1, "_output"))
    t = strstr(t + 1, "_output");
  if (!t)
    return name;
  const char *p = t + 7;
  skip_numbers(&p);
  return *p ? name : arena_printf(g->arena, "%.*s", (int)(t - name), name);
}

void name_folded_outputs(Graph *g, int node) {
  const Node *n = &g->nodes[node];
  const Value *src = node_in(g, n, 0);
  if (!src || !src->data || !model_named(src) || name_is_op_made(src->name))
    return;
  const char *tag = name_op_tag(n->op);
  for (int j = 0; j < n->nout; j++) {
    Value *v = node_out(g, n, j);
    if (v && name_is_op_made(v->name))
      v->name = unique(g, arena_printf(g->arena, "%s_%s", src->name, tag));
  }
}

/* The name v's derived name grew from, or v's own name (less "_output_0"):
 * a base is stale once something renamed v (x:named, output), and its
 * name no longer starts with it. */
static const char *grown_from(Graph *g, const Value *v) {
  const char *b = v->name_base;
  return b && !strncmp(v->name, b, strlen(b)) ? b : stem(g, v->name);
}

/* A parameter: a constant of rank >= 1 named "<layer>.<part>" by the
 * model ("blk.0.attn_norm.weight"; the part no op's name). */
static bool is_param(const Value *v) {
  const char *slash = strrchr(v->name, '/'), *dot = strrchr(v->name, '.');
  return v->data && v->type.rank >= 1 && !name_is_op_made(v->name) && model_named(v) && dot &&
         dot != v->name && (!slash || dot > slash);
}

/* True when s ends in tag, ignoring case ("attn_norm", "LayerNorm" end in "norm"). */
static bool ends_with_tag(const char *s, const char *tag) {
  size_t n = strlen(s), t = strlen(tag);
  if (n < t)
    return false;
  for (size_t i = 0; i < t; i++)
    if (tolower((unsigned char)s[n - t + i]) != tag[i])
      return false;
  return true;
}

/* Rule 2's base: the first computed input with a model name (what it grew
 * from), or NULL when rule 1 applies or none has one. */
static const char *base_of(Graph *g, const Node *n) {
  for (int i = 0; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    if (v && is_param(v))
      return NULL;
  }
  for (int i = 0; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    if (v && !v->data && model_named(v))
      return grown_from(g, v);
  }
  return NULL;
}

/* The name rules 1-3 of naming.h give node n's outputs (before uniquing). */
static const char *derived(Graph *g, const Node *n, const char *prefix) {
  const char *tag = name_op_tag(n->op);
  prefix = prefix ? prefix : "";
  for (int i = 0; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    if (v && is_param(v)) {
      int len = (int)(strrchr(v->name, '.') - v->name);
      return arena_printf(g->arena, "%s%.*s_%s", prefix, len, v->name,
                          ends_with_tag(arena_printf(g->arena, "%.*s", len, v->name), tag) ? "out" : tag);
    }
  }
  const char *base = base_of(g, n);
  return base ? arena_printf(g->arena, "%s_%s", base, tag) : arena_printf(g->arena, "%s%s", prefix, tag);
}

void name_node_outputs(Graph *g, int node, const char *prefix) {
  name_folded_outputs(g, node);
  const Node *n = &g->nodes[node];
  const char *nm = NULL;
  for (int j = 0; j < n->nout; j++) {
    Value *v = node_out(g, n, j);
    if (!v || !name_is_op_made(v->name))
      continue;
    if (!nm)
      nm = derived(g, n, prefix);
    v->name = unique(g, nm);
    v->name_base = base_of(g, n);
  }
}

/* A constant of the model: an initializer or a Constant node's output. */
static bool model_constant(const Graph *g, const Value *v) {
  return v->producer < 0 ? v->data && !v->is_input : g->nodes[v->producer].op == OP_CONSTANT;
}

/* Constant v's name from its first reader n: "<scope>/<role>" when n's
 * name has a scope, else "<n's first output>_<role>"; role "weight" for
 * rank >= 2, "const" below. */
static const char *reader_name(Graph *g, const Node *n, const Value *v) {
  const char *role = v->type.rank >= 2 ? "weight" : "const";
  const char *slash = strrchr(n->name, '/');
  if (slash && slash != n->name)
    return arena_printf(g->arena, "%.*s/%s", (int)(slash - n->name), n->name, role);
  const Value *y = node_out(g, n, 0);
  return y ? arena_printf(g->arena, "%s_%s", y->name, role) : NULL;
}

void name_onnx_values(Graph *g) {
  for (int i = 0; i < g->nnodes; i++) { /* computed values, in node order */
    const Node *n = &g->nodes[i];
    if (n->dead || n->op == OP_CONSTANT)
      continue;
    for (int j = 0; j < n->nout; j++) {
      Value *v = node_out(g, n, j);
      if (v && !v->is_output && unscoped_op_made(v->name)) {
        v->name = unique(g, derived(g, n, NULL));
        v->name_base = base_of(g, n);
      }
    }
  }
  for (int i = 0; i < g->nnodes; i++) { /* then constants, by their first reader */
    const Node *n = &g->nodes[i];
    for (int k = 0; !n->dead && k < n->nin; k++) {
      Value *v = node_in(g, n, k);
      const char *nm = v && !v->is_output && model_constant(g, v) && unscoped_op_made(v->name)
                           ? reader_name(g, n, v) : NULL;
      if (nm)
        v->name = unique(g, nm);
    }
  }
}
