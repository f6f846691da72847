/* conv_gemm.c — the conv_gemm pass: an f32 convolution by a constant
 * weight (group 1) becomes one GEMM on the packed kernel Linear uses
 * (compiler/kernels/gemm_kernel.c), its bias and a following Relu or Gelu
 * in that kernel's epilogue:
 *
 *   Conv(x [N,C,in...], W [M,C,k...], B [M]) [-> Relu | Gelu]
 *     rows = Im2Row(x) {Conv's window attributes}   [N, P, C·K]
 *     t    = Linear(rows, Wᵀ [C·K, M], B) {act}     [N, P, M]
 *     y    = Reshape(Transpose(t, [0,2,1]), [N, M, out...])
 *
 * P = prod(out) output positions, K = prod(k) taps. For a 1x1 conv with
 * stride 1 and no pad Im2Row is a transpose of x's channel planes, so the
 * product is the GEMM over channels it is; a k x k conv's rows are its
 * windows (im2row), zero in the pads. Wᵀ is a new constant that the
 * emitter packs into panels once, at compile time, as for any Linear. The
 * new nodes are named CONV/Im2Row, CONV/Linear, ... after the Conv and
 * keep its origin, and take the slot of the last node replaced.
 *
 * Between convs the activations stay channels last: when a conv reads the
 * output of a conv lowered before it, its rows come from that conv's GEMM
 * result t [N, P, C] (Im2Row {channels_last}, Wᵀ's rows tap-major; a 1x1
 * stride-1 conv's rows are t itself), so the Transpose back to NCHW is
 * only computed for other readers (dce drops it when there are none).
 * A conv with a window of several taps (or a stride) reading NCHW x
 * transposes x to channels last first and reads its rows the same way.
 *
 * The layout follows the activations past convs: an elementwise op
 * (Add, Mul, Relu, HardSwish, ...; layout_node) whose operands of its own
 * shape all have a channels-last form, the others scalars or one value a
 * channel ([1, C, 1, ...], read as [1, 1, C]), is computed on those forms,
 * a ReduceMean/Sum/Max over the spatial dims (kept) is one over P, an
 * f32 MaxPool reading one runs as MaxPool {channels_last=1}
 * (compiler/ops/pool.c), so does an AveragePool that divides by the taps
 * inside x (avg_pool_last), and a depthwise conv by a constant W as Conv
 * {channels_last=1} (compiler/ops/conv.c); their results are channels-last forms in turn,
 * with a Transpose back to NCHW for other readers, as a conv's. So a
 * ResNet block's residual Add and Relu, and the max pool after a stem,
 * read and write [N, P, C] and the convs after them read it with no
 * transpose; what is left of the Transposes (a reader that is none of
 * these: a global pool, a Reshape to a sequence) is
 * computed once, where that reader is. dce runs at the end, so
 * fuse_residual then finds a conv's GEMM result read by the Add alone.
 *
 * A ConvTranspose whose taps never overlap (kernel = stride, the PP-OCR
 * detector's 2x2 stride-2 upsampling) is a GEMM followed by a placement:
 *
 *   ConvTranspose(x [N,C,in...], W [C, M, k...], B [M]) [-> Relu | Gelu]
 *     t  = Linear(rows of x [N, P, C], W' [C, K·M], B tiled K times) {act}
 *     cl = Transpose(t as [N, in..., k..., M] to [N, in1, k1, in2, k2, .., M])
 *     y  = Transpose(cl as [N, P·K, M], [0,2,1]) viewed as [N, M, out...]
 *
 * out_j = in_j·k_j, so cl, rows of k_last·M contiguous floats placed, is
 * y channels last: the convs and layout ops after it read cl as they read
 * a conv's GEMM result (gemm_deconv has the conditions).
 *
 * Depthwise and grouped convolutions, other ConvTransposes, f64 and a W
 * computed at run time stay Conv nodes (conv.c's direct loops). Runs after fold_bn,
 * so a BatchNormalization after the Conv is already in W and B, and after
 * fuse_gelu, so a GELU after it is one Gelu node the epilogue takes. */
#include <stdio.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "../ops/convgeom.h"
#include "../ops/elementwise_chain.h"
#include "../ops/window.h"
#include "../ops/winograd.h"
#include "fuse_match.h"
#include "passes.h"

/* Node n is an `op` (Conv or ConvTranspose) the GEMM can take: f32, one
 * group, a constant W and B, spatial dims, nothing empty. */
static bool gemm_ready(const Graph *g, const Node *n, int op) {
  if (n->op != op || n->nout != 1)
    return false;
  const Value *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
  const Value *b = node_has_in(n, 2) ? &g->vals[n->in[2]] : NULL;
  const Type *yt = &g->vals[n->out[0]].type;
  return x->type.dt == DT_F32 && w->type.dt == DT_F32 && w->data && (!b || b->data) &&
         attr_int(n, "group", 1) == 1 && x->type.rank >= 3 && yt->rank == x->type.rank &&
         type_numel(yt) > 0 && type_numel(&w->type) > 0;
}

/* The lowering that replaces conv (or ConvTranspose) ci, through node
 * last (its activation, or ci): its nodes named after ci, their origin
 * both nodes'. */
static Lowering conv_lowering(Graph *g, int ci, int last, Diag *d) {
  Lowering l = lw_start(g, last, DT_F32, d);
  const Node *c = &g->nodes[ci];
  l.name = c->name;
  if (last != ci)
    l.origin = arena_printf(g->arena, "%s + %s", c->origin ? c->origin : c->name,
                            g->nodes[last].origin ? g->nodes[last].origin : g->nodes[last].name);
  return l;
}

/* Conv node n is one this pass rewrites. */
static bool gemm_conv(const Graph *g, const Node *n) { return gemm_ready(g, n, OP_CONV); }

/* Wᵀ: W [M, C·K] transposed to Linear's [C·K, M], a new constant; with
 * last (channels-last rows) its rows in tap-major order, [K·C, M]. */
static int weight_t(Graph *g, int w, const char *conv, bool last) {
  const Value *wv = &g->vals[w];
  int64_t m = wv->type.dims[0], ck = type_numel(&wv->type) / m, c = wv->type.dims[1], k = ck / c;
  float *t = arena_alloc(g->arena, sizeof(float) * (size_t)(m * ck));
  const float *src = wv->data;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < ck; j++)
      t[(last ? j % k * c + j / k : j) * m + i] = src[i * ck + j];
  int64_t dims[2] = {ck, m};
  return ir_const_in_place(g, arena_printf(g->arena, "%s_gemm_w", conv), DT_F32, 2, dims, t);
}

/* Conv's window attributes, onto Im2Row node idx (kernel_shape from W). */
static void window_attrs(Graph *g, int idx, const Node *conv, const Type *wt) {
  int64_t ks[MAX_RANK];
  for (int j = 2; j < wt->rank; j++)
    ks[j - 2] = wt->dims[j];
  ir_attr_ints(g, idx, "kernel_shape", ks, wt->rank - 2);
  static const char *names[] = {"strides", "pads", "dilations"};
  for (int i = 0; i < 3; i++) {
    const Attr *a = attr_get(conv, names[i]);
    if (a && a->kind == ATTR_INTS && a->n > 0)
      ir_attr_ints(g, idx, names[i], a->ints, a->n);
  }
  const char *ap = attr_str(conv, "auto_pad", NULL);
  if (ap)
    ir_attr_str(g, idx, "auto_pad", ap);
}

/* Conv node c is 1x1 with stride 1 and no pad: its rows are x's
 * positions. */
static bool pointwise(const Graph *g, const Node *c) {
  const Type *x = &g->vals[c->in[0]].type, *w = &g->vals[c->in[1]].type, *y = &g->vals[c->out[0]].type;
  const Attr *st = attr_get(c, "strides");
  for (int j = 2; j < x->rank; j++)
    if (w->dims[j] != 1 || y->dims[j] != x->dims[j] || (st && st->kind == ATTR_INTS && j - 2 < st->n && st->ints[j - 2] != 1))
      return false;
  return true;
}

/* The end of a lowering l of node `last`: its output, of NCHW type yt,
 * as Transpose(t [N, P, C], [0, 2, 1]) viewed as yt. */
static bool back_to_nchw(Lowering *l, int t, const Type *yt, int last) {
  Graph *g = l->g;
  int tr = lw_node(l, OP_TRANSPOSE, &t, 1, 1);
  if (tr < 0)
    return false;
  int64_t perm[3] = {0, 2, 1};
  ir_attr_ints(g, tr, "perm", perm, 3);
  int t2 = lw_finish(l, tr), y = lw_reshape(l, t2, yt->dims, yt->rank);
  if (!lw_result(l, y, 0))
    return false;
  Value *out = &g->vals[g->nodes[last].out[0]];
  if (y != t2 && !out->is_output) /* the Reshape is a view, as simplify makes them */
    out->alias_of = t2;
  return true;
}

/* x [N, C, in...] as [N, in..., C]: its channels-last form cl [N, P, C]
 * viewed so. */
static int last_view(Lowering *l, int x, int cl) {
  Graph *g = l->g;
  const Type *xt = &g->vals[x].type;
  int64_t dims[MAX_RANK];
  dims[0] = xt->dims[0];
  for (int j = 2; j < xt->rank; j++)
    dims[j - 1] = xt->dims[j];
  dims[xt->rank - 1] = xt->dims[1];
  int src = lw_reshape(l, cl, dims, xt->rank);
  if (src >= 0 && src != cl) /* a view, as simplify makes Reshapes */
    g->vals[src].alias_of = cl;
  return src;
}

/* ---- rows by blocks -------------------------------------------------------- */

/* The rows of a conv whose Im2Row would exceed CONV_BLOCKS_MIN_BYTES (out
 * of L2) by a weight of at most CONV_BLOCKS_MAX_W_BYTES (in L2) go a block
 * at a time (ConvBlocks, compiler/ops/im2row.c), each block at most
 * CONV_BLOCK_BYTES on the stack: written, then multiplied while in cache,
 * where the whole Im2Row is written to memory and read back by the GEMM.
 * The ResNet-18-sized CNN's 7x7 stride-2 stem at 224 (7.4 MB of rows):
 * see DESIGN.md. */
#define CONV_BLOCKS_MIN_BYTES (1 << 20)
#define CONV_BLOCKS_MAX_W_BYTES (1 << 19)
#define CONV_BLOCK_BYTES (256 << 10)

/* The block (positions of the outer output dim) for conv c [-> act], its
 * rows read channels last: the largest divisor of that dim whose rows fit
 * CONV_BLOCK_BYTES; 0 to keep Im2Row -> Linear (rows or weight out of
 * bounds, an act the block's GEMM epilogue does not take here). */
static int64_t block_rows(const Graph *g, const Node *c, const char *act) {
  const Type *w = &g->vals[c->in[1]].type, *y = &g->vals[c->out[0]].type;
  if (strcmp(act, "none") && strcmp(act, "relu"))
    return 0;
  int64_t ck = type_numel(w) / w->dims[0], m = w->dims[0], outer = y->dims[2];
  int64_t p = type_numel(y) / (y->dims[0] * m), inner = p / outer;
  if (4 * y->dims[0] * p * ck <= CONV_BLOCKS_MIN_BYTES || 4 * ck * m > CONV_BLOCKS_MAX_W_BYTES)
    return 0;
  for (int64_t hb = outer; hb >= 1; hb--)
    if (outer % hb == 0 && 4 * hb * inner * ck <= CONV_BLOCK_BYTES)
      return hb;
  return 0;
}

/* ---- Winograd ----------------------------------------------------------- */

/* The fewest tiles (of 2x2 outputs) for which a 3x3 conv takes
 * Winograd's form: below it the α² GEMMs are too short to run at speed
 * and the transformed weight (16/9 of W) is streamed for too few rows. */
#define WINOGRAD_MIN_TILES 32
/* The fewest input and output channels: the transforms cost per channel
 * what a few of the products' multiply-adds do. */
#define WINOGRAD_MIN_CHANNELS 16

/* The tile m of F(m x m, 3 x 3) that conv c [-> act] takes, or 0 when it
 * stays Im2Row -> Linear: a 2-D 3x3 conv with stride and dilation 1, act
 * none or relu (the output transform's epilogue), at least
 * WINOGRAD_MIN_CHANNELS channels in and out and WINOGRAD_MIN_TILES tiles
 * (compiler/ops/winograd.c). F(4x4, 3x3) where the image has that many
 * 4x4 tiles (4x fewer multiplies than the direct sum, U 4x W's size),
 * else F(2x2, 3x3) (2.25x, 16/9). On the ResNet-18-sized CNN at 224 that
 * is F(4x4) at 56x56 and 28x28, F(2x2) at 14x14 and the direct GEMM at
 * 7x7, where 16 tiles of 2x2 would stream 16/9 of the largest weights
 * for too few rows. Accuracy: F(2x2)'s matrices are 0, ±1 and ±1/2, its
 * sums as accurate as the direct ones; F(4x4)'s points ±2, ±1/2 cost a
 * few bits (measured on that CNN against ONNX Runtime: max relative error
 * of the logits 2.3e-4 of magnitude ~1e-3 outputs, 4.2e-7 absolute, as the
 * direct GEMM's 1.5e-4 / 4.2e-7). */
static int64_t winograd_tile(const Graph *g, const Node *c, const char *act) {
  const Type *x = &g->vals[c->in[0]].type, *w = &g->vals[c->in[1]].type, *y = &g->vals[c->out[0]].type;
  if (x->rank != 4 || w->dims[2] != 3 || w->dims[3] != 3 || (strcmp(act, "none") && strcmp(act, "relu")))
    return 0;
  ConvGeom cg;
  char why[WHY];
  if (!conv_geom(c, x, w, &cg, why))
    return 0;
  for (int j = 0; j < 2; j++) /* pads of 0-2 on each side: every window meets x */
    if (cg.stride[j] != 1 || cg.dil[j] != 1 || cg.pad[j] < 0 || cg.pad[j] > 2 ||
        y->dims[2 + j] + 2 - cg.in[j] - cg.pad[j] > 2)
      return 0;
  if (cg.cin < WINOGRAD_MIN_CHANNELS || cg.cout < WINOGRAD_MIN_CHANNELS)
    return 0;
  for (int64_t m = 4; m >= 2; m -= 2) /* the larger tile where the image has enough of them */
    if (y->dims[0] * ((y->dims[2] + m - 1) / m) * ((y->dims[3] + m - 1) / m) >= WINOGRAD_MIN_TILES)
      return m;
  return 0;
}

/* Conv c's Winograd chain on src, its input channels last [N, H, W, C]:
 * WinogradIn -> MatMul by U [α², C, M] -> WinogradOut (+ bias, act); the
 * result [N, P, M], or -1. */
static int lower_winograd(Lowering *l, const Node *c, int src, int64_t m, const char *act) {
  Graph *g = l->g;
  const Value *wv = &g->vals[c->in[1]];
  const Type *xt = &g->vals[c->in[0]].type, *yt = &g->vals[c->out[0]].type;
  ConvGeom cg;
  char why[WHY];
  KILN_ASSERT(conv_geom(c, xt, &wv->type, &cg, why));
  int64_t cout = wv->type.dims[0], cin = wv->type.dims[1], aa = (m + 2) * (m + 2);
  int64_t udims[3] = {aa, cin, cout}, pads[2] = {cg.pad[0], cg.pad[1]}, out[2] = {yt->dims[2], yt->dims[3]};
  int u = ir_const_in_place(g, arena_printf(g->arena, "%s_winograd_w", c->name), DT_F32, 3, udims,
                            winograd_weight(g->arena, m, wv->data, cout, cin));
  int win = lw_node(l, OP_WINOGRADIN, &src, 1, 1);
  if (win < 0)
    return -1;
  ir_attr_int(g, win, "tile", m);
  ir_attr_ints(g, win, "pads", pads, 2);
  ir_attr_ints(g, win, "out", out, 2);
  int v = lw_finish(l, win), mm_in[2] = {v, u};
  int prod = lw_finish(l, lw_node(l, OP_MATMUL, mm_in, 2, 1));
  int b = node_has_in(c, 2) ? c->in[2] : -1, out_in[2] = {prod, b};
  int wout = lw_node(l, OP_WINOGRADOUT, out_in, b >= 0 ? 2 : 1, 1);
  if (wout < 0)
    return -1;
  ir_attr_int(g, wout, "tile", m);
  ir_attr_ints(g, wout, "out", out, 2);
  ir_attr_str(g, wout, "act", act);
  return lw_finish(l, wout);
}

/* The chain for conv ci [-> activation ai], in place of node last (ai,
 * or ci); false with a diag when a node of it fails to infer. cl >= 0:
 * x is the output of a conv this pass lowered, whose GEMM result cl
 * [N, P, C] holds x channels last: the rows are read from it (a 1x1
 * conv's rows are cl itself) instead of from x, which then needs no
 * transpose back for this reader. wino > 0: Winograd's F(wino x wino,
 * 3x3) instead (winograd_tile); hb > 0: ConvBlocks of hb output rows
 * (block_rows; a conv that is not pointwise). *gemm_out: the product's
 * output [N, P, M]. */
static bool lower_conv(Graph *g, int ci, int last, const char *act, int cl, int64_t wino, int64_t hb,
                       int *gemm_out, Diag *d) {
  Lowering l = conv_lowering(g, ci, last, d);
  const Node *c = &g->nodes[ci];
  int x = c->in[0], w = c->in[1], b = node_has_in(c, 2) ? c->in[2] : -1;
  Type wt = g->vals[w].type, yt = g->vals[c->out[0]].type;
  /* x in NCHW and a window of more than one tap (or a stride): x is
   * transposed to channels last once, its rows then copies of C channels
   * (where NCHW rows gather element by element, testing each for the pads:
   * measured 2.4x slower on a 64-channel 3x3 conv at 56x56, 1.2x on a
   * 3-channel 7x7 stride-2 stem) */
  bool to_last = cl < 0 && !pointwise(g, c);
  int wtv = wino ? -1 : weight_t(g, w, c->name, cl >= 0 || to_last), rows;
  if (cl >= 0 && pointwise(g, c)) {
    rows = cl;
  } else {
    int src = x;
    if (to_last) { /* x [N, C, in...] -> [N, in..., C] */
      const Type *xt = &g->vals[x].type;
      int tr = lw_node(&l, OP_TRANSPOSE, &x, 1, 1);
      if (tr < 0)
        return false;
      int64_t perm[MAX_RANK];
      perm[0] = 0;
      for (int j = 2; j < xt->rank; j++)
        perm[j - 1] = j;
      perm[xt->rank - 1] = 1;
      ir_attr_ints(g, tr, "perm", perm, xt->rank);
      if ((src = lw_finish(&l, tr)) < 0)
        return false;
    } else if (cl >= 0) { /* cl [N, P, C] viewed as [N, in..., C] */
      if ((src = last_view(&l, x, cl)) < 0)
        return false;
    }
    if (wino) {
      int t = lower_winograd(&l, c, src, wino, act);
      *gemm_out = t;
      return t >= 0 && back_to_nchw(&l, t, &yt, last);
    }
    if (hb) { /* ConvBlocks: the rows a block at a time, each multiplied while in cache */
      int cb_in[3] = {src, wtv, b};
      int cb = lw_node(&l, OP_CONVBLOCKS, cb_in, b >= 0 ? 3 : 2, 1);
      if (cb < 0)
        return false;
      window_attrs(g, cb, &g->nodes[ci], &wt);
      ir_attr_int(g, cb, "channels_last", 1);
      ir_attr_str(g, cb, "act", act);
      ir_attr_int(g, cb, "block", hb);
      int t = lw_finish(&l, cb);
      *gemm_out = t;
      return t >= 0 && back_to_nchw(&l, t, &yt, last);
    }
    int im = lw_node(&l, OP_IM2ROW, &src, 1, 1);
    if (im < 0)
      return false;
    window_attrs(g, im, &g->nodes[ci], &wt);
    if (cl >= 0 || to_last)
      ir_attr_int(g, im, "channels_last", 1);
    rows = lw_finish(&l, im);
  }
  int lin_in[3] = {rows, wtv, b};
  int lin = lw_node(&l, OP_LINEAR, lin_in, b >= 0 ? 3 : 2, 1);
  if (lin < 0)
    return false;
  ir_attr_str(g, lin, "act", act);
  int t = lw_finish(&l, lin);
  *gemm_out = t;
  return t >= 0 && back_to_nchw(&l, t, &yt, last);
}

/* ---- ConvTranspose as a GEMM ----------------------------------------------- */

/* ConvTranspose n is one this pass rewrites: f32, group 1, constant W
 * [C, M, k...] and B, and its taps never overlap or get cropped: kernel
 * = stride and dilation 1 in every spatial dim, begin pad 0 and out =
 * in·k (so no pads, no output_padding; auto_pad or an output_shape only
 * where they come to the same). At most 3 spatial dims (the placement's
 * Transpose has rank 2 + 2·dims). */
static bool gemm_deconv(const Graph *g, const Node *n) {
  if (!gemm_ready(g, n, OP_CONVTRANSPOSE))
    return false;
  const Value *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
  if (2 * x->type.rank - 2 > MAX_RANK)
    return false;
  ConvGeom c;
  char why[WHY];
  if (!conv_geom(n, &x->type, &w->type, &c, why))
    return false;
  for (int j = 0; j < c.nsp; j++)
    if (c.k[j] != c.stride[j] || c.dil[j] != 1 || c.pad[j] != 0 || c.out[j] != c.in[j] * c.k[j])
      return false;
  return true;
}

/* W [C, M, K] as Linear's W' [C, K·M] (column t·M + m), and B [M] tiled
 * K times to B' [K·M] (-1 when there is none): new constants. */
static void deconv_weights(Graph *g, const Node *n, int *wt, int *bt) {
  const Value *wv = &g->vals[n->in[1]];
  int64_t c = wv->type.dims[0], m = wv->type.dims[1], k = type_numel(&wv->type) / (c * m);
  float *w2 = arena_alloc(g->arena, sizeof(float) * (size_t)(c * k * m));
  const float *src = wv->data;
  for (int64_t i = 0; i < c; i++)
    for (int64_t o = 0; o < m; o++)
      for (int64_t t = 0; t < k; t++)
        w2[i * k * m + t * m + o] = src[(i * m + o) * k + t];
  int64_t wd[2] = {c, k * m}, bd[1] = {k * m};
  *wt = ir_const_in_place(g, arena_printf(g->arena, "%s_gemm_w", n->name), DT_F32, 2, wd, w2);
  *bt = -1;
  if (node_has_in(n, 2)) {
    const float *b = g->vals[n->in[2]].data;
    float *b2 = arena_alloc(g->arena, sizeof(float) * (size_t)(k * m));
    for (int64_t t = 0; t < k; t++)
      memcpy(b2 + t * m, b, sizeof(float) * (size_t)m);
    *bt = ir_const_in_place(g, arena_printf(g->arena, "%s_gemm_b", n->name), DT_F32, 1, bd, b2);
  }
}

/* Value v viewed as dims (a Reshape made a free alias, as simplify makes
 * them), or -1. */
static int view_as(Lowering *l, int v, const int64_t *dims, int rank) {
  int r = lw_reshape(l, v, dims, rank);
  if (r >= 0 && r != v)
    l->g->vals[r].alias_of = v;
  return r;
}

/* The chain for ConvTranspose ci [-> activation ai] (gemm_deconv), in
 * place of node last: its rows (cl >= 0: x's channels-last form [N, P,
 * C] itself, else Im2Row of x by a 1x1 window), the Linear, the
 * placement into y channels last (*cl_out, [N, P·K, M]) and the
 * Transpose back to NCHW. */
static bool lower_deconv(Graph *g, int ci, int last, const char *act, int cl, int *cl_out, Diag *d) {
  Lowering l = conv_lowering(g, ci, last, d);
  const Node *c = &g->nodes[ci];
  int x = c->in[0], ns = g->vals[x].type.rank - 2, wt, bt, rows = cl;
  Type xt = g->vals[x].type, yt = g->vals[c->out[0]].type, w = g->vals[c->in[1]].type;
  deconv_weights(g, &g->nodes[ci], &wt, &bt);
  if (rows < 0) { /* x [N, C, in...] -> rows [N, P, C] */
    int im = lw_node(&l, OP_IM2ROW, &x, 1, 1);
    if (im < 0)
      return false;
    int64_t ones[MAX_RANK];
    for (int j = 0; j < ns; j++)
      ones[j] = 1;
    ir_attr_ints(g, im, "kernel_shape", ones, ns);
    if ((rows = lw_finish(&l, im)) < 0)
      return false;
  }
  int lin_in[3] = {rows, wt, bt};
  int lin = lw_node(&l, OP_LINEAR, lin_in, bt >= 0 ? 3 : 2, 1);
  if (lin < 0)
    return false;
  ir_attr_str(g, lin, "act", act);
  int t = lw_finish(&l, lin);
  /* t [N, P, K·M] as [N, in..., k..., M] -> [N, in1, k1, in2, k2, ..., M] */
  int64_t dims[MAX_RANK], perm[MAX_RANK];
  dims[0] = xt.dims[0];
  perm[0] = 0;
  for (int j = 0; j < ns; j++) {
    dims[1 + j] = xt.dims[2 + j];
    dims[1 + ns + j] = w.dims[2 + j];
    perm[1 + 2 * j] = 1 + j;
    perm[2 + 2 * j] = 1 + ns + j;
  }
  dims[1 + 2 * ns] = yt.dims[1];
  perm[1 + 2 * ns] = 1 + 2 * ns;
  int tv = t < 0 ? -1 : view_as(&l, t, dims, 2 + 2 * ns);
  int tr = tv < 0 ? -1 : lw_node(&l, OP_TRANSPOSE, &tv, 1, 1);
  if (tr < 0)
    return false;
  ir_attr_ints(g, tr, "perm", perm, 2 + 2 * ns);
  int placed = lw_finish(&l, tr);
  int64_t last_dims[3] = {yt.dims[0], type_numel(&yt) / (yt.dims[0] * yt.dims[1]), yt.dims[1]};
  *cl_out = placed < 0 ? -1 : view_as(&l, placed, last_dims, 3);
  return *cl_out >= 0 && back_to_nchw(&l, *cl_out, &yt, last);
}

/* The activation the GEMM's epilogue can take after conv n: its output's
 * sole reader when that is a Relu or a Gelu (its index in *ai). */
static const char *epilogue_act(Fuser *f, const Node *n, int *ai) {
  Node *u = fm_sole_user(f, n->out[0], -1);
  const char *act = NULL;
  if (u && u->op == OP_RELU)
    act = "relu";
  else if (u && u->op == OP_GELU)
    act = !strcmp(attr_str(u, "approximate", "none"), "tanh") ? "gelu_tanh" : "gelu";
  if (!act || !type_equal(&f->g->vals[u->out[0]].type, &f->g->vals[n->out[0]].type))
    return "none";
  *ai = (int)(u - f->g->nodes);
  return act;
}

/* ---- the layout past the convs ---------------------------------------- */

/* Elementwise ops the layout follows: those an ElementwiseChain holds
 * (Where aside: its condition is bool) and the activations with
 * attributes. */
static bool layout_elementwise(const Node *n) {
  switch (n->op) {
  case OP_HARDSWISH:
  case OP_HARDSIGMOID:
  case OP_LEAKYRELU:
  case OP_ELU:
  case OP_GELU:
  case OP_CLIP:
    return true;
  default:
    return n->op != OP_WHERE && chain_op_arity(n->op) == n->nin;
  }
}

/* How operand v of an elementwise node with NCHW output type yt is read
 * channels last: 1 its form chlast[v], 2 as it is (one element), 3 as
 * [1, 1, C] (one value a channel: [1, C, 1, ...] or fewer leading dims),
 * 4 one value a channel with a form [N, 1, C] (a squeeze-and-excitation
 * scale), read as that; 0 not. */
static int operand_kind(const Graph *g, int v, const Type *yt, const int *chlast, int nv0) {
  const Type *t = &g->vals[v].type;
  if (t->dt != DT_F32)
    return 0;
  if (v < nv0 && chlast[v] >= 0 && type_equal(t, yt))
    return 1;
  if (v < nv0 && chlast[v] >= 0 && t->rank == yt->rank && (t->dims[0] == 1 || t->dims[0] == yt->dims[0]) &&
      t->dims[1] == yt->dims[1] && type_numel(t) == t->dims[0] * t->dims[1])
    return 4; /* [N, C, 1...] channels last: [N, 1, C], which broadcasts as it is */
  if (type_numel(t) == 1)
    return 2;
  int off = yt->rank - t->rank; /* numpy alignment: t's dim j is yt's j + off */
  if (off < 0)
    return 0;
  for (int j = 0; j < t->rank; j++)
    if (t->dims[j] != 1 && !(j + off == 1 && t->dims[j] == yt->dims[1]))
      return 0;
  return 3;
}

/* A reduction the layout follows (ReduceMean/Sum/Max). */
static bool layout_reduce(const Node *n) {
  return n->op == OP_REDUCEMEAN || n->op == OP_REDUCESUM || n->op == OP_REDUCEMAX;
}

/* Its axes are its second input (reduce.c: ReduceSum from opset 13, the
 * others from 18), else the attribute. */
static bool axes_input(const Node *n) { return n->opset >= (n->op == OP_REDUCESUM ? 13 : 18); }

/* Reduction n reads a channels-last form, f32, keeps its dims and reduces
 * exactly the spatial dims (a squeeze-and-excitation block's mean). */
static bool reduce_spatial(const Graph *g, const Node *n, const int *chlast, int nv0) {
  int x = n->in[0];
  if (x < 0 || x >= nv0 || chlast[x] < 0 || g->vals[x].type.dt != DT_F32 || attr_int(n, "keepdims", 1) != 1)
    return false;
  int r = g->vals[x].type.rank, na = 0;
  const int64_t *axes = NULL;
  if (axes_input(n)) {
    const Value *a = node_has_in(n, 1) ? &g->vals[n->in[1]] : NULL;
    if (!a || !a->data || a->type.dt != DT_I64)
      return false;
    axes = a->data;
    na = (int)type_numel(&a->type);
  } else {
    const Attr *a = attr_get(n, "axes");
    if (!a || a->kind != ATTR_INTS)
      return false;
    axes = a->ints;
    na = a->n;
  }
  bool seen[MAX_RANK] = {false};
  for (int k = 0; k < na; k++) {
    int64_t ax = axes[k] < 0 ? axes[k] + r : axes[k];
    if (ax < 2 || ax >= r || seen[ax])
      return false;
    seen[ax] = true;
  }
  return na == r - 2;
}

/* An AveragePool that pool.c runs channels last: no ceil_mode, and
 * padding only where count_include_pad=0 does not count it (each window
 * divides by its taps inside x). */
static bool avg_pool_last(const Node *n) {
  if (attr_int(n, "ceil_mode", 0))
    return false;
  if (n->opset >= 7 && attr_int(n, "count_include_pad", 0) == 0)
    return true;
  const char *ap = attr_str(n, "auto_pad", "NOTSET");
  if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"))
    return false;
  const Attr *p = attr_get(n, "pads");
  for (int i = 0; p && !strcmp(ap, "NOTSET") && i < p->n; i++)
    if (p->ints[i])
      return false;
  return true;
}

/* Is n a pool or a conv the layout makes {channels_last}? */
static bool layout_window_op(const Node *n) {
  return n->op == OP_MAXPOOL || n->op == OP_CONV || (n->op == OP_AVERAGEPOOL && avg_pool_last(n));
}

/* Node n can run channels last: an f32 elementwise op with one operand
 * of its shape at least in channels-last form and the others readable so
 * (operand_kind), or an f32 MaxPool without Indices (or an AveragePool,
 * avg_pool_last) on a channels-last form. */
static bool layout_node(const Graph *g, const Node *n, const int *chlast, int nv0) {
  if (n->nout != 1 || n->out[0] < 0)
    return false;
  const Type *yt = &g->vals[n->out[0]].type;
  if (yt->dt != DT_F32 || yt->rank < 3 || type_numel(yt) <= 0)
    return false;
  if (layout_reduce(n)) /* over every spatial dim, kept: over P of [N, P, C], the form of [N, C, 1...] */
    return reduce_spatial(g, n, chlast, nv0);
  if (layout_window_op(n)) {
    int x = n->in[0];
    if (x < 0 || x >= nv0 || chlast[x] < 0 || g->vals[x].type.dt != DT_F32)
      return false;
    if (n->op != OP_CONV)
      return true;
    /* a depthwise conv: group = C = M, W [C, 1, k...] constant */
    const Value *w = &g->vals[n->in[1]];
    int64_t c = g->vals[x].type.dims[1];
    return w->data && w->type.dt == DT_F32 && attr_int(n, "group", 1) == c && w->type.dims[0] == c &&
           w->type.dims[1] == 1 && yt->dims[1] == c && (!node_has_in(n, 2) || g->vals[n->in[2]].data);
  }
  if (!layout_elementwise(n))
    return false;
  int own = 0;
  for (int i = 0; i < n->nin; i++) {
    if (n->in[i] < 0)
      continue;
    int k = operand_kind(g, n->in[i], yt, chlast, nv0);
    if (!k)
      return false;
    own += k == 1;
  }
  return own > 0;
}

/* Node i (layout_node) on channels-last forms, in its place; *cl_out:
 * its result's channels-last form. */
static bool lower_layout(Graph *g, int i, const int *chlast, int nv0, int *cl_out, Diag *d) {
  Lowering l = lw_start(g, i, DT_F32, d);
  l.name = g->nodes[i].name;
  Type yt = g->vals[g->nodes[i].out[0]].type;
  int nin = g->nodes[i].nin, in[8], op = g->nodes[i].op;
  if (nin > 8)
    return diag_node(d, g, &g->nodes[i], "has %d inputs; expected at most 8", nin);
  for (int j = 0; j < nin; j++) {
    int v = g->nodes[i].in[j];
    if (layout_reduce(&g->nodes[i])) { /* x's form [N, P, C], axes [1] */
      in[j] = j == 0 ? chlast[v] : lw_i64(&l, "axes", 1);
      if (in[j] < 0)
        return false;
      continue;
    }
    if (v < 0 || layout_window_op(&g->nodes[i])) { /* x, then a conv's W and B as they are */
      in[j] = v < 0 || j > 0 ? v : last_view(&l, v, chlast[v]);
      if (j == 0 && in[j] < 0)
        return false;
      continue;
    }
    int k = operand_kind(g, v, &yt, chlast, nv0);
    if (k == 1 || k == 4) {
      in[j] = chlast[v];
    } else if (k == 2) {
      in[j] = v;
    } else { /* one value a channel, [1, 1, C]: a constant's copy, else a view */
      int64_t dims[3] = {1, 1, yt.dims[1]};
      if (g->vals[v].data) {
        in[j] = ir_const_in_place(g, lw_name(&l, "channel"), DT_F32, 3, dims, g->vals[v].data);
      } else {
        in[j] = lw_reshape(&l, v, dims, 3);
        if (in[j] >= 0 && in[j] != v)
          g->vals[in[j]].alias_of = v;
      }
    }
    if (in[j] < 0)
      return false;
  }
  int idx = lw_node(&l, op, in, nin, 1);
  if (idx < 0)
    return false;
  const Node *src = &g->nodes[i];
  bool red = layout_reduce(src);
  if (red && !axes_input(src))
    ir_attr_ints(g, idx, "axes", (const int64_t[]){1}, 1);
  for (int a = 0; a < src->nattr; a++) {
    const Attr *at = &g->nodes[i].attrs[a];
    if (red && !strcmp(at->name, "axes"))
      continue;
    switch (at->kind) {
    case ATTR_INT: ir_attr_int(g, idx, at->name, at->i); break;
    case ATTR_FLOAT: ir_attr_float(g, idx, at->name, at->f); break;
    case ATTR_STRING: ir_attr_str(g, idx, at->name, at->s); break;
    case ATTR_INTS: ir_attr_ints(g, idx, at->name, at->ints, at->n); break;
    case ATTR_FLOATS: ir_attr_floats(g, idx, at->name, at->floats, at->n); break;
    default: return diag_node(d, g, &g->nodes[i], "has attribute '%s' of a kind the layout does not copy", at->name);
    }
  }
  g->nodes[idx].opset = g->nodes[i].opset;
  bool window = layout_window_op(src);
  if (window)
    ir_attr_int(g, idx, "channels_last", 1);
  int t = lw_finish(&l, idx);
  if (t < 0)
    return false;
  if (window) { /* [N, out..., C] viewed as [N, P, C] */
    const Type *tt = &g->vals[t].type;
    int64_t dims[3] = {tt->dims[0], type_numel(tt) / (tt->dims[0] * tt->dims[tt->rank - 1]), tt->dims[tt->rank - 1]};
    int r = lw_reshape(&l, t, dims, 3);
    if (r < 0)
      return false;
    if (r != t)
      g->vals[r].alias_of = t;
    t = r;
  }
  *cl_out = t;
  return back_to_nchw(&l, t, &yt, i);
}

bool pass_conv_gemm(Graph *g, const PassOptions *o, Diag *d) {
  Fuser f;
  if (!fm_begin(&f, g, o->verbose))
    return true;
  int n0 = g->nnodes, done = 0;
  int *first = arena_alloc(g->arena, sizeof(int) * (size_t)(n0 + 1));
  int *end = arena_alloc(g->arena, sizeof(int) * (size_t)(n0 + 1));
  int nv0 = g->nvals, *chlast = arena_alloc(g->arena, sizeof(int) * (size_t)(nv0 + 1));
  for (int i = 0; i < n0; i++)
    first[i] = end[i] = -1;
  for (int v = 0; v < nv0; v++) /* a lowered conv's output -> its GEMM result, channels last */
    chlast[v] = -1;
  int moved = 0;
  for (int i = 0; i < n0; i++) {
    if (g->nodes[i].dead)
      continue;
    if (gemm_deconv(g, &g->nodes[i])) {
      int last = i;
      const char *act = epilogue_act(&f, &g->nodes[i], &last);
      first[last] = g->nnodes;
      int x = g->nodes[i].in[0], y = g->nodes[last].out[0], t;
      if (!lower_deconv(g, i, last, act, x < nv0 ? chlast[x] : -1, &t, d))
        return false;
      if (y < nv0)
        chlast[y] = t;
      end[last] = g->nnodes;
      g->nodes[i].dead = g->nodes[last].dead = true;
      if (o->verbose)
        fprintf(stderr, "conv_gemm: %s%s%s <- %s (ConvTranspose: Linear, taps placed)\n", g->nodes[i].name,
                strcmp(act, "none") ? "+" : "", strcmp(act, "none") ? act : "",
                g->nodes[i].origin ? g->nodes[i].origin : g->nodes[i].name);
      done++;
      continue;
    }
    if (!gemm_conv(g, &g->nodes[i])) {
      if (!layout_node(g, &g->nodes[i], chlast, nv0))
        continue;
      first[i] = g->nnodes;
      int y = g->nodes[i].out[0], t = -1;
      if (!lower_layout(g, i, chlast, nv0, &t, d))
        return false;
      if (y < nv0)
        chlast[y] = t;
      end[i] = g->nnodes;
      g->nodes[i].dead = true;
      if (o->verbose)
        fprintf(stderr, "conv_gemm: %s channels last\n", g->nodes[i].name);
      moved++;
      continue;
    }
    int last = i;
    const char *act = epilogue_act(&f, &g->nodes[i], &last);
    first[last] = g->nnodes;
    int x = g->nodes[i].in[0], y = g->nodes[last].out[0], t;
    int64_t wino = o->quantize == QUANT_NONE && !o->bf16 && !o->no_winograd ? winograd_tile(g, &g->nodes[i], act) : 0;
    int64_t hb = wino || pointwise(g, &g->nodes[i]) ? 0 : block_rows(g, &g->nodes[i], act);
    if (!lower_conv(g, i, last, act, x < nv0 ? chlast[x] : -1, wino, hb, &t, d))
      return false;
    if (y < nv0)
      chlast[y] = t;
    end[last] = g->nnodes;
    g->nodes[i].dead = g->nodes[last].dead = true;
    if (o->verbose)
      fprintf(stderr, "conv_gemm: %s%s%s <- %s%s\n", g->nodes[i].name, strcmp(act, "none") ? "+" : "",
              strcmp(act, "none") ? act : "", g->nodes[i].origin ? g->nodes[i].origin : g->nodes[i].name,
              wino == 4   ? " (Winograd F(4x4, 3x3))"
              : wino == 2 ? " (Winograd F(2x2, 3x3))"
              : hb        ? arena_printf(g->arena, " (blocks of %lld output rows)", (long long)hb)
                          : "");
    done++;
  }
  if (done + moved)
    graph_splice(g, n0, first, end);
  /* the Transposes back that nobody reads go now, so that the fusions
   * after this pass see a GEMM result's real readers */
  return !moved || pass_dce(g, o, d);
}
