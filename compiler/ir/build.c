/* build.c — adding values, constants and inferred nodes to a Graph from
 * code, and the chain builder of export's lowerings (see build.h). */
#include <stdio.h>
#include <string.h>

#include "build.h"
#include "ops.h"

/* hint, or hint_2, hint_3, ... : the first no value of g has. */
static const char *unique_name(Graph *g, const char *hint) {
  if (graph_find_value(g, hint) < 0)
    return hint;
  for (int k = 2;; k++) {
    const char *name = arena_printf(g->arena, "%s_%d", hint, k);
    if (graph_find_value(g, name) < 0)
      return name;
  }
}

int ir_value(Graph *g, const char *hint) { return graph_add_value(g, unique_name(g, hint && *hint ? hint : "t")); }

int ir_const(Graph *g, const char *hint, DType dt, int rank, const int64_t *dims, const void *data) {
  int vid = ir_const_in_place(g, hint, dt, rank, dims, NULL);
  Value *v = gval(g, vid);
  size_t bytes = type_bytes(&v->type);
  v->data = arena_alloc(g->arena, bytes ? bytes : 1);
  if (data)
    memcpy(v->data, data, bytes);
  return vid;
}

int ir_const_in_place(Graph *g, const char *hint, DType dt, int rank, const int64_t *dims, void *data) {
  KILN_ASSERT(rank >= 0 && rank <= MAX_RANK);
  int vid = ir_value(g, hint ? hint : "c");
  Value *v = gval(g, vid);
  v->type.dt = dt;
  v->type.rank = rank;
  for (int i = 0; i < rank; i++)
    v->type.dims[i] = dims[i];
  KILN_ASSERT(type_size_ok(&v->type));
  v->data = data;
  return vid;
}

int ir_const_i64(Graph *g, const char *hint, const int64_t *vals, int n) {
  int64_t dim = n;
  return ir_const(g, hint, DT_I64, 1, &dim, vals);
}

int ir_const_scalar(Graph *g, const char *hint, DType dt, double x) {
  int vid = ir_const(g, hint, dt, 0, NULL, NULL);
  if (dt_is_float(dt))
    el_set_f(dt, gval(g, vid)->data, 0, x);
  else if (dt_is_signed_int(dt))
    el_set_i(dt, gval(g, vid)->data, 0, (int64_t)x);
  else
    el_set_u(dt, gval(g, vid)->data, 0, (uint64_t)x);
  return vid;
}

int ir_op(Graph *g, int op, const char *origin, const int *in, int nin, int nout) {
  KILN_ASSERT(op >= 0 && op < OP_COUNT_ && nout >= 0 && nout <= 16);
  int out[16];
  for (int i = 0; i < nout; i++) /* "MatMul_57": unique at once unless a user took it */
    out[i] = ir_value(g, arena_printf(g->arena, "%s_%d", op_table[op].name, g->nvals));
  int idx = graph_add_node(g, op, NULL, in, nin, out, nout);
  if (origin)
    g->nodes[idx].origin = arena_strdup(g->arena, origin);
  return idx;
}

void ir_attr_int(Graph *g, int node, const char *name, int64_t v) {
  node_add_attr(g, &g->nodes[node], name, ATTR_INT)->i = v;
}

void ir_attr_float(Graph *g, int node, const char *name, double v) {
  node_add_attr(g, &g->nodes[node], name, ATTR_FLOAT)->f = v;
}

void ir_attr_str(Graph *g, int node, const char *name, const char *s) {
  node_add_attr(g, &g->nodes[node], name, ATTR_STRING)->s = arena_strdup(g->arena, s);
}

void ir_attr_ints(Graph *g, int node, const char *name, const int64_t *v, int n) {
  Attr *a = node_add_attr(g, &g->nodes[node], name, ATTR_INTS);
  a->n = n;
  a->ints = arena_dup(g->arena, v, sizeof(int64_t) * (size_t)(n ? n : 1));
}

void ir_attr_floats(Graph *g, int node, const char *name, const double *v, int n) {
  Attr *a = node_add_attr(g, &g->nodes[node], name, ATTR_FLOATS);
  a->n = n;
  a->floats = arena_dup(g->arena, v, sizeof(double) * (size_t)(n ? n : 1));
}

bool ir_finish(Graph *g, int node, Diag *d) {
  Node *n = &g->nodes[node];
  const OpInfo *oi = &op_table[n->op];
  if (n->nin < oi->min_in || (oi->max_in >= 0 && n->nin > oi->max_in))
    return diag_node(d, g, n, "%d inputs; expected %d to %d", n->nin, oi->min_in, oi->max_in);
  for (int i = 0; i < n->nin; i++) {
    Value *v = node_in(g, n, i);
    if (!v) {
      if (i < oi->min_in)
        return diag_node(d, g, n, "input %d is missing; expected a tensor", i + 1);
      continue;
    }
    if (v->type.rank < 0)
      return diag_node(d, g, n, "input '%s' has no known shape", v->name);
    if (i < 32 && (oi->const_in >> i & 1u) && !v->data)
      return diag_node(d, g, n, "input %d ('%s') must be a compile-time constant", i + 1, v->name);
  }
  if (!oi->infer(g, n, d) || !op_check_half(g, n, d))
    return false;
  bool folded;
  return fold_node(g, &g->nodes[node], (size_t)4 << 20, &folded, d);
}

/* ---- a node replaced by a chain of ops ------------------------------------------ */

Lowering lw_start(Graph *g, int node, DType dt, Diag *d) {
  const Node *n = &g->nodes[node];
  return (Lowering){.g = g, .node = node, .name = n->name, .origin = n->origin, .dt = dt,
                    .first = g->nnodes, .d = d};
}

bool lw_need_opset(Lowering *l, int need, const char *why) {
  if (l->g->opset >= need)
    return true;
  l->failed = true;
  return diag_node(l->d, l->g, &l->g->nodes[l->node],
                   "export: no ONNX form at opset %d; expected opset %d or later (%s)", l->g->opset,
                   need, why);
}

int lw_node(Lowering *l, int op, const int *in, int nin, int nout) {
  Graph *g = l->g;
  int idx = ir_op(g, op, l->origin, in, nin, nout); /* g->nodes may move */
  const char *base = arena_printf(g->arena, "%s/%s", l->name, op_table[op].name);
  g->nodes[idx].name = base;
  for (int j = 0; j < nout; j++)
    gval(g, g->nodes[idx].out[j])->name = arena_strdup(g->arena, unique_name(g, base));
  return idx;
}

int lw_finish(Lowering *l, int idx) {
  if (l->failed || !ir_finish(l->g, idx, l->d)) {
    l->failed = true;
    return -1;
  }
  return ir_out(l->g, idx, 0);
}

int lw_op(Lowering *l, int op, const int *in, int nin) {
  for (int i = 0; i < nin; i++)
    if (in[i] < 0)
      return -1;
  return l->failed ? -1 : lw_finish(l, lw_node(l, op, in, nin, 1));
}

int lw_unary(Lowering *l, int op, int x) { return lw_op(l, op, (int[]){x}, 1); }
int lw_binary(Lowering *l, int op, int a, int b) { return lw_op(l, op, (int[]){a, b}, 2); }

int lw_cast(Lowering *l, int x, DType to) {
  if (x < 0 || l->failed || gval(l->g, x)->type.dt == to)
    return l->failed ? -1 : x;
  int idx = lw_node(l, OP_CAST, &x, 1, 1);
  ir_attr_int(l->g, idx, "to", to);
  return lw_finish(l, idx);
}

const char *lw_name(Lowering *l, const char *hint) { return arena_printf(l->g->arena, "%s/%s", l->name, hint); }

int lw_scalar(Lowering *l, const char *hint, double x) { return ir_const_scalar(l->g, lw_name(l, hint), l->dt, x); }

int lw_i64(Lowering *l, const char *hint, int64_t v) { return ir_const_i64(l->g, lw_name(l, hint), &v, 1); }

bool lw_result(Lowering *l, int v, int slot) {
  if (l->failed || v < 0)
    return false;
  Graph *g = l->g;
  int want = g->nodes[l->node].out[slot], p = gval(g, v)->producer;
  KILN_ASSERT(p >= l->first && type_equal(&gval(g, v)->type, &gval(g, want)->type));
  for (int i = l->first; i < g->nnodes; i++) {
    Node *n = &g->nodes[i];
    for (int j = 0; j < n->nin; j++)
      n->in[j] = n->in[j] == v ? want : n->in[j];
    for (int j = 0; j < n->nout; j++)
      n->out[j] = n->out[j] == v ? want : n->out[j];
  }
  gval(g, v)->producer = -1;
  gval(g, want)->producer = p;
  return true;
}

/* x reshaped to dims[0..rank) (a no-op when it has them already). */
int lw_reshape(Lowering *l, int x, const int64_t *dims, int rank) {
  if (x < 0 || l->failed)
    return -1;
  const Type *t = &gval(l->g, x)->type;
  if (t->rank == rank && !memcmp(t->dims, dims, sizeof(int64_t) * (size_t)rank))
    return x;
  int shape = ir_const_i64(l->g, lw_name(l, "shape"), dims, rank);
  return lw_binary(l, OP_RESHAPE, x, shape);
}
