/* unary.c — elementwise ops of one input: y = f(x), same shape.
 *
 * _eval computes in double for float types (then rounds to the output
 * type) and in int64 for integers; _emit writes the same formula as a C
 * expression in the input's own type (expf for f32, exp for f64), expanded
 * into a flat loop by emit_elementwise. Attributes (alpha, beta, ...) keep
 * ONNX's defaults. */
#include <math.h>
#include <string.h>

#include "../emit/emit.h"
#include "../ir/ops.h"

typedef enum { ANY_NUM, FLOAT_ONLY, SIGNED_OR_FLOAT, BOOL_ONLY, INT_ONLY } Domain;

static Domain op_domain(int op) {
  switch (op) {
  case OP_ABS: case OP_SIGN: case OP_SHRINK: return ANY_NUM;
  case OP_NEG: case OP_RELU: return SIGNED_OR_FLOAT;
  case OP_NOT: return BOOL_ONLY;
  case OP_BITWISENOT: return INT_ONLY;
  default: return FLOAT_ONLY;
  }
}

static bool domain_ok(Domain dom, DType dt) {
  switch (dom) {
  case ANY_NUM: return dt != DT_BOOL;
  case SIGNED_OR_FLOAT: return dt_is_float(dt) || dt_is_signed_int(dt);
  case BOOL_ONLY: return dt == DT_BOOL;
  case INT_ONLY: return dt != DT_BOOL && dt_is_int(dt);
  default: return dt_is_float(dt);
  }
}

static const char *domain_name(Domain dom) {
  switch (dom) {
  case ANY_NUM: return "a numeric type";
  case SIGNED_OR_FLOAT: return "a float or signed integer type";
  case BOOL_ONLY: return "bool";
  case INT_ONLY: return "an integer type";
  default: return "f32 or f64";
  }
}

bool unary_infer(Graph *g, Node *n, Diag *d) {
  Value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
  Domain dom = op_domain(n->op);
  if (!domain_ok(dom, x->type.dt))
    return diag_node(d, g, n, "input '%s' is %s; expected %s", x->name, dt_name(x->type.dt),
                     domain_name(dom));
  y->type = x->type;
  if (n->op == OP_ISNAN || n->op == OP_ISINF)
    y->type.dt = DT_BOOL;
  return true;
}

/* ---- the formulas, once for _eval ----------------------------------------- */

static double fsign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }

static double eval_f(const Node *n, double x) {
  double alpha, beta, gamma;
  switch (n->op) {
  case OP_ABS: return fabs(x);
  case OP_ACOS: return acos(x);
  case OP_ACOSH: return acosh(x);
  case OP_ASIN: return asin(x);
  case OP_ASINH: return asinh(x);
  case OP_ATAN: return atan(x);
  case OP_ATANH: return atanh(x);
  case OP_CEIL: return ceil(x);
  case OP_CELU:
    alpha = attr_float(n, "alpha", 1.0);
    return fmax(0, x) + fmin(0, alpha * (exp(x / alpha) - 1));
  case OP_COS: return cos(x);
  case OP_COSH: return cosh(x);
  case OP_ELU:
    alpha = attr_float(n, "alpha", 1.0);
    return x >= 0 ? x : alpha * (exp(x) - 1);
  case OP_ERF: return erf(x);
  case OP_EXP: return exp(x);
  case OP_FLOOR: return floor(x);
  case OP_HARDSIGMOID:
    alpha = attr_float(n, "alpha", 0.2);
    beta = attr_float(n, "beta", 0.5);
    return fmax(0, fmin(1, alpha * x + beta));
  case OP_HARDSWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
  case OP_ISINF:
    return (isinf(x) && ((x > 0 && attr_int(n, "detect_positive", 1)) ||
                         (x < 0 && attr_int(n, "detect_negative", 1))));
  case OP_ISNAN: return isnan(x);
  case OP_LEAKYRELU: return x >= 0 ? x : attr_float(n, "alpha", 0.01) * x;
  case OP_LOG: return log(x);
  case OP_MISH: return x * tanh(log1p(exp(x)));
  case OP_NEG: return -x;
  case OP_RECIPROCAL: return 1 / x;
  case OP_RELU: return x > 0 ? x : 0;
  case OP_ROUND: return nearbyint(x);
  case OP_SELU:
    alpha = attr_float(n, "alpha", 1.67326319217681884765625);
    gamma = attr_float(n, "gamma", 1.05070102214813232421875);
    return x > 0 ? gamma * x : gamma * (alpha * exp(x) - alpha);
  case OP_SHRINK:
    alpha = attr_float(n, "lambd", 0.5);
    beta = attr_float(n, "bias", 0.0);
    return x < -alpha ? x + beta : x > alpha ? x - beta : 0;
  case OP_SIGMOID: return 1 / (1 + exp(-x));
  case OP_SIGN: return fsign(x);
  case OP_SIN: return sin(x);
  case OP_SINH: return sinh(x);
  case OP_SOFTPLUS: return log(1 + exp(x));
  case OP_SOFTSIGN: return x / (1 + fabs(x));
  case OP_SWISH: return x / (1 + exp(-attr_float(n, "alpha", 1.0) * x));
  case OP_SQRT: return sqrt(x);
  case OP_TAN: return tan(x);
  case OP_TANH: return tanh(x);
  case OP_THRESHOLDEDRELU: return x > attr_float(n, "alpha", 1.0) ? x : 0;
  default: KILN_ASSERT(!"unary op without a formula"); return 0;
  }
}

static int64_t eval_i(const Node *n, int64_t x, DType dt) {
  switch (n->op) {
  case OP_ABS: return dt_is_signed_int(dt) && x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
  case OP_NEG: return (int64_t)(0 - (uint64_t)x);
  case OP_RELU: return x > 0 ? x : 0;
  case OP_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
  case OP_NOT: return !x;
  case OP_BITWISENOT: return ~x;
  case OP_SHRINK: {
    double l = attr_float(n, "lambd", 0.5), b = attr_float(n, "bias", 0.0);
    return (int64_t)((double)x < -l ? (double)x + b : (double)x > l ? (double)x - b : 0);
  }
  default: KILN_ASSERT(!"unary op without an integer formula"); return 0;
  }
}

bool unary_eval(const Node *n, const Tensor *in, Tensor *out, Diag *d) {
  DType dt = in[0].type.dt, odt = out[0].type.dt;
  int64_t cnt = type_numel(&in[0].type);
  for (int64_t i = 0; i < cnt; i++) {
    if (dt_is_float(dt))
      el_set_f(odt, out[0].data, i, eval_f(n, el_get_f(dt, in[0].data, i)));
    else if (dt_is_signed_int(dt))
      el_set_i(odt, out[0].data, i, eval_i(n, el_get_i(dt, in[0].data, i), dt));
    else
      el_set_i(odt, out[0].data, i, eval_i(n, (int64_t)el_get_u(dt, in[0].data, i), dt));
  }
  return true;
}

/* ---- the formulas again, as C ---------------------------------------------- */

/* fmax(0, fmin(1, v)) as selects, NaN giving 1 as there: a loop of them
 * vectorises, where fmaxf and fminf are calls at -O2 (their NaN rules
 * are no single x86 instruction's). */
static const char *clamp01(Emit *e, DType dt, const char *v) {
  const char *one = emit_double_literal(e, dt, 1), *zero = emit_double_literal(e, dt, 0);
  return arena_printf(e->g->arena, "(!(%s < %s) ? %s : %s > %s ? %s : %s)", v, one, one, v, zero, v, zero);
}

static const char *c_float_expr(Emit *e, const Node *n, DType dt) {
  Arena *a = e->g->arena;
#define F(name) emit_mathfn(e, dt, name)
#define L(v) emit_double_literal(e, dt, v)
  switch (n->op) {
  case OP_ABS: return arena_printf(a, "%s($0)", F("fabs"));
  case OP_ACOS: case OP_ACOSH: case OP_ASIN: case OP_ASINH: case OP_ATAN: case OP_ATANH:
  case OP_CEIL: case OP_COS: case OP_COSH: case OP_ERF: case OP_EXP: case OP_FLOOR:
  case OP_LOG: case OP_SIN: case OP_SINH: case OP_SQRT: case OP_TAN: case OP_TANH: {
    char lower[16];
    const char *nm = node_op_name(n);
    size_t k = 0;
    for (; nm[k] && k < sizeof lower - 1; k++)
      lower[k] = (char)(nm[k] | 0x20);
    lower[k] = 0;
    return arena_printf(a, "%s($0)", F(lower));
  }
  case OP_CELU: {
    double al = attr_float(n, "alpha", 1.0);
    return arena_printf(a, "%s(%s, $0) + %s(%s, %s * (%s($0 / %s) - %s))", F("fmax"), L(0), F("fmin"),
                        L(0), L(al), F("exp"), L(al), L(1));
  }
  case OP_ELU:
    return arena_printf(a, "$0 >= %s ? $0 : %s * (%s($0) - %s)", L(0),
                        L(attr_float(n, "alpha", 1.0)), F("exp"), L(1));
  case OP_HARDSIGMOID:
    return clamp01(e, dt, arena_printf(a, "%s * $0 + %s", L(attr_float(n, "alpha", 0.2)),
                                       L(attr_float(n, "beta", 0.5))));
  case OP_HARDSWISH:
    return arena_printf(a, "$0 * %s", clamp01(e, dt, arena_printf(a, "$0 / %s + %s", L(6), L(0.5))));
  case OP_ISINF: {
    bool pos = attr_int(n, "detect_positive", 1), neg = attr_int(n, "detect_negative", 1);
    return arena_printf(a, "isinf($0) && (%s || %s)", pos ? "$0 > 0" : "0", neg ? "$0 < 0" : "0");
  }
  case OP_ISNAN: return "isnan($0)";
  case OP_LEAKYRELU:
    return arena_printf(a, "$0 >= %s ? $0 : %s * $0", L(0), L(attr_float(n, "alpha", 0.01)));
  case OP_MISH: return arena_printf(a, "$0 * %s(%s(%s($0)))", F("tanh"), F("log1p"), F("exp"));
  case OP_NEG: return "-$0";
  case OP_RECIPROCAL: return arena_printf(a, "%s / $0", L(1));
  case OP_RELU: return arena_printf(a, "$0 > %s ? $0 : %s", L(0), L(0));
  case OP_ROUND: return arena_printf(a, "%s($0)", F("nearbyint"));
  case OP_SELU: {
    double al = attr_float(n, "alpha", 1.67326319217681884765625);
    double ga = attr_float(n, "gamma", 1.05070102214813232421875);
    return arena_printf(a, "$0 > %s ? %s * $0 : %s * (%s * %s($0) - %s)", L(0), L(ga), L(ga), L(al),
                        F("exp"), L(al));
  }
  case OP_SHRINK: {
    double l = attr_float(n, "lambd", 0.5), b = attr_float(n, "bias", 0.0);
    return arena_printf(a, "$0 < %s ? $0 + %s : $0 > %s ? $0 - %s : %s", L(-l), L(b), L(l), L(b), L(0));
  }
  case OP_SIGMOID: return arena_printf(a, "%s / (%s + %s(-$0))", L(1), L(1), F("exp"));
  case OP_SIGN: return arena_printf(a, "$0 > %s ? %s : $0 < %s ? %s : $0", L(0), L(1), L(0), L(-1));
  case OP_SOFTPLUS: return arena_printf(a, "%s(%s + %s($0))", F("log"), L(1), F("exp"));
  case OP_SOFTSIGN: return arena_printf(a, "$0 / (%s + %s($0))", L(1), F("fabs"));
  case OP_SWISH: return arena_printf(a, "$0 / (%s + %s(%s * $0))", L(1), F("exp"), L(-attr_float(n, "alpha", 1.0)));
  case OP_THRESHOLDEDRELU:
    return arena_printf(a, "$0 > %s ? $0 : %s", L(attr_float(n, "alpha", 1.0)), L(0));
  default: return NULL;
  }
#undef F
#undef L
}

static const char *c_int_expr(Emit *e, const Node *n, DType dt) {
  Arena *a = e->g->arena;
  bool sign = dt_is_signed_int(dt);
  switch (n->op) {
  case OP_ABS: return sign ? "$0 < 0 ? -$0 : $0" : "$0";
  case OP_NEG: return "-$0";
  case OP_RELU: return "$0 > 0 ? $0 : 0";
  case OP_SIGN: return sign ? "$0 > 0 ? 1 : $0 < 0 ? -1 : 0" : "$0 > 0 ? 1 : 0";
  case OP_NOT: return "!$0";
  case OP_BITWISENOT: return "~$0";
  case OP_SHRINK: {
    double l = attr_float(n, "lambd", 0.5), b = attr_float(n, "bias", 0.0);
    return arena_printf(a, "(double)$0 < %.17g ? (double)$0 + %.17g : (double)$0 > %.17g ? "
                           "(double)$0 - %.17g : 0.0", -l, b, l, b);
  }
  default: return NULL;
  }
}

bool unary_emit(Emit *e, const Node *n) {
  DType dt = gval(e->g, n->in[0])->type.dt;
  const char *expr = dt_is_float(dt) ? c_float_expr(e, n, dt) : c_int_expr(e, n, dt);
  if (!expr)
    return false;
  emit_elementwise(e, n, expr);
  return true;
}
