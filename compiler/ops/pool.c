/* pool.c — the CNN ops that work per image and channel: MaxPool,
 * AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool and LRN (family `pool`),
 * BatchNormalization and InstanceNormalization (family `batchnorm`).
 *
 * X is [N, C, spatial...]; N * C "planes" of S positions each. MaxPool
 * and AveragePool slide a window of kernel_shape taps (dilated, strided)
 * over the padded input; taps that fall in the padding are skipped (MaxPool,
 * AveragePool with count_include_pad=0) or counted as zeros (AveragePool
 * with count_include_pad=1, and always before opset 7, as onnxruntime and
 * the ONNX reference do). ceil_mode adds a last window that overhangs
 * the end, unless it would start in the padding. MaxPool's optional
 * Indices output is the flat index of the max in X (row-major, or
 * column-major over the spatial dims with storage_order=1), taking the
 * first of equal maxima. Window geometry is computed once (pool_window);
 * _emit turns the per-output tap ranges into constant tables so that the
 * inner loops test nothing.
 *
 * BatchNormalization runs in inference mode with the given statistics, or
 * in training mode (training_mode=1 from opset 14, or asking for the
 * running mean/var outputs before that) with the batch's own mean and
 * biased variance, updating the running statistics with `momentum`.
 * Opset < 9 `spatial=0` (statistics per channel and position) is handled
 * by treating each position as a channel.
 *
 * MaxPool and AveragePool {channels_last=1} (made only by the conv_gemm
 * pass's layout, never read from a file): X is [N, spatial..., C] and Y
 * [N, out..., C], f32, no Indices; the windows are those of X's [N, C,
 * spatial...] form. Each window's max or sum is C contiguous channels at
 * a time, a loop that vectorises with no tests inside (emit_pool_last);
 * an AveragePool so has no ceil_mode and divides by the taps inside x
 * (count_include_pad=0, or no padding), counted as they are walked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "window.h"




static bool is_float(DType dt) { return dt == DT_F32 || dt == DT_F64; }

/* ---- window geometry --------------------------------------------------------- */

typedef struct Window {
  int nsp;        /* spatial dims */
  int64_t planes; /* N * C */
  int64_t in[MAX_RANK], out[MAX_RANK], k[MAX_RANK];
  int64_t stride[MAX_RANK], dil[MAX_RANK];
  int64_t pad[MAX_RANK], pad_end[MAX_RANK]; /* padding before and after (without ceil_mode's overhang) */
} Window;


static bool pool_window(const Node *n, const Type *x, Window *w, char *why) {
  memset(w, 0, sizeof *w);
  if (x->rank < 3)
    return window_fail(why, "input X has rank %d; expected [N, C, spatial...] of rank >= 3", x->rank);
  int ns = w->nsp = x->rank - 2;
  w->planes = x->dims[0] * x->dims[1];
  const Attr *ka = attr_get(n, "kernel_shape");
  if (!ka)
    return window_fail(why, "attribute kernel_shape is missing; expected %d kernel dims", ns);
  int64_t pads[2 * MAX_RANK];
  if (!window_ints_attr(n, "kernel_shape", ns, 1, 1, w->k, why) ||
      !window_ints_attr(n, "strides", ns, 1, 1, w->stride, why) ||
      !window_ints_attr(n, "dilations", ns, 1, 1, w->dil, why) || !window_ints_attr(n, "pads", 2 * ns, 0, 0, pads, why))
    return false;
  const char *ap = attr_str(n, "auto_pad", "NOTSET");
  bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"), valid = !strcmp(ap, "VALID");
  if (!same && !valid && strcmp(ap, "NOTSET"))
    return window_fail(why, "auto_pad is '%s'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
  int64_t ceil_mode = attr_int(n, "ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1)
    return window_fail(why, "ceil_mode is %lld; expected 0 or 1", (long long)ceil_mode);
  for (int j = 0; j < ns; j++) {
    int64_t in = w->in[j] = x->dims[2 + j], s = w->stride[j], dk = (w->k[j] - 1) * w->dil[j] + 1;
    if (in < 1)
      return window_fail(why, "spatial dim %d of X is 0; expected >= 1", j);
    if (same) {
      /* ceil(in / s) windows; the odd pad goes at the end for SAME_UPPER */
      int64_t out = (in + s - 1) / s, total = (out - 1) * s + dk - in;
      total = total < 0 ? 0 : total;
      w->out[j] = out;
      w->pad[j] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
      w->pad_end[j] = total - w->pad[j];
      continue;
    }
    int64_t pb = valid ? 0 : pads[j], pe = valid ? 0 : pads[ns + j];
    if (pb >= w->k[j] || pe >= w->k[j])
      return window_fail(why, "pads of spatial dim %d are %lld and %lld; expected less than the kernel (%lld)", j,
                  (long long)pb, (long long)pe, (long long)w->k[j]);
    if (in + pb + pe < dk)
      return window_fail(why,
                  "spatial dim %d: the padded input (%lld) is smaller than the dilated kernel (%lld); "
                  "expected at least one window",
                  j, (long long)(in + pb + pe), (long long)dk);
    int64_t span = in + pb + pe - dk, out = span / s + 1;
    if (ceil_mode && span % s && out * s < in + pb)
      out++; /* a last, partial window that starts inside x or its begin pad */
    w->out[j] = out;
    w->pad[j] = pb;
    w->pad_end[j] = pe;
  }
  return true;
}

/* Taps [lo, hi) of window o along dim j that land inside x. */
static void taps(const Window *w, int j, int64_t o, int64_t *lo, int64_t *hi) {
  int64_t start = o * w->stride[j] - w->pad[j], d = w->dil[j];
  *lo = start >= 0 ? 0 : (-start + d - 1) / d;
  *hi = w->in[j] - start <= 0 ? 0 : (w->in[j] - start + d - 1) / d;
  *hi = *hi > w->k[j] ? w->k[j] : *hi;
  *hi = *hi < *lo ? *lo : *hi;
}

/* Taps of window o along dim j inside x or its explicit padding
 * (count_include_pad=1 divides by this). */
static int64_t taps_with_pad(const Window *w, int j, int64_t o) {
  int64_t room = w->in[j] + w->pad[j] + w->pad_end[j] - o * w->stride[j], d = w->dil[j];
  int64_t cnt = room <= 0 ? 0 : (room + d - 1) / d;
  return cnt > w->k[j] ? w->k[j] : cnt;
}

/* AveragePool divides by all taps inside x or its padding. */
static bool include_pad(const Node *n) {
  return n->op == OP_AVERAGEPOOL && (n->opset < 7 || attr_int(n, "count_include_pad", 0) == 1);
}

/* An AveragePool {channels_last} divides by the taps inside x: no
 * ceil_mode (no window past the end pad), and padding only where it does
 * not count. */
static bool avg_last_ok(const Node *n, const Window *w) {
  if (attr_int(n, "ceil_mode", 0))
    return false;
  for (int j = 0; j < w->nsp && include_pad(n); j++)
    if (w->pad[j] || w->pad_end[j])
      return false;
  return true;
}

/* MaxPool or AveragePool {channels_last}: X [N, spatial..., C]. */
static bool pool_last(const Node *n) {
  return (n->op == OP_MAXPOOL || n->op == OP_AVERAGEPOOL) && attr_int(n, "channels_last", 0);
}

#define permute_last window_permute_last

/* ---- infer ------------------------------------------------------------------- */

static bool infer_window_pool(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0);
  DType dt = x->type.dt;
  bool fl = n->op == OP_AVERAGEPOOL || n->op == OP_LPPOOL;
  if (fl ? !is_float(dt) : (dt == DT_BOOL || !dt_supported(dt)))
    return diag_node(d, g, n, "input '%s' is %s; expected %s", x->name, dt_name(dt),
                     fl ? "f32 or f64" : "a numeric type");
  if (n->op == OP_LPPOOL && (attr_int(n, "p", 2) < 1 || attr_int(n, "p", 2) > 64))
    return diag_node(d, g, n, "p is %lld; expected a norm order of 1 to 64", (long long)attr_int(n, "p", 2));
  bool last = pool_last(n);
  if (last && (n->nout > 1 || dt != DT_F32 || x->type.rank < 3))
    return diag_node(d, g, n, "channels_last with input '%s' %s and %d outputs; expected f32 [N, spatial..., C] "
                     "and no Indices", x->name, dt_name(dt), n->nout);
  Type xt = last ? permute_last(&x->type, false) : x->type;
  Window w;
  char why[WHY];
  if (!pool_window(n, &xt, &w, why))
    return diag_node(d, g, n, "%s", why);
  if (last && n->op == OP_AVERAGEPOOL && !avg_last_ok(n, &w))
    return diag_node(d, g, n, "channels_last AveragePool with ceil_mode or with count_include_pad and padding; "
                     "expected neither");
  Type t = xt;
  for (int j = 0; j < w.nsp; j++)
    t.dims[2 + j] = w.out[j];
  node_out(g, n, 0)->type = last ? permute_last(&t, true) : t;
  if (n->nout > 1) {
    int64_t so = attr_int(n, "storage_order", 0);
    if (n->opset < 8)
      return diag_node(d, g, n, "MaxPool opset %d has one output; expected Indices only from opset 8",
                       n->opset);
    if (so != 0 && so != 1)
      return diag_node(d, g, n, "storage_order is %lld; expected 0 (row-major) or 1 (column-major)",
                       (long long)so);
    t.dt = DT_I64;
    node_out(g, n, 1)->type = t;
  }
  return true;
}

bool pool_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0);
  if (n->op == OP_MAXPOOL || n->op == OP_AVERAGEPOOL || n->op == OP_LPPOOL)
    return infer_window_pool(g, n, d);
  if (!is_float(x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  if (x->type.rank < 2)
    return diag_node(d, g, n, "input '%s' has rank %d; expected [N, C, ...] of rank >= 2", x->name,
                     x->type.rank);
  Type t = x->type;
  if (n->op == OP_LRN) {
    int64_t size = attr_int(n, "size", 0);
    if (size < 1 || size > ATTR_MAX)
      return diag_node(d, g, n, "size is %lld; expected a positive number of channels", (long long)size);
  } else {
    for (int j = 2; j < t.rank; j++)
      t.dims[j] = 1;
  }
  node_out(g, n, 0)->type = t;
  return true;
}

/* ---- reference --------------------------------------------------------------- */


/* Is element i of x greater than element b (b < 0: the type's lowest)? */
static bool greater(DType dt, const void *x, int64_t i, int64_t b) {
  if (dt_is_float(dt))
    return el_get_f(dt, x, i) > (b < 0 ? -INFINITY : el_get_f(dt, x, b));
  if (dt_is_signed_int(dt))
    return b < 0 ? el_get_i(dt, x, i) > (dt == DT_I64 ? INT64_MIN : -((int64_t)1 << (8 * dt_size(dt) - 1)))
                 : el_get_i(dt, x, i) > el_get_i(dt, x, b);
  return el_get_u(dt, x, i) > (b < 0 ? 0 : el_get_u(dt, x, b));
}

/* Flat index in a plane of spatial position pos: row-major, or
 * column-major (first spatial dim fastest). */
static int64_t plane_index(const Window *w, const int64_t *pos, bool col) {
  int64_t r = 0;
  for (int j = 0; j < w->nsp; j++) {
    int jj = col ? w->nsp - 1 - j : j;
    r = r * w->in[jj] + pos[jj];
  }
  return r;
}

static void eval_window(const Node *n, const Window *w, const Tensor *in, Tensor *out, int64_t p,
                        int64_t oi) {
  DType dt = in[0].type.dt;
  int64_t o[MAX_RANK], t[MAX_RANK], pos[MAX_RANK], lo[MAX_RANK], hi[MAX_RANK], kk[MAX_RANK];
  int64_t isz = window_prod(w->in, w->nsp), osz = window_prod(w->out, w->nsp), yi = p * osz + oi;
  window_unflatten(oi, w->out, w->nsp, o);
  int64_t cnt_pad = 1;
  for (int j = 0; j < w->nsp; j++) {
    taps(w, j, o[j], &lo[j], &hi[j]);
    kk[j] = hi[j] - lo[j];
    cnt_pad *= taps_with_pad(w, j, o[j]);
  }
  bool col = attr_int(n, "storage_order", 0) == 1;
  int64_t best = -1, arg = -1, cnt = 0;
  double sum = 0;
  for (int64_t ti = 0; ti < window_prod(kk, w->nsp); ti++) {
    window_unflatten(ti, kk, w->nsp, t);
    for (int j = 0; j < w->nsp; j++)
      pos[j] = o[j] * w->stride[j] + (lo[j] + t[j]) * w->dil[j] - w->pad[j];
    int64_t xi = p * isz + plane_index(w, pos, false);
    if (arg < 0)
      arg = p * isz + plane_index(w, pos, col); /* the first tap, unless a later one is greater */
    if (n->op == OP_MAXPOOL && greater(dt, in[0].data, xi, best)) {
      best = xi;
      arg = p * isz + plane_index(w, pos, col);
    }
    double v = dt_is_float(dt) ? el_get_f(dt, in[0].data, xi) : 0;
    sum += n->op == OP_LPPOOL ? pow(fabs(v), (double)attr_int(n, "p", 2)) : v;
    cnt++;
  }
  if (n->op == OP_AVERAGEPOOL) {
    el_set_f(dt, out[0].data, yi, sum / (double)(include_pad(n) ? cnt_pad : cnt));
    return;
  }
  if (n->op == OP_LPPOOL) { /* the padding adds zeros to the sum */
    el_set_f(dt, out[0].data, yi, pow(sum, 1.0 / (double)attr_int(n, "p", 2)));
    return;
  }
  if (best >= 0)
    memcpy((char *)out[0].data + yi * (int64_t)dt_size(dt),
           (const char *)in[0].data + best * (int64_t)dt_size(dt), dt_size(dt));
  else if (dt_is_float(dt))
    el_set_f(dt, out[0].data, yi, -INFINITY);
  else if (dt_is_signed_int(dt))
    el_set_i(dt, out[0].data, yi, dt == DT_I64 ? INT64_MIN : -((int64_t)1 << (8 * dt_size(dt) - 1)));
  if (n->nout > 1)
    el_set_i(DT_I64, out[1].data, yi, arg);
}

static void eval_lrn(const Node *n, const Tensor *in, Tensor *out) {
  const Type *xt = &in[0].type;
  DType dt = xt->dt;
  int64_t nb = xt->dims[0], c = xt->dims[1], s = window_prod(xt->dims + 2, xt->rank - 2),
          size = attr_int(n, "size", 1);
  double alpha = attr_float(n, "alpha", 1e-4), beta = attr_float(n, "beta", 0.75),
         bias = attr_float(n, "bias", 1.0);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t ci = 0; ci < c; ci++)
      for (int64_t i = 0; i < s; i++) {
        double sq = 0;
        for (int64_t j = ci - lo; j <= ci + hi; j++)
          if (j >= 0 && j < c) {
            double v = el_get_f(dt, in[0].data, (b * c + j) * s + i);
            sq += v * v;
          }
        int64_t at = (b * c + ci) * s + i;
        el_set_f(dt, out[0].data, at,
                 el_get_f(dt, in[0].data, at) / pow(bias + alpha / (double)size * sq, beta));
      }
}

bool pool_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  const Type *xt = &in[0].type;
  DType dt = xt->dt;
  if (pool_last(n)) { /* the NCHW reference between two transposes */
    Type ct = permute_last(xt, false), ot = permute_last(&out[0].type, false);
    int64_t c = ct.dims[1], nc = ct.dims[0] * c > 0 ? ct.dims[0] * c : 1;
    int64_t s = type_numel(xt) / nc, os = type_numel(&ot) / nc;
    Tensor tin = {ct, malloc(sizeof(float) * (size_t)(type_numel(xt) + 1))};
    Tensor tout = {ot, malloc(sizeof(float) * (size_t)(type_numel(&ot) + 1))};
    const float *xs = in[0].data;
    float *xd = tin.data, *ys = tout.data, *yd = out[0].data;
    for (int64_t b = 0; b < ct.dims[0]; b++)
      for (int64_t ch = 0; ch < c; ch++)
        for (int64_t i = 0; i < s; i++)
          xd[(b * c + ch) * s + i] = xs[(b * s + i) * c + ch];
    Node m = *n;
    m.nattr = 0; /* pool_last(&m) false: the NCHW path (pool_window reads the other attributes) */
    Attr *keep = m.attrs = n->nattr ? malloc(sizeof(Attr) * (size_t)n->nattr) : NULL;
    for (int i = 0; i < n->nattr; i++)
      if (strcmp(n->attrs[i].name, "channels_last"))
        keep[m.nattr++] = n->attrs[i];
    bool ok = pool_eval(&m, &tin, &tout, d);
    for (int64_t b = 0; b < ct.dims[0]; b++)
      for (int64_t ch = 0; ch < c; ch++)
        for (int64_t i = 0; i < os; i++)
          yd[(b * os + i) * c + ch] = ys[(b * c + ch) * os + i];
    free(keep);
    free(tin.data);
    free(tout.data);
    return ok;
  }
  if (n->op == OP_MAXPOOL || n->op == OP_AVERAGEPOOL || n->op == OP_LPPOOL) {
    Window w;
    char why[WHY];
    KILN_ASSERT(pool_window(n, xt, &w, why));
    for (int64_t p = 0; p < w.planes; p++)
      for (int64_t oi = 0; oi < window_prod(w.out, w.nsp); oi++)
        eval_window(n, &w, in, out, p, oi);
    return true;
  }
  if (n->op == OP_LRN) {
    eval_lrn(n, in, out);
    return true;
  }
  int64_t planes = xt->dims[0] * xt->dims[1], s = window_prod(xt->dims + 2, xt->rank - 2);
  for (int64_t p = 0; p < planes; p++) {
    double acc = n->op == OP_GLOBALMAXPOOL ? -INFINITY : 0;
    for (int64_t i = 0; i < s; i++) {
      double v = el_get_f(dt, in[0].data, p * s + i);
      acc = n->op == OP_GLOBALMAXPOOL ? (v > acc ? v : acc) : acc + v;
    }
    el_set_f(dt, out[0].data, p, n->op == OP_GLOBALMAXPOOL ? acc : acc / (double)s);
  }
  return true;
}

/* ---- C: MaxPool and AveragePool ------------------------------------------------ */



/* "3x3": the kernel dims. */
static const char *flat_dims(Arena *a, int n, const int64_t *k) {
  const char *s = "";
  for (int j = 0; j < n; j++)
    s = arena_printf(a, "%s%s%lld", s, j ? "x" : "", (long long)k[j]);
  return s;
}


/* "oh * 2 + kh - 1": the x position of tap kv (NULL or "0": tap 0) of
 * window ov along dim j. */
static const char *land_expr(Arena *a, const Window *w, int j, const char *ov, const char *kv) {
  const char *s = w->stride[j] == 1 ? ov : arena_printf(a, "%s * %lld", ov, (long long)w->stride[j]);
  if (kv && strcmp(kv, "0"))
    s = w->dil[j] == 1 ? arena_printf(a, "%s + %s", s, kv)
                       : arena_printf(a, "%s + %s * %lld", s, kv, (long long)w->dil[j]);
  if (w->pad[j])
    s = arena_printf(a, "%s - %lld", s, (long long)w->pad[j]);
  return s;
}

/* What the loops of one spatial dim look like in C. */
typedef struct DimC {
  const char *ov, *kv; /* output and tap variables */
  const char *lo, *hi; /* tap bounds, NULL: the dim has a single tap, always inside */
  const char *land;    /* the x position of tap kv of window ov */
  const char *count;   /* taps AveragePool divides by, NULL: k */
  int64_t count_k;     /* ... or this constant */
} DimC;

/* Tap bounds of dim j: constants when every window has all k taps inside
 * x, else tables indexed by the output position. */
static void dim_code(Emit *e, const Window *w, int j, bool incl, DimC *dc) {
  Arena *a = e->g->arena;
  const char *sx = window_dim_sfx(a, w->nsp, j);
  int64_t no = w->out[j], *lo = arena_alloc(a, sizeof(int64_t) * (size_t)no);
  int64_t *hi = arena_alloc(a, sizeof(int64_t) * (size_t)no),
          *cnt = arena_alloc(a, sizeof(int64_t) * (size_t)no);
  bool whole = true, cnt_const = true;
  for (int64_t o = 0; o < no; o++) {
    taps(w, j, o, &lo[o], &hi[o]);
    cnt[o] = incl ? taps_with_pad(w, j, o) : hi[o] - lo[o];
    whole = whole && lo[o] == 0 && hi[o] == w->k[j];
    cnt_const = cnt_const && cnt[o] == cnt[0];
  }
  dc->ov = arena_printf(a, "o%s", sx);
  dc->kv = arena_printf(a, "k%s", sx);
  if (whole) {
    dc->lo = w->k[j] > 1 ? "0" : NULL;
    dc->hi = w->k[j] > 1 ? emit_int(e, w->k[j]) : NULL;
  } else {
    const char *tl = arena_printf(a, "%s_lo", dc->kv), *th = arena_printf(a, "%s_hi", dc->kv);
    window_emit_table(e, tl, lo, no, arena_printf(a, "first tap of window %s inside x", dc->ov));
    window_emit_table(e, th, hi, no, arena_printf(a, "end of its taps inside x"));
    dc->lo = arena_printf(a, "%s[%s]", tl, dc->ov);
    dc->hi = arena_printf(a, "%s[%s]", th, dc->ov);
  }
  dc->count = NULL;
  dc->count_k = cnt[0];
  if (!cnt_const) {
    if (incl) {
      const char *tn = arena_printf(a, "%s_n", dc->kv);
      window_emit_table(e, tn, cnt, no, arena_printf(a, "taps of window %s inside x or its padding", dc->ov));
      dc->count = arena_printf(a, "%s[%s]", tn, dc->ov);
    } else {
      dc->count = arena_printf(a, "(%s - %s)", dc->hi, dc->lo);
    }
  }
  dc->land = land_expr(a, w, j, dc->ov, dc->lo ? dc->kv : NULL);
}

/* The divisor of an AveragePool window: a constant, or a product of the
 * per-dim counts that vary. */
static const char *divisor(Emit *e, const Window *w, const DimC *dc, DType dt) {
  int64_t k = 1;
  const char *s = NULL;
  for (int j = 0; j < w->nsp; j++) {
    if (!dc[j].count)
      k *= dc[j].count_k;
    else
      s = s ? arena_printf(e->g->arena, "%s * %s", s, dc[j].count) : dc[j].count;
  }
  if (!s)
    return emit_double_literal(e, dt, (double)k);
  if (k != 1)
    s = arena_printf(e->g->arena, "%s * %lld", s, (long long)k);
  return arena_printf(e->g->arena, "(%s)(%s)", dt_ctype(dt), s);
}

static const char *lowest(DType dt) {
  switch (dt) {
  case DT_F32:
  case DT_F64: return "-INFINITY";
  case DT_I8: return "INT8_MIN";
  case DT_I16: return "INT16_MIN";
  case DT_I32: return "INT32_MIN";
  case DT_I64: return "INT64_MIN";
  default: return "0";
  }
}

/* emit_max_rows's geometry: a row of y padded to OWP (a multiple of 16)
 * and x's row split by phase of the stride into S rows of LS elements,
 * xs[(j + pad) % S][(j + pad) / S] = x[..][j], -INFINITY elsewhere. */
static void max_rows_geom(const Window *w, int64_t *owp, int64_t *ls) {
  int64_t s = w->stride[1], reach, row;
  *owp = (w->out[1] + 15) / 16 * 16;
  reach = *owp + (w->k[1] - 1) * w->dil[1] / s + 1;
  row = (w->pad[1] + w->in[1] - 1) / s + 1;
  *ls = reach > row ? reach : row;
}

/* f32 2-D MaxPool without indices: each row of x that a window row
 * reaches is copied, split by the phase of the stride, between -INFINITY
 * pads, so that tap kw of every window of a row of y is one contiguous
 * run of that copy; the loop over the row (padded to a multiple of 16) has
 * constant bounds and no tests, and vectorises. The max is x's over the
 * taps inside x (a pad never wins: -INFINITY, as the reference starts
 * from). */
static void emit_max_rows(Emit *e, const Node *n, const Window *w) {
  int64_t owp, ls, s = w->stride[1], ih = w->in[0], iw = w->in[1], oh = w->out[0], ow = w->out[1];
  max_rows_geom(w, &owp, &ls);
  emit_line(e, "/* y[p][oh][ow] = the max of x[p][oh * %lld + kh * %lld - %lld][ow * %lld + kw * %lld - %lld] over "
               "the taps kh < %lld, kw < %lld inside x,", (long long)w->stride[0], (long long)w->dil[0],
            (long long)w->pad[0], (long long)s, (long long)w->dil[1], (long long)w->pad[1],
            (long long)w->k[0], (long long)w->k[1]);
  emit_line(e, " * p over the %lld (image, channel) planes; x's rows read between -INFINITY pads, split by the", 
            (long long)w->planes);
  emit_line(e, " * phase of the stride: xs[(iw + %lld) %% %lld][(iw + %lld) / %lld] = x[p][ih][iw] */",
            (long long)w->pad[1], (long long)s, (long long)w->pad[1], (long long)s);
  emit_line(e, "float xs[%lld][%lld], yb[%lld]; /* yb: a row of y, padded to %lld */", (long long)s, (long long)ls,
            (long long)owp, (long long)owp);
  emit_line(e, "for (int j = 0; j < %lld; j++)", (long long)(s * ls));
  emit_line(e, "  xs[j / %lld][j %% %lld] = -INFINITY;", (long long)ls, (long long)ls);
  emit_line(e, "for (int p = 0; p < %lld; p++) {", (long long)w->planes);
  emit_line(e, "  const float *xp = %s + p * %lld;", emit_ref(e, n->in[0]), (long long)(ih * iw));
  emit_line(e, "  for (int oh = 0; oh < %lld; oh++) {", (long long)oh);
  emit_line(e, "    for (int ow = 0; ow < %lld; ow++)", (long long)owp);
  emit_line(e, "      yb[ow] = -INFINITY;");
  emit_line(e, "    for (int kh = 0; kh < %lld; kh++) {", (long long)w->k[0]);
  emit_line(e, "      const int ih = oh * %lld + kh * %lld - %lld;", (long long)w->stride[0], (long long)w->dil[0],
            (long long)w->pad[0]);
  emit_line(e, "      if ((unsigned)ih >= %lldu)", (long long)ih);
  emit_line(e, "        continue;");
  emit_line(e, "      for (int j = 0; j < %lld; j++)", (long long)iw);
  emit_line(e, "        xs[(j + %lld) %% %lld][(j + %lld) / %lld] = xp[ih * %lld + j];", (long long)w->pad[1],
            (long long)s, (long long)w->pad[1], (long long)s, (long long)iw);
  emit_line(e, "      for (int kw = 0; kw < %lld; kw++) {", (long long)w->k[1]);
  emit_line(e, "        const float *xk = xs[kw * %lld %% %lld] + kw * %lld / %lld;", (long long)w->dil[1],
            (long long)s, (long long)w->dil[1], (long long)s);
  emit_line(e, "        for (int ow = 0; ow < %lld; ow++)", (long long)owp);
  emit_line(e, "          yb[ow] = xk[ow] > yb[ow] ? xk[ow] : yb[ow];");
  emit_line(e, "      }");
  emit_line(e, "    }");
  emit_line(e, "    memcpy(%s + (p * %lld + oh) * %lld, yb, sizeof(float) * %lld);", emit_ref(e, n->out[0]),
            (long long)oh, (long long)ow, (long long)ow);
  emit_line(e, "  }");
  emit_line(e, "}");
}

/* MaxPool and AveragePool {channels_last}, f32: for each window, y's C
 * channels start at -INFINITY (0) and take the max of (add) each tap
 * inside x, C contiguous floats at a time (a loop of constant trip count
 * that vectorises), in the NCHW kernel's order of taps; the taps outside
 * x are skipped per tap, not per element. The mean then divides by the
 * taps counted (avg_last_ok: no pads the divisor counts). */
static void emit_pool_last(Emit *e, const Node *n, const Window *w, int64_t nb, int64_t c) {
  Arena *a = e->g->arena;
  int ns = w->nsp;
  bool avg = n->op == OP_AVERAGEPOOL;
  emit_line(e, "/* y[n][o...][c] = the %s of x[n][o * stride + k * dilation - pad ...][c] over the taps k < %s "
               "inside x (channels last, %lld channels) */", avg ? "mean" : "max", flat_dims(a, ns, w->k),
            (long long)c);
  const WindowWalk walk = {ns, w->in, w->out, w->k, w->stride, w->dil, w->pad};
  window_last_outputs(e, &walk, nb, c, emit_ref(e, n->out[0]));
  window_channel_loop(e, c, avg ? "yp[c] = 0.0f;" : "yp[c] = -INFINITY;");
  if (avg)
    emit_line(e, "int inside = 0; /* the taps inside x */");
  const char *ipos = window_last_taps(e, &walk, NULL);
  if (avg)
    emit_line(e, "inside++;");
  emit_line(e, "const float *xp = %s + ((int64_t)n * %lld + %s) * %lld;", emit_ref(e, n->in[0]),
            (long long)window_prod(w->in, ns), ipos, (long long)c);
  window_channel_loop(e, c, avg ? "yp[c] += xp[c];" : "yp[c] = xp[c] > yp[c] ? xp[c] : yp[c];");
  if (!avg) {
    window_last_close(e, ns);
    return;
  }
  for (int j = 0; j < ns; j++) { /* the taps' loops */
    e->indent--;
    emit_line(e, "}");
  }
  emit_line(e, "const float count = (float)inside;");
  window_channel_loop(e, c, "yp[c] = yp[c] / count;");
  for (int j = 0; j < ns + 1; j++) { /* the outputs' and the batch's */
    e->indent--;
    emit_line(e, "}");
  }
}

static bool emit_window_pool(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const Value *x = node_in(g, n, 0);
  Window w;
  char why[WHY];
  if (pool_last(n)) {
    Type xt = permute_last(&x->type, false);
    KILN_ASSERT(pool_window(n, &xt, &w, why));
    if (type_numel(&node_out(g, n, 0)->type) == 0)
      emit_line(e, "/* empty output: nothing to compute */");
    else
      emit_pool_last(e, n, &w, xt.dims[0], xt.dims[1]);
    return true;
  }
  KILN_ASSERT(pool_window(n, &x->type, &w, why));
  DType dt = x->type.dt;
  const char *T = dt_ctype(dt);
  bool maxp = n->op == OP_MAXPOOL, indices = maxp && n->nout > 1;
  bool incl = include_pad(n);
  bool col = attr_int(n, "storage_order", 0) == 1;
  int ns = w.nsp;
  int64_t isz = window_prod(w.in, ns), osz = window_prod(w.out, ns);
  if (w.planes * osz == 0) {
    emit_line(e, "/* empty output: nothing to compute */");
    return true;
  }
  if (maxp && !indices && dt == DT_F32 && ns == 2 && isz > 0) {
    int64_t owp, ls;
    max_rows_geom(&w, &owp, &ls);
    if (ls * w.stride[1] <= 8192) { /* at most 32 KiB of stack */
      emit_max_rows(e, n, &w);
      return true;
    }
  }
  DimC dc[MAX_RANK];
  const char *ov[MAX_RANK], *land[MAX_RANK], *first[MAX_RANK];
  Buf s = {0}, sy = {0};
  for (int j = 0; j < ns; j++) {
    const char *sx = window_dim_sfx(a, ns, j);
    buf_printf(&sy, "[o%s]", sx);
    buf_printf(&s, "[%s]", land_expr(a, &w, j, arena_printf(a, "o%s", sx), arena_printf(a, "k%s", sx)));
  }
  int64_t lp = n->op == OP_LPPOOL ? attr_int(n, "p", 2) : 0;
  emit_line(e, "/* y[p]%s = the %s of x[p]%s over the taps k < %s inside x;", sy.s,
            maxp ? "max" : lp ? arena_printf(a, "L%lld norm", (long long)lp) : "mean",
            s.s, flat_dims(a, ns, w.k));
  emit_line(e, " * %s;",
            !maxp      ? (incl ? "the padding counts as zeros" : "the padding does not count")
            : !indices ? "the padding does not count"
            : col      ? "i[p][...] = the flat index of the first max in x, spatial dims column-major"
                       : "i[p][...] = the flat index of the first max in x");
  emit_line(e, " * p runs over the %lld (image, channel) planes */", (long long)w.planes);
  buf_free(&s);
  buf_free(&sy);
  for (int j = 0; j < ns; j++) {
    dim_code(e, &w, j, incl, &dc[j]);
    ov[j] = dc[j].ov;
    land[j] = dc[j].land;
    first[j] = land_expr(a, &w, j, ov[j], dc[j].lo);
  }
  emit_line(e, "for (int p = 0; p < %lld; p++) {", (long long)w.planes);
  e->indent++;
  emit_line(e, "const %s *xp = %s + p * %lld;", T, emit_ref(e, n->in[0]), (long long)isz);
  emit_line(e, "%s *yp = %s + p * %lld;", T, emit_ref(e, n->out[0]), (long long)osz);
  if (indices)
    emit_line(e, "int64_t *ip = %s + p * %lld;", emit_ref(e, n->out[1]), (long long)osz);
  for (int j = 0; j < ns; j++) {
    emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", ov[j], ov[j], (long long)w.out[j], ov[j]);
    e->indent++;
  }
  if (maxp)
    emit_line(e, "%s best = %s;", T, lowest(dt));
  else
    emit_line(e, "%s sum = %s;", T, emit_double_literal(e, dt, 0));
  if (indices) /* the first tap, kept for a window of equal (or -inf) values */
    emit_line(e, "int64_t arg = %s;", window_flat(a, ns, first, w.in, col));
  int nopen = 0;
  for (int j = 0; j < ns; j++)
    if (dc[j].lo) {
      emit_line(e, "for (int %s = %s; %s < %s; %s++) {", dc[j].kv, dc[j].lo, dc[j].kv, dc[j].hi, dc[j].kv);
      e->indent++;
      nopen++;
    }
  const char *xi = window_flat(a, ns, land, w.in, false);
  if (lp) {
    const char *v = arena_printf(a, "xp[%s]", xi);
    emit_line(e, "sum += %s;", lp == 1   ? arena_printf(a, "%s(%s)", emit_mathfn(e, dt, "fabs"), v)
                               : lp == 2 ? arena_printf(a, "%s * %s", v, v)
                                         : arena_printf(a, "%s(%s(%s), %s)", emit_mathfn(e, dt, "pow"),
                                                        emit_mathfn(e, dt, "fabs"), v,
                                                        emit_double_literal(e, dt, (double)lp)));
  } else if (!maxp) {
    emit_line(e, "sum += xp[%s];", xi);
  } else if (!indices) {
    emit_line(e, "if (xp[%s] > best)", xi);
    emit_line(e, "  best = xp[%s];", xi);
  } else {
    emit_line(e, "const %s v = xp[%s];", T, xi);
    emit_line(e, "if (v > best) {");
    emit_line(e, "  best = v;");
    emit_line(e, "  arg = %s;", col ? window_flat(a, ns, land, w.in, true) : xi);
    emit_line(e, "}");
  }
  for (int j = 0; j < nopen; j++) {
    e->indent--;
    emit_line(e, "}");
  }
  const char *yi = window_flat(a, ns, ov, w.out, false);
  if (maxp)
    emit_line(e, "yp[%s] = best;", yi);
  else if (lp)
    emit_line(e, "yp[%s] = %s;", yi, lp == 1 ? "sum" : lp == 2 ? arena_printf(a, "%s(sum)", emit_mathfn(e, dt, "sqrt"))
                                      : arena_printf(a, "%s(sum, %s)", emit_mathfn(e, dt, "pow"),
                                                     emit_double_literal(e, dt, 1.0 / (double)lp)));
  else
    emit_line(e, "yp[%s] = sum / %s;", yi, divisor(e, &w, dc, dt));
  if (indices)
    emit_line(e, "ip[%s] = (int64_t)p * %lld + arg;", yi, (long long)isz);
  for (int j = 0; j < ns + 1; j++) {
    e->indent--;
    emit_line(e, "}");
  }
  return true;
}

/* ---- C: global pools and LRN ------------------------------------------------------ */

bool pool_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  if (n->op == OP_MAXPOOL || n->op == OP_AVERAGEPOOL || n->op == OP_LPPOOL)
    return emit_window_pool(e, n);
  const Type *xt = &node_in(g, n, 0)->type;
  DType dt = xt->dt;
  int64_t nb = xt->dims[0], c = xt->dims[1], s = window_prod(xt->dims + 2, xt->rank - 2);
  if (nb * c * s == 0) {
    emit_line(e, "/* empty input: nothing to compute */");
    return true;
  }
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]), *T = dt_ctype(dt);
  if (n->op == OP_LRN) {
    int64_t size = attr_int(n, "size", 1), lo = (size - 1) / 2, hi = size - 1 - lo;
    double alpha = attr_float(n, "alpha", 1e-4), beta = attr_float(n, "beta", 0.75),
           bias = attr_float(n, "bias", 1.0);
    emit_tmpl(e, "pool_lrn", "T", T, "N", emit_int(e, nb), "C", emit_int(e, c), "S", emit_int(e, s), "CS",
              emit_int(e, c * s), "X", X, "Y", Y, "LO", emit_int(e, lo), "HI", emit_int(e, hi), "ZERO",
              emit_double_literal(e, dt, 0), "BIAS", emit_double_literal(e, dt, bias), "ALPHA_N",
              emit_double_literal(e, dt, alpha / (double)size), "BETA", emit_double_literal(e, dt, beta),
              "POW", emit_mathfn(e, dt, "pow"), "SIZE", emit_int(e, size), NULL);
    return true;
  }
  bool maxp = n->op == OP_GLOBALMAXPOOL;
  emit_tmpl(e, "pool_global", "T", T, "P", emit_int(e, nb * c), "S", emit_int(e, s), "X", X, "Y", Y, "WHAT",
            maxp ? "max" : "mean", "INIT", maxp ? "-INFINITY" : emit_double_literal(e, dt, 0), "STEP",
            maxp ? "acc = xp[i] > acc ? xp[i] : acc" : "acc += xp[i]", "RESULT",
            maxp ? "acc" : arena_printf(a, "acc / %s", emit_double_literal(e, dt, (double)s)), NULL);
  return true;
}

/* ---- BatchNormalization and InstanceNormalization ------------------------------------ */

/* Training mode: the batch's statistics normalise x. */
static bool bn_training(const Node *n) {
  if (n->op != OP_BATCHNORM)
    return false;
  return n->opset >= 14 ? attr_int(n, "training_mode", 0) != 0 : n->nout > 1;
}

/* Channels the parameters index: C, or C * S for opset < 9 spatial=0. */
static int64_t bn_channels(const Node *n, const Type *x) {
  int64_t c = x->dims[1];
  if (n->op == OP_BATCHNORM && n->opset < 9 && attr_int(n, "spatial", 1) == 0)
    c *= window_prod(x->dims + 2, x->rank - 2);
  return c;
}

bool batchnorm_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0);
  const Type *xt = &x->type;
  if (!is_float(xt->dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(xt->dt));
  if (xt->rank < 2)
    return diag_node(d, g, n, "input '%s' has rank %d; expected [N, C, ...] of rank >= 2", x->name, xt->rank);
  int64_t c = bn_channels(n, xt);
  for (int i = 1; i < n->nin; i++) {
    const Value *p = node_in(g, n, i);
    if (!p)
      return diag_node(d, g, n, "input %d is missing; expected a tensor of %lld values", i, (long long)c);
    if (!is_float(p->type.dt) || type_numel(&p->type) != c || p->type.rank < 1) {
      char ts[128];
      return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64 with %lld values, one per channel",
                       p->name, type_str(&p->type, ts, sizeof ts), (long long)c);
    }
  }
  if (n->op == OP_BATCHNORM && n->nout > 1 && !bn_training(n))
    return diag_node(d, g, n, "running mean and variance outputs need training_mode=1; expected only Y");
  if (n->op == OP_INSTANCENORM && xt->rank < 3)
    return diag_node(d, g, n, "input '%s' has rank %d; expected [N, C, spatial...] of rank >= 3", x->name,
                     xt->rank);
  node_out(g, n, 0)->type = *xt;
  for (int i = 1; i < n->nout; i++)
    node_out(g, n, i)->type = node_in(g, n, i + 2)->type; /* running mean, var: like input_mean, input_var */
  return true;
}

bool batchnorm_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  const Type *xt = &in[0].type;
  DType dt = xt->dt;
  int64_t c = bn_channels(n, xt), nb = xt->dims[0], s = nb * c != 0 ? type_numel(xt) / (nb * c) : 0;
  double eps = attr_float(n, "epsilon", 1e-5), mom = attr_float(n, "momentum", 0.9);
  bool inst = n->op == OP_INSTANCENORM, train = bn_training(n);
#define P(k, i) el_get_f(in[k].type.dt, in[k].data, i)
  for (int64_t ci = 0; ci < c; ci++)
    for (int64_t b = 0; b < (inst ? nb : 1); b++) {
      /* the statistics: over one plane (instance), the batch (training)
       * or given (inference) */
      int64_t b0 = inst ? b : 0, b1 = inst ? b + 1 : nb;
      double mean = 0, var = 0, cnt = (double)((b1 - b0) * s);
      if (inst || train) {
        for (int64_t bb = b0; bb < b1; bb++)
          for (int64_t i = 0; i < s; i++)
            mean += el_get_f(dt, in[0].data, (bb * c + ci) * s + i);
        mean /= cnt;
        for (int64_t bb = b0; bb < b1; bb++)
          for (int64_t i = 0; i < s; i++) {
            double dv = el_get_f(dt, in[0].data, (bb * c + ci) * s + i) - mean;
            var += dv * dv;
          }
        var /= cnt;
      } else {
        mean = P(3, ci);
        var = P(4, ci);
      }
      double a = P(1, ci) / sqrt(var + eps), bias = P(2, ci);
      for (int64_t bb = b0; bb < b1; bb++)
        for (int64_t i = 0; i < s; i++) {
          int64_t at = (bb * c + ci) * s + i;
          el_set_f(dt, out[0].data, at, (el_get_f(dt, in[0].data, at) - mean) * a + bias);
        }
      if (n->nout > 1)
        el_set_f(out[1].type.dt, out[1].data, ci, P(3, ci) * mom + mean * (1 - mom));
      if (n->nout > 2)
        el_set_f(out[2].type.dt, out[2].data, ci, P(4, ci) * mom + var * (1 - mom));
    }
#undef P
  return true;
}

bool batchnorm_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const Type *xt = &node_in(g, n, 0)->type;
  DType dt = xt->dt;
  int64_t c = bn_channels(n, xt), nb = xt->dims[0], s = nb * c != 0 ? type_numel(xt) / (nb * c) : 0;
  if (nb * c * s == 0) {
    emit_line(e, "/* empty input: nothing to compute */");
    return true;
  }
  const char *T = dt_ctype(dt);
  double eps = attr_float(n, "epsilon", 1e-5), mom = attr_float(n, "momentum", 0.9);
#define R(i) emit_ref(e, n->in[i])
  if (n->op == OP_INSTANCENORM) {
    emit_tmpl(e, "pool_instnorm", "T", T, "P", emit_int(e, nb * c), "C", emit_int(e, c), "S", emit_int(e, s),
              "X", R(0), "Y", emit_ref(e, n->out[0]), "SCALE", R(1), "B", R(2), "N",
              emit_double_literal(e, DT_F64, (double)s), "EPS", emit_double_literal(e, DT_F64, eps), NULL);
    return true;
  }
  if (!bn_training(n)) {
    emit_tmpl(e, "pool_batchnorm", "T", T, "N", emit_int(e, nb), "C", emit_int(e, c), "S", emit_int(e, s),
              "X", R(0), "Y", emit_ref(e, n->out[0]), "SCALE", R(1), "B", R(2), "MEAN", R(3), "VAR", R(4),
              "EPS", emit_double_literal(e, dt, eps), "SQRT", emit_mathfn(e, dt, "sqrt"), NULL);
    return true;
  }
  const char *keep = emit_double_literal(e, DT_F64, mom), *take = emit_double_literal(e, DT_F64, 1 - mom);
  const char *rm = n->nout > 1 ? arena_printf(a, "%s[c] = %s[c] * %s + mean * %s;", emit_ref(e, n->out[1]),
                                              R(3), keep, take)
                               : "/* running mean not requested */";
  const char *rv = n->nout > 2 ? arena_printf(a, "%s[c] = %s[c] * %s + var * %s;", emit_ref(e, n->out[2]),
                                              R(4), keep, take)
                               : "/* running variance not requested */";
  emit_tmpl(e, "pool_batchnorm_train", "T", T, "N", emit_int(e, nb), "C", emit_int(e, c), "S", emit_int(e, s),
            "CNT", emit_double_literal(e, DT_F64, (double)(nb * s)), "X", R(0), "Y", emit_ref(e, n->out[0]),
            "SCALE", R(1), "B", R(2), "EPS", emit_double_literal(e, DT_F64, eps), "MOMENTUM", keep,
            "RUNNING_MEAN", rm, "RUNNING_VAR", rv, NULL);
#undef R
  return true;
}
