/* fuse_transpose.c — the fuse_transpose pass: Transposes folded into a MatMul's operand layouts:
 *
 *   MatMul(Transpose(a, pa), Transpose(b, pb)) [-> Transpose(., py)]
 *     -> PermutedMatMul(a, b) {perm_a=pa, perm_b=pb, perm_y=py}
 *
 * (compiler/ops/permuted_matmul.c), each Transpose optional but one at
 * least, each read by the MatMul alone (the one after it: its only reader).
 * The kernel reads a and b and writes the result through the permuted
 * strides, so the copies the Transposes made disappear: Kᵀ read in place,
 * heads split and merged around a batched MatMul without moving them.
 *
 * Only products of two run-time operands (a constant B goes to the packed
 * GEMM, whose weight the fold pass has already transposed at compile time)
 * and only what attention fusion left: it runs after fuse_attention. */
#include "../ir/ops.h"
#include "fuse_match.h"
#include "passes.h"

/* The Transpose node's permutation as an ints attribute value (ONNX's
 * default, the axes reversed, when absent); NULL when malformed. */
static int64_t *transpose_perm(Graph *g, const Node *t, int rank) {
  const Attr *a = attr_get(t, "perm");
  if (a && (a->kind != ATTR_INTS || a->n != rank))
    return NULL;
  int64_t *p = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(rank > 0 ? rank : 1));
  for (int i = 0; i < rank; i++)
    p[i] = a ? a->ints[i] : rank - 1 - i;
  return p;
}

/* Operand v of the MatMul: the input of its Transpose (taken into m, its
 * perm into *perm) when one made it for the MatMul alone, else v. */
static int through_transpose(Fuser *f, Match *m, int v, int64_t **perm) {
  Graph *g = f->g;
  Node *t = fm_sole(f, v) ? fm_def(f, v, OP_TRANSPOSE) : NULL;
  *perm = t ? transpose_perm(g, t, g->vals[t->in[0]].type.rank) : NULL;
  if (!*perm)
    return v;
  fm_take(m, g, t);
  return t->in[0];
}

static void set_perm(Graph *g, Node *n, const char *name, const int64_t *p, int rank) {
  if (!p)
    return;
  Attr *a = node_add_attr(g, n, name, ATTR_INTS);
  a->n = rank;
  a->ints = arena_dup(g->arena, p, sizeof(int64_t) * (size_t)rank);
}

static bool fuse_matmul_transposes(Fuser *f, Node *mm) {
  Graph *g = f->g;
  int a = mm->in[0], b = mm->in[1];
  if (!fm_float_value(g, a) || g->vals[b].data || g->vals[a].type.rank < 2 || g->vals[b].type.rank < 2)
    return false;
  Match m = {0};
  int64_t *pa = NULL, *pb, *py;
  Node *last = mm, *ty = fm_sole_user(f, mm->out[0], OP_TRANSPOSE);
  int yrank = g->vals[mm->out[0]].type.rank;
  if ((py = ty ? transpose_perm(g, ty, yrank) : NULL) != NULL) {
    fm_take(&m, g, ty);
    last = ty;
  }
  /* A strided and Y strided together measured slower than A's copy (both
   * rows far apart: cache sets collide); the write side wins alone */
  int in[2] = {py ? a : through_transpose(f, &m, a, &pa), through_transpose(f, &m, b, &pb)};
  fm_take(&m, g, mm);
  if (m.n == 1)
    return false;
  int ra = g->vals[in[0]].type.rank, rb = g->vals[in[1]].type.rank;
  Node *n = fm_fuse_into(f, &m, last, OP_PERMUTEDMATMUL, in, 2);
  set_perm(g, n, "perm_a", pa, ra);
  set_perm(g, n, "perm_b", pb, rb);
  set_perm(g, n, "perm_y", py, yrank);
  fm_fuse_done(f, n, "matmul+transposes");
  return true;
}

bool pass_fuse_transpose(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, OP_MATMUL, fuse_matmul_transposes);
}
