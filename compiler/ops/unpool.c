/* unpool.c — the ops that put patches back onto an image: MaxUnpool
 * (opsets 9, 11, 22; family `max_unpool`) and Col2Im (18; family
 * `col2im`).
 *
 * MaxUnpool: Y starts as zeros and each X element goes to the flat index
 * its MaxPool recorded (I), an index into [N, C, the unpooled dims], those
 * being (in - 1) * stride - pads + kernel per spatial dim. A constant
 * output_shape may make Y larger: the unpooled block then sits at its
 * start, as the ONNX reference places it. Indices are data: one outside
 * the unpooled tensor is dropped (never written out of bounds).
 *
 * Col2Im: the inverse of im2col. Input [N, C * prod(block), L] holds, for
 * each of the L block positions (row-major over the sliding positions),
 * the C patches of block_shape; Y[N, C, image_shape] is the sum of the
 * patches at their places (strided, dilated, minus the begin pads), taps
 * landing in the padding dropped. image_shape and block_shape are
 * constants: they fix the output. */
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "window.h"

/* ---- MaxUnpool ---------------------------------------------------------------- */

/* The unpooled spatial dims (in[]) and the output's (out[]). */
typedef struct Unpool {
  int nd;
  int64_t in[MAX_RANK], out[MAX_RANK]; /* full shapes [N, C, spatial...] */
} Unpool;

static bool unpool_plan(const Node *n, const Type *x, const Tensor *os, Unpool *u, char *why) {
  if (x->rank < 3)
    return window_fail(why, "X has rank %d; expected [N, C, spatial...] of rank >= 3", x->rank);
  int nd = u->nd = x->rank - 2;
  int64_t k[MAX_RANK], st[MAX_RANK], pads[2 * MAX_RANK];
  if (!attr_get(n, "kernel_shape"))
    return window_fail(why, "attribute kernel_shape is missing; expected %d kernel dims", nd);
  if (!window_ints_attr(n, "kernel_shape", nd, 1, 1, k, why) || !window_ints_attr(n, "strides", nd, 1, 1, st, why) ||
      !window_ints_attr(n, "pads", 2 * nd, 0, 0, pads, why))
    return false;
  u->in[0] = u->out[0] = x->dims[0];
  u->in[1] = u->out[1] = x->dims[1];
  for (int j = 0; j < nd; j++) {
    u->in[2 + j] = u->out[2 + j] = (x->dims[2 + j] - 1) * st[j] - pads[j] - pads[nd + j] + k[j];
    if (u->in[2 + j] < 1)
      return window_fail(why, "spatial dim %d unpools to %lld; expected at least 1 (kernel, strides and pads)", j,
                         (long long)u->in[2 + j]);
  }
  if (!os || !os->data)
    return true;
  if (!dt_is_int(os->type.dt) || type_numel(&os->type) != x->rank)
    return window_fail(why, "output_shape has %lld values; expected %d integers", (long long)type_numel(&os->type),
                       x->rank);
  for (int j = 0; j < x->rank; j++) {
    u->out[j] = el_get_i(os->type.dt, os->data, j);
    if (u->out[j] < u->in[j] || u->out[j] > ((int64_t)1 << 30) || (j < 2 && u->out[j] != u->in[j]))
      return window_fail(why, "output_shape[%d] is %lld; expected %s %lld", j, (long long)u->out[j],
                         j < 2 ? "X's" : "at least the unpooled", (long long)u->in[j]);
  }
  return true;
}

bool max_unpool_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0), *ix = node_in(g, n, 1), *os = n->nin > 2 ? node_in(g, n, 2) : NULL;
  if (!dt_supported(x->type.dt) || dt_is_half(x->type.dt) || x->type.dt == DT_BOOL)
    return diag_node(d, g, n, "X is %s; expected a numeric type other than f16/bf16", dt_name(x->type.dt));
  char ts[128], us[128];
  if (ix->type.dt != DT_I64 || (ix->type.rank != x->type.rank || memcmp(ix->type.dims, x->type.dims, sizeof(int64_t) * (size_t)x->type.rank)))
    return diag_node(d, g, n, "I is %s; expected i64 of X's shape %s", type_str(&ix->type, ts, sizeof ts),
                     type_str(&x->type, us, sizeof us));
  if (os && !os->data)
    return diag_node(d, g, n,
                     "input '%s' (output_shape) is computed at run time; expected a compile-time constant "
                     "because it fixes the output shape", os->name);
  Tensor ot = {os ? os->type : (Type){0}, os ? os->data : NULL};
  Unpool u;
  char why[WHY];
  if (!unpool_plan(n, &x->type, os ? &ot : NULL, &u, why))
    return diag_node(d, g, n, "%s", why);
  Type t = x->type;
  memcpy(t.dims, u.out, sizeof(int64_t) * (size_t)t.rank);
  if (!type_size_ok(&t))
    return diag_node(d, g, n, "the output would have too many elements; expected a smaller shape");
  node_out(g, n, 0)->type = t;
  return true;
}

/* Flat index k of the unpooled tensor -> flat index of the output. */
static int64_t unpool_dest(const Unpool *u, int64_t k) {
  int r = u->nd + 2;
  int64_t c[MAX_RANK], o = 0;
  window_unflatten(k, u->in, r, c);
  for (int j = 0; j < r; j++)
    o = o * u->out[j] + c[j];
  return o;
}

bool max_unpool_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  Unpool u;
  char why[WHY];
  KILN_ASSERT(unpool_plan(n, &in[0].type, n->nin > 2 ? &in[2] : NULL, &u, why));
  DType dt = in[0].type.dt;
  size_t es = dt_size(dt);
  int64_t total = window_prod(u.in, u.nd + 2);
  memset(out[0].data, 0, (size_t)type_numel(&out[0].type) * es);
  for (int64_t i = 0; i < type_numel(&in[0].type); i++) {
    int64_t k = el_get_i(DT_I64, in[1].data, i);
    if (k >= 0 && k < total)
      memcpy((char *)out[0].data + unpool_dest(&u, k) * (int64_t)es, (const char *)in[0].data + i * (int64_t)es, es);
  }
  return true;
}

bool max_unpool_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  const Value *x = node_in(g, n, 0), *os = n->nin > 2 ? node_in(g, n, 2) : NULL;
  Tensor ot = {os ? os->type : (Type){0}, os ? os->data : NULL};
  Unpool u;
  char why[WHY];
  KILN_ASSERT(unpool_plan(n, &x->type, os ? &ot : NULL, &u, why));
  int r = u.nd + 2;
  int64_t total = window_prod(u.in, r), nx = type_numel(&x->type), ny = window_prod(u.out, r);
  const char *X = emit_ref(e, n->in[0]), *I = emit_ref(e, n->in[1]), *Y = emit_ref(e, n->out[0]);
  bool same = total == ny;
  Buf dims = {0};
  for (int j = 0; j < r; j++)
    buf_printf(&dims, "%s%lld", j ? "," : "", (long long)u.in[j]);
  emit_line(e, "/* y = 0, then y[i[j]] = x[j]: i indexes the unpooled [%s]%s; an index outside it is dropped */",
            dims.s, same ? "" : ", which sits at the start of y");
  buf_free(&dims);
  emit_line(e, "memset(%s, 0, %lld);", Y, (long long)(ny * (int64_t)dt_size(x->type.dt)));
  emit_line(e, "for (int j = 0; j < %lld; j++) {", (long long)nx);
  e->indent++;
  emit_line(e, "const int64_t k = %s[j];", I);
  emit_line(e, "if (k < 0 || k >= %lld)", (long long)total);
  emit_line(e, "  continue;");
  if (same) {
    emit_line(e, "%s[k] = %s[j];", Y, X);
  } else { /* the unpooled coordinates of k, placed in y's strides */
    Buf b = {0};
    int64_t st = 1, ost = 1;
    for (int j = r - 1; j >= 0; j--) {
      const char *q = st == 1 ? "k" : arena_printf(a, "(k / %lld)", (long long)st);
      const char *c = j == 0 ? q : arena_printf(a, "%s %% %lld", q, (long long)u.in[j]);
      buf_printf(&b, "%s(%s) * %lld", b.len ? " + " : "", c, (long long)ost);
      st *= u.in[j];
      ost *= u.out[j];
    }
    emit_line(e, "%s[%s] = %s[j];", Y, b.s, X);
    buf_free(&b);
  }
  e->indent--;
  emit_line(e, "}");
  return true;
}

/* ---- Col2Im ------------------------------------------------------------------- */

typedef struct Col2Im {
  int nd;
  int64_t n, c, img[MAX_RANK], k[MAX_RANK], nb[MAX_RANK]; /* nb: block positions per dim */
  int64_t st[MAX_RANK], dil[MAX_RANK], pad[MAX_RANK];
} Col2Im;

static bool col2im_plan(Graph *g, const Node *n, Col2Im *p, Diag *d) {
  const Type *xt = &node_in(g, n, 0)->type;
  int64_t *img, *blk;
  int ni, nb;
  if (!const_input_ints(g, n, 1, "image_shape", &img, &ni, d) || !const_input_ints(g, n, 2, "block_shape", &blk, &nb, d))
    return false;
  if (ni != nb || ni < 1 || ni > MAX_RANK - 2)
    return diag_node(d, g, n, "image_shape has %d values and block_shape %d; expected the same number of spatial dims",
                     ni, nb);
  int nd = p->nd = ni;
  char why[WHY];
  int64_t pads[2 * MAX_RANK];
  if (!window_ints_attr(n, "strides", nd, 1, 1, p->st, why) || !window_ints_attr(n, "dilations", nd, 1, 1, p->dil, why) ||
      !window_ints_attr(n, "pads", 2 * nd, 0, 0, pads, why))
    return diag_node(d, g, n, "%s", why);
  if (xt->rank != 3)
    return diag_node(d, g, n, "input has rank %d; expected [N, C * prod(block_shape), L]", xt->rank);
  int64_t kk = 1, l = 1;
  for (int j = 0; j < nd; j++) {
    p->img[j] = img[j];
    p->k[j] = blk[j];
    p->pad[j] = pads[j];
    if (img[j] < 1 || blk[j] < 1 || img[j] > ATTR_MAX || blk[j] > ATTR_MAX)
      return diag_node(d, g, n, "image_shape[%d] is %lld and block_shape[%d] %lld; expected positive dims", j,
                       (long long)img[j], j, (long long)blk[j]);
    int64_t span = img[j] + pads[j] + pads[nd + j] - p->dil[j] * (blk[j] - 1) - 1;
    if (span < 0)
      return diag_node(d, g, n, "spatial dim %d: the dilated block (%lld) exceeds the padded image (%lld); expected it "
                       "to fit", j, (long long)(p->dil[j] * (blk[j] - 1) + 1), (long long)(img[j] + pads[j] + pads[nd + j]));
    p->nb[j] = span / p->st[j] + 1;
    kk *= blk[j];
    l *= p->nb[j];
  }
  if (xt->dims[1] % kk || xt->dims[2] != l)
    return diag_node(d, g, n, "input is [%lld, %lld, %lld]; expected [N, C * %lld, %lld] (the block's size, its "
                     "positions)", (long long)xt->dims[0], (long long)xt->dims[1], (long long)xt->dims[2],
                     (long long)kk, (long long)l);
  p->n = xt->dims[0];
  p->c = xt->dims[1] / kk;
  return true;
}

bool col2im_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0);
  if (x->type.dt != DT_F32 && x->type.dt != DT_F64)
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  Col2Im p;
  if (!col2im_plan(g, n, &p, d))
    return false;
  Type t = {.dt = x->type.dt, .rank = p.nd + 2};
  t.dims[0] = p.n;
  t.dims[1] = p.c;
  for (int j = 0; j < p.nd; j++)
    t.dims[2 + j] = p.img[j];
  if (!type_size_ok(&t))
    return diag_node(d, g, n, "the output would have too many elements; expected a smaller shape");
  node_out(g, n, 0)->type = t;
  return true;
}

/* The plan again, from tensors (the interpreter has no graph here). */
static void col2im_plan_eval(const Node *n, const Tensor *in, Col2Im *p) {
  int nd = p->nd = (int)type_numel(&in[1].type);
  int64_t pads[2 * MAX_RANK];
  char why[WHY];
  KILN_ASSERT(window_ints_attr(n, "strides", nd, 1, 1, p->st, why) &&
              window_ints_attr(n, "dilations", nd, 1, 1, p->dil, why) && window_ints_attr(n, "pads", 2 * nd, 0, 0, pads, why));
  int64_t kk = 1;
  for (int j = 0; j < nd; j++) {
    p->img[j] = el_get_i(in[1].type.dt, in[1].data, j);
    p->k[j] = el_get_i(in[2].type.dt, in[2].data, j);
    p->pad[j] = pads[j];
    p->nb[j] = (p->img[j] + pads[j] + pads[nd + j] - p->dil[j] * (p->k[j] - 1) - 1) / p->st[j] + 1;
    kk *= p->k[j];
  }
  p->n = in[0].type.dims[0];
  p->c = in[0].type.dims[1] / kk;
}

bool col2im_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  Col2Im p;
  col2im_plan_eval(n, in, &p);
  DType dt = in[0].type.dt;
  int nd = p.nd;
  int64_t kk = window_prod(p.k, nd), l = window_prod(p.nb, nd), isz = window_prod(p.img, nd);
  int64_t kc[MAX_RANK], bc[MAX_RANK];
  for (int64_t i = 0; i < type_numel(&out[0].type); i++)
    el_set_f(dt, out[0].data, i, 0);
  for (int64_t b = 0; b < p.n; b++)
    for (int64_t c = 0; c < p.c; c++)
      for (int64_t k = 0; k < kk; k++)
        for (int64_t q = 0; q < l; q++) {
          window_unflatten(k, p.k, nd, kc);
          window_unflatten(q, p.nb, nd, bc);
          int64_t off = 0;
          for (int j = 0; j < nd && off >= 0; j++) {
            int64_t at = bc[j] * p.st[j] - p.pad[j] + kc[j] * p.dil[j];
            off = at < 0 || at >= p.img[j] ? -1 : off * p.img[j] + at;
          }
          if (off < 0)
            continue;
          int64_t yi = (b * p.c + c) * isz + off, xi = ((b * p.c + c) * kk + k) * l + q;
          el_set_f(dt, out[0].data, yi, el_get_f(dt, out[0].data, yi) + el_get_f(dt, in[0].data, xi));
        }
  return true;
}

bool col2im_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  Col2Im p;
  Diag dg = {0};
  KILN_ASSERT(col2im_plan(g, n, &p, &dg));
  DType dt = node_in(g, n, 0)->type.dt;
  const char *T = dt_ctype(dt);
  int nd = p.nd;
  int64_t kk = window_prod(p.k, nd), l = window_prod(p.nb, nd), isz = window_prod(p.img, nd);
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]);
  emit_line(e, "/* y[p][image] = the sum of the patches x[p][k][l] of block %s at the %lld block positions l,",
            arena_printf(a, "%lld%s", (long long)p.k[0], nd > 1 ? "x..." : ""), (long long)l);
  emit_line(e, " * tap k of position l landing at l * stride - pad + k * dilation per dim; p runs over the %lld"
            " (image, channel) planes */", (long long)(p.n * p.c));
  emit_line(e, "memset(%s, 0, %lld);", Y, (long long)(p.n * p.c * isz * (int64_t)dt_size(dt)));
  emit_line(e, "for (int p = 0; p < %lld; p++) {", (long long)(p.n * p.c));
  e->indent++;
  emit_line(e, "const %s *xp = %s + p * %lld;", T, X, (long long)(kk * l));
  emit_line(e, "%s *yp = %s + p * %lld;", T, Y, (long long)isz);
  const char *kv[MAX_RANK], *bv[MAX_RANK], *pos[MAX_RANK];
  for (int j = 0; j < nd; j++) {
    kv[j] = arena_printf(a, "k%d", j);
    emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", kv[j], kv[j], (long long)p.k[j], kv[j]);
    e->indent++;
  }
  const char *krow = window_flat(a, nd, kv, p.k, false);
  emit_line(e, "const %s *xr = xp + (%s) * %lld; /* the patches' tap k, at each block position */", T, krow,
            (long long)l);
  for (int j = 0; j < nd; j++) {
    bv[j] = arena_printf(a, "b%d", j);
    pos[j] = arena_printf(a, "y%d", j);
    emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", bv[j], bv[j], (long long)p.nb[j], bv[j]);
    e->indent++;
    emit_line(e, "const int %s = %s * %lld + %s * %lld - %lld;", pos[j], bv[j], (long long)p.st[j], kv[j],
              (long long)p.dil[j], (long long)p.pad[j]);
    emit_line(e, "if (%s < 0 || %s >= %lld)", pos[j], pos[j], (long long)p.img[j]);
    emit_line(e, "  continue;");
  }
  emit_line(e, "yp[%s] += xr[%s];", window_flat(a, nd, pos, p.img, false), window_flat(a, nd, bv, p.nb, false));
  for (int j = 0; j < 2 * nd + 1; j++) {
    e->indent--;
    emit_line(e, "}");
  }
  return true;
}
