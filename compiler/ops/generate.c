/* generate.c — ops whose output is made from attributes and shapes rather
 * than from input data: Constant, ConstantOfShape, Range, Shape and Size.
 *
 * All of them are known at compile time. Constant, Shape and Size set their
 * output's data in _infer, so the fold pass drops them; ConstantOfShape and
 * Range have constant inputs and are folded through _eval unless the result
 * is over the fold size cap. Their _emit is what runs then: a fill loop, a
 * ramp loop, or a short table. When a node survives with its output already
 * a constant (folding switched off), the emitter has made that output a
 * static const array and _emit writes nothing. */
#include <math.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* Largest tensor a generator may describe (elements), as for initializers. */
#define MAX_GEN_NUMEL ((int64_t)1 << 34)

/* True when every output of n is already a constant array (see the top). */
static bool emit_if_constant(Emit *e, const Node *n) {
  for (int j = 0; j < n->nout; j++)
    if (!e->g->vals[n->out[j]].data)
      return false;
  emit_line(e, "/* '%s' is a constant array, written at compile time */",
            e->g->vals[n->out[0]].name);
  return true;
}

/* y[k] = table[k], one assignment a line: for short outputs (Shape, Size). */
static void emit_assign_table(Emit *e, int out, const void *data) {
  const Type *t = &e->g->vals[out].type;
  int64_t cnt = type_numel(t);
  for (int64_t k = 0; k < cnt; k++)
    emit_line(e, "%s[%lld] = %s;", emit_ref(e, out), (long long)k,
              emit_literal(e, t->dt, data, k));
}

/* ---- Constant ---------------------------------------------------------------- */

/* The one attribute holding the value, and the type it describes; false +
 * diag when there is not exactly one, or it is a string. */
static bool constant_attr(Graph *g, const Node *n, const Attr **out, Type *t, Diag *d) {
  static const struct { const char *name; AttrKind kind; } forms[] = {
      {"value", ATTR_TENSOR}, {"sparse_value", ATTR_TENSOR}, {"value_float", ATTR_FLOAT},
      {"value_floats", ATTR_FLOATS}, {"value_int", ATTR_INT}, {"value_ints", ATTR_INTS},
      {"value_string", ATTR_STRING}, {"value_strings", ATTR_STRINGS},
  };
  if (n->nattr != 1)
    return diag_node(d, g, n, "%d attributes; expected exactly one of value, sparse_value, "
                     "value_float(s), value_int(s)", n->nattr);
  const Attr *a = &n->attrs[0];
  int f;
  for (f = 0; f < KILN_COUNT(forms); f++)
    if (!strcmp(a->name, forms[f].name))
      break;
  if (f == KILN_COUNT(forms))
    return diag_node(d, g, n, "attribute '%s' is unknown; expected value, sparse_value, "
                     "value_float(s) or value_int(s)", a->name);
  if (a->kind != forms[f].kind)
    return diag_node(d, g, n, "attribute '%s' has the wrong kind; expected %s", a->name,
                     forms[f].kind == ATTR_TENSOR ? "a tensor" : "the kind its name says");
  *t = (Type){0};
  switch (a->kind) {
  case ATTR_TENSOR: *t = a->t->type; break;
  case ATTR_FLOAT: *t = (Type){DT_F32, 0, {0}}; break;
  case ATTR_INT: *t = (Type){DT_I64, 0, {0}}; break;
  case ATTR_FLOATS: *t = (Type){DT_F32, 1, {a->n}}; break;
  case ATTR_INTS: *t = (Type){DT_I64, 1, {a->n}}; break;
  default:
    return diag_node(d, g, n, "attribute '%s': string tensors are not supported; expected a "
                     "numeric or bool value", a->name);
  }
  *out = a;
  return true;
}

/* Write the attribute's value into dst (of the type constant_attr gave). */
static void constant_fill(const Attr *a, const Type *t, void *dst) {
  switch (a->kind) {
  case ATTR_TENSOR:
    if (type_bytes(t))
      memcpy(dst, a->t->data, type_bytes(t));
    break;
  case ATTR_FLOAT: ((float *)dst)[0] = (float)a->f; break;
  case ATTR_INT: ((int64_t *)dst)[0] = a->i; break;
  case ATTR_FLOATS:
    for (int k = 0; k < a->n; k++)
      ((float *)dst)[k] = (float)a->floats[k];
    break;
  case ATTR_INTS:
    for (int k = 0; k < a->n; k++)
      ((int64_t *)dst)[k] = a->ints[k];
    break;
  default: KILN_ASSERT(!"constant_fill: kind rejected by constant_attr"); break;
  }
}

bool constant_infer(Graph *g, Node *n, Diag *d) {
  const Attr *a = NULL;
  Value *y = node_out(g, n, 0);
  if (!constant_attr(g, n, &a, &y->type, d))
    return false;
  y->data = arena_alloc(g->arena, type_bytes(&y->type) + 1);
  constant_fill(a, &y->type, y->data);
  return true;
}

bool constant_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)in;
  (void)d;
  constant_fill(&n->attrs[0], &out[0].type, out[0].data);
  return true;
}

bool constant_emit(Emit *e, const Node *n) {
  if (emit_if_constant(e, n))
    return true;
  const Value *y = &e->g->vals[n->out[0]];
  void *buf = arena_alloc(e->g->arena, type_bytes(&y->type) + 1);
  constant_fill(&n->attrs[0], &y->type, buf);
  emit_assign_table(e, n->out[0], buf);
  return true;
}

/* ---- ConstantOfShape ---------------------------------------------------------- */

bool constant_of_shape_infer(Graph *g, Node *n, Diag *d) {
  int64_t *dims;
  int len;
  if (!const_input_ints(g, n, 0, "shape", &dims, &len, d))
    return false;
  if (len > MAX_RANK)
    return diag_node(d, g, n, "shape has %d dims; expected at most %d", len, MAX_RANK);
  Type t = {DT_F32, len, {0}};
  int64_t numel = 1;
  for (int i = 0; i < len; i++) {
    if (dims[i] < 0 || dims[i] > MAX_GEN_NUMEL)
      return diag_node(d, g, n, "shape[%d] is %lld; expected a size from 0 to %lld", i,
                       (long long)dims[i], (long long)MAX_GEN_NUMEL);
    t.dims[i] = dims[i];
    numel *= dims[i];
    if (numel > MAX_GEN_NUMEL)
      return diag_node(d, g, n, "the shape has more than %lld elements; expected a smaller tensor",
                       (long long)MAX_GEN_NUMEL);
  }
  const Attr *v = attr_get(n, "value");
  if (v) {
    if (v->kind != ATTR_TENSOR || type_numel(&v->t->type) != 1)
      return diag_node(d, g, n, "attribute 'value' is not a one-element tensor; expected one "
                       "element giving the fill value and type");
    t.dt = v->t->type.dt;
  }
  node_out(g, n, 0)->type = t;
  return true;
}

bool constant_of_shape_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)in;
  (void)d;
  const Attr *v = attr_get(n, "value");
  if (!v)
    return true; /* f32 zeros: out is zeroed */
  size_t es = dt_size(out[0].type.dt);
  int64_t cnt = type_numel(&out[0].type);
  for (int64_t i = 0; i < cnt; i++)
    memcpy((char *)out[0].data + i * (int64_t)es, v->t->data, es);
  return true;
}

bool constant_of_shape_emit(Emit *e, const Node *n) {
  if (emit_if_constant(e, n))
    return true;
  const Value *y = &e->g->vals[n->out[0]];
  const Attr *v = attr_get(n, "value");
  int64_t cnt = type_numel(&y->type);
  bool zero = true;
  for (size_t k = 0; v && k < dt_size(y->type.dt); k++)
    zero = zero && ((const unsigned char *)v->t->data)[k] == 0;
  if (cnt == 0)
    return true;
  if (zero) {
    emit_line(e, "memset(%s, 0, %zu);", emit_ref(e, n->out[0]), type_bytes(&y->type));
    return true;
  }
  emit_line(e, "for (int64_t i = 0; i < %lld; i++)", (long long)cnt);
  emit_line(e, "  %s[i] = %s;", emit_ref(e, n->out[0]), emit_literal(e, y->type.dt, v->t->data, 0));
  return true;
}

/* ---- Range ------------------------------------------------------------------- */

/* Element count max(ceil((limit - start) / delta), 0), computed in the
 * inputs' type as the ONNX reference does: in float for f32, in double for
 * f64, exactly for integers (through long double, which holds every int64
 * and uint64). -1 when delta is 0, -2 when the count is NaN or too large. */
static int64_t range_count(DType dt, const void *s, const void *l, const void *dl) {
  double c;
  if (dt == DT_F32) {
    float fs = ((const float *)s)[0], fl = ((const float *)l)[0], fd = ((const float *)dl)[0];
    if (fd == 0)
      return -1;
    c = ceilf((fl - fs) / fd);
  } else if (dt_is_float(dt)) {
    double ds = el_get_f(dt, s, 0), dl_ = el_get_f(dt, l, 0), dd = el_get_f(dt, dl, 0);
    if (dd == 0)
      return -1;
    c = ceil((dl_ - ds) / dd);
  } else {
    bool u = dt_is_unsigned_int(dt);
    long double ls = u ? (long double)el_get_u(dt, s, 0) : (long double)el_get_i(dt, s, 0);
    long double ll = u ? (long double)el_get_u(dt, l, 0) : (long double)el_get_i(dt, l, 0);
    long double ld = u ? (long double)el_get_u(dt, dl, 0) : (long double)el_get_i(dt, dl, 0);
    if (ld == 0)
      return -1;
    c = (double)ceill((ll - ls) / ld);
  }
  if (isnan(c) || c > (double)MAX_GEN_NUMEL)
    return -2;
  return c > 0 ? (int64_t)c : 0;
}

bool range_infer(Graph *g, Node *n, Diag *d) {
  static const char *names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; i++) {
    Value *v = node_in(g, n, i);
    if (!v)
      return diag_node(d, g, n, "input '%s' is empty; expected a scalar", names[i]);
    if (!v->data)
      return diag_node(d, g, n, "input '%s' (%s) is computed at run time; expected a compile-time "
                       "constant because it fixes the output length", v->name, names[i]);
    if (type_numel(&v->type) != 1 || v->type.rank > 1)
      return diag_node(d, g, n, "input '%s' (%s) has %lld elements; expected a scalar", v->name,
                       names[i], (long long)type_numel(&v->type));
  }
  Value *s = node_in(g, n, 0), *l = node_in(g, n, 1), *dl = node_in(g, n, 2);
  if (s->type.dt != l->type.dt || s->type.dt != dl->type.dt)
    return diag_node(d, g, n, "start, limit and delta are %s, %s and %s; expected one type",
                     dt_name(s->type.dt), dt_name(l->type.dt), dt_name(dl->type.dt));
  if (s->type.dt == DT_BOOL)
    return diag_node(d, g, n, "inputs are bool; expected a numeric type");
  int64_t cnt = range_count(s->type.dt, s->data, l->data, dl->data);
  if (cnt == -1)
    return diag_node(d, g, n, "delta '%s' is 0; expected a nonzero step", dl->name);
  if (cnt < 0)
    return diag_node(d, g, n, "the range is not finite or has more than %lld elements; expected "
                     "finite start, limit and delta", (long long)MAX_GEN_NUMEL);
  node_out(g, n, 0)->type = (Type){s->type.dt, 1, {cnt}};
  return true;
}

bool range_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n;
  (void)d;
  DType dt = out[0].type.dt;
  int64_t cnt = type_numel(&out[0].type);
  for (int64_t i = 0; i < cnt; i++) {
    if (dt == DT_F32) {
      float s = ((const float *)in[0].data)[0], dl = ((const float *)in[2].data)[0];
      ((float *)out[0].data)[i] = s + (float)i * dl;
    } else if (dt_is_float(dt)) {
      double s = el_get_f(dt, in[0].data, 0), dl = el_get_f(dt, in[2].data, 0);
      el_set_f(dt, out[0].data, i, s + (double)i * dl);
    } else {
      uint64_t s = el_get_u(dt, in[0].data, 0), dl = el_get_u(dt, in[2].data, 0);
      el_set_u(dt, out[0].data, i, s + (uint64_t)i * dl); /* wraps like the type's arithmetic */
    }
  }
  return true;
}

bool range_emit(Emit *e, const Node *n) {
  if (emit_if_constant(e, n))
    return true;
  Graph *g = e->g;
  const Value *s = node_in(g, n, 0), *dl = node_in(g, n, 2), *y = &g->vals[n->out[0]];
  DType dt = y->type.dt;
  const char *ct = dt_ctype(dt), *yr = emit_ref(e, n->out[0]);
  int64_t cnt = type_numel(&y->type);
  if (cnt == 0)
    return true;
  emit_line(e, "for (int64_t i = 0; i < %lld; i++)", (long long)cnt);
  if (dt_is_float(dt)) {
    emit_line(e, "  %s[i] = %s + (%s)i * %s;", yr, emit_literal(e, dt, s->data, 0), ct,
              emit_literal(e, dt, dl->data, 0));
  } else if (dt_is_signed_int(dt)) {
    int64_t v[2] = {el_get_i(dt, s->data, 0), el_get_i(dt, dl->data, 0)};
    emit_line(e, "  %s[i] = (%s)(%s + i * %s);", yr, ct, emit_literal(e, DT_I64, v, 0),
              emit_literal(e, DT_I64, v, 1));
  } else {
    uint64_t v[2] = {el_get_u(dt, s->data, 0), el_get_u(dt, dl->data, 0)};
    emit_line(e, "  %s[i] = (%s)(%s + (uint64_t)i * %s);", yr, ct, emit_literal(e, DT_U64, v, 0),
              emit_literal(e, DT_U64, v, 1));
  }
  return true;
}

/* ---- Shape, Size -------------------------------------------------------------- */

/* The output of Shape (dims[start:end] of x, start/end from opset 15,
 * negative counting from the end, clamped to [0, rank]) or Size (numel of
 * x), as i64 values into vals; returns how many. */
static int shape_values(const Node *n, const Type *x, int64_t vals[MAX_RANK]) {
  if (n->op == OP_SIZE) {
    vals[0] = type_numel(x);
    return 1;
  }
  int64_t r = x->rank, lo = attr_int(n, "start", 0), hi = attr_int(n, "end", r);
  lo = lo < 0 ? lo + r : lo;
  hi = hi < 0 ? hi + r : hi;
  lo = lo < 0 ? 0 : lo > r ? r : lo;
  hi = hi < 0 ? 0 : hi > r ? r : hi;
  int k = 0;
  for (int64_t i = lo; i < hi; i++)
    vals[k++] = x->dims[i];
  return k;
}

bool shape_infer(Graph *g, Node *n, Diag *d) {
  (void)d;
  int64_t vals[MAX_RANK] = {0};
  int k = shape_values(n, &node_in(g, n, 0)->type, vals);
  Value *y = node_out(g, n, 0);
  y->type = n->op == OP_SIZE ? (Type){DT_I64, 0, {0}} : (Type){DT_I64, 1, {k}};
  y->data = arena_dup(g->arena, vals, sizeof(int64_t) * (size_t)(k ? k : 1));
  return true;
}

bool shape_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  int64_t vals[MAX_RANK] = {0};
  int k = shape_values(n, &in[0].type, vals);
  memcpy(out[0].data, vals, sizeof(int64_t) * (size_t)k);
  return true;
}

bool shape_emit(Emit *e, const Node *n) {
  if (emit_if_constant(e, n))
    return true;
  int64_t vals[MAX_RANK] = {0};
  shape_values(n, &e->g->vals[n->in[0]].type, vals);
  emit_assign_table(e, n->out[0], vals);
  return true;
}
