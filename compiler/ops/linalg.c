/* linalg.c — linear algebra beyond products: Det (opset 11; opset 22 adds
 * no semantics), the determinant of each square matrix in the last two
 * dims.
 *
 * Gaussian elimination with partial pivoting, in double, on a copy of each
 * matrix (a local array of the fixed size in the C: no allocation, so the
 * matrix side is capped at DET_MAX_SIDE); _eval runs the same steps in the
 * same order, so both agree to the last bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* A 128 x 128 matrix of doubles is 128 KiB of stack. */
#define DET_MAX_SIDE 128

bool det_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Type *t = &x->type;
  if (t->dt != DT_F32 && t->dt != DT_F64)
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(t->dt));
  if (t->rank < 2 || t->dims[t->rank - 1] != t->dims[t->rank - 2])
    return diag_node(d, g, n, "input '%s' has rank %d; expected [..., M, M], square matrices in "
                     "the last two dims", x->name, t->rank);
  if (t->dims[t->rank - 1] > DET_MAX_SIDE)
    return diag_node(d, g, n, "matrices are %lld x %lld; expected at most %d x %d (each is "
                     "eliminated in a stack copy)", (long long)t->dims[t->rank - 1],
                     (long long)t->dims[t->rank - 1], DET_MAX_SIDE, DET_MAX_SIDE);
  Type y = *t;
  y.rank -= 2;
  node_out(g, n, 0)->type = y;
  return true;
}

/* The determinant of the m x m matrix a (destroyed). */
static double det_eliminate(double *a, int64_t m) {
  double det = 1;
  for (int64_t c = 0; c < m; c++) {
    int64_t p = c;
    for (int64_t r = c + 1; r < m; r++)
      if (fabs(a[r * m + c]) > fabs(a[p * m + c]))
        p = r;
    if (fpclassify(a[p * m + c]) == FP_ZERO) /* not ==: clang's -Wfloat-equal */
      return 0;
    if (p != c) {
      for (int64_t k = c; k < m; k++) {
        double t = a[c * m + k];
        a[c * m + k] = a[p * m + k];
        a[p * m + k] = t;
      }
      det = -det;
    }
    det *= a[c * m + c];
    for (int64_t r = c + 1; r < m; r++) {
      double f = a[r * m + c] / a[c * m + c];
      for (int64_t k = c + 1; k < m; k++)
        a[r * m + k] -= f * a[c * m + k];
    }
  }
  return det;
}

bool det_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  const Type *t = &in[0].type;
  int64_t m = t->dims[t->rank - 1], cnt = type_numel(&out[0].type);
  double *a = malloc(sizeof(double) * (size_t)(m * m + 1));
  if (!a)
    return diag_error(d, "node '%s' (Det): out of memory", n->name);
  for (int64_t b = 0; b < cnt; b++) {
    for (int64_t i = 0; i < m * m; i++)
      a[i] = el_get_f(t->dt, in[0].data, b * m * m + i);
    el_set_f(t->dt, out[0].data, b, det_eliminate(a, m));
  }
  free(a);
  return true;
}

bool det_emit(Emit *e, const Node *n) {
  const Type *t = &node_in(e->g, n, 0)->type;
  long long m = (long long)t->dims[t->rank - 1], cnt = (long long)type_numel(&node_out(e->g, n, 0)->type);
  if (cnt == 0)
    return true;
  const char *X = emit_ref(e, n->in[0]), *Y = emit_ref(e, n->out[0]), *T = dt_ctype(t->dt);
  emit_line(e, "/* the determinant of each %lld x %lld matrix: elimination with partial "
            "pivoting, in double */", m, m);
  emit_line(e, "for (int64_t b = 0; b < %lld; b++) {", cnt);
  emit_line(e, "  double a[%lld];", m * m > 0 ? m * m : 1);
  emit_line(e, "  for (int64_t i = 0; i < %lld; i++)", m * m);
  emit_line(e, "    a[i] = (double)%s[b * %lld + i];", X, m * m);
  emit_line(e, "  double det = 1;");
  emit_line(e, "  for (int64_t c = 0; c < %lld; c++) {", m);
  emit_line(e, "    int64_t p = c;");
  emit_line(e, "    for (int64_t r = c + 1; r < %lld; r++)", m);
  emit_line(e, "      if (fabs(a[r * %lld + c]) > fabs(a[p * %lld + c]))", m, m);
  emit_line(e, "        p = r;");
  emit_line(e, "    if (fpclassify(a[p * %lld + c]) == FP_ZERO) {", m);
  emit_line(e, "      det = 0;");
  emit_line(e, "      break;");
  emit_line(e, "    }");
  emit_line(e, "    if (p != c) {");
  emit_line(e, "      for (int64_t k = c; k < %lld; k++) {", m);
  emit_line(e, "        double t = a[c * %lld + k];", m);
  emit_line(e, "        a[c * %lld + k] = a[p * %lld + k];", m, m);
  emit_line(e, "        a[p * %lld + k] = t;", m);
  emit_line(e, "      }");
  emit_line(e, "      det = -det;");
  emit_line(e, "    }");
  emit_line(e, "    det *= a[c * %lld + c];", m);
  emit_line(e, "    for (int64_t r = c + 1; r < %lld; r++) {", m);
  emit_line(e, "      double f = a[r * %lld + c] / a[c * %lld + c];", m, m);
  emit_line(e, "      for (int64_t k = c + 1; k < %lld; k++)", m);
  emit_line(e, "        a[r * %lld + k] -= f * a[c * %lld + k];", m, m);
  emit_line(e, "    }");
  emit_line(e, "  }");
  emit_line(e, "  %s[b] = (%s)det;", Y, T);
  emit_line(e, "}");
  return true;
}

/* Elimination: about 2/3 m^3 multiply-adds a matrix. */
int64_t det_flops(const Graph *g, const Node *n) {
  const Type *t = &gval(g, n->in[0])->type;
  int64_t m = t->dims[t->rank - 1];
  return 2 * m * m * m / 3 * type_numel(&gval(g, n->out[0])->type);
}
