/* grid_sample.c — sampling an image at computed positions: GridSample
 * (opsets 16, 20, 22; family `grid_sample`) and AffineGrid (20; family
 * `affine_grid`), the pair behind spatial transformers and the warps of
 * optical-flow and detection heads.
 *
 * GridSample: Y[n][c][o...] samples X[n][c] at grid[n][o...], a point in
 * [-1, 1] per spatial dim, listed innermost dim first (x, y, z). The point
 * is unnormalised to input pixels (align_corners: -1 and 1 are the centres
 * of the corner pixels, else their outer edges), brought back inside by
 * padding_mode (border clamps, reflection folds it across the edges), and
 * read by nearest (ties to even), linear (2 taps per dim) or cubic (4 taps,
 * Keys with a = -0.75, 2-D only) weights, taps outside X reading 0
 * (zeros) or the clamped or reflected pixel. The grid is data, so the
 * generated kernel computes each point's taps once and applies them to
 * every channel; the per-dim constants (scale, borders, strides) are
 * tables. The arithmetic follows the ONNX reference (op_grid_sample.py).
 *
 * AffineGrid: grid[n][h][w] = theta[n] · (x_w, y_h, 1) (and z_d in 3-D),
 * where x_w, y_h are the base grid's coordinates in [-1, 1] for the output
 * size, a constant input; the generated code reads them from tables. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "window.h"

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
#define GS_FAR 4194304.0 /* 2^22: sample points are clamped to +-this, far outside any image */
enum { GP_ZEROS, GP_BORDER, GP_REFLECTION };

typedef struct GridParams {
  int mode, pad, nd; /* nd: spatial dims */
  bool align;
} GridParams;

static bool is_float(DType dt) { return dt == DT_F32 || dt == DT_F64; }

static bool grid_params(const Node *n, GridParams *p, char *why) {
  const char *m = attr_str(n, "mode", n->opset < 20 ? "bilinear" : "linear");
  const char *names16[] = {"nearest", "bilinear", "bicubic"}, *names20[] = {"nearest", "linear", "cubic"};
  p->mode = -1;
  for (int i = 0; i < 3; i++)
    if (!strcmp(m, n->opset < 20 ? names16[i] : names20[i]))
      p->mode = i;
  if (p->mode < 0)
    return window_fail(why, "mode is '%s'; expected %s", m,
                       n->opset < 20 ? "bilinear, nearest or bicubic" : "linear, nearest or cubic");
  const char *pm = attr_str(n, "padding_mode", "zeros");
  p->pad = !strcmp(pm, "zeros") ? GP_ZEROS : !strcmp(pm, "border") ? GP_BORDER : !strcmp(pm, "reflection") ? GP_REFLECTION : -1;
  if (p->pad < 0)
    return window_fail(why, "padding_mode is '%s'; expected zeros, border or reflection", pm);
  int64_t ac = attr_int(n, "align_corners", 0);
  if (ac != 0 && ac != 1)
    return window_fail(why, "align_corners is %lld; expected 0 or 1", (long long)ac);
  p->align = ac;
  return true;
}

/* Taps per spatial dim. */
static int grid_taps(const GridParams *p) { return p->mode == GS_NEAREST ? 1 : p->mode == GS_LINEAR ? 2 : 4; }

bool grid_sample_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0), *gr = node_in(g, n, 1);
  const Type *xt = &x->type, *gt = &gr->type;
  GridParams p;
  char why[WHY];
  if (!grid_params(n, &p, why))
    return diag_node(d, g, n, "%s", why);
  if (!is_float(xt->dt) || !is_float(gt->dt))
    return diag_node(d, g, n, "X is %s and grid %s; expected f32 or f64", dt_name(xt->dt), dt_name(gt->dt));
  int nd = xt->rank - 2;
  if (nd < 1 || (n->opset < 20 && nd != 2))
    return diag_node(d, g, n, "X has rank %d; expected [N, C, H, W]%s", xt->rank,
                     n->opset < 20 ? " (opset 16 samples 2-D images only)" : " or more spatial dims");
  char ts[128];
  if (gt->rank != xt->rank || gt->dims[0] != xt->dims[0] || gt->dims[gt->rank - 1] != nd)
    return diag_node(d, g, n, "grid is %s; expected [%lld, out dims..., %d] for X of rank %d",
                     type_str(gt, ts, sizeof ts), (long long)xt->dims[0], nd, xt->rank);
  if (p.mode == GS_CUBIC && nd != 2)
    return diag_node(d, g, n, "cubic mode on %d spatial dims; expected 2 (ONNX defines it for 4-D X only)", nd);
  for (int j = 2; j < xt->rank; j++)
    if (xt->dims[j] < 1)
      return diag_node(d, g, n, "spatial dim %d of X is 0; expected >= 1", j);
  Type t = *xt;
  for (int j = 0; j < nd; j++)
    t.dims[2 + j] = gt->dims[1 + j];
  node_out(g, n, 0)->type = t;
  return true;
}

/* ---- reference ---------------------------------------------------------------- */

/* Fold v across lo and hi until it lies between them (the reference's
 * _gs_reflect). */
static double reflect(double v, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0)
    return lo;
  if (v < lo) {
    double dx = lo - v, k = floor(dx / rng), r = dx - k * rng;
    return fmod(k, 2) == 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    double dx = v - hi, k = floor(dx / rng), r = dx - k * rng;
    return fmod(k, 2) == 0 ? hi - r : lo + r;
  }
  return v;
}

static double keys(double x, int t) { /* Keys' cubic weight of tap t (x0-1 .. x0+2) at fraction x */
  const double a = -0.75;
  double s = t == 0 ? x + 1 : t == 1 ? x : t == 2 ? 1 - x : 2 - x;
  return s <= 1 ? ((a + 2) * s - (a + 3)) * s * s + 1 : ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
}

/* The taps of grid coordinate v along a dim of len pixels: index (< 0:
 * reads 0) and weight. f32: the coordinate is computed in f32. */
static void dim_taps(const GridParams *p, double v, int64_t len, bool f32, int64_t *idx, double *w) {
#define R(e) (f32 ? (double)(float)(e) : (e))
  double lo = p->align ? 0 : -0.5, hi = p->align ? (double)len - 1 : (double)len - 0.5;
  double x = p->align ? R(R(v + 1) * ((double)(len - 1) / 2)) : R(R(R(v + 1) * (double)len) - 1) / 2;
  x = fmin(fmax(x, -GS_FAR), GS_FAR);
  if (p->mode == GS_NEAREST)
    x = nearbyint(x);
  if (x < lo || x > hi)
    x = p->pad == GP_BORDER ? fmin(fmax(x, 0), (double)len - 1) : p->pad == GP_REFLECTION ? R(reflect(x, lo, hi)) : x;
  int k = grid_taps(p);
  double f = p->mode == GS_NEAREST ? x : floor(x), t = R(x - f);
  for (int i = 0; i < k; i++) {
    int64_t at = (int64_t)f + (p->mode == GS_CUBIC ? i - 1 : i);
    w[i] = p->mode == GS_NEAREST ? 1 : p->mode == GS_LINEAR ? (i ? t : 1 - t) : keys(t, i);
    if (p->pad == GP_BORDER)
      at = at < 0 ? 0 : at >= len ? len - 1 : at;
    else if (p->pad == GP_REFLECTION)
      at = (int64_t)reflect((double)at, lo, hi);
    idx[i] = at >= 0 && at < len ? at : -1;
  }
#undef R
}

bool grid_sample_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  GridParams p;
  char why[WHY];
  KILN_ASSERT(grid_params(n, &p, why));
  const Type *xt = &in[0].type, *gt = &in[1].type;
  int nd = xt->rank - 2, k = grid_taps(&p);
  int64_t nb = xt->dims[0], c = xt->dims[1], isp = window_prod(xt->dims + 2, nd), osp = window_prod(gt->dims + 1, nd);
  int64_t st[MAX_RANK];
  for (int j = nd - 1, s = 1; j >= 0; s *= (int)xt->dims[2 + j], j--)
    st[j] = s;
  bool f32 = gt->dt == DT_F32;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t o = 0; o < osp; o++) {
      int64_t idx[MAX_RANK][4];
      double w[MAX_RANK][4];
      for (int j = 0; j < nd; j++)
        dim_taps(&p, el_get_f(gt->dt, in[1].data, (b * osp + o) * nd + nd - 1 - j), xt->dims[2 + j], f32, idx[j], w[j]);
      int64_t combos = 1;
      for (int j = 0; j < nd; j++)
        combos *= k;
      for (int64_t ch = 0; ch < c; ch++) {
        double acc = 0;
        for (int64_t cb = 0; cb < combos; cb++) {
          double wt = 1;
          int64_t off = 0, r = cb;
          for (int j = nd - 1; j >= 0; j--, r /= k) {
            int t = (int)(r % k);
            wt *= w[j][t];
            off = idx[j][t] < 0 || off < 0 ? -1 : off + idx[j][t] * st[j];
          }
          if (off >= 0)
            acc += wt * el_get_f(xt->dt, in[0].data, (b * c + ch) * isp + off);
        }
        el_set_f(out[0].type.dt, out[0].data, (b * c + ch) * osp + o, acc);
      }
    }
  return true;
}

/* ---- C ------------------------------------------------------------------------ */

static void close_n(Emit *e, int n) {
  for (int i = 0; i < n; i++) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* Lines folding variable v of type T across lo[d] and hi[d]. */
static void emit_reflect(Emit *e, const char *T, const char *v) {
  emit_line(e, "if (%s < lo[d] || %s > hi[d]) { /* fold across the edges */", v, v);
  emit_line(e, "  const %s rng = hi[d] - lo[d];", T);
  emit_line(e, "  const %s dx = %s < lo[d] ? lo[d] - %s : %s - hi[d];", T, v, v, v);
  emit_line(e, "  const int folds = rng > 0 ? (int)(dx / rng) : 0;");
  emit_line(e, "  const %s rem = rng > 0 ? dx - (%s)folds * rng : 0;", T, T);
  emit_line(e, "  %s = (%s < lo[d]) == (folds %% 2 == 0) ? lo[d] + rem : hi[d] - rem;", v, v);
  emit_line(e, "}");
}

/* static const T NAME[n] = {...} from doubles. */
static void emit_ftable(Emit *e, DType dt, const char *name, const double *v, int n, const char *what) {
  Buf b = {0};
  for (int i = 0; i < n; i++)
    buf_printf(&b, "%s%s", i ? ", " : "", emit_double_literal(e, dt, v[i]));
  emit_line(e, "static const %s %s[%d] = {%s}; /* %s */", dt_ctype(dt), name, n, b.s, what);
  buf_free(&b);
}

bool grid_sample_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  GridParams p;
  char why[WHY];
  KILN_ASSERT(grid_params(n, &p, why));
  const Type *xt = &node_in(g, n, 0)->type, *gt = &node_in(g, n, 1)->type;
  DType dt = xt->dt, gdt = gt->dt;
  const char *T = dt_ctype(dt), *G = dt_ctype(gdt);
  int nd = xt->rank - 2, k = grid_taps(&p);
  int64_t nb = xt->dims[0], c = xt->dims[1], isp = window_prod(xt->dims + 2, nd), osp = window_prod(gt->dims + 1, nd);
  if (nb * c * osp == 0) {
    emit_line(e, "/* empty output: nothing to compute */");
    return true;
  }
  static const char *const mname[] = {"nearest", "linear", "cubic"}, *const pname[] = {"zeros", "border", "reflection"};
  emit_line(e, "/* y[n][c][o] = the %s sample of x[n][c] at grid[n][o] (coordinates innermost dim first),",
            mname[p.mode]);
  emit_line(e, " * align_corners=%d, padding %s; each point's %d tap(s) per dim are found once for all %lld channels */",
            p.align, pname[p.pad], k, (long long)c);
  double scale[MAX_RANK], shift[MAX_RANK], lo[MAX_RANK], hi[MAX_RANK], len[MAX_RANK];
  int64_t stride[MAX_RANK], size[MAX_RANK];
  for (int j = nd - 1, s = 1; j >= 0; s *= (int)xt->dims[2 + j], j--) {
    int64_t L = xt->dims[2 + j];
    stride[j] = s;
    size[j] = L;
    len[j] = (double)L;
    scale[j] = p.align ? (double)(L - 1) / 2 : (double)L / 2;
    shift[j] = p.align ? 0 : 0.5;
    lo[j] = p.align ? 0 : -0.5;
    hi[j] = p.align ? (double)L - 1 : (double)L - 0.5;
  }
  (void)len;
  emit_ftable(e, gdt, "scale", scale, nd, "pixel = (coordinate + 1) * scale - shift");
  emit_ftable(e, gdt, "shift", shift, nd, "per spatial dim");
  if (p.pad != GP_ZEROS) {
    emit_ftable(e, gdt, "lo", lo, nd, p.pad == GP_BORDER ? "beyond these edges a point is clamped" : "the edges reflection folds across");
    emit_ftable(e, gdt, "hi", hi, nd, "");
  }
  if (p.pad != GP_REFLECTION)
    window_emit_table(e, "size", size, nd, "spatial dims of x");
  window_emit_table(e, "stride", stride, nd, "their strides");
  const char *X = emit_ref(e, n->in[0]), *GR = emit_ref(e, n->in[1]), *Y = emit_ref(e, n->out[0]);
  emit_parallel_for(e, nb * osp, (double)(nb * osp * c) * (double)(k * k) * 0.5 + (double)(nb * osp) * 10);
  emit_line(e, "for (int no = 0; no < %lld; no++) {", (long long)(nb * osp));
  e->indent++;
  emit_line(e, "const int n = no / %lld, o = no %% %lld;", (long long)osp, (long long)osp);
  emit_line(e, "const %s *gp = %s + no * %d;", G, GR, nd);
  emit_line(e, "int off[%d][%d]; /* per dim: each tap's offset in the plane */", nd, k);
  emit_line(e, "%s w[%d][%d]; /* ... and its weight (0: outside x, zeros padding) */", T, nd, k);
  emit_line(e, "for (int d = 0; d < %d; d++) {", nd);
  e->indent++;
  emit_line(e, "%s v = (gp[%d - d] + %s) * scale[d] - shift[d];", G, nd - 1, emit_double_literal(e, gdt, 1));
  if (p.mode == GS_NEAREST)
    emit_line(e, "v = %s(v); /* ties to even */", emit_mathfn(e, gdt, "nearbyint"));
  /* far points (and NaN) to a bound no image reaches, so that the int conversions below are defined */
  emit_line(e, "v = %s(%s(v, %s), %s);", emit_mathfn(e, gdt, "fmin"), emit_mathfn(e, gdt, "fmax"),
            emit_double_literal(e, gdt, -GS_FAR), emit_double_literal(e, gdt, GS_FAR));
  if (p.pad == GP_BORDER)
    emit_line(e, "if (v < lo[d] || v > hi[d])");
  if (p.pad == GP_BORDER)
    emit_line(e, "  v = v < %s ? %s : v > (%s)(size[d] - 1) ? (%s)(size[d] - 1) : v;", emit_double_literal(e, gdt, 0),
              emit_double_literal(e, gdt, 0), G, G);
  else if (p.pad == GP_REFLECTION)
    emit_reflect(e, G, "v");
  if (p.mode == GS_NEAREST) {
    emit_line(e, "const int i0 = (int)v;");
  } else {
    emit_line(e, "const %s f = %s(v), fr = v - f;", G, emit_mathfn(e, gdt, "floor"));
    emit_line(e, "const int i0 = (int)f%s;", p.mode == GS_CUBIC ? " - 1" : "");
  }
  if (p.mode == GS_LINEAR) {
    emit_line(e, "w[d][0] = (%s)(%s - fr);", T, emit_double_literal(e, gdt, 1));
    emit_line(e, "w[d][1] = (%s)fr;", T);
  } else if (p.mode == GS_CUBIC) { /* Keys, a = -0.75, taps at distances t + 1, t, 1 - t, 2 - t */
    emit_line(e, "const %s s0 = fr + 1, s1 = fr, s2 = 1 - fr, s3 = 2 - fr;", G);
    emit_line(e, "w[d][0] = (%s)(((-0.75f * s0 + 3.75f) * s0 - 6.0f) * s0 + 3.0f);", T);
    emit_line(e, "w[d][1] = (%s)((1.25f * s1 - 2.25f) * s1 * s1 + 1.0f);", T);
    emit_line(e, "w[d][2] = (%s)((1.25f * s2 - 2.25f) * s2 * s2 + 1.0f);", T);
    emit_line(e, "w[d][3] = (%s)(((-0.75f * s3 + 3.75f) * s3 - 6.0f) * s3 + 3.0f);", T);
  } else {
    emit_line(e, "w[d][0] = %s;", emit_double_literal(e, dt, 1));
  }
  emit_line(e, "for (int k = 0; k < %d; k++) {", k);
  e->indent++;
  emit_line(e, "int i = i0 + k;");
  if (p.pad == GP_ZEROS) {
    emit_line(e, "if (i < 0 || i >= size[d]) {");
    emit_line(e, "  w[d][k] = %s;", emit_double_literal(e, dt, 0));
    emit_line(e, "  i = 0;");
    emit_line(e, "}");
  } else if (p.pad == GP_BORDER) {
    emit_line(e, "i = i < 0 ? 0 : i >= size[d] ? size[d] - 1 : i;");
  } else {
    emit_line(e, "%s r = (%s)i;", G, G);
    emit_reflect(e, G, "r");
    emit_line(e, "i = (int)r;");
  }
  emit_line(e, "off[d][k] = i * stride[d];");
  close_n(e, 2);
  emit_line(e, "for (int c = 0; c < %lld; c++) {", (long long)c);
  e->indent++;
  emit_line(e, "const %s *xc = %s + (n * %lld + c) * %lld;", T, X, (long long)c, (long long)isp);
  emit_line(e, "%s acc = %s;", T, emit_double_literal(e, dt, 0));
  const char *wexpr = NULL, *oexpr = NULL;
  for (int j = 0; j < nd; j++) {
    const char *tv = arena_printf(a, "t%d", j);
    emit_line(e, "for (int %s = 0; %s < %d; %s++)", tv, tv, k, tv);
    e->indent++;
    const char *wj = arena_printf(a, "w[%d][%s]", j, tv), *oj = arena_printf(a, "off[%d][%s]", j, tv);
    wexpr = wexpr ? arena_printf(a, "%s * %s", wexpr, wj) : wj;
    oexpr = oexpr ? arena_printf(a, "%s + %s", oexpr, oj) : oj;
  }
  emit_line(e, "acc += %s * xc[%s];", wexpr, oexpr);
  e->indent -= nd;
  emit_line(e, "%s[(n * %lld + c) * %lld + o] = acc;", Y, (long long)c, (long long)osp);
  close_n(e, 2);
  return true;
}

/* ---- AffineGrid --------------------------------------------------------------- */

/* The output's spatial size from the constant size input: [N, C, H, W] or
 * [N, C, D, H, W]. */
static bool affine_size(Graph *g, const Node *n, int64_t *sz, int *len, Diag *d) {
  int64_t *v;
  if (!const_input_ints(g, n, 1, "size", &v, len, d))
    return false;
  if (*len != 4 && *len != 5)
    return diag_node(d, g, n, "size has %d values; expected 4 ([N, C, H, W]) or 5 ([N, C, D, H, W])", *len);
  for (int i = 0; i < *len; i++)
    if ((sz[i] = v[i]) < 1 || v[i] > ((int64_t)1 << 30))
      return diag_node(d, g, n, "size[%d] is %lld; expected a positive dim", i, (long long)v[i]);
  return true;
}

bool affine_grid_infer(Graph *g, Node *n, Diag *d) {
  const Value *th = node_in(g, n, 0);
  int64_t sz[5];
  int len;
  if (!affine_size(g, n, sz, &len, d))
    return false;
  int nd = len - 2;
  char ts[128];
  if (!is_float(th->type.dt) || th->type.rank != 3 || th->type.dims[0] != sz[0] || th->type.dims[1] != nd ||
      th->type.dims[2] != nd + 1)
    return diag_node(d, g, n, "theta is %s; expected f32 or f64 [%lld, %d, %d] for size of %d values",
                     type_str(&th->type, ts, sizeof ts), (long long)sz[0], nd, nd + 1, len);
  int64_t ac = attr_int(n, "align_corners", 0);
  if (ac != 0 && ac != 1)
    return diag_node(d, g, n, "align_corners is %lld; expected 0 or 1", (long long)ac);
  Type t = {.dt = th->type.dt, .rank = nd + 2};
  t.dims[0] = sz[0];
  for (int j = 0; j < nd; j++)
    t.dims[1 + j] = sz[2 + j];
  t.dims[nd + 1] = nd;
  if (!type_size_ok(&t))
    return diag_node(d, g, n, "the output would have too many elements; expected a smaller shape");
  node_out(g, n, 0)->type = t;
  return true;
}

/* Base grid coordinate i of a dim of len: -1 .. 1 through the corner
 * pixels' centres (align_corners) or from half a pixel inside the edges. */
static double base_coord(int64_t i, int64_t len, bool align) {
  if (align)
    return len == 1 ? -1 : -1 + (double)i * (2.0 / (double)(len - 1));
  double step = 2.0 / (double)len;
  return -1 + step / 2 + (double)i * step;
}

bool affine_grid_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  const Type *ot = &out[0].type;
  int nd = ot->rank - 2;
  bool align = attr_int(n, "align_corners", 0) == 1;
  int64_t nb = ot->dims[0], sp = window_prod(ot->dims + 1, nd), c[MAX_RANK];
  for (int64_t b = 0; b < nb; b++)
    for (int64_t o = 0; o < sp; o++) {
      window_unflatten(o, ot->dims + 1, nd, c);
      double h[4]; /* (x, y[, z], 1): innermost dim first */
      for (int j = 0; j < nd; j++)
        h[j] = base_coord(c[nd - 1 - j], ot->dims[nd - j], align);
      h[nd] = 1;
      for (int r = 0; r < nd; r++) {
        double acc = 0;
        for (int k = 0; k <= nd; k++)
          acc += el_get_f(in[0].type.dt, in[0].data, (b * nd + r) * (nd + 1) + k) * h[k];
        el_set_f(ot->dt, out[0].data, (b * sp + o) * nd + r, acc);
      }
    }
  return true;
}

bool affine_grid_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const Type *ot = &node_out(g, n, 0)->type;
  DType dt = ot->dt;
  const char *T = dt_ctype(dt);
  int nd = ot->rank - 2;
  bool align = attr_int(n, "align_corners", 0) == 1;
  int64_t nb = ot->dims[0];
  static const char *const cn[] = {"x", "y", "z"}, *const dn[] = {"w", "h", "d"};
  emit_line(e, "/* grid[n][...] = theta[n] . (x[w], y[h]%s, 1): the base grid's coordinates in [-1, 1]%s */",
            nd == 3 ? ", z[d]" : "", align ? " through the corner pixels' centres" : ", half a pixel inside the edges");
  for (int j = 0; j < nd; j++) { /* j = 0: x, along the last dim */
    int64_t len = ot->dims[nd - j];
    double *v = arena_alloc(a, sizeof(double) * (size_t)len);
    for (int64_t i = 0; i < len; i++)
      v[i] = base_coord(i, len, align);
    Buf b = {0};
    for (int64_t i = 0; i < len; i++)
      buf_printf(&b, "%s%s%s", i == 0 ? "" : i % 8 ? " " : "\n", emit_double_literal(e, dt, v[i]), i + 1 < len ? "," : "");
    emit_line(e, "static const %s %s[%lld] = {", T, cn[j], (long long)len);
    for (char *line = strtok(b.s, "\n"); line; line = strtok(NULL, "\n"))
      emit_line(e, "  %s", line);
    emit_line(e, "};");
    buf_free(&b);
  }
  const char *TH = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]);
  emit_line(e, "for (int n = 0; n < %lld; n++) {", (long long)nb);
  e->indent++;
  emit_line(e, "const %s *t = %s + n * %d;", T, TH, nd * (nd + 1));
  emit_line(e, "%s *gp = %s + n * %lld;", T, Y, (long long)(window_prod(ot->dims + 1, nd) * nd));
  for (int j = nd - 1; j >= 0; j--) {
    emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", dn[j], dn[j], (long long)ot->dims[nd - j], dn[j]);
    e->indent++;
  }
  for (int r = 0; r < nd; r++) {
    Buf b = {0};
    for (int k = 0; k < nd; k++)
      buf_printf(&b, "t[%d] * %s[%s] + ", r * (nd + 1) + k, cn[k], dn[k]);
    emit_line(e, "*gp++ = %st[%d];", b.s, r * (nd + 1) + nd);
    buf_free(&b);
  }
  close_n(e, nd + 1);
  return true;
}
