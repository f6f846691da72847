/* roi_align.c — RoiAlign (opsets 10, 16, 22; family `roi_align`), the
 * region pooling of two-stage detectors (Mask R-CNN's heads).
 *
 * Each region of interest rois[r] = (x1, y1, x2, y2), scaled by
 * spatial_scale (and moved half a pixel back with the half_pixel
 * coordinate mode, opset 16's default; opset 10 and output_half_pixel
 * instead make the region at least 1x1), is cut into output_height x
 * output_width bins; each bin averages (avg) or takes the largest of
 * (max) its sampling_ratio^2 bilinear samples, ceil(region / bins) per
 * dim when sampling_ratio is 0. Samples beyond a pixel outside X count
 * as 0; max takes the largest weighted corner of each sample, as ONNX
 * Runtime and the ONNX reference (op_roi_align.py) do. The regions and
 * batch_indices are data, so the sample count per bin is found at run
 * time; the kernel computes each sample once for all channels. A batch
 * index outside X gives zeros; an adaptive sample count is capped at
 * ROI_MAX_SAMPLES per dim. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"
#include "window.h"

#define ROI_MAX_SAMPLES 4096 /* adaptive samples per bin and dim, at most */

typedef struct RoiParams {
  bool max, half_pixel;
  int64_t oh, ow, sr;
  double scale;
} RoiParams;

static bool roi_params(const Node *n, RoiParams *p, char *why) {
  const char *m = attr_str(n, "mode", "avg");
  if (strcmp(m, "avg") && strcmp(m, "max"))
    return window_fail(why, "mode is '%s'; expected avg or max", m);
  p->max = !strcmp(m, "max");
  const char *ct = n->opset >= 16 ? attr_str(n, "coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
    return window_fail(why, "coordinate_transformation_mode is '%s'; expected half_pixel or output_half_pixel", ct);
  p->half_pixel = !strcmp(ct, "half_pixel");
  p->oh = attr_int(n, "output_height", 1);
  p->ow = attr_int(n, "output_width", 1);
  p->sr = attr_int(n, "sampling_ratio", 0);
  p->scale = attr_float(n, "spatial_scale", 1.0);
  if (p->oh < 1 || p->ow < 1 || p->oh > ATTR_MAX || p->ow > ATTR_MAX)
    return window_fail(why, "output_height %lld and output_width %lld; expected positive sizes", (long long)p->oh,
                       (long long)p->ow);
  if (p->sr < 0 || p->sr > ROI_MAX_SAMPLES)
    return window_fail(why, "sampling_ratio is %lld; expected 0 (adaptive) to %d", (long long)p->sr, ROI_MAX_SAMPLES);
  return true;
}

bool roi_align_infer(Graph *g, Node *n, Diag *d) {
  const Value *x = node_in(g, n, 0), *r = node_in(g, n, 1), *b = node_in(g, n, 2);
  RoiParams p;
  char why[WHY], ts[128];
  if (!roi_params(n, &p, why))
    return diag_node(d, g, n, "%s", why);
  if ((x->type.dt != DT_F32 && x->type.dt != DT_F64) || x->type.rank != 4)
    return diag_node(d, g, n, "X is %s; expected f32 or f64 [N, C, H, W]", type_str(&x->type, ts, sizeof ts));
  if (r->type.dt != x->type.dt || r->type.rank != 2 || r->type.dims[1] != 4)
    return diag_node(d, g, n, "rois is %s; expected %s [num_rois, 4]", type_str(&r->type, ts, sizeof ts),
                     dt_name(x->type.dt));
  if (!dt_is_int(b->type.dt) || b->type.rank != 1 || b->type.dims[0] != r->type.dims[0])
    return diag_node(d, g, n, "batch_indices is %s; expected i64 [%lld], one per region",
                     type_str(&b->type, ts, sizeof ts), (long long)r->type.dims[0]);
  if (x->type.dims[2] < 1 || x->type.dims[3] < 1)
    return diag_node(d, g, n, "X has an empty image; expected H, W >= 1");
  Type t = {.dt = x->type.dt, .rank = 4, .dims = {r->type.dims[0], x->type.dims[1], p.oh, p.ow}};
  if (!type_size_ok(&t))
    return diag_node(d, g, n, "the output would have too many elements; expected a smaller shape");
  node_out(g, n, 0)->type = t;
  return true;
}

/* Bilinear corners and weights of the sample at (y, x); false: outside. */
static bool sample(double y, double x, int64_t h, int64_t w, int64_t *pos, double *wt) {
  if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)w)
    return false;
  y = y < 0 ? 0 : y;
  x = x < 0 ? 0 : x;
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= h - 1) {
    yh = yl = h - 1;
    y = (double)yl;
  } else {
    yh = yl + 1;
  }
  if (xl >= w - 1) {
    xh = xl = w - 1;
    x = (double)xl;
  } else {
    xh = xl + 1;
  }
  double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
  pos[0] = yl * w + xl;
  pos[1] = yl * w + xh;
  pos[2] = yh * w + xl;
  pos[3] = yh * w + xh;
  wt[0] = hy * hx;
  wt[1] = hy * lx;
  wt[2] = ly * hx;
  wt[3] = ly * lx;
  return true;
}

static int64_t grid_count(const RoiParams *p, double len, int64_t bins) {
  if (p->sr > 0)
    return p->sr;
  double g = ceil(len / (double)bins);
  return !(g > 0) ? 0 : g > ROI_MAX_SAMPLES ? ROI_MAX_SAMPLES : (int64_t)g;
}

bool roi_align_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  RoiParams p;
  char why[WHY];
  KILN_ASSERT(roi_params(n, &p, why));
  const Type *xt = &in[0].type;
  DType dt = xt->dt;
  int64_t nb = xt->dims[0], c = xt->dims[1], h = xt->dims[2], w = xt->dims[3], nr = in[1].type.dims[0];
  double off = p.half_pixel ? 0.5 : 0;
  for (int64_t r = 0; r < nr; r++) {
    int64_t b = el_get_i(in[2].type.dt, in[2].data, r), ob = r * c * p.oh * p.ow;
    for (int64_t i = 0; i < c * p.oh * p.ow; i++)
      el_set_f(dt, out[0].data, ob + i, 0);
    if (b < 0 || b >= nb)
      continue;
#define ROI(k) el_get_f(dt, in[1].data, r * 4 + (k))
    double sw = ROI(0) * p.scale - off, sh = ROI(1) * p.scale - off;
    double rw = ROI(2) * p.scale - off - sw, rh = ROI(3) * p.scale - off - sh;
#undef ROI
    if (!p.half_pixel) {
      rw = fmax(rw, 1);
      rh = fmax(rh, 1);
    }
    double bh = rh / (double)p.oh, bw = rw / (double)p.ow;
    int64_t gh = grid_count(&p, rh, p.oh), gw = grid_count(&p, rw, p.ow), cnt = gh * gw > 1 ? gh * gw : 1;
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t ph = 0; ph < p.oh; ph++)
        for (int64_t pw = 0; pw < p.ow; pw++) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; iy++)
            for (int64_t ix = 0; ix < gw; ix++) {
              int64_t pos[4] = {0};
              double wt[4] = {0}, v[4];
              sample(sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh,
                     sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw, h, w, pos, wt);
              for (int k = 0; k < 4; k++)
                v[k] = wt[k] * el_get_f(dt, in[0].data, (b * c + ch) * h * w + pos[k]);
              if (!p.max)
                acc += v[0] + v[1] + v[2] + v[3];
              else {
                double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
                acc = first || m > acc ? m : acc;
                first = false;
              }
            }
          el_set_f(dt, out[0].data, ob + (ch * p.oh + ph) * p.ow + pw, p.max ? acc : acc / (double)cnt);
        }
  }
  return true;
}

bool roi_align_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  RoiParams p;
  char why[WHY];
  KILN_ASSERT(roi_params(n, &p, why));
  const Type *xt = &node_in(g, n, 0)->type;
  DType dt = xt->dt;
  const char *T = dt_ctype(dt), *BT = dt_ctype(node_in(g, n, 2)->type.dt);
  int64_t nb = xt->dims[0], c = xt->dims[1], h = xt->dims[2], w = xt->dims[3];
  int64_t nr = node_in(g, n, 1)->type.dims[0], bins = p.oh * p.ow;
  if (nr * c == 0) {
    emit_line(e, "/* no regions or no channels: nothing to compute */");
    return true;
  }
  const char *X = emit_ref(e, n->in[0]), *R = emit_ref(e, n->in[1]), *B = emit_ref(e, n->in[2]),
             *Y = emit_ref(e, n->out[0]);
#define L(v) emit_double_literal(e, dt, v)
  emit_line(e, "/* y[r][c] = the %lldx%lld bins of region rois[r] of x[batch_indices[r]][c], each the %s of its",
            (long long)p.oh, (long long)p.ow, p.max ? "max (largest weighted corner)" : "mean");
  emit_line(e, " * bilinear samples (%s per dim); coordinates %s; a bad batch index gives zeros */",
            p.sr > 0 ? emit_int(e, p.sr) : "ceil(region / bins)",
            p.half_pixel ? "half_pixel" : "output_half_pixel (regions at least 1x1)");
  emit_line(e, "for (int r = 0; r < %lld; r++) {", (long long)nr);
  e->indent++;
  emit_line(e, "const %s b = %s[r];", BT, B);
  emit_line(e, "%s *yr = %s + r * %lld;", T, Y, (long long)(c * bins));
  emit_line(e, "for (int i = 0; i < %lld; i++)", (long long)(c * bins));
  emit_line(e, "  yr[i] = %s;", L(0));
  emit_line(e, "if (b < 0 || b >= %lld)", (long long)nb);
  emit_line(e, "  continue;");
  emit_line(e, "const %s *xb = %s + b * %lld;", T, X, (long long)(c * h * w));
  emit_line(e, "const %s *roi = %s + r * 4;", T, R);
  const char *off = p.half_pixel ? arena_printf(g->arena, " - %s", L(0.5)) : "";
  emit_line(e, "const %s sw = roi[0] * %s%s, sh = roi[1] * %s%s;", T, L(p.scale), off, L(p.scale), off);
  if (p.half_pixel) {
    emit_line(e, "const %s rw = roi[2] * %s%s - sw, rh = roi[3] * %s%s - sh;", T, L(p.scale), off, L(p.scale), off);
  } else {
    emit_line(e, "%s rw = roi[2] * %s - sw, rh = roi[3] * %s - sh;", T, L(p.scale), L(p.scale));
    emit_line(e, "rw = rw > %s ? rw : %s;", L(1), L(1));
    emit_line(e, "rh = rh > %s ? rh : %s;", L(1), L(1));
  }
  emit_line(e, "const %s bh = rh / %s, bw = rw / %s;", T, L((double)p.oh), L((double)p.ow));
  if (p.sr > 0) {
    emit_line(e, "const int gh = %lld, gw = %lld;", (long long)p.sr, (long long)p.sr);
  } else { /* ceil(len / bins), capped (and 0 for a NaN region) */
    const char *ceil_fn = emit_mathfn(e, dt, "ceil");
    emit_line(e, "const %s fh = %s(rh / %s), fw = %s(rw / %s);", T, ceil_fn, L((double)p.oh), ceil_fn, L((double)p.ow));
    emit_line(e, "const int gh = fh > 0 ? (fh < %d ? (int)fh : %d) : 0;", ROI_MAX_SAMPLES, ROI_MAX_SAMPLES);
    emit_line(e, "const int gw = fw > 0 ? (fw < %d ? (int)fw : %d) : 0;", ROI_MAX_SAMPLES, ROI_MAX_SAMPLES);
  }
  emit_line(e, "for (int ph = 0; ph < %lld; ph++)", (long long)p.oh);
  emit_line(e, "  for (int pw = 0; pw < %lld; pw++) {", (long long)p.ow);
  e->indent += 2;
  emit_line(e, "%s *yb = yr + ph * %lld + pw; /* this bin of every channel: stride %lld */", T, (long long)p.ow,
            (long long)bins);
  emit_line(e, "for (int iy = 0; iy < gh; iy++)");
  emit_line(e, "  for (int ix = 0; ix < gw; ix++) {");
  e->indent += 2;
  emit_line(e, "%s y = sh + (%s)ph * bh + ((%s)iy + %s) * bh / (%s)gh;", T, T, T, L(0.5), T);
  emit_line(e, "%s x = sw + (%s)pw * bw + ((%s)ix + %s) * bw / (%s)gw;", T, T, T, L(0.5), T);
  emit_line(e, "int p1 = 0, p2 = 0, p3 = 0, p4 = 0;");
  emit_line(e, "%s w1 = %s, w2 = %s, w3 = %s, w4 = %s; /* 0: beyond a pixel outside x */", T, L(0), L(0), L(0), L(0));
  emit_line(e, "if (y >= %s && y <= %s && x >= %s && x <= %s) {", L(-1), L((double)h), L(-1), L((double)w));
  e->indent++;
  emit_line(e, "y = y > 0 ? y : 0;");
  emit_line(e, "x = x > 0 ? x : 0;");
  emit_line(e, "int yl = (int)y, xl = (int)x, yh = yl + 1, xh = xl + 1;");
  emit_line(e, "if (yl >= %lld) {", (long long)(h - 1));
  emit_line(e, "  yh = yl = %lld;", (long long)(h - 1));
  emit_line(e, "  y = (%s)yl;", T);
  emit_line(e, "}");
  emit_line(e, "if (xl >= %lld) {", (long long)(w - 1));
  emit_line(e, "  xh = xl = %lld;", (long long)(w - 1));
  emit_line(e, "  x = (%s)xl;", T);
  emit_line(e, "}");
  emit_line(e, "const %s ly = y - (%s)yl, lx = x - (%s)xl, hy = 1 - ly, hx = 1 - lx;", T, T, T);
  emit_line(e, "p1 = yl * %lld + xl;", (long long)w);
  emit_line(e, "p2 = yl * %lld + xh;", (long long)w);
  emit_line(e, "p3 = yh * %lld + xl;", (long long)w);
  emit_line(e, "p4 = yh * %lld + xh;", (long long)w);
  emit_line(e, "w1 = hy * hx;");
  emit_line(e, "w2 = hy * lx;");
  emit_line(e, "w3 = ly * hx;");
  emit_line(e, "w4 = ly * lx;");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "for (int c = 0; c < %lld; c++) {", (long long)c);
  e->indent++;
  emit_line(e, "const %s *xc = xb + c * %lld;", T, (long long)(h * w));
  if (!p.max) {
    emit_line(e, "yb[c * %lld] += w1 * xc[p1] + w2 * xc[p2] + w3 * xc[p3] + w4 * xc[p4];", (long long)bins);
  } else {
    emit_line(e, "%s m = w1 * xc[p1], v = w2 * xc[p2];", T);
    emit_line(e, "m = v > m ? v : m;");
    emit_line(e, "v = w3 * xc[p3];");
    emit_line(e, "m = v > m ? v : m;");
    emit_line(e, "v = w4 * xc[p4];");
    emit_line(e, "m = v > m ? v : m;");
    emit_line(e, "if ((iy == 0 && ix == 0) || m > yb[c * %lld])", (long long)bins);
    emit_line(e, "  yb[c * %lld] = m;", (long long)bins);
  }
  e->indent--;
  emit_line(e, "}");
  e->indent -= 2;
  emit_line(e, "  }");
  if (!p.max) {
    emit_line(e, "const %s cnt = gh * gw > 1 ? (%s)(gh * gw) : %s;", T, T, L(1));
    emit_line(e, "for (int c = 0; c < %lld; c++)", (long long)c);
    emit_line(e, "  yb[c * %lld] /= cnt;", (long long)bins);
  }
  e->indent -= 2;
  emit_line(e, "  }");
  e->indent--;
  emit_line(e, "}");
#undef L
  return true;
}
