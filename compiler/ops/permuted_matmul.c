/* permuted_matmul.c — kiln's PermutedMatMul: a MatMul whose operands and
 * result are read and written through permuted strides, so the Transposes
 * around it cost nothing (made by compiler/passes/fuse_transpose.c):
 *
 *   PermutedMatMul(A, B) {perm_a=[..], perm_b=[..], perm_y=[..]} -> Y
 *     Y = Transpose(MatMul(Transpose(A, perm_a), Transpose(B, perm_b)), perm_y)
 *
 * Each perm is optional (absent: the identity). After their perms A and B
 * have rank >= 2 and numpy matmul rules hold (batch dims broadcast); f32 or
 * f64. Typical: K read as Kᵀ (perm_b=[0,2,1]) outside attention, heads
 * split by a Transpose before a batched MatMul (perm_a=[1,0,2]) and merged
 * by one after it (perm_y=[1,0,2]).
 *
 * _eval sums in double and rounds once, as MatMul's does; _emit loops over
 * the batch dims and runs templates/matmul_strided.c.in on each matrix,
 * which gathers tiles of B into a contiguous stack tile and writes Y
 * through its strides. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* The message of a shape that does not fit, into err; false. */
static bool misfit(char *err, size_t en, const char *fmt, ...) KILN_PRINTF(3, 4);
static bool misfit(char *err, size_t en, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, en, fmt, ap);
  va_end(ap);
  return false;
}

/* A perm attribute of a rank-`rank` tensor into p (identity when absent);
 * false when it is not a permutation of 0 .. rank-1. */
static bool read_perm(const Node *n, const char *name, int rank, int *p) {
  const Attr *a = attr_get(n, name);
  for (int i = 0; i < rank; i++)
    p[i] = i;
  if (!a)
    return true;
  if (a->kind != ATTR_INTS || a->n != rank)
    return false;
  bool seen[MAX_RANK] = {false};
  for (int i = 0; i < rank; i++) {
    if (a->ints[i] < 0 || a->ints[i] >= rank || seen[a->ints[i]])
      return false;
    seen[a->ints[i]] = true;
    p[i] = (int)a->ints[i];
  }
  return true;
}

/* The geometry: strides in elements of A', B' (the permuted operands) and
 * of Y0 (the product before perm_y) as laid out in Y's memory. */
typedef struct PGeom {
  int nb;                 /* batch rank of Y0 */
  int64_t m, n, k;
  int64_t bd[MAX_RANK];   /* batch dims of Y0 */
  int64_t sa[MAX_RANK], sb[MAX_RANK], sy[MAX_RANK]; /* batch strides (0: broadcast) */
  int64_t a_rs, a_cs, b_rs, b_cs, y_rs, y_cs;
  Type y;                 /* Y's type */
} PGeom;

/* t permuted by p: dims and (row-major, of t) strides. */
static void permuted(const Type *t, const int *p, int64_t *dims, int64_t *st) {
  int64_t s[MAX_RANK];
  type_strides(t, s);
  for (int i = 0; i < t->rank; i++) {
    dims[i] = t->dims[p[i]];
    st[i] = s[p[i]];
  }
}

/* Fill g from A, B and the perms; a message in err when they do not fit. */
static bool pgeom(const Node *n, const Type *ta, const Type *tb, PGeom *g, char *err, size_t en) {
  int pa[MAX_RANK], pb[MAX_RANK], py[MAX_RANK];
  if (ta->rank < 2 || tb->rank < 2)
    return misfit(err, en, "A and B have ranks %d and %d; expected 2 or more", ta->rank, tb->rank);
  if (!read_perm(n, "perm_a", ta->rank, pa) || !read_perm(n, "perm_b", tb->rank, pb))
    return misfit(err, en, "perm_a or perm_b is not a permutation of its operand's axes");
  int64_t da[MAX_RANK], sa[MAX_RANK], db[MAX_RANK], sb[MAX_RANK];
  permuted(ta, pa, da, sa);
  permuted(tb, pb, db, sb);
  int ra = ta->rank, rb = tb->rank, nba = ra - 2, nbb = rb - 2;
  g->m = da[ra - 2], g->k = da[ra - 1], g->n = db[rb - 1];
  if (db[rb - 2] != g->k)
    return misfit(err, en, "A' has %lld columns but B' has %lld rows; expected equal", (long long)g->k,
                    (long long)db[rb - 2]);
  g->nb = nba > nbb ? nba : nbb;
  Type y0 = {.dt = ta->dt, .rank = g->nb + 2};
  for (int d = 0; d < g->nb; d++) {
    int ia = d - (g->nb - nba), ib = d - (g->nb - nbb);
    int64_t xa = ia >= 0 ? da[ia] : 1, xb = ib >= 0 ? db[ib] : 1;
    if (xa != xb && xa != 1 && xb != 1)
      return misfit(err, en, "batch dims %lld and %lld do not broadcast; expected equal dims or 1",
                      (long long)xa, (long long)xb);
    g->bd[d] = y0.dims[d] = xa == 1 ? xb : xa;
    g->sa[d] = xa == 1 ? 0 : sa[ia];
    g->sb[d] = xb == 1 ? 0 : sb[ib];
  }
  y0.dims[g->nb] = g->m;
  y0.dims[g->nb + 1] = g->n;
  if (!read_perm(n, "perm_y", y0.rank, py))
    return misfit(err, en, "perm_y is not a permutation of the product's %d axes", y0.rank);
  g->y = y0;
  for (int i = 0; i < y0.rank; i++)
    g->y.dims[i] = y0.dims[py[i]];
  int64_t sy[MAX_RANK], s0[MAX_RANK];
  type_strides(&g->y, sy);
  for (int i = 0; i < y0.rank; i++) /* axis py[i] of Y0 is axis i of Y */
    s0[py[i]] = sy[i];
  for (int d = 0; d < g->nb; d++)
    g->sy[d] = s0[d];
  g->a_rs = sa[ra - 2], g->a_cs = sa[ra - 1];
  g->b_rs = sb[rb - 2], g->b_cs = sb[rb - 1];
  g->y_rs = s0[g->nb], g->y_cs = s0[g->nb + 1];
  return true;
}

bool permuted_matmul_infer(Graph *g, Node *n, Diag *d) {
  Value *a = node_in(g, n, 0), *b = node_in(g, n, 1);
  if (!a || !b)
    return diag_node(d, g, n, "input %s is absent; expected a tensor", a ? "B" : "A");
  if ((a->type.dt != DT_F32 && a->type.dt != DT_F64) || b->type.dt != a->type.dt)
    return diag_node(d, g, n, "inputs are %s and %s; expected both f32 or both f64", dt_name(a->type.dt),
                     dt_name(b->type.dt));
  PGeom pg;
  char err[200];
  if (!pgeom(n, &a->type, &b->type, &pg, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = pg.y;
  return true;
}

/* Offsets of batch index bi (row-major over bd) into A, B and Y. */
static void batch_offsets(const PGeom *g, int64_t bi, int64_t *oa, int64_t *ob, int64_t *oy) {
  *oa = *ob = *oy = 0;
  for (int d = g->nb - 1; d >= 0; d--) {
    int64_t x = bi % g->bd[d];
    bi /= g->bd[d];
    *oa += x * g->sa[d];
    *ob += x * g->sb[d];
    *oy += x * g->sy[d];
  }
}

bool permuted_matmul_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  PGeom g;
  char err[200];
  KILN_ASSERT(pgeom(n, &in[0].type, &in[1].type, &g, err, sizeof err));
  DType dt = g.y.dt;
  int64_t nbatch = 1;
  for (int i = 0; i < g.nb; i++)
    nbatch *= g.bd[i];
  for (int64_t bi = 0; bi < nbatch; bi++) {
    int64_t oa, ob, oy;
    batch_offsets(&g, bi, &oa, &ob, &oy);
    for (int64_t i = 0; i < g.m; i++)
      for (int64_t j = 0; j < g.n; j++) {
        double s = 0;
        for (int64_t t = 0; t < g.k; t++)
          s += el_get_f(dt, in[0].data, oa + i * g.a_rs + t * g.a_cs) *
               el_get_f(dt, in[1].data, ob + t * g.b_rs + j * g.b_cs);
        el_set_f(dt, out[0].data, oy + i * g.y_rs + j * g.y_cs, s);
      }
  }
  return true;
}

/* " + b0 * 12" for each batch loop with a non-zero stride, after `base`. */
static const char *batch_ref(Emit *e, const char *base, int nb, const int64_t *bd, const int64_t *st) {
  Buf b = {0};
  buf_puts(&b, base);
  for (int i = 0; i < nb; i++)
    if (st[i] && bd[i] > 1)
      buf_printf(&b, " + b%d * %lld", i, (long long)st[i]);
  const char *r = arena_strdup(e->g->arena, b.s);
  buf_free(&b);
  return r;
}

/* "i * rs + j * cs" for index terms i and j (C expressions), a factor of 1
 * dropped and a sum parenthesised only where it is multiplied. */
static const char *index2(Emit *e, const char *i, int64_t rs, const char *j, int64_t cs) {
  Arena *a = e->g->arena;
  const char *ti = rs == 1 ? i : arena_printf(a, strchr(i, ' ') ? "(%s) * %lld" : "%s * %lld", i, (long long)rs);
  const char *tj = cs == 1 ? j : arena_printf(a, strchr(j, ' ') ? "(%s) * %lld" : "%s * %lld", j, (long long)cs);
  return arena_printf(a, "%s + %s", ti, tj);
}

bool permuted_matmul_emit(Emit *e, const Node *n) {
  Graph *gr = e->g;
  const Type *ta = &gval(gr, n->in[0])->type, *tb = &gval(gr, n->in[1])->type;
  PGeom g;
  char err[200];
  KILN_ASSERT(pgeom(n, ta, tb, &g, err, sizeof err));
  if (type_numel(&g.y) == 0)
    return true;
  DType dt = g.y.dt;
  /* blocks as templates/matmul.c.in's: MR rows share each row of the tile,
   * NB columns summed in acc (at most 4 KiB of f32); the tile bt of KC rows
   * of B at most 32 KiB */
  int64_t mr = g.m < 8 ? g.m : 8, nb = g.n < 128 ? g.n : 128;
  int64_t kcmax = 32768 / (nb * (int64_t)dt_size(dt)), kc = g.k < kcmax ? g.k : kcmax;
  const char *A = emit_ref(e, n->in[0]), *B = emit_ref(e, n->in[1]), *Y = emit_ref(e, n->out[0]);
  for (int i = 0; i < g.nb; i++)
    if (g.bd[i] > 1) {
      emit_line(e, "for (int b%d = 0; b%d < %lld; b%d++) {", i, i, (long long)g.bd[i], i);
      e->indent++;
    }
  const char *Yb = batch_ref(e, Y, g.nb, g.bd, g.sy), *yij = index2(e, "i0 + r", g.y_rs, "j0 + j", g.y_cs);
  const char *store = kc == g.k ? arena_printf(gr->arena, "y[%s] = acc[r][j];", yij)
                                : arena_printf(gr->arena, "y[%s] = k0 == 0 ? acc[r][j] : y[%s] + acc[r][j];", yij, yij);
  if (g.k == 0) /* empty sums */
    emit_line(e, "for (int i = 0; i < %lld; i++) for (int j = 0; j < %lld; j++) (%s)[%s] = 0;", (long long)g.m,
              (long long)g.n, Yb, index2(e, "i", g.y_rs, "j", g.y_cs));
  else
    emit_tmpl(e, "matmul_strided", "T", dt_ctype(dt), "M", emit_int(e, g.m), "N", emit_int(e, g.n), "K",
              emit_int(e, g.k), "MR", emit_int(e, mr), "NB", emit_int(e, nb), "KC", emit_int(e, kc), "A",
              batch_ref(e, A, g.nb, g.bd, g.sa), "B", batch_ref(e, B, g.nb, g.bd, g.sb), "Y", Yb, "A_IK",
              index2(e, "i0 + r", g.a_rs, "k", g.a_cs), "A_IK1", index2(e, "i0 + r", g.a_rs, "k + 1", g.a_cs),
              "B_KJ", index2(e, "k", g.b_rs, "j0 + j", g.b_cs), "STORE", store, NULL);
  for (int i = 0; i < g.nb; i++)
    if (g.bd[i] > 1) {
      e->indent--;
      emit_line(e, "}");
    }
  return true;
}

