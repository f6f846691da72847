/* fuse_match.c — pattern-matching helpers and the sweep shared by the
 * fusion passes (see fuse_match.h for the rules they keep). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "fuse_match.h"
/* ---- the graph as the matchers see it -------------------------------------- */

/* Rebuild the reader lists from the live nodes (after every rewrite, so
 * matchers never see a stale use). The arrays are sized once: rewrites only
 * remove edges. */
void fm_index_users(Fuser *f) {
  Graph *g = f->g;
  int nedges = 0;
  for (int i = 0; i < g->nnodes; i++)
    nedges += g->nodes[i].nin;
  if (!f->ustart || g->nvals > f->cap_vals || nedges > f->cap_edges) { /* a rewrite added constants */
    f->cap_vals = g->nvals;
    f->cap_edges = nedges;
    f->ustart = arena_alloc(g->arena, sizeof(int) * (size_t)(g->nvals + 1));
    f->ulist = arena_alloc(g->arena, sizeof(int) * (size_t)(nedges + 1));
    f->fill = arena_alloc(g->arena, sizeof(int) * (size_t)(g->nvals + 1));
  }
  memset(f->ustart, 0, sizeof(int) * (size_t)(g->nvals + 1));
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; !g->nodes[i].dead && j < g->nodes[i].nin; j++)
      if (g->nodes[i].in[j] >= 0)
        f->ustart[g->nodes[i].in[j] + 1]++;
  for (int v = 0; v < g->nvals; v++)
    f->ustart[v + 1] += f->ustart[v];
  int *fill = f->fill;
  memcpy(fill, f->ustart, sizeof(int) * (size_t)g->nvals);
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; !g->nodes[i].dead && j < g->nodes[i].nin; j++)
      if (g->nodes[i].in[j] >= 0)
        f->ulist[fill[g->nodes[i].in[j]]++] = i;
}

int fm_nreaders(const Fuser *f, int v) { return f->ustart[v + 1] - f->ustart[v]; }

/* The live node of op `op` (-1: any) that produces v, or NULL. */
Node *fm_def(const Fuser *f, int v, int op) {
  if (v < 0 || f->g->vals[v].producer < 0)
    return NULL;
  Node *n = &f->g->nodes[f->g->vals[v].producer];
  return !n->dead && (op < 0 || n->op == op) ? n : NULL;
}

/* v is an intermediate the pattern may swallow: read once, by one node. */
bool fm_sole(const Fuser *f, int v) {
  return v >= 0 && !f->g->vals[v].is_output && fm_nreaders(f, v) == 1 && fm_def(f, v, -1);
}

/* The one node of op `op` (-1: any) reading v, when v is sole; else NULL. */
Node *fm_sole_user(const Fuser *f, int v, int op) {
  if (!fm_sole(f, v))
    return NULL;
  Node *n = &f->g->nodes[f->ulist[f->ustart[v]]];
  return (op < 0 || n->op == op) && n->nout == 1 ? n : NULL;
}

/* The operand of binary node n that is not v (v itself for n(v, v)); -1 if
 * n does not read v. */
int fm_other(const Node *n, int v) {
  if (n->nin != 2)
    return -1;
  return n->in[0] == v ? n->in[1] : n->in[1] == v ? n->in[0] : -1;
}

/* v is a one-element numeric constant (Pow's exponent may be an integer);
 * its value in *x. */
bool fm_scalar_const(const Graph *g, int v, double *x) {
  const Value *c = v >= 0 ? &g->vals[v] : NULL;
  if (!c || !c->data || c->type.dt == DT_BOOL || type_numel(&c->type) != 1)
    return false;
  DType dt = c->type.dt;
  *x = dt_is_float(dt) ? el_get_f(dt, c->data, 0)
       : dt_is_signed_int(dt) ? (double)el_get_i(dt, c->data, 0) : (double)el_get_u(dt, c->data, 0);
  return true;
}

/* v is a one-element constant within rtol of want (0: exactly). */
bool fm_const_is(const Graph *g, int v, double want, double rtol) {
  double x;
  return fm_scalar_const(g, v, &x) && (rtol == 0 ? x == want : fabs(x - want) <= rtol * fabs(want));
}

bool fm_float_value(const Graph *g, int v) {
  if (v < 0)
    return false;
  DType dt = g->vals[v].type.dt;
  return g->vals[v].type.rank >= 0 && (dt == DT_F32 || dt == DT_F64);
}

void fm_take(Match *m, const Graph *g, const Node *n) {
  KILN_ASSERT(m->n < MAX_MATCH);
  m->idx[m->n++] = (int)(n - g->nodes);
}

/* The axes as the attribute, or as a constant input. */
bool fm_mean_last_axis(const Graph *g, const Node *r, int rank) {
  if (r->op != OP_REDUCEMEAN || attr_int(r, "keepdims", 1) != 1)
    return false;
  int64_t axis;
  const Attr *a = attr_get(r, "axes");
  const Value *av = node_in(g, r, 1);
  if (a && a->kind == ATTR_INTS && a->n == 1)
    axis = a->ints[0];
  else if (!a && av && av->data && dt_is_int(av->type.dt) && type_numel(&av->type) == 1)
    axis = el_get_i(av->type.dt, av->data, 0);
  else
    return false;
  int k;
  return axis_norm(axis, rank, &k) && k == rank - 1;
}

/* LayerNorm's d = x - mean over √(var + eps); RMSNorm's x over √(ms + eps). */
Node *fm_match_normalize(Fuser *f, Match *m, int d, int sd) {
  Graph *g = f->g;
  Node *u = fm_sole_user(f, sd, -1);
  if (!u)
    return NULL;
  if (u->op == OP_DIV && u->in[0] == d && u->in[1] == sd)
    return u;
  bool recip = u->op == OP_RECIPROCAL || (u->op == OP_DIV && u->in[1] == sd && fm_const_is(g, u->in[0], 1, 0));
  Node *nm = recip ? fm_sole_user(f, u->out[0], OP_MUL) : NULL;
  if (!nm || fm_other(nm, u->out[0]) != d)
    return NULL;
  fm_take(m, g, u);
  return nm;
}

Node *fm_match_norm_tail(Fuser *f, Match *m, Match *mr, const Node *r, int d, const Type *xt, double *eps,
                         int *w) {
  Graph *g = f->g;
  Node *ae = fm_sole_user(f, r->out[0], OP_ADD);
  if (!ae || !fm_scalar_const(g, fm_other(ae, r->out[0]), eps))
    return NULL;
  fm_take(mr, g, ae);
  Node *sqrt_n = fm_sole_user(f, ae->out[0], OP_SQRT);
  if (!sqrt_n)
    return NULL;
  fm_take(mr, g, sqrt_n);
  Node *norm = fm_match_normalize(f, mr, d, sqrt_n->out[0]);
  if (!norm)
    return NULL;
  fm_take(m, g, norm);
  Node *gm = fm_sole_user(f, norm->out[0], OP_MUL);
  *w = gm ? fm_other(gm, norm->out[0]) : -1;
  if (!gm || !fm_is_param(g, *w, xt->dt, xt->dims[xt->rank - 1]))
    return NULL;
  fm_take(m, g, gm);
  return gm;
}

/* Every matched node's output has type t (no broadcast grew a shape). */
bool fm_outputs_are(const Graph *g, const Match *m, const Type *t) {
  for (int i = 0; i < m->n; i++)
    if (!type_equal(&g->vals[g->nodes[m->idx[i]].out[0]].type, t))
      return false;
  return true;
}

/* ---- the rewrite ------------------------------------------------------------- */

static int by_index(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Replace the matched nodes by one node of op `op` reading `in`, in the
 * slot of `last`, the node whose output the pattern computes (every other
 * matched node feeds it, so it comes last), keeping that output. Returns it
 * (attributes are added by the caller, before fuse_done). */
Node *fm_fuse_into(Fuser *f, Match *m, const Node *last, int op, const int *in, int nin) {
  Graph *g = f->g;
  qsort(m->idx, (size_t)m->n, sizeof(int), by_index);
  KILN_ASSERT(&g->nodes[m->idx[m->n - 1]] == last);
  Buf b = {0};
  const char *prev = NULL;
  for (int i = 0; i < m->n; i++) { /* an origin once in a row: a chain one ONNX node became */
    const Node *s = &g->nodes[m->idx[i]];
    const char *o = s->origin ? s->origin : s->name;
    if (!prev || strcmp(prev, o))
      buf_printf(&b, "%s%s", i ? " + " : "", o);
    prev = o;
  }
  Node *n = &g->nodes[m->idx[m->n - 1]];
  n->name = g->nodes[m->idx[0]].name;
  n->origin = arena_strdup(g->arena, b.s);
  buf_free(&b);
  for (int i = 0; i + 1 < m->n; i++)
    g->nodes[m->idx[i]].dead = true;
  n->op = op;
  n->nin = nin;
  n->in = arena_dup(g->arena, in, sizeof(int) * (size_t)nin);
  n->nattr = 0;
  n->attrs = NULL;
  return n;
}

/* Check the fused node infers the type its output already has, report it
 * under -v and refresh the reader lists. */
void fm_fuse_done(Fuser *f, Node *n, const char *what) {
  Value *y = &f->g->vals[n->out[0]];
  Type before = y->type;
  Diag d = {0};
  KILN_ASSERT(op_table[n->op].infer(f->g, n, &d));
  KILN_ASSERT(type_equal(&before, &y->type));
  if (f->verbose)
    fprintf(stderr, "fuse: %s <- %s\n", what, n->origin);
  fm_index_users(f);
}

void fm_set_str(Graph *g, Node *n, const char *name, const char *s) {
  node_add_attr(g, n, name, ATTR_STRING)->s = arena_strdup(g->arena, s);
}


/* v is a [dim] tensor of dtype dt (a LayerNorm's scale or bias, a bias). */
bool fm_is_param(const Graph *g, int v, DType dt, int64_t dim) {
  const Type *t = v >= 0 ? &g->vals[v].type : NULL;
  return t && t->dt == dt && t->rank == 1 && t->dims[0] == dim;
}

/* ---- the passes' bodies -------------------------------------------------------- */

bool fm_graph_typed(const Graph *g) {
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nout; j++)
      if (g->nodes[i].out[j] < 0 || g->vals[g->nodes[i].out[j]].type.rank < 0)
        return false;
  return true;
}

bool fm_begin(Fuser *f, Graph *g, bool verbose) {
  *f = (Fuser){.g = g, .verbose = verbose};
  if (!fm_graph_typed(g))
    return false;
  fm_index_users(f);
  return true;
}

bool fm_sweep(Graph *g, const PassOptions *o, int op, bool (*at)(Fuser *f, Node *n)) {
  Fuser f;
  if (!fm_begin(&f, g, o->verbose))
    return true;
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead && (op < 0 || g->nodes[i].op == op))
      at(&f, &g->nodes[i]);
  graph_compact(g);
  return true;
}

int fm_column_sums(Graph *g, int w) {
  const Type t = g->vals[w].type;
  int64_t k = t.dims[0], n = t.dims[1];
  int32_t *cs = arena_alloc(g->arena, sizeof(int32_t) * (size_t)(n ? n : 1));
  const int8_t *wd = g->vals[w].data;
  for (int64_t j = 0; j < n; j++) {
    int32_t sum = 0;
    for (int64_t i = 0; i < k; i++)
      sum += wd[i * n + j];
    cs[j] = sum;
  }
  return ir_const(g, arena_printf(g->arena, "%s.colsum", g->vals[w].name), DT_I32, 1, &n, cs);
}
