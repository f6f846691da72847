/* im2row.c — Im2Row, a kiln op: the windows of a convolution's input laid
 * out as the rows of a matrix, so that the convolution becomes one GEMM by
 * its (constant) weight on the packed kernel (the conv_gemm pass,
 * compiler/passes/conv_gemm.c):
 *
 *   X [N, C, in...]  ->  Y [N, P, C·K]     P = prod(out), K = prod(kernel)
 *   Y[n][p][c·K + t] = X[n][c][o·stride + t·dil - pad]   (0 in the pads)
 *
 * o the output position of flat index p and t the kernel tap of flat
 * index t; the columns run in W's order [M, C, k...], so the GEMM's B is
 * W reshaped to [M, C·K] and read transposed. The attributes are a
 * Conv's (kernel_shape, required here, strides, pads, dilations,
 * auto_pad) and the geometry is conv_geom's (convgeom.h); group is 1.
 *
 * channels_last=1: X is [N, in..., C] (a GEMM's [N, P, C] output, the
 * previous conv's, read without transposing it back) and the columns run
 * tap-major, Y[n][p][t·C + c]: each tap's C channels are one contiguous
 * copy (the conv_gemm pass orders Wᵀ's rows to match).
 *
 * _emit writes a row per output position: for a 1x1 window with no stride
 * or pad that is a transpose of X's [C, P] planes, walked in blocks of
 * rows; otherwise a loop over the taps whose landing is tested against
 * the input's bounds only along the dims where some window overhangs (an
 * outer dim's test skips its whole run of taps, writing zeros). */
#include <string.h>

#include <stdlib.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "../kernels/gemm_kernel.h"
#include "convgeom.h"
#include "window.h"

/* The geometry of Im2Row n over X of type x: W's type is [1, C, k...]
 * from kernel_shape. */
static bool im2row_geom(const Node *n, const Type *xin, ConvGeom *c, char *why) {
  Type xcl = *xin; /* channels_last: X's dims as [N, C, in...] */
  if (attr_int(n, "channels_last", 0) && xin->rank >= 3) {
    xcl.dims[1] = xin->dims[xin->rank - 1];
    for (int j = 2; j < xin->rank; j++)
      xcl.dims[j] = xin->dims[j - 1];
  }
  const Type *x = &xcl;
  const Attr *ks = attr_get(n, "kernel_shape");
  if (!ks || ks->kind != ATTR_INTS || ks->n != x->rank - 2 || x->rank < 3)
    return window_fail(why, "kernel_shape has %d values; expected one per spatial dim of X (rank %d)",
                       ks && ks->kind == ATTR_INTS ? ks->n : 0, x->rank);
  if (attr_int(n, "group", 1) != 1)
    return window_fail(why, "group is %lld; expected 1", (long long)attr_int(n, "group", 1));
  Type w = {.dt = x->dt, .rank = x->rank};
  w.dims[0] = 1;
  w.dims[1] = x->dims[1];
  for (int j = 0; j < ks->n; j++)
    w.dims[2 + j] = ks->ints[j];
  return conv_geom(n, x, &w, c, why);
}

static bool conv_blocks_infer(Graph *g, Node *n, Diag *d);

bool im2row_infer(Graph *g, Node *n, Diag *d) {
  if (n->op == OP_CONVBLOCKS)
    return conv_blocks_infer(g, n, d);
  const Value *x = node_in(g, n, 0);
  if (!dt_is_float(x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  ConvGeom c;
  char why[WHY];
  if (!im2row_geom(n, &x->type, &c, why))
    return diag_node(d, g, n, "%s", why);
  Type t = {.dt = x->type.dt, .rank = 3};
  t.dims[0] = c.batch;
  t.dims[1] = window_prod(c.out, c.nsp);
  t.dims[2] = c.cin * window_prod(c.k, c.nsp);
  node_out(g, n, 0)->type = t;
  return true;
}

static bool conv_blocks_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d);

bool im2row_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  if (n->op == OP_CONVBLOCKS)
    return conv_blocks_eval(n, in, out, d);
  ConvGeom c;
  char why[WHY];
  KILN_ASSERT(im2row_geom(n, &in[0].type, &c, why));
  DType dt = in[0].type.dt;
  bool last = attr_int(n, "channels_last", 0);
  int64_t isz = window_prod(c.in, c.nsp), osz = window_prod(c.out, c.nsp), ksz = window_prod(c.k, c.nsp);
  int64_t o[MAX_RANK], t[MAX_RANK], yi = 0;
  for (int64_t nb = 0; nb < c.batch; nb++)
    for (int64_t p = 0; p < osz; p++) {
      window_unflatten(p, c.out, c.nsp, o);
      for (int64_t i = 0; i < c.cin * ksz; i++, yi++) {
        int64_t ci = last ? i % c.cin : i / ksz, ki = last ? i / c.cin : i % ksz, xoff;
        window_unflatten(ki, c.k, c.nsp, t);
        double v = 0;
        if (conv_source(&c, o, t, &xoff))
          v = el_get_f(dt, in[0].data, last ? (nb * isz + xoff) * c.cin + ci : (nb * c.cin + ci) * isz + xoff);
        el_set_f(dt, out[0].data, yi, v);
      }
    }
  return true;
}

/* ---- C ----------------------------------------------------------------------- */

#define TRANSPOSE_BLOCK 16 /* rows of Y written together by the 1x1 form */

/* 1x1, stride 1, no pad: Y[n] = X[n]ᵀ, [C, P] -> [P, C], in blocks of
 * rows so that each read of X is a short contiguous run. */
static void emit_transpose(Emit *e, const ConvGeom *c, const char *x, const char *y, const char *T) {
  int64_t p = window_prod(c->out, c->nsp), b = p < TRANSPOSE_BLOCK ? p : TRANSPOSE_BLOCK;
  emit_line(e, "for (int n = 0; n < %lld; n++) {", (long long)c->batch);
  emit_line(e, "  const %s *xn = %s + n * %lld;", T, x, (long long)(c->cin * p));
  emit_line(e, "  %s *yn = %s + n * %lld;", T, y, (long long)(c->cin * p));
  emit_line(e, "  for (int p0 = 0; p0 < %lld; p0 += %lld) {", (long long)p, (long long)b);
  emit_line(e, "    const int pe = p0 + %lld < %lld ? p0 + %lld : %lld;", (long long)b, (long long)p, (long long)b,
            (long long)p);
  emit_line(e, "    for (int c = 0; c < %lld; c++)", (long long)c->cin);
  emit_line(e, "      for (int p = p0; p < pe; p++)");
  emit_line(e, "        yn[p * %lld + c] = xn[c * %lld + p];", (long long)c->cin, (long long)p);
  emit_line(e, "  }");
  emit_line(e, "}");
}

/* Some window along dim j reaches outside x (the pads, or past the end). */
static bool overhangs(const ConvGeom *c, int j) {
  int64_t first = -c->pad[j], last = (c->out[j] - 1) * c->stride[j] + (c->k[j] - 1) * c->dil[j] - c->pad[j];
  return first < 0 || last >= c->in[j];
}

/* Does the code read dim j's landing? Not where x has one position there
 * and no window overhangs it: every tap lands on 0, and window_flat drops
 * a dim of 1 from the index (a 1 x K conv on an image one row high, as in
 * PP-OCRv4's recogniser; declaring it anyway is -Wunused-variable). */
static bool landing_read(const ConvGeom *c, int j) { return c->in[j] > 1 || overhangs(c, j); }

/* ConvBlocks: the windows of one block of output positions (hb of the
 * outer output dim, all of the others, of image n from oh0 on: C
 * variables the caller defines) into the array `rows`. */
typedef struct RowBlock {
  int64_t hb;
  const char *rows;
} RowBlock;

/* Both layouts' start: loops over the batch and the output positions
 * (ov[j]; kv[j] names each dim's tap counter for later), then r, this
 * window's row of Y, and xn, this image of X. Leaves ns + 1 blocks open.
 * With blk, one block's positions instead (the image a block, not a
 * loop), their rows in blk->rows. */
static void open_window_rows(Emit *e, const ConvGeom *c, const char *x, const char *y, const char *T,
                             const char **ov, const char **kv, const RowBlock *blk) {
  Arena *a = e->g->arena;
  int ns = c->nsp;
  int64_t ck = c->cin * window_prod(c->k, ns), inner = window_prod(c->out + 1, ns - 1);
  if (blk)
    emit_line(e, "{ /* the windows of image n at o%s = oh0 .. oh0 + %lld */", window_dim_sfx(a, ns, 0),
              (long long)(blk->hb - 1));
  else
    emit_line(e, "for (int n = 0; n < %lld; n++) {", (long long)c->batch);
  e->indent++;
  for (int j = 0; j < ns; j++) {
    const char *sx = window_dim_sfx(a, ns, j);
    ov[j] = arena_printf(a, "o%s", sx);
    kv[j] = arena_printf(a, "k%s", sx);
    if (j == 0 && blk) {
      emit_line(e, "for (int %s = oh0; %s < oh0 + %lld; %s++) {", ov[j], ov[j], (long long)blk->hb, ov[j]);
      e->indent++;
      continue;
    }
    if (j == 0) /* --threads: the outer output dim split (a copy: about 0.25 ns an element) */
      emit_parallel_for(e, c->out[0], 0.25 * (double)(window_prod(c->out, ns) * c->cin * window_prod(c->k, ns)));
    emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", ov[j], ov[j], (long long)c->out[j], ov[j]);
    e->indent++;
  }
  if (blk)
    emit_line(e, "%s *r = %s + (%s - oh0 * %lld) * %lld; /* the row of this window */", T, blk->rows,
              window_flat(a, ns, ov, c->out, false), (long long)inner, (long long)ck);
  else
    emit_line(e, "%s *r = %s + (n * %lld + %s) * %lld; /* the row of this window */", T, y,
              (long long)window_prod(c->out, ns), window_flat(a, ns, ov, c->out, false), (long long)ck);
  emit_line(e, "const %s *xn = %s + n * %lld;", T, x, (long long)(c->cin * window_prod(c->in, ns)));
}

/* Any window: a loop over output positions, channels and taps; a tap's
 * landing is tested only along the dims where a window overhangs. */
static void emit_windows(Emit *e, const ConvGeom *c, const char *x, const char *y, const char *T, DType dt) {
  Arena *a = e->g->arena;
  int ns = c->nsp;
  const char *ov[MAX_RANK], *kv[MAX_RANK], *land[MAX_RANK], *inside = NULL;
  open_window_rows(e, c, x, y, T, ov, kv, NULL);
  int open = ns;
  emit_line(e, "for (int c = 0; c < %lld; c++) {", (long long)c->cin);
  e->indent++;
  open++;
  for (int j = 0; j < ns; j++) {
    emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", kv[j], kv[j], (long long)c->k[j], kv[j]);
    e->indent++;
    open++;
    land[j] = arena_printf(a, "i%s", window_dim_sfx(a, ns, j));
    if (landing_read(c, j))
      emit_line(e, "const int %s = %s;", land[j], conv_landing(a, c, j, ov[j], kv[j]));
    if (!overhangs(c, j))
      continue;
    if (j == ns - 1) {
      inside = arena_printf(a, "(unsigned)%s < %lldu", land[j], (long long)c->in[j]);
      continue;
    }
    /* outside along an outer dim: the taps under it are all 0 */
    const char *terms[MAX_RANK + 1];
    int64_t dims[MAX_RANK + 1], rest = window_prod(c->k + j + 1, ns - j - 1);
    terms[0] = "c";
    dims[0] = c->cin;
    for (int i = 0; i <= j; i++) {
      terms[1 + i] = kv[i];
      dims[1 + i] = c->k[i];
    }
    const char *base = window_flat(a, j + 2, terms, dims, false);
    emit_line(e, "if ((unsigned)%s >= %lldu) { /* in the pads: %lld zeros */", land[j], (long long)c->in[j],
              (long long)rest);
    emit_line(e, "  for (int t = 0; t < %lld; t++)", (long long)rest);
    emit_line(e, "    r[(%s) * %lld + t] = %s;", base, (long long)rest, emit_double_literal(e, dt, 0));
    emit_line(e, "  continue;");
    emit_line(e, "}");
  }
  const char *terms[MAX_RANK + 1];
  int64_t dims[MAX_RANK + 1];
  terms[0] = "c";
  dims[0] = c->cin;
  for (int j = 0; j < ns; j++) {
    terms[1 + j] = land[j];
    dims[1 + j] = c->in[j];
  }
  const char *src = arena_printf(a, "xn[%s]", window_flat(a, ns + 1, terms, dims, false));
  terms[0] = "c";
  dims[0] = c->cin;
  for (int j = 0; j < ns; j++) {
    terms[1 + j] = kv[j];
    dims[1 + j] = c->k[j];
  }
  const char *col = window_flat(a, ns + 1, terms, dims, false);
  if (inside)
    emit_line(e, "r[%s] = %s ? %s : %s;", col, inside, src, emit_double_literal(e, dt, 0));
  else
    emit_line(e, "r[%s] = %s;", col, src);
  for (int i = 0; i < open + 1; i++) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* channels_last: X [N, in..., C]; per window and tap one copy of the C
 * channels at the landing (or C zeros where it falls outside x). With
 * fewer than 16 channels and no dilation along the last dim, its taps land
 * on consecutive positions of x, K·C contiguous floats, as they are in the
 * row: one copy of those (of constant size away from the edges) and zeros
 * around (a 3-channel 7x7 stem: 7 copies of 21 floats a window instead of
 * 49 of 3); more channels keep a copy a tap, each of constant size. */
static void emit_windows_last(Emit *e, const ConvGeom *c, const char *x, const char *y, const char *T,
                              const RowBlock *blk) {
  Arena *a = e->g->arena;
  int ns = c->nsp, lj = ns - 1;
  bool run = c->dil[lj] == 1 && c->k[lj] > 1 && c->cin < 16;
  const char *ov[MAX_RANK], *kv[MAX_RANK], *land[MAX_RANK], *inside = NULL;
  open_window_rows(e, c, x, y, T, ov, kv, blk);
  int loops = run ? ns - 1 : ns;
  for (int j = 0; j < loops; j++) {
    emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", kv[j], kv[j], (long long)c->k[j], kv[j]);
    e->indent++;
    land[j] = arena_printf(a, "i%s", window_dim_sfx(a, ns, j));
    if (landing_read(c, j))
      emit_line(e, "const int %s = %s;", land[j], conv_landing(a, c, j, ov[j], kv[j]));
    if (overhangs(c, j)) {
      const char *t = arena_printf(a, "(unsigned)%s < %lldu", land[j], (long long)c->in[j]);
      inside = inside ? arena_printf(a, "%s && %s", inside, t) : t;
    }
  }
  if (run) { /* the last dim's K taps as one run */
    int64_t k = c->k[lj], ch = c->cin;
    kv[lj] = "0";
    land[lj] = arena_printf(a, "i%s", window_dim_sfx(a, ns, lj));
    emit_line(e, "const int %s = %s; /* the run's first landing */", land[lj], conv_landing(a, c, lj, ov[lj], "0"));
    emit_line(e, "%s *dst = r + (%s) * %lld;", T, window_flat(a, ns, kv, c->k, false), (long long)ch);
    if (inside) {
      emit_line(e, "if (!(%s)) { /* in the pads */", inside);
      emit_line(e, "  memset(dst, 0, sizeof(%s) * %lld);", T, (long long)(k * ch));
      emit_line(e, "  continue;");
      emit_line(e, "}");
    }
    if (!overhangs(c, lj)) {
      emit_line(e, "memcpy(dst, xn + (%s) * %lld, sizeof(%s) * %lld);", window_flat(a, ns, land, c->in, false),
                (long long)ch, T, (long long)(k * ch));
    } else { /* taps [lo, hi) inside x */
      const char *iw = land[lj];
      emit_line(e, "const int lo = %s < 0 ? -%s : 0, end = %lld - %s, hi = end < %lld ? (end > lo ? end : lo) : %lld;",
                iw, iw, (long long)c->in[lj], iw, (long long)k, (long long)k);
      emit_line(e, "if (lo == 0 && hi == %lld) { /* all inside: a copy of constant size */", (long long)k);
      emit_line(e, "  memcpy(dst, xn + (%s) * %lld, sizeof(%s) * %lld);", window_flat(a, ns, land, c->in, false),
                (long long)ch, T, (long long)(k * ch));
      emit_line(e, "  continue;");
      emit_line(e, "}");
      land[lj] = arena_printf(a, "(%s + lo)", iw);
      emit_line(e, "memset(dst, 0, sizeof(%s) * %lld * (size_t)lo);", T, (long long)ch);
      emit_line(e, "memcpy(dst + %lld * lo, xn + (%s) * %lld, sizeof(%s) * %lld * (size_t)(hi - lo));", (long long)ch,
                window_flat(a, ns, land, c->in, false), (long long)ch, T, (long long)ch);
      emit_line(e, "memset(dst + %lld * hi, 0, sizeof(%s) * %lld * (size_t)(%lld - hi));", (long long)ch, T,
                (long long)ch, (long long)k);
    }
  } else {
    emit_line(e, "%s *dst = r + (%s) * %lld;", T, window_flat(a, ns, kv, c->k, false), (long long)c->cin);
    const char *copy = arena_printf(a, "memcpy(dst, xn + (%s) * %lld, sizeof(%s) * %lld);",
                                    window_flat(a, ns, land, c->in, false), (long long)c->cin, T, (long long)c->cin);
    if (inside) {
      emit_line(e, "if (%s)", inside);
      emit_line(e, "  %s", copy);
      emit_line(e, "else /* in the pads */");
      emit_line(e, "  memset(dst, 0, sizeof(%s) * %lld);", T, (long long)c->cin);
    } else {
      emit_line(e, "%s", copy);
    }
  }
  for (int i = 0; i < ns + loops + 1; i++) {
    e->indent--;
    emit_line(e, "}");
  }
}

static void conv_blocks_emit(Emit *e, const Node *n);

bool im2row_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  if (n->op == OP_CONVBLOCKS) {
    conv_blocks_emit(e, n);
    return true;
  }
  const Value *x = node_in(g, n, 0);
  ConvGeom c;
  char why[WHY];
  KILN_ASSERT(im2row_geom(n, &x->type, &c, why));
  DType dt = x->type.dt;
  const char *T = dt_ctype(dt);
  if (type_numel(&node_out(g, n, 0)->type) == 0)
    return true;
  bool plain = true; /* 1x1, stride 1, no pad: a transpose */
  for (int j = 0; j < c.nsp; j++)
    plain = plain && c.k[j] == 1 && c.stride[j] == 1 && c.pad[j] == 0 && c.out[j] == c.in[j];
  char ts[128], ys[128];
  if (attr_int(n, "channels_last", 0))
    emit_line(e, "/* the windows of x %s (channels last) as rows of y %s: y[n][p][t·C + c] = x[n][o·s + t·d - pad][c], 0 in "
              "the pads */", type_str(&x->type, ts, sizeof ts), type_str(&node_out(g, n, 0)->type, ys, sizeof ys));
  else
    emit_line(e, "/* the windows of x %s as rows of y %s: y[n][p][c·K + t] = x[n][c][o·s + t·d - pad], 0 in the pads */",
              type_str(&x->type, ts, sizeof ts), type_str(&node_out(g, n, 0)->type, ys, sizeof ys));
  const char *xr = emit_ref(e, n->in[0]), *yr = emit_ref(e, n->out[0]);
  if (attr_int(n, "channels_last", 0))
    emit_windows_last(e, &c, xr, yr, T, NULL);
  else if (plain)
    emit_transpose(e, &c, xr, yr, T);
  else
    emit_windows(e, &c, xr, yr, T, dt);
  return true;
}

/* ---- ConvBlocks ----------------------------------------------------------------
 *
 * ConvBlocks(x, Wᵀ [C·K, M], B [M] [, R [N, P, M]]) {Im2Row's attributes,
 * channels_last=1, act, block}: y [N, P, M] = act(Im2Row(x) · Wᵀ + B) + R,
 * where the rows of Im2Row are never all in memory: the output positions
 * go in blocks of `block` positions of the outer output dim (all of the
 * others), each block's windows copied into an array on the stack, then
 * multiplied by the packed Wᵀ while they are in cache (the conv_gemm pass
 * makes it where the rows would be large; compiler/passes/conv_gemm.c).
 * The blocks are split among the threads. */

/* Its geometry, with the sizes the kernel needs. */
typedef struct BlockGeom {
  ConvGeom c;
  int64_t p, inner, ck, m, hb, per_image;
} BlockGeom;

static bool conv_blocks_geom(const Graph *g, const Node *n, BlockGeom *b, char *why) {
  const Type *x = &node_in(g, n, 0)->type, *w = &node_in(g, n, 1)->type;
  if (!attr_int(n, "channels_last", 0))
    return window_fail(why, "channels_last is 0; expected 1 (ConvBlocks reads x channels last)");
  if (!im2row_geom(n, x, &b->c, why))
    return false;
  b->p = window_prod(b->c.out, b->c.nsp);
  b->inner = b->p / b->c.out[0];
  b->ck = b->c.cin * window_prod(b->c.k, b->c.nsp);
  b->hb = attr_int(n, "block", 0);
  if (w->rank != 2 || w->dims[0] != b->ck || w->dt != x->dt)
    return window_fail(why, "W is %s of rank %d; expected %s [%lld, M] (the windows' %lld columns)", dt_name(w->dt),
                       w->rank, dt_name(x->dt), (long long)b->ck, (long long)b->ck);
  b->m = w->dims[1];
  if (b->hb < 1 || b->c.out[0] % b->hb)
    return window_fail(why, "block is %lld; expected a divisor of the outer output dim %lld", (long long)b->hb,
                       (long long)b->c.out[0]);
  b->per_image = b->c.out[0] / b->hb;
  return true;
}

static bool conv_blocks_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0);
  if (x->type.dt != DT_F32)
    return diag_node(d, g, n, "input '%s' is %s; expected f32", x->name, dt_name(x->type.dt));
  BlockGeom b;
  char why[WHY];
  if (!conv_blocks_geom(g, n, &b, why))
    return diag_node(d, g, n, "%s", why);
  Type t = {.dt = DT_F32, .rank = 3, .dims = {b.c.batch, b.p, b.m}};
  if (!window_epilogue_infer(g, n, 2, 3, &t, d))
    return false;
  node_out(g, n, 0)->type = t;
  return true;
}

static bool conv_blocks_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  ConvGeom c;
  char why[WHY];
  KILN_ASSERT(im2row_geom(n, &in[0].type, &c, why));
  int64_t isz = window_prod(c.in, c.nsp), osz = window_prod(c.out, c.nsp), ksz = window_prod(c.k, c.nsp);
  int64_t ck = c.cin * ksz, m = in[1].type.dims[1], o[MAX_RANK], t[MAX_RANK];
  const float *x = in[0].data, *w = in[1].data, *b = node_has_in(n, 2) ? in[2].data : NULL;
  const float *r = node_has_in(n, 3) ? in[3].data : NULL;
  bool relu = !strcmp(attr_str(n, "act", "none"), "relu");
  double *row = malloc(sizeof(double) * (size_t)(ck > 0 ? ck : 1));
  if (!row)
    return diag_error(d, "out of memory evaluating ConvBlocks' windows of %lld columns", (long long)ck);
  float *y = out[0].data;
  for (int64_t nb = 0; nb < c.batch; nb++)
    for (int64_t p = 0; p < osz; p++) {
      window_unflatten(p, c.out, c.nsp, o);
      for (int64_t i = 0; i < ck; i++) { /* tap-major: column t·C + c */
        int64_t xoff;
        window_unflatten(i / c.cin, c.k, c.nsp, t);
        row[i] = conv_source(&c, o, t, &xoff) ? x[(nb * isz + xoff) * c.cin + i % c.cin] : 0;
      }
      for (int64_t j = 0; j < m; j++) {
        double s = b ? b[j] : 0;
        for (int64_t i = 0; i < ck; i++)
          s += row[i] * w[i * m + j];
        float v = (float)s;
        if (relu)
          v = v > 0 ? v : 0;
        int64_t yi = (nb * osz + p) * m + j;
        y[yi] = r ? v + r[yi] : v;
      }
    }
  free(row);
  return true;
}

static void conv_blocks_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  BlockGeom b;
  char why[WHY], xs[96], ys[96];
  KILN_ASSERT(conv_blocks_geom(g, n, &b, why));
  const Value *w = node_in(g, n, 1);
  int64_t rb = b.hb * b.inner, nblocks = b.c.batch * b.per_image;
  bool relu = !strcmp(attr_str(n, "act", "none"), "relu");
  emit_line(e, "/* a conv as blocks of %lld window rows: x %s (channels last) -> y %s = %sthe windows x W [%lld, %lld]%s%s; "
               "each block's windows copied to rows, then multiplied while in cache */",
            (long long)rb, type_str(&node_in(g, n, 0)->type, xs, sizeof xs), type_str(&node_out(g, n, 0)->type, ys, sizeof ys),
            relu ? "relu of " : "", (long long)b.ck, (long long)b.m, node_has_in(n, 2) ? " + bias" : "",
            node_has_in(n, 3) ? ", + the residual" : "");
  const char *xr = emit_ref(e, n->in[0]), *yr = emit_ref(e, n->out[0]);
  emit_parallel_for(e, nblocks, 2.0 * (double)(b.c.batch * b.p * b.ck * b.m) / 100);
  emit_line(e, "for (int blk = 0; blk < %lld; blk++) { /* image blk / %lld, outer output positions from blk %% %lld * %lld */",
            (long long)nblocks, (long long)b.per_image, (long long)b.per_image, (long long)b.hb);
  e->indent++;
  emit_line(e, "const int n = blk / %lld, oh0 = blk %% %lld * %lld;", (long long)b.per_image, (long long)b.per_image,
            (long long)b.hb);
  emit_line(e, "float rows[%lld] KILN_ALIGNED(64); /* [%lld][%lld]: this block's windows */", (long long)(rb * b.ck),
            (long long)rb, (long long)b.ck);
  int threads = e->threads;
  e->threads = 1; /* a block runs whole on the thread that took it */
  emit_windows_last(e, &b.c, xr, NULL, "float", &(RowBlock){b.hb, "rows"});
  const char *off = arena_printf(a, "((int64_t)n * %lld + oh0 * %lld) * %lld", (long long)b.p, (long long)b.inner,
                                 (long long)b.m);
  GemmSpec s = {.m = rb, .n = b.m, .k = b.ck, .a = "rows", .a_rs = b.ck, .b = w->data, .b_name = w->name,
                .bias = node_has_in(n, 2) ? emit_ref(e, n->in[2]) : NULL, .act = relu ? GEMM_ACT_RELU : GEMM_ACT_NONE,
                .residual = node_has_in(n, 3) ? arena_printf(a, "%s + %s", emit_ref(e, n->in[3]), off) : NULL,
                .y = arena_printf(a, "%s + %s", yr, off)};
  KILN_ASSERT(emit_gemm(e, &s));
  e->threads = threads;
  e->indent--;
  emit_line(e, "}");
}

/* ConvBlocks: the product's 2·N·P·(C·K)·M. */
int64_t conv_blocks_flops(const Graph *g, const Node *n) {
  const Type *y = &gval(g, n->out[0])->type, *w = &node_in(g, n, 1)->type;
  return w->rank == 2 ? 2 * type_numel(y) * w->dims[0] : type_numel(y);
}
