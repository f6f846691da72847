/* fuse.c — rewrite the canonical patterns of an inferred, folded graph into
 * single ops, in three sweeps (each can feed the next):
 *
 *   1. GELU:  x·0.5·(1 + erf(x/√2))  (Div by √2 or Mul by 1/√2)  -> Gelu
 *             x·0.5·(1 + tanh(√(2/π)·(x + 0.044715·x³)))          -> Gelu {approximate="tanh"}
 *             with the products in any association and operand order;
 *   2. LayerNorm as PyTorch exports it below opset 17: ReduceMean(x, last
 *      axis) -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div (or Mul
 *      by its Reciprocal) -> Mul gamma [-> Add beta]  -> LayerNormalization;
 *   3. MatMul(x, W[K,N] constant) [-> Add bias[N]] [-> Relu | Gelu]  -> Linear
 *      {act}, and Linear{act="none"} -> Relu | Gelu  -> Linear {act}.
 *
 * A pattern fuses only when each intermediate value is read by the pattern
 * alone (no other user, not a graph output), every constant has the value
 * the decomposition needs (exactly; within 1e-6 for √2, 1/√2, √(2/π) and
 * 0.044715, which exports round to f32), and no broadcast changes a shape.
 * The fused node takes the slot of the pattern's last node and keeps its
 * output, so the node array stays topologically sorted: each input of the
 * fused node was read by a node of the pattern, and all of those come
 * before that slot. Its origin joins the sources' origins with " + "; with
 * -v each fusion prints one line to stderr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops.h"
#include "../passes.h"

#define MAX_MATCH 16

static const double SQRT_2_OVER_PI = 0.79788456080286535588; /* √(2/π), GELU's tanh form */

typedef struct Fuser {
  Graph *g;
  bool verbose;
  int *ustart; /* readers of value v: ulist[ustart[v] .. ustart[v + 1]), one per input slot */
  int *ulist;
  int *fill;   /* scratch for index_users */
} Fuser;

typedef struct Match {
  int idx[MAX_MATCH]; /* node indices */
  int n;
} Match;

/* ---- the graph as the matchers see it -------------------------------------- */

/* Rebuild the reader lists from the live nodes (after every rewrite, so
 * matchers never see a stale use). The arrays are sized once: rewrites only
 * remove edges. */
static void index_users(Fuser *f) {
  Graph *g = f->g;
  int nedges = 0;
  for (int i = 0; i < g->nnodes; i++)
    nedges += g->nodes[i].nin;
  if (!f->ustart) {
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

static int nreaders(const Fuser *f, int v) { return f->ustart[v + 1] - f->ustart[v]; }

/* The live node of op `op` (-1: any) that produces v, or NULL. */
static Node *def(const Fuser *f, int v, int op) {
  if (v < 0 || f->g->vals[v].producer < 0)
    return NULL;
  Node *n = &f->g->nodes[f->g->vals[v].producer];
  return !n->dead && (op < 0 || n->op == op) ? n : NULL;
}

/* v is an intermediate the pattern may swallow: read once, by one node. */
static bool sole(const Fuser *f, int v) {
  return v >= 0 && !f->g->vals[v].is_output && nreaders(f, v) == 1 && def(f, v, -1);
}

/* The one node of op `op` (-1: any) reading v, when v is sole; else NULL. */
static Node *sole_user(const Fuser *f, int v, int op) {
  if (!sole(f, v))
    return NULL;
  Node *n = &f->g->nodes[f->ulist[f->ustart[v]]];
  return (op < 0 || n->op == op) && n->nout == 1 ? n : NULL;
}

/* The operand of binary node n that is not v (v itself for n(v, v)); -1 if
 * n does not read v. */
static int other(const Node *n, int v) {
  if (n->nin != 2)
    return -1;
  return n->in[0] == v ? n->in[1] : n->in[1] == v ? n->in[0] : -1;
}

/* v is a one-element numeric constant (Pow's exponent may be an integer);
 * its value in *x. */
static bool scalar_const(const Graph *g, int v, double *x) {
  const Value *c = v >= 0 ? &g->vals[v] : NULL;
  if (!c || !c->data || c->type.dt == DT_BOOL || type_numel(&c->type) != 1)
    return false;
  DType dt = c->type.dt;
  *x = dt_is_float(dt) ? el_get_f(dt, c->data, 0)
       : dt_is_signed_int(dt) ? (double)el_get_i(dt, c->data, 0) : (double)el_get_u(dt, c->data, 0);
  return true;
}

/* v is a one-element constant within rtol of want (0: exactly). */
static bool const_is(const Graph *g, int v, double want, double rtol) {
  double x;
  return scalar_const(g, v, &x) && (rtol == 0 ? x == want : fabs(x - want) <= rtol * fabs(want));
}

static bool float_value(const Graph *g, int v) {
  if (v < 0)
    return false;
  DType dt = g->vals[v].type.dt;
  return g->vals[v].type.rank >= 0 && (dt == DT_F32 || dt == DT_F64);
}

static void take(Match *m, const Graph *g, const Node *n) {
  KILN_ASSERT(m->n < MAX_MATCH);
  m->idx[m->n++] = (int)(n - g->nodes);
}

/* Every matched node's output has type t (no broadcast grew a shape). */
static bool outputs_are(const Graph *g, const Match *m, const Type *t) {
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
static Node *fuse_into(Fuser *f, Match *m, const Node *last, int op, const int *in, int nin) {
  Graph *g = f->g;
  qsort(m->idx, (size_t)m->n, sizeof(int), by_index);
  KILN_ASSERT(&g->nodes[m->idx[m->n - 1]] == last);
  Buf b = {0};
  for (int i = 0; i < m->n; i++) {
    const Node *s = &g->nodes[m->idx[i]];
    buf_printf(&b, "%s%s", i ? " + " : "", s->origin ? s->origin : s->name);
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
static void fuse_done(Fuser *f, Node *n, const char *what) {
  Value *y = &f->g->vals[n->out[0]];
  Type before = y->type;
  Diag d = {0};
  KILN_ASSERT(op_table[n->op].infer(f->g, n, &d));
  KILN_ASSERT(type_equal(&before, &y->type));
  if (f->verbose)
    fprintf(stderr, "fuse: %s <- %s\n", what, n->origin);
  index_users(f);
}

static void set_str(Graph *g, Node *n, const char *name, const char *s) {
  node_add_attr(g, n, name, ATTR_STRING)->s = arena_strdup(g->arena, s);
}

/* ---- 1. GELU ------------------------------------------------------------------ */

/* x·0.5·p, p being the (1 + erf(..)) or (1 + tanh(..)) just matched, in the
 * orders exports write it: (x·0.5)·p or (x/2)·p [HF], (x·p)·0.5 [PyTorch
 * erf], 0.5·(x·p) [PyTorch tanh], (x·p)/2, (p·0.5)·x. Takes the nodes into
 * m and returns the last one, or NULL. */
static Node *match_half_x(Fuser *f, Match *m, int x, int p) {
  Graph *g = f->g;
  Node *u = sole_user(f, p, OP_MUL);
  if (!u)
    return NULL;
  int o = other(u, p), uo = u->out[0];
  take(m, g, u);
  if (o == x) {
    Node *v = sole_user(f, uo, -1);
    if (v && ((v->op == OP_MUL && const_is(g, other(v, uo), 0.5, 0)) ||
              (v->op == OP_DIV && v->in[0] == uo && const_is(g, v->in[1], 2, 0)))) {
      take(m, g, v);
      return v;
    }
    return NULL;
  }
  if (const_is(g, o, 0.5, 0)) {
    Node *v = sole_user(f, uo, OP_MUL);
    if (v && other(v, uo) == x) {
      take(m, g, v);
      return v;
    }
    return NULL;
  }
  Node *h = sole(f, o) ? def(f, o, -1) : NULL;
  if (h && ((h->op == OP_MUL && other(h, x) >= 0 && const_is(g, other(h, x), 0.5, 0)) ||
            (h->op == OP_DIV && h->in[0] == x && const_is(g, h->in[1], 2, 0)))) {
    take(m, g, h);
    return u;
  }
  return NULL;
}

/* After the Erf or Tanh node t (taken): 1 + t, then x·0.5·(1 + t). */
static bool finish_gelu(Fuser *f, Match *m, Node *t, int x, const char *approx) {
  Graph *g = f->g;
  Node *a = sole_user(f, t->out[0], OP_ADD);
  if (!a || !const_is(g, other(a, t->out[0]), 1, 0))
    return false;
  take(m, g, a);
  Node *last = match_half_x(f, m, x, a->out[0]);
  if (!last || !outputs_are(g, m, &g->vals[x].type))
    return false;
  Node *n = fuse_into(f, m, last, OP_GELU, &x, 1);
  set_str(g, n, "approximate", approx);
  fuse_done(f, n, strcmp(approx, "tanh") ? "gelu" : "gelu_tanh");
  return true;
}

/* Erf(x / √2) or Erf(x · 1/√2), from the Erf node. */
static bool fuse_gelu_erf(Fuser *f, Node *e) {
  Graph *g = f->g;
  Node *s = sole(f, e->in[0]) ? def(f, e->in[0], -1) : NULL;
  if (!s)
    return false;
  int x = -1;
  if (s->op == OP_DIV && const_is(g, s->in[1], sqrt(2.0), 1e-6))
    x = s->in[0];
  else if (s->op == OP_MUL && const_is(g, s->in[1], sqrt(0.5), 1e-6))
    x = s->in[0];
  else if (s->op == OP_MUL && const_is(g, s->in[0], sqrt(0.5), 1e-6))
    x = s->in[1];
  if (x < 0 || !float_value(g, x))
    return false;
  Match m = {0};
  take(&m, g, s);
  take(&m, g, e);
  return finish_gelu(f, &m, e, x, "none");
}

/* 0.044715·x³ with x³ = Pow(x, 3), x·(x·x) or (x·x)·x; takes the nodes. */
static bool match_kappa_cube(Fuser *f, Match *m, int c, int x) {
  Graph *g = f->g;
  Node *km = sole(f, c) ? def(f, c, OP_MUL) : NULL;
  if (!km)
    return false;
  int cube = const_is(g, km->in[0], 0.044715, 1e-6) ? km->in[1]
             : const_is(g, km->in[1], 0.044715, 1e-6) ? km->in[0] : -1;
  Node *cn = sole(f, cube) ? def(f, cube, -1) : NULL;
  if (!cn)
    return false;
  take(m, g, km);
  take(m, g, cn);
  if (cn->op == OP_POW)
    return cn->in[0] == x && const_is(g, cn->in[1], 3, 0);
  if (cn->op != OP_MUL)
    return false;
  int sq = other(cn, x);
  Node *sn = sq != x && sole(f, sq) ? def(f, sq, OP_MUL) : NULL;
  if (!sn || sn->in[0] != x || sn->in[1] != x)
    return false;
  take(m, g, sn);
  return true;
}

/* Tanh(√(2/π) · (x + 0.044715·x³)), from the Tanh node. */
static bool fuse_gelu_tanh(Fuser *f, Node *t) {
  Graph *g = f->g;
  Node *bm = sole(f, t->in[0]) ? def(f, t->in[0], OP_MUL) : NULL;
  if (!bm)
    return false;
  int inner = const_is(g, bm->in[0], SQRT_2_OVER_PI, 1e-6) ? bm->in[1]
              : const_is(g, bm->in[1], SQRT_2_OVER_PI, 1e-6) ? bm->in[0] : -1;
  Node *ad = sole(f, inner) ? def(f, inner, OP_ADD) : NULL;
  if (!ad)
    return false;
  for (int i = 0; i < 2; i++) {
    int x = ad->in[i];
    Match m = {0};
    take(&m, g, bm);
    take(&m, g, ad);
    take(&m, g, t);
    if (float_value(g, x) && match_kappa_cube(f, &m, ad->in[1 - i], x))
      return finish_gelu(f, &m, t, x, "tanh");
  }
  return false;
}

/* ---- 2. LayerNorm ------------------------------------------------------------- */

/* r is ReduceMean over exactly the last axis of a rank-`rank` input,
 * keeping dims (axes as the attribute, or as a constant input). */
static bool mean_last_axis(const Graph *g, const Node *r, int rank) {
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

/* The node that turns d = x - mean into d / √(var + eps) given sd = the
 * Sqrt's output: Div(d, sd), or Mul(d, r) with r = Reciprocal(sd) or 1/sd
 * (taken into m). NULL if none. */
static Node *match_normalize(Fuser *f, Match *m, int d, int sd) {
  Graph *g = f->g;
  Node *u = sole_user(f, sd, -1);
  if (!u)
    return NULL;
  if (u->op == OP_DIV && u->in[0] == d && u->in[1] == sd)
    return u;
  bool recip = u->op == OP_RECIPROCAL || (u->op == OP_DIV && u->in[1] == sd && const_is(g, u->in[0], 1, 0));
  Node *nm = recip ? sole_user(f, u->out[0], OP_MUL) : NULL;
  if (!nm || other(nm, u->out[0]) != d)
    return NULL;
  take(m, g, u);
  return nm;
}

/* v is a [D] tensor of dtype dt (LayerNorm's scale or bias). */
static bool is_param(const Graph *g, int v, DType dt, int64_t dim) {
  const Type *t = v >= 0 ? &g->vals[v].type : NULL;
  return t && t->dt == dt && t->rank == 1 && t->dims[0] == dim;
}

static bool fuse_layernorm(Fuser *f, Node *r1) {
  Graph *g = f->g;
  int x = r1->in[0];
  const Type *xt = &g->vals[x].type;
  if (!float_value(g, x) || xt->rank < 1 || !mean_last_axis(g, r1, xt->rank))
    return false;
  Type rt = *xt; /* the statistics' shape: x with the last dim 1 */
  rt.dims[rt.rank - 1] = 1;
  Match m = {0}, mr = {0}; /* mr: nodes of the reduced shape rt */
  take(&mr, g, r1);
  int mean = r1->out[0];
  Node *sub = sole_user(f, mean, OP_SUB);
  if (!sub || sub->in[0] != x || sub->in[1] != mean)
    return false;
  take(&m, g, sub);
  int d = sub->out[0];
  /* d = x - mean feeds the square and the normalisation, nothing else */
  Node *sq = NULL;
  for (int k = f->ustart[d]; k < f->ustart[d + 1] && !sq; k++) {
    Node *u = &g->nodes[f->ulist[k]];
    if ((u->op == OP_POW && u->in[0] == d && const_is(g, u->in[1], 2, 0)) ||
        (u->op == OP_MUL && u->in[0] == d && u->in[1] == d))
      sq = u;
  }
  if (!sq || g->vals[d].is_output || nreaders(f, d) != (sq->op == OP_MUL ? 3 : 2))
    return false;
  take(&m, g, sq);
  Node *r2 = sole_user(f, sq->out[0], OP_REDUCEMEAN);
  if (!r2 || !mean_last_axis(g, r2, xt->rank))
    return false;
  take(&mr, g, r2);
  Node *ae = sole_user(f, r2->out[0], OP_ADD);
  double epsilon;
  if (!ae || !scalar_const(g, other(ae, r2->out[0]), &epsilon))
    return false;
  take(&mr, g, ae);
  Node *sqrt_n = sole_user(f, ae->out[0], OP_SQRT);
  if (!sqrt_n)
    return false;
  take(&mr, g, sqrt_n);
  Node *norm = match_normalize(f, &mr, d, sqrt_n->out[0]);
  if (!norm)
    return false;
  take(&m, g, norm);
  Node *gm = sole_user(f, norm->out[0], OP_MUL);
  int gamma = gm ? other(gm, norm->out[0]) : -1;
  int64_t dim = xt->dims[xt->rank - 1];
  if (!gm || !is_param(g, gamma, xt->dt, dim))
    return false;
  take(&m, g, gm);
  Node *bb = sole_user(f, gm->out[0], OP_ADD);
  int beta = bb ? other(bb, gm->out[0]) : -1;
  if (bb && is_param(g, beta, xt->dt, dim))
    take(&m, g, bb);
  else
    beta = -1;
  if (!outputs_are(g, &m, xt) || !outputs_are(g, &mr, &rt))
    return false;
  for (int i = 0; i < mr.n; i++)
    take(&m, g, &g->nodes[mr.idx[i]]);
  int in[3] = {x, gamma, beta};
  Node *n = fuse_into(f, &m, beta >= 0 ? bb : gm, OP_LAYERNORM, in, beta >= 0 ? 3 : 2);
  node_add_attr(g, n, "axis", ATTR_INT)->i = -1;
  node_add_attr(g, n, "epsilon", ATTR_FLOAT)->f = epsilon;
  if (xt->dt == DT_F64) /* statistics in f64, as the decomposition computed them */
    node_add_attr(g, n, "stash_type", ATTR_INT)->i = DT_F64;
  fuse_done(f, n, "layernorm");
  return true;
}

/* ---- 3. Linear ------------------------------------------------------------------ */

/* MatMul(x, W constant [K,N]) or Linear{act="none"}, then an Add of a [N]
 * bias (when there is none yet), then Relu or Gelu. */
static bool fuse_linear(Fuser *f, Node *n) {
  Graph *g = f->g;
  int x = n->in[0], w = n->in[1], bias = n->op == OP_LINEAR && node_has_in(n, 2) ? n->in[2] : -1;
  if (x < 0 || w < 0)
    return false;
  const Value *wv = &g->vals[w];
  if (!float_value(g, x) || wv->type.dt != g->vals[x].type.dt || wv->type.rank != 2)
    return false;
  if (n->op == OP_MATMUL ? !wv->data || g->vals[x].type.rank < 1
                         : strcmp(attr_str(n, "act", "none"), "none") != 0)
    return false;
  Match m = {0};
  take(&m, g, n);
  int y = n->out[0];
  const Type *yt = &g->vals[y].type;
  Node *last = n, *add = bias < 0 ? sole_user(f, y, OP_ADD) : NULL;
  int b = add ? other(add, y) : -1;
  if (add && is_param(g, b, yt->dt, wv->type.dims[1])) {
    bias = b;
    take(&m, g, add);
    y = add->out[0];
    last = add;
  }
  const char *act = "none";
  Node *an = sole_user(f, y, -1);
  if (an && an->op == OP_RELU)
    act = "relu";
  else if (an && an->op == OP_GELU)
    act = !strcmp(attr_str(an, "approximate", "none"), "tanh") ? "gelu_tanh" : "gelu";
  if (strcmp(act, "none")) {
    take(&m, g, an);
    last = an;
  }
  if (m.n == 1 || !outputs_are(g, &m, yt))
    return false;
  int in[3] = {x, w, bias};
  Node *fn = fuse_into(f, &m, last, OP_LINEAR, in, bias >= 0 ? 3 : 2);
  set_str(g, fn, "act", act);
  fuse_done(f, fn, strcmp(act, "none") ? arena_printf(g->arena, "linear+%s", act) : "linear");
  return true;
}

/* ---- the pass ------------------------------------------------------------------- */

static bool graph_typed(const Graph *g) {
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i].nout; j++)
      if (g->nodes[i].out[j] < 0 || g->vals[g->nodes[i].out[j]].type.rank < 0)
        return false;
  return true;
}

bool pass_fuse(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  if (!graph_typed(g)) /* fusion needs shapes: run after infer */
    return true;
  Fuser f = {.g = g, .verbose = o->verbose};
  index_users(&f);
  for (int sweep = 0; sweep < 3; sweep++) {
    for (int i = 0; i < g->nnodes; i++) {
      Node *n = &g->nodes[i];
      if (n->dead)
        continue;
      if (sweep == 0 && n->op == OP_ERF)
        fuse_gelu_erf(&f, n);
      else if (sweep == 0 && n->op == OP_TANH)
        fuse_gelu_tanh(&f, n);
      else if (sweep == 1 && n->op == OP_REDUCEMEAN)
        fuse_layernorm(&f, n);
      else if (sweep == 2 && (n->op == OP_MATMUL || n->op == OP_LINEAR))
        fuse_linear(&f, n);
    }
  }
  graph_compact(g);
  return true;
}
