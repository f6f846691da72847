/* rearrange.c — encodings and rearrangements: OneHot (an index becomes a
 * row of off values with one on value, on a new axis), EyeLike (an
 * identity-like matrix shaped like its input) and DepthToSpace /
 * SpaceToDepth (channels moved into blocks of pixels and back).
 *
 * OneHot's depth fixes the output shape, so it must be a compile-time
 * constant; indices wrap by depth when negative, and any index still
 * outside [0, depth) gives a row of off values (ONNX's rule, not an error).
 * DepthToSpace and SpaceToDepth are fixed permutations of a 6-d view of the
 * tensor: _eval and _emit share one description of it (loop dims in output
 * order and the input stride of each). */
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

static void open_loop(Emit *e, const char *var, int64_t n) {
  emit_line(e, "for (int %s = 0; %s < %lld; %s++) {", var, var, (long long)n, var);
  e->indent++;
}

static void close_loop(Emit *e) {
  e->indent--;
  emit_line(e, "}");
}

/* "i * 6 + 1", "i * 6 - 1", "i * 6": a term plus a signed constant. */
static const char *plus_const(Arena *a, const char *term, int64_t c) {
  if (c == 0)
    return term;
  return arena_printf(a, "%s %c %lld", term, c < 0 ? '-' : '+', (long long)(c < 0 ? -c : c));
}

/* ---- OneHot ---------------------------------------------------------------- */

/* Largest depth kiln accepts: bounds the output and keeps depth + 1 exact
 * in every index type's arithmetic. */
#define MAX_DEPTH (INT64_C(1) << 31)

/* The constant depth input: one number of any numeric type, truncated to an
 * integer as ONNX casts it. */
static bool onehot_depth(Graph *g, Node *n, int64_t *depth, Diag *d) {
  const Value *v = node_in(g, n, 1);
  if (!v->data)
    return diag_node(d, g, n, "depth '%s' is computed at run time; expected a compile-time "
                     "constant because it fixes the output shape", v->name);
  if (type_numel(&v->type) != 1 || v->type.dt == DT_BOOL)
    return diag_node(d, g, n, "depth '%s' is %s with %lld elements; expected one number", v->name,
                     dt_name(v->type.dt), (long long)type_numel(&v->type));
  double f = dt_is_float(v->type.dt) ? el_get_f(v->type.dt, v->data, 0) : 0;
  if (dt_is_float(v->type.dt) && !(f >= 1 && f < (double)MAX_DEPTH + 1))
    return diag_node(d, g, n, "depth is %g; expected 1 to %lld", f, (long long)MAX_DEPTH);
  *depth = el_get_i(v->type.dt, v->data, 0);
  if (*depth < 1 || *depth > MAX_DEPTH)
    return diag_node(d, g, n, "depth is %lld; expected 1 to %lld", (long long)*depth,
                     (long long)MAX_DEPTH);
  return true;
}

/* The depth axis of the output (rank r + 1), normalised. */
static bool onehot_axis(const Node *n, int rank, int *axis) {
  return axis_norm(attr_int(n, "axis", -1), rank + 1, axis);
}

bool onehot_infer(Graph *g, Node *n, Diag *d) {
  Value *ix = node_in(g, n, 0), *vals = node_in(g, n, 2);
  int64_t depth = 0;
  int axis, r = ix->type.rank;
  if (ix->type.dt == DT_BOOL)
    return diag_node(d, g, n, "indices '%s' are bool; expected a numeric type", ix->name);
  if (type_numel(&vals->type) != 2 || vals->type.rank != 1)
    return diag_node(d, g, n, "values '%s' have %lld elements in rank %d; expected [off, on]",
                     vals->name, (long long)type_numel(&vals->type), vals->type.rank);
  if (r + 1 > MAX_RANK)
    return diag_node(d, g, n, "output rank %d exceeds %d; expected a smaller rank", r + 1,
                     MAX_RANK);
  if (!onehot_axis(n, r, &axis))
    return diag_node(d, g, n, "axis %lld out of range; expected [%d, %d]",
                     (long long)attr_int(n, "axis", -1), -(r + 1), r);
  if (!onehot_depth(g, n, &depth, d))
    return false;
  Type y = {.dt = vals->type.dt, .rank = r + 1};
  for (int k = 0, j = 0; k <= r; k++)
    y.dims[k] = k == axis ? depth : ix->type.dims[j++];
  node_out(g, n, 0)->type = y;
  return true;
}

/* Index i of t as a class in [0, depth), or -1 when it is off every class:
 * negatives wrap by depth; floats truncate toward zero (NaN is off). */
static int64_t onehot_class(const Tensor *t, int64_t i, int64_t depth) {
  int64_t j;
  if (dt_is_float(t->type.dt)) {
    double v = el_get_f(t->type.dt, t->data, i);
    if (!(v > (double)-(depth + 1) && v < (double)depth))
      return -1;
    j = (int64_t)v;
  } else {
    j = el_get_i(t->type.dt, t->data, i);
  }
  if (j < 0)
    j += depth;
  return j >= 0 && j < depth ? j : -1;
}

/* Dims of the output before the depth axis (outer) and after it (inner). */
static void onehot_split(const Type *yt, int axis, int64_t *outer, int64_t *depth, int64_t *inner) {
  *outer = 1, *inner = 1;
  for (int k = 0; k < axis; k++)
    *outer *= yt->dims[k];
  *depth = yt->dims[axis];
  for (int k = axis + 1; k < yt->rank; k++)
    *inner *= yt->dims[k];
}

bool onehot_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  const Type *yt = &out[0].type;
  int axis;
  int64_t outer, depth, inner;
  KILN_ASSERT(onehot_axis(n, in[0].type.rank, &axis));
  onehot_split(yt, axis, &outer, &depth, &inner);
  /* y[o][k][i] = k == class(idx[o][i]) ? on : off */
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t j = onehot_class(&in[0], o * inner + i, depth);
      for (int64_t k = 0; k < depth; k++)
        el_convert(yt->dt, out[0].data, (o * depth + k) * inner + i, in[2].type.dt, in[2].data,
                   k == j ? 1 : 0);
    }
  return true;
}

bool onehot_emit(Emit *e, const Node *n) {
  Arena *a = e->g->arena;
  const Type *it = &gval(e->g, n->in[0])->type, *yt = &gval(e->g, n->out[0])->type;
  int axis;
  int64_t outer, depth, inner;
  if (!onehot_axis(n, it->rank, &axis))
    return false;
  if (type_numel(yt) == 0) {
    emit_line(e, "/* empty output */");
    return true;
  }
  onehot_split(yt, axis, &outer, &depth, &inner);
  const char *T = dt_ctype(yt->dt), *vals = emit_ref(e, n->in[2]);
  emit_line(e, "/* y[o][k][i] = k == idx[o][i] (negatives wrapped by %lld) ? on : off; an index "
               "out of range is all off */", (long long)depth);
  emit_line(e, "const %s off = %s[0], on = %s[1];", T, vals, vals);
  const char *o = outer > 1 ? "o" : "0", *i = inner > 1 ? "i" : "0";
  const char *src = outer > 1 && inner > 1 ? arena_printf(a, "o * %lld + i", (long long)inner)
                    : outer > 1 ? "o" : i;
  if (outer > 1)
    open_loop(e, "o", outer);
  if (inner > 1)
    open_loop(e, "i", inner);
  const char *idx = arena_printf(a, "%s[%s]", emit_ref(e, n->in[0]), src);
  if (dt_is_float(it->dt)) {
    emit_line(e, "%s v = %s;", dt_ctype(it->dt), idx);
    emit_line(e, "int64_t j = v > %lld && v < %lld ? (int64_t)v : %lld; /* truncated; far or NaN: "
                 "off */", (long long)-(depth + 1), (long long)depth, (long long)depth);
  } else {
    emit_line(e, "int64_t j = (int64_t)%s;", idx);
  }
  emit_line(e, "if (j < 0)");
  emit_line(e, "  j += %lld;", (long long)depth);
  open_loop(e, "k", depth);
  const char *row = outer > 1 ? arena_printf(a, "%s * %lld + k", o, (long long)depth) : "k";
  const char *dst = inner > 1 ? arena_printf(a, "(%s) * %lld + i", row, (long long)inner) : row;
  emit_line(e, "%s[%s] = k == j ? on : off;", emit_ref(e, n->out[0]), dst);
  close_loop(e);
  if (inner > 1)
    close_loop(e);
  if (outer > 1)
    close_loop(e);
  return true;
}

/* ---- EyeLike --------------------------------------------------------------- */

bool eyelike_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (x->type.rank != 2)
    return diag_node(d, g, n, "input '%s' has rank %d; expected a 2-D tensor", x->name,
                     x->type.rank);
  Type y = x->type;
  const Attr *dt = attr_get(n, "dtype");
  if (dt) {
    y.dt = dt->kind == ATTR_INT && dt->i > 0 && dt->i < DT_MAX_ ? (DType)dt->i : DT_UNDEF;
    if (!dt_supported(y.dt))
      return diag_node(d, g, n, "dtype %lld is not a type kiln computes with; expected a numeric "
                       "or bool type", (long long)dt->i);
  }
  node_out(g, n, 0)->type = y;
  return true;
}

/* Rows [lo, hi) of an R x C matrix have their diagonal-k element inside. */
static void eye_rows(const Type *t, int64_t k, int64_t *lo, int64_t *hi) {
  int64_t r = t->dims[0], c = t->dims[1];
  *lo = k < 0 ? -k : 0;
  *hi = c - k < r ? c - k : r;
  if (*hi < *lo)
    *hi = *lo;
}

bool eyelike_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)in;
  (void)d;
  const Type *yt = &out[0].type;
  int64_t k = attr_int(n, "k", 0), lo, hi;
  eye_rows(yt, k, &lo, &hi);
  for (int64_t i = lo; i < hi; i++)
    el_set_i(yt->dt, out[0].data, i * yt->dims[1] + i + k, 1);
  return true;
}

bool eyelike_emit(Emit *e, const Node *n) {
  const Type *yt = &gval(e->g, n->out[0])->type;
  int64_t k = attr_int(n, "k", 0), lo, hi;
  if (type_numel(yt) == 0) {
    emit_line(e, "/* empty output */");
    return true;
  }
  eye_rows(yt, k, &lo, &hi);
  const char *y = emit_ref(e, n->out[0]);
  emit_line(e, "/* y[i][j] = j - i == %lld */", (long long)k);
  emit_line(e, "memset(%s, 0, %lld * sizeof *%s);", y, (long long)type_numel(yt), y);
  if (hi == lo)
    return true;
  emit_line(e, "for (int i = %lld; i < %lld; i++)", (long long)lo, (long long)hi);
  const char *diag = arena_printf(e->g->arena, "i * %lld", (long long)(yt->dims[1] + 1));
  emit_line(e, "  %s[%s] = 1;", y, plus_const(e->g->arena, diag, k));
  return true;
}

/* ---- DepthToSpace / SpaceToDepth ------------------------------------------- */

/* The op as a 6-d copy: loops over dims[6] in output order (the output is
 * written contiguously) reading the input at sum(i_d * istride[d]). */
typedef struct Perm {
  int64_t dims[6], is[6];
} Perm;

static bool is_crd(const Node *n) { return !strcmp(attr_str(n, "mode", "DCR"), "CRD"); }

static Perm depth_space_perm(const Node *n, const Type *xt) {
  int64_t b = attr_int(n, "blocksize", 0);
  int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];
  if (n->op == OP_SPACETODEPTH) {
    /* y[n][(i * b + j) * C + c][h][w] = x[n][c][h * b + i][w * b + j] */
    int64_t h = H / b, w = W / b;
    return (Perm){{N, b, b, C, h, w}, {C * H * W, W, 1, H * W, b * W, b}};
  }
  int64_t c = C / (b * b), hw = H * W;
  if (is_crd(n)) /* y[n][c][h * b + i][w * b + j] = x[n][(c * b + i) * b + j][h][w] */
    return (Perm){{N, c, H, b, W, b}, {C * hw, b * b * hw, W, b * hw, 1, hw}};
  /* DCR: y[n][c][h * b + i][w * b + j] = x[n][(i * b + j) * c' + c][h][w] */
  return (Perm){{N, c, H, b, W, b}, {C * hw, hw, W, b * c * hw, 1, c * hw}};
}

bool depth_space_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  const Type *xt = &x->type;
  int64_t b = attr_int(n, "blocksize", 0);
  if (xt->rank != 4)
    return diag_node(d, g, n, "input '%s' has rank %d; expected 4 (N, C, H, W)", x->name, xt->rank);
  if (!attr_get(n, "blocksize"))
    return diag_node(d, g, n, "blocksize attribute is missing; expected a positive blocksize");
  if (b < 1 || b > (INT64_C(1) << 20))
    return diag_node(d, g, n, "blocksize is %lld; expected a positive blocksize", (long long)b);
  const char *mode = attr_str(n, "mode", "DCR");
  if (n->op == OP_DEPTHTOSPACE && strcmp(mode, "DCR") && strcmp(mode, "CRD"))
    return diag_node(d, g, n, "mode is '%s'; expected \"DCR\" or \"CRD\"", mode);
  Type y = *xt;
  if (n->op == OP_DEPTHTOSPACE) {
    if (xt->dims[1] % (b * b))
      return diag_node(d, g, n, "%lld channels do not divide into blocks of %lld x %lld; expected "
                       "a multiple of %lld", (long long)xt->dims[1], (long long)b, (long long)b,
                       (long long)(b * b));
    y.dims[1] /= b * b, y.dims[2] *= b, y.dims[3] *= b;
  } else {
    if (xt->dims[2] % b || xt->dims[3] % b)
      return diag_node(d, g, n, "height %lld and width %lld; expected multiples of blocksize %lld",
                       (long long)xt->dims[2], (long long)xt->dims[3], (long long)b);
    y.dims[1] *= b * b, y.dims[2] /= b, y.dims[3] /= b;
  }
  node_out(g, n, 0)->type = y;
  return true;
}

bool depth_space_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  Perm p = depth_space_perm(n, &in[0].type);
  size_t sz = dt_size(in[0].type.dt);
  int64_t cnt = type_numel(&out[0].type);
  for (int64_t e = 0; e < cnt; e++) {
    int64_t src = 0, rem = e;
    for (int k = 5; k >= 0; k--) {
      src += rem % p.dims[k] * p.is[k];
      rem /= p.dims[k];
    }
    memcpy((char *)out[0].data + (size_t)e * sz, (const char *)in[0].data + (size_t)src * sz, sz);
  }
  return true;
}

/* "i0 * 8 + i1 * 2 + i2" for strides st over loop dims (stride 0 or a dim
 * of 1: no term). */
static const char *loop_index(Arena *a, int rank, const int64_t *dims, const int64_t *st) {
  Buf b = {0};
  for (int d = 0; d < rank; d++) {
    if (dims[d] == 1 || st[d] == 0)
      continue;
    if (b.len)
      buf_puts(&b, " + ");
    buf_printf(&b, st[d] == 1 ? "i%d" : "i%d * %lld", d, (long long)st[d]);
  }
  const char *r = arena_strdup(a, b.len ? b.s : "0");
  buf_free(&b);
  return r;
}

bool depth_space_emit(Emit *e, const Node *n) {
  Arena *a = e->g->arena;
  const Type *xt = &gval(e->g, n->in[0])->type;
  if (type_numel(xt) == 0) {
    emit_line(e, "/* empty tensor */");
    return true;
  }
  Perm p = depth_space_perm(n, xt);
  /* output strides of the 6-d loop dims, then merge neighbours that are
   * contiguous on both sides and drop dims of one */
  int64_t os[6], s = 1;
  for (int d = 5; d >= 0; d--)
    os[d] = s, s *= p.dims[d];
  int64_t md[6], mo[6], mi[6];
  int r = 0;
  for (int d = 0; d < 6; d++) {
    if (p.dims[d] == 1)
      continue;
    if (r > 0 && mo[r - 1] == os[d] * p.dims[d] && mi[r - 1] == p.is[d] * p.dims[d]) {
      md[r - 1] *= p.dims[d], mo[r - 1] = os[d], mi[r - 1] = p.is[d];
      continue;
    }
    md[r] = p.dims[d], mo[r] = os[d], mi[r] = p.is[d];
    r++;
  }
  int64_t b = attr_int(n, "blocksize", 0);
  if (n->op == OP_SPACETODEPTH)
    emit_line(e, "/* y[n][(i * %lld + j) * C + c][h][w] = x[n][c][h * %lld + i][w * %lld + j] */",
              (long long)b, (long long)b, (long long)b);
  else if (is_crd(n))
    emit_line(e, "/* CRD: y[n][c][h * %lld + i][w * %lld + j] = "
                 "x[n][(c * %lld + i) * %lld + j][h][w] */",
              (long long)b, (long long)b, (long long)b, (long long)b);
  else
    emit_line(e, "/* DCR: y[n][c][h * %lld + i][w * %lld + j] = "
                 "x[n][(i * %lld + j) * C' + c][h][w] */",
              (long long)b, (long long)b, (long long)b);
  for (int d = 0; d < r; d++)
    open_loop(e, arena_printf(a, "i%d", d), md[d]);
  emit_line(e, "%s[%s] = %s[%s];", emit_ref(e, n->out[0]), loop_index(a, r, md, mo),
            emit_ref(e, n->in[0]), loop_index(a, r, md, mi));
  for (int d = 0; d < r; d++)
    close_loop(e);
  return true;
}
