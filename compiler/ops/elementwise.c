/* elementwise.c — the elementwise ops that are neither unary nor binary:
 * Max Min Sum Mean over any number of inputs (numpy broadcasting over all
 * of them), Where (select by a bool condition), Clip, the conversions Cast
 * and CastLike, and the copies Identity and inference-mode Dropout.
 *
 * _eval computes floats in double, signed integers in int64 and unsigned in
 * uint64, then stores with C's conversion rules (el_set_*). _emit writes the
 * same formulas as C expressions in the inputs' own types. Max and Min
 * propagate NaN like numpy's maximum/minimum. Identity and Dropout are
 * usually removed by the simplify pass; when one survives (its output is a
 * graph output that cannot be renamed) it is a memcpy. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

/* Numpy broadcast of all present inputs from `first` on into *t (dtype of
 * the first one); false + diag naming the input that does not fit. */
static bool broadcast_inputs(Graph *g, const Node *n, int first, Type *t, Diag *d) {
  *t = node_in(g, n, first)->type;
  for (int i = first + 1; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    Type r;
    if (!v)
      continue;
    if (!shape_broadcast(t, &v->type, &r)) {
      char sa[128], sb[128];
      return diag_node(d, g, n, "input '%s' %s does not broadcast with %s (the inputs before it); "
                       "expected equal dims or 1", v->name, type_str(&v->type, sa, sizeof sa),
                       type_str(t, sb, sizeof sb));
    }
    *t = r;
  }
  return true;
}

/* Every present input of n from `first` on has the dtype of input `first`. */
static bool same_dtypes(Graph *g, const Node *n, int first, Diag *d) {
  const Value *a = node_in(g, n, first);
  for (int i = first + 1; i < n->nin; i++) {
    const Value *v = node_in(g, n, i);
    if (v && v->type.dt != a->type.dt)
      return diag_node(d, g, n, "inputs '%s' (%s) and '%s' (%s) differ in type; expected the same "
                       "type", a->name, dt_name(a->type.dt), v->name, dt_name(v->type.dt));
  }
  return true;
}

/* ---- Max Min Sum Mean ------------------------------------------------------ */

bool variadic_infer(Graph *g, Node *n, Diag *d) {
  for (int i = 0; i < n->nin; i++)
    if (!node_in(g, n, i))
      return diag_node(d, g, n, "input %d is empty; expected a tensor in every slot", i);
  if (!same_dtypes(g, n, 0, d))
    return false;
  Value *x = node_in(g, n, 0);
  DType dt = x->type.dt;
  bool minmax = n->op == OP_MAX || n->op == OP_MIN;
  if (!minmax && !dt_is_float(dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name, dt_name(dt));
  if (minmax && dt == DT_BOOL)
    return diag_node(d, g, n, "input '%s' is bool; expected a numeric type", x->name);
  if (minmax && !dt_is_float(dt) && n->opset < 12)
    return diag_node(d, g, n, "input '%s' is %s, but %s takes integers only from opset 12 (the "
                     "model imports opset %d); expected f32 or f64", x->name, dt_name(dt),
                     node_op_name(n), n->opset);
  Type t;
  if (!broadcast_inputs(g, n, 0, &t, d))
    return false;
  if (n->opset < 8)
    for (int i = 1; i < n->nin; i++)
      if (!type_equal(&node_in(g, n, i)->type, &x->type)) {
        char sa[128], sb[128];
        return diag_node(d, g, n, "inputs %s and %s differ in shape; expected equal shapes "
                         "(%s broadcasts only from opset 8; the model imports opset %d)",
                         type_str(&x->type, sa, sizeof sa),
                         type_str(&node_in(g, n, i)->type, sb, sizeof sb), node_op_name(n),
                         n->opset);
      }
  node_out(g, n, 0)->type = t;
  return true;
}

static double combine_f(int op, double acc, double x) {
  switch (op) {
  case OP_MAX: return isnan(acc) || acc >= x ? acc : x;
  case OP_MIN: return isnan(acc) || acc <= x ? acc : x;
  default: return acc + x; /* Sum, Mean */
  }
}

bool variadic_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  const Type *ot = &out[0].type;
  DType dt = in[0].type.dt;
  int64_t cnt = type_numel(ot);
  for (int64_t i = 0; i < cnt; i++) {
    if (dt_is_float(dt)) {
      double acc = el_get_f(dt, in[0].data, bcast_src(ot, &in[0].type, i));
      for (int k = 1; k < n->nin; k++)
        acc = combine_f(n->op, acc, el_get_f(dt, in[k].data, bcast_src(ot, &in[k].type, i)));
      el_set_f(dt, out[0].data, i, n->op == OP_MEAN ? acc / n->nin : acc);
    } else if (dt_is_signed_int(dt)) {
      int64_t acc = el_get_i(dt, in[0].data, bcast_src(ot, &in[0].type, i));
      for (int k = 1; k < n->nin; k++) {
        int64_t x = el_get_i(dt, in[k].data, bcast_src(ot, &in[k].type, i));
        acc = n->op == OP_MAX ? (x > acc ? x : acc) : (x < acc ? x : acc);
      }
      el_set_i(dt, out[0].data, i, acc);
    } else {
      uint64_t acc = el_get_u(dt, in[0].data, bcast_src(ot, &in[0].type, i));
      for (int k = 1; k < n->nin; k++) {
        uint64_t x = el_get_u(dt, in[k].data, bcast_src(ot, &in[k].type, i));
        acc = n->op == OP_MAX ? (x > acc ? x : acc) : (x < acc ? x : acc);
      }
      el_set_u(dt, out[0].data, i, acc);
    }
  }
  return true;
}

/* Sum and Mean are one expression over all inputs; Max and Min fold the
 * inputs into the output one at a time (y = max(x0, x1); y = max(y, x2)...),
 * which keeps each loop's expression short. */
bool variadic_emit(Emit *e, const Node *n) {
  DType dt = e->g->vals[n->out[0]].type.dt;
  if (n->op == OP_SUM || n->op == OP_MEAN) {
    Buf b = {0};
    buf_puts(&b, n->op == OP_MEAN && n->nin > 1 ? "($0" : "$0");
    for (int k = 1; k < n->nin; k++)
      buf_printf(&b, " + $%d", k);
    if (n->op == OP_MEAN && n->nin > 1)
      buf_printf(&b, ") / %s", emit_double_literal(e, dt, n->nin));
    emit_elementwise(e, n, b.s);
    buf_free(&b);
    return true;
  }
  const char *cmp = n->op == OP_MAX ? ">" : "<";
  const char *x = arena_printf(e->g->arena, "%s$0 %s $1 ? $0 : $1",
                               dt_is_float(dt) ? "isnan($0) || " : "", cmp);
  if (n->nin == 1) {
    emit_elementwise(e, n, "$0");
    return true;
  }
  emit_elementwise_vals(e, n->in, 2, n->out[0], x);
  for (int k = 2; k < n->nin; k++) {
    int ins[2] = {n->out[0], n->in[k]};
    emit_elementwise_vals(e, ins, 2, n->out[0], x);
  }
  return true;
}

/* ---- Where ------------------------------------------------------------------ */

bool where_infer(Graph *g, Node *n, Diag *d) {
  Value *c = node_in(g, n, 0), *x = node_in(g, n, 1), *y = node_in(g, n, 2);
  if (!c || !x || !y)
    return diag_node(d, g, n, "an input is empty; expected condition, X and Y");
  if (c->type.dt != DT_BOOL)
    return diag_node(d, g, n, "condition '%s' is %s; expected bool", c->name, dt_name(c->type.dt));
  if (!same_dtypes(g, n, 1, d))
    return false;
  Type t;
  if (!broadcast_inputs(g, n, 0, &t, d))
    return false;
  t.dt = x->type.dt;
  node_out(g, n, 0)->type = t;
  return true;
}

bool where_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n;
  (void)d;
  const Type *ot = &out[0].type;
  size_t es = dt_size(ot->dt);
  int64_t cnt = type_numel(ot);
  for (int64_t i = 0; i < cnt; i++) {
    bool c = el_get_u(DT_BOOL, in[0].data, bcast_src(ot, &in[0].type, i)) != 0;
    const Tensor *s = c ? &in[1] : &in[2];
    int64_t j = bcast_src(ot, &s->type, i);
    memcpy((char *)out[0].data + i * (int64_t)es, (const char *)s->data + j * (int64_t)es, es);
  }
  return true;
}

bool where_emit(Emit *e, const Node *n) {
  emit_elementwise(e, n, "$0 ? $1 : $2");
  return true;
}

/* ---- Clip ------------------------------------------------------------------- */

/* Bounds come from attributes before opset 11 (absent: unbounded in opset
 * 1, the float range in opsets 6-10) and from optional scalar inputs from
 * opset 11 on. */
typedef struct Bounds {
  bool has_lo, has_hi;
  double lo, hi;  /* from attributes (attr_bounds) */
} Bounds;

static Bounds attr_bounds(const Node *n) {
  const double fmax = 3.40282346638528859811704183484516925e+38;
  const Attr *lo = attr_get(n, "min"), *hi = attr_get(n, "max");
  Bounds b = {lo || n->opset >= 6, hi || n->opset >= 6, -fmax, fmax};
  if (lo)
    b.lo = lo->kind == ATTR_INT ? (double)lo->i : lo->f;
  if (hi)
    b.hi = hi->kind == ATTR_INT ? (double)hi->i : hi->f;
  return b;
}

/* lo <= hi for one-element tensors of type dt */
static bool clip_ordered(DType dt, const void *lo, const void *hi) {
  if (dt_is_float(dt))
    return !(el_get_f(dt, lo, 0) > el_get_f(dt, hi, 0));
  if (dt_is_signed_int(dt))
    return el_get_i(dt, lo, 0) <= el_get_i(dt, hi, 0);
  return el_get_u(dt, lo, 0) <= el_get_u(dt, hi, 0);
}

bool clip_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  DType dt = x->type.dt;
  if (dt == DT_BOOL)
    return diag_node(d, g, n, "input '%s' is bool; expected a numeric type", x->name);
  if (!dt_is_float(dt) && n->opset < 12)
    return diag_node(d, g, n, "input '%s' is %s, but Clip takes integers only from opset 12 (the "
                     "model imports opset %d); expected f32 or f64", x->name, dt_name(dt),
                     n->opset);
  if (n->opset < 11 && n->nin > 1)
    return diag_node(d, g, n, "%d inputs; expected 1 before opset 11 (min and max are attributes; "
                     "the model imports opset %d)", n->nin, n->opset);
  for (int i = 1; i < n->nin; i++) {
    Value *b = node_in(g, n, i);
    if (!b)
      continue;
    if (b->type.dt != dt)
      return diag_node(d, g, n, "bound '%s' is %s; expected %s like the input", b->name,
                       dt_name(b->type.dt), dt_name(dt));
    if (type_numel(&b->type) != 1 || b->type.rank > 1)
      return diag_node(d, g, n, "bound '%s' has %lld elements; expected a scalar", b->name,
                       (long long)type_numel(&b->type));
  }
  node_out(g, n, 0)->type = x->type;
  return true;
}

bool clip_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  DType dt = in[0].type.dt;
  int64_t cnt = type_numel(&in[0].type);
  /* both kinds of bound as one-element tensors of the input's type */
  double lo_buf = 0, hi_buf = 0; /* 8 bytes: room for any dtype */
  const void *lo = NULL, *hi = NULL;
  if (n->opset < 11) {
    Bounds b = attr_bounds(n);
    if (b.has_lo)
      el_set_f(dt, &lo_buf, 0, b.lo), lo = &lo_buf;
    if (b.has_hi)
      el_set_f(dt, &hi_buf, 0, b.hi), hi = &hi_buf;
  } else {
    lo = n->nin > 1 ? in[1].data : NULL;
    hi = n->nin > 2 ? in[2].data : NULL;
  }
  for (int64_t i = 0; i < cnt; i++) {
    if (dt_is_float(dt)) {
      double v = el_get_f(dt, in[0].data, i);
      if (lo && v < el_get_f(dt, lo, 0))
        v = el_get_f(dt, lo, 0);
      if (hi && v > el_get_f(dt, hi, 0))
        v = el_get_f(dt, hi, 0);
      el_set_f(dt, out[0].data, i, v);
    } else if (dt_is_signed_int(dt)) {
      int64_t v = el_get_i(dt, in[0].data, i);
      if (lo && v < el_get_i(dt, lo, 0))
        v = el_get_i(dt, lo, 0);
      if (hi && v > el_get_i(dt, hi, 0))
        v = el_get_i(dt, hi, 0);
      el_set_i(dt, out[0].data, i, v);
    } else {
      uint64_t v = el_get_u(dt, in[0].data, i);
      if (lo && v < el_get_u(dt, lo, 0))
        v = el_get_u(dt, lo, 0);
      if (hi && v > el_get_u(dt, hi, 0))
        v = el_get_u(dt, hi, 0);
      el_set_u(dt, out[0].data, i, v);
    }
  }
  return true;
}

/* y = min(max(x, lo), hi), as numpy's clip: when lo > hi every element
 * becomes hi. Bounds known at compile time are written as literals, with
 * lo <= hi arranged so the short form is exact; bounds read at run time get
 * the general form. */
bool clip_emit(Emit *e, const Node *n) {
  Graph *g = e->g;
  DType dt = g->vals[n->in[0]].type.dt;
  double lo_buf = 0, hi_buf = 0; /* compile-time bounds, in dt */
  const void *lo_val = NULL, *hi_val = NULL;
  int ins[3] = {n->in[0]}, nin = 1;
  const char *lo = NULL, *hi = NULL;
  if (n->opset < 11) {
    Bounds b = attr_bounds(n);
    if (b.has_lo)
      el_set_f(dt, &lo_buf, 0, b.lo), lo_val = &lo_buf;
    if (b.has_hi)
      el_set_f(dt, &hi_buf, 0, b.hi), hi_val = &hi_buf;
  } else {
    for (int i = 1; i < n->nin; i++) {
      Value *v = node_in(g, n, i);
      if (v && v->data) {
        *(i == 1 ? &lo_val : &hi_val) = v->data;
      } else if (v) {
        ins[nin] = n->in[i];
        *(i == 1 ? &lo : &hi) = arena_printf(g->arena, "$%d", nin++);
      }
    }
  }
  if (lo_val && hi_val && !clip_ordered(dt, lo_val, hi_val))
    lo_val = hi_val; /* every element becomes hi */
  if (lo_val)
    lo = emit_literal(e, dt, lo_val, 0);
  if (hi_val)
    hi = emit_literal(e, dt, hi_val, 0);
  bool general = lo && hi && (!lo_val || !hi_val); /* lo <= hi not known */
  Arena *a = g->arena;
  const char *x;
  if (general)
    x = arena_printf(a, "$0 < %s ? (%s > %s ? %s : %s) : $0 > %s ? %s : $0", lo, lo, hi, hi, lo,
                     hi, hi);
  else if (lo && hi)
    x = arena_printf(a, "$0 < %s ? %s : $0 > %s ? %s : $0", lo, lo, hi, hi);
  else if (lo)
    x = arena_printf(a, "$0 < %s ? %s : $0", lo, lo);
  else if (hi)
    x = arena_printf(a, "$0 > %s ? %s : $0", hi, hi);
  else
    x = "$0";
  emit_elementwise_vals(e, ins, nin, n->out[0], x);
  return true;
}

/* ---- Cast, CastLike --------------------------------------------------------- */

/* Cast-1 names the target type with a string ("FLOAT"); later opsets use
 * TensorProto's DataType code. */
static DType cast_target_name(const char *s) {
  static const struct { const char *name; DType dt; } names[] = {
      {"FLOAT", DT_F32}, {"DOUBLE", DT_F64}, {"INT8", DT_I8}, {"INT16", DT_I16},
      {"INT32", DT_I32}, {"INT64", DT_I64}, {"UINT8", DT_U8}, {"UINT16", DT_U16},
      {"UINT32", DT_U32}, {"UINT64", DT_U64}, {"BOOL", DT_BOOL}, {"FLOAT16", DT_F16},
      {"BFLOAT16", DT_BF16}, {"STRING", DT_STRING},
  };
  for (int i = 0; i < KILN_COUNT(names); i++)
    if (!strcmp(s, names[i].name))
      return names[i].dt;
  return DT_UNDEF;
}

bool cast_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  DType to;
  if (n->op == OP_CASTLIKE) {
    Value *like = node_in(g, n, 1);
    if (!like)
      return diag_node(d, g, n, "input 'target_type' is empty; expected a tensor of the target "
                       "type");
    to = like->type.dt;
  } else {
    const Attr *a = attr_get(n, "to");
    if (!a)
      return diag_node(d, g, n, "attribute 'to' is missing; expected the target element type");
    if (a->kind == ATTR_STRING)
      to = cast_target_name(a->s);
    else if (a->kind == ATTR_INT)
      to = a->i > 0 && a->i < DT_MAX_ ? (DType)a->i : DT_UNDEF;
    else
      return diag_node(d, g, n, "attribute 'to' is not an int; expected a TensorProto data type");
    if (!dt_supported(to)) {
      char what[64];
      if (a->kind == ATTR_STRING)
        snprintf(what, sizeof what, "'%s'", a->s);
      else if (!strcmp(dt_name(to), "?"))
        snprintf(what, sizeof what, "type code %lld", (long long)a->i);
      else
        snprintf(what, sizeof what, "%s (type code %lld)", dt_name(to), (long long)a->i);
      return diag_node(d, g, n, "Cast to %s is not supported; expected f32, f64, f16, bf16, float8, float4, a "
                       "signed or unsigned integer type or bool (strings are out of kiln's scope)",
                       what);
    }
  }
  const char *mode = attr_str(n, "round_mode", "up");
  if (strcmp(mode, "up") && strcmp(mode, "down") && strcmp(mode, "nearest"))
    return diag_node(d, g, n, "round_mode '%s'; expected up, down or nearest", mode);
  Type t = x->type;
  t.dt = to;
  node_out(g, n, 0)->type = t;
  return true;
}

/* Cast-19's `saturate` (default 1) and Cast-24's `round_mode` ("up",
 * "down", "nearest"; default "up"), which only conversions to float8 and
 * e8m0 read. */
static bool cast_saturate(const Node *n) { return attr_int(n, "saturate", 1) != 0; }

static int cast_round_mode(const Node *n) {
  const char *m = attr_str(n, "round_mode", "up");
  return !strcmp(m, "down") ? MF_DOWN : !strcmp(m, "nearest") ? MF_NEAREST : MF_UP;
}

bool cast_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)d;
  int64_t cnt = type_numel(&in[0].type);
  DType to = out[0].type.dt;
  bool sat = cast_saturate(n);
  int mode = cast_round_mode(n);
  for (int64_t i = 0; i < cnt; i++) {
    if (dt_is_minifloat(to)) {
      unsigned c = minifloat_from_double(to, el_get_f(in[0].type.dt, in[0].data, i), sat, mode);
      if (dt_is_packed(to))
        packed_set(to, out[0].data, i, c);
      else
        ((uint8_t *)out[0].data)[i] = (uint8_t)c;
    } else {
      el_convert(to, out[0].data, i, in[0].type.dt, in[0].data, i);
    }
  }
  return true;
}

/* C's conversion is Cast: floats truncate toward zero into integers, any
 * nonzero (or NaN) becomes true. CastLike reads only input 0. A float8 or
 * e8m0 result takes the node's saturate and round_mode. */
bool cast_emit(Emit *e, const Node *n) {
  EmitStore st = {cast_saturate(n), cast_round_mode(n)};
  emit_elementwise_store(e, n->in, 1, n->out[0], "$0", &st);
  return true;
}

/* ---- Identity, Dropout ------------------------------------------------------ */

static void emit_copy(Emit *e, int from, int to) {
  const char *src = emit_ref(e, from), *dst = emit_ref(e, to);
  size_t bytes = type_bytes(&e->g->vals[to].type);
  if (bytes && strcmp(src, dst))
    emit_line(e, "memcpy(%s, %s, %zu);", dst, src, bytes);
}

bool identity_infer(Graph *g, Node *n, Diag *d) {
  (void)d;
  node_out(g, n, 0)->type = node_in(g, n, 0)->type;
  return true;
}

bool identity_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  (void)n;
  (void)d;
  size_t bytes = type_bytes(&in[0].type);
  if (bytes)
    memcpy(out[0].data, in[0].data, bytes);
  return true;
}

bool identity_emit(Emit *e, const Node *n) {
  emit_copy(e, n->in[0], n->out[0]);
  return true;
}

/* Masks above this size are written by the kernel instead of becoming a
 * constant table in the generated file. */
#define MASK_CONST_LIMIT ((size_t)1 << 20)

/* kiln compiles inference, where Dropout is the identity and its optional
 * mask output is all ones (bool from opset 10, the input's type before).
 * Training mode (is_test=0 before opset 7, training_mode=true from 12)
 * drops at random, which kiln refuses rather than silently ignores —
 * except with a ratio of 0, where training mode drops nothing and is the
 * identity too (ONNX's test_training_dropout_zero_ratio). Both inputs are
 * compile-time constants (ops.def's const_in), so that `kiln check` and
 * `kiln run` take a test's values for them. */
static bool dropout_training(Graph *g, Node *n, const Value *train, Diag *d) {
  if (train->type.dt != DT_BOOL || type_numel(&train->type) != 1)
    return diag_node(d, g, n, "training_mode '%s' is %s with %lld elements; expected a bool "
                     "scalar", train->name, dt_name(train->type.dt), (long long)type_numel(&train->type));
  if (!train->data)
    return diag_node(d, g, n, "training_mode '%s' is computed at run time; expected a constant "
                     "(kiln compiles inference)", train->name);
  if (!el_get_u(DT_BOOL, train->data, 0))
    return true;
  const Value *ratio = node_in(g, n, 1);
  if (!ratio)
    return diag_node(d, g, n, "training_mode is true and ratio is absent (0.5); expected ratio 0 "
                     "(training-mode dropout is random; kiln compiles inference)");
  if (!ratio->data)
    return diag_node(d, g, n, "training_mode is true and ratio '%s' is computed at run time; expected "
                     "a constant ratio 0 (training-mode dropout is random; kiln compiles inference)",
                     ratio->name);
  double r = el_get_f(ratio->type.dt, ratio->data, 0);
  if (r != 0)
    return diag_node(d, g, n, "training_mode is true with ratio %.9g; expected ratio 0 (training-mode "
                     "dropout is random; kiln compiles inference)", r);
  return true;
}

bool dropout_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0);
  if (!dt_is_float(x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected f32 or f64", x->name,
                     dt_name(x->type.dt));
  if (n->opset < 7 && attr_int(n, "is_test", 1) == 0)
    return diag_node(d, g, n, "is_test=0 asks for training-mode dropout; expected is_test=1 (kiln "
                     "compiles inference)");
  if (n->opset < 12 && n->nin > 1)
    return diag_node(d, g, n, "%d inputs; expected 1 before opset 12 (ratio is an attribute; the "
                     "model imports opset %d)", n->nin, n->opset);
  Value *ratio = node_in(g, n, 1), *train = node_in(g, n, 2);
  if (ratio && (!dt_is_float(ratio->type.dt) || type_numel(&ratio->type) != 1))
    return diag_node(d, g, n, "ratio '%s' is %s with %lld elements; expected a float scalar",
                     ratio->name, dt_name(ratio->type.dt), (long long)type_numel(&ratio->type));
  if (train && !dropout_training(g, n, train, d))
    return false;
  node_out(g, n, 0)->type = x->type;
  Value *mask = node_out(g, n, 1);
  if (mask) {
    mask->type = x->type;
    mask->type.dt = n->opset >= 10 ? DT_BOOL : x->type.dt;
    if (type_bytes(&mask->type) <= MASK_CONST_LIMIT) {
      int64_t cnt = type_numel(&mask->type);
      mask->data = arena_alloc(g->arena, type_bytes(&mask->type) + 1);
      for (int64_t i = 0; i < cnt; i++)
        el_set_u(mask->type.dt, mask->data, i, 1);
    }
  }
  return true;
}

bool dropout_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  if (!identity_eval(n, in, out, d))
    return false;
  if (n->nout > 1) {
    int64_t cnt = type_numel(&out[1].type);
    for (int64_t i = 0; i < cnt; i++)
      el_set_u(out[1].type.dt, out[1].data, i, 1);
  }
  return true;
}

bool dropout_emit(Emit *e, const Node *n) {
  emit_copy(e, n->in[0], n->out[0]);
  const Value *mask = node_out(e->g, n, 1);
  if (mask && !mask->data && type_numel(&mask->type) > 0) {
    /* all ones: nothing is dropped at inference */
    emit_line(e, "for (int64_t i = 0; i < %lld; i++)", (long long)type_numel(&mask->type));
    emit_line(e, "  %s[i] = 1;", emit_ref(e, n->out[1]));
  }
  return true;
}

/* ---- FLOP count (ops.def's flops column) -------------------------------------- */

/* Max, Min, Sum, Mean: one op per output element per input after the first. */
int64_t variadic_flops(const Graph *g, const Node *n) {
  return type_numel(&gval(g, n->out[0])->type) * (n->nin > 1 ? n->nin - 1 : 1);
}
