/* center_crop_pad.c — CenterCropPad (opset 18; family `center_crop_pad`):
 * each listed axis is cut or zero-padded to the constant shape, keeping
 * the centre (an odd difference leaves the extra element at the end: the
 * crop starts at floor((in - out) / 2), the padding before it is
 * floor((out - in) / 2)). The output is zeros where padded and one block
 * copy of the kept region, a memcpy per row of the last axis. */
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "window.h"

/* Per axis: elements kept (cnt), first kept in x (src), where it lands in y (dst). */
typedef struct CropPlan {
  int rank;
  int64_t cnt[MAX_RANK], src[MAX_RANK], dst[MAX_RANK], out[MAX_RANK];
} CropPlan;

static bool crop_plan(const Node *n, const Type *x, const int64_t *shape, int len, CropPlan *p, char *why) {
  int r = x->rank, axes[MAX_RANK], na = r;
  const Attr *a = attr_get(n, "axes");
  for (int i = 0; i < r; i++)
    axes[i] = i;
  if (a) {
    bool seen[MAX_RANK] = {false};
    if (a->kind != ATTR_INTS || a->n < 1 || a->n > r)
      return window_fail(why, "attribute axes has %d values; expected 1 to %d axes", a->n, r);
    for (int i = 0; i < a->n; i++)
      if (!axis_norm(a->ints[i], r, &axes[i]) || seen[axes[i]])
        return window_fail(why, "axes[%d] is %lld; expected distinct axes in [%d, %d)", i, (long long)a->ints[i], -r,
                           r);
      else
        seen[axes[i]] = true;
    na = a->n;
  }
  if (len != na)
    return window_fail(why, "shape has %d values; expected %d, one per %s", len, na, a ? "axis in axes" : "axis of the input");
  p->rank = r;
  for (int j = 0; j < r; j++) {
    p->out[j] = p->cnt[j] = x->dims[j];
    p->src[j] = p->dst[j] = 0;
  }
  for (int i = 0; i < na; i++) {
    int j = axes[i];
    int64_t in = x->dims[j], o = shape[i];
    if (o < 0 || o > ((int64_t)1 << 30))
      return window_fail(why, "shape[%d] is %lld; expected a dim of 0 or more", i, (long long)o);
    p->out[j] = o;
    p->cnt[j] = o < in ? o : in;
    p->src[j] = o < in ? (in - o) / 2 : 0;
    p->dst[j] = o > in ? (o - in) / 2 : 0;
  }
  return true;
}

static bool plan_of(Graph *g, const Node *n, CropPlan *p, Diag *d) {
  int64_t *v;
  int len;
  if (!const_input_ints(g, n, 1, "shape", &v, &len, d))
    return false;
  char why[WHY];
  if (len > MAX_RANK || !crop_plan(n, &node_in(g, n, 0)->type, v, len, p, why))
    return diag_node(d, g, n, "%s", len > MAX_RANK ? "shape has too many values; expected one per axis" : why);
  return true;
}

bool center_crop_pad_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0);
  if (!dt_supported(x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected a numeric or bool tensor", x->name, dt_name(x->type.dt));
  if (x->type.rank < 1)
    return diag_node(d, g, n, "input '%s' is a scalar; expected a tensor of rank >= 1", x->name);
  CropPlan p;
  if (!plan_of(g, n, &p, d))
    return false;
  Type t = x->type;
  for (int j = 0; j < p.rank; j++)
    t.dims[j] = p.out[j];
  if (!type_size_ok(&t))
    return diag_node(d, g, n, "the output would have too many elements; expected a smaller shape");
  node_out(g, n, 0)->type = t;
  return true;
}

bool center_crop_pad_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  int len = (int)type_numel(&in[1].type);
  int64_t shape[MAX_RANK];
  for (int i = 0; i < len && i < MAX_RANK; i++)
    shape[i] = el_get_i(in[1].type.dt, in[1].data, i);
  CropPlan p;
  char why[WHY];
  if (len > MAX_RANK || !crop_plan(n, &in[0].type, shape, len, &p, why))
    return diag_error(d, "node '%s' (CenterCropPad): %s", n->name, why);
  size_t es = dt_size(in[0].type.dt);
  memset(out[0].data, 0, (size_t)type_numel(&out[0].type) * es);
  int64_t cnt = window_prod(p.cnt, p.rank), c[MAX_RANK], xs[MAX_RANK], ys[MAX_RANK];
  type_strides(&in[0].type, xs);
  type_strides(&out[0].type, ys);
  for (int64_t i = 0; i < cnt; i++) {
    window_unflatten(i, p.cnt, p.rank, c);
    int64_t xi = 0, yi = 0;
    for (int j = 0; j < p.rank; j++) {
      xi += (c[j] + p.src[j]) * xs[j];
      yi += (c[j] + p.dst[j]) * ys[j];
    }
    memcpy((char *)out[0].data + yi * (int64_t)es, (const char *)in[0].data + xi * (int64_t)es, es);
  }
  return true;
}

bool center_crop_pad_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  CropPlan p;
  Diag d = {0};
  KILN_ASSERT(plan_of(g, n, &p, &d));
  const Type *xt = &node_in(g, n, 0)->type, *yt = &node_out(g, n, 0)->type;
  size_t es = dt_size(xt->dt);
  int r = p.rank;
  int64_t xs[MAX_RANK], ys[MAX_RANK], total = type_numel(yt), kept = window_prod(p.cnt, r);
  type_strides(xt, xs);
  type_strides(yt, ys);
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]);
  if (kept < total)
    emit_line(e, "memset(%s, 0, %lld); /* the padding */", Y, (long long)(total * (int64_t)es));
  if (kept == 0)
    return true;
  int64_t xo = 0, yo = 0;
  for (int j = 0; j < r; j++) {
    xo += p.src[j] * xs[j];
    yo += p.dst[j] * ys[j];
  }
  emit_line(e, "/* y = x's centre, cut or zero-padded to the shape: a block of %lld elements, one memcpy per",
            (long long)kept);
  emit_line(e, " * row of the last axis, from x at offset %lld to y at offset %lld */", (long long)xo, (long long)yo);
  const char *xt_s = "0", *yt_s = "0";
  for (int j = 0; j + 1 < r; j++) {
    if (p.cnt[j] == 1)
      continue;
    const char *v = arena_printf(a, "i%d", j);
    emit_line(e, "for (int %s = 0; %s < %lld; %s++)", v, v, (long long)p.cnt[j], v);
    e->indent++;
    xt_s = !strcmp(xt_s, "0") ? arena_printf(a, "%s * %lld", v, (long long)xs[j])
                              : arena_printf(a, "%s + %s * %lld", xt_s, v, (long long)xs[j]);
    yt_s = !strcmp(yt_s, "0") ? arena_printf(a, "%s * %lld", v, (long long)ys[j])
                              : arena_printf(a, "%s + %s * %lld", yt_s, v, (long long)ys[j]);
  }
  emit_line(e, "memcpy(%s + %lld + %s, %s + %lld + %s, %lld);", Y, (long long)yo, yt_s, X, (long long)xo, xt_s,
            (long long)(p.cnt[r - 1] * (int64_t)es));
  for (int j = 0; j + 1 < r; j++)
    if (p.cnt[j] != 1)
      e->indent--;
  return true;
}
