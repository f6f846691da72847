/* mvn.c — MeanVarianceNormalization (opset 9; 13 only widens its types):
 * y = (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over the `axes`
 * (default [0, 2, 3]), ONNX's function body as one op.
 *
 * The input splits into groups (one per combination of the kept axes) of
 * R elements (the reduced axes); the element offsets of a group's start
 * and of each reduced element within it are two tables computed at
 * compile time, so any axes give the same two loops. Sums are in double,
 * in _eval and in the C alike. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

#define MVN_EPSILON 1e-9

/* kept[g] and red[r]: offsets of group g and of reduced element r (arena
 * memory when a is given, else malloc'd into one block at *kept). */
typedef struct MvnGeom {
  int64_t groups, per;
  int64_t *kept, *red;
} MvnGeom;

static bool mvn_axes(const Node *n, int rank, bool red[MAX_RANK], char *err, size_t errn) {
  const Attr *a = attr_get(n, "axes");
  static const int64_t dflt[] = {0, 2, 3};
  const int64_t *ax = a ? a->ints : dflt;
  int na = a ? a->n : 3;
  memset(red, 0, sizeof(bool) * MAX_RANK);
  for (int k = 0; k < na; k++) {
    int d;
    if (!axis_norm(ax[k], rank, &d) || red[d]) {
      snprintf(err, errn, "axes entry %lld is out of range or repeated; expected distinct axes in "
               "[%d, %d)%s", (long long)ax[k], -rank, rank, a ? "" : " (the default is [0, 2, 3])");
      return false;
    }
    red[d] = true;
  }
  return true;
}

static bool mvn_geom(Arena *a, const Node *n, const Type *t, MvnGeom *q, char *err, size_t errn) {
  bool red[MAX_RANK];
  if (!mvn_axes(n, t->rank, red, err, errn))
    return false;
  int64_t st[MAX_RANK], s = 1;
  for (int d = t->rank - 1; d >= 0; d--)
    st[d] = s, s *= t->dims[d];
  q->groups = q->per = 1;
  for (int d = 0; d < t->rank; d++)
    *(red[d] ? &q->per : &q->groups) *= t->dims[d];
  size_t bytes = sizeof(int64_t) * (size_t)(q->groups + q->per);
  q->kept = a ? arena_alloc(a, bytes) : malloc(bytes);
  if (!q->kept) {
    snprintf(err, errn, "out of memory");
    return false;
  }
  q->red = q->kept + q->groups;
  for (int pass = 0; pass < 2; pass++) { /* 0: kept offsets, 1: reduced offsets */
    int64_t *out = pass ? q->red : q->kept, cnt = pass ? q->per : q->groups;
    for (int64_t i = 0; i < cnt; i++) {
      int64_t r = i, off = 0;
      for (int d = t->rank - 1; d >= 0; d--)
        if (red[d] == (pass == 1)) {
          off += r % t->dims[d] * st[d];
          r /= t->dims[d];
        }
      out[i] = off;
    }
  }
  return true;
}

bool mvn_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (x->type.dt != DT_F32 && x->type.dt != DT_F64)
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(x->type.dt));
  bool red[MAX_RANK];
  char err[256];
  if (!mvn_axes(n, x->type.rank, red, err, sizeof err))
    return diag_node(d, g, n, "%s", err);
  node_out(g, n, 0)->type = x->type;
  return true;
}

bool mvn_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  MvnGeom q;
  char err[256];
  DType dt = in[0].type.dt;
  if (!mvn_geom(NULL, n, &in[0].type, &q, err, sizeof err))
    return diag_error(d, "node '%s' (MeanVarianceNormalization): %s", n->name, err);
  for (int64_t g = 0; g < q.groups; g++) {
    double s = 0, s2 = 0;
    for (int64_t r = 0; r < q.per; r++) {
      double v = el_get_f(dt, in[0].data, q.kept[g] + q.red[r]);
      s += v;
      s2 += v * v;
    }
    double mean = s / (double)q.per, var = s2 / (double)q.per - mean * mean;
    double den = sqrt(var > 0 ? var : 0) + MVN_EPSILON;
    for (int64_t r = 0; r < q.per; r++) {
      int64_t i = q.kept[g] + q.red[r];
      el_set_f(dt, out[0].data, i, (el_get_f(dt, in[0].data, i) - mean) / den);
    }
  }
  free(q.kept);
  return true;
}

bool mvn_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  const Type *t = &node_in(g, n, 0)->type;
  MvnGeom q;
  char err[256];
  if (!mvn_geom(g->arena, n, t, &q, err, sizeof err))
    return false;
  if (type_numel(t) == 0)
    return true;
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]), *T = dt_ctype(t->dt);
  const char *K = emit_const_array(e, DT_I64, q.kept, q.groups, "mvn_groups",
                                   "MeanVarianceNormalization: each group's first element");
  const char *R = emit_const_array(e, DT_I64, q.red, q.per, "mvn_members",
                                   "MeanVarianceNormalization: a group's elements, from its first");
  emit_line(e, "/* %lld groups of %lld: y = (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) */",
            (long long)q.groups, (long long)q.per);
  emit_line(e, "for (int64_t g = 0; g < %lld; g++) {", (long long)q.groups);
  emit_line(e, "  const %s *x = %s + %s[g];", T, X, K);
  emit_line(e, "  %s *y = %s + %s[g];", T, Y, K);
  emit_line(e, "  double s = 0, s2 = 0;");
  emit_line(e, "  for (int64_t r = 0; r < %lld; r++) {", (long long)q.per);
  emit_line(e, "    double v = (double)x[%s[r]];", R);
  emit_line(e, "    s += v;");
  emit_line(e, "    s2 += v * v;");
  emit_line(e, "  }");
  emit_line(e, "  double mean = s / %s, var = s2 / %s - mean * mean;",
            emit_double_literal(e, DT_F64, (double)q.per), emit_double_literal(e, DT_F64, (double)q.per));
  emit_line(e, "  double den = sqrt(var > 0 ? var : 0) + %s;", emit_double_literal(e, DT_F64, MVN_EPSILON));
  emit_line(e, "  for (int64_t r = 0; r < %lld; r++)", (long long)q.per);
  emit_line(e, "    y[%s[r]] = (%s)(((double)x[%s[r]] - mean) / den);", R, T, R);
  emit_line(e, "}");
  return true;
}
