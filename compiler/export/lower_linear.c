/* lower_linear.c — kiln export's lowerings of the fused matmul-and-activation
 * ops (ops.def's lower column): Gelu, Swish, Linear and DequantizeGather become
 * the standard ops they were fused from, in the order kiln's _eval rounds
 * (Linear: MatMul, then the bias Add, then the activation), so the file
 * ONNX Runtime reads computes what kiln computes and the fusion passes
 * recognise the chain again when it is read back. */
#include <string.h>

#include "../ir/build.h"
#include "../ir/ops.h"

/* ---- GELU ---------------------------------------------------------------------- */

static const double SQRT_2 = 1.41421356237309504880;
static const double SQRT_2_OVER_PI = 0.79788456080286535588; /* √(2/π) */
static const double GELU_KAPPA = 0.044715;

/* 0.5·x·(1 + erf(x/√2)) as PyTorch exports it: Div, Erf, Add, Mul, Mul. */
static int gelu_erf(Lowering *l, int x) {
  if (!lw_need_opset(l, 9, "Erf"))
    return -1;
  int e = lw_unary(l, OP_ERF, lw_binary(l, OP_DIV, x, lw_scalar(l, "sqrt2", SQRT_2)));
  int p = lw_binary(l, OP_ADD, e, lw_scalar(l, "one", 1));
  return lw_binary(l, OP_MUL, lw_binary(l, OP_MUL, x, p), lw_scalar(l, "half", 0.5));
}

/* 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), x³ as x·(x·x). */
static int gelu_tanh(Lowering *l, int x) {
  if (!lw_need_opset(l, 7, "broadcasting Mul"))
    return -1;
  int x3 = lw_binary(l, OP_MUL, x, lw_binary(l, OP_MUL, x, x));
  int s = lw_binary(l, OP_ADD, x, lw_binary(l, OP_MUL, lw_scalar(l, "kappa", GELU_KAPPA), x3));
  int t = lw_unary(l, OP_TANH, lw_binary(l, OP_MUL, lw_scalar(l, "sqrt_2_over_pi", SQRT_2_OVER_PI), s));
  int p = lw_binary(l, OP_ADD, lw_scalar(l, "one", 1), t);
  return lw_binary(l, OP_MUL, lw_scalar(l, "half", 0.5), lw_binary(l, OP_MUL, x, p));
}

/* Gelu {approximate="none"|"tanh"} */
bool gelu_lower(Graph *g, int node, Diag *d) {
  int x = g->nodes[node].in[0];
  Lowering l = lw_start(g, node, gval(g, x)->type.dt, d);
  bool tanh_form = !strcmp(attr_str(&g->nodes[node], "approximate", "none"), "tanh");
  return lw_result(&l, tanh_form ? gelu_tanh(&l, x) : gelu_erf(&l, x), 0);
}

/* Swish {alpha=1} (opset 24; ONNX Runtime's QuickGelu): x·Sigmoid(alpha·x),
 * as its function body writes it. */
bool swish_lower(Graph *g, int node, Diag *d) {
  int x = g->nodes[node].in[0];
  Lowering l = lw_start(g, node, gval(g, x)->type.dt, d);
  int ax = lw_binary(&l, OP_MUL, lw_scalar(&l, "alpha", attr_float(&g->nodes[node], "alpha", 1.0)), x);
  return lw_result(&l, lw_binary(&l, OP_MUL, x, lw_unary(&l, OP_SIGMOID, ax)), 0);
}

/* ---- DequantizeGather ------------------------------------------------------------ */

/* DequantizeGather(Tq[V,D], idx, scale[V]): Cast(Gather(Tq, idx)) times
 * Gather(scale as [V,1], idx), which broadcasts along the row. */
bool dequantize_gather_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int q = n->in[0], idx = n->in[1];
  Value *sv = gval(g, n->in[2]);
  if (!sv->data)
    return diag_node(d, g, n, "export: the scale is not a constant; expected a constant scale[V]");
  int64_t dims[2] = {sv->type.dims[0], 1};
  int s2 = ir_const(g, arena_printf(g->arena, "%s_col", sv->name), DT_F32, 2, dims, gval(g, n->in[2])->data);
  Lowering l = lw_start(g, node, DT_F32, d);
  if (!lw_need_opset(&l, 7, "broadcasting Mul"))
    return false;
  int rows = lw_cast(&l, lw_binary(&l, OP_GATHER, q, idx), DT_F32);
  int scale = lw_binary(&l, OP_GATHER, s2, idx);
  return lw_result(&l, lw_binary(&l, OP_MUL, rows, scale), 0);
}

/* ---- Linear -------------------------------------------------------------------- */

/* Linear {act} (X[...,K], W[K,N], bias[N]?, R?): MatMul, Add bias,
 * activation, Add the residual R (the product reshaped to R's shape first)
 * — the order in which kiln's _eval rounds. */
bool linear_lower(Graph *g, int node, Diag *d) {
  const Node *n = &g->nodes[node];
  int x = n->in[0], w = n->in[1], bias = node_has_in(n, 2) ? n->in[2] : -1;
  int res = node_has_in(n, 3) ? n->in[3] : -1;
  const char *act = attr_str(n, "act", "none");
  if (attr_get(n, "act_quant")) /* u8 rows, a rotation: no standard op computes that */
    return diag_node(d, g, n, "a Linear with act_quant (--quantize=w8a8) has no ONNX form; expected the f32 "
                     "or int8 model (export without --quantize=w8a8)");
  Lowering l = lw_start(g, node, gval(g, x)->type.dt, d);
  if ((bias >= 0 || res >= 0 || strcmp(act, "none")) && !lw_need_opset(&l, 7, "broadcasting Add and Mul"))
    return false;
  if (node_has_in(n, 4)) /* int8 W: Cast(W) · W_scale, the f32 weight it stands for */
    w = lw_binary(&l, OP_MUL, lw_cast(&l, w, DT_F32), n->in[4]);
  int y = lw_binary(&l, OP_MATMUL, x, w);
  if (bias >= 0)
    y = lw_binary(&l, OP_ADD, y, bias);
  if (!strcmp(act, "relu"))
    y = lw_unary(&l, OP_RELU, y);
  else if (!strcmp(act, "gelu"))
    y = gelu_erf(&l, y);
  else if (!strcmp(act, "gelu_tanh"))
    y = gelu_tanh(&l, y);
  if (res >= 0) {
    Type rt = gval(g, res)->type;
    y = lw_binary(&l, OP_ADD, lw_reshape(&l, y, rt.dims, rt.rank), res);
  }
  return lw_result(&l, y, 0);
}
