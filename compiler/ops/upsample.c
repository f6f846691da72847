/* upsample.c — Upsample (opset 7 with `scales` an attribute, 9 with it a
 * constant input; deprecated from 10 in favour of Resize, which it equals
 * with asymmetric coordinates): nearest mode, y[i] = x[floor(i / scale)]
 * on each axis, an output of floor(dim * scale).
 *
 * Each axis gets a compile-time table of source offsets (index times the
 * axis's stride in x), and the C is one loop per axis adding them up, so
 * any rank and any scales (fractions too) take the same code. Linear mode
 * is refused with the pointer to Resize. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../emit.h"
#include "../ops.h"

/* tab[d][i]: offset in x of output index i on axis d. */
typedef struct UpGeom {
  Type out;
  int64_t *tab[MAX_RANK];
} UpGeom;

static bool up_geom(Arena *a, const Node *n, const Type *x, const Tensor *scales, UpGeom *q,
                    char *err, size_t errn) {
  double sc[MAX_RANK];
  int ns;
  if (n->opset < 9) {
    const Attr *at = attr_get(n, "scales");
    ns = at && at->kind == ATTR_FLOATS ? at->n : -1;
    for (int d = 0; d < ns && d < MAX_RANK; d++)
      sc[d] = at->floats[d];
  } else {
    ns = scales && scales->data ? (int)type_numel(&scales->type) : -1;
    for (int d = 0; d < ns && d < MAX_RANK; d++)
      sc[d] = el_get_f(scales->type.dt, scales->data, d);
  }
  if (ns != x->rank) {
    snprintf(err, errn, "scales has %d entries; expected one per axis of the rank-%d input", ns,
             x->rank);
    return false;
  }
  q->out = *x;
  int64_t st[MAX_RANK], s = 1;
  for (int d = x->rank - 1; d >= 0; d--)
    st[d] = s, s *= x->dims[d];
  for (int d = 0; d < x->rank; d++) {
    double o = floor((double)x->dims[d] * sc[d]);
    if (!(sc[d] >= 1) || o > (double)((int64_t)1 << 24)) {
      snprintf(err, errn, "scale of axis %d is %.9g; expected at least 1 (Upsample enlarges), with "
               "an axis of at most 2^24", d, sc[d]);
      return false;
    }
    q->out.dims[d] = (int64_t)o;
    if (!a)
      continue;
    q->tab[d] = arena_alloc(a, sizeof(int64_t) * (size_t)(q->out.dims[d] + 1));
    for (int64_t i = 0; i < q->out.dims[d]; i++) {
      int64_t src = (int64_t)floor((double)i / sc[d]);
      q->tab[d][i] = (src < x->dims[d] ? src : x->dims[d] - 1) * st[d];
    }
  }
  return true;
}

bool upsample_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *s = node_in(g, n, 1);
  const char *mode = attr_str(n, "mode", "nearest");
  if (n->opset < 7)
    return diag_node(d, g, n, "opset %d Upsample (height_scale / width_scale); expected opset 7 "
                     "or later", n->opset);
  if (strcmp(mode, "nearest"))
    return diag_node(d, g, n, "mode is '%s'; expected \"nearest\" (for linear, Resize with "
                     "coordinate_transformation_mode \"asymmetric\" is the same op)", mode);
  if (n->opset >= 9) {
    if (!s)
      return diag_node(d, g, n, "has no scales input; expected one from opset 9");
    if (!dt_is_float(s->type.dt) || !s->data)
      return diag_node(d, g, n, "scales '%s' is %s%s; expected a compile-time constant float "
                       "tensor (it fixes the output's shape)", s->name, dt_name(s->type.dt),
                       s->data ? "" : " computed at run time");
  }
  UpGeom q;
  char err[256];
  Tensor st = s ? (Tensor){s->type, s->data} : (Tensor){{0}, NULL};
  if (!up_geom(NULL, n, &x->type, &st, &q, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = q.out;
  return true;
}

/* Offset in x of output element i (row-major in q->out). */
static int64_t up_src(const UpGeom *q, int64_t i) {
  int64_t off = 0;
  for (int d = q->out.rank - 1; d >= 0; d--) {
    off += q->tab[d][i % q->out.dims[d]];
    i /= q->out.dims[d];
  }
  return off;
}

bool upsample_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  Arena *a = arena_new();
  UpGeom q;
  char err[256];
  bool ok = up_geom(a, n, &in[0].type, n->nin > 1 ? &in[1] : NULL, &q, err, sizeof err);
  size_t sz = dt_size(in[0].type.dt);
  for (int64_t i = 0; ok && i < type_numel(&q.out); i++)
    memcpy((char *)out[0].data + (size_t)i * sz, (const char *)in[0].data + (size_t)up_src(&q, i) * sz, sz);
  arena_free(a);
  if (!ok)
    return diag_error(d, "node '%s' (Upsample): %s", n->name, err);
  return true;
}

bool upsample_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Value *x = node_in(g, n, 0), *s = node_in(g, n, 1);
  UpGeom q;
  char err[256];
  Tensor st = s ? (Tensor){s->type, s->data} : (Tensor){{0}, NULL};
  if (!up_geom(g->arena, n, &x->type, &st, &q, err, sizeof err))
    return false;
  if (type_numel(&q.out) == 0)
    return true;
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]);
  int r = q.out.rank;
  if (r == 0) {
    emit_line(e, "%s[0] = %s[0]; /* a scalar: nothing to enlarge */", Y, X);
    return true;
  }
  const char *tab[MAX_RANK];
  for (int d = 0; d < r; d++)
    tab[d] = emit_const_array(e, DT_I64, q.tab[d], q.out.dims[d], "upsample_src",
                              arena_printf(g->arena, "Upsample: source offset in x per output "
                                           "index of axis %d", d));
  emit_line(e, "/* nearest upsampling: y walks its axes in order, x at the sum of each axis's "
            "source offset */");
  emit_line(e, "%s *y = %s;", dt_ctype(q.out.dt), Y);
  for (int d = 0; d < r; d++) {
    emit_line(e, "%*sfor (int64_t i%d = 0; i%d < %lld; i%d++) {", 2 * d, "", d, d,
              (long long)q.out.dims[d], d);
    if (d == 0)
      emit_line(e, "%*s  int64_t o0 = %s[i0];", 2 * d, "", tab[0]);
    else
      emit_line(e, "%*s  int64_t o%d = o%d + %s[i%d];", 2 * d, "", d, d - 1, tab[d], d);
  }
  emit_line(e, "%*s*y++ = %s[o%d];", 2 * r, "", X, r - 1);
  for (int d = r - 1; d >= 0; d--)
    emit_line(e, "%*s}", 2 * d, "");
  return true;
}
