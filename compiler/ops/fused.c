/* fused.c — ops made by the fusion passes (compiler/passes/fuse_*.c) from
 * the patterns PyTorch exports: kiln's own Linear, never read from an ONNX
 * file, and Gelu, which is also ONNX's opset-20 op (and ONNX Runtime's
 * com.microsoft Gelu, BiasGelu and FastGelu, compiler/frontend/onnx_contrib_norm.c).
 *
 *   Linear  Y[...,N] = act(X[...,K] · W[K,N] + bias[N]) + R, bias and R optional,
 *           {act="none"|"relu"|"gelu"|"gelu_tanh"}; R, the residual (made by
 *           compiler/passes/fuse_residual.c), has M·N elements read in Y's
 *           row-major order, and Y takes R's shape. With a fifth input
 *           W_scale f32[N] (made by compiler/passes/quantize.c), W is int8
 *           and stands for the f32 weight W[k,n]·W_scale[n]: X, bias, R
 *           and Y stay f32 (weight-only quantization, DESIGN.md). With
 *           {act_quant="u8"} and a sixth input W_colsum i32[N] = Σ_k W[k,n]
 *           (--quantize=w8a8), each row r of X is first quantized to u8
 *           with a scale s_r and zero point z_r (w8a8_quantize_row) and
 *           the product is s_r·W_scale[n]·(Σ_k u[r,k]·W[k,n] - z_r·W_colsum[n]),
 *           the sum exact in int32 (DESIGN.md, "w8a8"). {act_rot=B} (16,
 *           32 or 64, dividing K) multiplies each row of X by the block
 *           Hadamard matrix H (blocks of B, ±1) before it is quantized:
 *           W then holds H·W/B (compiler/passes/quantize.c).
 *           {act_quant="u8_tensor"} (made by compiler/passes/fuse_dynquant.c
 *           from ONNX Runtime's DynamicQuantizeLinear -> MatMulInteger ->
 *           Cast -> Mul chains) quantizes all of X with one scale s and
 *           zero point z, by DynamicQuantizeLinear's rule
 *           (w8a8_tensor_params), and the sums are as above: then Y is what
 *           that chain computes, bit for bit up to the f32 epilogue.
 *           {act_quant="u8_static", act_scale=s, act_zp=z} (made by
 *           compiler/passes/fuse_qdq.c from quantize_static's QuantizeLinear
 *           -> DequantizeLinear before a product) quantizes X with that
 *           constant s (> 0) and z (0..255) the same way.
 *           With a seventh input rows i64[1] (a decoder's prefill, made by
 *           compiler/passes/bound_rows.c), only X's first `rows` rows (of M)
 *           are computed and Y's others are 0 — or, with rows_keep=1 (an
 *           encoder's token count, where nothing reads them), left as they
 *           are (_eval still writes 0)
 *   Gelu    Y = 0.5·x·(1 + erf(x/√2))                       {approximate="none"}
 *           Y = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  {approximate="tanh"}
 *
 * Both take f32 or f64. Linear's _eval rounds to the output type where the
 * unfused MatMul → Add → activation → Add rounded (after the product, the
 * bias, the activation), so folding and `kiln run` give what the replaced
 * ops gave. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "../kernels/gemm_kernel.h"
#include "../kernels/igemm_kernel.h"

/* ---- activations, shared by Linear's epilogue and Gelu -------------------- */

typedef enum { ACT_NONE, ACT_RELU, ACT_GELU, ACT_GELU_TANH, ACT_BAD } Act;

/* An attribute of another kind than string reads as "" and is rejected. */
static const char *str_attr(const Node *n, const char *name) {
  const Attr *a = attr_get(n, name);
  return !a ? "none" : a->kind == ATTR_STRING ? a->s : "";
}

static Act linear_act(const Node *n) {
  const char *s = str_attr(n, "act");
  return !strcmp(s, "none") ? ACT_NONE : !strcmp(s, "relu") ? ACT_RELU
         : !strcmp(s, "gelu") ? ACT_GELU : !strcmp(s, "gelu_tanh") ? ACT_GELU_TANH : ACT_BAD;
}

static Act gelu_act(const Node *n) {
  const char *s = str_attr(n, "approximate");
  return !strcmp(s, "none") ? ACT_GELU : !strcmp(s, "tanh") ? ACT_GELU_TANH : ACT_BAD;
}

static const double SQRT_2_OVER_PI = 0.79788456080286535588; /* √(2/π) */
static const double SQRT_HALF = 0.70710678118654752440;      /* 1/√2 */
static const double GELU_KAPPA = 0.044715;

static double act_eval(Act act, double x) {
  switch (act) {
  case ACT_RELU: return x > 0 ? x : 0;
  case ACT_GELU: return 0.5 * x * (1 + erf(x * SQRT_HALF));
  case ACT_GELU_TANH: return 0.5 * x * (1 + tanh(SQRT_2_OVER_PI * (x + GELU_KAPPA * x * x * x)));
  default: return x;
  }
}

/* The activation of C variable (or $0) v as a C expression in dt. */
static const char *act_expr(Emit *e, DType dt, Act act, const char *v) {
  Arena *a = e->g->arena;
#define L(x) emit_double_literal(e, dt, x)
  switch (act) {
  case ACT_RELU: return arena_printf(a, "%s > %s ? %s : %s", v, L(0), v, L(0));
  case ACT_GELU:
    return arena_printf(a, "%s * %s * (%s + %s(%s * %s))", L(0.5), v, L(1), emit_mathfn(e, dt, "erf"), v,
                        L(SQRT_HALF));
  case ACT_GELU_TANH:
    return arena_printf(a, "%s * %s * (%s + %s(%s * (%s + %s * %s * %s * %s)))", L(0.5), v, L(1),
                        emit_mathfn(e, dt, "tanh"), L(SQRT_2_OVER_PI), v, L(GELU_KAPPA), v, v, v);
  default: return v;
  }
#undef L
}

static bool float_dt(DType dt) { return dt == DT_F32 || dt == DT_F64; }

/* ---- Gelu ----------------------------------------------------------------- */

bool gelu_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (!x)
    return diag_node(d, g, n, "input X is absent; expected a tensor");
  if (!float_dt(x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  if (gelu_act(n) == ACT_BAD)
    return diag_node(d, g, n, "approximate is '%s'; expected \"none\" or \"tanh\"",
                     str_attr(n, "approximate"));
  node_out(g, n, 0)->type = x->type;
  return true;
}

bool gelu_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  DType dt = in[0].type.dt;
  Act act = gelu_act(n);
  for (int64_t i = 0, cnt = type_numel(&in[0].type); i < cnt; i++)
    el_set_f(dt, out[0].data, i, act_eval(act, el_get_f(dt, in[0].data, i)));
  return true;
}

bool gelu_emit(Emit *e, const Node *n) {
  emit_elementwise(e, n, act_expr(e, gval(e->g, n->in[0])->type.dt, gelu_act(n), "$0"));
  return true;
}

/* ---- Linear: shapes and the reference ------------------------------------- */

/* Rows of X (its dims but the last, multiplied). */
static int64_t linear_rows(const Type *x) {
  int64_t m = 1;
  for (int i = 0; i + 1 < x->rank; i++)
    m *= x->dims[i];
  return m;
}

/* The int8 form: W i8[K,N] with W_scale f32[N], X f32. */
static bool linear_quant_ok(Graph *g, Node *n, const Type *tx, const Type *tw, const Value *s, Diag *d) {
  char ss[128], sw[128];
  if (tx->dt != DT_F32 || tw->dt != DT_I8)
    return diag_node(d, g, n, "X is %s and W is %s with a W_scale; expected f32 X and i8 W",
                     dt_name(tx->dt), dt_name(tw->dt));
  if (s->type.dt != DT_F32 || s->type.rank != 1 || tw->rank != 2 || s->type.dims[0] != tw->dims[1])
    return diag_node(d, g, n, "W_scale is %s and W is %s; expected W_scale f32[N] for W[K,N]",
                     type_str(&s->type, ss, sizeof ss), type_str(tw, sw, sizeof sw));
  return true;
}

/* w8a8: {act_quant="u8"} with W_colsum i32[N], both or neither, on the
 * int8 form. */
static bool linear_act_quant_ok(Graph *g, Node *n, const Type *tw, const Value *ws, Diag *d) {
  const Attr *aq = attr_get(n, "act_quant");
  const Value *cs = node_in(g, n, 5);
  char sc[128], sw[128];
  if (!aq && !cs && attr_get(n, "act_rot"))
    return diag_node(d, g, n, "act_rot without act_quant; expected act_rot only with act_quant=\"u8\"");
  if (!aq && !cs)
    return true;
  if (!aq || aq->kind != ATTR_STRING || (strcmp(aq->s, "u8") && strcmp(aq->s, "u8_tensor") && strcmp(aq->s, "u8_static")))
    return diag_node(d, g, n, "act_quant is %s%s%s; expected act_quant=\"u8\" or \"u8_tensor\" with input "
                     "W_colsum", aq ? "'" : "absent", aq ? str_attr(n, "act_quant") : "", aq ? "'" : "");
  double as = attr_float(n, "act_scale", 0);
  int64_t az = attr_int(n, "act_zp", -1);
  if (!strcmp(aq->s, "u8_static") && (!(as > 0 && as < 3.4e38) || az < 0 || az > 255))
    return diag_node(d, g, n, "act_quant=\"u8_static\" with act_scale %g and act_zp %lld; expected a finite "
                     "act_scale > 0 and act_zp from 0 to 255", as, (long long)az);
  if (!ws || !cs)
    return diag_node(d, g, n, "act_quant=\"u8\" needs inputs W_scale and W_colsum; %s is absent",
                     ws ? "W_colsum" : "W_scale");
  if (!node_in(g, n, 1)->data)
    return diag_node(d, g, n, "W is computed at run time; expected a constant W with act_quant=\"u8\" "
                     "(its packed form is made at compile time)");
  if (cs->type.dt != DT_I32 || cs->type.rank != 1 || cs->type.dims[0] != tw->dims[1])
    return diag_node(d, g, n, "W_colsum is %s and W is %s; expected W_colsum i32[N] for W[K,N]",
                     type_str(&cs->type, sc, sizeof sc), type_str(tw, sw, sizeof sw));
  const Attr *ar = attr_get(n, "act_rot");
  if (ar && strcmp(aq->s, "u8"))
    return diag_node(d, g, n, "act_rot with act_quant=\"%s\"; expected act_rot only with act_quant=\"u8\"", aq->s);
  if (ar && (ar->kind != ATTR_INT || (ar->i != 16 && ar->i != 32 && ar->i != 64) || tw->dims[0] % ar->i))
    return diag_node(d, g, n, "act_rot is %s for K = %lld; expected 16, 32 or 64, dividing K",
                     ar->kind == ATTR_INT ? arena_printf(g->arena, "%lld", (long long)ar->i) : "not an int",
                     (long long)tw->dims[0]);
  if (tw->dims[0] > INT32_MAX / (255 * 127))
    return diag_node(d, g, n, "act_quant=\"u8\" with K = %lld; expected K <= %d (exact int32 sums)",
                     (long long)tw->dims[0], INT32_MAX / (255 * 127));
  return true;
}

bool linear_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *w = node_in(g, n, 1), *b = node_in(g, n, 2), *r = node_in(g, n, 3);
  Value *ws = node_in(g, n, 4);
  if (!x || !w)
    return diag_node(d, g, n, "input %s is absent; expected a tensor", x ? "W" : "X");
  const Type *tx = &x->type, *tw = &w->type;
  char sx[128], sw[128];
  if (!float_dt(tx->dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(tx->dt));
  if (ws && !linear_quant_ok(g, n, tx, tw, ws, d))
    return false;
  if (tw->rank == 2 && !linear_act_quant_ok(g, n, tw, ws, d))
    return false;
  if ((!ws && tw->dt != tx->dt) || (b && b->type.dt != tx->dt))
    return diag_node(d, g, n, "inputs X, W, bias differ in type (%s, %s, %s); expected the same type",
                     dt_name(tx->dt), dt_name(tw->dt), b ? dt_name(b->type.dt) : "absent");
  if (tx->rank < 1 || tw->rank != 2 || tx->dims[tx->rank - 1] != tw->dims[0])
    return diag_node(d, g, n, "X is %s and W is %s; expected X[...,K] and W[K,N]",
                     type_str(tx, sx, sizeof sx), type_str(tw, sw, sizeof sw));
  if (b && (b->type.rank != 1 || b->type.dims[0] != tw->dims[1]))
    return diag_node(d, g, n, "bias is %s and W is %s; expected bias[N] for W[K,N]",
                     type_str(&b->type, sx, sizeof sx), type_str(tw, sw, sizeof sw));
  if (linear_act(n) == ACT_BAD)
    return diag_node(d, g, n, "act is '%s'; expected \"none\", \"relu\", \"gelu\" or \"gelu_tanh\"",
                     str_attr(n, "act"));
  Type y = *tx;
  y.dims[y.rank - 1] = tw->dims[1];
  if (r && (r->type.dt != tx->dt || type_numel(&r->type) != type_numel(&y)))
    return diag_node(d, g, n, "residual R is %s and the product is %s; expected %s with as many "
                     "elements", type_str(&r->type, sx, sizeof sx), type_str(&y, sw, sizeof sw),
                     dt_name(tx->dt));
  const Value *rows = node_in(g, n, 6);
  if (rows && (rows->type.dt != DT_I64 || type_numel(&rows->type) != 1))
    return diag_node(d, g, n, "rows is %s; expected i64[1]", type_str(&rows->type, sx, sizeof sx));
  node_out(g, n, 0)->type = r ? r->type : y;
  return true;
}

/* w8a8: row x[0..k) as u8 with scale *s and zero point *z, x ≈ s·(u - z):
 * min and max with 0 included, s = (max - min) / 255 (1 when that is 0 or
 * below FLT_MIN, so 1/s is finite), z = round(-min/s), u = clamp(round(x/s)
 * + z, 0, 255), dividing by multiplying by 1/s, rounding half to even.
 * Each step is one f32 operation, so the generated kernel
 * (compiler/kernels/igemm_kernel.c, emit_quantize_rows) gets the very same u, s,
 * z. */
static void w8a8_quantize_row(const float *x, int64_t k, uint8_t *u, float *s, int32_t *z) {
  float mn = 0, mx = 0;
  for (int64_t t = 0; t < k; t++) {
    mn = x[t] < mn ? x[t] : mn;
    mx = x[t] > mx ? x[t] : mx;
  }
  float sc = (mx - mn) / 255.0f;
  sc = sc >= FLT_MIN ? sc : 1.0f;
  float inv = 1.0f / sc;
  float zf = nearbyintf(-mn * inv);
  zf = zf > 0 ? zf : 0;
  zf = zf < 255 ? zf : 255;
  for (int64_t t = 0; t < k; t++) {
    float q = nearbyintf(x[t] * inv) + zf;
    q = q > 0 ? q : 0;
    q = q < 255 ? q : 255;
    u[t] = (uint8_t)q;
  }
  *s = sc;
  *z = (int32_t)zf;
}

/* w8a8 {act_quant="u8_tensor"}: the scale *s and zero point *z of all of
 * x[0..cnt), by ONNX's DynamicQuantizeLinear (as ONNX Runtime computes it,
 * and kiln's own dynamic_quantize_eval): min and max with 0 included, s =
 * (max - min) / 255, z = round(0 - min / s) clamped to [0, 255] (0 when s
 * is 0). Each step one f32 operation, as the kernel's (igemm_kernel.c,
 * emit_tensor_params). */
static void w8a8_tensor_params(const float *x, int64_t cnt, float *s, float *z) {
  float mn = 0, mx = 0;
  for (int64_t t = 0; t < cnt; t++) {
    mn = x[t] < mn ? x[t] : mn;
    mx = x[t] > mx ? x[t] : mx;
  }
  float sc = (mx - mn) / 255.0f;
  float zf = sc > 0.0f ? nearbyintf(0.0f - mn / sc) : 0.0f;
  *s = sc;
  *z = zf < 0.0f ? 0.0f : zf > 255.0f ? 255.0f : zf;
}

/* Row x[0..k) as u8 by scale s and zero point zf, dividing as
 * DynamicQuantizeLinear does: u = clamp(round(x / s) + zf, 0, 255) (s 0:
 * x is all zeros, and u is zf). */
static void w8a8_quantize_div(const float *x, int64_t k, float s, float zf, uint8_t *u) {
  float sd = s > 0.0f ? s : 1.0f;
  for (int64_t t = 0; t < k; t++) {
    float q = nearbyintf(x[t] / sd) + zf;
    q = q > 0 ? q : 0;
    q = q < 255 ? q : 255;
    u[t] = (uint8_t)q;
  }
}

/* w8a8 {act_rot=b}: x[0..k) times the block-diagonal Hadamard matrix, in
 * place: per block of b, the butterflies (p, q) -> (p + q, p - q) at
 * distances h = 1, 2, .., b/2 in that order, in f32 (the generated kernel
 * does the same additions: compiler/kernels/igemm_kernel.c). */
static void w8a8_rotate_row(float *x, int64_t k, int b) {
  for (int64_t b0 = 0; b0 < k; b0 += b)
    for (int h = 1; h < b; h *= 2)
      for (int64_t i = b0; i < b0 + b; i += 2 * h)
        for (int64_t c = i; c < i + h; c++) {
          float p = x[c], q = x[c + h];
          x[c] = p + q;
          x[c + h] = p - q;
        }
}

/* The w8a8 product of row i: Y[i,j] = s·W_scale[j]·(Σ u·W - z·W_colsum[j]),
 * the sum in int32, exact (linear_infer bounds K). */
static double w8a8_dot(const uint8_t *u, const int8_t *w, int64_t k, int64_t nn, int64_t j, float s,
                       int32_t z, const float *wscale, const int32_t *colsum) {
  int32_t acc = 0;
  for (int64_t t = 0; t < k; t++)
    acc += (int32_t)u[t] * w[t * nn + j];
  return (double)(acc - z * colsum[j]) * ((double)s * wscale[j]);
}

/* The rows of Y a Linear computes: all M, or its rows input clipped to
 * [0, M] (the others are 0). */
static int64_t linear_rows_run(const Node *n, const Tensor *in, int64_t m) {
  if (n->nin <= 6 || !in[6].data)
    return m;
  int64_t r = *(const int64_t *)in[6].data;
  return r < 0 ? 0 : r < m ? r : m;
}

bool linear_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  DType dt = in[0].type.dt;
  int64_t m = linear_rows(&in[0].type), k = in[1].type.dims[0], nn = in[1].type.dims[1];
  bool has_b = n->nin > 2 && in[2].data, has_r = n->nin > 3 && in[3].data;
  const float *wscale = n->nin > 4 ? in[4].data : NULL; /* W is int8: W[t,j]·wscale[j] */
  DType wdt = in[1].type.dt;
  Act act = linear_act(n);
  void *y = out[0].data;
  int64_t m_run = linear_rows_run(n, in, m);
  const int32_t *colsum = n->nin > 5 ? in[5].data : NULL; /* w8a8: X quantized per row */
  uint8_t *u = colsum ? malloc((size_t)(k ? k : 1)) : NULL;
  int rot = (int)attr_int(n, "act_rot", 0);
  float *xr = rot ? malloc(sizeof(float) * (size_t)k) : NULL;
  float us = 1, tz = 0;
  int32_t uz = 0;
  bool per_tensor = colsum && strcmp(str_attr(n, "act_quant"), "u8");
  if (per_tensor && !strcmp(str_attr(n, "act_quant"), "u8_static")) { /* fixed */
    us = (float)attr_float(n, "act_scale", 1);
    tz = (float)attr_int(n, "act_zp", 0);
    uz = (int32_t)tz;
  } else if (per_tensor) { /* one scale and zero point for all M rows */
    w8a8_tensor_params(in[0].data, m * k, &us, &tz);
    uz = (int32_t)tz;
  }
  for (int64_t i = 0; i < m; i++) {
    const float *xi = colsum && i < m_run ? (const float *)in[0].data + i * k : NULL;
    if (xi && rot) {
      memcpy(xr, xi, sizeof(float) * (size_t)k);
      w8a8_rotate_row(xr, k, rot);
      xi = xr;
    }
    if (xi && per_tensor)
      w8a8_quantize_div(xi, k, us, tz, u);
    else if (xi)
      w8a8_quantize_row(xi, k, u, &us, &uz);
    for (int64_t j = 0; j < nn; j++) {
      if (i >= m_run) { /* past the rows input: 0 */
        el_set_f(dt, y, i * nn + j, 0);
        continue;
      }
      int64_t yi = i * nn + j;
      double s = 0;
      if (colsum) {
        el_set_f(dt, y, yi, w8a8_dot(u, in[1].data, k, nn, j, us, uz, wscale, colsum));
      } else {
        for (int64_t t = 0; t < k; t++)
          s += el_get_f(dt, in[0].data, i * k + t) * el_get_f(wdt, in[1].data, t * nn + j);
        el_set_f(dt, y, yi, wscale ? s * wscale[j] : s);
      }
      if (has_b)
        el_set_f(dt, y, yi, el_get_f(dt, y, yi) + el_get_f(dt, in[2].data, j));
      if (act != ACT_NONE)
        el_set_f(dt, y, yi, act_eval(act, el_get_f(dt, y, yi)));
      if (has_r)
        el_set_f(dt, y, yi, el_get_f(dt, y, yi) + el_get_f(dt, in[3].data, yi));
    }
  }
  free(u);
  free(xr);
  return true;
}

/* ---- Linear: emit ----------------------------------------------------------
 * The whole of Linear's C is linear_emit: the MatMul kernel
 * (templates/matmul.c.in, same block sizes as compiler/ops/matmul.c) over
 * the M rows of X, then one epilogue loop that adds the bias, applies the
 * activation and adds the residual in place. f32 products by a constant W
 * take the packed GEMM (compiler/kernels/gemm_kernel.c) instead, epilogue
 * in registers. */

static void emit_linear_matmul(Emit *e, DType dt, int64_t m, int64_t n, int64_t k, const char *x,
                               const char *w, const char *y) {
  int64_t mr = m < 8 ? m : 8, nb = n < 128 ? n : 128;
  emit_line(e, "{");
  e->indent++;
  emit_tmpl(e, "matmul", "T", dt_ctype(dt), "M", emit_int(e, m), "N", emit_int(e, n), "K", emit_int(e, k),
            "K2", emit_int(e, k - k % 2), "MR", emit_int(e, mr), "NB", emit_int(e, nb), "A", x, "B", w,
            "Y", y, "A_RS", emit_int(e, k), "A_K", "k", "A_K1", "k + 1", NULL);
  e->indent--;
  emit_line(e, "}");
}

/* Y = X · (W·scale) for an int8 W that is not a constant (the quantize
 * pass only makes constant ones; a .kir may hold others): plain loops. */
static void emit_linear_q8_loop(Emit *e, int64_t m, int64_t n, int64_t k, const char *x, const char *w,
                                const char *scale, const char *y) {
  emit_line(e, "for (int i = 0; i < %lld; i++) /* Y[%lld,%lld] = X x (W int8 [%lld,%lld] * scale) */",
            (long long)m, (long long)m, (long long)n, (long long)k, (long long)n);
  emit_line(e, "  for (int j = 0; j < %lld; j++) {", (long long)n);
  emit_line(e, "    float acc = 0;");
  emit_line(e, "    for (int t = 0; t < %lld; t++)", (long long)k);
  emit_line(e, "      acc += %s[i * %lld + t] * (float)%s[t * %lld + j];", x, (long long)k, w, (long long)n);
  emit_line(e, "    %s[i * %lld + j] = acc * %s[j];", y, (long long)n, scale);
  emit_line(e, "  }");
}

/* y[i][j] = act(y[i][j] + bias[j]) + res[i][j] over Y[M,N]; bias and res
 * may be NULL. */
static void emit_linear_epilogue(Emit *e, DType dt, Act act, int64_t m, int64_t n, const char *bias,
                                 const char *res, const char *y) {
  const char *T = dt_ctype(dt);
  emit_line(e, "for (int i = 0; i < %lld; i++) {", (long long)m);
  e->indent++;
  emit_line(e, "%s *yr = %s + i * %lld; /* row i of Y[%lld,%lld] */", T, y, (long long)n, (long long)m,
            (long long)n);
  if (res)
    emit_line(e, "const %s *rr = %s + i * %lld; /* row i of the residual */", T, res, (long long)n);
  if (act == ACT_NONE && !res) {
    emit_line(e, "for (int j = 0; j < %lld; j++)", (long long)n);
    emit_line(e, "  yr[j] += %s[j];", bias);
  } else {
    emit_line(e, "for (int j = 0; j < %lld; j++) {", (long long)n);
    e->indent++;
    emit_line(e, "const %s v = yr[j]%s%s%s;", T, bias ? " + " : "", bias ? bias : "", bias ? "[j]" : "");
    if (res)
      emit_line(e, "yr[j] = (%s) + rr[j];", act_expr(e, dt, act, "v"));
    else
      emit_line(e, "yr[j] = %s;", act_expr(e, dt, act, "v"));
    e->indent--;
    emit_line(e, "}");
  }
  e->indent--;
  emit_line(e, "}");
}

/* w8a8 (act_quant="u8"): the int8 x int8 GEMM (compiler/kernels/
 * igemm_kernel.c), for a constant W or not (the kernel packs W's data;
 * a .kir with a W computed at run time is refused by the pass's rules:
 * only constants get a W_colsum). */
/* With a rows input, on a path that computed all M rows: those past
 * `rows` are then set to 0, as _eval has them. */
static void emit_rows_zero(Emit *e, const Node *nd, int64_t m, int64_t n, const char *y) {
  if (!node_has_in(nd, 6) || attr_int(nd, "rows_keep", 0))
    return;
  const char *r = emit_ref(e, nd->in[6]);
  emit_line(e, "if (%s[0] < %lld) /* Y's rows from max(rows, 0) on are 0 */", r, (long long)m);
  emit_line(e, "  memset(%s + (%s[0] < 0 ? 0 : %s[0]) * %lld, 0, (size_t)(%lld - (%s[0] < 0 ? 0 : %s[0])) * "
               "%lld * sizeof *%s);", y, r, r, (long long)n, (long long)m, r, r, (long long)n, y);
}

static bool linear_emit_w8a8(Emit *e, const Node *nd, int64_t m, int64_t n, int64_t k) {
  Graph *g = e->g;
  static const GemmAct gemm_act[] = {[ACT_NONE] = GEMM_ACT_NONE, [ACT_RELU] = GEMM_ACT_RELU,
                                     [ACT_GELU] = GEMM_ACT_GELU, [ACT_GELU_TANH] = GEMM_ACT_GELU_TANH};
  const Value *wv = gval(g, nd->in[1]);
  KILN_ASSERT(wv->data);
  IGemmSpec s = {.m = m, .n = n, .k = k, .a = emit_ref(e, nd->in[0]), .bq = wv->data, .b_name = wv->name,
                 .act = gemm_act[linear_act(nd)], .rot = (int)attr_int(nd, "act_rot", 0),
                 .per_tensor = strcmp(str_attr(nd, "act_quant"), "u8") != 0,
                 .fixed = !strcmp(str_attr(nd, "act_quant"), "u8_static"),
                 .fixed_scale = (float)attr_float(nd, "act_scale", 1), .fixed_zp = (int)attr_int(nd, "act_zp", 0)};
  /* in this order: weights are named by first use */
  s.scale = emit_ref(e, nd->in[4]);
  s.colsum = emit_ref(e, nd->in[5]);
  s.bias = node_has_in(nd, 2) ? emit_ref(e, nd->in[2]) : NULL;
  s.residual = node_has_in(nd, 3) ? emit_ref(e, nd->in[3]) : NULL;
  s.y = emit_ref(e, nd->out[0]);
  KILN_ASSERT(emit_igemm(e, &s));
  emit_rows_zero(e, nd, m, n, s.y); /* a decoder's prefill: every row computed, those past the count zeroed */
  return true;
}

bool linear_emit(Emit *e, const Node *nd) {
  Graph *g = e->g;
  const Type *tx = &gval(g, nd->in[0])->type, *tw = &gval(g, nd->in[1])->type;
  DType dt = tx->dt;
  int64_t m = linear_rows(tx), k = tw->dims[0], n = tw->dims[1];
  if (m == 0 || n == 0)
    return true;
  /* f32 by a constant W: the packed GEMM (compiler/kernels/gemm_kernel.c), with
   * the bias and the activation applied in its epilogue */
  const Value *wv = gval(g, nd->in[1]);
  bool q8 = node_has_in(nd, 4); /* W int8, times W_scale[n] */
  if (node_has_in(nd, 5)) /* w8a8: X quantized per row, int8 x int8 sums */
    return linear_emit_w8a8(e, nd, m, n, k);
  if (dt == DT_F32 && wv->data) {
    static const GemmAct gemm_act[] = {[ACT_NONE] = GEMM_ACT_NONE, [ACT_RELU] = GEMM_ACT_RELU,
                                       [ACT_GELU] = GEMM_ACT_GELU, [ACT_GELU_TANH] = GEMM_ACT_GELU_TANH};
    GemmSpec s = {.m = m, .n = n, .k = k, .a = emit_ref(e, nd->in[0]), .a_rs = k,
                  .b = q8 ? NULL : wv->data, .bq = q8 ? wv->data : NULL, .b_name = wv->name,
                  .act = gemm_act[linear_act(nd)], .y = emit_ref(e, nd->out[0])};
    s.scale = q8 ? emit_ref(e, nd->in[4]) : NULL; /* in this order: weights are named by first use */
    s.bias = node_has_in(nd, 2) ? emit_ref(e, nd->in[2]) : NULL;
    s.residual = node_has_in(nd, 3) ? emit_ref(e, nd->in[3]) : NULL;
    s.rows = node_has_in(nd, 6) ? arena_printf(g->arena, "%s[0]", emit_ref(e, nd->in[6])) : NULL;
    s.rows_keep = attr_int(nd, "rows_keep", 0) != 0;
    if (emit_gemm(e, &s))
      return true;
  }
  /* one call each, in this order: emit_ref names weights by first use */
  const char *x = emit_ref(e, nd->in[0]);
  const char *w = emit_ref(e, nd->in[1]);
  const char *bias = node_has_in(nd, 2) ? emit_ref(e, nd->in[2]) : NULL;
  const char *res = node_has_in(nd, 3) ? emit_ref(e, nd->in[3]) : NULL;
  const char *y = emit_ref(e, nd->out[0]);
  if (q8)
    emit_linear_q8_loop(e, m, n, k, x, w, emit_ref(e, nd->in[4]), y);
  else
    emit_linear_matmul(e, dt, m, n, k, x, w, y);
  Act act = linear_act(nd);
  if (bias || res || act != ACT_NONE)
    emit_linear_epilogue(e, dt, act, m, n, bias, res, y);
  emit_rows_zero(e, nd, m, n, y);
  return true;
}

/* ---- FLOP count (ops.def's flops column) -------------------------------------- */

/* The matmul (2·M·N·K), then one op per element each for the bias and the
 * activation. */
int64_t linear_flops(const Graph *g, const Node *n) {
  const Value *a = node_in(g, n, 0);
  int64_t out = type_numel(&gval(g, n->out[0])->type), k = a && a->type.rank > 0 ? a->type.dims[a->type.rank - 1] : 1;
  return 2 * out * k + (node_has_in(n, 2) ? out : 0) + (strcmp(attr_str(n, "act", "none"), "none") ? out : 0);
}
