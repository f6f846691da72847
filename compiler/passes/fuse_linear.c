/* fuse_linear.c — the fuse_linear pass: a product by a constant weight and
 * what follows it, into one Linear node (compiler/ops/fused.c):
 *
 *   MatMul(x, W[K,N] constant) [-> Add bias[N]] [-> Relu | Gelu]  -> Linear {act}
 *   Linear {act="none"} -> Relu | Gelu                             -> Linear {act}
 *
 * W may also be an ONNX int8 weight, DequantizeLinear(Wq i8 constant,
 * scale): the Linear then reads Wq and a per-column scale, with no f32 copy
 * of W. It runs after fuse_gelu, so a GELU it follows is already one node,
 * and after fuse_normalize, which made Gemms by a constant into Linears. */
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

/* An ONNX int8 weight, W = DequantizeLinear(Wq i8[K,N] constant, scale
 * f32 (a scalar, or [N] along axis 1), zero point absent or 0), read only
 * by this product: what the int8 Linear computes (Wq · W_scale[n]) with no
 * f32 copy of W. The DequantizeLinear node, or NULL; *scale: W_scale [N]. */
static Node *int8_weight(Fuser *f, int w, int *scale) {
  Graph *g = f->g;
  Node *dq = fm_def(f, w, OP_DEQUANTIZELINEAR);
  if (!dq || !fm_sole(f, w))
    return NULL;
  const Value *q = &g->vals[dq->in[0]], *s = &g->vals[dq->in[1]];
  const Value *zp = node_has_in(dq, 2) ? &g->vals[dq->in[2]] : NULL;
  if (!q->data || q->type.dt != DT_I8 || q->type.rank != 2 || !s->data || s->type.dt != DT_F32)
    return NULL;
  int64_t nn = q->type.dims[1], ns = type_numel(&s->type);
  int axis = 1;
  if (ns != 1 && (!axis_norm(attr_int(dq, "axis", 1), 2, &axis) || axis != 1 || ns != nn))
    return NULL;
  for (int64_t i = 0; zp && zp->data && i < type_numel(&zp->type); i++)
    if (el_get_i(zp->type.dt, zp->data, i) != 0)
      return NULL;
  if (zp && !zp->data)
    return NULL;
  *scale = dq->in[1];
  if (ns == 1 || s->type.rank != 1) { /* W_scale is [N]: spread a per-tensor scale */
    float *v = arena_alloc(g->arena, sizeof(float) * (size_t)(nn ? nn : 1));
    for (int64_t i = 0; i < nn; i++)
      v[i] = ((const float *)s->data)[ns == 1 ? 0 : i];
    *scale = ir_const(g, arena_printf(g->arena, "%s_per_column", s->name), DT_F32, 1, &nn, v);
  }
  return dq;
}

/* MatMul(x, W constant [K,N]) or Linear{act="none"}, then an Add of a [N]
 * bias (when there is none yet), then Relu or Gelu. W may also be an ONNX
 * int8 weight (int8_weight): the Linear then takes Wq and its W_scale. */
static bool fuse_linear(Fuser *f, Node *n) {
  Graph *g = f->g;
  int x = n->in[0], w = n->in[1], bias = n->op == OP_LINEAR && node_has_in(n, 2) ? n->in[2] : -1;
  if (x < 0 || w < 0 || (n->op == OP_LINEAR && node_has_in(n, 3))) /* act comes before a residual */
    return false;
  if (n->op == OP_LINEAR && node_has_in(n, 5)) /* w8a8 (fuse_dynquant): it took its bias and act itself */
    return false;
  int wscale = n->op == OP_LINEAR && node_has_in(n, 4) ? n->in[4] : -1;
  Node *dq = n->op == OP_MATMUL && !g->vals[w].data ? int8_weight(f, w, &wscale) : NULL;
  const Value *wv = &g->vals[w];
  if (!fm_float_value(g, x) || wv->type.dt != g->vals[x].type.dt || wv->type.rank != 2)
    return false;
  if (n->op == OP_MATMUL ? (!wv->data && !dq) || g->vals[x].type.rank < 1
                         : strcmp(attr_str(n, "act", "none"), "none") != 0)
    return false;
  Match m = {0};
  fm_take(&m, g, n);
  int y = n->out[0];
  const Type *yt = &g->vals[y].type;
  Node *last = n, *add = bias < 0 ? fm_sole_user(f, y, OP_ADD) : NULL;
  int b = add ? fm_other(add, y) : -1;
  if (add && fm_is_param(g, b, yt->dt, wv->type.dims[1])) {
    bias = b;
    fm_take(&m, g, add);
    y = add->out[0];
    last = add;
  }
  const char *act = "none";
  Node *an = fm_sole_user(f, y, -1);
  if (an && an->op == OP_RELU)
    act = "relu";
  else if (an && an->op == OP_GELU)
    act = !strcmp(attr_str(an, "approximate", "none"), "tanh") ? "gelu_tanh" : "gelu";
  if (strcmp(act, "none")) {
    fm_take(&m, g, an);
    last = an;
  }
  if ((m.n == 1 && !dq) || !fm_outputs_are(g, &m, yt))
    return false;
  if (dq) /* after the type check: its output is W's [K,N] */
    fm_take(&m, g, dq);
  int in[5] = {x, dq ? dq->in[0] : w, bias, -1, wscale};
  Node *fn = fm_fuse_into(f, &m, last, OP_LINEAR, in, wscale >= 0 ? 5 : bias >= 0 ? 3 : 2);
  fm_set_str(g, fn, "act", act);
  fm_fuse_done(f, fn, strcmp(act, "none") ? arena_printf(g->arena, "linear+%s", act) : "linear");
  return true;
}

static bool linear_at(Fuser *f, Node *n) {
  return (n->op == OP_MATMUL || n->op == OP_LINEAR) && fuse_linear(f, n);
}

bool pass_fuse_linear(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, -1, linear_at);
}
