/* fuse_dynquant.c — the fuse_dynquant pass: ONNX Runtime's dynamic int8
 * products, as onnxruntime.quantization.quantize_dynamic writes them (and
 * as the importer spells out com.microsoft's DynamicQuantizeMatMul and
 * MatMulIntegerToFloat, compiler/frontend/onnx_contrib_quant.c), onto the w8a8
 * Linear (compiler/ops/fused.c, compiler/kernels/igemm_kernel.c):
 *
 *   xq, xs, xz = DynamicQuantizeLinear(x f32)
 *   acc = MatMulInteger(xq, B [K,N] constant i8 or u8, xz, bz constant, scalar or [N], or absent)
 *   y   = Mul(Cast(acc, to=float), Mul(xs, bs constant f32, scalar or [N]))  (operands in any order)
 *   [y  = Add(y, bias[N])] [y = Relu | Gelu (y)]
 *     -> Linear(x, W i8 = B - bz, bias, _, W_scale = bs as [N], W_colsum)
 *        {act, act_quant="u8_tensor"}
 *
 * Without it the chain runs as written: MatMulInteger's generic integer
 * loops (compiler/ops/quantize_linear.c), 9x slower than ONNX Runtime on a
 * quantized flan-t5 encoder. The Linear computes the same numbers: its
 * kernel quantizes all of x with DynamicQuantizeLinear's own scale and
 * zero point (the same f32 steps, dividing by the scale), the sums of
 * u8 x s8 are exact int32 as MatMulInteger's, and the epilogue is the
 * chain's (float)acc · (xs · bs[n]) (+ bias). B - bz must fit int8 (always
 * for quantize_dynamic's symmetric int8 weights; a u8 weight only when
 * its zero point centres it), and K be at most 65793, so that 255·128·K
 * sums stay within int32. The DynamicQuantizeLinear node is not taken
 * into the match: Q, K and V read one; dce drops it once nothing does. */
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

#define DYNQUANT_MAX_K (2147483647 / (255 * 128)) /* 255·128·K < 2^31 */

/* A constant of dtype dt (or any when dt < 0) with one element or `per`
 * elements along one axis: a scale or zero point, per tensor or per
 * column. */
static bool per_column_const(const Graph *g, int v, int dt, int64_t per) {
  const Value *c = v >= 0 ? &g->vals[v] : NULL;
  if (!c || !c->data || c->is_input || (dt >= 0 && (int)c->type.dt != dt))
    return false;
  int64_t cnt = type_numel(&c->type);
  return cnt == 1 || (c->type.rank == 1 && cnt == per);
}

/* The int8 weight W = B - bz [K,N] (bz absent: 0) as a new constant, or -1
 * when B is not a constant 8-bit matrix or a difference leaves int8. */
static int int8_weight(Graph *g, int b, int bz) {
  const Value *bv = &g->vals[b];
  if (!bv->data || bv->is_input || bv->type.rank != 2 || (bv->type.dt != DT_I8 && bv->type.dt != DT_U8))
    return -1;
  int64_t k = bv->type.dims[0], n = bv->type.dims[1];
  if (k > DYNQUANT_MAX_K || (bz >= 0 && !per_column_const(g, bz, bv->type.dt, n)))
    return -1;
  int8_t *w = arena_alloc(g->arena, (size_t)(k * n > 0 ? k * n : 1));
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < n; j++) {
      const Value *zv = bz >= 0 ? &g->vals[bz] : NULL;
      int64_t z = zv ? el_get_i(zv->type.dt, zv->data, type_numel(&zv->type) == 1 ? 0 : j) : 0;
      int64_t d = el_get_i(bv->type.dt, bv->data, i * n + j) - z;
      if (d < -128 || d > 127)
        return -1;
      w[i * n + j] = (int8_t)d;
    }
  return ir_const(g, arena_printf(g->arena, "%s.w8", bv->name), DT_I8, 2, bv->type.dims, w);
}

/* W_scale f32[N]: the constant bs, spread when it is one number. */
static int column_scale(Graph *g, int bs, int64_t n) {
  const Value *s = &g->vals[bs];
  if (s->type.rank == 1 && s->type.dims[0] == n)
    return bs;
  float *v = arena_alloc(g->arena, sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t j = 0; j < n; j++)
    v[j] = ((const float *)s->data)[0];
  return ir_const(g, arena_printf(g->arena, "%s_per_column", s->name), DT_F32, 1, &n, v);
}

/* The scale product Mul(xs, bs) that mul multiplies the cast sums by (the
 * operand of mul that is not c), or NULL; *bs: the weight's scale. */
static Node *scale_product(Fuser *f, const Node *mul, int c, int xs, int64_t n, int *bs) {
  int sp = fm_other(mul, c);
  Node *sm = sp >= 0 && sp != c ? fm_def(f, sp, OP_MUL) : NULL;
  if (!sm || sm->in[0] == sm->in[1])
    return NULL;
  *bs = fm_other(sm, xs);
  if (*bs < 0 || *bs == xs || !per_column_const(f->g, *bs, DT_F32, n))
    return NULL;
  return sm;
}

static bool fuse_dynquant(Fuser *f, Node *mmi) {
  Graph *g = f->g;
  if (mmi->nin < 3 || mmi->in[2] < 0)
    return false;
  Node *dq = fm_def(f, mmi->in[0], OP_DYNAMICQUANTIZELINEAR);
  if (!dq || dq->nout != 3 || dq->out[0] != mmi->in[0] || dq->out[2] != mmi->in[2])
    return false;
  int x = dq->in[0], b = mmi->in[1], bz = mmi->nin > 3 ? mmi->in[3] : -1;
  const Type *bt = &g->vals[b].type;
  if (!fm_float_value(g, x) || g->vals[x].type.dt != DT_F32 || bt->rank != 2)
    return false;
  int64_t n = bt->dims[1];
  Node *cast = fm_sole_user(f, mmi->out[0], OP_CAST);
  int c = cast ? cast->out[0] : -1;
  Node *mul = c >= 0 && g->vals[c].type.dt == DT_F32 ? fm_sole_user(f, c, OP_MUL) : NULL;
  int bs = -1;
  Node *sm = mul ? scale_product(f, mul, c, dq->out[1], n, &bs) : NULL;
  const Type *yt = &g->vals[c >= 0 ? c : 0].type;
  if (!sm || !type_equal(&g->vals[mul->out[0]].type, yt))
    return false;
  Match m = {0};
  fm_take(&m, g, mmi);
  fm_take(&m, g, cast);
  if (fm_sole(f, sm->out[0]))
    fm_take(&m, g, sm);
  fm_take(&m, g, mul);
  Node *last = mul, *add = fm_sole_user(f, mul->out[0], OP_ADD);
  int y = mul->out[0], bias = -1;
  if (add && fm_is_param(g, fm_other(add, y), DT_F32, n) && type_equal(&g->vals[add->out[0]].type, yt)) {
    bias = fm_other(add, y);
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
  int w = int8_weight(g, b, bz); /* last: it makes constants */
  if (w < 0)
    return false;
  int in[6] = {x, w, bias, -1, column_scale(g, bs, n), fm_column_sums(g, w)};
  Node *fn = fm_fuse_into(f, &m, last, OP_LINEAR, in, 6);
  fm_set_str(g, fn, "act", act);
  fm_set_str(g, fn, "act_quant", "u8_tensor");
  fm_fuse_done(f, fn, strcmp(act, "none") ? arena_printf(g->arena, "dynquant linear+%s", act) : "dynquant linear");
  return true;
}

bool pass_fuse_dynquant(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, OP_MATMULINTEGER, fuse_dynquant);
}
