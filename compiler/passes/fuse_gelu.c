/* fuse_gelu.c — the fuse_gelu pass: GELU as exports decompose it, back
 * into one Gelu node:
 *
 *   x·0.5·(1 + erf(x/√2))  (Div by √2 or Mul by 1/√2)   -> Gelu
 *   x·0.5·(1 + tanh(√(2/π)·(x + 0.044715·x³)))           -> Gelu {approximate="tanh"}
 *
 * with the products in any association and operand order. √2, 1/√2,
 * √(2/π) and 0.044715 match within 1e-6 (exports round them to f32), the
 * other constants exactly. It runs before fuse_linear, which takes a Gelu
 * into a Linear's activation. */
#include <math.h>
#include <string.h>

#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

static const double SQRT_2_OVER_PI = 0.79788456080286535588; /* √(2/π), GELU's tanh form */

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

static bool gelu_at(Fuser *f, Node *n) {
  return n->op == OP_ERF ? fuse_gelu_erf(f, n) : n->op == OP_TANH ? fuse_gelu_tanh(f, n) : false;
}

bool pass_fuse_gelu(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, -1, gelu_at);
}
