/* deform_conv.c — DeformConv (opsets 19, 22; family `deform_conv`), the
 * deformable convolution of DCNv1/v2 detection and segmentation backbones,
 * 2-D (the form ONNX Runtime and the ONNX reference implement).
 *
 * Tap k of output position (oh, ow) reads X not at the grid point
 * (oh * stride - pad + kh * dilation, ...) but that point moved by the
 * data-dependent offset of its offset group, sampled bilinearly with
 * zeros outside X, scaled by the optional mask (DCNv2), then weighted by
 * W as in a grouped convolution, plus B. The generated kernel works per
 * output position: the offset groups' tap corners and weights first, then
 * the sampled column of every input channel (a stack buffer of C x taps),
 * then one dot product per output channel. */
#include <math.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "window.h"

#define DEFORM_COL_MAX 65536 /* elements of the per-position column buffer */

typedef struct Deform {
  int64_t n, c, h, w, oc, oh, ow, kh, kw, group, og;
  int64_t st[2], dil[2], pad[4];
  bool bias, mask;
} Deform;

static bool deform_plan(Graph *g, const Node *n, Deform *p, Diag *d) {
  const Type *xt = &node_in(g, n, 0)->type, *wt = &node_in(g, n, 1)->type, *ot = &node_in(g, n, 2)->type;
  const Value *b = n->nin > 3 ? node_in(g, n, 3) : NULL, *m = n->nin > 4 ? node_in(g, n, 4) : NULL;
  char ts[128], why[WHY];
  if ((xt->dt != DT_F32 && xt->dt != DT_F64) || xt->rank != 4)
    return diag_node(d, g, n, "X is %s; expected f32 or f64 [N, C, H, W] (2-D deformable convolution)",
                     type_str(xt, ts, sizeof ts));
  memset(p, 0, sizeof *p);
  p->n = xt->dims[0], p->c = xt->dims[1], p->h = xt->dims[2], p->w = xt->dims[3];
  p->group = attr_int(n, "group", 1);
  p->og = attr_int(n, "offset_group", 1);
  if (p->group < 1 || p->og < 1 || p->c % p->group || p->c % p->og)
    return diag_node(d, g, n, "group %lld and offset_group %lld; expected positive divisors of the %lld channels",
                     (long long)p->group, (long long)p->og, (long long)p->c);
  if (wt->dt != xt->dt || wt->rank != 4 || wt->dims[1] * p->group != p->c || wt->dims[0] % p->group)
    return diag_node(d, g, n, "W is %s; expected %s [M, %lld, kH, kW] with M a multiple of group %lld",
                     type_str(wt, ts, sizeof ts), dt_name(xt->dt), (long long)(p->c / p->group), (long long)p->group);
  p->oc = wt->dims[0], p->kh = wt->dims[2], p->kw = wt->dims[3];
  int64_t ks[2];
  if (!window_ints_attr(n, "kernel_shape", 2, 0, 1, ks, why) || !window_ints_attr(n, "strides", 2, 1, 1, p->st, why) ||
      !window_ints_attr(n, "dilations", 2, 1, 1, p->dil, why) || !window_ints_attr(n, "pads", 4, 0, 0, p->pad, why))
    return diag_node(d, g, n, "%s", why);
  if (attr_get(n, "kernel_shape") && (ks[0] != p->kh || ks[1] != p->kw))
    return diag_node(d, g, n, "kernel_shape is %lldx%lld; expected W's %lldx%lld", (long long)ks[0],
                     (long long)ks[1], (long long)p->kh, (long long)p->kw);
  p->oh = (p->h + p->pad[0] + p->pad[2] - (p->kh - 1) * p->dil[0] - 1) / p->st[0] + 1;
  p->ow = (p->w + p->pad[1] + p->pad[3] - (p->kw - 1) * p->dil[1] - 1) / p->st[1] + 1;
  int64_t taps = p->kh * p->kw;
  if (p->oh < 1 || p->ow < 1)
    return diag_node(d, g, n, "the dilated kernel is larger than the padded image; expected at least one output");
  if (ot->dt != xt->dt || ot->rank != 4 || ot->dims[0] != p->n || ot->dims[1] != p->og * 2 * taps ||
      ot->dims[2] != p->oh || ot->dims[3] != p->ow)
    return diag_node(d, g, n, "offset is %s; expected %s [%lld, %lld, %lld, %lld] (offset groups x 2 x taps, "
                     "the output size)", type_str(ot, ts, sizeof ts), dt_name(xt->dt), (long long)p->n,
                     (long long)(p->og * 2 * taps), (long long)p->oh, (long long)p->ow);
  if (b && (b->type.dt != xt->dt || type_numel(&b->type) != p->oc || b->type.rank != 1))
    return diag_node(d, g, n, "B is %s; expected %s [%lld]", type_str(&b->type, ts, sizeof ts), dt_name(xt->dt),
                     (long long)p->oc);
  if (m && (m->type.dt != xt->dt || m->type.rank != 4 || m->type.dims[0] != p->n || m->type.dims[1] != p->og * taps ||
            m->type.dims[2] != p->oh || m->type.dims[3] != p->ow))
    return diag_node(d, g, n, "mask is %s; expected %s [%lld, %lld, %lld, %lld]", type_str(&m->type, ts, sizeof ts),
                     dt_name(xt->dt), (long long)p->n, (long long)(p->og * taps), (long long)p->oh, (long long)p->ow);
  if (p->c * taps > DEFORM_COL_MAX)
    return diag_node(d, g, n, "%lld channels x %lld taps; expected at most %d sampled values per position",
                     (long long)p->c, (long long)taps, DEFORM_COL_MAX);
  p->bias = b != NULL;
  p->mask = m != NULL;
  return true;
}

bool deform_conv_infer(Graph *g, Node *n, Diag *d) {
  Deform p;
  if (!deform_plan(g, n, &p, d))
    return false;
  Type t = {.dt = node_in(g, n, 0)->type.dt, .rank = 4, .dims = {p.n, p.oc, p.oh, p.ow}};
  node_out(g, n, 0)->type = t;
  return true;
}

/* Bilinear sample of plane x (h x w) at (y, xx), zeros outside. */
static double bilinear(DType dt, const void *x, int64_t base, int64_t h, int64_t w, double y, double xx) {
  y = fmin(fmax(y, -2), (double)h + 1); /* far points (and NaN) to just outside, as the C does */
  xx = fmin(fmax(xx, -2), (double)w + 1);
  double fy = floor(y), fx = floor(xx), ly = y - fy, lx = xx - fx, acc = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      double r = fy + a, c = fx + b;
      if (r < 0 || r >= (double)h || c < 0 || c >= (double)w)
        continue;
      acc += (a ? ly : 1 - ly) * (b ? lx : 1 - lx) * el_get_f(dt, x, base + (int64_t)r * w + (int64_t)c);
    }
  return acc;
}

bool deform_conv_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  const Type *xt = &in[0].type, *wt = &in[1].type;
  DType dt = xt->dt;
  Deform p = {.n = xt->dims[0], .c = xt->dims[1], .h = xt->dims[2], .w = xt->dims[3], .oc = wt->dims[0],
              .kh = wt->dims[2], .kw = wt->dims[3], .oh = out[0].type.dims[2], .ow = out[0].type.dims[3]};
  char why[WHY];
  p.group = attr_int(n, "group", 1);
  p.og = attr_int(n, "offset_group", 1);
  KILN_ASSERT(window_ints_attr(n, "strides", 2, 1, 1, p.st, why) && window_ints_attr(n, "dilations", 2, 1, 1, p.dil, why) &&
              window_ints_attr(n, "pads", 4, 0, 0, p.pad, why));
  bool bias = n->nin > 3 && in[3].data, mask = n->nin > 4 && in[4].data;
  int64_t taps = p.kh * p.kw, icg = p.c / p.group, ocg = p.oc / p.group, cog = p.c / p.og;
  for (int64_t b = 0; b < p.n; b++)
    for (int64_t m = 0; m < p.oc; m++)
      for (int64_t i = 0; i < p.oh; i++)
        for (int64_t j = 0; j < p.ow; j++) {
          double acc = bias ? el_get_f(dt, in[3].data, m) : 0;
          for (int64_t cc = 0; cc < icg; cc++) {
            int64_t c = (m / ocg) * icg + cc, og = c / cog;
            for (int64_t k = 0; k < taps; k++) {
              int64_t kh = k / p.kw, kw = k % p.kw, pos = i * p.ow + j, sp = p.oh * p.ow;
              double oy = el_get_f(dt, in[2].data, ((b * p.og + og) * 2 * taps + 2 * k) * sp + pos);
              double ox = el_get_f(dt, in[2].data, ((b * p.og + og) * 2 * taps + 2 * k + 1) * sp + pos);
              double y = (double)(i * p.st[0] - p.pad[0] + kh * p.dil[0]) + oy;
              double x = (double)(j * p.st[1] - p.pad[1] + kw * p.dil[1]) + ox;
              double v = bilinear(dt, in[0].data, (b * p.c + c) * p.h * p.w, p.h, p.w, y, x);
              if (mask)
                v *= el_get_f(dt, in[4].data, ((b * p.og + og) * taps + k) * sp + pos);
              acc += v * el_get_f(dt, in[1].data, (m * icg + cc) * taps + k);
            }
          }
          el_set_f(dt, out[0].data, ((b * p.oc + m) * p.oh + i) * p.ow + j, acc);
        }
  return true;
}

bool deform_conv_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  Deform p;
  Diag dg = {0};
  KILN_ASSERT(deform_plan(g, n, &p, &dg));
  DType dt = node_in(g, n, 0)->type.dt;
  const char *T = dt_ctype(dt), *FL = emit_mathfn(e, dt, "floor");
  int64_t taps = p.kh * p.kw, sp = p.oh * p.ow, icg = p.c / p.group, ocg = p.oc / p.group, cog = p.c / p.og;
  const char *X = emit_ref(e, n->in[0]), *W = emit_ref(e, n->in[1]), *OF = emit_ref(e, n->in[2]);
  const char *B = p.bias ? emit_ref(e, n->in[3]) : NULL, *M = p.mask ? emit_ref(e, n->in[4]) : NULL;
  const char *Y = emit_ref(e, n->out[0]);
#define L(v) emit_double_literal(e, dt, v)
  emit_line(e, "/* y[n][m][i][j] = %sthe sum over the %lld input channels of m's group and the %lldx%lld taps k of",
            p.bias ? "b[m] + " : "", (long long)icg, (long long)p.kh, (long long)p.kw);
  emit_line(e, " *   w[m][c][k] * x[n][c] sampled bilinearly (zeros outside) at tap k's grid point moved by");
  emit_line(e, " *   offset[n][group of c][k]%s; per position: the taps' corners, the sampled column, the dots */",
            p.mask ? ", times mask[n][group of c][k]" : "");
  emit_line(e, "for (int n = 0; n < %lld; n++)", (long long)p.n);
  emit_line(e, "  for (int pos = 0; pos < %lld; pos++) {", (long long)sp);
  e->indent += 2;
  emit_line(e, "const int i = pos / %lld, j = pos %% %lld;", (long long)p.ow, (long long)p.ow);
  emit_line(e, "int at[%lld][%lld][4]; /* per offset group and tap: the 4 corners' offsets in a plane */",
            (long long)p.og, (long long)taps);
  emit_line(e, "%s wt[%lld][%lld][4]; /* ... and weights (0: outside x)%s */", T, (long long)p.og, (long long)taps,
            p.mask ? ", times the mask" : "");
  emit_line(e, "for (int g = 0; g < %lld; g++)", (long long)p.og);
  emit_line(e, "  for (int k = 0; k < %lld; k++) {", (long long)taps);
  e->indent += 2;
  emit_line(e, "const %s *off = %s + ((n * %lld + g) * %lld + 2 * k) * %lld + pos;", T, OF, (long long)p.og,
            (long long)(2 * taps), (long long)sp);
  emit_line(e, "%s y = (%s)(i * %lld - %lld + k / %lld * %lld) + off[0];", T, T, (long long)p.st[0], (long long)p.pad[0],
            (long long)p.kw, (long long)p.dil[0]);
  emit_line(e, "%s x = (%s)(j * %lld - %lld + k %% %lld * %lld) + off[%lld];", T, T, (long long)p.st[1],
            (long long)p.pad[1], (long long)p.kw, (long long)p.dil[1], (long long)sp);
  /* far points (and NaN) to just outside, so that the int conversions are defined */
  emit_line(e, "y = y > %s ? (y < %s ? y : %s) : %s;", L(-2), L((double)p.h + 1), L((double)p.h + 1), L(-2));
  emit_line(e, "x = x > %s ? (x < %s ? x : %s) : %s;", L(-2), L((double)p.w + 1), L((double)p.w + 1), L(-2));
  emit_line(e, "const %s fy = %s(y), fx = %s(x), ly = y - fy, lx = x - fx;", T, FL, FL);
  emit_line(e, "const int y0 = (int)fy, x0 = (int)fx;");
  if (p.mask)
    emit_line(e, "const %s mk = %s[((n * %lld + g) * %lld + k) * %lld + pos];", T, M, (long long)p.og, (long long)taps,
              (long long)sp);
  emit_line(e, "for (int t = 0; t < 4; t++) {");
  e->indent++;
  emit_line(e, "const int r = y0 + t / 2, c = x0 + t %% 2;");
  emit_line(e, "const int inside = r >= 0 && r < %lld && c >= 0 && c < %lld;", (long long)p.h, (long long)p.w);
  emit_line(e, "at[g][k][t] = inside ? r * %lld + c : 0;", (long long)p.w);
  emit_line(e, "wt[g][k][t] = inside ? (t / 2 ? ly : 1 - ly) * (t %% 2 ? lx : 1 - lx)%s : %s;", p.mask ? " * mk" : "",
            L(0));
  e->indent--;
  emit_line(e, "}");
  e->indent -= 2;
  emit_line(e, "  }");
  emit_line(e, "%s col[%lld]; /* [c][k]: x[n][c] sampled at tap k */", T, (long long)(p.c * taps));
  emit_line(e, "for (int c = 0; c < %lld; c++) {", (long long)p.c);
  e->indent++;
  emit_line(e, "const %s *xc = %s + (n * %lld + c) * %lld;", T, X, (long long)p.c, (long long)(p.h * p.w));
  emit_line(e, "const int g = c / %lld;", (long long)cog);
  emit_line(e, "for (int k = 0; k < %lld; k++)", (long long)taps);
  emit_line(e, "  col[c * %lld + k] = wt[g][k][0] * xc[at[g][k][0]] + wt[g][k][1] * xc[at[g][k][1]] +", (long long)taps);
  emit_line(e, "      wt[g][k][2] * xc[at[g][k][2]] + wt[g][k][3] * xc[at[g][k][3]];");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "for (int m = 0; m < %lld; m++) {", (long long)p.oc);
  e->indent++;
  emit_line(e, "const %s *wm = %s + m * %lld, *cm = col + m / %lld * %lld;", T, W, (long long)(icg * taps), (long long)ocg,
            (long long)(icg * taps));
  emit_line(e, "%s acc = %s;", T, p.bias ? arena_printf(g->arena, "%s[m]", B) : L(0));
  emit_line(e, "for (int q = 0; q < %lld; q++)", (long long)(icg * taps));
  emit_line(e, "  acc += wm[q] * cm[q];");
  emit_line(e, "%s[(n * %lld + m) * %lld + pos] = acc;", Y, (long long)p.oc, (long long)sp);
  e->indent--;
  emit_line(e, "}");
  e->indent -= 2;
  emit_line(e, "  }");
#undef L
  return true;
}
