/* conv_integer.c — the integer convolutions of quantized exports:
 * ConvInteger, y = the int32 sum of (x - x_zp) · (w - w_zp), and
 * QLinearConv, that sum plus an int32 bias B[M], requantized to y's scale
 * and zero point with x_scale · w_scale[m] / y_scale.
 *
 * The geometry is Conv's (convgeom.h: pads or auto_pad, strides,
 * dilations, group), and so are its errors. x's zero point is per tensor;
 * w's zero point and scale are per tensor or per output channel ([M]). A
 * tap in the padding adds nothing — as if the padding held x's zero point,
 * which is what ONNX's reference does (it subtracts the zero point, then
 * pads with zeros). The arithmetic is quant.h's, in _eval and the C alike:
 * int32 accumulation wrapping mod 2^32 (int32_t in the C when the window
 * size proves no overflow, else int64_t narrowed), requantization by rint
 * half to even in f32.
 *
 * _eval is a plain gather. _emit writes the same gather with constant
 * bounds: for each (image, output channel) and output position, the sum
 * over the group's input channels and over the taps that land inside x,
 * whose ranges come from Conv's per-window tables (conv_window_table), so
 * no loop tests for padding. Simple and exact rather than fast: kiln's
 * quantized CNN front ends are small. */
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "convgeom.h"
#include "quant.h"
#include "window.h"

/* Input slots: ConvInteger (x, w, x_zp, w_zp); QLinearConv (x, x_scale,
 * x_zp, w, w_scale, w_zp, y_scale, y_zp, B). -1: the op has none. */
typedef struct ConvSlots {
  int x, w, xzp, wzp, xs, ws, ys, yzp, b;
} ConvSlots;

static ConvSlots conv_slots(const Node *n) {
  if (n->op == OP_CONVINTEGER)
    return (ConvSlots){0, 1, 2, 3, -1, -1, -1, -1, -1};
  return (ConvSlots){0, 3, 2, 5, 1, 4, 6, 7, 8};
}

/* Parameter `slot`, when present: of dtype want (DT_UNDEF: u8 or i8), and
 * one element, or per output channel ([cout]) when cout > 0. */
static bool check_param(Graph *g, Node *n, int slot, DType want, int64_t cout, const char *what, Diag *d) {
  const Value *p = slot >= 0 ? node_in(g, n, slot) : NULL;
  if (!p)
    return true;
  bool dt_ok = want == DT_UNDEF ? quant_is_8bit(p->type.dt) : p->type.dt == want;
  if (!dt_ok)
    return diag_node(d, g, n, "%s '%s' is %s; expected %s", what, p->name, dt_name(p->type.dt),
                     want == DT_UNDEF ? "u8 or i8" : dt_name(want));
  int64_t cnt = type_numel(&p->type);
  if (p->type.rank <= 1 && (cnt == 1 || (cout > 0 && cnt == cout)))
    return true;
  char s[128];
  if (cout > 0)
    return diag_node(d, g, n, "%s '%s' is %s; expected a scalar or 1-D of the %lld output channels", what,
                     p->name, type_str(&p->type, s, sizeof s), (long long)cout);
  return diag_node(d, g, n, "%s '%s' is %s; expected a scalar (per tensor)", what, p->name,
                   type_str(&p->type, s, sizeof s));
}

bool int_conv_infer(Graph *g, Node *n, Diag *d) {
  ConvSlots s = conv_slots(n);
  const Value *x = node_in(g, n, s.x), *w = node_in(g, n, s.w), *b = s.b >= 0 ? node_in(g, n, s.b) : NULL;
  if (!quant_is_8bit(x->type.dt) || !quant_is_8bit(w->type.dt))
    return diag_node(d, g, n, "x '%s' is %s and w '%s' is %s; expected u8 or i8", x->name,
                     dt_name(x->type.dt), w->name, dt_name(w->type.dt));
  ConvGeom c;
  char why[WHY];
  if (!conv_geom(n, &x->type, &w->type, &c, why))
    return diag_node(d, g, n, "%s", why);
  if (!check_param(g, n, s.xzp, x->type.dt, 0, "x_zero_point", d) ||
      !check_param(g, n, s.wzp, w->type.dt, c.cout, "w_zero_point", d) ||
      !check_param(g, n, s.xs, DT_F32, 0, "x_scale", d) || !check_param(g, n, s.ws, DT_F32, c.cout, "w_scale", d) ||
      !check_param(g, n, s.ys, DT_F32, 0, "y_scale", d) || !check_param(g, n, s.yzp, DT_UNDEF, 0, "y_zero_point", d))
    return false;
  if (b && (b->type.dt != DT_I32 || b->type.rank != 1 || b->type.dims[0] != c.cout)) {
    char ts[128];
    return diag_node(d, g, n, "bias '%s' is %s; expected i32[%lld], one per output channel", b->name,
                     type_str(&b->type, ts, sizeof ts), (long long)c.cout);
  }
  node_out(g, n, 0)->type = conv_out_type(&c, s.yzp < 0 ? DT_I32 : node_in(g, n, s.yzp)->type.dt, x->type.rank);
  return true;
}

/* ---- reference ------------------------------------------------------------- */

/* The int32 sum at output position oi of (image nb, output channel m),
 * starting from the bias, wrapping mod 2^32. */
static int32_t conv_sum(const ConvGeom *c, const Tensor *x, const Tensor *w, int64_t xz, int64_t wz, int64_t bias,
                        int64_t nb, int64_t m, int64_t oi) {
  int64_t cg = c->cin / c->group, mg = c->cout / c->group;
  int64_t isz = window_prod(c->in, c->nsp), ksz = window_prod(c->k, c->nsp);
  int64_t o[MAX_RANK], t[MAX_RANK], xoff;
  window_unflatten(oi, c->out, c->nsp, o);
  uint64_t sum = (uint64_t)bias;
  for (int64_t ci = 0; ci < cg; ci++)
    for (int64_t ki = 0; ki < ksz; ki++) {
      window_unflatten(ki, c->k, c->nsp, t);
      if (!conv_source(c, o, t, &xoff))
        continue;
      int64_t xi = (nb * c->cin + m / mg * cg + ci) * isz + xoff, wi = (m * cg + ci) * ksz + ki;
      sum += (uint64_t)((el_get_i(x->type.dt, x->data, xi) - xz) * (el_get_i(w->type.dt, w->data, wi) - wz));
    }
  return quant_wrap32(sum);
}

bool int_conv_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  ConvSlots s = conv_slots(n);
  ConvGeom c;
  char why[WHY];
  KILN_ASSERT(conv_geom(n, &in[s.x].type, &in[s.w].type, &c, why));
  Tensor none = {{0}, NULL};
  const Tensor *xzp = node_has_in(n, s.xzp) ? &in[s.xzp] : &none, *wzp = node_has_in(n, s.wzp) ? &in[s.wzp] : &none;
  const Tensor *b = s.b >= 0 && node_has_in(n, s.b) ? &in[s.b] : &none;
  DType dt = out[0].type.dt;
  int64_t osz = window_prod(c.out, c.nsp), yi = 0;
  for (int64_t nb = 0; nb < c.batch; nb++)
    for (int64_t m = 0; m < c.cout; m++)
      for (int64_t oi = 0; oi < osz; oi++, yi++) {
        int32_t acc = conv_sum(&c, &in[s.x], &in[s.w], quant_param_i(xzp, 0), quant_param_i(wzp, m),
                               quant_param_i(b, m), nb, m, oi);
        if (n->op == OP_CONVINTEGER) {
          ((int32_t *)out[0].data)[yi] = acc;
          continue;
        }
        float mult = (float)quant_param_f(&in[s.xs], 0) * (float)quant_param_f(&in[s.ws], m) /
                     (float)quant_param_f(&in[s.ys], 0);
        el_set_i(dt, out[0].data, yi, quant_requant(acc, mult, quant_param_i(&in[s.yzp], 0), dt));
      }
  return true;
}

/* ---- C ----------------------------------------------------------------------- */

/* C expression of parameter `slot` for output channel var ("m"), or dflt
 * when the op has no such input or it is absent. */
static const char *param_c(Emit *e, const Node *n, int slot, const char *var, const char *dflt) {
  if (slot < 0 || !node_has_in(n, slot))
    return dflt;
  int64_t cnt = type_numel(&gval(e->g, n->in[slot])->type);
  return arena_printf(e->g->arena, "%s[%s]", emit_ref(e, n->in[slot]), cnt == 1 ? "0" : var);
}

/* The largest |B[m]| when the bias is a constant; else any int32 (2^31). */
static int64_t bias_bound(const Value *b) {
  if (!b)
    return 0;
  if (!b->data)
    return (int64_t)1 << 31;
  int64_t mx = 0, cnt = type_numel(&b->type);
  for (int64_t i = 0; i < cnt; i++) {
    int64_t v = ((const int32_t *)b->data)[i];
    mx = v < 0 ? (-v > mx ? -v : mx) : (v > mx ? v : mx);
  }
  return mx;
}

/* The pointers to the (image, channel group) of x, to w[m] and to y[n][m]. */
static void emit_plane_pointers(Emit *e, const Node *n, const ConvSlots *s, const ConvGeom *c) {
  Graph *g = e->g;
  Arena *a = g->arena;
  int64_t cg = c->cin / c->group, mg = c->cout / c->group;
  int64_t isz = window_prod(c->in, c->nsp), osz = window_prod(c->out, c->nsp), ksz = window_prod(c->k, c->nsp);
  const char *xg = emit_ref(e, n->in[s->x]);
  if (c->batch > 1)
    xg = arena_printf(a, "%s + n * %lld", xg, (long long)(c->cin * isz));
  if (c->group > 1)
    xg = arena_printf(a, "%s + %s * %lld", xg, mg == 1 ? "m" : arena_printf(a, "m / %lld", (long long)mg),
                      (long long)(cg * isz));
  emit_line(e, "const %s *xg = %s;%s", dt_ctype(node_in(g, n, s->x)->type.dt), xg,
            c->group > 1 ? " /* the group's input channels */" : "");
  emit_line(e, "const %s *wm = %s + m * %lld;", dt_ctype(node_in(g, n, s->w)->type.dt), emit_ref(e, n->in[s->w]),
            (long long)(cg * ksz));
  emit_line(e, "%s *ym = %s + %s * %lld;", dt_ctype(node_out(g, n, 0)->type.dt), emit_ref(e, n->out[0]),
            c->batch > 1 ? arena_printf(a, "(n * %lld + m)", (long long)c->cout) : "m", (long long)osz);
}

/* acc += (w - wz) * (x - xz) over the group's channels and the taps of
 * the window inside x (bounds lo[j], hi[j]). */
static void emit_window_sum(Emit *e, const ConvGeom *c, const char **ov, const char **kv, const char **lo,
                            const char **hi) {
  Arena *a = e->g->arena;
  int ns = c->nsp, nopen = 0;
  int64_t cg = c->cin / c->group;
  const char *wt[MAX_RANK + 1] = {"c"}, *xt[MAX_RANK + 1] = {"c"};
  int64_t wd[MAX_RANK + 1] = {cg}, xd[MAX_RANK + 1] = {cg};
  if (cg > 1) {
    emit_line(e, "for (int c = 0; c < %lld; c++) {", (long long)cg);
    e->indent++, nopen++;
  }
  for (int j = 0; j < ns; j++) {
    emit_line(e, "for (int %s = %s; %s < %s; %s++) {", kv[j], lo[j], kv[j], hi[j], kv[j]);
    e->indent++, nopen++;
    wt[1 + j] = kv[j];
    wd[1 + j] = c->k[j];
    xt[1 + j] = conv_landing(a, c, j, ov[j], kv[j]);
    xd[1 + j] = c->in[j];
  }
  emit_line(e, "acc += ((int32_t)wm[%s] - wz) * ((int32_t)xg[%s] - xz);", window_flat(a, ns + 1, wt, wd, false),
            window_flat(a, ns + 1, xt, xd, false));
  for (int i = 0; i < nopen; i++) {
    e->indent--;
    emit_line(e, "}");
  }
}

bool int_conv_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Arena *a = g->arena;
  ConvSlots s = conv_slots(n);
  const Value *b = s.b >= 0 ? node_in(g, n, s.b) : NULL;
  ConvGeom c;
  char why[WHY];
  KILN_ASSERT(conv_geom(n, &node_in(g, n, s.x)->type, &node_in(g, n, s.w)->type, &c, why));
  const Type *yt = &node_out(g, n, 0)->type;
  if (type_numel(yt) == 0) {
    emit_line(e, "/* empty output: nothing to compute */");
    return true;
  }
  int ns = c.nsp;
  const char *ov[MAX_RANK], *kv[MAX_RANK], *lo[MAX_RANK], *hi[MAX_RANK];
  const char *acct = quant_acc_ctype(c.cin / c.group * window_prod(c.k, ns), bias_bound(b));
  emit_line(e, "/* acc[n][m][o] = %s + sum over the group's channels c and the taps k inside x of", b ? "B[m]" : "0");
  emit_line(e, " *   (w[m][c][k] - w_zp) * (x[n][c][o * stride + k * dilation - pad] - x_zp)  (%s)%s", acct,
            n->op == OP_CONVINTEGER ? " */" : ";");
  if (n->op == OP_QLINEARCONV)
    emit_line(e, " * y = saturate(rint(acc * (x_scale * w_scale / y_scale)) + y_zp) */");
  for (int j = 0; j < ns; j++) {
    const char *sx = window_dim_sfx(a, ns, j);
    ov[j] = arena_printf(a, "o%s", sx);
    kv[j] = arena_printf(a, "k%s", sx);
    bool tab = conv_window_table(e, &c, j, ov[j], kv[j]);
    lo[j] = tab ? arena_printf(a, "%s_lo[%s]", kv[j], ov[j]) : "0";
    hi[j] = tab ? arena_printf(a, "%s_hi[%s]", kv[j], ov[j]) : emit_int(e, c.k[j]);
  }
  emit_line(e, "const int32_t xz = (int32_t)%s;", param_c(e, n, s.xzp, "0", "0"));
  int nopen = 0;
  if (c.batch > 1) {
    emit_line(e, "for (int n = 0; n < %lld; n++) {", (long long)c.batch);
    e->indent++, nopen++;
  }
  emit_line(e, "for (int m = 0; m < %lld; m++) {", (long long)c.cout);
  e->indent++, nopen++;
  emit_line(e, "const int32_t wz = (int32_t)%s;", param_c(e, n, s.wzp, "m", "0"));
  if (n->op == OP_QLINEARCONV)
    emit_line(e, "const float mult = %s * %s / %s;", param_c(e, n, s.xs, "0", NULL), param_c(e, n, s.ws, "m", NULL),
              param_c(e, n, s.ys, "0", NULL));
  emit_plane_pointers(e, n, &s, &c);
  for (int j = 0; j < ns; j++) {
    emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", ov[j], ov[j], (long long)c.out[j], ov[j]);
    e->indent++, nopen++;
  }
  emit_line(e, "%s acc = %s;", acct, b ? param_c(e, n, s.b, "m", NULL) : "0");
  emit_window_sum(e, &c, ov, kv, lo, hi);
  const char *acc = quant_emit_acc32(e, "acc", acct);
  const char *y = arena_printf(a, "ym[%s]", window_flat(a, ns, ov, c.out, false));
  if (n->op == OP_CONVINTEGER)
    emit_line(e, "%s = %s;", y, acc);
  else
    quant_emit_requant(e, y, acc, "mult", param_c(e, n, s.yzp, "0", NULL), yt->dt);
  for (int i = 0; i < nopen; i++) {
    e->indent--;
    emit_line(e, "}");
  }
  return true;
}

/* ---- FLOP count (ops.def's flops column) -------------------------------------- */

/* ConvInteger, QLinearConv: Conv's 2·N·Cout·(output spatial)·(Cin/group)·
 * (kernel) integer multiply-adds, plus QLinearConv's bias; the zero points
 * and the requantization are not counted. */
int64_t int_conv_flops(const Graph *g, const Node *n) {
  const Value *w = node_in(g, n, n->op == OP_QLINEARCONV ? 3 : 1);
  int64_t out = type_numel(&gval(g, n->out[0])->type);
  if (!w || w->type.rank < 1 || w->type.dims[0] <= 0)
    return out;
  return 2 * out * (type_numel(&w->type) / w->type.dims[0]) + (n->op == OP_QLINEARCONV && node_has_in(n, 8) ? out : 0);
}
