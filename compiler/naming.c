/* naming.c — names derived from the model's own for the values it did not
 * name (see naming.h; the rule is in DESIGN.md, "Names"). */
#include <ctype.h>
#include <string.h>

#include "naming.h"
#include "ops.h"

/* "_<digits>" groups from *p on; true when at least one was read. */
static bool skip_numbers(const char **p) {
  bool any = false;
  while ((*p)[0] == '_' && isdigit((unsigned char)(*p)[1])) {
    *p += 1;
    while (isdigit((unsigned char)**p))
      (*p)++;
    any = true;
  }
  return any;
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

/* A model's name: a value's name that is neither op-made nor kiln's "vN". */
static bool model_named(const Value *v) {
  const char *s = v->name;
  if (s[0] == 'v' && s[1] && strspn(s + 1, "0123456789") == strlen(s + 1))
    return false;
  return *s && !name_is_op_made(s);
}

void name_folded_outputs(Graph *g, int node) {
  const Node *n = &g->nodes[node];
  const Value *src = node_in(g, n, 0);
  if (!src || !src->data || !model_named(src))
    return;
  const char *tag = name_op_tag(n->op);
  for (int j = 0; j < n->nout; j++) {
    Value *v = node_out(g, n, j);
    if (v && name_is_op_made(v->name))
      v->name = unique(g, arena_printf(g->arena, "%s_%s", src->name, tag));
  }
}

/* The name v's derived name grew from, or v's own name: a base is stale
 * once something renamed v (x:named, output), and its name no longer
 * starts with it. */
static const char *grown_from(const Value *v) {
  const char *b = v->name_base;
  return b && !strncmp(v->name, b, strlen(b)) ? b : v->name;
}

/* The layer a parameter belongs to: its name less the last ".part"
 * ("blk.0.attn_norm.weight" -> "blk.0.attn_norm"), or NULL. */
static bool is_param(const Value *v) {
  const char *dot = strrchr(v->name, '.');
  return v->data && v->type.rank >= 1 && model_named(v) && dot && dot != v->name;
}

static const char *param_layer(Graph *g, const Value *v) {
  if (!is_param(v))
    return NULL;
  const char *dot = strrchr(v->name, '.');
  return arena_printf(g->arena, "%.*s", (int)(dot - v->name), v->name);
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

/* The name rule 1-3 of naming.h gives node n's outputs (before uniquing). */
static const char *derived(Graph *g, const Node *n, const char *prefix) {
  const char *tag = name_op_tag(n->op);
  prefix = prefix ? prefix : "";
  for (int i = 0; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    const char *layer = v ? param_layer(g, v) : NULL;
    if (layer)
      return arena_printf(g->arena, "%s%s_%s", prefix, layer, ends_with_tag(layer, tag) ? "out" : tag);
  }
  for (int i = 0; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    if (v && !v->data && model_named(v))
      return arena_printf(g->arena, "%s_%s", grown_from(v), tag);
  }
  return arena_printf(g->arena, "%s%s", prefix, tag);
}

/* The model name rule 2 built on (the input's own base when it has one), so
 * a chain of ops grows no longer than one tag: "blk.0.ffn_gate_silu",
 * then "blk.0.ffn_gate_mul", not "blk.0.ffn_gate_silu_mul". */
static const char *base_of(const Graph *g, const Node *n) {
  for (int i = 0; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    if (v && is_param(v))
      return NULL;
  }
  for (int i = 0; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    if (v && !v->data && model_named(v))
      return grown_from(v);
  }
  return NULL;
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

void name_constants_by_reader(Graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = &g->nodes[i];
    const char *slash = n->dead ? NULL : strrchr(n->name, '/');
    if (!slash || slash == n->name)
      continue;
    for (int k = 0; k < n->nin; k++) {
      Value *v = node_in(g, n, k);
      if (!v || !v->data || v->is_input || v->producer >= 0 || !name_is_op_made(v->name))
        continue;
      v->name = unique(g, arena_printf(g->arena, "%.*s/%s", (int)(slash - n->name), n->name,
                                       v->type.rank >= 2 ? "weight" : "const"));
    }
  }
}
