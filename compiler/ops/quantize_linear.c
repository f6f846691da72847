/* quantize_linear.c — ONNX's linear quantization ops: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
 * and the arithmetic the integer ops share (quant.h; conv_integer.c has
 * ConvInteger and QLinearConv).
 *
 * One arithmetic everywhere (the reference _eval and the generated C do
 * the same float operations in the same order, so they agree exactly):
 *   quantize     q = saturate(rint(x / scale) + zero_point)   x / scale in f32
 *   dequantize   y = (float)(q - zero_point) * scale            the difference in int32
 *   requantize   y = saturate(rint((float)acc * (a_scale * b_scale / y_scale)) + y_zp)
 * rint rounds half to even (C's default rounding mode, nearbyintf); NaN
 * quantizes to the zero point. Integer products accumulate as ONNX's int32
 * (wrapping mod 2^32), in int32_t where K proves no overflow, else in
 * int64_t narrowed at the end (quant.h).
 *
 * Per-axis parameters: a 1-D scale / zero point of the size of x's `axis`
 * dim applies along it; a scalar (or 1-element) one to all of x. The
 * kernels view x as [outer, C, inner] around that axis. */
#include <math.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "matgeom.h"
#include "quant.h"

static Arena *ar(Emit *e) { return e->g->arena; }

bool quant_is_8bit(DType dt) { return dt == DT_U8 || dt == DT_I8; }

int64_t quant_min(DType dt) {
  if (dt_is_unsigned_int(dt))
    return 0;
  return dt == DT_I8 ? -128 : dt == DT_I16 ? -32768 : dt == DT_I4 ? -8 : dt == DT_I2 ? -2 : INT32_MIN;
}

int64_t quant_max(DType dt) {
  return dt == DT_U8 ? 255 : dt == DT_I8 ? 127 : dt == DT_U16 ? 65535 : dt == DT_I16 ? 32767 : dt == DT_U4 ? 15
         : dt == DT_I4 ? 7 : dt == DT_U2 ? 3 : dt == DT_I2 ? 1 : INT32_MAX;
}

double quant_param_f(const Tensor *t, int64_t c) {
  return el_get_f(t->type.dt, t->data, type_numel(&t->type) == 1 ? 0 : c);
}

int64_t quant_param_i(const Tensor *t, int64_t c) {
  if (!t->data)
    return 0; /* an absent zero point */
  return el_get_i(t->type.dt, t->data, type_numel(&t->type) == 1 ? 0 : c);
}

/* ---- accumulate and requantize (quant.h) ------------------------------------- */

int32_t quant_wrap32(uint64_t acc) {
  uint32_t u = (uint32_t)acc;
  return u > INT32_MAX ? -(int32_t)~u - 1 : (int32_t)u;
}

/* saturate(r + zp): r a float already rounded to an integer; NaN -> zp. */
static int64_t saturate_q(float r, int64_t zp, DType dt) {
  if (r != r)
    return zp;
  double v = (double)r + (double)zp;
  return v < quant_min(dt) ? quant_min(dt) : v > quant_max(dt) ? quant_max(dt) : (int64_t)v;
}

int64_t quant_requant(int32_t acc, float mult, int64_t zp, DType dt) {
  return saturate_q(nearbyintf((float)acc * mult), zp, dt);
}

const char *quant_acc_ctype(int64_t terms, int64_t maxbias) {
  return terms <= ((int64_t)INT32_MAX - maxbias) / QUANT_MAX_PRODUCT ? "int32_t" : "int64_t";
}

const char *quant_emit_acc32(Emit *e, const char *acc, const char *ctype) {
  if (!strcmp(ctype, "int32_t"))
    return acc;
  emit_line(e, "const uint32_t %s_u = (uint32_t)%s; /* int32 accumulation wraps mod 2^32 */", acc, acc);
  emit_line(e, "const int32_t %s32 = %s_u > 2147483647u ? -(int32_t)~%s_u - 1 : (int32_t)%s_u;", acc, acc, acc,
            acc);
  return arena_printf(ar(e), "%s32", acc);
}

/* The C of saturate_q: y = saturate(r + zp) for a rounded float expression r. */
static void emit_saturate(Emit *e, const char *y, const char *r, const char *zp, DType dt) {
  emit_line(e, "const float r = %s; /* half to even */", r);
  emit_line(e, "const float v = r != r ? (float)%s : r + (float)%s;", zp, zp);
  emit_line(e, "%s = (%s)(v < %lld.0f ? %lld : v > %lld.0f ? %lld : (int32_t)v);", y, dt_ctype(dt),
            (long long)quant_min(dt), (long long)quant_min(dt), (long long)quant_max(dt),
            (long long)quant_max(dt));
}

void quant_emit_requant(Emit *e, const char *y, const char *acc, const char *mult, const char *zp, DType dt) {
  emit_saturate(e, y, arena_printf(ar(e), "nearbyintf((float)%s * %s)", acc, mult), zp, dt);
}

/* x's [outer, C, inner] around `axis`, for a parameter of `count` elements
 * (C = 1 when it is per tensor). */
typedef struct AxisView {
  int64_t outer, c, inner;
} AxisView;

static AxisView axis_view(const Type *x, int axis, int64_t count) {
  AxisView v = {1, 1, 1};
  if (count == 1 || x->rank == 0) {
    v.inner = type_numel(x);
    return v;
  }
  for (int i = 0; i < x->rank; i++)
    *(i < axis ? &v.outer : i == axis ? &v.c : &v.inner) *= x->dims[i];
  return v;
}

/* axis_view of x for node n (its `axis`, when the parameters are per axis). */
static AxisView node_view(const Node *n, const Type *x, int64_t count) {
  int axis = 0;
  if (x->rank > 0 && !axis_norm(attr_int(n, "axis", 1), x->rank, &axis))
    axis = 0; /* only with a per-tensor parameter: infer checked the rest */
  return axis_view(x, axis, count);
}

/* Input i of n in an _eval, or an empty tensor when the node has none. */
static const Tensor *opt_in(const Node *n, const Tensor *in, int i) {
  static const Tensor none = {{0}, NULL};
  return node_has_in(n, i) ? &in[i] : &none;
}

/* Check a scale / zero-point input: a scalar or 1 element, or 1-D of x's
 * axis dim, or (block_size > 0, opset 21) x's shape with ceil(dim / block)
 * along the axis. */
static bool check_param(Graph *g, Node *n, int slot, const Type *x, int axis, const char *what, Diag *d) {
  Value *p = node_in(g, n, slot);
  if (!p)
    return true;
  int64_t cnt = type_numel(&p->type), block = attr_int(n, "block_size", 0);
  char s[128], sx[128];
  if (cnt != 1 && block > 0) {
    bool ok = p->type.rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++)
      ok = p->type.dims[i] == (i == axis ? (x->dims[i] + block - 1) / block : x->dims[i]);
    if (!ok)
      return diag_node(d, g, n, "%s '%s' is %s for x %s and block_size %lld; expected x's shape with "
                       "ceil(%lld / %lld) = %lld along axis %d", what, p->name, type_str(&p->type, s, sizeof s),
                       type_str(x, sx, sizeof sx), (long long)block, (long long)x->dims[axis], (long long)block,
                       (long long)((x->dims[axis] + block - 1) / block), axis);
    return true;
  }
  if (p->type.rank > 1 || (cnt != 1 && (x->rank == 0 || p->type.rank != 1 || cnt != x->dims[axis])))
    return diag_node(d, g, n, "%s '%s' is %s for x %s; expected a scalar, or 1-D of x's axis-%d dim "
                     "(%lld), or blocks of block_size along the axis", what, p->name,
                     type_str(&p->type, s, sizeof s), type_str(x, sx, sizeof sx),
                     axis, x->rank ? (long long)x->dims[axis] : 1LL);
  return true;
}

/* `axis`, checked only when the scale (input 1) is per axis: with one
 * scale the attribute means nothing (its default, 1, is out of range for
 * a 1-D x, and ONNX's own tests rely on that being fine). */
static bool get_axis(Graph *g, Node *n, const Type *x, int *axis, Diag *d) {
  int64_t a = attr_int(n, "axis", 1);
  Value *s = node_in(g, n, 1);
  if (x->rank == 0 || type_numel(&s->type) == 1) {
    *axis = 0;
    return true;
  }
  if (!axis_norm(a, x->rank, axis))
    return diag_node(d, g, n, "axis %lld is out of range for rank %d; expected -%d..%d", (long long)a,
                     x->rank, x->rank, x->rank - 1);
  return true;
}

/* Open `for (o) for (c) for (i)` over an AxisView; the element index is
 * `(o * C + c) * inner + i`, available as `k`. Closed by close_axis_loops. */
static void open_axis_loops(Emit *e, AxisView v) {
  emit_line(e, "for (int64_t o = 0; o < %lld; o++)", (long long)v.outer);
  emit_line(e, "  for (int64_t c = 0; c < %lld; c++)", (long long)v.c);
  emit_line(e, "    for (int64_t i = 0; i < %lld; i++) {", (long long)v.inner);
  e->indent += 3;
  emit_line(e, "const int64_t k = (o * %lld + c) * %lld + i;", (long long)v.c, (long long)v.inner);
}

static void close_axis_loops(Emit *e) {
  e->indent -= 3;
  emit_line(e, "    }");
}

/* ---- QuantizeLinear, DequantizeLinear ----------------------------------------
 * Where the element (o, c, i) of x's [outer, C, inner] view finds its scale
 * and zero point: the only one (per tensor), the c-th (per axis), or that
 * of its block (blocked, opset 21: the parameters have x's shape with
 * nblk = ceil(C / block) along the axis). */
typedef struct QParam {
  AxisView v;
  int64_t block, nblk; /* 0, 0 unless blocked */
} QParam;

static QParam qparam(const Node *n, const Type *x, const Type *scale) {
  int64_t count = type_numel(scale), block = attr_int(n, "block_size", 0);
  QParam q = {node_view(n, x, count), 0, 0};
  if (count != 1 && block > 0) {
    q.block = block;
    q.nblk = (q.v.c + block - 1) / block;
  }
  return q;
}

static int64_t qparam_at(QParam q, int64_t o, int64_t c, int64_t i) {
  if (q.block)
    return (o * q.nblk + c / q.block) * q.v.inner + i;
  return q.v.c == 1 ? 0 : c; /* per tensor: one; per axis: the c-th */
}

static const char *qparam_c(Emit *e, QParam q) {
  if (q.block)
    return arena_printf(ar(e), "(o * %lld + c / %lld) * %lld + i", (long long)q.nblk, (long long)q.block,
                        (long long)q.v.inner);
  return q.v.c == 1 ? "0" : "c";
}

static bool is_half_or_f32(DType dt) { return dt == DT_F32 || dt_is_half(dt); }
/* A scale: f32, f16, bf16, or (opset 24) e8m0, the MX formats' power of two */
static bool scale_type_ok(DType dt) { return is_half_or_f32(dt) || dt == DT_F8E8M0; }

/* The types a QuantizeLinear may produce (and a DequantizeLinear read,
 * with i32): 8-, 16-, 4- and 2-bit integers, float8 and float4. */
static bool quant_type_ok(DType dt) {
  return dt == DT_U8 || dt == DT_I8 || dt == DT_U16 || dt == DT_I16 || (dt_is_narrow(dt) && dt != DT_F8E8M0);
}

/* QuantizeLinear-21's block_size (non-negative) and QuantizeLinear-23's
 * precision: the division x / scale is f32 here, which is what precision
 * 0 (unset) means for f32 and f16 scales, and FLOAT says. */
static bool check_quant_attrs(Graph *g, Node *n, Diag *d) {
  int64_t block = attr_int(n, "block_size", 0), prec = attr_int(n, "precision", 0);
  if (block < 0)
    return diag_node(d, g, n, "block_size %lld; expected 0 (per tensor or axis) or a positive block",
                     (long long)block);
  if (prec != 0 && prec != DT_F32)
    return diag_node(d, g, n, "precision %lld; expected 0 or 1 (FLOAT: kiln divides in f32)", (long long)prec);
  return true;
}

bool quantize_linear_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *s = node_in(g, n, 1), *zp = node_in(g, n, 2);
  int axis;
  if (!is_half_or_f32(x->type.dt) && x->type.dt != DT_I32)
    return diag_node(d, g, n, "x '%s' is %s; expected f32, f16, bf16 or i32", x->name, dt_name(x->type.dt));
  if (!scale_type_ok(s->type.dt))
    return diag_node(d, g, n, "y_scale '%s' is %s; expected f32, f16, bf16 or f8e8m0", s->name,
                     dt_name(s->type.dt));
  int64_t odt = attr_int(n, "output_dtype", 0);
  DType y = zp ? zp->type.dt : odt ? (DType)odt : DT_U8;
  if (zp && odt && odt != zp->type.dt)
    return diag_node(d, g, n, "output_dtype %lld is not y_zero_point's type (%s); expected the same type",
                     (long long)odt, dt_name(zp->type.dt));
  if (odt < 0 || odt >= DT_MAX_ || !quant_type_ok(y))
    return diag_node(d, g, n, "the output type is %s; expected u8, i8, u16, i16, u4, i4, u2, i2, a float8 "
                     "or f4e2m1", odt < 0 || odt >= DT_MAX_ ? "?" : dt_name(y));
  if (!check_quant_attrs(g, n, d) || !get_axis(g, n, &x->type, &axis, d) ||
      !check_param(g, n, 1, &x->type, axis, "y_scale", d) || !check_param(g, n, 2, &x->type, axis, "y_zero_point", d))
    return false;
  Type yt = x->type;
  yt.dt = y;
  node_out(g, n, 0)->type = yt;
  return true;
}

/* saturate(rint(x / s) + zp) as QuantizeLinear and DynamicQuantizeLinear do it. */
static int64_t quantize_one(float x, float s, int64_t zp, DType dt) {
  return saturate_q(nearbyintf(x / s), zp, dt);
}

/* One element of QuantizeLinear into y: an integer type as quantize_one;
 * float8 rounds x / s (its zero point is 0 and ONNX's reference leaves it
 * out, which keeps -0), saturating or not; float4 rounds x / s + zp. */
static void quantize_into(DType dt, void *y, int64_t k, float x, float s, const Tensor *zp, int64_t p, bool sat) {
  if (dt == DT_F4E2M1) {
    float zf = zp->data ? (float)el_get_f(zp->type.dt, zp->data, p) : 0.0f;
    packed_set(dt, y, k, minifloat_from_double(dt, (double)(x / s + zf), true, MF_UP));
  } else if (dt_is_minifloat(dt)) {
    ((uint8_t *)y)[k] = (uint8_t)minifloat_from_double(dt, (double)(x / s), sat, MF_UP);
  } else {
    el_set_i(dt, y, k, quantize_one(x, s, zp->data ? el_get_i(zp->type.dt, zp->data, p) : 0, dt));
  }
}

bool quantize_linear_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  QParam q = qparam(n, &in[0].type, &in[1].type);
  const Tensor *zp = opt_in(n, in, 2);
  bool sat = attr_int(n, "saturate", 1) != 0;
  for (int64_t o = 0, k = 0; o < q.v.outer; o++)
    for (int64_t c = 0; c < q.v.c; c++)
      for (int64_t i = 0; i < q.v.inner; i++, k++) {
        int64_t p = qparam_at(q, o, c, i);
        quantize_into(out[0].type.dt, out[0].data, k, (float)el_get_f(in[0].type.dt, in[0].data, k),
                      (float)el_get_f(in[1].type.dt, in[1].data, p), zp, p, sat);
      }
  return true;
}

/* The C text of quantize_one for element expression x, scale s, zero point zp. */
static void emit_quantize_store(Emit *e, const char *y, const char *x, const char *s, const char *zp, DType dt) {
  emit_saturate(e, y, arena_printf(ar(e), "nearbyintf(%s / %s)", x, s), zp, dt);
}

bool quantize_linear_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  QParam q = qparam(n, &gval(g, n->in[0])->type, &gval(g, n->in[1])->type);
  DType dt = gval(g, n->out[0])->type.dt;
  const char *pi = qparam_c(e, q);
  const char *x = emit_elem(e, n->in[0], "k"), *s = emit_elem(e, n->in[1], pi);
  const char *zp = node_has_in(n, 2) ? emit_elem(e, n->in[2], pi) : "0";
  const char *per = q.block ? "block" : q.v.c == 1 ? "tensor" : "axis";
  EmitStore st = {attr_int(n, "saturate", 1) != 0, MF_UP};
  if (dt == DT_F4E2M1) {
    emit_line(e, "/* y = f4e2m1(x / scale + zero_point), per %s */", per);
    open_axis_loops(e, q.v);
    emit_elem_store(e, n->out[0], "k", arena_printf(ar(e), "(float)%s / %s + %s", x, s, zp), false, &st);
  } else if (dt_is_minifloat(dt)) {
    emit_line(e, "/* y = %s(x / scale), %s, per %s */", dt_name(dt), st.saturate ? "saturating" : "not saturating",
              per);
    open_axis_loops(e, q.v);
    emit_elem_store(e, n->out[0], "k", arena_printf(ar(e), "(float)%s / %s", x, s), false, &st);
  } else if (dt_is_packed(dt)) {
    emit_line(e, "/* y = saturate(rint(x / scale) + zero_point), per %s */", per);
    open_axis_loops(e, q.v);
    emit_line(e, "const int32_t zp = %s;", zp);
    emit_line(e, "int32_t y;");
    emit_quantize_store(e, "y", arena_printf(ar(e), "(float)%s", x), s, "zp", dt);
    emit_elem_store(e, n->out[0], "k", "y", false, NULL);
  } else {
    emit_line(e, "/* y = saturate(rint(x / scale) + zero_point), per %s */", per);
    open_axis_loops(e, q.v);
    emit_quantize_store(e, arena_printf(ar(e), "%s[k]", emit_ref(e, n->out[0])), arena_printf(ar(e), "(float)%s", x),
                        s, zp, dt);
  }
  close_axis_loops(e);
  return true;
}

bool dequantize_linear_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *s = node_in(g, n, 1), *zp = node_in(g, n, 2);
  int axis;
  if (!quant_type_ok(x->type.dt) && x->type.dt != DT_I32)
    return diag_node(d, g, n, "x '%s' is %s; expected u8, i8, u16, i16, i32, u4, i4, u2, i2, a float8 or "
                     "f4e2m1", x->name, dt_name(x->type.dt));
  if (!scale_type_ok(s->type.dt))
    return diag_node(d, g, n, "x_scale '%s' is %s; expected f32, f16, bf16 or f8e8m0", s->name,
                     dt_name(s->type.dt));
  if (zp && zp->type.dt != x->type.dt)
    return diag_node(d, g, n, "x_zero_point '%s' is %s; expected x's type, %s", zp->name,
                     dt_name(zp->type.dt), dt_name(x->type.dt));
  int64_t odt = attr_int(n, "output_dtype", 0);
  if (odt && (odt >= DT_MAX_ || !is_half_or_f32((DType)odt)))
    return diag_node(d, g, n, "output_dtype %lld; expected 0 (x_scale's type), 1 (FLOAT), 10 (FLOAT16) or "
                     "16 (BFLOAT16)", (long long)odt);
  if (!check_quant_attrs(g, n, d) || !get_axis(g, n, &x->type, &axis, d) ||
      !check_param(g, n, 1, &x->type, axis, "x_scale", d) || !check_param(g, n, 2, &x->type, axis, "x_zero_point", d))
    return false;
  if (!odt && !is_half_or_f32(s->type.dt))
    return diag_node(d, g, n, "x_scale '%s' is %s and output_dtype is not set; expected output_dtype FLOAT, "
                     "FLOAT16 or BFLOAT16", s->name, dt_name(s->type.dt));
  Type y = x->type;
  y.dt = odt ? (DType)odt : s->type.dt;
  node_out(g, n, 0)->type = y;
  return true;
}

/* (x - zp) * scale in f32, the difference exact in int32; float8 and
 * float4 codes are values already (their zero point is 0: ONNX's reference
 * leaves it out). The product is rounded once more to an f16/bf16 output. */
bool dequantize_linear_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  QParam q = qparam(n, &in[0].type, &in[1].type);
  const Tensor *zp = opt_in(n, in, 2);
  DType xdt = in[0].type.dt;
  for (int64_t o = 0, k = 0; o < q.v.outer; o++)
    for (int64_t c = 0; c < q.v.c; c++)
      for (int64_t i = 0; i < q.v.inner; i++, k++) {
        int64_t p = qparam_at(q, o, c, i);
        float s = (float)el_get_f(in[1].type.dt, in[1].data, p);
        float x = dt_is_float(xdt) ? (float)el_get_f(xdt, in[0].data, k)
                                   : (float)(int32_t)(el_get_i(xdt, in[0].data, k) -
                                                      (zp->data ? el_get_i(zp->type.dt, zp->data, p) : 0));
        el_set_f(out[0].type.dt, out[0].data, k, (double)(x * s));
      }
  return true;
}

bool dequantize_linear_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  QParam q = qparam(n, &gval(g, n->in[0])->type, &gval(g, n->in[1])->type);
  DType xdt = gval(g, n->in[0])->type.dt, ydt = gval(g, n->out[0])->type.dt;
  const char *pi = qparam_c(e, q), *per = q.block ? "block" : q.v.c == 1 ? "tensor" : "axis";
  const char *x = emit_elem(e, n->in[0], "k"), *s = emit_elem(e, n->in[1], pi);
  const char *zp = node_has_in(n, 2) && !dt_is_float(xdt) ? emit_elem(e, n->in[2], pi) : NULL;
  const char *v;
  if (dt_is_float(xdt)) {
    emit_line(e, "/* y = x * scale, per %s */", per);
    v = arena_printf(ar(e), "%s * %s", x, s);
  } else {
    emit_line(e, "/* y = (x - zero_point) * scale, per %s */", per);
    v = arena_printf(ar(e), "(float)(int32_t)((int64_t)%s - (int64_t)%s) * %s", x, zp ? zp : "0", s);
  }
  open_axis_loops(e, q.v);
  if (ydt == DT_F32)
    emit_line(e, "%s[k] = %s;", emit_ref(e, n->out[0]), v);
  else
    emit_elem_store(e, n->out[0], "k", v, false, NULL);
  close_axis_loops(e);
  return true;
}

/* ---- DynamicQuantizeLinear ---------------------------------------------------
 * uint8, per tensor: the range [min(0, min x), max(0, max x)] onto 0..255. */

bool dynamic_quantize_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (x->type.dt != DT_F32)
    return diag_node(d, g, n, "x '%s' is %s; expected f32", x->name, dt_name(x->type.dt));
  Type y = x->type;
  y.dt = DT_U8;
  node_out(g, n, 0)->type = y;
  node_out(g, n, 1)->type = (Type){.dt = DT_F32, .rank = 0};
  node_out(g, n, 2)->type = (Type){.dt = DT_U8, .rank = 0};
  return true;
}

bool dynamic_quantize_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n;
  (void)d;
  const float *x = in[0].data;
  int64_t cnt = type_numel(&in[0].type);
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < cnt; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  float s = (hi - lo) / 255.0f;
  int64_t zp = 0;
  if (s > 0) {
    float z = nearbyintf(0.0f - lo / s);
    zp = z < 0 ? 0 : z > 255 ? 255 : (int64_t)z;
  }
  ((float *)out[1].data)[0] = s;
  ((uint8_t *)out[2].data)[0] = (uint8_t)zp;
  for (int64_t i = 0; i < cnt; i++)
    ((uint8_t *)out[0].data)[i] = (uint8_t)(s > 0 ? quantize_one(x[i], s, zp, DT_U8) : zp);
  return true;
}

bool dynamic_quantize_emit(Emit *e, const Node *n) {
  int64_t cnt = type_numel(&gval(e->g, n->in[0])->type);
  const char *x = emit_ref(e, n->in[0]), *y = emit_ref(e, n->out[0]);
  emit_line(e, "/* the range [min(0, min x), max(0, max x)] onto 0..255 */");
  emit_line(e, "float lo = 0.0f, hi = 0.0f;");
  emit_line(e, "for (int64_t i = 0; i < %lld; i++) {", (long long)cnt);
  emit_line(e, "  lo = %s[i] < lo ? %s[i] : lo;", x, x);
  emit_line(e, "  hi = %s[i] > hi ? %s[i] : hi;", x, x);
  emit_line(e, "}");
  emit_line(e, "const float s = (hi - lo) / 255.0f;");
  emit_line(e, "float zf = s > 0.0f ? nearbyintf(0.0f - lo / s) : 0.0f;");
  emit_line(e, "const int32_t zp = zf < 0.0f ? 0 : zf > 255.0f ? 255 : (int32_t)zf;");
  emit_line(e, "%s[0] = s;", emit_ref(e, n->out[1]));
  emit_line(e, "%s[0] = (uint8_t)zp;", emit_ref(e, n->out[2]));
  emit_line(e, "for (int64_t k = 0; k < %lld; k++) {", (long long)cnt);
  e->indent++;
  emit_line(e, "if (!(s > 0.0f)) {");
  emit_line(e, "  %s[k] = (uint8_t)zp;", y);
  emit_line(e, "  continue;");
  emit_line(e, "}");
  emit_quantize_store(e, arena_printf(ar(e), "%s[k]", y), arena_printf(ar(e), "%s[k]", x), "s", "zp", DT_U8);
  e->indent--;
  emit_line(e, "}");
  return true;
}

/* ---- MatMulInteger and QLinearMatMul ------------------------------------------
 * Y[b][m][n] = sum_k (A[b][m][k] - a_zp[m]) (B[b][k][n] - b_zp[n]) in int32;
 * zero points are scalars or per row of A ([M]) / per column of B ([N]).
 * QLinearMatMul then requantizes with (a_scale · b_scale / y_scale). */

/* Input slots: MatMulInteger (A, B, a_zp, b_zp); QLinearMatMul (a, a_scale,
 * a_zp, b, b_scale, b_zp, y_scale, y_zp). */
typedef struct IntMatSlots {
  int a, b, azp, bzp, as, bs, ys, yzp; /* -1: none */
} IntMatSlots;

static IntMatSlots int_slots(const Node *n) {
  if (n->op == OP_MATMULINTEGER)
    return (IntMatSlots){0, 1, 2, 3, -1, -1, -1, -1};
  return (IntMatSlots){0, 3, 2, 5, 1, 4, 6, 7};
}

/* A parameter along M (rows of A) or N (columns of B): a scalar or [len]. */
static bool check_vec(Graph *g, Node *n, int slot, int64_t len, const char *what, Diag *d) {
  Value *p = slot >= 0 ? node_in(g, n, slot) : NULL;
  if (!p)
    return true;
  int64_t cnt = type_numel(&p->type);
  if (p->type.rank > 1 || (cnt != 1 && cnt != len)) {
    char s[128];
    return diag_node(d, g, n, "%s '%s' is %s; expected a scalar or 1-D of %lld", what, p->name,
                     type_str(&p->type, s, sizeof s), (long long)len);
  }
  return true;
}

bool int_matmul_infer(Graph *g, Node *n, Diag *d) {
  IntMatSlots s = int_slots(n);
  Value *a = node_in(g, n, s.a), *b = node_in(g, n, s.b);
  char sa[128], sb[128];
  if (!quant_is_8bit(a->type.dt) || !quant_is_8bit(b->type.dt))
    return diag_node(d, g, n, "inputs are %s and %s; expected u8 or i8", dt_name(a->type.dt),
                     dt_name(b->type.dt));
  if (a->type.rank < 1 || b->type.rank < 1 ||
      a->type.dims[a->type.rank - 1] != b->type.dims[b->type.rank >= 2 ? b->type.rank - 2 : 0])
    return diag_node(d, g, n, "shapes %s and %s; expected A[..., M, K] and B[..., K, N]",
                     type_str(&a->type, sa, sizeof sa), type_str(&b->type, sb, sizeof sb));
  int nba = a->type.rank > 2 ? a->type.rank - 2 : 0, nbb = b->type.rank > 2 ? b->type.rank - 2 : 0;
  for (int i = 1; i <= nba && i <= nbb; i++) {
    int64_t da = a->type.dims[nba - i], db = b->type.dims[nbb - i];
    if (da != db && da != 1 && db != 1)
      return diag_node(d, g, n, "batch dims of %s and %s do not broadcast; expected equal dims or 1",
                       type_str(&a->type, sa, sizeof sa), type_str(&b->type, sb, sizeof sb));
  }
  MatGeom mg;
  Type y;
  matmul_geom(&a->type, &b->type, &mg, &y);
  /* zero points: the type of their operand; scales: f32, or (opset 21)
   * all three f16 or bf16, read as floats */
  DType sdt = s.as >= 0 && node_in(g, n, s.as) ? node_in(g, n, s.as)->type.dt : DT_F32;
  if (!is_half_or_f32(sdt))
    sdt = DT_F32;
  for (int k = 0; k < n->nin; k++) {
    Value *p = node_in(g, n, k);
    bool zp_a = k == s.azp, zp_b = k == s.bzp, zp_y = k == s.yzp;
    if (!p || k == s.a || k == s.b)
      continue;
    DType want = zp_a ? a->type.dt : zp_b ? b->type.dt : zp_y ? p->type.dt : sdt;
    if (p->type.dt != want || (zp_y && !quant_is_8bit(want)))
      return diag_node(d, g, n, "input %d '%s' is %s; expected %s", k, p->name, dt_name(p->type.dt),
                       zp_y ? "u8 or i8" : k == s.as ? "f32, f16 or bf16" : dt_name(want));
  }
  if (!check_vec(g, n, s.azp, mg.m, "a_zero_point", d) || !check_vec(g, n, s.bzp, mg.n, "b_zero_point", d) ||
      !check_vec(g, n, s.as, mg.m, "a_scale", d) || !check_vec(g, n, s.bs, mg.n, "b_scale", d) ||
      !check_vec(g, n, s.ys, 1, "y_scale", d) || !check_vec(g, n, s.yzp, 1, "y_zero_point", d))
    return false;
  y.dt = n->op == OP_MATMULINTEGER ? DT_I32 : gval(g, n->in[s.yzp])->type.dt;
  node_out(g, n, 0)->type = y;
  return true;
}

/* Flat batch index -> element offsets of A's and B's matrices. */
static void batch_offsets(const MatGeom *mg, int64_t bi, int64_t *oa, int64_t *ob) {
  *oa = *ob = 0;
  for (int d = mg->nb - 1; d >= 0; d--) {
    int64_t i = bi % mg->bd[d];
    bi /= mg->bd[d];
    *oa += i * mg->sa[d];
    *ob += i * mg->sb[d];
  }
}

static int64_t batch_count(const MatGeom *mg) {
  int64_t nb = 1;
  for (int d = 0; d < mg->nb; d++)
    nb *= mg->bd[d];
  return nb;
}

bool int_matmul_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  IntMatSlots s = int_slots(n);
  const Tensor *A = &in[s.a], *B = &in[s.b];
  const Tensor *azp = opt_in(n, in, s.azp), *bzp = opt_in(n, in, s.bzp);
  MatGeom mg;
  Type y;
  matmul_geom(&A->type, &B->type, &mg, &y);
  int64_t nb = batch_count(&mg);
  for (int64_t bi = 0; bi < nb; bi++) {
    int64_t oa, ob;
    batch_offsets(&mg, bi, &oa, &ob);
    for (int64_t m = 0; m < mg.m; m++)
      for (int64_t j = 0; j < mg.n; j++) {
        uint64_t sum = 0; /* wrapping: the int32 accumulation mod 2^32 */
        for (int64_t k = 0; k < mg.k; k++)
          sum += (uint64_t)((el_get_i(A->type.dt, A->data, oa + m * mg.k + k) - quant_param_i(azp, m)) *
                            (el_get_i(B->type.dt, B->data, ob + k * mg.n + j) - quant_param_i(bzp, j)));
        int32_t acc = quant_wrap32(sum);
        int64_t at = (bi * mg.m + m) * mg.n + j;
        if (n->op == OP_MATMULINTEGER) {
          ((int32_t *)out[0].data)[at] = acc;
          continue;
        }
        float mult = (float)quant_param_f(&in[s.as], m) * (float)quant_param_f(&in[s.bs], j) /
                     (float)quant_param_f(&in[s.ys], 0);
        DType dt = out[0].type.dt;
        el_set_i(dt, out[0].data, at, quant_requant(acc, mult, quant_param_i(&in[s.yzp], 0), dt));
      }
  }
  return true;
}

/* C expression of a zero point / scale along M ("m") or N ("j"), or "0". */
static const char *vec_elem(Emit *e, const Node *n, int slot, const char *var) {
  if (slot < 0 || !node_has_in(n, slot))
    return "0";
  int64_t cnt = type_numel(&gval(e->g, n->in[slot])->type);
  return emit_elem(e, n->in[slot], cnt == 1 ? "0" : var); /* f16/bf16 scales read as floats */
}

/* Y's element (bi, m, j) from the sum in variable `acc` of C type acct:
 * stored as int32 (MatMulInteger) or requantized (QLinearMatMul). */
static void emit_int_store(Emit *e, const Node *n, const MatGeom *mg, const char *acc, const char *acct) {
  IntMatSlots s = int_slots(n);
  const char *at = arena_printf(ar(e), "%s[(bi * %lld + m) * %lld + j]", emit_ref(e, n->out[0]), (long long)mg->m,
                                (long long)mg->n);
  const char *a32 = quant_emit_acc32(e, acc, acct);
  if (n->op == OP_MATMULINTEGER) {
    emit_line(e, "%s = %s;", at, a32);
    return;
  }
  emit_line(e, "const float mult = %s * %s / %s;", vec_elem(e, n, s.as, "m"), vec_elem(e, n, s.bs, "j"),
            vec_elem(e, n, s.ys, "0"));
  quant_emit_requant(e, at, a32, "mult", vec_elem(e, n, s.yzp, "0"), gval(e->g, n->out[0])->type.dt);
}

#define ROW_ACC_MAX 4096 /* longest row of Y summed on the stack */

/* One row of Y summed on the stack, k outside j: the inner loop runs
 * along rows of B and Y (it vectorises). */
static void emit_int_row(Emit *e, const Node *n, const MatGeom *mg, const char *tab, const char *acct) {
  IntMatSlots s = int_slots(n);
  long long N = (long long)mg->n;
  emit_line(e, "%s acc[%lld] = {0}; /* row m of Y */", acct, N);
  emit_line(e, "for (int64_t k = 0; k < %lld; k++) {", (long long)mg->k);
  emit_line(e, "  const int32_t a = (int32_t)%s[%s[2 * bi] + m * %lld + k] - azp;", emit_ref(e, n->in[s.a]), tab,
            (long long)mg->k);
  emit_line(e, "  const %s *b = %s + %s[2 * bi + 1] + k * %lld;", dt_ctype(gval(e->g, n->in[s.b])->type.dt),
            emit_ref(e, n->in[s.b]), tab, N);
  emit_line(e, "  for (int64_t j = 0; j < %lld; j++)", N);
  emit_line(e, "    acc[j] += a * ((int32_t)b[j] - (int32_t)%s);", vec_elem(e, n, s.bzp, "j"));
  emit_line(e, "}");
  emit_line(e, "for (int64_t j = 0; j < %lld; j++) {", N);
  e->indent++;
  emit_line(e, "const %s aj = acc[j];", acct);
  emit_int_store(e, n, mg, "aj", acct);
  e->indent--;
  emit_line(e, "}");
}

/* One dot product per element of Y (rows longer than ROW_ACC_MAX). */
static void emit_int_dot(Emit *e, const Node *n, const MatGeom *mg, const char *tab, const char *acct) {
  IntMatSlots s = int_slots(n);
  emit_line(e, "for (int64_t j = 0; j < %lld; j++) {", (long long)mg->n);
  e->indent++;
  emit_line(e, "const int32_t bzp = (int32_t)%s;", vec_elem(e, n, s.bzp, "j"));
  emit_line(e, "%s acc = 0;", acct);
  emit_line(e, "for (int64_t k = 0; k < %lld; k++)", (long long)mg->k);
  emit_line(e, "  acc += ((int32_t)%s[%s[2 * bi] + m * %lld + k] - azp) * ((int32_t)%s[%s[2 * bi + 1] + k * %lld + j] - bzp);",
            emit_ref(e, n->in[s.a]), tab, (long long)mg->k, emit_ref(e, n->in[s.b]), tab, (long long)mg->n);
  emit_int_store(e, n, mg, "acc", acct);
  e->indent--;
  emit_line(e, "}");
}

/* For each matrix (offsets from a constant table) and row m of A: the row
 * of Y summed on the stack (emit_int_row), or dot products when it is too
 * long; the accumulator is int32_t unless K is large enough to wrap. */
bool int_matmul_emit(Emit *e, const Node *n) {
  IntMatSlots s = int_slots(n);
  MatGeom mg;
  Type y;
  matmul_geom(&gval(e->g, n->in[s.a])->type, &gval(e->g, n->in[s.b])->type, &mg, &y);
  if (type_numel(&y) == 0) {
    emit_line(e, "/* empty output: nothing to compute */");
    return true;
  }
  int64_t nb = batch_count(&mg);
  int64_t *offs = arena_alloc(ar(e), sizeof(int64_t) * (size_t)(2 * nb));
  for (int64_t bi = 0; bi < nb; bi++)
    batch_offsets(&mg, bi, &offs[2 * bi], &offs[2 * bi + 1]);
  const char *tab = emit_const_array(e, DT_I64, offs, 2 * nb, arena_printf(ar(e), "%s_batch_offsets", n->name),
                                     arena_printf(ar(e), "offsets of A's and B's matrices per batch (%s)", n->name));
  const char *acct = quant_acc_ctype(mg.k, 0);
  emit_line(e, "/* Y = (A - a_zp)(B - b_zp) in int32%s: %lld batches of [%lld x %lld] x [%lld x %lld] */",
            n->op == OP_QLINEARMATMUL ? ", requantized" : "", (long long)nb, (long long)mg.m, (long long)mg.k,
            (long long)mg.k, (long long)mg.n);
  emit_line(e, "for (int64_t bi = 0; bi < %lld; bi++)", (long long)nb);
  emit_line(e, "  for (int64_t m = 0; m < %lld; m++) {", (long long)mg.m);
  e->indent += 2;
  emit_line(e, "const int32_t azp = (int32_t)%s;", vec_elem(e, n, s.azp, "m"));
  if (mg.n <= ROW_ACC_MAX)
    emit_int_row(e, n, &mg, tab, acct);
  else
    emit_int_dot(e, n, &mg, tab, acct);
  e->indent -= 2;
  emit_line(e, "  }");
  return true;
}

/* ---- FLOP count (ops.def's flops column) -------------------------------------- */

/* MatMulInteger, QLinearMatMul: the integer multiply-adds, 2·M·N·K (the zero
 * points and the requantization are not counted). */
int64_t int_matmul_flops(const Graph *g, const Node *n) {
  const Value *a = node_in(g, n, 0);
  int64_t k = a && a->type.rank > 0 ? a->type.dims[a->type.rank - 1] : 1;
  return 2 * type_numel(&gval(g, n->out[0])->type) * k;
}
