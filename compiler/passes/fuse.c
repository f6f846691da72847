/* fuse.c — rewrite the canonical patterns of an inferred, folded graph into
 * single ops, in sweeps (each can feed the next):
 *
 *   1. GELU:  x·0.5·(1 + erf(x/√2))  (Div by √2 or Mul by 1/√2)  -> Gelu
 *             x·0.5·(1 + tanh(√(2/π)·(x + 0.044715·x³)))          -> Gelu {approximate="tanh"}
 *             with the products in any association and operand order;
 *   2. LayerNorm as PyTorch exports it below opset 17: ReduceMean(x, last
 *      axis) -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div (or Mul
 *      by its Reciprocal) -> Mul gamma [-> Add beta]  -> LayerNormalization;
 *   3. MatMul(x, W[K,N] constant) [-> Add bias[N]] [-> Relu | Gelu]  -> Linear
 *      {act}, and Linear{act="none"} -> Relu | Gelu  -> Linear {act};
 *   then, from files of their own (fuse_sweeps.h), after Gemm by a constant
 *   -> Linear and Transposes of dims of 1 -> views (fuse_normalize, first):
 *   4. Add -> LayerNormalization  -> AddLayerNorm (fuse_residual.c);
 *   5. Linear [-> views] -> Add residual  -> Linear with a residual input;
 *   6. Transposes around a MatMul of run-time operands  -> PermutedMatMul
 *      (fuse_transpose.c);
 *   7. chains of elementwise ops  -> ElementwiseChain (fuse_chain.c), last.
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

#include "../build.h"
#include "../ops.h"
#include "../passes.h"
#include "fuse_attention.h"
#include "fuse_match.h"
#include "fuse_sweeps.h"

static const double SQRT_2_OVER_PI = 0.79788456080286535588; /* √(2/π), GELU's tanh form */

/* ---- 1. GELU ------------------------------------------------------------------ */

/* x·0.5·p, p being the (1 + erf(..)) or (1 + tanh(..)) just matched, in the
 * orders exports write it: (x·0.5)·p or (x/2)·p [HF], (x·p)·0.5 [PyTorch
 * erf], 0.5·(x·p) [PyTorch tanh], (x·p)/2, (p·0.5)·x. Takes the nodes into
 * m and returns the last one, or NULL. */
static Node *match_half_x(Fuser *f, Match *m, int x, int p) {
  Graph *g = f->g;
  Node *u = fm_sole_user(f, p, OP_MUL);
  if (!u)
    return NULL;
  int o = fm_other(u, p), uo = u->out[0];
  fm_take(m, g, u);
  if (o == x) {
    Node *v = fm_sole_user(f, uo, -1);
    if (v && ((v->op == OP_MUL && fm_const_is(g, fm_other(v, uo), 0.5, 0)) ||
              (v->op == OP_DIV && v->in[0] == uo && fm_const_is(g, v->in[1], 2, 0)))) {
      fm_take(m, g, v);
      return v;
    }
    return NULL;
  }
  if (fm_const_is(g, o, 0.5, 0)) {
    Node *v = fm_sole_user(f, uo, OP_MUL);
    if (v && fm_other(v, uo) == x) {
      fm_take(m, g, v);
      return v;
    }
    return NULL;
  }
  Node *h = fm_sole(f, o) ? fm_def(f, o, -1) : NULL;
  if (h && ((h->op == OP_MUL && fm_other(h, x) >= 0 && fm_const_is(g, fm_other(h, x), 0.5, 0)) ||
            (h->op == OP_DIV && h->in[0] == x && fm_const_is(g, h->in[1], 2, 0)))) {
    fm_take(m, g, h);
    return u;
  }
  return NULL;
}

/* After the Erf or Tanh node t (taken): 1 + t, then x·0.5·(1 + t). */
static bool finish_gelu(Fuser *f, Match *m, Node *t, int x, const char *approx) {
  Graph *g = f->g;
  Node *a = fm_sole_user(f, t->out[0], OP_ADD);
  if (!a || !fm_const_is(g, fm_other(a, t->out[0]), 1, 0))
    return false;
  fm_take(m, g, a);
  Node *last = match_half_x(f, m, x, a->out[0]);
  if (!last || !fm_outputs_are(g, m, &g->vals[x].type))
    return false;
  Node *n = fm_fuse_into(f, m, last, OP_GELU, &x, 1);
  fm_set_str(g, n, "approximate", approx);
  fm_fuse_done(f, n, strcmp(approx, "tanh") ? "gelu" : "gelu_tanh");
  return true;
}

/* Erf(x / √2) or Erf(x · 1/√2), from the Erf node. */
static bool fuse_gelu_erf(Fuser *f, Node *e) {
  Graph *g = f->g;
  Node *s = fm_sole(f, e->in[0]) ? fm_def(f, e->in[0], -1) : NULL;
  if (!s)
    return false;
  int x = -1;
  if (s->op == OP_DIV && fm_const_is(g, s->in[1], sqrt(2.0), 1e-6))
    x = s->in[0];
  else if (s->op == OP_MUL && fm_const_is(g, s->in[1], sqrt(0.5), 1e-6))
    x = s->in[0];
  else if (s->op == OP_MUL && fm_const_is(g, s->in[0], sqrt(0.5), 1e-6))
    x = s->in[1];
  if (x < 0 || !fm_float_value(g, x))
    return false;
  Match m = {0};
  fm_take(&m, g, s);
  fm_take(&m, g, e);
  return finish_gelu(f, &m, e, x, "none");
}

/* 0.044715·x³ with x³ = Pow(x, 3), x·(x·x) or (x·x)·x; takes the nodes. */
static bool match_kappa_cube(Fuser *f, Match *m, int c, int x) {
  Graph *g = f->g;
  Node *km = fm_sole(f, c) ? fm_def(f, c, OP_MUL) : NULL;
  if (!km)
    return false;
  int cube = fm_const_is(g, km->in[0], 0.044715, 1e-6) ? km->in[1]
             : fm_const_is(g, km->in[1], 0.044715, 1e-6) ? km->in[0] : -1;
  Node *cn = fm_sole(f, cube) ? fm_def(f, cube, -1) : NULL;
  if (!cn)
    return false;
  fm_take(m, g, km);
  fm_take(m, g, cn);
  if (cn->op == OP_POW)
    return cn->in[0] == x && fm_const_is(g, cn->in[1], 3, 0);
  if (cn->op != OP_MUL)
    return false;
  int sq = fm_other(cn, x);
  Node *sn = sq != x && fm_sole(f, sq) ? fm_def(f, sq, OP_MUL) : NULL;
  if (!sn || sn->in[0] != x || sn->in[1] != x)
    return false;
  fm_take(m, g, sn);
  return true;
}

/* Tanh(√(2/π) · (x + 0.044715·x³)), from the Tanh node. */
static bool fuse_gelu_tanh(Fuser *f, Node *t) {
  Graph *g = f->g;
  Node *bm = fm_sole(f, t->in[0]) ? fm_def(f, t->in[0], OP_MUL) : NULL;
  if (!bm)
    return false;
  int inner = fm_const_is(g, bm->in[0], SQRT_2_OVER_PI, 1e-6) ? bm->in[1]
              : fm_const_is(g, bm->in[1], SQRT_2_OVER_PI, 1e-6) ? bm->in[0] : -1;
  Node *ad = fm_sole(f, inner) ? fm_def(f, inner, OP_ADD) : NULL;
  if (!ad)
    return false;
  for (int i = 0; i < 2; i++) {
    int x = ad->in[i];
    Match m = {0};
    fm_take(&m, g, bm);
    fm_take(&m, g, ad);
    fm_take(&m, g, t);
    if (fm_float_value(g, x) && match_kappa_cube(f, &m, ad->in[1 - i], x))
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

/* v is a [D] tensor of dtype dt (LayerNorm's scale or bias). */
static bool is_param(const Graph *g, int v, DType dt, int64_t dim) {
  const Type *t = v >= 0 ? &g->vals[v].type : NULL;
  return t && t->dt == dt && t->rank == 1 && t->dims[0] == dim;
}

static bool fuse_layernorm(Fuser *f, Node *r1) {
  Graph *g = f->g;
  int x = r1->in[0];
  const Type *xt = &g->vals[x].type;
  if (!fm_float_value(g, x) || xt->rank < 1 || !mean_last_axis(g, r1, xt->rank))
    return false;
  Type rt = *xt; /* the statistics' shape: x with the last dim 1 */
  rt.dims[rt.rank - 1] = 1;
  Match m = {0}, mr = {0}; /* mr: nodes of the reduced shape rt */
  fm_take(&mr, g, r1);
  int mean = r1->out[0];
  Node *sub = fm_sole_user(f, mean, OP_SUB);
  if (!sub || sub->in[0] != x || sub->in[1] != mean)
    return false;
  fm_take(&m, g, sub);
  int d = sub->out[0];
  /* d = x - mean feeds the square and the normalisation, nothing else */
  Node *sq = NULL;
  for (int k = f->ustart[d]; k < f->ustart[d + 1] && !sq; k++) {
    Node *u = &g->nodes[f->ulist[k]];
    if ((u->op == OP_POW && u->in[0] == d && fm_const_is(g, u->in[1], 2, 0)) ||
        (u->op == OP_MUL && u->in[0] == d && u->in[1] == d))
      sq = u;
  }
  if (!sq || g->vals[d].is_output || fm_nreaders(f, d) != (sq->op == OP_MUL ? 3 : 2))
    return false;
  fm_take(&m, g, sq);
  Node *r2 = fm_sole_user(f, sq->out[0], OP_REDUCEMEAN);
  if (!r2 || !mean_last_axis(g, r2, xt->rank))
    return false;
  fm_take(&mr, g, r2);
  Node *ae = fm_sole_user(f, r2->out[0], OP_ADD);
  double epsilon;
  if (!ae || !fm_scalar_const(g, fm_other(ae, r2->out[0]), &epsilon))
    return false;
  fm_take(&mr, g, ae);
  Node *sqrt_n = fm_sole_user(f, ae->out[0], OP_SQRT);
  if (!sqrt_n)
    return false;
  fm_take(&mr, g, sqrt_n);
  Node *norm = match_normalize(f, &mr, d, sqrt_n->out[0]);
  if (!norm)
    return false;
  fm_take(&m, g, norm);
  Node *gm = fm_sole_user(f, norm->out[0], OP_MUL);
  int gamma = gm ? fm_other(gm, norm->out[0]) : -1;
  int64_t dim = xt->dims[xt->rank - 1];
  if (!gm || !is_param(g, gamma, xt->dt, dim))
    return false;
  fm_take(&m, g, gm);
  Node *bb = fm_sole_user(f, gm->out[0], OP_ADD);
  int beta = bb ? fm_other(bb, gm->out[0]) : -1;
  if (bb && is_param(g, beta, xt->dt, dim))
    fm_take(&m, g, bb);
  else
    beta = -1;
  if (!fm_outputs_are(g, &m, xt) || !fm_outputs_are(g, &mr, &rt))
    return false;
  for (int i = 0; i < mr.n; i++)
    fm_take(&m, g, &g->nodes[mr.idx[i]]);
  int in[3] = {x, gamma, beta};
  Node *n = fm_fuse_into(f, &m, beta >= 0 ? bb : gm, OP_LAYERNORM, in, beta >= 0 ? 3 : 2);
  node_add_attr(g, n, "axis", ATTR_INT)->i = -1;
  node_add_attr(g, n, "epsilon", ATTR_FLOAT)->f = epsilon;
  if (xt->dt == DT_F64) /* statistics in f64, as the decomposition computed them */
    node_add_attr(g, n, "stash_type", ATTR_INT)->i = DT_F64;
  fm_fuse_done(f, n, "layernorm");
  return true;
}

/* ---- 3. Linear ------------------------------------------------------------------ */

/* An ONNX int8 weight, W = DequantizeLinear(Wq i8[K,N] constant, scale
 * f32 (a scalar, or [N] along axis 1), zero point absent or 0), read only
 * by this product: what the int8 Linear computes (Wq · W_scale[n]) with no
 * f32 copy of W. The DequantizeLinear node, or NULL; *scale: W_scale [N]. */
static Node *int8_weight(Fuser *f, int w, int *scale) {
  Graph *g = f->g;
  Node *dq = fm_def(f, w, OP_DEQUANTIZELINEAR);
  if (!dq || !fm_sole(f, w))
    return NULL;
  const Value *q = &g->vals[dq->in[0]], *s = &g->vals[dq->in[1]];
  const Value *zp = node_has_in(dq, 2) ? &g->vals[dq->in[2]] : NULL;
  if (!q->data || q->type.dt != DT_I8 || q->type.rank != 2 || !s->data)
    return NULL;
  int64_t nn = q->type.dims[1], ns = type_numel(&s->type);
  int axis = 1;
  if (ns != 1 && (!axis_norm(attr_int(dq, "axis", 1), 2, &axis) || axis != 1 || ns != nn))
    return NULL;
  for (int64_t i = 0; zp && zp->data && i < type_numel(&zp->type); i++)
    if (el_get_i(zp->type.dt, zp->data, i) != 0)
      return NULL;
  if (zp && !zp->data)
    return NULL;
  *scale = dq->in[1];
  if (ns == 1 || s->type.rank != 1) { /* W_scale is [N]: spread a per-tensor scale */
    float *v = arena_alloc(g->arena, sizeof(float) * (size_t)(nn ? nn : 1));
    for (int64_t i = 0; i < nn; i++)
      v[i] = ((const float *)s->data)[ns == 1 ? 0 : i];
    *scale = ir_const(g, arena_printf(g->arena, "%s_per_column", s->name), DT_F32, 1, &nn, v);
  }
  return dq;
}

/* MatMul(x, W constant [K,N]) or Linear{act="none"}, then an Add of a [N]
 * bias (when there is none yet), then Relu or Gelu. W may also be an ONNX
 * int8 weight (int8_weight): the Linear then takes Wq and its W_scale. */
static bool fuse_linear(Fuser *f, Node *n) {
  Graph *g = f->g;
  int x = n->in[0], w = n->in[1], bias = n->op == OP_LINEAR && node_has_in(n, 2) ? n->in[2] : -1;
  if (x < 0 || w < 0 || (n->op == OP_LINEAR && node_has_in(n, 3))) /* act comes before a residual */
    return false;
  int wscale = n->op == OP_LINEAR && node_has_in(n, 4) ? n->in[4] : -1;
  Node *dq = n->op == OP_MATMUL && !g->vals[w].data ? int8_weight(f, w, &wscale) : NULL;
  const Value *wv = &g->vals[w];
  if (!fm_float_value(g, x) || wv->type.dt != g->vals[x].type.dt || wv->type.rank != 2)
    return false;
  if (n->op == OP_MATMUL ? (!wv->data && !dq) || g->vals[x].type.rank < 1
                         : strcmp(attr_str(n, "act", "none"), "none") != 0)
    return false;
  Match m = {0};
  fm_take(&m, g, n);
  int y = n->out[0];
  const Type *yt = &g->vals[y].type;
  Node *last = n, *add = bias < 0 ? fm_sole_user(f, y, OP_ADD) : NULL;
  int b = add ? fm_other(add, y) : -1;
  if (add && is_param(g, b, yt->dt, wv->type.dims[1])) {
    bias = b;
    fm_take(&m, g, add);
    y = add->out[0];
    last = add;
  }
  const char *act = "none";
  Node *an = fm_sole_user(f, y, -1);
  if (an && an->op == OP_RELU)
    act = "relu";
  else if (an && an->op == OP_GELU)
    act = !strcmp(attr_str(an, "approximate", "none"), "tanh") ? "gelu_tanh" : "gelu";
  if (strcmp(act, "none")) {
    fm_take(&m, g, an);
    last = an;
  }
  if ((m.n == 1 && !dq) || !fm_outputs_are(g, &m, yt))
    return false;
  if (dq) /* after the type check: its output is W's [K,N] */
    fm_take(&m, g, dq);
  int in[5] = {x, dq ? dq->in[0] : w, bias, -1, wscale};
  Node *fn = fm_fuse_into(f, &m, last, OP_LINEAR, in, wscale >= 0 ? 5 : bias >= 0 ? 3 : 2);
  fm_set_str(g, fn, "act", act);
  fm_fuse_done(f, fn, strcmp(act, "none") ? arena_printf(g->arena, "linear+%s", act) : "linear");
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
  fuse_normalize(g, o->verbose); /* fuse_residual.c: Gemm -> Linear, unit transposes -> views */
  Fuser f = {.g = g, .verbose = o->verbose};
  fm_index_users(&f);
  fuse_attention_sweep(&f); /* fuse_attention.c: first, before any sweep splits its scale or mask */
  for (int sweep = 0; sweep < 7; sweep++) {
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
      else if (sweep == 3 && n->op == OP_LAYERNORM) /* fuse_residual.c */
        fuse_add_layernorm(&f, n);
      else if (sweep == 4 && n->op == OP_ADD)
        fuse_linear_residual(&f, n);
      else if (sweep == 5 && n->op == OP_MATMUL) /* fuse_transpose.c */
        fuse_matmul_transposes(&f, n);
      else if (sweep == 6) /* fuse_chain.c: last, it takes what no larger pattern did */
        fuse_elementwise_chain(&f, n);
    }
  }
  graph_compact(g);
  return true;
}
