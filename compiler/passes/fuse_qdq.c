/* fuse_qdq.c — the fuse_qdq pass: quantize_static's QDQ activations before
 * an int8 product onto the w8a8 Linear (compiler/ops/fused.c):
 *
 *   xq = QuantizeLinear(x f32, s, z)   (s, z constants, per tensor, z u8 or i8)
 *   y  = Linear(DequantizeLinear(xq, s, z), Wq i8, ..., W_scale)  (fuse_linear's
 *        int8 Linear, from quantize_static's DequantizeLinear(Wq) -> MatMul)
 *     -> Linear(x, Wq, ..., W_scale, W_colsum) {act_quant="u8_static",
 *        act_scale=s, act_zp=z (+ 128 for i8)}
 *
 * The model says: round x to the grid s·(q - z), then multiply by the int8
 * weight in f32. The Linear quantizes x by the same f32 steps (round(x /
 * s) + z, saturated: an i8 q is the u8 q + 128 with the zero point moved by
 * 128, the same integer), sums (q - z)·Wq exactly in int32 and scales by
 * s·W_scale[n]; the model's f32 sum of the same products differs only in
 * its rounding (1e-7 relative). The QuantizeLinear and DequantizeLinear
 * stay for other readers (Q, K and V read one); dce drops them when none
 * is left. Runs after fuse_linear, which made the int8 Linears, and before
 * fuse_residual. K is bounded as in fuse_dynquant (exact int32 sums). */
#include <math.h>
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"
#include "passes.h"
#include "fuse_match.h"

#define QDQ_MAX_K (2147483647 / (255 * 128))

/* v is a one-element constant: its value in *x. */
static bool scalar(const Graph *g, int v, DType dt, double *x) {
  const Value *c = v >= 0 ? &g->vals[v] : NULL;
  if (!c || !c->data || c->is_input || c->type.dt != dt || type_numel(&c->type) != 1)
    return false;
  *x = el_get_f(dt, c->data, 0);
  return true;
}

/* The zero point of a Quantize/DequantizeLinear n: 0 (u8) when absent,
 * unless QuantizeLinear's output_dtype (opset 21) names another type. */
static bool zero_point(const Graph *g, const Node *n, DType *dt, double *z) {
  if (!node_has_in(n, 2)) {
    *dt = (DType)attr_int(n, "output_dtype", DT_U8), *z = 0;
    return *dt == DT_U8 || *dt == DT_I8;
  }
  *dt = g->vals[n->in[2]].type.dt;
  return (*dt == DT_U8 || *dt == DT_I8) && scalar(g, n->in[2], *dt, z);
}

static bool fuse_qdq(Fuser *f, Node *lin) {
  Graph *g = f->g;
  if (!node_has_in(lin, 4) || node_has_in(lin, 5) || node_has_in(lin, 6) || !g->vals[lin->in[1]].data ||
      g->vals[lin->in[1]].type.dims[0] > QDQ_MAX_K)
    return false;
  Node *dq = fm_def(f, lin->in[0], OP_DEQUANTIZELINEAR);
  Node *q = dq ? fm_def(f, dq->in[0], OP_QUANTIZELINEAR) : NULL;
  double s, s2, z, z2;
  DType zt, zt2;
  if (!q || !scalar(g, dq->in[1], DT_F32, &s) || !scalar(g, q->in[1], DT_F32, &s2) || s != s2 ||
      !(s > 0 && isfinite(s)) || !zero_point(g, dq, &zt, &z) || !zero_point(g, q, &zt2, &z2) || zt != zt2 ||
      z != z2 || g->vals[q->in[0]].type.dt != DT_F32)
    return false;
  int in[6] = {q->in[0], lin->in[1], node_has_in(lin, 2) ? lin->in[2] : -1,
               node_has_in(lin, 3) ? lin->in[3] : -1, lin->in[4], fm_column_sums(g, lin->in[1])};
  lin->in = arena_dup(g->arena, in, sizeof in);
  lin->nin = 6;
  fm_set_str(g, lin, "act_quant", "u8_static");
  node_add_attr(g, lin, "act_scale", ATTR_FLOAT)->f = s;
  node_add_attr(g, lin, "act_zp", ATTR_INT)->i = (int64_t)z + (zt == DT_I8 ? 128 : 0);
  fm_fuse_done(f, lin, "qdq linear");
  return true;
}

bool pass_fuse_qdq(Graph *g, const PassOptions *o, Diag *d) {
  (void)d;
  return fm_sweep(g, o, OP_LINEAR, fuse_qdq);
}
