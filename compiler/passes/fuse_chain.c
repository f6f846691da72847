/* fuse_chain.c — the fuse_chain pass, the last fusion: chains of elementwise ops into one ElementwiseChain loop
 * (compiler/ops/elementwise_chain.c):
 *
 *   %a = Mul %x, %scale ; %b = Add %a, %pos ; %y = Relu %b
 *     -> %y = ElementwiseChain %x, %scale, %pos {steps=strings["Mul x0 x1", "Add t0 x2", "Relu t1"]}
 *
 * A chain is a tree of chainable nodes (an op ElementwiseChain can hold,
 * f32 or f64, Where's condition a bool) rooted at a node whose result is
 * not itself swallowed by a chainable reader; it grows backwards through
 * every operand that is read by that node alone (fm_sole) and made by a
 * chainable node with the root's output type, so no intermediate is
 * broadcast to a larger shape (inputs may broadcast: constants, masks).
 * Everything else the tree reads becomes an input of the chain, each once.
 * Two nodes at least; at most MAX_MATCH (the rest stays as it was). It runs
 * after the other fusions, so it takes only what no larger pattern did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ops.h"
#include "../ops/elementwise_chain.h"
#include "passes.h"
#include "fuse_match.h"

#define CHAIN_INPUTS 32

static bool chainable(const Graph *g, const Node *n) {
  int arity = chain_op_arity(n->op);
  if (!arity || n->nin != arity || n->nout != 1)
    return false;
  DType dt = g->vals[n->out[0]].type.dt;
  if (dt != DT_F32 && dt != DT_F64)
    return false;
  for (int i = 0; i < n->nin; i++)
    if (n->in[i] < 0 || g->vals[n->in[i]].type.dt != (n->op == OP_WHERE && i == 0 ? DT_BOOL : dt))
      return false;
  return true;
}

/* Operand i of n may be a step: a float operand made by a chainable node
 * that only n reads, of the chain's type t. */
static Node *absorbable(const Fuser *f, const Node *n, int i, const Type *t) {
  int w = n->in[i];
  if (n->op == OP_WHERE && i == 0)
    return NULL;
  Node *p = fm_sole(f, w) ? fm_def(f, w, -1) : NULL;
  return p && chainable(f->g, p) && type_equal(&f->g->vals[w].type, t) ? p : NULL;
}

/* n is inside a chain that ends later: its one reader would take it. */
static bool swallowed(const Fuser *f, const Node *n) {
  Node *u = fm_sole_user(f, n->out[0], -1);
  if (!u || !chainable(f->g, u))
    return false;
  for (int i = 0; i < u->nin; i++)
    if (u->in[i] == n->out[0])
      return absorbable(f, u, i, &f->g->vals[u->out[0]].type) == n;
  return false;
}

/* Take n and, recursively, the producers of its absorbable operands. */
static void grow(const Fuser *f, Match *m, Node *n, const Type *t) {
  fm_take(m, f->g, n);
  for (int i = 0; i < n->nin; i++) {
    Node *p = absorbable(f, n, i, t);
    if (p && m->n < MAX_MATCH)
      grow(f, m, p, t);
  }
}

static int by_index(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The step text of matched node n: operands as tK (step K, by its place
 * in the sorted match) or xK (input K, added to in[] on first sight). */
static const char *step_text(Graph *g, const Match *m, const Node *n, int *in, int *nin) {
  Buf b = {0};
  buf_puts(&b, op_table[n->op].name);
  for (int i = 0; i < n->nin; i++) {
    int w = n->in[i], k = -1;
    for (int s = 0; s < m->n && k < 0; s++)
      if (g->nodes[m->idx[s]].out[0] == w)
        k = s;
    if (k >= 0) {
      buf_printf(&b, " t%d", k);
      continue;
    }
    for (k = 0; k < *nin && in[k] != w; k++)
      ;
    if (k == *nin)
      in[(*nin)++] = w;
    buf_printf(&b, " x%d", k);
  }
  const char *r = arena_strdup(g->arena, b.s);
  buf_free(&b);
  return r;
}

static bool fuse_elementwise_chain(Fuser *f, Node *root) {
  Graph *g = f->g;
  if (!chainable(g, root) || swallowed(f, root))
    return false;
  Match m = {0};
  grow(f, &m, root, &g->vals[root->out[0]].type);
  if (m.n < 2)
    return false;
  qsort(m.idx, (size_t)m.n, sizeof(int), by_index);
  int in[CHAIN_INPUTS + 3], nin = 0;
  const char **steps = arena_alloc(g->arena, sizeof(char *) * (size_t)m.n);
  for (int s = 0; s < m.n; s++) {
    steps[s] = step_text(g, &m, &g->nodes[m.idx[s]], in, &nin);
    if (nin > CHAIN_INPUTS)
      return false;
  }
  Node *n = fm_fuse_into(f, &m, root, OP_ELEMENTWISECHAIN, in, nin);
  Attr *a = node_add_attr(g, n, "steps", ATTR_STRINGS);
  a->n = m.n;
  a->strings = steps;
  fm_fuse_done(f, n, arena_printf(g->arena, "elementwise chain of %d", m.n));
  return true;
}

bool pass_fuse_chain(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, -1, fuse_elementwise_chain);
}
