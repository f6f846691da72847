/* conv.c — Conv and ConvTranspose over any number of spatial dims.
 *
 * X is [N, C, in...] and Y is [N, M, out...]; the channels split into
 * `group` groups (group == C is a depthwise convolution). Conv's W is
 * [M, C/group, k...]: output position o reads input o*s + t*d - pad for
 * each kernel tap t. ConvTranspose's W is [C, M/group, k...] and runs the
 * other way: input position i adds into output i*s + t*d - pad.
 *
 * The geometry (output size and the pad before each spatial dim) comes
 * from pads or auto_pad, strides, dilations and, for ConvTranspose,
 * output_padding and output_shape; conv_geom computes it once.
 * _eval computes every output element as a plain gather, summed in double.
 *
 * _emit writes Conv row by row: for each output row (all spatial dims but
 * the last), input channel and outer tap, one row of x feeds the matching
 * output row of every output channel of the group, with an inner loop of
 * constant bounds over the row and the last dim's taps. Rows are read in
 * place, or copied between zeros into a local array when the last dim is
 * padded; windows that overhang the outer dims take their tap ranges from
 * constant tables. ConvTranspose (and a Conv whose padded rows are too long
 * for the stack) is written tap-major instead: each output plane starts at
 * the bias, then each (input channel, tap) adds w * x over the box of
 * positions where the tap lands inside both tensors, its bounds again
 * from constant tables. Neither form tests for padding in its loops.
 * (The conv_gemm pass makes a ConvTranspose whose kernel is its stride,
 * by a constant W of group 1, a GEMM first: only a pipeline without that
 * pass brings one here.)
 *
 * Conv {channels_last=1} (made only by the conv_gemm pass's layout, never
 * read from a file): a depthwise conv (group = C = M, f32, constant W) on
 * X [N, in..., C] to Y [N, out..., C]. Per output position its C channels
 * start at the bias and add each tap inside x, C contiguous products at a
 * time with W packed tap-major ([k..., C], emit_const_array): a loop that
 * vectorises; taps in the padding are skipped per tap. Where a window lies
 * inside x (most of them), its taps are written out in one sum per channel
 * instead (emit_depthwise_split). */
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "convgeom.h"
#include "window.h"

#define ROW_MAX 4096                /* longest row of x copied to the stack */

typedef enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } AutoPad;

static bool auto_pad(const Node *n, AutoPad *ap, char *why) {
  static const char *names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  const char *s = attr_str(n, "auto_pad", "NOTSET");
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, names[i])) {
      *ap = (AutoPad)i;
      return true;
    }
  return window_fail(why, "auto_pad is '%s'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", s);
}

/* Pad before a dim from its total padding: SAME_UPPER puts the odd one at
 * the end, everything else at the start. A negative total (the output is
 * larger than the input covers) pads nothing before: the rest stays bias. */
static int64_t pad_before(AutoPad ap, int64_t total) {
  if (total <= 0)
    return 0;
  return ap == PAD_SAME_UPPER ? total / 2 : total - total / 2;
}

/* Channels, kernel and the attributes shared by both ops. */
static bool geom_common(const Node *n, const Type *x, const Type *w, ConvGeom *c, char *why) {
  if (x->rank < 3)
    return window_fail(why, "input X has rank %d; expected [N, C, spatial...] of rank >= 3", x->rank);
  if (w->rank != x->rank)
    return window_fail(why, "input W has rank %d; expected %d like X", w->rank, x->rank);
  int ns = c->nsp = x->rank - 2;
  c->batch = x->dims[0];
  c->cin = x->dims[1];
  if (c->cin < 1)
    return window_fail(why, "input X has 0 channels; expected at least one");
  c->group = attr_int(n, "group", 1);
  if (c->group < 1 || c->group > ATTR_MAX || c->cin % c->group)
    return window_fail(why, "group is %lld; expected a positive divisor of the %lld input channels",
                (long long)c->group, (long long)c->cin);
  if (!c->transpose) {
    if (w->dims[1] * c->group != c->cin)
      return window_fail(why, "W has %lld input channels per group; expected C / group = %lld",
                  (long long)w->dims[1], (long long)(c->cin / c->group));
    if (w->dims[0] % c->group)
      return window_fail(why, "W has %lld output channels; expected a multiple of group %lld", (long long)w->dims[0],
                  (long long)c->group);
    c->cout = w->dims[0];
  } else {
    if (w->dims[0] != c->cin)
      return window_fail(why, "W has %lld input channels; expected C = %lld", (long long)w->dims[0],
                  (long long)c->cin);
    c->cout = w->dims[1] * c->group;
  }
  int64_t ks[MAX_RANK];
  if (!window_ints_attr(n, "kernel_shape", ns, 0, 1, ks, why))
    return false;
  for (int j = 0; j < ns; j++) {
    c->k[j] = w->dims[2 + j];
    c->in[j] = x->dims[2 + j];
    if (attr_get(n, "kernel_shape") && ks[j] != c->k[j])
      return window_fail(why, "kernel_shape[%d] is %lld; expected %lld, W's spatial dim", j, (long long)ks[j],
                  (long long)c->k[j]);
    if (c->k[j] < 1 || c->in[j] < 1)
      return window_fail(why, "spatial dim %d of %s is 0; expected >= 1", j, c->k[j] < 1 ? "W" : "X");
  }
  return window_ints_attr(n, "strides", ns, 1, 1, c->stride, why) &&
         window_ints_attr(n, "dilations", ns, 1, 1, c->dil, why);
}

/* Output size and begin pads of a Conv: floor((in + pads - dk) / s) + 1,
 * dk the dilated kernel; SAME_* keeps ceil(in / s) outputs. */
static bool geom_conv(const Node *n, ConvGeom *c, char *why) {
  int ns = c->nsp;
  int64_t pads[2 * MAX_RANK];
  AutoPad ap;
  if (!window_ints_attr(n, "pads", 2 * ns, 0, 0, pads, why) || !auto_pad(n, &ap, why))
    return false;
  for (int j = 0; j < ns; j++) {
    int64_t dk = (c->k[j] - 1) * c->dil[j] + 1, s = c->stride[j], in = c->in[j];
    if (ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
      c->out[j] = (in + s - 1) / s;
      c->pad[j] = pad_before(ap, (c->out[j] - 1) * s + dk - in);
      continue;
    }
    int64_t pb = ap == PAD_VALID ? 0 : pads[j], pe = ap == PAD_VALID ? 0 : pads[ns + j];
    if (in + pb + pe < dk)
      return window_fail(why,
                  "spatial dim %d: the padded input (%lld) is smaller than the dilated kernel (%lld); "
                  "expected at least one output",
                  j, (long long)(in + pb + pe), (long long)dk);
    c->pad[j] = pb;
    c->out[j] = (in + pb + pe - dk) / s + 1;
  }
  return true;
}

/* Output size and begin pads of a ConvTranspose: the full output is
 * s * (in - 1) + output_padding + dk; output_shape (or SAME_*, in * s)
 * fixes the size and so the pads, else the pads crop the full output. */
static bool geom_transpose(const Node *n, ConvGeom *c, char *why) {
  int ns = c->nsp;
  int64_t pads[2 * MAX_RANK], opad[MAX_RANK], oshape[MAX_RANK + 2];
  AutoPad ap;
  if (!window_ints_attr(n, "pads", 2 * ns, 0, 0, pads, why) || !auto_pad(n, &ap, why) ||
      !window_ints_attr(n, "output_padding", ns, 0, 0, opad, why))
    return false;
  const Attr *osa = attr_get(n, "output_shape");
  bool has_os = osa && osa->kind == ATTR_INTS && osa->n > 0;
  if (has_os && !window_ints_attr(n, "output_shape", osa->n == ns + 2 ? ns + 2 : ns, 0, 1, oshape, why))
    return false;
  int skip = has_os && osa->n == ns + 2 ? 2 : 0; /* [N, M, out...] is allowed too */
  for (int j = 0; j < ns; j++) {
    int64_t dk = (c->k[j] - 1) * c->dil[j] + 1, s = c->stride[j], in = c->in[j];
    int64_t full = s * (in - 1) + opad[j] + dk;
    if (has_os || ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
      c->out[j] = has_os ? oshape[skip + j] : in * s;
      c->pad[j] = pad_before(ap, full - c->out[j]);
      continue;
    }
    int64_t pb = ap == PAD_VALID ? 0 : pads[j], pe = ap == PAD_VALID ? 0 : pads[ns + j];
    if (full - pb - pe < 1)
      return window_fail(why, "spatial dim %d: pads %lld + %lld crop the whole output (%lld); expected less", j,
                  (long long)pb, (long long)pe, (long long)full);
    c->pad[j] = pb;
    c->out[j] = full - pb - pe;
  }
  return true;
}

Type conv_out_type(const ConvGeom *c, DType dt, int rank) {
  Type t = {.dt = dt, .rank = rank};
  t.dims[0] = c->batch;
  t.dims[1] = c->cout;
  for (int j = 0; j < c->nsp; j++)
    t.dims[2 + j] = c->out[j];
  return t;
}

bool conv_geom(const Node *n, const Type *x, const Type *w, ConvGeom *c, char *why) {
  memset(c, 0, sizeof *c);
  c->transpose = n->op == OP_CONVTRANSPOSE;
  if (!geom_common(n, x, w, c, why))
    return false;
  return c->transpose ? geom_transpose(n, c, why) : geom_conv(n, c, why);
}

/* Conv {channels_last}: X [N, in..., C], a depthwise conv. */
static bool conv_last(const Node *n) { return n->op == OP_CONV && attr_int(n, "channels_last", 0); }

bool conv_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0), *w = node_in(g, n, 1), *b = node_in(g, n, 2);
  if (!dt_is_float(x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  if (w->type.dt != x->type.dt)
    return diag_node(d, g, n, "input '%s' is %s; expected %s like X", w->name, dt_name(w->type.dt),
                     dt_name(x->type.dt));
  bool last = conv_last(n);
  Type xt = last ? window_permute_last(&x->type, false) : x->type;
  ConvGeom c;
  char why[WHY];
  if (!conv_geom(n, &xt, &w->type, &c, why))
    return diag_node(d, g, n, "%s", why);
  if (last && (x->type.dt != DT_F32 || c.group != c.cin || c.cout != c.cin || !w->data))
    return diag_node(d, g, n, "channels_last with %s X, group %lld, %lld input and %lld output channels%s; "
                     "expected a depthwise f32 conv (group = C = M) by a constant W", dt_name(x->type.dt),
                     (long long)c.group, (long long)c.cin, (long long)c.cout, w->data ? "" : ", W computed");
  if (b && (b->type.dt != x->type.dt || b->type.rank != 1 || b->type.dims[0] != c.cout)) {
    char ts[128];
    return diag_node(d, g, n, "bias '%s' is %s; expected %s[%lld], one per output channel", b->name,
                     type_str(&b->type, ts, sizeof ts), dt_name(x->type.dt), (long long)c.cout);
  }
  Type yt = conv_out_type(&c, x->type.dt, x->type.rank);
  node_out(g, n, 0)->type = last ? window_permute_last(&yt, true) : yt;
  return true;
}

/* ---- reference ------------------------------------------------------------- */



/* Flat offset in X's plane of the input that tap t of output position o
 * reads; false when it falls in the padding (or, for ConvTranspose,
 * between strides). */
bool conv_source(const ConvGeom *c, const int64_t *o, const int64_t *t, int64_t *off) {
  *off = 0;
  for (int j = 0; j < c->nsp; j++) {
    int64_t i;
    if (!c->transpose) {
      i = o[j] * c->stride[j] + t[j] * c->dil[j] - c->pad[j];
    } else {
      int64_t num = o[j] + c->pad[j] - t[j] * c->dil[j];
      if (num < 0 || num % c->stride[j])
        return false;
      i = num / c->stride[j];
    }
    if (i < 0 || i >= c->in[j])
      return false;
    *off = *off * c->in[j] + i;
  }
  return true;
}

bool conv_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  ConvGeom c;
  char why[WHY];
  bool last = conv_last(n);
  Type xt = last ? window_permute_last(&in[0].type, false) : in[0].type;
  KILN_ASSERT(conv_geom(n, &xt, &in[1].type, &c, why));
  DType dt = in[0].type.dt;
  const void *x = in[0].data, *w = in[1].data, *b = n->nin > 2 ? in[2].data : NULL;
  int64_t cg = c.cin / c.group, mg = c.cout / c.group;
  int64_t isz = window_prod(c.in, c.nsp), osz = window_prod(c.out, c.nsp), ksz = window_prod(c.k, c.nsp);
  int64_t o[MAX_RANK], t[MAX_RANK], yi = 0;
  for (int64_t nb = 0; nb < c.batch; nb++)
    for (int64_t m = 0; m < c.cout; m++)
      for (int64_t oi = 0; oi < osz; oi++, yi++) {
        window_unflatten(oi, c.out, c.nsp, o);
        int64_t gr = m / mg;
        double acc = b ? el_get_f(dt, b, m) : 0;
        for (int64_t ci = 0; ci < cg; ci++)
          for (int64_t ki = 0; ki < ksz; ki++) {
            int64_t xoff;
            window_unflatten(ki, c.k, c.nsp, t);
            if (!conv_source(&c, o, t, &xoff))
              continue;
            int64_t xi = last ? (nb * isz + xoff) * c.cin + gr * cg + ci : (nb * c.cin + gr * cg + ci) * isz + xoff;
            int64_t wi = c.transpose ? ((gr * cg + ci) * mg + m % mg) * ksz + ki : (m * cg + ci) * ksz + ki;
            acc += el_get_f(dt, x, xi) * el_get_f(dt, w, wi);
          }
        el_set_f(dt, out[0].data, last ? (nb * osz + oi) * c.cout + m : yi, acc);
      }
  return true;
}

/* ---- C ----------------------------------------------------------------------- */


static int64_t cdiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }


/* "p + a + b" without the absent terms. */
static const char *plus(Arena *a, const char *p, const char *t1, const char *t2) {
  const char *s = p;
  if (t1)
    s = s ? arena_printf(a, "%s + %s", s, t1) : t1;
  if (t2)
    s = s ? arena_printf(a, "%s + %s", s, t2) : t2;
  return s ? s : "0";
}

/* "v * k", or v when k is 1. */
static const char *times(Arena *a, const char *v, int64_t k) {
  return k == 1 ? v : arena_printf(a, "%s * %lld", v, (long long)k);
}

static void close_block(Emit *e) {
  e->indent--;
  emit_line(e, "}");
}

/* Box of tap t along dim j: the positions b (outputs for Conv, inputs for
 * ConvTranspose) with 0 <= b*s + t*d - pad < limit, limit the extent of
 * the other tensor. */
static void box(const ConvGeom *c, int j, int64_t t, int64_t *lo, int64_t *hi) {
  bool tr = c->transpose;
  int64_t count = tr ? c->in[j] : c->out[j], limit = tr ? c->out[j] : c->in[j];
  int64_t off = c->pad[j] - t * c->dil[j];
  *lo = cdiv(off, c->stride[j]);
  *hi = cdiv(limit + off, c->stride[j]);
  *lo = *lo < 0 ? 0 : *lo;
  *hi = *hi > count ? count : *hi;
  *hi = *hi < *lo ? *lo : *hi;
}

/* The box bounds of dim j as C: numbers when one tap or the box is the
 * whole dim for every tap, else a static table indexed by the tap. */
static void box_bounds(Emit *e, const ConvGeom *c, int j, const char *bv, const char *kv, const char **lo,
                       const char **hi) {
  Arena *a = e->g->arena;
  int64_t count = c->transpose ? c->in[j] : c->out[j], l, h;
  bool whole = true;
  for (int64_t t = 0; t < c->k[j]; t++) {
    box(c, j, t, &l, &h);
    whole = whole && l == 0 && h == count;
  }
  if (whole || c->k[j] == 1) {
    box(c, j, 0, &l, &h);
    *lo = emit_int(e, l);
    *hi = emit_int(e, h);
    return;
  }
  Buf bl = {0}, bh = {0};
  for (int64_t t = 0; t < c->k[j]; t++) {
    box(c, j, t, &l, &h);
    buf_printf(&bl, "%s%lld", t ? ", " : "", (long long)l);
    buf_printf(&bh, "%s%lld", t ? ", " : "", (long long)h);
  }
  emit_line(e, "static const int %s_lo[%lld] = {%s}, %s_hi[%lld] = {%s}; /* per tap %s */", bv,
            (long long)c->k[j], bl.s, bv, (long long)c->k[j], bh.s, kv);
  buf_free(&bl);
  buf_free(&bh);
  *lo = arena_printf(a, "%s_lo[%s]", bv, kv);
  *hi = arena_printf(a, "%s_hi[%s]", bv, kv);
}

/* "oh * 2 + kh - 1": where box position bv of tap kv lands along dim j. */
const char *conv_landing(Arena *a, const ConvGeom *c, int j, const char *bv, const char *kv) {
  const char *s = c->stride[j] == 1 ? bv : arena_printf(a, "%s * %lld", bv, (long long)c->stride[j]);
  if (c->k[j] > 1)
    s = c->dil[j] == 1 ? arena_printf(a, "%s + %s", s, kv)
                       : arena_printf(a, "%s + %s * %lld", s, kv, (long long)c->dil[j]);
  if (c->pad[j])
    s = arena_printf(a, "%s - %lld", s, (long long)c->pad[j]);
  return s;
}

/* A comment saying what the loops compute, in the names the code uses. */
static void describe(Emit *e, const ConvGeom *c, const char **bv, const char **kv, const char **land, bool bias,
                     bool rows) {
  Arena *a = e->g->arena;
  int64_t cg = c->cin / c->group, mg = c->cout / c->group;
  const char *chan = c->group == 1 ? "c" : "m / MG * CG + c", *ks = "", *xs = "", *ys = "", *wk = "";
  for (int j = 0; j < c->nsp; j++) {
    ks = arena_printf(a, "%s%s%lld", ks, j ? "x" : "", (long long)c->k[j]);
    wk = arena_printf(a, "%s[%s]", wk, kv[j]);
    xs = arena_printf(a, "%s[%s]", xs, c->transpose ? bv[j] : land[j]);
    ys = arena_printf(a, "%s[%s]", ys, c->transpose ? land[j] : bv[j]);
  }
  emit_line(e, "/* y[n][m] = %s, then for c < %lld and the taps k < %s:", bias ? "b[m]" : "0", (long long)cg,
            ks);
  if (c->transpose)
    emit_line(e, " *   y[n][m]%s += w[%s][%s]%s * x[n][%s]%s", ys, chan, c->group == 1 ? "m" : "m % MG", wk,
              chan, xs);
  else
    emit_line(e, " *   y[n][m]%s += w[m][c]%s * x[n][%s]%s", ys, wk, chan, xs);
  if (c->group > 1)
    emit_line(e, " * in %lld groups of CG = %lld input and MG = %lld output channels;", (long long)c->group,
              (long long)cg, (long long)mg);
  if (rows)
    emit_line(
        e, " * row by row of y; windows skip their taps outside x, a row of x is read between its pads */");
  else
    emit_line(e, " * each tap runs only over the %s where it lands inside %s */",
              c->transpose ? "inputs" : "outputs", c->transpose ? "y" : "x");
}

/* The tap-major form (ConvTranspose, and Conv rows too long to copy). */
static void emit_tap_major(Emit *e, const Node *n, const ConvGeom *cp) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const Value *x = node_in(g, n, 0), *b = node_in(g, n, 2);
  ConvGeom c = *cp;
  DType dt = x->type.dt;
  const char *T = dt_ctype(dt);
  int ns = c.nsp;
  bool tr = c.transpose;
  int64_t cg = c.cin / c.group, mg = c.cout / c.group;
  int64_t isz = window_prod(c.in, ns), osz = window_prod(c.out, ns), ksz = window_prod(c.k, ns);
  const char *bv[MAX_RANK], *kv[MAX_RANK], *land[MAX_RANK], *lo[MAX_RANK], *hi[MAX_RANK];
  for (int j = 0; j < ns; j++) {
    const char *sx = window_dim_sfx(a, ns, j);
    bv[j] = arena_printf(a, "%s%s", tr ? "i" : "o", sx);
    kv[j] = arena_printf(a, "k%s", sx);
    land[j] = conv_landing(a, &c, j, bv[j], kv[j]);
  }
  describe(e, &c, bv, kv, land, b != NULL, false);
  for (int j = 0; j < ns; j++)
    box_bounds(e, &c, j, bv[j], kv[j], &lo[j], &hi[j]);

  /* one (image, output channel) plane at a time: start it at the bias */
  if (c.batch > 1) {
    emit_line(e, "for (int n = 0; n < %lld; n++) {", (long long)c.batch);
    e->indent++;
  }
  emit_line(e, "for (int m = 0; m < %lld; m++) {", (long long)c.cout);
  e->indent++;
  const char *nb = c.batch > 1 ? times(a, "n", c.cin * isz) : NULL;
  const char *mgrp = mg == 1 ? "m" : arena_printf(a, "m / %lld", (long long)mg); /* the group */
  const char *gr = c.group > 1 ? times(a, mgrp, cg * isz) : NULL;
  emit_line(e, "const %s *%s = %s;%s", T, cg > 1 ? "xg" : "xc", plus(a, emit_ref(e, n->in[0]), nb, gr),
            c.group > 1 ? " /* the group's input channels */" : "");
  const char *wrow = !tr            ? times(a, "m", cg * ksz)
                     : c.group == 1 ? times(a, "m", ksz)
                     : mg == 1      ? times(a, "m", cg * ksz)
                                    : times(a,
                                            arena_printf(a, "(m / %lld * %lld + m %% %lld)", (long long)mg,
                                                         (long long)(cg * mg), (long long)mg),
                                            ksz);
  emit_line(e, "const %s *wm = %s;", T, plus(a, emit_ref(e, n->in[1]), wrow, NULL));
  nb = c.batch > 1 ? times(a, "n", c.cout * osz) : NULL;
  emit_line(e, "%s *ym = %s;", T, plus(a, emit_ref(e, n->out[0]), nb, times(a, "m", osz)));
  emit_line(e, "for (int o = 0; o < %lld; o++)", (long long)osz);
  emit_line(e, "  ym[o] = %s;",
            b ? arena_printf(a, "%s[m]", emit_ref(e, n->in[2])) : emit_double_literal(e, dt, 0));

  /* then add each input channel's taps */
  int nopen = 0;
  if (cg > 1) {
    emit_line(e, "for (int c = 0; c < %lld; c++) {", (long long)cg);
    e->indent++;
    emit_line(e, "const %s *xc = xg + c * %lld;", T, (long long)isz);
    nopen++;
  }
  for (int j = 0; j < ns; j++)
    if (c.k[j] > 1) {
      emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", kv[j], kv[j], (long long)c.k[j], kv[j]);
      e->indent++;
      nopen++;
    }
  const char *tap = window_flat(a, ns, kv, c.k, false);
  const char *crow = cg > 1 ? times(a, "c", tr ? mg * ksz : ksz) : NULL;
  emit_line(e, "const %s wv = wm[%s];", T, plus(a, NULL, crow, strcmp(tap, "0") ? tap : NULL));
  for (int j = 0; j < ns; j++) {
    emit_line(e, "for (int %s = %s; %s < %s; %s++) {", bv[j], lo[j], bv[j], hi[j], bv[j]);
    e->indent++;
    nopen++;
  }
  const char *plain = window_flat(a, ns, bv, tr ? c.in : c.out, false), *strided = window_flat(a, ns, land, tr ? c.out : c.in, false);
  emit_line(e, "ym[%s] += wv * xc[%s];", tr ? strided : plain, tr ? plain : strided);
  for (int j = 0; j < nopen + 1 + (c.batch > 1); j++)
    close_block(e);
}

/* "(s) * k": s scaled by k. */
static const char *scaled(Arena *a, const char *s, int64_t k) {
  if (k == 1 || !strcmp(s, "0"))
    return s;
  return arena_printf(a, strpbrk(s, "+-") ? "(%s) * %lld" : "%s * %lld", s, (long long)k);
}

/* Taps [lo, hi) of Conv window o along dim j that land inside x. */
static void window(const ConvGeom *c, int j, int64_t o, int64_t *lo, int64_t *hi) {
  int64_t start = o * c->stride[j] - c->pad[j], d = c->dil[j];
  *lo = start >= 0 ? 0 : cdiv(-start, d);
  *hi = c->in[j] - start <= 0 ? 0 : cdiv(c->in[j] - start, d);
  *hi = *hi > c->k[j] ? c->k[j] : *hi;
  *hi = *hi < *lo ? *lo : *hi;
}


/* Static tables of the taps of each window along outer dim j, when some
 * window has taps outside x; false (and nothing emitted) when none has. */
bool conv_window_table(Emit *e, const ConvGeom *c, int j, const char *ov, const char *kv) {
  Arena *a = e->g->arena;
  int64_t no = c->out[j], lo, hi;
  bool whole = true;
  for (int64_t o = 0; o < no; o++) {
    window(c, j, o, &lo, &hi);
    whole = whole && lo == 0 && hi == c->k[j];
  }
  if (whole)
    return false;
  int64_t *tl = arena_alloc(a, sizeof(int64_t) * (size_t)no),
          *th = arena_alloc(a, sizeof(int64_t) * (size_t)no);
  for (int64_t o = 0; o < no; o++)
    window(c, j, o, &tl[o], &th[o]);
  window_emit_table(e, arena_printf(a, "%s_lo", kv), tl, no, arena_printf(a, "first tap of window %s inside x", ov));
  window_emit_table(e, arena_printf(a, "%s_hi", kv), th, no, "end of its taps inside x");
  return true;
}

/* The row form of Conv: for each output row (all spatial dims but the
 * last), each input channel and each outer tap, one row of x (copied
 * between zeros when the last dim is padded) feeds every output channel
 * of the group: y_row[ow] += sum over kw of w[kw] * x_row[ow * s + kw * d].
 * The inner loops have constant bounds and read a row with no padding
 * test. */
static void emit_rows(Emit *e, const Node *n, const ConvGeom *c, bool copy, int64_t iwp) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const Value *b = node_in(g, n, 2);
  DType dt = node_in(g, n, 0)->type.dt;
  const char *T = dt_ctype(dt);
  int ns = c->nsp, last = ns - 1;
  int64_t cg = c->cin / c->group, mg = c->cout / c->group, osz = window_prod(c->out, ns);
  const char *ov[MAX_RANK], *kv[MAX_RANK], *land[MAX_RANK];
  bool loop[MAX_RANK], tab[MAX_RANK];
  for (int j = 0; j < ns; j++) {
    const char *sx = window_dim_sfx(a, ns, j);
    ov[j] = arena_printf(a, "o%s", sx);
    kv[j] = arena_printf(a, "k%s", sx);
    land[j] = conv_landing(a, c, j, ov[j], kv[j]);
  }
  describe(e, c, ov, kv, land, b != NULL, true);
  for (int j = 0; j < last; j++) {
    tab[j] = conv_window_table(e, c, j, ov[j], kv[j]);
    loop[j] = tab[j] || c->k[j] > 1;
    if (!loop[j]) /* one tap, always inside */
      land[j] = conv_landing(a, c, j, ov[j], "0");
  }
  if (copy)
    emit_line(e, "%s xr[%lld] = {0}; /* a row of x between its pads */", T, (long long)iwp);
  const char *Y = emit_ref(e, n->out[0]);
  emit_line(e, "for (int p = 0; p < %lld; p++) { /* (n, m) planes */", (long long)(c->batch * c->cout));
  emit_line(e, "  for (int o = 0; o < %lld; o++)", (long long)osz);
  emit_line(e, "    %s[p * %lld + o] = %s;", Y, (long long)osz,
            !b              ? emit_double_literal(e, dt, 0)
            : c->batch == 1 ? arena_printf(a, "%s[p]", emit_ref(e, n->in[2]))
                            : arena_printf(a, "%s[p %% %lld]", emit_ref(e, n->in[2]), (long long)c->cout));
  emit_line(e, "}");

  int nopen = 0;
#define OPEN(...) (emit_line(e, __VA_ARGS__), e->indent++, nopen++)
  if (c->batch > 1)
    OPEN("for (int n = 0; n < %lld; n++) {", (long long)c->batch);
  for (int j = 0; j < last; j++)
    OPEN("for (int %s = 0; %s < %lld; %s++) {", ov[j], ov[j], (long long)c->out[j], ov[j]);
  if (c->group > 1)
    OPEN("for (int g = 0; g < %lld; g++) {", (long long)c->group);
  if (cg > 1)
    OPEN("for (int c = 0; c < %lld; c++) {", (long long)cg);
  for (int j = 0; j < last; j++) {
    if (!loop[j])
      continue;
    if (!tab[j])
      OPEN("for (int %s = 0; %s < %lld; %s++) {", kv[j], kv[j], (long long)c->k[j], kv[j]);
    else
      OPEN("for (int %s = %s_lo[%s]; %s < %s_hi[%s]; %s++) {", kv[j], kv[j], ov[j], kv[j], kv[j], ov[j],
           kv[j]);
  }
  /* the x row: x[n][chan][land...][:] */
  const char *chan = c->group == 1 ? "c" : cg == 1 ? "g" : arena_printf(a, "g * %lld + c", (long long)cg);
  const char *terms[MAX_RANK + 2];
  int64_t dims[MAX_RANK + 2];
  terms[0] = "n";
  dims[0] = c->batch;
  terms[1] = chan;
  dims[1] = cg == 1 && c->group == 1 ? 1 : c->cin;
  for (int j = 0; j < last; j++) {
    terms[2 + j] = land[j];
    dims[2 + j] = c->in[j];
  }
  const char *xoff = window_flat(a, ns + 1, terms, dims, false);
  const char *xrow =
      plus(a, emit_ref(e, n->in[0]), strcmp(xoff, "0") ? scaled(a, xoff, c->in[last]) : NULL, NULL);
  if (copy)
    emit_line(e, "memcpy(%s, %s, sizeof xr[0] * %lld);",
              c->pad[last] ? arena_printf(a, "xr + %lld", (long long)c->pad[last]) : "xr", xrow,
              (long long)c->in[last]);
  else
    emit_line(e, "const %s *xr = %s;", T, xrow);
  if (mg > 1)
    OPEN("for (int m = 0; m < %lld; m++) {", (long long)mg);
  /* the y row y[n][mo][o...][:] and the weights w[mo][c][k...][:] */
  const char *mo = c->group == 1 ? "m" : mg == 1 ? "g" : arena_printf(a, "g * %lld + m", (long long)mg);
  terms[1] = mo;
  dims[1] = c->cout;
  for (int j = 0; j < last; j++) {
    terms[2 + j] = ov[j];
    dims[2 + j] = c->out[j];
  }
  const char *yrow = window_flat(a, ns + 1, terms, dims, false);
  emit_line(e, "%s *yr = %s;", T, plus(a, Y, strcmp(yrow, "0") ? scaled(a, yrow, c->out[last]) : NULL, NULL));
  const char *wt[MAX_RANK + 2];
  int64_t wd[MAX_RANK + 2];
  wt[0] = mo;
  wd[0] = c->cout;
  wt[1] = "c";
  wd[1] = cg;
  for (int j = 0; j < last; j++) {
    wt[2 + j] = loop[j] ? kv[j] : "0";
    wd[2 + j] = c->k[j];
  }
  const char *wrow = window_flat(a, ns + 1, wt, wd, false);
  emit_line(e, "const %s *wk = %s;", T,
            plus(a, emit_ref(e, n->in[1]), strcmp(wrow, "0") ? scaled(a, wrow, c->k[last]) : NULL, NULL));
  const char *ow = ov[last], *kw = kv[last];
  const char *at = c->stride[last] == 1 ? ow : arena_printf(a, "%s * %lld", ow, (long long)c->stride[last]);
  emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", ow, ow, (long long)c->out[last], ow);
  if (c->k[last] == 1) {
    emit_line(e, "  yr[%s] += wk[0] * xr[%s];", ow, at);
  } else if (c->k[last] <= 8) { /* the taps written out: the loop over ow vectorises, no inner loop */
    emit_line(e, "  %s s = yr[%s];", T, ow);
    for (int64_t t = 0; t < c->k[last]; t++)
      emit_line(e, "  s += wk[%lld] * xr[%s + %lld];", (long long)t, at, (long long)(t * c->dil[last]));
    emit_line(e, "  yr[%s] = s;", ow);
  } else {
    emit_line(e, "  %s s = yr[%s];", T, ow);
    emit_line(e, "  for (int %s = 0; %s < %lld; %s++)", kw, kw, (long long)c->k[last], kw);
    emit_line(e, "    s += wk[%s] * xr[%s + %s];", kw, at, times(a, kw, c->dil[last]));
    emit_line(e, "  yr[%s] = s;", ow);
  }
  emit_line(e, "}");
  for (int j = 0; j < nopen; j++)
    close_block(e);
#undef OPEN
}

/* Windows of at most this many taps are written out as one sum per
 * channel where they lie inside x (emit_depthwise_split). */
#define DEPTHWISE_TAPS_MAX 32

/* The outputs along spatial dim j whose windows lie inside x: o * s - pad
 * >= 0 and o * s - pad + (k - 1) * d < in, o in [*lo, *hi]; false when
 * there are none. */
static bool depthwise_inside(const ConvGeom *c, int j, int64_t *lo, int64_t *hi) {
  int64_t last = c->in[j] - 1 - (c->k[j] - 1) * c->dil[j] + c->pad[j]; /* the last o·s inside */
  *lo = (c->pad[j] + c->stride[j] - 1) / c->stride[j];
  *hi = last < 0 ? -1 : last / c->stride[j];
  if (*hi > c->out[j] - 1)
    *hi = c->out[j] - 1;
  return *lo <= *hi;
}

/* One output position's C channels, its taps one at a time: from the
 * bias, each tap inside x adds C contiguous products (W tap-major). */
static void depthwise_taps(Emit *e, const Node *n, const ConvGeom *c, const WindowWalk *walk, const char *W,
                           const char *bias) {
  Arena *a = e->g->arena;
  int64_t ch = c->cin;
  window_channel_loop(e, ch, arena_printf(a, "yp[c] = %s;", bias));
  const char *tap, *ipos = window_last_taps(e, walk, &tap);
  emit_line(e, "const float *xp = %s + ((int64_t)n * %lld + %s) * %lld, *wp = %s + (%s) * %lld;",
            emit_ref(e, n->in[0]), (long long)window_prod(c->in, c->nsp), ipos, (long long)ch, W, tap,
            (long long)ch);
  window_channel_loop(e, ch, "yp[c] += xp[c] * wp[c];");
  for (int j = 0; j < c->nsp; j++) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* One output position whose window lies inside x: the taps written out,
 * y[c] = b[c] + x_0[c]·w_0[c] + ... + x_T[c]·w_T[c] in one loop over the
 * channels, each tap a constant offset from the window's corner. */
static void depthwise_written_out(Emit *e, const Node *n, const ConvGeom *c, const char *W, const char *bias) {
  Arena *a = e->g->arena;
  int ns = c->nsp;
  int64_t ch = c->cin, ksz = window_prod(c->k, ns);
  const char *corner[MAX_RANK];
  for (int j = 0; j < ns; j++) {
    const char *os = c->stride[j] == 1 ? arena_printf(a, "o%d", j)
                                       : arena_printf(a, "o%d * %lld", j, (long long)c->stride[j]);
    corner[j] = c->pad[j] ? arena_printf(a, "%s - %lld", os, (long long)c->pad[j]) : os;
  }
  emit_line(e, "const float *xo = %s + ((int64_t)n * %lld + %s) * %lld; /* the window's corner */",
            emit_ref(e, n->in[0]), (long long)window_prod(c->in, ns), window_flat(a, ns, corner, c->in, false),
            (long long)ch);
  Buf sum = {0};
  buf_printf(&sum, "yp[c] = %s", bias);
  for (int64_t t = 0; t < ksz; t++) {
    int64_t at[MAX_RANK], off = 0;
    window_unflatten(t, c->k, ns, at);
    for (int j = 0; j < ns; j++)
      off = off * c->in[j] + at[j] * c->dil[j];
    buf_printf(&sum, " + xo[%lld + c] * %s[%lld + c]", (long long)(off * ch), W, (long long)(t * ch));
  }
  buf_puts(&sum, ";");
  window_channel_loop(e, ch, sum.s);
  buf_free(&sum);
}

/* Conv {channels_last} with the windows inside x apart: per row of outputs
 * (all spatial dims but the last), the outputs before the inside ones and
 * after them add their taps one at a time (depthwise_taps); the inside
 * ones, most of them, have theirs written out (depthwise_written_out), so
 * each sum stays in registers, where adding tap by tap into yp stores and
 * reloads it (a store-to-load chain of T steps a vector). The taps are
 * added in the same order either way: the same sums. The three runs are
 * loops with bounds of their own, not a test per output: under such a
 * test gcc 12 -O2 leaves the loops scalar (it guesses `(unsigned)(o - 1)
 * <= 9u` false and optimises what it guards for size); a row outside x in
 * the outer dims gets an empty inside run. */
static void emit_depthwise_split(Emit *e, const Node *n, const ConvGeom *c, const WindowWalk *walk, const char *W,
                                 const char *bias, const int64_t *lo, const int64_t *hi) {
  Arena *a = e->g->arena;
  int ns = c->nsp, L = ns - 1;
  int64_t ch = c->cin, ksz = window_prod(c->k, ns);
  emit_line(e, "for (int n = 0; n < %lld; n++) {", (long long)c->batch);
  e->indent++;
  Buf in = {0};
  for (int j = 0; j < L; j++) {
    if (j == 0) /* --threads: the outer output dim split (an FMA: about 0.25 ns an element and tap) */
      emit_parallel_for(e, c->out[0], 0.25 * (double)(window_prod(c->out, ns) * ch * ksz));
    emit_line(e, "for (int o%d = 0; o%d < %lld; o%d++) {", j, j, (long long)c->out[j], j);
    e->indent++;
    if (lo[j] > 0 || hi[j] < c->out[j] - 1)
      buf_printf(&in, "%s(unsigned)(o%d - %lld) <= %lldu", in.len ? " && " : "", j, (long long)lo[j],
                 (long long)(hi[j] - lo[j]));
  }
  const char *pos = "o0";
  for (int j = 1; j < ns; j++)
    pos = arena_printf(a, "(%s) * %lld + o%d", pos, (long long)c->out[j], j);
  const char *yp = arena_printf(a, "float *yp = %s + ((int64_t)n * %lld + %s) * %lld;", emit_ref(e, n->out[0]),
                                (long long)window_prod(c->out, ns), pos, (long long)ch);
  if (in.len) {
    emit_line(e, "const int in = %s; /* this row's windows can lie inside x */", in.s);
    emit_line(e, "const int lo = in ? %lld : %lld, hi = in ? %lld : %lld; /* those inside: [lo, hi) */",
              (long long)lo[L], (long long)c->out[L], (long long)hi[L] + 1, (long long)c->out[L]);
  } else {
    emit_line(e, "const int lo = %lld, hi = %lld; /* the windows inside x: [lo, hi) */", (long long)lo[L],
              (long long)hi[L] + 1);
  }
  buf_free(&in);
  const char *from[3] = {"0", "lo", "hi"}, *to[3] = {"lo", "hi", emit_int(e, c->out[L])};
  const char *what[3] = {"overhanging x: the taps inside it one at a time",
                         arena_printf(a, "inside x: the %lld taps written out", (long long)ksz),
                         "overhanging x at the end"};
  for (int r = 0; r < 3; r++) {
    emit_line(e, "for (int o%d = %s; o%d < %s; o%d++) { /* %s */", L, from[r], L, to[r], L, what[r]);
    e->indent++;
    emit_line(e, "%s", yp);
    if (r == 1)
      depthwise_written_out(e, n, c, W, bias);
    else
      depthwise_taps(e, n, c, walk, W, bias);
    e->indent--;
    emit_line(e, "}");
  }
  for (int j = 0; j < ns; j++) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* Conv {channels_last}: see the top of this file. */
static void emit_depthwise_last(Emit *e, const Node *n, const ConvGeom *c) {
  Graph *g = e->g;
  Arena *a = g->arena;
  int ns = c->nsp;
  int64_t ch = c->cin, ksz = window_prod(c->k, ns);
  const float *w = node_in(g, n, 1)->data;
  float *wl = arena_alloc(a, sizeof(float) * (size_t)(ksz * ch));
  for (int64_t t = 0; t < ksz; t++)
    for (int64_t m = 0; m < ch; m++)
      wl[t * ch + m] = w[m * ksz + t];
  const char *W = emit_const_array(e, DT_F32, wl, ksz * ch, arena_printf(a, "%s_w_last", n->name),
                                   "a depthwise conv's W tap-major, [taps][C]");
  emit_line(e, "/* y[n][o...][c] = b[c] + the sum of x[n][o * stride + k * dilation - pad ...][c] * w[c][k...] over "
               "the taps inside x (channels last, %lld channels) */", (long long)ch);
  const WindowWalk walk = {ns, c->in, c->out, c->k, c->stride, c->dil, c->pad};
  const char *bias = node_has_in(n, 2) ? arena_printf(a, "%s[c]", emit_ref(e, n->in[2])) : "0.0f";
  int64_t lo[MAX_RANK], hi[MAX_RANK];
  bool inside = ns >= 2 && ksz <= DEPTHWISE_TAPS_MAX;
  for (int j = 0; j < ns && inside; j++)
    inside = depthwise_inside(c, j, &lo[j], &hi[j]);
  if (inside) {
    emit_depthwise_split(e, n, c, &walk, W, bias, lo, hi);
    return;
  }
  window_last_outputs(e, &walk, c->batch, ch, emit_ref(e, n->out[0]));
  depthwise_taps(e, n, c, &walk, W, bias);
  for (int j = 0; j < ns + 1; j++) {
    e->indent--;
    emit_line(e, "}");
  }
}

bool conv_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0), *w = node_in(g, n, 1);
  ConvGeom c;
  char why[WHY];
  bool last = conv_last(n);
  Type xt = last ? window_permute_last(&x->type, false) : x->type;
  KILN_ASSERT(conv_geom(n, &xt, &w->type, &c, why));
  if (type_numel(&node_out(g, n, 0)->type) == 0) {
    emit_line(e, "/* empty output: nothing to compute */");
    return true;
  }
  if (last) {
    emit_depthwise_last(e, n, &c);
    return true;
  }
  /* rows of x are read between their pads: copied into a local row when
   * the last dim is padded (unless that row would be long) */
  int j = c.nsp - 1;
  int64_t need = (c.out[j] - 1) * c.stride[j] + (c.k[j] - 1) * c.dil[j] + 1;
  int64_t iwp = need > c.pad[j] + c.in[j] ? need : c.pad[j] + c.in[j];
  bool copy = c.pad[j] > 0 || need > c.in[j];
  if (c.transpose || (copy && iwp > ROW_MAX))
    emit_tap_major(e, n, &c);
  else
    emit_rows(e, n, &c, copy, iwp);
  return true;
}

/* ---- FLOP count (ops.def's flops column) -------------------------------------- */

/* Conv: 2·N·Cout·(output spatial)·(Cin/group)·(kernel) — each output element
 * is a dot product of W's row of Cin/group·kernel weights — and one op per
 * output element for the bias. ConvTranspose: each input element meets its
 * W row of Cout/group·kernel weights, so 2·numel(X)·that, and the bias. */
int64_t conv_flops(const Graph *g, const Node *n) {
  const Value *x = node_in(g, n, 0), *w = node_in(g, n, 1);
  int64_t out = type_numel(&gval(g, n->out[0])->type);
  if (!x || !w || w->type.rank < 1 || w->type.dims[0] <= 0)
    return out;
  int64_t row = type_numel(&w->type) / w->type.dims[0];
  int64_t macs = n->op == OP_CONVTRANSPOSE ? type_numel(&x->type) * row : out * row;
  return 2 * macs + (node_has_in(n, 2) ? out : 0);
}
