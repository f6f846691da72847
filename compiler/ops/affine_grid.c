/* affine_grid.c — AffineGrid (opset 20): the sampling grid GridSample
 * reads, theta [N, 2, 3] applied to the normalised coordinates of an
 * [H, W] image (out [N, H, W, 2]), or theta [N, 3, 4] to those of a
 * [D, H, W] volume (out [N, D, H, W, 3]).
 *
 * Coordinate i of an axis of S points is -1 + (2i + 1) / S (pixel
 * centres), or -1 + 2i / (S - 1) with align_corners (corner pixels at
 * +-1; a single point at -1, as ONNX's reference and PyTorch have it).
 * The output's shape comes from the `size` input, a compile-time
 * constant; theta may be computed at run time. Products are in double. */
#include <stdio.h>
#include <string.h>

#include "../emit.h"
#include "../ops.h"

/* dims: [N, D, H, W] (D = 1 in 2-D), sd: the spatial rank (2 or 3). */
typedef struct GridGeom {
  int64_t dims[4];
  int sd;
  bool align;
} GridGeom;

static bool grid_geom(const Node *n, const Type *theta, const Tensor *size, GridGeom *q, char *err,
                      size_t errn) {
  int64_t ns = type_numel(&size->type);
  if (size->type.rank != 1 || (ns != 4 && ns != 5)) {
    snprintf(err, errn, "size has %lld entries; expected [N, C, H, W] or [N, C, D, H, W]",
             (long long)ns);
    return false;
  }
  int64_t v[5];
  for (int k = 0; k < ns; k++) {
    v[k] = el_get_i(size->type.dt, size->data, k);
    if (v[k] < 0 || v[k] > ((int64_t)1 << 24)) {
      snprintf(err, errn, "size entry %d is %lld; expected 0 to 2^24", k, (long long)v[k]);
      return false;
    }
  }
  q->sd = (int)ns - 2;
  q->align = attr_int(n, "align_corners", 0) != 0;
  q->dims[0] = v[0];
  q->dims[1] = q->sd == 3 ? v[2] : 1;
  q->dims[2] = v[ns - 2];
  q->dims[3] = v[ns - 1];
  if (theta->rank != 3 || theta->dims[0] != v[0] || theta->dims[1] != q->sd ||
      theta->dims[2] != q->sd + 1) {
    char ts[128];
    snprintf(err, errn, "theta is %s; expected [%lld, %d, %d] for a %d-D size",
             type_str(theta, ts, sizeof ts), (long long)v[0], q->sd, q->sd + 1, q->sd);
    return false;
  }
  return true;
}

bool affine_grid_infer(Graph *g, Node *n, Diag *d) {
  Value *theta = node_in(g, n, 0), *size = node_in(g, n, 1);
  int64_t *vals;
  int len;
  if (theta->type.dt != DT_F32 && theta->type.dt != DT_F64)
    return diag_node(d, g, n, "theta '%s' is %s; expected f32 or f64", theta->name,
                     dt_name(theta->type.dt));
  if (!const_input_ints(g, n, 1, "size", &vals, &len, d))
    return false;
  int64_t ac = attr_int(n, "align_corners", 0);
  if (ac != 0 && ac != 1)
    return diag_node(d, g, n, "align_corners is %lld; expected 0 or 1", (long long)ac);
  GridGeom q;
  char err[256];
  Tensor st = {size->type, size->data};
  if (!grid_geom(n, &theta->type, &st, &q, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  Type y = {.dt = theta->type.dt};
  y.dims[y.rank++] = q.dims[0];
  if (q.sd == 3)
    y.dims[y.rank++] = q.dims[1];
  y.dims[y.rank++] = q.dims[2];
  y.dims[y.rank++] = q.dims[3];
  y.dims[y.rank++] = q.sd;
  node_out(g, n, 0)->type = y;
  return true;
}

/* Normalised coordinate i of an axis of s points. */
static double grid_coord(int64_t i, int64_t s, bool align) {
  if (align)
    return s > 1 ? -1 + 2.0 * (double)i / (double)(s - 1) : -1;
  return -1 + (2.0 * (double)i + 1) / (double)s;
}

bool affine_grid_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  GridGeom q;
  char err[256];
  if (!grid_geom(n, &in[0].type, &in[1], &q, err, sizeof err))
    return diag_error(d, "node '%s' (AffineGrid): %s", n->name, err);
  DType dt = in[0].type.dt;
  int sd = q.sd, th = sd * (sd + 1);
  int64_t o = 0;
  for (int64_t b = 0; b < q.dims[0]; b++)
    for (int64_t z = 0; z < q.dims[1]; z++)
      for (int64_t y = 0; y < q.dims[2]; y++)
        for (int64_t x = 0; x < q.dims[3]; x++) {
          double p[4] = {grid_coord(x, q.dims[3], q.align), grid_coord(y, q.dims[2], q.align), 1, 1};
          if (sd == 3)
            p[2] = grid_coord(z, q.dims[1], q.align);
          for (int r = 0; r < sd; r++) {
            double acc = 0;
            for (int c = 0; c <= sd; c++)
              acc += el_get_f(dt, in[0].data, b * th + r * (sd + 1) + c) * p[c];
            el_set_f(dt, out[0].data, o++, acc);
          }
        }
  return true;
}

/* The C of coordinate `var` of an axis of s points, as a double. */
static const char *coord_expr(Emit *e, const char *var, int64_t s, bool align) {
  Arena *a = e->g->arena;
  if (align)
    return s > 1 ? arena_printf(a, "-1 + 2.0 * (double)%s / %s", var,
                                emit_double_literal(e, DT_F64, (double)(s - 1)))
                 : "-1.0";
  return arena_printf(a, "-1 + (2.0 * (double)%s + 1) / %s", var,
                      emit_double_literal(e, DT_F64, (double)s));
}

bool affine_grid_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *theta = node_in(g, n, 0), *size = node_in(g, n, 1);
  GridGeom q;
  char err[256];
  Tensor st = {size->type, size->data};
  if (!grid_geom(n, &theta->type, &st, &q, err, sizeof err))
    return false;
  if (type_numel(&gval(g, n->out[0])->type) == 0)
    return true;
  const char *Th = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]);
  const char *T = dt_ctype(theta->type.dt);
  int sd = q.sd, th = sd * (sd + 1);
  emit_line(e, "/* grid[b, (z,) y, x] = theta[b] * (x, y, (z,) 1), coordinates in [-1, 1]%s */",
            q.align ? ", corners aligned" : "");
  emit_line(e, "%s *out = %s;", T, Y);
  emit_line(e, "for (int64_t b = 0; b < %lld; b++) {", (long long)q.dims[0]);
  emit_line(e, "  const %s *t = %s + b * %d;", T, Th, th);
  emit_line(e, "  for (int64_t z = 0; z < %lld; z++)", (long long)q.dims[1]);
  emit_line(e, "    for (int64_t y = 0; y < %lld; y++)", (long long)q.dims[2]);
  emit_line(e, "      for (int64_t x = 0; x < %lld; x++) {", (long long)q.dims[3]);
  emit_line(e, "        double px = %s, py = %s;", coord_expr(e, "x", q.dims[3], q.align),
            coord_expr(e, "y", q.dims[2], q.align));
  if (sd == 3) {
    emit_line(e, "        double pz = %s;", coord_expr(e, "z", q.dims[1], q.align));
    for (int r = 0; r < 3; r++)
      emit_line(e, "        *out++ = (%s)((double)t[%d] * px + (double)t[%d] * py + (double)t[%d] * pz"
                " + (double)t[%d]);", T, 4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3);
  } else {
    emit_line(e, "        (void)z;");
    for (int r = 0; r < 2; r++)
      emit_line(e, "        *out++ = (%s)((double)t[%d] * px + (double)t[%d] * py + (double)t[%d]);",
                T, 3 * r, 3 * r + 1, 3 * r + 2);
  }
  emit_line(e, "      }");
  emit_line(e, "}");
  return true;
}
