/* matmul.c — linear algebra: MatMul (numpy matmul: 1-D operands, batch
 * broadcasting), Gemm (Y = alpha·A'·B' + beta·C) and Einsum (any equation).
 *
 * _eval accumulates floats in double and integers in wrapping 64-bit
 * arithmetic, then stores in the output type. _emit accumulates in the
 * output's own C type (f32 in float, as ORT and PyTorch do). MatMul and
 * Gemm share two kernel generators: the packed GEMM for an f32 constant B
 * (compiler/kernels/gemm_kernel.c) and the template product for the rest
 * (compiler/kernels/matmul_kernel.c); Einsum emits a plain loop nest:
 * output letters, then summed letters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "../kernels/gemm_kernel.h"
#include "../kernels/matmul_kernel.h"
#include "matgeom.h"

/* MatMul and Gemm take f32, f64, i32, i64, u32, u64 (f16/bf16 kiln rejects). */
static bool matmul_dtype_ok(DType dt) {
  return dt == DT_F32 || dt == DT_F64 || dt == DT_I32 || dt == DT_I64 || dt == DT_U32 ||
         dt == DT_U64;
}

/* Y[y] = sum over t < k of A[a0 + t*as] * B[b0 + t*bs]: floats in double,
 * integers with wrapping 64-bit arithmetic (the low bits are those of any
 * narrower wrapping sum). */
static void dot_store(DType dt, const void *a, int64_t a0, int64_t as, const void *b, int64_t b0,
                      int64_t bs, int64_t k, void *y, int64_t yi) {
  if (dt_is_float(dt)) {
    double s = 0;
    for (int64_t t = 0; t < k; t++)
      s += el_get_f(dt, a, a0 + t * as) * el_get_f(dt, b, b0 + t * bs);
    el_set_f(dt, y, yi, s);
  } else if (dt_is_signed_int(dt)) {
    uint64_t s = 0;
    for (int64_t t = 0; t < k; t++)
      s += (uint64_t)el_get_i(dt, a, a0 + t * as) * (uint64_t)el_get_i(dt, b, b0 + t * bs);
    el_set_i(dt, y, yi, (int64_t)s);
  } else {
    uint64_t s = 0;
    for (int64_t t = 0; t < k; t++)
      s += el_get_u(dt, a, a0 + t * as) * el_get_u(dt, b, b0 + t * bs);
    el_set_u(dt, y, yi, s);
  }
}

/* ---- MatMul --------------------------------------------------------------- */

/* Batch dim d (of nb, right-aligned) of an operand with `nbx` batch dims:
 * its size, and its stride given the matrix size. */
static int64_t batch_dim(const Type *t, int nbx, int nb, int d, int64_t mat, int64_t *stride) {
  int td = d - (nb - nbx);
  *stride = 0;
  if (td < 0)
    return 1;
  int64_t s = mat;
  for (int i = td + 1; i < nbx; i++)
    s *= t->dims[i];
  *stride = t->dims[td] == 1 ? 0 : s;
  return t->dims[td];
}

/* Fill mg from valid shapes (matmul_infer checked them) and set y's shape. */
void matmul_geom(const Type *a, const Type *b, MatGeom *mg, Type *y) {
  int ra = a->rank, rb = b->rank;
  int nba = ra > 2 ? ra - 2 : 0, nbb = rb > 2 ? rb - 2 : 0;
  mg->m = ra >= 2 ? a->dims[ra - 2] : 1;
  mg->k = a->dims[ra - 1];
  mg->n = rb >= 2 ? b->dims[rb - 1] : 1;
  mg->nb = nba > nbb ? nba : nbb;
  for (int d = 0; d < mg->nb; d++) {
    int64_t da = batch_dim(a, nba, mg->nb, d, mg->m * mg->k, &mg->sa[d]);
    int64_t db = batch_dim(b, nbb, mg->nb, d, mg->k * mg->n, &mg->sb[d]);
    mg->bd[d] = da == 1 ? db : da;
  }
  int64_t s = mg->m * mg->n;
  for (int d = mg->nb - 1; d >= 0; d--) {
    mg->sy[d] = mg->bd[d] == 1 ? 0 : s;
    s *= mg->bd[d];
  }
  y->dt = a->dt;
  y->rank = 0;
  for (int d = 0; d < mg->nb; d++)
    y->dims[y->rank++] = mg->bd[d];
  if (ra >= 2)
    y->dims[y->rank++] = mg->m;
  if (rb >= 2)
    y->dims[y->rank++] = mg->n;
}

bool matmul_infer(Graph *g, Node *n, Diag *d) {
  Value *a = node_in(g, n, 0), *b = node_in(g, n, 1);
  const Type *ta = &a->type, *tb = &b->type;
  char sa[128], sb[128];
  if (!matmul_dtype_ok(ta->dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32, f64, i32, i64, u32 or u64", a->name,
                     dt_name(ta->dt));
  if (tb->dt != ta->dt)
    return diag_node(d, g, n, "inputs '%s' (%s) and '%s' (%s) differ in type; expected the same type",
                     a->name, dt_name(ta->dt), b->name, dt_name(tb->dt));
  if (ta->rank < 1 || tb->rank < 1)
    return diag_node(d, g, n, "MatMul of a scalar (%s x %s); expected inputs of rank >= 1",
                     type_str(ta, sa, sizeof sa), type_str(tb, sb, sizeof sb));
  int64_t ka = ta->dims[ta->rank - 1], kb = tb->dims[tb->rank >= 2 ? tb->rank - 2 : 0];
  if (ka != kb)
    return diag_node(d, g, n, "shapes %s and %s: A has %lld columns but B has %lld rows; expected equal",
                     type_str(ta, sa, sizeof sa), type_str(tb, sb, sizeof sb), (long long)ka,
                     (long long)kb);
  int nba = ta->rank > 2 ? ta->rank - 2 : 0, nbb = tb->rank > 2 ? tb->rank - 2 : 0;
  for (int i = 1; i <= nba && i <= nbb; i++) {
    int64_t da = ta->dims[nba - i], db = tb->dims[nbb - i];
    if (da != db && da != 1 && db != 1)
      return diag_node(d, g, n, "batch dims of %s and %s do not broadcast; expected equal dims or 1",
                       type_str(ta, sa, sizeof sa), type_str(tb, sb, sizeof sb));
  }
  MatGeom mg;
  matmul_geom(ta, tb, &mg, &node_out(g, n, 0)->type);
  return true;
}

bool matmul_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  MatGeom mg;
  Type yt;
  matmul_geom(&in[0].type, &in[1].type, &mg, &yt);
  int64_t nbatch = 1;
  for (int i = 0; i < mg.nb; i++)
    nbatch *= mg.bd[i];
  for (int64_t bi = 0; bi < nbatch; bi++) {
    int64_t oa = 0, ob = 0, oy = 0, rest = bi;
    for (int i = mg.nb - 1; i >= 0; i--) {
      int64_t x = rest % mg.bd[i];
      rest /= mg.bd[i];
      oa += x * mg.sa[i];
      ob += x * mg.sb[i];
      oy += x * mg.sy[i];
    }
    for (int64_t i = 0; i < mg.m; i++)
      for (int64_t j = 0; j < mg.n; j++)
        dot_store(yt.dt, in[0].data, oa + i * mg.k, 1, in[1].data, ob + j, mg.n, mg.k, out[0].data,
                  oy + i * mg.n + j);
  }
  return true;
}

/* " + b0 * 12" for each batch loop with a non-zero stride, after `base`. */
static const char *batch_offset(Emit *e, const char *base, int nl, const int64_t *st) {
  Buf b = {0};
  buf_puts(&b, base);
  for (int i = 0; i < nl; i++)
    if (st[i])
      buf_printf(&b, " + b%d * %lld", i, (long long)st[i]);
  const char *r = arena_strdup(e->g->arena, b.s);
  buf_free(&b);
  return r;
}

/* An f32 MatMul by a constant B (a weight). Without batch dims of its
 * own, A's rows, batch dims included, are the M rows of one GEMM with B
 * packed at compile time (compiler/kernels/gemm_kernel.c); with batch
 * dims that A has too, equal (no broadcast: a weight per batch index,
 * Winograd's per-position products), one packed GEMM per batch index. */
static bool matmul_emit_packed(Emit *e, const Node *n, const MatGeom *mg, const Type *yt) {
  const Value *b = gval(e->g, n->in[1]);
  const Type *at = &gval(e->g, n->in[0])->type;
  int64_t bbatch = 1;
  for (int i = 0; i + 2 < b->type.rank; i++)
    bbatch *= b->type.dims[i];
  if (yt->dt != DT_F32 || !b->data)
    return false;
  GemmSpec s = {.m = type_numel(yt) / mg->n, .n = mg->n, .k = mg->k, .a = emit_ref(e, n->in[0]),
                .a_rs = mg->k, .b = b->data, .b_name = b->name, .y = emit_ref(e, n->out[0])};
  if (bbatch != 1) {
    if (at->rank != b->type.rank || yt->rank != at->rank)
      return false;
    for (int i = 0; i + 2 < at->rank; i++)
      if (at->dims[i] != b->type.dims[i])
        return false;
    s.m = mg->m;
    s.batch = bbatch;
    s.a_bs = mg->m * mg->k;
    s.y_bs = mg->m * mg->n;
  }
  return emit_gemm(e, &s);
}

/* The loops b0, b1, ... over Y's nl batch dims ld[] (nmat matrices in
 * all); returns how many blocks they opened. Split among the threads
 * (ns > 0: the product's estimated serial time), several loops become one
 * over every matrix that derives b0, b1, ... from its index. */
static int emit_batch_loops(Emit *e, int nl, const int64_t *ld, int64_t nmat, double ns) {
  if (ns > 0 && nl > 1) {
    emit_parallel_for(e, nmat, ns);
    emit_line(e, "for (int bi = 0; bi < %lld; bi++) { /* the %d batch loops as one, for the threads */",
              (long long)nmat, nl);
    Buf b = {0};
    int64_t inner = nmat;
    for (int i = 0; i < nl; i++) {
      inner /= ld[i];
      buf_printf(&b, "%sb%d = bi", i ? ", " : "const int ", i);
      if (inner > 1)
        buf_printf(&b, " / %lld", (long long)inner);
      if (i > 0)
        buf_printf(&b, " %% %lld", (long long)ld[i]);
    }
    e->indent++;
    emit_line(e, "%s;", b.s);
    buf_free(&b);
    return 1;
  }
  for (int i = 0; i < nl; i++) {
    if (ns > 0)
      emit_parallel_for(e, ld[i], ns);
    emit_line(e, "for (int b%d = 0; b%d < %lld; b%d++) {", i, i, (long long)ld[i], i);
    e->indent++;
  }
  return nl;
}

/* One loop per batch dim of Y (dims of 1 dropped, dims contiguous in all
 * three operands merged), then the 2-D kernel on pointers offset into A, B
 * and Y. A constant f32 B takes the packed GEMM instead. */
bool matmul_emit(Emit *e, const Node *n) {
  const Type *ta = &gval(e->g, n->in[0])->type, *tb = &gval(e->g, n->in[1])->type;
  MatGeom mg;
  Type yt;
  matmul_geom(ta, tb, &mg, &yt);
  if (type_numel(&yt) == 0 || matmul_emit_packed(e, n, &mg, &yt))
    return true;
  int nl = 0;
  int64_t ld[MAX_RANK] = {0}, la[MAX_RANK] = {0}, lb[MAX_RANK] = {0}, ly[MAX_RANK] = {0};
  for (int i = 0; i < mg.nb; i++) {
    if (mg.bd[i] == 1)
      continue;
    if (nl > 0 && la[nl - 1] == mg.sa[i] * mg.bd[i] && lb[nl - 1] == mg.sb[i] * mg.bd[i] &&
        ly[nl - 1] == mg.sy[i] * mg.bd[i]) {
      ld[nl - 1] *= mg.bd[i];
      la[nl - 1] = mg.sa[i], lb[nl - 1] = mg.sb[i], ly[nl - 1] = mg.sy[i];
      continue;
    }
    ld[nl] = mg.bd[i], la[nl] = mg.sa[i], lb[nl] = mg.sb[i], ly[nl] = mg.sy[i];
    nl++;
  }
  /* --threads: the matrices split among the threads, unless cblas_sgemm
   * (threaded by OpenBLAS itself) computes them; the template kernel runs
   * at about 30 GFLOP/s */
  int64_t nmat = 1;
  for (int i = 0; i < nl; i++)
    nmat *= ld[i];
  double ns = 2.0 * (double)nmat * (double)mg.m * (double)mg.n * (double)mg.k / 30;
  bool par = nl > 0 && !matmul_uses_cblas(e, yt.dt, mg.k, mg.k, 1) && emit_parallel_worth(e, nmat, ns);
  int open = emit_batch_loops(e, nl, ld, nmat, par ? ns : 0);
  MatmulSpec ms = {.dt = yt.dt, .m = mg.m, .n = mg.n, .k = mg.k, .a_rs = mg.k, .a_cs = 1};
  ms.a = batch_offset(e, emit_ref(e, n->in[0]), nl, la);
  ms.b = batch_offset(e, emit_ref(e, n->in[1]), nl, lb);
  ms.y = batch_offset(e, emit_ref(e, n->out[0]), nl, ly);
  matmul_emit_kernel(e, &ms);
  for (int i = 0; i < open; i++) {
    e->indent--;
    emit_line(e, "}");
  }
  return true;
}

/* ---- Gemm ----------------------------------------------------------------- */

/* C takes part unless absent or scaled by beta = 0 (as the ONNX reference). */
static bool gemm_uses_c(const Node *n, bool present) {
  return present && attr_float(n, "beta", 1.0) != 0.0;
}

bool gemm_infer(Graph *g, Node *n, Diag *d) {
  Value *a = node_in(g, n, 0), *b = node_in(g, n, 1), *c = node_in(g, n, 2);
  const Type *ta = &a->type, *tb = &b->type;
  char sa[128], sb[128], sc[128];
  if (!matmul_dtype_ok(ta->dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32, f64, i32, i64, u32 or u64", a->name,
                     dt_name(ta->dt));
  if (tb->dt != ta->dt || (c && c->type.dt != ta->dt))
    return diag_node(d, g, n, "inputs A, B, C differ in type (%s, %s, %s); expected the same type",
                     dt_name(ta->dt), dt_name(tb->dt), c ? dt_name(c->type.dt) : "absent");
  if (ta->rank != 2 || tb->rank != 2)
    return diag_node(d, g, n, "A is %s and B is %s; expected matrices (rank 2)",
                     type_str(ta, sa, sizeof sa), type_str(tb, sb, sizeof sb));
  bool tra = attr_int(n, "transA", 0) != 0, trb = attr_int(n, "transB", 0) != 0;
  int64_t m = ta->dims[tra ? 1 : 0], k = ta->dims[tra ? 0 : 1];
  int64_t kb = tb->dims[trb ? 1 : 0], nn = tb->dims[trb ? 0 : 1];
  if (k != kb)
    return diag_node(d, g, n, "A%s is %s and B%s is %s: inner dims %lld and %lld; expected equal",
                     tra ? " (transposed)" : "", type_str(ta, sa, sizeof sa), trb ? " (transposed)" : "",
                     type_str(tb, sb, sizeof sb), (long long)k, (long long)kb);
  if (!c && n->opset < 11)
    return diag_node(d, g, n, "input C is absent; expected it (optional only from opset 11)");
  Type yt = {.dt = ta->dt, .rank = 2, .dims = {m, nn}};
  if (c) {
    const Type *tc = &c->type;
    bool ok = tc->rank <= 2;
    for (int i = 1; i <= tc->rank && ok; i++)
      ok = tc->dims[tc->rank - i] == 1 || tc->dims[tc->rank - i] == yt.dims[2 - i];
    if (!ok)
      return diag_node(d, g, n, "C is %s; expected a shape that broadcasts to [%lld,%lld]",
                       type_str(tc, sc, sizeof sc), (long long)m, (long long)nn);
    if (n->opset < 7 && attr_int(n, "broadcast", 0) == 0 && !type_equal(tc, &yt))
      return diag_node(d, g, n, "C is %s and broadcast=0; expected C of shape [%lld,%lld]",
                       type_str(tc, sc, sizeof sc), (long long)m, (long long)nn);
  }
  node_out(g, n, 0)->type = yt;
  return true;
}

/* Integer Gemm adds exactly when alpha and beta are 1; otherwise it scales
 * in double (as the ONNX reference, which computes alpha*AB + beta*C in
 * float64) and converts back. */
static bool gemm_int_exact(const Node *n, bool uses_c) {
  return attr_float(n, "alpha", 1.0) == 1.0 && (!uses_c || attr_float(n, "beta", 1.0) == 1.0);
}

bool gemm_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *ta = &in[0].type, *yt = &out[0].type;
  DType dt = yt->dt;
  bool tra = attr_int(n, "transA", 0) != 0, trb = attr_int(n, "transB", 0) != 0;
  int64_t m = yt->dims[0], nn = yt->dims[1], k = ta->dims[tra ? 0 : 1];
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < nn; j++)
      dot_store(dt, in[0].data, tra ? i : i * k, tra ? m : 1, in[1].data, trb ? j * k : j,
                trb ? 1 : nn, k, out[0].data, i * nn + j);
  bool uses_c = gemm_uses_c(n, n->nin > 2 && in[2].data);
  double alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
  for (int64_t i = 0; i < m * nn; i++) {
    int64_t ci = uses_c ? bcast_src(yt, &in[2].type, i) : 0;
    if (dt_is_float(dt) || !gemm_int_exact(n, uses_c)) {
      double v = alpha * el_get_f(dt, out[0].data, i);
      el_set_f(dt, out[0].data, i, uses_c ? v + beta * el_get_f(dt, in[2].data, ci) : v);
    } else if (uses_c && dt_is_signed_int(dt)) {
      uint64_t v = (uint64_t)el_get_i(dt, out[0].data, i) + (uint64_t)el_get_i(dt, in[2].data, ci);
      el_set_i(dt, out[0].data, i, (int64_t)v);
    } else if (uses_c) {
      el_set_u(dt, out[0].data, i, el_get_u(dt, out[0].data, i) + el_get_u(dt, in[2].data, ci));
    }
  }
  return true;
}

/* "alpha * $0 + beta * $1" for the epilogue, dropping factors of 1. */
static const char *gemm_epilogue(Emit *e, const Node *n, DType dt, bool uses_c) {
  Arena *a = e->g->arena;
  double alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
  if (!dt_is_float(dt) && gemm_int_exact(n, uses_c))
    return uses_c ? "$0 + $1" : NULL;
  DType ldt = dt_is_float(dt) ? dt : DT_F64;
  const char *y = dt_is_float(dt) ? "$0" : "(double)$0", *c = dt_is_float(dt) ? "$1" : "(double)$1";
  const char *ay = alpha == 1.0 ? y : arena_printf(a, "%s * %s", emit_double_literal(e, ldt, alpha), y);
  if (!uses_c)
    return alpha == 1.0 ? NULL : ay;
  const char *bc = beta == 1.0 ? c : arena_printf(a, "%s * %s", emit_double_literal(e, ldt, beta), c);
  return arena_printf(a, "%s + %s", ay, bc);
}

/* The epilogue formula with $0, $1 named Y and C, for a comment. */
static const char *gemm_epilogue_comment(Emit *e, const char *expr) {
  Buf b = {0};
  for (const char *p = expr; *p; p++) {
    if (p[0] == '$' && (p[1] == '0' || p[1] == '1'))
      buf_puts(&b, *++p == '0' ? "Y" : "C");
    else
      buf_put(&b, p, 1);
  }
  const char *r = arena_strdup(e->g->arena, b.s);
  buf_free(&b);
  return r;
}

/* f32 A·B' with B constant and A not transposed: the packed GEMM
 * (compiler/kernels/gemm_kernel.c), which also adds C when it is a plain
 * bias (alpha = beta = 1, C of shape [N] or [1,N]); *c_done says whether
 * it did. */
static bool gemm_emit_packed(Emit *e, const Node *n, int64_t m, int64_t nn, int64_t k, bool uses_c,
                             bool *c_done) {
  const Value *b = gval(e->g, n->in[1]), *c = uses_c ? gval(e->g, n->in[2]) : NULL;
  if (gval(e->g, n->out[0])->type.dt != DT_F32 || !b->data || attr_int(n, "transA", 0))
    return false;
  bool bias = c && attr_float(n, "alpha", 1.0) == 1.0 && attr_float(n, "beta", 1.0) == 1.0 &&
              type_numel(&c->type) == nn && c->type.dims[c->type.rank - 1] == nn;
  GemmSpec s = {.m = m, .n = nn, .k = k, .a = emit_ref(e, n->in[0]), .a_rs = k, .b = b->data,
                .b_trans = attr_int(n, "transB", 0) != 0, .b_name = b->name,
                .bias = bias ? emit_ref(e, n->in[2]) : NULL, .y = emit_ref(e, n->out[0])};
  if (!emit_gemm(e, &s))
    return false;
  *c_done = bias;
  return true;
}

/* Y = A'·B' (the kernel in its own block, for its local names), then
 * Y = alpha*Y + beta*C as an elementwise pass. With threads that pass may
 * be a split loop, which makes the kernel a job: the product outside it,
 * which no loop splits, is then the lead's alone (KILN_LEAD_ONLY), or a
 * late worker would write A'·B' over the finished Y. */
bool gemm_emit(Emit *e, const Node *n) {
  const Type *ta = &gval(e->g, n->in[0])->type, *yt = &gval(e->g, n->out[0])->type;
  bool tra = attr_int(n, "transA", 0) != 0, trb = attr_int(n, "transB", 0) != 0;
  int64_t m = yt->dims[0], nn = yt->dims[1], k = ta->dims[tra ? 0 : 1];
  if (m * nn == 0)
    return true;
  bool uses_c = gemm_uses_c(n, node_has_in(n, 2)), c_done = false;
  if (!gemm_emit_packed(e, n, m, nn, k, uses_c, &c_done)) {
    emit_line(e, "%s{", emit_lead_only(e));
    e->indent++;
    MatmulSpec ms = {.dt = yt->dt, .trb = trb, .m = m, .n = nn, .k = k, .a_rs = tra ? 1 : k, .a_cs = tra ? m : 1};
    ms.a = emit_ref(e, n->in[0]);
    ms.b = emit_ref(e, n->in[1]);
    ms.y = emit_ref(e, n->out[0]);
    matmul_emit_kernel(e, &ms);
    e->indent--;
    emit_line(e, "}");
  }
  if (c_done)
    return true;
  const char *expr = gemm_epilogue(e, n, yt->dt, uses_c);
  if (expr) {
    int ins[2] = {n->out[0], uses_c ? n->in[2] : -1};
    emit_line(e, "/* Y = %s */", gemm_epilogue_comment(e, expr));
    emit_elementwise_vals(e, ins, uses_c ? 2 : 1, n->out[0], expr);
  }
  return true;
}

/* ---- Einsum --------------------------------------------------------------- */

/* Labels: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (ASCII order, which is the
 * order of implicit output letters), then one label per dim under '...',
 * right-aligned across operands as numpy broadcasting does. */
#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + MAX_RANK)

typedef struct EinOp {
  int64_t st[EIN_LABELS]; /* element stride per label: 0 if absent or broadcast;
                             a label repeated in one term sums (a diagonal) */
} EinOp;

typedef struct Ein {
  int nops;
  EinOp *ops;
  int64_t dim[EIN_LABELS];  /* extent of each label; -1 when unused */
  int nout, out[MAX_RANK];  /* output labels, in order */
  int64_t ost[EIN_LABELS];  /* output stride per label */
  int nsum, sum[EIN_LABELS]; /* summed labels: used, not in the output */
} Ein;

static int ein_letter(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return 26 + c - 'a';
  return -1;
}

/* "b" for a letter label, "0" for the first dim under '...'. */
static void ein_label_name(int l, char *s) {
  if (l < EIN_LETTERS)
    s[0] = (char)(l < 26 ? 'A' + l : 'a' + l - 26), s[1] = 0;
  else
    s[0] = (char)('0' + l - EIN_LETTERS), s[1] = 0;
}

/* One term of the equation, spaces skipped: its letters in order and where
 * '...' stands among them (-1 if absent). */
typedef struct EinTerm {
  int n, lab[MAX_RANK];
  int ell;
} EinTerm;

static bool ein_term(const char *eq, const char *s, const char *end, EinTerm *t, char *err,
                     size_t en) {
  t->n = 0;
  t->ell = -1;
  for (const char *p = s; p < end; p++) {
    if (*p == ' ')
      continue;
    if (*p == '.') {
      if (end - p < 3 || p[1] != '.' || p[2] != '.' || t->ell >= 0) {
        snprintf(err, en, "equation '%s': stray '.' at position %d; expected '...' once per term",
                 eq, (int)(p - eq));
        return false;
      }
      t->ell = t->n;
      p += 2;
      continue;
    }
    int l = ein_letter(*p);
    if (l < 0) {
      snprintf(err, en, "equation '%s': bad character '%c' at position %d; expected letters a-z A-Z, "
               "',', '...' and '->'", eq, *p, (int)(p - eq));
      return false;
    }
    if (t->n == MAX_RANK) {
      snprintf(err, en, "equation '%s': a term with more than %d letters; expected at most %d (the "
               "largest rank)", eq, MAX_RANK, MAX_RANK);
      return false;
    }
    t->lab[t->n++] = l;
  }
  return true;
}

/* Bind input term `op` to its operand's shape: its rank and letter sizes. */
static bool ein_bind(const char *eq, Ein *es, int op, const EinTerm *t, const Type *ty,
                     const char *name, int nell, char *err, size_t en) {
  int ne = ty->rank - t->n;
  if ((t->ell < 0 && ne != 0) || ne < 0) {
    snprintf(err, en, "equation '%s': term %d names %d dims%s but input '%s' has rank %d; expected "
             "equal", eq, op + 1, t->n, t->ell >= 0 ? " and '...'" : "", name, ty->rank);
    return false;
  }
  int64_t s = 1;
  for (int d = ty->rank - 1; d >= 0; d--) {
    int ti = t->ell < 0 || d < t->ell ? d : d < t->ell + ne ? -1 : d - ne;
    int l = ti >= 0 ? t->lab[ti] : EIN_LETTERS + nell - ne + (d - t->ell);
    int64_t dim = ty->dims[d];
    if (l < EIN_LETTERS && es->dim[l] >= 0 && es->dim[l] != dim) {
      char c[4];
      ein_label_name(l, c);
      snprintf(err, en, "equation '%s': letter '%s' is %lld in input '%s' but %lld elsewhere; "
               "expected equal sizes", eq, c, (long long)dim, name, (long long)es->dim[l]);
      return false;
    }
    if (l >= EIN_LETTERS && es->dim[l] >= 0 && es->dim[l] != dim && dim != 1 && es->dim[l] != 1) {
      snprintf(err, en, "equation '%s': dims under '...' do not broadcast (%lld in input '%s', %lld "
               "elsewhere); expected equal dims or 1", eq, (long long)dim, name,
               (long long)es->dim[l]);
      return false;
    }
    if (es->dim[l] < 0 || es->dim[l] == 1)
      es->dim[l] = dim;
    es->ops[op].st[l] += dim == 1 ? 0 : s;
    s *= dim;
  }
  return true;
}

/* The output labels: explicit after '->', else '...' then every letter used
 * exactly once, in ASCII order. */
static bool ein_output(const char *eq, Ein *es, const EinTerm *o, const int *count, int nell,
                       char *err, size_t en) {
  es->nout = 0;
  int want = o ? o->n + (o->ell >= 0 ? nell : 0) : nell;
  if (!o)
    for (int l = 0; l < EIN_LETTERS; l++)
      want += count[l] == 1;
  if (want > MAX_RANK) {
    snprintf(err, en, "equation '%s': output of rank %d; expected at most %d", eq, want, MAX_RANK);
    return false;
  }
  if (!o) {
    for (int l = 0; l < nell; l++)
      es->out[es->nout++] = EIN_LETTERS + l;
    for (int l = 0; l < EIN_LETTERS; l++)
      if (count[l] == 1)
        es->out[es->nout++] = l;
    return true;
  }
  if (o->ell < 0 && nell > 0) {
    snprintf(err, en, "equation '%s': the inputs have dims under '...' but the output has no "
             "'...'; expected '...' in the output", eq);
    return false;
  }
  bool seen[EIN_LETTERS] = {0};
  for (int i = 0; i <= o->n; i++) {
    if (i == o->ell)
      for (int l = 0; l < nell; l++)
        es->out[es->nout++] = EIN_LETTERS + l;
    if (i == o->n)
      break;
    int l = o->lab[i];
    char c[4];
    ein_label_name(l, c);
    if (!count[l] || seen[l]) {
      snprintf(err, en, "equation '%s': output letter '%s' %s; expected each output letter once, "
               "from the inputs", eq, c, seen[l] ? "is repeated" : "is in no input");
      return false;
    }
    seen[l] = true;
    es->out[es->nout++] = l;
  }
  return true;
}

/* Parse `eq` against the operands' types (es->ops has nops zeroed entries).
 * False with a message in err on any error. */
static bool ein_parse(const char *eq, int nops, const Type *const *types, const char *const *names,
                      Ein *es, char *err, size_t en) {
  es->nops = nops;
  for (int l = 0; l < EIN_LABELS; l++)
    es->dim[l] = -1;
  const char *arrow = strstr(eq, "->"), *lhs_end = arrow ? arrow : eq + strlen(eq);
  EinTerm t, o;
  int count[EIN_LETTERS] = {0}, nell = 0, op = 0;
  /* pass 1: terms and their number; the rank under '...' */
  for (const char *s = eq;; op++) {
    const char *e = memchr(s, ',', (size_t)(lhs_end - s));
    if (!e)
      e = lhs_end;
    if (!ein_term(eq, s, e, &t, err, en))
      return false;
    if (op < nops && t.ell >= 0 && types[op]->rank - t.n > nell)
      nell = types[op]->rank - t.n;
    for (int i = 0; i < t.n; i++)
      count[t.lab[i]]++;
    if (e == lhs_end)
      break;
    s = e + 1;
  }
  if (op + 1 != nops) {
    snprintf(err, en, "equation '%s' has %d input terms for %d inputs; expected one per input", eq,
             op + 1, nops);
    return false;
  }
  /* pass 2: bind each term to its operand */
  op = 0;
  for (const char *s = eq; op < nops; op++) {
    const char *e = memchr(s, ',', (size_t)(lhs_end - s));
    if (!e)
      e = lhs_end;
    ein_term(eq, s, e, &t, err, en);
    if (!ein_bind(eq, es, op, &t, types[op], names[op], nell, err, en))
      return false;
    s = e + 1;
  }
  if (arrow && !ein_term(eq, arrow + 2, arrow + strlen(arrow), &o, err, en))
    return false;
  if (!ein_output(eq, es, arrow ? &o : NULL, count, nell, err, en))
    return false;
  int64_t s = 1;
  for (int i = es->nout - 1; i >= 0; i--) {
    es->ost[es->out[i]] = s;
    s *= es->dim[es->out[i]];
  }
  es->nsum = 0;
  for (int l = 0; l < EIN_LABELS; l++) {
    bool in_out = false;
    for (int i = 0; i < es->nout; i++)
      in_out |= es->out[i] == l;
    if (es->dim[l] >= 0 && !in_out)
      es->sum[es->nsum++] = l;
  }
  return true;
}

bool einsum_infer(Graph *g, Node *n, Diag *d) {
  const char *eq = attr_str(n, "equation", NULL);
  if (!eq)
    return diag_node(d, g, n, "no 'equation' attribute; expected one");
  const Type **types = arena_alloc(g->arena, sizeof *types * (size_t)n->nin);
  const char **names = arena_alloc(g->arena, sizeof *names * (size_t)n->nin);
  DType dt = node_in(g, n, 0)->type.dt;
  for (int i = 0; i < n->nin; i++) {
    Value *v = node_in(g, n, i);
    if (!v)
      return diag_node(d, g, n, "input %d is absent; expected a tensor", i);
    if (v->type.dt != dt || dt == DT_BOOL)
      return diag_node(d, g, n, "input '%s' is %s; expected a numeric type, the same for all inputs",
                       v->name, dt_name(v->type.dt));
    types[i] = &v->type;
    names[i] = v->name;
  }
  Ein es = {.ops = arena_alloc(g->arena, sizeof(EinOp) * (size_t)n->nin)};
  char err[512];
  if (!ein_parse(eq, n->nin, types, names, &es, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  Type *yt = &node_out(g, n, 0)->type;
  yt->dt = dt;
  yt->rank = es.nout;
  for (int i = 0; i < es.nout; i++)
    yt->dims[i] = es.dim[es.out[i]];
  return true;
}

/* Parse again for _eval/_emit (infer accepted it, so this cannot fail). */
static void ein_reparse(const Node *n, const Type *const *types, Ein *es) {
  const char **names = malloc(sizeof *names * (size_t)n->nin);
  for (int i = 0; i < n->nin; i++)
    names[i] = "?";
  char err[512];
  bool ok = ein_parse(attr_str(n, "equation", ""), n->nin, types, names, es, err, sizeof err);
  free(names);
  KILN_ASSERT(ok);
}

/* For each output element: odometer over the summed labels, product of the
 * operands, summed in double (floats) or wrapping 64-bit (integers). */
bool einsum_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type **types = malloc(sizeof *types * (size_t)n->nin);
  Ein es = {.ops = calloc((size_t)n->nin, sizeof(EinOp))};
  for (int i = 0; i < n->nin; i++)
    types[i] = &in[i].type;
  ein_reparse(n, types, &es);
  free(types);
  DType dt = out[0].type.dt;
  int64_t total = type_numel(&out[0].type), nsum = 1;
  for (int i = 0; i < es.nsum; i++)
    nsum *= es.dim[es.sum[i]];
  int64_t *base = calloc((size_t)n->nin, sizeof *base);
  for (int64_t o = 0; o < total; o++) {
    for (int k = 0; k < n->nin; k++) {
      base[k] = 0;
      for (int i = 0; i < es.nout; i++)
        base[k] += (o / es.ost[es.out[i]] % es.dim[es.out[i]]) * es.ops[k].st[es.out[i]];
    }
    double fs = 0;
    uint64_t us = 0;
    for (int64_t r = 0; r < nsum; r++) {
      double fp = 1;
      uint64_t up = 1;
      for (int k = 0; k < n->nin; k++) {
        int64_t idx = base[k], rest = r;
        for (int i = es.nsum - 1; i >= 0; i--) {
          int l = es.sum[i];
          idx += rest % es.dim[l] * es.ops[k].st[l];
          rest /= es.dim[l];
        }
        if (dt_is_float(dt))
          fp *= el_get_f(dt, in[k].data, idx);
        else
          up *= dt_is_signed_int(dt) ? (uint64_t)el_get_i(dt, in[k].data, idx)
                                     : el_get_u(dt, in[k].data, idx);
      }
      fs += fp;
      us += up;
    }
    if (dt_is_float(dt))
      el_set_f(dt, out[0].data, o, fs);
    else if (dt_is_signed_int(dt))
      el_set_i(dt, out[0].data, o, (int64_t)us);
    else
      el_set_u(dt, out[0].data, o, us);
  }
  free(base);
  free(es.ops);
  return true;
}

/* "x[i_b * 6 + i_j]": an operand's element at the current loop labels,
 * terms in the order of the operand's dims (largest stride first). */
static const char *ein_elem(Emit *e, const char *ref, const int64_t *st) {
  int ls[EIN_LABELS], nl = 0;
  for (int l = 0; l < EIN_LABELS; l++)
    if (st[l])
      ls[nl++] = l;
  for (int i = 1; i < nl; i++)
    for (int j = i; j > 0 && st[ls[j]] > st[ls[j - 1]]; j--) {
      int t = ls[j];
      ls[j] = ls[j - 1], ls[j - 1] = t;
    }
  Buf b = {0};
  buf_printf(&b, "%s[", ref);
  for (int i = 0; i < nl; i++) {
    char c[4];
    ein_label_name(ls[i], c);
    buf_printf(&b, "%s%s%s", i ? " + " : "", ls[i] < EIN_LETTERS ? "i_" : "e_", c);
    if (st[ls[i]] != 1)
      buf_printf(&b, " * %lld", (long long)st[ls[i]]);
  }
  buf_puts(&b, nl ? "]" : "0]");
  const char *r = arena_strdup(e->g->arena, b.s);
  buf_free(&b);
  return r;
}

static void ein_open_loop(Emit *e, int l, int64_t dim) {
  char c[4];
  ein_label_name(l, c);
  const char *v = l < EIN_LETTERS ? "i_" : "e_";
  emit_line(e, "for (int %s%s = 0; %s%s < %lld; %s%s++) {", v, c, v, c, (long long)dim, v, c);
  e->indent++;
}

static void ein_close_loops(Emit *e, int k) {
  for (; k > 0; k--) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* Loops over the output labels (i_<letter>, e_<k> under '...'), then over
 * the summed labels around `acc += product`. */
bool einsum_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type **types = arena_alloc(g->arena, sizeof *types * (size_t)n->nin);
  Ein es = {.ops = arena_alloc(g->arena, sizeof(EinOp) * (size_t)n->nin)};
  for (int i = 0; i < n->nin; i++)
    types[i] = &gval(g, n->in[i])->type;
  ein_reparse(n, types, &es);
  const Type *yt = &gval(g, n->out[0])->type;
  if (type_numel(yt) == 0)
    return true;
  Buf prod = {0};
  for (int k = 0; k < n->nin; k++)
    buf_printf(&prod, "%s%s", k ? " * " : "", ein_elem(e, emit_ref(e, n->in[k]), es.ops[k].st));
  const char *y = ein_elem(e, emit_ref(e, n->out[0]), es.ost);
  for (int i = 0; i < es.nout; i++)
    ein_open_loop(e, es.out[i], es.dim[es.out[i]]);
  if (es.nsum == 0) {
    emit_line(e, "%s = %s;", y, prod.s);
  } else {
    emit_line(e, "%s acc = 0;", dt_ctype(yt->dt));
    for (int i = 0; i < es.nsum; i++)
      ein_open_loop(e, es.sum[i], es.dim[es.sum[i]]);
    emit_line(e, "acc += %s;", prod.s);
    ein_close_loops(e, es.nsum);
    emit_line(e, "%s = acc;", y);
  }
  ein_close_loops(e, es.nout);
  buf_free(&prod);
  return true;
}

/* ---- FLOP counts (ops.def's flops column) ------------------------------------ */

/* A's last dim: the summed length K of a MatMul or Linear. */
static int64_t k_of(const Graph *g, const Node *n) {
  const Value *a = node_in(g, n, 0);
  return a && a->type.rank > 0 ? a->type.dims[a->type.rank - 1] : 1;
}

static int64_t out_numel(const Graph *g, const Node *n) { return type_numel(&gval(g, n->out[0])->type); }

/* 2·M·N·K per matrix. */
int64_t matmul_flops(const Graph *g, const Node *n) { return 2 * out_numel(g, n) * k_of(g, n); }

/* 2·M·N·K, and one op per element for C. */
int64_t gemm_flops(const Graph *g, const Node *n) {
  const Value *a = node_in(g, n, 0);
  int64_t out = out_numel(g, n), k = a && a->type.rank == 2 ? a->type.dims[attr_int(n, "transA", 0) ? 0 : 1] : 1;
  return 2 * out * k + (node_has_in(n, 2) ? out : 0);
}

/* PermutedMatMul (permuted_matmul.c): MatMul's count, K read through
 * perm_a (A's last axis after the perm). */
int64_t permuted_matmul_flops(const Graph *g, const Node *n) {
  const Value *a = node_in(g, n, 0);
  const Attr *p = attr_get(n, "perm_a");
  int r = a ? a->type.rank : 0;
  if (!p || p->kind != ATTR_INTS || p->n != r || r == 0 || p->ints[r - 1] < 0 || p->ints[r - 1] >= r)
    return matmul_flops(g, n);
  return 2 * out_numel(g, n) * a->type.dims[p->ints[r - 1]];
}

/* Einsum: 2 x product of every letter's size (output letters and summed). */
int64_t einsum_flops(const Graph *g, const Node *n) {
  const char *eq = attr_str(n, "equation", "");
  int64_t size[128] = {0};
  int k = 0, pos = 0;
  for (const char *p = eq; *p && *p != '-'; p++) {
    if (*p == ',') {
      k++, pos = 0;
      continue;
    }
    const Value *v = node_in(g, n, k);
    if (!v || *p == '.' || *p == ' ' || (unsigned char)*p >= 128)
      continue;
    if (pos < v->type.rank)
      size[(int)*p] = v->type.dims[pos];
    pos++;
  }
  int64_t f = 2;
  for (int c = 0; c < 128; c++)
    if (size[c] > 0)
      f *= size[c];
  return f;
}
