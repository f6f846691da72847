/* resize.c — image resampling: Resize (opsets 10-19) and the deprecated
 * Upsample (7, 9) it replaced (family `resize`).
 *
 * Every mode ONNX defines is separable: output position o along axis j
 * reads k_j input positions (idx) with weights (w), and an N-D output is
 * the product of the per-axis 1-D maps. The per-axis maps follow the ONNX
 * reference (onnx/reference/ops/op_resize.py): o goes back to an input
 * coordinate by coordinate_transformation_mode, the k nearest input
 * positions are taken with the edge repeated (or dropped and the weights
 * renormalised with exclude_outside), and nearest_mode, the linear hat or
 * Keys' cubic (cubic_coeff_a) weighs them; antialias stretches the linear
 * and cubic filters by 1/scale when downscaling. tf_crop_and_resize maps
 * into roi and writes extrapolation_value where the coordinate leaves the
 * input. Scales and sizes must be constants: they fix the output shape, so
 * the tables are computed once, at compile time (resize_axis), and _emit
 * writes them as static const arrays: nearest is a gather through index
 * tables; linear and cubic blend, per output row, the input rows of the
 * outer resized axes into a row buffer, then run the last axis's taps
 * along it (two separable passes, no division anywhere). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "window.h"

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
#define RESIZE_MAX_TAPS 4096 /* taps per output position an antialiased downscale may use */
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_NN, CT_TF_CROP };
enum { NM_PREFER_FLOOR, NM_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

/* What the attributes and constant inputs say, per axis. */
typedef struct ResizeParams {
  int rank, mode, coord, nearest;
  bool exclude_outside, antialias;
  double cubic_a, extrap;
  int64_t in[MAX_RANK], out[MAX_RANK];
  double scale[MAX_RANK];              /* the scale the coordinates use */
  double roi0[MAX_RANK], roi1[MAX_RANK];
} ResizeParams;

/* The 1-D map of one axis: output o reads idx[o*k + t] (clamped into the
 * input) with weight w[o*k + t]; outside[o]: tf_crop_and_resize's
 * coordinate left the input, y = extrapolation_value. */
typedef struct ResizeAxis {
  int64_t in, out;
  int k;
  int64_t *idx;
  double *w;
  bool *outside; /* NULL when no position is outside */
  bool identity; /* y = x along this axis */
} ResizeAxis;

static bool is_float(DType dt) { return dt == DT_F32 || dt == DT_F64; }

static int str_index(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (names[i] && !strcmp(s, names[i]))
      return i;
  return -1;
}

/* Input slots: Upsample 9 and Resize 10 (X, scales); Resize 11+ (X, roi,
 * scales, sizes); Upsample 7 has scales as an attribute. */
static int scales_slot(const Node *n) { return n->op == OP_UPSAMPLE || n->opset < 11 ? 1 : 2; }

/* An input given and not empty (opset 11 passes an empty scales beside sizes). */
static bool given(const Tensor *t) { return t && t->data && type_numel(&t->type) > 0; }

static bool parse_modes(const Node *n, DType dt, ResizeParams *p, char *why) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  const char *m = attr_str(n, "mode", "nearest");
  bool old = n->op == OP_UPSAMPLE || n->opset < 11;
  p->mode = str_index(m, modes, old ? 2 : 3);
  if (p->mode < 0)
    return window_fail(why, "mode is '%s'; expected %s", m, old ? "nearest or linear" : "nearest, linear or cubic");
  if (p->mode != RS_NEAREST && !is_float(dt))
    return window_fail(why, "mode %s on %s data; expected f32 or f64 (only nearest copies other types)", m,
                       dt_name(dt));
  if (old) { /* asymmetric; nearest floors when upscaling, ceils when downscaling (onnxruntime) */
    p->coord = CT_ASYM;
    p->nearest = NM_SIMPLE;
    return true;
  }
  const char *ctn[] = {"half_pixel", n->opset >= 18 ? "half_pixel_symmetric" : NULL, "pytorch_half_pixel",
                       "align_corners", "asymmetric", n->opset < 18 ? "tf_half_pixel_for_nn" : NULL,
                       "tf_crop_and_resize"};
  const char *ct = attr_str(n, "coordinate_transformation_mode", "half_pixel");
  p->coord = str_index(ct, ctn, 7);
  if (p->coord < 0)
    return window_fail(why, "coordinate_transformation_mode is '%s'; expected half_pixel, %spytorch_half_pixel, "
                       "align_corners, asymmetric, %stf_crop_and_resize", ct,
                       n->opset >= 18 ? "half_pixel_symmetric, " : "", n->opset < 18 ? "tf_half_pixel_for_nn, " : "");
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const char *nm = attr_str(n, "nearest_mode", "round_prefer_floor");
  p->nearest = str_index(nm, nms, 4);
  if (p->nearest < 0)
    return window_fail(why, "nearest_mode is '%s'; expected round_prefer_floor, round_prefer_ceil, floor or ceil", nm);
  p->cubic_a = attr_float(n, "cubic_coeff_a", -0.75);
  p->extrap = attr_float(n, "extrapolation_value", 0.0);
  int64_t ex = attr_int(n, "exclude_outside", 0), aa = n->opset >= 18 ? attr_int(n, "antialias", 0) : 0;
  if ((ex != 0 && ex != 1) || (aa != 0 && aa != 1))
    return window_fail(why, "exclude_outside is %lld and antialias %lld; expected 0 or 1", (long long)ex,
                       (long long)aa);
  p->exclude_outside = ex;
  p->antialias = aa && p->mode != RS_NEAREST; /* the filter of nearest has no width to stretch */
  return true;
}

/* axes (opset 18+): the axes scales, sizes and roi list; all by default. */
static bool parse_axes(const Node *n, int rank, int *axes, int *na, char *why) {
  const Attr *a = n->opset >= 18 ? attr_get(n, "axes") : NULL;
  *na = rank;
  for (int i = 0; i < rank; i++)
    axes[i] = i;
  if (!a)
    return true;
  if (a->kind != ATTR_INTS || a->n < 1 || a->n > rank)
    return window_fail(why, "attribute axes has %d values; expected 1 to %d axes of X", a->n, rank);
  bool seen[MAX_RANK] = {false};
  for (int i = 0; i < a->n; i++) {
    if (!axis_norm(a->ints[i], rank, &axes[i]) || seen[axes[i]])
      return window_fail(why, "axes[%d] is %lld; expected distinct axes in [%d, %d)", i, (long long)a->ints[i],
                         -rank, rank);
    seen[axes[i]] = true;
  }
  *na = a->n;
  return true;
}

/* Output dims and per-axis scales from scales or sizes (exactly one given),
 * keep_aspect_ratio_policy, and roi. */
static bool parse_sizes(const Node *n, const Tensor *roi, const Tensor *sc, const Tensor *sz, const int *axes,
                        int na, ResizeParams *p, char *why) {
  int r = p->rank;
  for (int j = 0; j < r; j++) {
    p->out[j] = p->in[j];
    p->scale[j] = 1;
    p->roi0[j] = 0;
    p->roi1[j] = 1;
  }
  const Attr *sa = n->op == OP_UPSAMPLE && n->opset < 9 ? attr_get(n, "scales") : NULL;
  if (given(sc) == given(sz) && !sa)
    return window_fail(why, given(sc) ? "both scales and sizes are given; expected one of them"
                                      : "neither scales nor sizes is given; expected one of them");
  if (sa || given(sc)) {
    int64_t m = sa ? (sa->kind == ATTR_FLOATS ? sa->n : -1) : type_numel(&sc->type);
    if ((!sa && !dt_is_float(sc->type.dt)) || m != na)
      return window_fail(why, "scales has %lld values; expected %d floats, one per %s", (long long)m, na,
                         na == r ? "axis of X" : "axis in axes");
    for (int i = 0; i < na; i++) {
      double s = sa ? (double)(float)sa->floats[i] : el_get_f(sc->type.dt, sc->data, i);
      if (!(s > 0) || !isfinite(s))
        return window_fail(why, "scales[%d] is %g; expected a positive number", i, s);
      if (s * (double)p->in[axes[i]] > (double)ATTR_MAX)
        return window_fail(why, "scales[%d] is %g: an output dim of %g; expected at most %lld", i, s,
                           s * (double)p->in[axes[i]], (long long)ATTR_MAX);
      p->scale[axes[i]] = s;
      p->out[axes[i]] = (int64_t)floor(s * (double)p->in[axes[i]]);
    }
  } else {
    if (!dt_is_int(sz->type.dt) || type_numel(&sz->type) != na)
      return window_fail(why, "sizes has %lld values; expected %d integers, one per %s",
                         (long long)type_numel(&sz->type), na, na == r ? "axis of X" : "axis in axes");
    for (int i = 0; i < na; i++) {
      int64_t s = el_get_i(sz->type.dt, sz->data, i);
      if (s < 1 || s > ATTR_MAX)
        return window_fail(why, "sizes[%d] is %lld; expected 1..%lld", i, (long long)s, (long long)ATTR_MAX);
      p->out[axes[i]] = s;
      p->scale[axes[i]] = (double)s / (double)p->in[axes[i]];
    }
    const char *kp = n->opset >= 18 ? attr_str(n, "keep_aspect_ratio_policy", "stretch") : "stretch";
    bool smaller = !strcmp(kp, "not_smaller");
    if (!smaller && strcmp(kp, "not_larger") && strcmp(kp, "stretch"))
      return window_fail(why, "keep_aspect_ratio_policy is '%s'; expected stretch, not_larger or not_smaller", kp);
    if (strcmp(kp, "stretch")) { /* one scale for all the axes: the least or the greatest */
      double s = p->scale[axes[0]];
      for (int i = 1; i < na; i++)
        s = (smaller ? p->scale[axes[i]] > s : p->scale[axes[i]] < s) ? p->scale[axes[i]] : s;
      for (int i = 0; i < na; i++) {
        p->scale[axes[i]] = s;
        p->out[axes[i]] = (int64_t)(s * (double)p->in[axes[i]] + 0.5);
      }
    }
  }
  for (int j = 0; j < r; j++) {
    if (p->out[j] < 1)
      return window_fail(why, "output dim %d is %lld (input %lld times scale %g); expected at least 1", j,
                         (long long)p->out[j], (long long)p->in[j], p->scale[j]);
    /* antialias widens the filter by 1 / scale: bound its taps */
    double width = p->mode == RS_LINEAR ? 2 : 4; /* the filter's taps at scale 1 */
    if (p->antialias && p->scale[j] < 1 && width / p->scale[j] > RESIZE_MAX_TAPS)
      return window_fail(why, "antialias at scale %g of axis %d needs about %g taps; expected at most %d "
                         "(a scale of at least %g)", p->scale[j], j, width / p->scale[j], RESIZE_MAX_TAPS,
                         width / RESIZE_MAX_TAPS);
  }
  if (p->coord != CT_TF_CROP)
    return true;
  if (!given(roi) || !dt_is_float(roi->type.dt) || type_numel(&roi->type) != 2 * na)
    return window_fail(why, "tf_crop_and_resize needs roi of %d floats (starts, then ends, per %s); got %lld",
                       2 * na, na == r ? "axis of X" : "axis in axes", given(roi) ? (long long)type_numel(&roi->type) : 0LL);
  for (int i = 0; i < na; i++) {
    p->roi0[axes[i]] = el_get_f(roi->type.dt, roi->data, i);
    p->roi1[axes[i]] = el_get_f(roi->type.dt, roi->data, na + i);
  }
  return true;
}

/* Read everything; x is X's type; roi, scales and sizes may be NULL. */
static bool resize_params(const Node *n, const Type *x, const Tensor *roi, const Tensor *sc, const Tensor *sz,
                          ResizeParams *p, char *why) {
  memset(p, 0, sizeof *p);
  if (x->rank < 1)
    return window_fail(why, "X is a scalar; expected a tensor of rank >= 1");
  p->rank = x->rank;
  for (int j = 0; j < x->rank; j++)
    if ((p->in[j] = x->dims[j]) < 1)
      return window_fail(why, "dim %d of X is 0; expected >= 1", j);
  int axes[MAX_RANK], na;
  return parse_modes(n, x->dt, p, why) && parse_axes(n, x->rank, axes, &na, why) &&
         parse_sizes(n, roi, sc, sz, axes, na, p, why);
}

/* ---- the per-axis tables ------------------------------------------------------ */

/* Keys' cubic kernel at distance x. */
static double cubic(double x, double a) {
  x = fabs(x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  return x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0;
}

/* Input coordinate of output position o along axis j. */
static double source_coord(const ResizeParams *p, int j, int64_t o, bool *outside) {
  double s = p->scale[j], in = (double)p->in[j], ow = s * in, x = (double)o, xo;
  *outside = false;
  switch (p->coord) {
  case CT_ALIGN: return ow == 1 ? 0 : x * (in - 1) / (ow - 1);
  case CT_ASYM: return x / s;
  case CT_TF_NN: return (x + 0.5) / s;
  case CT_PYTORCH: return p->out[j] == 1 ? -0.5 : (x + 0.5) / s - 0.5;
  case CT_HALF_PIXEL_SYM: return in / 2 * (1 - (double)p->out[j] / ow) + (x + 0.5) / s - 0.5;
  case CT_TF_CROP: { /* in f32, as onnxruntime and the reference do: a roi of 0.3 on 6 rows lands on 1.5 */
    float r0 = (float)p->roi0[j], r1 = (float)p->roi1[j], inf = (float)in - 1, owf = (float)ow;
    xo = (double)((owf == 1 ? (r1 - r0) * inf / 2 : (float)x * (r1 - r0) * inf / (owf - 1)) + r0 * inf);
    *outside = xo < 0 || xo > in - 1;
    return xo;
  }
  default: return (x + 0.5) / s - 0.5;
  }
}

/* The weights of taps lo..lo+k-1 (relative to the left neighbour) at
 * fraction r in (0, 1]. */
static void tap_weights(const ResizeParams *p, double scale, int k, int lo, double r, double *w) {
  if (p->mode == RS_NEAREST) {
    bool right = r == 1 || (p->nearest == NM_PREFER_FLOOR ? r > 0.5
                            : p->nearest == NM_PREFER_CEIL ? r >= 0.5
                                                           : p->nearest == NM_CEIL);
    w[0] = !right;
    w[1] = right;
    return;
  }
  double s = p->antialias && scale < 1 ? scale : 1, sum = 0;
  for (int t = 0; t < k; t++) {
    double d = ((double)(lo + t) - r) * s;
    w[t] = p->mode == RS_LINEAR ? fmax(0, 1 - fabs(d)) : cubic(d, p->cubic_a);
    sum += w[t];
  }
  if (p->antialias)
    for (int t = 0; t < k; t++)
      w[t] /= sum;
}

/* Taps per output position: 2 (nearest, linear), 4 (cubic), wider with
 * antialias when downscaling. */
static int tap_count(const ResizeParams *p, int j) {
  if (p->mode == RS_NEAREST)
    return 2;
  double s = p->antialias && p->scale[j] < 1 ? p->scale[j] : 1;
  int start = (int)floor((p->mode == RS_LINEAR ? -1 : -2) / s) + 1;
  return 2 - 2 * start;
}

/* The 1-D map of axis j (tables malloc'd; resize_axis_free). */
static bool resize_axis(const ResizeParams *p, int j, ResizeAxis *ax) {
  int64_t in = p->in[j], out = p->out[j];
  int k = tap_count(p, j), pad = k / 2;
  ax->in = in;
  ax->out = out;
  ax->k = k;
  ax->idx = malloc(sizeof(int64_t) * (size_t)(out * k));
  ax->w = malloc(sizeof(double) * (size_t)(out * k));
  ax->outside = NULL;
  ax->identity = in == out;
  for (int64_t o = 0; o < out; o++) {
    bool outside;
    double xo = source_coord(p, j, o, &outside), fl = floor(xo), r = xo - fl;
    int64_t *idx = ax->idx + o * k;
    double *w = ax->w + o * k;
    if (outside) {
      if (!ax->outside)
        ax->outside = calloc((size_t)out, sizeof(bool));
      ax->outside[o] = true;
      ax->identity = false;
    }
    if (p->nearest == NM_SIMPLE && p->mode == RS_NEAREST) { /* opset < 11 */
      int64_t i = (int64_t)(p->scale[j] < 1 ? ceil(xo) : fl);
      idx[0] = idx[1] = i < in - 1 ? i : in - 1;
      w[0] = 0;
      w[1] = 1;
      ax->identity = ax->identity && idx[1] == o;
      continue;
    }
    if (r == 0) { /* an integer coordinate: the right neighbour of the previous position */
      r = 1;
      fl -= 1;
    }
    /* the k positions nearest xo among [-pad, in + pad) */
    int64_t first = (int64_t)fl + 1 - k / 2;
    first = first < -pad ? -pad : first;
    first = first + k > in + pad ? in + pad - k : first;
    tap_weights(p, p->scale[j], k, 1 - k / 2, r, w); /* as if unclamped, like the reference */
    double sum = 0;
    for (int t = 0; t < k; t++) {
      int64_t i = first + t;
      if (p->exclude_outside && (i < 0 || i >= in))
        w[t] = 0;
      sum += w[t];
      idx[t] = i < 0 ? 0 : i >= in ? in - 1 : i;
    }
    for (int t = 0; p->exclude_outside && sum != 0 && t < k; t++)
      w[t] /= sum;
    for (int t = 0; t < k; t++)
      ax->identity = ax->identity && (w[t] == 0 || (w[t] == 1 && idx[t] == o));
  }
  return true;
}

static void resize_axis_free(ResizeAxis *ax) {
  free(ax->idx);
  free(ax->w);
  free(ax->outside);
}

/* The tap of a nearest map that has the weight (the other is 0). */
static int64_t nearest_idx(const ResizeAxis *ax, int64_t o) {
  return ax->w[o * ax->k] != 0 ? ax->idx[o * ax->k] : ax->idx[o * ax->k + 1];
}

/* ---- infer -------------------------------------------------------------------- */

/* The constant inputs as tensors (NULL where absent). */
static void const_inputs(const Graph *g, const Node *n, Tensor *t, const Tensor **roi, const Tensor **sc,
                         const Tensor **sz) {
  for (int i = 0; i < 4; i++) {
    const Value *v = i < n->nin ? node_in((Graph *)g, n, i) : NULL;
    t[i] = (Tensor){v ? v->type : (Type){0}, v ? v->data : NULL};
  }
  int s = scales_slot(n);
  *roi = s == 2 ? &t[1] : NULL;
  *sc = &t[s];
  *sz = s == 2 ? &t[3] : NULL;
}

bool resize_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0);
  if (!dt_supported(x->type.dt) || dt_is_half(x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected a numeric type other than f16/bf16", x->name,
                     dt_name(x->type.dt));
  if (n->op == OP_UPSAMPLE && n->opset < 9 && n->nin > 1)
    return diag_node(d, g, n, "opset %d Upsample has %d inputs; expected 1 (scales is an attribute before opset 9)",
                     n->opset, n->nin);
  if (n->nin < 2 && !(n->op == OP_UPSAMPLE && n->opset < 9))
    return diag_node(d, g, n, "%d input; expected X and %s", n->nin, n->opset < 11 ? "scales" : "roi, scales or sizes");
  if (n->op == OP_RESIZE && n->opset < 11 && n->nin > 2)
    return diag_node(d, g, n, "opset %d Resize has %d inputs; expected 2 (X, scales)", n->opset, n->nin);
  static const char *const what[2][4] = {{"X", "scales"}, {"X", "roi", "scales", "sizes"}};
  for (int i = 1; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    if (v && !v->data)
      return diag_node(d, g, n,
                       "input '%s' (%s) is computed at run time; expected a compile-time constant (an "
                       "initializer, or a value folded from one) because it fixes the output shape",
                       v->name, what[scales_slot(n) == 2][i]);
  }
  Tensor t[4];
  const Tensor *roi, *sc, *sz;
  const_inputs(g, n, t, &roi, &sc, &sz);
  ResizeParams p;
  char why[WHY];
  if (!resize_params(n, &x->type, roi, sc, sz, &p, why))
    return diag_node(d, g, n, "%s", why);
  Type ty = x->type;
  for (int j = 0; j < p.rank; j++)
    ty.dims[j] = p.out[j];
  if (!type_size_ok(&ty))
    return diag_node(d, g, n, "the output would have too many elements; expected a smaller scale");
  node_out(g, n, 0)->type = ty;
  return true;
}

/* ---- reference ---------------------------------------------------------------- */

/* Nearest: a gather, any dtype, bytes copied. */
static void eval_nearest(const ResizeParams *p, const ResizeAxis *ax, const Tensor *x, Tensor *y) {
  DType dt = x->type.dt;
  size_t es = dt_size(dt);
  int64_t xs[MAX_RANK], c[MAX_RANK], cnt = type_numel(&y->type);
  type_strides(&x->type, xs);
  for (int64_t i = 0; i < cnt; i++) {
    window_unflatten(i, p->out, p->rank, c);
    int64_t src = 0;
    bool outside = false;
    for (int j = 0; j < p->rank; j++) {
      outside = outside || (ax[j].outside && ax[j].outside[c[j]]);
      src += nearest_idx(&ax[j], c[j]) * xs[j];
    }
    if (outside)
      el_set_f(dt, y->data, i, p->extrap);
    else
      memcpy((char *)y->data + i * (int64_t)es, (const char *)x->data + src * (int64_t)es, es);
  }
}

/* Linear and cubic: one 1-D pass per axis, in double. */
static void eval_blend(const ResizeParams *p, const ResizeAxis *ax, const Tensor *x, Tensor *y) {
  int64_t dims[MAX_RANK], cnt = type_numel(&x->type);
  memcpy(dims, p->in, sizeof dims);
  double *cur = malloc(sizeof(double) * (size_t)cnt);
  for (int64_t i = 0; i < cnt; i++)
    cur[i] = el_get_f(x->type.dt, x->data, i);
  for (int j = 0; j < p->rank; j++) {
    if (ax[j].identity)
      continue;
    int64_t outer = window_prod(dims, j), inner = window_prod(dims + j + 1, p->rank - j - 1);
    int64_t in = dims[j], out = ax[j].out, k = ax[j].k;
    double *nxt = malloc(sizeof(double) * (size_t)(outer * out * inner));
    for (int64_t a = 0; a < outer; a++)
      for (int64_t o = 0; o < out; o++)
        for (int64_t b = 0; b < inner; b++) {
          double acc = 0;
          for (int64_t t = 0; t < k; t++)
            acc += ax[j].w[o * k + t] * cur[(a * in + ax[j].idx[o * k + t]) * inner + b];
          nxt[(a * out + o) * inner + b] = ax[j].outside && ax[j].outside[o] ? p->extrap : acc;
        }
    free(cur);
    cur = nxt;
    dims[j] = out;
  }
  for (int64_t i = 0; i < type_numel(&y->type); i++)
    el_set_f(y->type.dt, y->data, i, cur[i]);
  free(cur);
}

bool resize_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  Tensor t[4] = {{{0}, NULL}};
  for (int i = 0; i < n->nin && i < 4; i++)
    t[i] = in[i];
  int s = scales_slot(n);
  ResizeParams p;
  char why[WHY];
  if (!resize_params(n, &in[0].type, s == 2 ? &t[1] : NULL, &t[s], s == 2 ? &t[3] : NULL, &p, why))
    return diag_error(d, "node '%s' (%s): %s", n->name, node_op_name(n), why);
  ResizeAxis ax[MAX_RANK];
  for (int j = 0; j < p.rank; j++)
    resize_axis(&p, j, &ax[j]);
  if (p.mode == RS_NEAREST)
    eval_nearest(&p, ax, &in[0], &out[0]);
  else
    eval_blend(&p, ax, &in[0], &out[0]);
  for (int j = 0; j < p.rank; j++)
    resize_axis_free(&ax[j]);
  return true;
}

/* ---- C ------------------------------------------------------------------------ */

/* What the emitted loops know of the tensor: axes [f, l] hold every
 * resized one; planes before f, a contiguous block of inner after l. */
typedef struct ResizeGeom {
  int f, l;
  int64_t planes, inner, isz, osz; /* isz, osz: a plane's elements */
  int64_t xs[MAX_RANK], ys[MAX_RANK]; /* strides */
} ResizeGeom;

static void geom(const ResizeParams *p, const ResizeAxis *ax, ResizeGeom *gm) {
  gm->f = -1;
  gm->l = -1;
  for (int j = 0; j < p->rank; j++)
    if (!ax[j].identity) {
      gm->f = gm->f < 0 ? j : gm->f;
      gm->l = j;
    }
  gm->planes = window_prod(p->in, gm->f);
  gm->inner = window_prod(p->in + gm->l + 1, p->rank - gm->l - 1);
  gm->isz = window_prod(p->in + gm->f, p->rank - gm->f);
  gm->osz = window_prod(p->out + gm->f, p->rank - gm->f);
  int64_t sx = 1, sy = 1;
  for (int j = p->rank - 1; j >= 0; j--) {
    gm->xs[j] = sx;
    gm->ys[j] = sy;
    sx *= p->in[j];
    sy *= p->out[j];
  }
}

/* static const T NAME[n] = {...}: weights rounded to dt, 8 a line. */
static void emit_weights(Emit *e, DType dt, const char *name, const double *w, int64_t n, const char *what) {
  Buf b = {0};
  emit_line(e, "static const %s %s[%lld] = { /* %s */", dt_ctype(dt), name, (long long)n, what);
  for (int64_t r = 0; r < n; r += 8) {
    b.len = 0;
    for (int64_t i = r; i < n && i < r + 8; i++)
      buf_printf(&b, "%s%s%s", i > r ? " " : "",
                 emit_double_literal(e, dt, dt == DT_F32 ? (double)(float)w[i] : w[i]), i + 1 < n ? "," : "");
    emit_line(e, "  %s", b.s);
  }
  emit_line(e, "};");
  buf_free(&b);
}

/* static const unsigned char NAME_out[n]: 1 where tf_crop_and_resize extrapolates. */
static const char *emit_outside(Emit *e, const ResizeAxis *ax, const char *stem) {
  if (!ax->outside)
    return NULL;
  int64_t *v = arena_alloc(e->g->arena, sizeof(int64_t) * (size_t)ax->out);
  for (int64_t o = 0; o < ax->out; o++)
    v[o] = ax->outside[o];
  const char *name = arena_printf(e->g->arena, "%s_out", stem);
  window_emit_table(e, name, v, ax->out, "1: outside the roi, y = extrapolation_value");
  return name;
}

static void open_loop(Emit *e, const char *v, int64_t n) {
  emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", v, v, (long long)n, v);
  e->indent++;
}

static void close_loops(Emit *e, int n) {
  for (int i = 0; i < n; i++) {
    e->indent--;
    emit_line(e, "}");
  }
}

/* "a + b": sum of the non-NULL, non-"0" terms, "0" when none. */
static const char *sum_terms(Arena *a, const char **t, int n) {
  const char *s = NULL;
  for (int i = 0; i < n; i++)
    if (t[i] && strcmp(t[i], "0"))
      s = s ? arena_printf(a, "%s + %s", s, t[i]) : t[i];
  return s ? s : "0";
}

/* Nearest: y = x at the index tables' offsets (input index times stride). */
static void emit_nearest(Emit *e, const Node *n, const ResizeParams *p, const ResizeAxis *ax,
                         const ResizeGeom *gm) {
  Arena *a = e->g->arena;
  const char *T = dt_ctype(node_in(e->g, n, 0)->type.dt);
  const char *xo[MAX_RANK], *yo[MAX_RANK], *ov[MAX_RANK], *outs = NULL;
  emit_line(e, "/* nearest: y[p][o...] = x[p][i...], each axis's input index from its table; p runs over");
  emit_line(e, " * the %lld planes before axis %d */", (long long)gm->planes, gm->f);
  for (int j = gm->f; j <= gm->l; j++) {
    ov[j] = arena_printf(a, "o%d", j);
    yo[j] = gm->ys[j] == 1 ? ov[j] : arena_printf(a, "%s * %lld", ov[j], (long long)gm->ys[j]);
    if (ax[j].identity) {
      xo[j] = gm->xs[j] == 1 ? ov[j] : arena_printf(a, "%s * %lld", ov[j], (long long)gm->xs[j]);
      continue;
    }
    int64_t *v = arena_alloc(a, sizeof(int64_t) * (size_t)ax[j].out);
    for (int64_t o = 0; o < ax[j].out; o++)
      v[o] = nearest_idx(&ax[j], o) * gm->xs[j];
    const char *tab = arena_printf(a, "src%d", j);
    bool same = true; /* an axis of 1 spread over many: no table */
    for (int64_t o = 1; o < ax[j].out && same; o++)
      same = v[o] == v[0];
    if (same) {
      xo[j] = arena_printf(a, "%lld", (long long)v[0]);
    } else {
      window_emit_table(e, tab, v, ax[j].out, arena_printf(a, "axis %d: input index times %lld", j,
                                                             (long long)gm->xs[j]));
      xo[j] = arena_printf(a, "%s[%s]", tab, ov[j]);
    }
    const char *on = emit_outside(e, &ax[j], tab);
    if (on)
      outs = arena_printf(a, "%s%s%s[%s]", outs ? outs : "", outs ? " || " : "", on, ov[j]);
  }
  emit_line(e, "for (int p = 0; p < %lld; p++) {", (long long)gm->planes);
  e->indent++;
  emit_line(e, "const %s *xp = %s + p * %lld;", T, emit_ref(e, n->in[0]), (long long)gm->isz);
  emit_line(e, "%s *yp = %s + p * %lld;", T, emit_ref(e, n->out[0]), (long long)gm->osz);
  for (int j = gm->f; j <= gm->l; j++)
    open_loop(e, ov[j], p->out[j]);
  const char *xi = sum_terms(a, xo + gm->f, gm->l - gm->f + 1), *yi = sum_terms(a, yo + gm->f, gm->l - gm->f + 1);
  const char *val = gm->inner > 1 ? arena_printf(a, "xp[%s + i]", xi) : arena_printf(a, "xp[%s]", xi);
  if (outs)
    val = arena_printf(a, "%s ? %s : %s", outs, emit_double_literal(e, node_in(e->g, n, 0)->type.dt, p->extrap), val);
  if (gm->inner > 1) {
    emit_line(e, "for (int i = 0; i < %lld; i++)", (long long)gm->inner);
    emit_line(e, "  yp[%s + i] = %s;", yi, val);
  } else {
    emit_line(e, "yp[%s] = %s;", yi, val);
  }
  close_loops(e, gm->l - gm->f + 2);
}

/* Largest row buffer, in bytes, a kernel keeps on the stack; a longer row
 * (axis l times an inner block: NHWC data) is blended in chunks of the
 * inner block. */
#define RESIZE_ROW_MAX 32768

/* Linear and cubic. Per output position of the axes before l: the row
 * (axis l and the inner block) blended from the input rows of the outer
 * resized axes' taps into a local buffer, then axis l's taps along it. */
static void emit_blend(Emit *e, const Node *n, const ResizeParams *p, const ResizeAxis *ax, const ResizeGeom *gm) {
  Arena *a = e->g->arena;
  DType dt = node_in(e->g, n, 0)->type.dt;
  const char *T = dt_ctype(dt), *ext = emit_double_literal(e, dt, p->extrap);
  int l = gm->l;
  int64_t inner = gm->inner, inl = p->in[l], kl = ax[l].k, ib = inner;
  bool buffered = false;
  for (int j = gm->f; j < l; j++)
    buffered = buffered || !ax[j].identity;
  /* the inner block's chunk: the largest divisor of inner whose row fits */
  while (buffered && ib > 1 && (inl * ib * (int64_t)dt_size(dt) > RESIZE_ROW_MAX || inner % ib))
    ib--;
  bool chunked = ib < inner;
  emit_line(e, "/* %s: y = the blend of x's taps, axis by axis (separable): the input rows of the",
            p->mode == RS_LINEAR ? "linear" : "cubic");
  emit_line(e, " * outer resized axes%s, then axis %d's %lld taps along the row;", !buffered ? " (none here)" : " into row[]",
            l, (long long)kl);
  if (chunked)
    emit_line(e, " * the row is too long for the stack: the inner block goes %lld elements at a time;", (long long)ib);
  emit_line(e, " * p runs over the %lld planes before axis %d; tables: input offset and weight of each tap */",
            (long long)gm->planes, gm->f);
  const char *xo[MAX_RANK] = {0}, *yo[MAX_RANK] = {0}, *ov[MAX_RANK], *tv[MAX_RANK], *wt[MAX_RANK] = {0};
  const char *outs = NULL;
  for (int j = gm->f; j <= l; j++) {
    ov[j] = arena_printf(a, "o%d", j);
    tv[j] = arena_printf(a, "t%d", j);
    yo[j] = j == l ? NULL : arena_printf(a, "%s * %lld", ov[j], (long long)gm->ys[j]);
    if (ax[j].identity) {
      xo[j] = arena_printf(a, "%s * %lld", ov[j], (long long)gm->xs[j]);
      continue;
    }
    int64_t k = ax[j].k, m = ax[j].out * k, step = j == l ? ib : gm->xs[j];
    int64_t *v = arena_alloc(a, sizeof(int64_t) * (size_t)m);
    for (int64_t i = 0; i < m; i++)
      v[i] = ax[j].idx[i] * step;
    const char *it = arena_printf(a, "src%d", j), *wn = arena_printf(a, "w%d", j);
    window_emit_table(e, it, v, m, arena_printf(a, "axis %d: [%lld][%lld] input index times %lld", j,
                                                 (long long)ax[j].out, (long long)k, (long long)step));
    emit_weights(e, dt, wn, ax[j].w, m, arena_printf(a, "[%lld][%lld]", (long long)ax[j].out, (long long)k));
    xo[j] = arena_printf(a, "%s[%s * %lld + %s]", it, ov[j], (long long)k, tv[j]);
    wt[j] = arena_printf(a, "%s[%s * %lld + %s]", wn, ov[j], (long long)k, tv[j]);
    const char *on = emit_outside(e, &ax[j], it);
    if (on && j < l)
      outs = arena_printf(a, "%s%s%s[%s]", outs ? outs : "", outs ? " || " : "", on, ov[j]);
  }
  const char *lout = ax[l].outside ? arena_printf(a, "src%d_out", l) : NULL;
  emit_parallel_for(e, gm->planes, (double)(gm->planes * gm->osz * kl) * 0.5);
  emit_line(e, "for (int p = 0; p < %lld; p++) {", (long long)gm->planes);
  e->indent++;
  emit_line(e, "const %s *xp = %s + p * %lld;", T, emit_ref(e, n->in[0]), (long long)gm->isz);
  emit_line(e, "%s *yp = %s + p * %lld;", T, emit_ref(e, n->out[0]), (long long)gm->osz);
  int opened = 1;
  for (int j = gm->f; j < l; j++, opened++)
    open_loop(e, ov[j], p->out[j]);
  emit_line(e, "%s *yr = yp + %s;", T, sum_terms(a, yo + gm->f, l - gm->f));
  if (outs) {
    emit_line(e, "if (%s) {", outs);
    emit_line(e, "  for (int i = 0; i < %lld; i++)", (long long)(p->out[l] * inner));
    emit_line(e, "    yr[i] = %s;", ext);
    emit_line(e, "  continue;");
    emit_line(e, "}");
  }
  const char *terms[MAX_RANK], *w = NULL;
  int nt = 0;
  for (int j = gm->f; j < l; j++)
    terms[nt++] = xo[j];
  if (chunked) {
    emit_line(e, "for (int i0 = 0; i0 < %lld; i0 += %lld) { /* chunks of the inner block */", (long long)inner,
              (long long)ib);
    e->indent++;
    opened++;
    terms[nt++] = "i0";
  }
  if (buffered) {
    /* the outer resized axes' taps: nested loops, weights multiplied */
    emit_line(e, "%s row[%lld]; /* axis %d%s, blended over the outer axes' taps */", T, (long long)(inl * ib), l,
              ib > 1 ? " and the inner block" : "");
    emit_line(e, "for (int i = 0; i < %lld; i++)", (long long)(inl * ib));
    emit_line(e, "  row[i] = %s;", emit_double_literal(e, dt, 0));
    int taps = 0;
    for (int j = gm->f; j < l; j++)
      if (!ax[j].identity) {
        open_loop(e, tv[j], ax[j].k);
        taps++;
        w = w ? arena_printf(a, "%s * %s", w, wt[j]) : wt[j];
      }
    emit_line(e, "const %s w = %s;", T, w ? w : "1");
    emit_line(e, "const %s *xr = xp + %s;", T, sum_terms(a, terms, nt));
    if (chunked) {
      emit_line(e, "for (int il = 0; il < %lld; il++)", (long long)inl);
      emit_line(e, "  for (int i = 0; i < %lld; i++)", (long long)ib);
      emit_line(e, "    row[il * %lld + i] += w * xr[il * %lld + i];", (long long)ib, (long long)inner);
    } else {
      emit_line(e, "for (int i = 0; i < %lld; i++)", (long long)(inl * ib));
      emit_line(e, "  row[i] += w * xr[i];");
    }
    close_loops(e, taps);
  } else {
    emit_line(e, "const %s *row = xp + %s;", T, sum_terms(a, terms, nt));
  }
  /* the last axis */
  if (ax[l].identity) {
    emit_line(e, "for (int i = 0; i < %lld; i++)", (long long)(inl * inner));
    emit_line(e, "  yr[i] = row[i];");
  } else {
    open_loop(e, ov[l], p->out[l]);
    if (ib > 1)
      open_loop(e, "i", ib);
    emit_line(e, "%s acc = %s;", T, emit_double_literal(e, dt, 0));
    emit_line(e, "for (int %s = 0; %s < %lld; %s++)", tv[l], tv[l], (long long)kl, tv[l]);
    emit_line(e, "  acc += %s * row[%s%s];", wt[l], xo[l], ib > 1 ? " + i" : "");
    const char *yi = ib == 1 && !chunked ? ov[l]
                     : arena_printf(a, "%s * %lld%s%s", ov[l], (long long)inner, chunked ? " + i0" : "",
                                    ib > 1 ? " + i" : "");
    if (lout)
      emit_line(e, "yr[%s] = %s[%s] ? %s : acc;", yi, lout, ov[l], ext);
    else
      emit_line(e, "yr[%s] = acc;", yi);
    close_loops(e, ib > 1 ? 2 : 1);
  }
  close_loops(e, opened);
}

bool resize_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0);
  Tensor t[4];
  const Tensor *roi, *sc, *sz;
  const_inputs(g, n, t, &roi, &sc, &sz);
  ResizeParams p;
  char why[WHY];
  KILN_ASSERT(resize_params(n, &x->type, roi, sc, sz, &p, why));
  ResizeAxis ax[MAX_RANK];
  for (int j = 0; j < p.rank; j++)
    resize_axis(&p, j, &ax[j]);
  ResizeGeom gm;
  geom(&p, ax, &gm);
  if (gm.f < 0) {
    emit_line(e, "/* every axis keeps its size and positions: y = x */");
    emit_line(e, "memcpy(%s, %s, %lld);", emit_ref(e, n->out[0]), emit_ref(e, n->in[0]),
              (long long)(type_numel(&x->type) * (int64_t)dt_size(x->type.dt)));
  } else if (p.mode == RS_NEAREST) {
    emit_nearest(e, n, &p, ax, &gm);
  } else {
    emit_blend(e, n, &p, ax, &gm);
  }
  for (int j = 0; j < p.rank; j++)
    resize_axis_free(&ax[j]);
  return true;
}
