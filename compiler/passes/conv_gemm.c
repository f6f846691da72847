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
 * Depthwise and grouped convolutions, ConvTranspose, f64 and a W computed
 * at run time stay Conv nodes (conv.c's direct loops). Runs after fold_bn,
 * so a BatchNormalization after the Conv is already in W and B, and after
 * fuse_gelu, so a GELU after it is one Gelu node the epilogue takes. */
#include <stdio.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "fuse_match.h"
#include "passes.h"

/* Conv node n is one this pass rewrites. */
static bool gemm_conv(const Graph *g, const Node *n) {
  if (n->op != OP_CONV || n->nout != 1)
    return false;
  const Value *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
  const Value *b = node_has_in(n, 2) ? &g->vals[n->in[2]] : NULL;
  const Type *yt = &g->vals[n->out[0]].type;
  return x->type.dt == DT_F32 && w->type.dt == DT_F32 && w->data && (!b || b->data) &&
         attr_int(n, "group", 1) == 1 && x->type.rank >= 3 && yt->rank == x->type.rank &&
         type_numel(yt) > 0 && type_numel(&w->type) > 0;
}

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

/* The chain for conv ci [-> activation ai], in place of node last (ai,
 * or ci); false with a diag when a node of it fails to infer. cl >= 0:
 * x is the output of a conv this pass lowered, whose GEMM result cl
 * [N, P, C] holds x channels last: the rows are read from it (a 1x1
 * conv's rows are cl itself) instead of from x, which then needs no
 * transpose back for this reader. *gemm_out: the Linear's output. */
static bool lower_conv(Graph *g, int ci, int last, const char *act, int cl, int *gemm_out, Diag *d) {
  Lowering l = lw_start(g, last, DT_F32, d);
  const Node *c = &g->nodes[ci];
  l.name = c->name;
  if (last != ci)
    l.origin = arena_printf(g->arena, "%s + %s", c->origin ? c->origin : c->name,
                            g->nodes[last].origin ? g->nodes[last].origin : g->nodes[last].name);
  int x = c->in[0], w = c->in[1], b = node_has_in(c, 2) ? c->in[2] : -1;
  Type wt = g->vals[w].type, yt = g->vals[c->out[0]].type;
  /* x in NCHW and a window of more than one tap (or a stride): x is
   * transposed to channels last once, its rows then copies of C channels
   * (where NCHW rows gather element by element, testing each for the pads:
   * measured 2.4x slower on a 64-channel 3x3 conv at 56x56, 1.2x on a
   * 3-channel 7x7 stride-2 stem) */
  bool to_last = cl < 0 && !pointwise(g, c);
  int wtv = weight_t(g, w, c->name, cl >= 0 || to_last), rows;
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
      const Type *xt = &g->vals[x].type;
      int64_t dims[MAX_RANK];
      dims[0] = xt->dims[0];
      for (int j = 2; j < xt->rank; j++)
        dims[j - 1] = xt->dims[j];
      dims[xt->rank - 1] = xt->dims[1];
      src = lw_reshape(&l, cl, dims, xt->rank);
      if (src < 0)
        return false;
      if (src != cl) /* a view, as simplify makes Reshapes */
        g->vals[src].alias_of = cl;
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
  int tr = lw_node(&l, OP_TRANSPOSE, &t, 1, 1);
  if (tr < 0)
    return false;
  int64_t perm[3] = {0, 2, 1};
  ir_attr_ints(g, tr, "perm", perm, 3);
  int t2 = lw_finish(&l, tr), y = lw_reshape(&l, t2, yt.dims, yt.rank);
  if (!lw_result(&l, y, 0))
    return false;
  Value *out = &g->vals[g->nodes[last].out[0]];
  if (y != t2 && !out->is_output) /* the Reshape is a view, as simplify makes them */
    out->alias_of = t2;
  return true;
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
  for (int i = 0; i < n0; i++) {
    if (g->nodes[i].dead || !gemm_conv(g, &g->nodes[i]))
      continue;
    int last = i;
    const char *act = epilogue_act(&f, &g->nodes[i], &last);
    first[last] = g->nnodes;
    int x = g->nodes[i].in[0], y = g->nodes[last].out[0], t;
    if (!lower_conv(g, i, last, act, x < nv0 ? chlast[x] : -1, &t, d))
      return false;
    if (y < nv0)
      chlast[y] = t;
    end[last] = g->nnodes;
    g->nodes[i].dead = g->nodes[last].dead = true;
    if (o->verbose)
      fprintf(stderr, "conv_gemm: %s%s%s <- %s\n", g->nodes[i].name, strcmp(act, "none") ? "+" : "",
              strcmp(act, "none") ? act : "", g->nodes[i].origin ? g->nodes[i].origin : g->nodes[i].name);
    done++;
  }
  if (done)
    graph_splice(g, n0, first, end);
  return true;
}
